/* runner.c — turns on the loop (runner.h).
 *
 * A turn's states, with their transitions:
 *   BEFORE   --BEFORE save acknowledged--------------> CALLING  (first call)
 *   BEFORE   --BEFORE save rejected, or canceled-----> ENDED    (not_started / canceled)
 *   CALLING  --call done: step/end, turn/end captured-> ENDED    (marker turn_done)
 *   ENDED    --runner_settle-------------------------> SETTLING (full save posted)
 *   SETTLING --full save completed-------------------> freed    (marker settled)
 * The runner's turns are few (one per open session), so they are kept in
 * a list. */
#include "engine/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "engine/capture.h"
#include "engine/toolstep.h"

enum turn_state { TURN_BEFORE, TURN_CALLING, TURN_ENDED, TURN_SETTLING };

/* Events a host writes into a running turn's history (runner_note). */
struct note {
	cJSON *events;
	runner_note_fn cb;
	void *ctx;
	struct note *next;
};

struct turn {
	struct runner *r;
	struct turn *next;
	enum turn_state st;
	struct sink_op op;
	char *session, *id, *text, *provider, *cwd;
	char *parent, *submit_id, *dequeued;
	cJSON *settings;          /* recorded by the BEFORE save, or NULL */
	bool create;
	struct context *ctx;
	/* the call's spec, with its strings owned here */
	struct call_spec spec;
	char *model, *base_url, *api_key, *system;
	cJSON *tools;
	struct capture *cap;
	struct call *call;
	unsigned step, max_steps, calls;
	const struct tool_ctx *tool_ctx;
	enum approval_policy approval;
	struct approvals *grants;
	struct toolstep *ts;          /* this step's tool calls */
	struct toolstep *ts_old;      /* the last step's, freed once out of its own callback */
	const char *pending_outcome;  /* the step's outcome while its calls are answered */
	struct stream_usage total;    /* the usage of every step */
	uint64_t next_seq, version;
	bool cancel;
	struct buf answer;        /* the answer's text, for the marker */
	struct call_result res;   /* the last call's */
	/* the outcome, once ended */
	const char *outcome;
	cJSON *error;             /* {"class","message","http_status"?} or NULL */
	cJSON *saving;            /* the full save's events, published once durable */
	struct note *notes;       /* waiting for the BEFORE save */
	uint64_t saving_seq;      /* ... from this seq */
};

struct runner {
	struct runner_deps d;
	struct turn *turns;
	uint64_t next_op;
	bool paused;              /* the sink asks producers to pause */
};

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static struct turn *find(const struct runner *r, const char *session)
{
	for (struct turn *t = r->turns; t; t = t->next)
		if (strcmp(t->session, session) == 0)
			return t;
	return NULL;
}

static void unlink_turn(struct runner *r, struct turn *t)
{
	for (struct turn **p = &r->turns; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			return;
		}
}

static void notes_fail(struct turn *t, const struct cerr *err)
{
	while (t->notes) {
		struct note *n = t->notes;
		t->notes = n->next;
		n->cb(n->ctx, err);
		cJSON_Delete(n->events);
		free(n);
	}
}

static void turn_free(struct turn *t)
{
	struct cerr gone;
	cerr_set(&gone, CERR_IO, 0, "the turn ended before its note was written");
	notes_fail(t, &gone);
	toolstep_free(t->ts);
	toolstep_free(t->ts_old);
	if (t->cap)
		capture_close(t->cap);
	free(t->session);
	free(t->id);
	free(t->text);
	free(t->provider);
	free(t->cwd);
	free(t->parent);
	free(t->submit_id);
	free(t->dequeued);
	cJSON_Delete(t->settings);
	free(t->model);
	free(t->base_url);
	free(t->api_key);
	free(t->system);
	cJSON_Delete(t->tools);
	cJSON_Delete(t->error);
	cJSON_Delete(t->saving);
	buf_release(&t->answer);
	free(t);
}

