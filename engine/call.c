/* call.c — one model call with the retries the failure table allows
 * (call.h, docs/providers.md).
 *
 * States, with their transitions (one uv_timer serves each state's wait):
 *   START    --timer 0-------------------------> ASKING   (before_attempt)
 *   START    --request cannot be built---------> ENDING
 *   ASKING   --call_proceed--------------------> SENDING  (transfer or offline ticks)
 *   SENDING  --retryable failure---------------> WAITING  (backoff or Retry-After)
 *   WAITING  --timer---------------------------> ASKING   (the next attempt)
 *   SENDING  --transfer done, not retried------> ENDING
 *   SENDING  --the reply's closing event-------> CLOSING  (a grace for the transfer to end)
 *   CLOSING  --transfer done-------------------> ENDING   (complete, however it ended)
 *   CLOSING  --timer: the grace is over--------> the transfer canceled, then ENDING (complete)
 *   any      --call_cancel---------------------> ENDING   (a transfer reports CANCELED first)
 *   ENDING   --on_done, timer closed-----------> freed
 */
#include "engine/call.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/offline.h"
#include "engine/sse.h"
#include "engine/textfix.h"

const struct call_retry CALL_RETRY_DEFAULT = {3, 1000, 8000, 60000};

/* What an HTTP error reply may hold before it is cut (it is only read
 * for its message). */
#define ERROR_BODY_MAX (64u * 1024u)

/* After the reply's closing event (an OpenAI finish_reason), how long the
 * server has to end the transfer — time for the usage chunk and [DONE] —
 * before the call ends it, complete (the gap timeout when shorter). */
#define CLOSE_GRACE_MS 2000u

enum call_state { CALL_START, CALL_ASKING, CALL_SENDING, CALL_CLOSING, CALL_WAITING, CALL_ENDING };

struct call {
	uv_loop_t *loop;
	struct http *http;
	uv_timer_t timer;
	enum call_state st;
	struct call_hooks hk;
	enum provider_kind kind;
	unsigned pace_ms;
	struct http_timeouts timeouts;
	struct call_retry retry;
	struct provider_request rq;
	char *prompt;            /* offline: the last user text ... */
	char *tool_result;       /* ... the tool result the conversation ends with */
	bool tools;              /* ... whether tools are offered */
	struct offline *off;
	struct http_xfer *x;
	struct sse *sse;
	struct stream_decoder *dec;
	long status;          /* of the attempt under way */
	struct buf errbody;   /* a non-2xx reply's body */
	bool paused;
	bool cancel;          /* call_cancel was called */
	bool stream_failed;   /* the decoder emitted STREAM_ERROR */
	struct call_result res;
};

static void timer_cb(uv_timer_t *t);

const char *call_outcome_name(enum call_outcome o)
{
	switch (o) {
	case CALL_COMPLETE: return "complete";
	case CALL_PROVIDER_ERROR: return "provider";
	case CALL_DELIVERY_UNKNOWN: return "delivery_unknown";
	case CALL_CANCELED: return "canceled";
	}
	return "?";
}

unsigned call_attempt(const struct call *c)
{
	return c->res.attempts;
}

