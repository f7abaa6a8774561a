/* runner_step.c — one model step of a turn (runner_int.h): request/prepared
 * and every pending batch durable before each attempt, the reply streamed
 * to the sink and the capture, step/end, then the step's tool calls
 * (toolstep.h) and the next step, or the turn's end. */
#include "engine/runner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "base/xalloc.h"

/* A fingerprint of what the model is sent: every part of every message. */
static void fingerprint(const struct ctx_message *m, size_t n, char out[SHA256_HEX_LEN + 1])
{
	/* The bytes hashed: per message "ROLE:NPARTS\n", per part
	 * "KIND REDACTED INCOMPLETE IS_ERROR" as digits, then "|LEN:TEXT" for
	 * each of its five fields; built without a format (a long history is
	 * tens of thousands of messages, megabytes of text). */
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		buf_add_int(&b, (int)m[i].role);
		buf_addc(&b, ':');
		buf_add_int(&b, (int64_t)m[i].nparts);
		buf_addc(&b, '\n');
		for (size_t j = 0; j < m[i].nparts; j++) {
			const struct ctx_part *p = &m[i].parts[j];
			const char *fields[] = {p->text, p->signature, p->call_id, p->name, p->args};
			buf_add_int(&b, (int)p->kind);
			buf_add_int(&b, p->redacted);
			buf_add_int(&b, p->incomplete);
			buf_add_int(&b, p->is_error);
			for (size_t k = 0; k < 5; k++) {
				size_t len = fields[k] ? strlen(fields[k]) : 0;
				buf_addc(&b, '|');
				buf_add_int(&b, (int64_t)len);
				buf_addc(&b, ':');
				buf_add(&b, fields[k] ? fields[k] : "", len);
			}
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
			runner_set_error(t, vocab_error_name(VE_CAPTURE_FAILED), err->msg, 0);
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
	case STREAM_TOOL_START: {
		/* The screen can show the call while its arguments stream. */
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "provider_id", ev->id ? ev->id : "");
		cJSON_AddStringToObject(d, "name", ev->name ? ev->name : "");
		sink_publish_notice(s, &t->op, SINK_NOTICE_TOOL_CALL, d);
		cJSON_Delete(d);
		break;
	}
	case STREAM_TOOL_ARGS:
	case STREAM_USAGE:
	case STREAM_FINISH:
	case STREAM_ERROR:
	case STREAM_DONE:
		break;
	}
}

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
	sink_publish_notice(t->r->d.sink, &t->op, SINK_NOTICE_INTERACTION, request);
}

static void next_step(struct capture *c, void *ctx, const struct cerr *err)
{
	(void)c;
	struct turn *t = ctx;
	if (err) {
		runner_set_error(t, vocab_error_name(VE_CAPTURE_FAILED), err->msg, 0);
		runner_end_turn(t, VO_FAILED);
	} else if (t->cancel) {
		runner_end_turn(t, VO_CANCELED);
	} else {
		runner_step_start(t); /* the results are durable, and so in the context */
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
	enum vocab_outcome outcome = t->pending_outcome;
	if (end == TOOLSTEP_FAILED) {
		runner_set_error(t, vocab_error_name(VE_CAPTURE_FAILED), err ? err->msg : "a save failed", 0);
		runner_end_turn(t, VO_FAILED);
	} else if (outcome != VO_COMPLETED) {
		runner_end_turn(t, outcome);
	} else if (end == TOOLSTEP_CANCELED || t->cancel) {
		runner_end_turn(t, VO_CANCELED);
	} else if (over) {
		char msg[128];
		snprintf(msg, sizeof msg, "the turn reached its step limit (%u model calls)", t->max_steps);
		runner_set_error(t, vocab_error_name(VE_STEP_LIMIT), msg, 0);
		runner_end_turn(t, VO_FAILED);
	} else if (capture_commit(t->cap, next_step, t) < 0) {
		runner_set_error(t, vocab_error_name(VE_CAPTURE_FAILED), "the turn's capture is closing", 0);
		runner_end_turn(t, VO_FAILED);
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
	cJSON *u = runner_usage_json(&res->usage);
	if (u)
		cJSON_AddItemToObject(d, "usage", u);
	capture_event(t->cap, VT_STEP_END, t->id, d);
	cJSON_Delete(d);
	enum vocab_outcome outcome = VO_COMPLETED;
	if (capture_state(t->cap) == CAPTURE_FAILED) {
		if (!t->error)
			runner_set_error(t, vocab_error_name(VE_CAPTURE_FAILED), capture_error(t->cap)->msg, 0);
		outcome = VO_FAILED;
	} else {
		switch (res->outcome) {
		case CALL_COMPLETE:
			break;
		case CALL_PROVIDER_ERROR:
			runner_set_error(t, vocab_error_name(VE_PROVIDER), res->message, res->http_status);
			outcome = VO_FAILED;
			break;
		case CALL_DELIVERY_UNKNOWN:
			runner_set_error(t, vocab_error_name(VE_DELIVERY_UNKNOWN), res->message, res->http_status);
			outcome = VO_FAILED;
			break;
		case CALL_CANCELED:
			outcome = t->error ? VO_FAILED : VO_CANCELED;
			break;
		}
	}
	if (t->ts) {
		/* Every call gets its result: run them, or answer them unrun. */
		if (outcome != VO_COMPLETED)
			toolstep_cancel(t->ts, outcome == VO_CANCELED
						       ? NULL
						       : "the model's reply failed before it could run");
		t->pending_outcome = outcome;
		toolstep_run(t->ts);
		return;
	}
	runner_end_turn(t, outcome);
}

void runner_step_start(struct turn *t)
{
	t->st = TURN_CALLING;
	t->step++;
	struct call_spec spec = t->spec;
	spec.msgs = context_messages(t->ctx, t->id, &spec.n);
	spec.prompt = t->text;
	struct call_hooks hk = {before_attempt, on_event, on_done, t};
	t->call = call_start(t->r->d.loop, t->r->d.http, &spec, &hk);
	if (t->r->paused || t->cap_paused)
		call_pause(t->call);
}