static cJSON *event(enum vocab_type type, const char *turn, cJSON *data)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", vocab_type_name(type));
	if (turn)
		cJSON_AddStringToObject(e, "turn", turn);
	cJSON_AddItemToObject(e, "data", data ? data : cJSON_CreateObject());
	return e;
}

/* Publish events (a batch made durable at first_seq) into the sink. */
static void publish_durable(struct turn *t, const cJSON *events, uint64_t first_seq)
{
	uint64_t seq = first_seq;
	for (const cJSON *e = events ? events->child : NULL; e; e = e->next, seq++) {
		const cJSON *type = cJSON_GetObjectItem(e, "type");
		const cJSON *turn = cJSON_GetObjectItem(e, "turn");
		sink_publish_event(t->r->d.sink, &t->op,
				   cJSON_IsString(type) ? vocab_type_of(type->valuestring) : VT_UNKNOWN,
				   cJSON_IsString(turn) ? turn->valuestring : NULL, seq, true,
				   cJSON_GetObjectItem(e, "data"));
	}
}

/* Add events to the turn's context, as the log now holds them. */
static void add_to_context(struct turn *t, const cJSON *events)
{
	struct cerr err;
	for (const cJSON *e = events ? events->child : NULL; e; e = e->next) {
		const cJSON *type = cJSON_GetObjectItem(e, "type");
		const cJSON *turn = cJSON_GetObjectItem(e, "turn");
		(void)context_add(t->ctx, vocab_type_of(type->valuestring),
				  cJSON_IsString(turn) ? turn->valuestring : NULL,
				  cJSON_GetObjectItem(e, "data"), &err);
	}
}

static void captured(struct capture *c, void *ctx, const cJSON *events, uint64_t first_seq)
{
	(void)c;
	publish_durable(ctx, events, first_seq);
	add_to_context(ctx, events); /* a request is built at its call's start: safe */
}

static cJSON *usage_json(const struct stream_usage *u)
{
	if (u->input < 0 && u->output < 0)
		return NULL;
	cJSON *o = cJSON_CreateObject();
	const struct {
		const char *k;
		int64_t v;
	} f[] = {{"input", u->input},
		 {"output", u->output},
		 {"cache_read", u->cache_read},
		 {"cache_write", u->cache_write},
		 {"reasoning", u->reasoning}};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		if (f[i].v >= 0)
			cJSON_AddNumberToObject(o, f[i].k, (double)f[i].v);
	return o;
}

static void set_error(struct turn *t, const char *cls, const char *message, long http_status)
{
	cJSON_Delete(t->error);
	t->error = cJSON_CreateObject();
	cJSON_AddStringToObject(t->error, "class", cls);
	cJSON_AddStringToObject(t->error, "message", message && *message ? message : cls);
	if (http_status >= 100 && http_status <= 599)
		cJSON_AddNumberToObject(t->error, "http_status", (double)http_status);
}

/* The turn is over: its marker follows everything it published. */
static void publish_done(struct turn *t)
{
	t->st = TURN_ENDED;
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "turn", t->id);
	cJSON_AddStringToObject(m, "outcome", t->outcome);
	if (t->error)
		cJSON_AddItemToObject(m, "error", cJSON_Duplicate(t->error, 1));
	cJSON *u = usage_json(&t->total);
	if (u)
		cJSON_AddItemToObject(m, "usage", u);
	if (t->step == 0) /* nothing was dispatched: the prompt goes back to the composer */
		cJSON_AddStringToObject(m, "text", t->text);
	if (t->dequeued) /* ... unless it was queued input: then it stays queued */
		cJSON_AddStringToObject(m, "input_id", t->dequeued);
	sink_publish_marker(t->r->d.sink, &t->op, "turn_done", m);
	cJSON_Delete(m);
}

/* End the turn after its calls: step/end and turn/end into the capture. */
static void end_turn(struct turn *t, const char *outcome)
{
	t->outcome = outcome;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", outcome);
	if (t->error)
		cJSON_AddItemToObject(d, "error", cJSON_Duplicate(t->error, 1));
	cJSON *u = usage_json(&t->total);
	if (u)
		cJSON_AddItemToObject(d, "usage", u);
	capture_event(t->cap, VT_TURN_END, t->id, d);
	cJSON_Delete(d);
	publish_done(t);
}