static void set_result(struct call *c, enum call_outcome o, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_result(struct call *c, enum call_outcome o, const char *code, const char *fmt, ...)
{
	c->res.outcome = o;
	snprintf(c->res.code, sizeof c->res.code, "%s", code ? code : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->res.message, sizeof c->res.message, fmt, ap);
	va_end(ap);
}

/* The pieces of one attempt, dropped before the next or at the end. */
static void drop_attempt(struct call *c)
{
	sse_free(c->sse);
	c->sse = NULL;
	stream_decoder_free(c->dec);
	c->dec = NULL;
	buf_reset(&c->errbody);
	c->status = 0;
	c->stream_failed = false;
}

static void closed_cb(uv_handle_t *h)
{
	struct call *c = h->data;
	free(c);
}

/* Tell the caller and free everything (the struct once its timer closed). */
static void finish(struct call *c)
{
	c->st = CALL_ENDING;
	uv_timer_stop(&c->timer);
	if (c->cancel && c->res.outcome != CALL_CANCELED)
		set_result(c, CALL_CANCELED, NULL, "canceled");
	if (c->dec && c->res.outcome != CALL_COMPLETE)
		stream_decoder_cut(c->dec); /* calls begun are recorded, never run */
	c->hk.on_done(c->hk.ud, c, &c->res);
	drop_attempt(c);
	buf_release(&c->errbody);
	provider_request_release(&c->rq);
	offline_free(c->off);
	free(c->prompt);
	free(c->tool_result);
	uv_close((uv_handle_t *)&c->timer, closed_cb);
}

/* End from the loop, not from inside the caller's call. */
static void finish_later(struct call *c)
{
	c->st = CALL_ENDING;
	uv_timer_start(&c->timer, timer_cb, 0, 0);
}

/* Everything the reply says passes here: the result keeps what it needs. */
static void emit(void *arg, const struct stream_event *ev)
{
	struct call *c = arg;
	switch (ev->kind) {
	case STREAM_FINISH:
		c->res.have_finish = true;
		c->res.finish = ev->finish;
		break;
	case STREAM_USAGE:
		if (ev->usage)
			c->res.usage = *ev->usage;
		break;
	case STREAM_ERROR:
		c->stream_failed = true;
		set_result(c, CALL_PROVIDER_ERROR, ev->error_type, "%s",
			   ev->text && *ev->text ? ev->text : "the provider reported an error");
		break;
	default:
		break;
	}
	c->hk.on_event(c->hk.ud, c, ev);
	if (!c->x || c->cancel)
		return;
	/* Only what the reply says counts as progress: the transfer's
	 * first-byte and gap timeouts never see comments or pings. */
	if (stream_event_content(ev))
		http_xfer_progress(c->x);
	if (c->st == CALL_SENDING && stream_decoder_closed(c->dec)) {
		unsigned gap = c->timeouts.gap_ms ? c->timeouts.gap_ms : HTTP_GAP_MS;
		c->st = CALL_CLOSING;
		uv_timer_start(&c->timer, timer_cb, gap < CLOSE_GRACE_MS ? gap : CLOSE_GRACE_MS, 0);
	}
}

static int sse_cb(void *ud, const char *name, const char *data, size_t len)
{
	struct call *c = ud;
	stream_decoder_feed(c->dec, name, data, len);
	return 0;
}

static bool ok_status(long s)
{
	return s >= 200 && s < 300;
}

static void on_head(void *ud, struct http_xfer *x, long status)
{
	struct call *c = ud;
	c->status = status;
	c->res.http_status = status;
	if (!ok_status(status))
		http_xfer_progress(x); /* an error reply is no stream: every byte counts */
}

static int on_body(void *ud, struct http_xfer *x, const char *p, size_t n)
{
	struct call *c = ud;
	if (c->paused)
		return HTTP_BODY_PAUSE;
	if (!ok_status(c->status)) {
		size_t room = ERROR_BODY_MAX - c->errbody.len;
		buf_add(&c->errbody, p, n < room ? n : room);
		http_xfer_progress(x);
		return HTTP_BODY_OK;
	}
	if (sse_feed(c->sse, p, n) == SSE_E_LIMIT && !c->stream_failed) {
		c->stream_failed = true;
		set_result(c, CALL_PROVIDER_ERROR, "malformed",
			   "the reply holds an event larger than %u bytes", SSE_EVENT_MAX);
		http_xfer_cancel(c->x);
	}
	return HTTP_BODY_OK;
}

/* The wait Retry-After asks for, in ms (seconds or an HTTP date); -1:
 * none or unreadable. */
static long long retry_after_ms(const char *v)
{
	if (!v || !*v)
		return -1;
	char *end;
	long long s = strtoll(v, &end, 10);
	if (end != v && *end == '\0')
		return s < 0 ? -1 : s * 1000;
	time_t when = curl_getdate(v, NULL);
	if (when == (time_t)-1)
		return -1;
	long long d = (long long)(when - time(NULL));
	return d < 0 ? 0 : d * 1000;
}

/* Try again when the budget allows: true when the next attempt is set. */
static bool retry(struct call *c, long long asked_ms)
{
	if (c->cancel || c->res.attempts > c->retry.max_retries)
		return false;
	unsigned long long wait = c->retry.backoff_min_ms;
	for (unsigned i = 1; i < c->res.attempts && wait < c->retry.backoff_max_ms; i++)
		wait *= 2;
	if (wait > c->retry.backoff_max_ms)
		wait = c->retry.backoff_max_ms;
	if (asked_ms >= 0) {
		if ((unsigned long long)asked_ms > c->retry.retry_after_max_ms)
			return false; /* longer than anyone waits for a reply */
		wait = (unsigned long long)asked_ms;
	}
	drop_attempt(c);
	c->st = CALL_WAITING;
	uv_timer_start(&c->timer, timer_cb, wait, 0);
	return true;
}

/* A non-2xx reply: its message, and whether it may be tried again. */
static void http_error(struct call *c, struct http_xfer *x)
{
	char *msg = NULL, *code = NULL;
	provider_error_body(c->errbody.p ? c->errbody.p : "", c->errbody.len, c->status, &msg, &code);
	bool quota = code && strcmp(code, "insufficient_quota") == 0;
	bool again = !quota && (c->status == 429 || c->status == 529 ||
				(c->status >= 500 && c->status < 600));
	const char *loc = http_xfer_header(x, "Location");
	if (c->status >= 300 && c->status < 400 && loc && *loc) {
		/* Redirects are not followed (a POST is never sent twice, and
		 * never to another scheme): say where it pointed. */
		char *where = textfix_string(loc, strnlen(loc, 300));
		set_result(c, CALL_PROVIDER_ERROR, code,
			   "the server redirects (HTTP %ld) to '%s'; redirects are not followed: "
			   "set the base URL to the address that answers",
			   c->status, where);
		free(where);
	} else {
		set_result(c, CALL_PROVIDER_ERROR, code, "%s", msg);
	}
	long long asked = retry_after_ms(http_xfer_header(x, "Retry-After"));
	free(msg);
	free(code);
	if (!(again && retry(c, asked)))
		finish(c);
}

/* A reply that timed out: delivery unknown, saying which timeout (its
 * configuration key) and how long it was. */
static void timed_out(struct call *c, enum http_outcome o)
{
	const struct http_timeouts *t = &c->timeouts;
	unsigned ms;
	const char *what, *key;
	if (o == HTTP_E_TIMEOUT_FIRST_BYTE) {
		ms = t->first_byte_ms ? t->first_byte_ms : HTTP_FIRST_BYTE_MS;
		what = "no content in the reply within", key = "first_byte";
	} else if (o == HTTP_E_TIMEOUT_GAP) {
		ms = t->gap_ms ? t->gap_ms : HTTP_GAP_MS;
		what = "no more content in the reply for", key = "gap";
	} else {
		ms = t->total_ms ? t->total_ms : HTTP_TOTAL_MS;
		what = "the reply did not end within", key = "total";
	}
	set_result(c, CALL_DELIVERY_UNKNOWN, NULL, "%s: %s %g s (timeouts.%s)", http_outcome_name(o), what,
		   ms / 1000.0, key);
}

static void on_done(void *ud, struct http_xfer *x, const struct http_result *r)
{
	struct call *c = ud;
	c->x = NULL;
	if (c->st == CALL_CLOSING && !c->cancel && !c->stream_failed) {
		/* The closing event came: the reply is whole, however the
		 * connection ended (or was ended after the grace). */
		set_result(c, CALL_COMPLETE, NULL, "%s", "");
		finish(c);
		return;
	}
	if (c->cancel || r->outcome == HTTP_E_CANCELED) {
		if (c->stream_failed && !c->cancel)
			finish(c); /* cut short for a malformed reply: said above */
		else {
			set_result(c, CALL_CANCELED, NULL, "canceled");
			finish(c);
		}
		return;
	}
	if (c->status && !ok_status(c->status) &&
	    (r->outcome == HTTP_COMPLETE || r->outcome == HTTP_E_BROKEN ||
	     r->outcome == HTTP_E_TIMEOUT_GAP || r->outcome == HTTP_E_TIMEOUT_FIRST_BYTE ||
	     r->outcome == HTTP_E_TIMEOUT_TOTAL)) {
		http_error(c, x);
		return;
	}
	switch (r->outcome) {
	case HTTP_COMPLETE:
		if (c->stream_failed)
			break; /* the error inside the stream is the result */
		if (stream_decoder_closed(c->dec))
			set_result(c, CALL_COMPLETE, NULL, "%s", "");
		else
			set_result(c, CALL_DELIVERY_UNKNOWN, NULL,
				   "the reply ended before its closing event");
		break;
	case HTTP_E_CONNECT:
	case HTTP_E_TIMEOUT_CONNECT:
		/* Nothing of the request went out: safe to send again. */
		set_result(c, CALL_PROVIDER_ERROR, NULL, "cannot reach the provider: %s", r->msg);
		if (retry(c, -1))
			return;
		break;
	case HTTP_E_NO_RESPONSE:
	case HTTP_E_BROKEN:
		if (!c->stream_failed)
			set_result(c, CALL_DELIVERY_UNKNOWN, NULL, "%s: %s",
				   http_outcome_name(r->outcome), r->msg);
		break;
	case HTTP_E_TIMEOUT_FIRST_BYTE:
	case HTTP_E_TIMEOUT_GAP:
	case HTTP_E_TIMEOUT_TOTAL:
		if (!c->stream_failed)
			timed_out(c, r->outcome);
		break;
	case HTTP_E_SETUP:
		set_result(c, CALL_PROVIDER_ERROR, NULL, "%s", r->msg);
		break;
	case HTTP_E_CANCELED:
		break;
	}
	finish(c);
}

static void offline_tick(struct call *c)
{
	if (!offline_step(c->off, emit, c)) {
		set_result(c, CALL_COMPLETE, NULL, "%s", "");
		finish(c);
		return;
	}
	if (c->st == CALL_SENDING && !c->paused)
		uv_timer_start(&c->timer, timer_cb, c->pace_ms, 0);
}

static void ask(struct call *c)
{
	c->st = CALL_ASKING;
	c->res.attempts++;
	c->hk.before_attempt(c->hk.ud, c, c->res.attempts);
}

static void timer_cb(uv_timer_t *t)
{
	struct call *c = t->data;
	switch (c->st) {
	case CALL_START:
	case CALL_WAITING:
		ask(c);
		break;
	case CALL_SENDING:
		offline_tick(c);
		break;
	case CALL_CLOSING:
		if (c->x)
			http_xfer_cancel(c->x); /* on_done follows: complete */
		break;
	case CALL_ENDING:
		finish(c);
		break;
	case CALL_ASKING:
		break;
	}
}

struct call *call_start(uv_loop_t *loop, struct http *http, const struct call_spec *spec,
			const struct call_hooks *hooks)
{
	struct call *c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->http = http;
	c->hk = *hooks;
	c->kind = spec->kind;
	c->pace_ms = spec->pace_ms;
	c->timeouts = spec->timeouts;
	c->retry = spec->retry;
	c->rq = (struct provider_request)PROVIDER_REQUEST_INIT;
	c->res.usage = (struct stream_usage){-1, -1, -1, -1, -1};
	buf_init(&c->errbody);
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->st = CALL_START;
	struct cerr err;
	if (spec->kind == PROVIDER_OFFLINE) {
		/* Copied now: the messages change as the turn's events land. */
		c->prompt = xstrdup_opt(spec->prompt);
		const struct ctx_message *last = spec->n ? &spec->msgs[spec->n - 1] : NULL;
		if (last && last->role == CTX_TOOL && last->nparts && last->parts[last->nparts - 1].text)
			c->tool_result = xstrdup(last->parts[last->nparts - 1].text);
		c->tools = cJSON_GetArraySize(spec->params.tools) > 0;
	} else if (!http) {
		set_result(c, CALL_PROVIDER_ERROR, NULL, "no HTTP engine for a network provider");
		finish_later(c);
		return c;
	} else if (provider_build(spec->kind, &spec->params, spec->msgs, spec->n, &c->rq, &err) < 0) {
		set_result(c, CALL_PROVIDER_ERROR, NULL, "%s", err.msg);
		finish_later(c);
		return c;
	}
	uv_timer_start(&c->timer, timer_cb, 0, 0);
	return c;
}

void call_proceed(struct call *c)
{
	if (c->st != CALL_ASKING)
		return;
	c->st = CALL_SENDING;
	if (c->kind == PROVIDER_OFFLINE) {
		if (!c->off)
			c->off = offline_new_ask(&(struct offline_ask){c->prompt, c->tool_result,
								       c->tools});
		if (!c->paused)
			uv_timer_start(&c->timer, timer_cb, 0, 0);
		return;
	}
	c->sse = sse_new(0, sse_cb, c);
	c->dec = stream_decoder_new(c->kind, emit, c);
	struct http_request req = {
		.method = "POST",
		.url = c->rq.url,
		.headers = (const char *const *)c->rq.headers,
		.body = c->rq.body,
		.body_len = c->rq.body_len,
		.timeouts = c->timeouts,
		.receiver_progress = true,
		.on_head = on_head,
		.on_body = on_body,
		.on_done = on_done,
		.ud = c,
	};
	struct cerr err;
	c->x = http_start(c->http, &req, &err);
	if (!c->x) {
		set_result(c, CALL_PROVIDER_ERROR, NULL, "%s", err.msg);
		finish_later(c);
	}
}

void call_cancel(struct call *c)
{
	if (c->cancel || c->st == CALL_ENDING)
		return;
	c->cancel = true;
	if (c->x) {
		http_xfer_cancel(c->x); /* on_done follows with CANCELED */
		return;
	}
	set_result(c, CALL_CANCELED, NULL, "canceled");
	finish_later(c);
}

void call_pause(struct call *c)
{
	c->paused = true;
	if (c->kind == PROVIDER_OFFLINE && c->st == CALL_SENDING)
		uv_timer_stop(&c->timer);
}

void call_resume(struct call *c)
{
	if (!c->paused)
		return;
	c->paused = false;
	if (c->st != CALL_SENDING && c->st != CALL_CLOSING)
		return;
	if (c->kind == PROVIDER_OFFLINE)
		uv_timer_start(&c->timer, timer_cb, c->pace_ms, 0);
	else if (c->x)
		http_xfer_resume(c->x);
}