/* ---- a model call ---- */

/* A fingerprint of what the model is sent: every part of every message. */
static void fingerprint(const struct ctx_message *m, size_t n, char out[SHA256_HEX_LEN + 1])
{
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		buf_printf(&b, "%d:%zu\n", (int)m[i].role, m[i].nparts);
		for (size_t j = 0; j < m[i].nparts; j++) {
			const struct ctx_part *p = &m[i].parts[j];
			const char *fields[] = {p->text, p->signature, p->call_id, p->name, p->args};
			buf_printf(&b, "%d%d%d%d", (int)p->kind, p->redacted, p->incomplete, p->is_error);
			for (size_t k = 0; k < 5; k++)
				buf_printf(&b, "|%zu:%s", fields[k] ? strlen(fields[k]) : 0,
					   fields[k] ? fields[k] : "");
		}
	}
	uint8_t h[SHA256_LEN];
	sha256(b.p ? b.p : "", b.len, h);
	sha256_hex(h, out);
	buf_release(&b);
}

static void commit_cb(struct capture *c, void *ctx, const struct cerr *err)
{
	(void)c;
	struct turn *t = ctx;
	if (!t->call)
		return;
	if (err || t->cancel) {
		if (err)
			set_error(t, "capture_failed", err->msg, 0);
		call_cancel(t->call); /* nothing more goes to the provider */
		return;
	}
	call_proceed(t->call);
}

static void before_attempt(void *ud, struct call *c, unsigned attempt)
{
	struct turn *t = ud;
	size_t n;
	const struct ctx_message *msgs = context_messages(t->ctx, t->id, &n);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "provider", t->provider);
	cJSON_AddStringToObject(d, "model", t->model ? t->model : t->provider);
	cJSON_AddNumberToObject(d, "step", t->step);
	cJSON_AddNumberToObject(d, "attempt", attempt);
	cJSON_AddNumberToObject(d, "messages", (double)n);
	char fp[SHA256_HEX_LEN + 1];
	fingerprint(msgs, n, fp);
	cJSON_AddStringToObject(d, "context_fp", fp);
	char *tools = t->tools ? cJSON_PrintUnformatted(t->tools) : xstrdup("[]");
	uint8_t h[SHA256_LEN];
	sha256(tools, strlen(tools), h);
	sha256_hex(h, fp);
	free(tools);
	cJSON_AddStringToObject(d, "tools_fp", fp);
	capture_event(t->cap, VT_REQUEST_PREPARED, t->id, d);
	cJSON_Delete(d);
	/* request/prepared and every pending batch durable before the bytes go */
	if (capture_commit(t->cap, commit_cb, t) < 0)
		call_cancel(c);
}

static struct toolstep *step_tools(struct turn *t);

static void on_event(void *ud, struct call *c, const struct stream_event *ev)
{
	(void)c;
	struct turn *t = ud;
	struct sink *s = t->r->d.sink;
	switch (ev->kind) {
	case STREAM_TEXT:
		buf_add(&t->answer, ev->text, ev->len);
		sink_publish_text(s, &t->op, t->id, SINK_STREAM_TEXT, ev->text, ev->len);
		capture_text(t->cap, CAPTURE_TEXT, t->id, ev->text, ev->len);
		break;
	case STREAM_REASONING:
		sink_publish_text(s, &t->op, t->id, SINK_STREAM_REASONING, ev->text, ev->len);
		capture_text(t->cap, CAPTURE_REASONING, t->id, ev->text, ev->len);
		break;
	case STREAM_REASONING_END:
		if (ev->text) {
			/* The block's signature on a closing piece without text. */
			cJSON *d = cJSON_CreateObject();
			cJSON_AddStringToObject(d, "text", "");
			cJSON_AddStringToObject(d, "signature", ev->text);
			capture_event(t->cap, VT_ASSISTANT_REASONING, t->id, d);
			cJSON_Delete(d);
		}
		break;
	case STREAM_REDACTED: {
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "text", ev->text ? ev->text : "");
		cJSON_AddBoolToObject(d, "redacted", 1);
		capture_event(t->cap, VT_ASSISTANT_REASONING, t->id, d);
		cJSON_Delete(d);
		break;
	}
	case STREAM_TOOL_END:
		if (!t->ts)
			t->ts = step_tools(t);
		toolstep_add(t->ts, ev);
		break;
	case STREAM_TOOL_START:
	case STREAM_TOOL_ARGS:
	case STREAM_USAGE:
	case STREAM_FINISH:
	case STREAM_ERROR:
	case STREAM_DONE:
		break;
	}
}

/* ---- tool calls ---- */

static void start_call(struct turn *t);

static void ts_capture(void *ud, enum vocab_type type, const cJSON *data)
{
	struct turn *t = ud;
	capture_event(t->cap, type, t->id, data);
}

struct commit_wait {
	toolstep_commit_fn fn;
	void *arg;
};

static void ts_committed(struct capture *c, void *ctx, const struct cerr *err)
{
	(void)c;
	struct commit_wait *w = ctx;
	toolstep_commit_fn fn = w->fn;
	void *arg = w->arg;
	free(w);
	fn(arg, err);
}

static int ts_commit(void *ud, toolstep_commit_fn fn, void *arg)
{
	struct turn *t = ud;
	struct commit_wait *w = xcalloc(1, sizeof *w);
	w->fn = fn;
	w->arg = arg;
	if (capture_commit(t->cap, ts_committed, w) < 0) {
		free(w);
		return -1;
	}
	return 0;
}

static void ts_ask(void *ud, const cJSON *request)
{
	struct turn *t = ud;
	sink_publish_notice(t->r->d.sink, &t->op, "interaction", request);
}

static void next_step(struct capture *c, void *ctx, const struct cerr *err)
{
	(void)c;
	struct turn *t = ctx;
	if (err) {
		set_error(t, "capture_failed", err->msg, 0);
		end_turn(t, "failed");
	} else if (t->cancel) {
		end_turn(t, "canceled");
	} else {
		start_call(t); /* the results are durable, and so in the context */
	}
}

static void ts_done(void *ud, enum toolstep_end end, const struct cerr *err)
{
	struct turn *t = ud;
	bool over = t->step >= t->max_steps;
	t->calls += (unsigned)toolstep_count(t->ts);
	toolstep_free(t->ts_old);
	t->ts_old = t->ts; /* we are inside its callback */
	t->ts = NULL;
	const char *outcome = t->pending_outcome;
	if (end == TOOLSTEP_FAILED) {
		set_error(t, "capture_failed", err ? err->msg : "a save failed", 0);
		end_turn(t, "failed");
	} else if (strcmp(outcome, "completed") != 0) {
		end_turn(t, outcome);
	} else if (end == TOOLSTEP_CANCELED || t->cancel) {
		end_turn(t, "canceled");
	} else if (over) {
		char msg[128];
		snprintf(msg, sizeof msg, "the turn reached its step limit (%u model calls)", t->max_steps);
		set_error(t, "step_limit", msg, 0);
		end_turn(t, "failed");
	} else if (capture_commit(t->cap, next_step, t) < 0) {
		set_error(t, "capture_failed", "the turn's capture is closing", 0);
		end_turn(t, "failed");
	}
}

/* The step's tool calls (the model asked for one). */
static struct toolstep *step_tools(struct turn *t)
{
	struct toolstep_hooks hk = {t, ts_capture, ts_commit, ts_ask, ts_done};
	struct toolstep_opts o = {
		.tools = t->tool_ctx,
		.policy = t->approval,
		.grants = t->grants,
		.turn = t->id,
		.first_call = t->calls + 1,
		/* no tools offered, or the last step: nothing runs */
		.over_limit = !t->tool_ctx || t->step >= t->max_steps,
	};
	return toolstep_new(&hk, &o);
}

static void add_usage(struct stream_usage *to, const struct stream_usage *u)
{
	int64_t *a[] = {&to->input, &to->output, &to->cache_read, &to->cache_write, &to->reasoning};
	const int64_t b[] = {u->input, u->output, u->cache_read, u->cache_write, u->reasoning};
	for (size_t i = 0; i < 5; i++)
		if (b[i] >= 0)
			*a[i] = (*a[i] < 0 ? 0 : *a[i]) + b[i];
}

static void on_done(void *ud, struct call *c, const struct call_result *res)
{
	(void)c;
	struct turn *t = ud;
	t->call = NULL;
	t->res = *res;
	add_usage(&t->total, &res->usage);
	if (t->ts)
		toolstep_record(t->ts); /* the calls belong to the reply: before step/end */
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "step", t->step);
	if (res->have_finish)
		cJSON_AddStringToObject(d, "finish_reason", stream_finish_name(res->finish));
	cJSON *u = usage_json(&res->usage);
	if (u)
		cJSON_AddItemToObject(d, "usage", u);
	capture_event(t->cap, VT_STEP_END, t->id, d);
	cJSON_Delete(d);
	const char *outcome = "completed";
	if (capture_state(t->cap) == CAPTURE_FAILED) {
		if (!t->error)
			set_error(t, "capture_failed", capture_error(t->cap)->msg, 0);
		outcome = "failed";
	} else {
		switch (res->outcome) {
		case CALL_COMPLETE:
			break;
		case CALL_PROVIDER_ERROR:
			set_error(t, "provider", res->message, res->http_status);
			outcome = "failed";
			break;
		case CALL_DELIVERY_UNKNOWN:
			set_error(t, "delivery_unknown", res->message, res->http_status);
			outcome = "failed";
			break;
		case CALL_CANCELED:
			outcome = t->error ? "failed" : "canceled";
			break;
		}
	}
	if (t->ts) {
		/* Every call gets its result: run them, or answer them unrun. */
		if (strcmp(outcome, "completed") != 0)
			toolstep_cancel(t->ts);
		t->pending_outcome = outcome;
		toolstep_run(t->ts);
		return;
	}
	end_turn(t, outcome);
}

static void start_call(struct turn *t)
{
	t->st = TURN_CALLING;
	t->step++;
	struct call_spec spec = t->spec;
	spec.msgs = context_messages(t->ctx, t->id, &spec.n);
	spec.prompt = t->text;
	struct call_hooks hk = {before_attempt, on_event, on_done, t};
	t->call = call_start(t->r->d.loop, t->r->d.http, &spec, &hk);
	if (t->r->paused)
		call_pause(t->call);
}

/* ---- notes ---- */

static void note_committed(struct capture *c, void *ctx, const struct cerr *err)
{
	(void)c;
	struct note *n = ctx;
	n->cb(n->ctx, err);
	free(n);
}

/* Capture n's events and commit them; n is freed by its commit. */
static void note_capture(struct turn *t, struct note *n)
{
	for (const cJSON *e = n->events->child; e; e = e->next) {
		const cJSON *type = cJSON_GetObjectItem(e, "type");
		const cJSON *turn = cJSON_GetObjectItem(e, "turn");
		capture_event(t->cap, vocab_type_of(type->valuestring),
			      cJSON_IsString(turn) ? turn->valuestring : NULL,
			      cJSON_GetObjectItem(e, "data"));
	}
	cJSON_Delete(n->events);
	n->events = NULL;
	if (capture_commit(t->cap, note_committed, n) < 0) {
		struct cerr err;
		cerr_set(&err, CERR_IO, 0, "the turn's capture is closing");
		n->cb(n->ctx, &err);
		free(n);
	}
}

static void notes_capture(struct turn *t)
{
	struct note *n = t->notes;
	t->notes = NULL;
	while (n) {
		struct note *next = n->next;
		n->next = NULL;
		note_capture(t, n);
		n = next;
	}
}

int runner_note(struct runner *r, const char *session, cJSON *events, runner_note_fn cb,
		void *ctx, struct cerr *err)
{
	struct turn *t = find(r, session);
	int rc = 0;
	if (!t)
		rc = cerr_set(err, CERR_MISSING, 0, "session '%s' runs no turn", session);
	else if (t->st >= TURN_SETTLING || (!t->cap && t->st != TURN_BEFORE))
		rc = cerr_set(err, CERR_BUSY, 0, "session '%s' is settling its turn", session);
	else if (t->cap && capture_state(t->cap) != CAPTURE_OPEN)
		rc = cerr_set(err, CERR_IO, 0, "%s", capture_error(t->cap)->msg);
	if (rc < 0) {
		cJSON_Delete(events);
		return -1;
	}
	struct note *n = xcalloc(1, sizeof *n);
	n->events = events;
	n->cb = cb;
	n->ctx = ctx;
	if (!t->cap) { /* the BEFORE save is in flight: right after it */
		struct note **p = &t->notes;
		while (*p)
			p = &(*p)->next;
		*p = n;
		return 0;
	}
	note_capture(t, n);
	return 0;
}

/* ---- the BEFORE save ---- */

/* The BEFORE save's batch: the settings the turn changes (they apply to
 * it), the queued input it dequeues, turn/start and the prompt; caller
 * frees. */
static cJSON *before_events(const struct turn *t)
{
	cJSON *evs = cJSON_CreateArray();
	cJSON *d;
	if (t->settings)
		cJSON_AddItemToArray(evs, event(VT_SESSION_SETTINGS, NULL,
						cJSON_Duplicate(t->settings, 1)));
	if (t->dequeued) {
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "input_id", t->dequeued);
		cJSON_AddItemToArray(evs, event(VT_INPUT_DEQUEUED, NULL, d));
	}
	d = cJSON_CreateObject();
	if (t->parent)
		cJSON_AddStringToObject(d, "parent_turn", t->parent);
	if (t->submit_id)
		cJSON_AddStringToObject(d, "client_submit_id", t->submit_id);
	cJSON_AddItemToArray(evs, event(VT_TURN_START, t->id, d));
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", t->text);
	cJSON_AddItemToArray(evs, event(VT_USER_MESSAGE, t->id, d));
	return evs;
}

static void before_done(struct fifo_item *it, void *ctx, const struct fifo_receipt *rc,
			const struct cerr *err)
{
	(void)it;
	struct turn *t = ctx;
	if (err) {
		/* The persistence class says why (io, locked, conflict, ...). */
		notes_fail(t, err);
		set_error(t, cerr_class_name(err->cls), err->msg, 0);
		t->outcome = "not_started";
		publish_done(t);
		return;
	}
	uint64_t first = t->next_seq;
	t->next_seq = rc->next_seq;
	t->version = rc->content_version;
	cJSON *evs = before_events(t);
	publish_durable(t, evs, first);
	add_to_context(t, evs);
	cJSON_Delete(evs);
	t->cap = capture_new(t->r->d.loop, t->r->d.fifo, t->session, t->next_seq, t->version, NULL);
	capture_on_durable(t->cap, captured, t);
	notes_capture(t);
	if (t->cancel) {
		t->outcome = "canceled";
		end_turn(t, "canceled");
		return;
	}
	start_call(t);
}

static void pressure_cb(struct sink *s, bool paused, void *ctx)
{
	(void)s;
	struct runner *r = ctx;
	r->paused = paused;
	for (struct turn *t = r->turns; t; t = t->next)
		if (t->call) {
			if (paused)
				call_pause(t->call);
			else
				call_resume(t->call);
		}
}

struct runner *runner_new(const struct runner_deps *deps)
{
	struct runner *r = xcalloc(1, sizeof *r);
	r->d = *deps;
	sink_set_pressure(r->d.sink, pressure_cb, r);
	return r;
}

void runner_free(struct runner *r)
{
	if (!r)
		return;
	sink_set_pressure(r->d.sink, NULL, NULL);
	while (r->turns) {
		struct turn *t = r->turns;
		r->turns = t->next;
		turn_free(t);
	}
	free(r);
}

void runner_set_http(struct runner *r, struct http *http)
{
	r->d.http = http;
}

int runner_answer(struct runner *r, const char *session, const char *request_id,
		  const char *decision, const char *note, struct cerr *err)
{
	struct turn *t = find(r, session);
	if (!t || !t->ts)
		return cerr_set(err, CERR_MISSING, 0, "session '%s' waits for no answer", session);
	return toolstep_answer(t->ts, request_id, decision, note, err);
}

bool runner_busy(const struct runner *r, const char *session)
{
	return find(r, session) != NULL;
}

int runner_start(struct runner *r, const struct runner_turn *rt, struct sink_op *op,
		 struct cerr *err)
{
	if (find(r, rt->session))
		return cerr_set(err, CERR_BUSY, 0, "session '%s' is running a turn", rt->session);
	if (!rt->text || !rt->turn)
		return cerr_set(err, CERR_USAGE, 0, "a turn needs an id and a prompt");
	struct turn *t = xcalloc(1, sizeof *t);
	t->r = r;
	t->st = TURN_BEFORE;
	sink_op_set(&t->op, rt->session, rt->generation, ++r->next_op);
	t->session = xstrdup(rt->session);
	t->id = xstrdup(rt->turn);
	t->text = xstrdup(rt->text);
	t->provider = xstrdup(rt->provider ? rt->provider : "offline");
	t->cwd = dup_or_null(rt->cwd);
	t->parent = dup_or_null(rt->parent_turn);
	t->submit_id = dup_or_null(rt->client_submit_id);
	t->dequeued = dup_or_null(rt->dequeued_input);
	t->settings = rt->settings ? cJSON_Duplicate(rt->settings, 1) : NULL;
	t->create = rt->create;
	t->ctx = rt->ctx;
	t->next_seq = rt->next_seq;
	t->version = rt->version;
	t->spec = rt->call;
	t->model = dup_or_null(rt->call.params.model);
	t->base_url = dup_or_null(rt->call.params.base_url);
	t->api_key = dup_or_null(rt->call.params.api_key);
	t->system = dup_or_null(rt->call.params.system);
	t->tools = rt->call.params.tools ? cJSON_Duplicate(rt->call.params.tools, 1) : NULL;
	t->spec.params.model = t->model;
	t->spec.params.base_url = t->base_url;
	t->spec.params.api_key = t->api_key;
	t->spec.params.system = t->system;
	t->spec.params.tools = t->tools;
	buf_init(&t->answer);
	t->res.usage = (struct stream_usage){-1, -1, -1, -1, -1};
	t->total = t->res.usage;
	t->tool_ctx = rt->tools;
	t->approval = rt->approval;
	t->grants = rt->grants;
	t->max_steps = rt->max_steps ? rt->max_steps : 50;
	t->next = r->turns;
	r->turns = t;
	if (op)
		*op = t->op;

	cJSON *evs = before_events(t);
	struct fifo_item *it = fifo_history(t->session, t->next_seq, evs);
	if (t->create)
		fifo_item_create_header(it, t->cwd, t->provider, t->model, NULL);
	fifo_item_set_running(it);
	if (fifo_post(r->d.fifo, it, before_done, t, err) < 0) {
		unlink_turn(r, t);
		turn_free(t);
		return -1;
	}
	return 0;
}

void runner_cancel(struct runner *r, const char *session)
{
	struct turn *t = find(r, session);
	if (!t || t->cancel || t->st >= TURN_ENDED)
		return;
	t->cancel = true;
	if (t->call)
		call_cancel(t->call);
	if (t->ts)
		toolstep_cancel(t->ts);
}

/* The turn is settled (err NULL) or its full save failed: tell the owner,
 * say so, then release the session. */
static void settled(struct turn *t, uint64_t next_seq, uint64_t version, const struct cerr *err)
{
	struct runner *r = t->r;
	if (!err && t->saving)
		add_to_context(t, t->saving);
	if (r->d.settled) {
		struct runner_settlement st = {
			.session = t->session, .turn = t->id, .op = t->op, .outcome = t->outcome,
			.ok = !err, .next_seq = next_seq, .version = version, .err = err,
		};
		if (err) {
			st.unsaved = t->saving ? t->saving : cJSON_CreateArray();
			t->saving = NULL;
			st.unsaved_seq = t->saving_seq;
			st.unsaved_version = t->cap ? capture_version(t->cap) : t->version;
		}
		r->d.settled(r->d.ud, &st);
		cJSON_Delete(st.unsaved);
	}
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "turn", t->id);
	if (err) {
		cJSON_AddBoolToObject(m, "ok", 0);
		cJSON *e = cJSON_AddObjectToObject(m, "error");
		cJSON_AddStringToObject(e, "class", cerr_class_name(err->cls));
		cJSON_AddStringToObject(e, "message", err->msg);
	} else {
		cJSON_AddBoolToObject(m, "ok", 1);
		cJSON_AddNumberToObject(m, "next_seq", (double)next_seq);
		cJSON_AddNumberToObject(m, "version", (double)version);
	}
	sink_publish_marker(r->d.sink, &t->op, "settled", m);
	cJSON_Delete(m);
	unlink_turn(r, t);
	turn_free(t);
}

/* The full save's receipt is adopted as it is: never a re-read. */
static void full_save_done(struct fifo_item *it, void *ctx, const struct fifo_receipt *rc,
			   const struct cerr *err)
{
	(void)it;
	struct turn *t = ctx;
	if (!err)
		publish_durable(t, t->saving, t->saving_seq);
	settled(t, err ? 0 : rc->next_seq, err ? 0 : rc->content_version, err);
}

static void save_when_drained(struct capture *c, void *ctx, const struct cerr *drain_err)
{
	(void)drain_err; /* a failed item: the full save writes its events again */
	struct turn *t = ctx;
	uint64_t lost_seq;
	cJSON *lost = capture_take_lost(c, &lost_seq);
	if (cJSON_GetArraySize(lost) > 0) {
		for (cJSON *e; (e = cJSON_DetachItemFromArray(t->saving, 0));)
			cJSON_AddItemToArray(lost, e);
		cJSON_Delete(t->saving);
		t->saving = lost;
		t->saving_seq = lost_seq;
	} else {
		cJSON_Delete(lost);
	}
	struct fifo_item *it = fifo_full_save(t->session, t->saving_seq, capture_version(c),
					      cJSON_Duplicate(t->saving, 1));
	struct cerr err;
	if (fifo_post(t->r->d.fifo, it, full_save_done, t, &err) < 0)
		settled(t, 0, 0, &err);
}

int runner_settle(struct runner *r, const struct sink_op *op, struct cerr *err)
{
	struct turn *t = find(r, op->session);
	if (!t || !sink_op_same(&t->op, op) || t->st != TURN_ENDED)
		return cerr_set(err, CERR_CONFLICT, 0,
				"no turn of session '%s' waits to be settled as %llu/%llu", op->session,
				(unsigned long long)op->generation, (unsigned long long)op->operation);
	t->st = TURN_SETTLING;
	if (!t->cap) {
		/* Never started: nothing of the turn is in the log. */
		settled(t, t->next_seq, t->version, NULL);
		return 0;
	}
	cJSON *rest;
	capture_take(t->cap, &rest, &t->saving_seq);
	t->saving = rest;
	/* The full save expects the version after every history item of the
	 * turn: wait for those still in flight first. */
	if (capture_commit(t->cap, save_when_drained, t) < 0) {
		t->st = TURN_ENDED;
		return cerr_set(err, CERR_USAGE, 0, "the turn's capture is closing");
	}
	return 0;
}
