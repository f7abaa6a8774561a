/* runner.c — turns on the loop (runner.h): admission, the BEFORE save,
 * cancel, a turn's end and its marker; the states are in runner_int.h. */
#include "engine/runner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "persist/event_batch.h"


struct turn *runner_find(const struct runner *r, const char *session)
{
	for (struct turn *t = r->turns; t; t = t->next)
		if (strcmp(t->session, session) == 0)
			return t;
	return NULL;
}

void runner_unlink(struct runner *r, struct turn *t)
{
	for (struct turn **p = &r->turns; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			return;
		}
}

void runner_turn_free(struct turn *t)
{
	struct cerr gone;
	cerr_set(&gone, CERR_IO, 0, "the turn ended before its note was written");
	runner_note_fail(t, &gone);
	toolstep_free(t->ts);
	toolstep_free(t->ts_old);
	if (t->cap)
		capture_close(t->cap);
	free(t->session);
	free(t->id);
	free(t->text);
	free(t->provider);
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
	buf_release(&t->answer);
	free(t);
}

cJSON *runner_usage_json(const struct stream_usage *u)
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

void runner_set_error(struct turn *t, const char *cls, const char *message, long http_status)
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
	cJSON *u = runner_usage_json(&t->total);
	if (u)
		cJSON_AddItemToObject(m, "usage", u);
	if (t->step == 0) /* nothing was dispatched: the prompt goes back to the composer */
		cJSON_AddStringToObject(m, "text", t->text);
	if (t->dequeued) /* ... unless it was queued input: then it stays queued */
		cJSON_AddStringToObject(m, "input_id", t->dequeued);
	sink_publish_marker(t->r->d.sink, &t->op, SINK_MARKER_TURN_DONE, m);
	cJSON_Delete(m);
}

/* End the turn after its calls: step/end and turn/end into the capture. */
void runner_end_turn(struct turn *t, enum vocab_outcome outcome)
{
	t->outcome = vocab_outcome_name(outcome);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", t->outcome);
	if (t->error)
		cJSON_AddItemToObject(d, "error", cJSON_Duplicate(t->error, 1));
	cJSON *u = runner_usage_json(&t->total);
	if (u)
		cJSON_AddItemToObject(d, "usage", u);
	capture_event(t->cap, VT_TURN_END, t->id, d);
	cJSON_Delete(d);
	publish_done(t);
}

/* The BEFORE save's batch: the settings the turn changes (they apply to
 * it), the queued input it dequeues, turn/start and the prompt; caller
 * frees. */
static cJSON *before_events(const struct turn *t)
{
	cJSON *evs = cJSON_CreateArray();
	cJSON *d;
	if (t->settings)
		cJSON_AddItemToArray(evs, event_batch_event(VT_SESSION_SETTINGS, NULL,
						cJSON_Duplicate(t->settings, 1)));
	if (t->dequeued) {
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "input_id", t->dequeued);
		cJSON_AddItemToArray(evs, event_batch_event(VT_INPUT_DEQUEUED, NULL, d));
	}
	d = cJSON_CreateObject();
	if (t->parent)
		cJSON_AddStringToObject(d, "parent_turn", t->parent);
	else
		cJSON_AddNullToObject(d, "parent_turn"); /* a root: never the absent rule */
	if (t->submit_id)
		cJSON_AddStringToObject(d, "client_submit_id", t->submit_id);
	cJSON_AddItemToArray(evs, event_batch_event(VT_TURN_START, t->id, d));
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", t->text);
	cJSON_AddItemToArray(evs, event_batch_event(VT_USER_MESSAGE, t->id, d));
	return evs;
}

static void pause_or_resume(struct turn *t);

/* The capture's text in flight crossed a mark (capture.h). */
static void cap_pressure(struct capture *c, void *ctx, bool paused)
{
	(void)c;
	struct turn *t = ctx;
	t->cap_paused = paused;
	pause_or_resume(t);
}

/* The BEFORE save is durable (the journal published it and added it to
 * the context) or failed. */
static void before_done(void *ctx, const struct journal_receipt *rc, const struct cerr *err)
{
	(void)rc;
	struct turn *t = ctx;
	if (err) {
		/* The persistence class says why (io, locked, conflict, ...). */
		runner_note_fail(t, err);
		runner_set_error(t, cerr_class_name(err->cls), err->msg, 0);
		t->outcome = "not_started";
		publish_done(t);
		return;
	}
	t->cap = capture_new(t->r->d.loop, t->j, &t->op, NULL);
	capture_on_pressure(t->cap, cap_pressure, t);
	runner_note_flush(t);
	if (t->cancel) {
		runner_end_turn(t, VO_CANCELED);
		return;
	}
	runner_step_start(t);
}

/* A turn's call reads on while neither the sink's consumer nor the
 * turn's capture is behind. */
static void pause_or_resume(struct turn *t)
{
	if (!t->call)
		return;
	if (t->r->paused || t->cap_paused)
		call_pause(t->call);
	else
		call_resume(t->call);
}

static void pressure_cb(struct sink *s, bool paused, void *ctx)
{
	(void)s;
	struct runner *r = ctx;
	r->paused = paused;
	for (struct turn *t = r->turns; t; t = t->next)
		pause_or_resume(t);
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
		runner_turn_free(t);
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
	struct turn *t = runner_find(r, session);
	if (!t || !t->ts)
		return cerr_set(err, CERR_MISSING, 0, "session '%s' waits for no answer", session);
	return toolstep_answer(t->ts, request_id, decision, note, err);
}

bool runner_busy(const struct runner *r, const char *session)
{
	return runner_find(r, session) != NULL;
}

int runner_start(struct runner *r, const struct runner_turn *rt, struct sink_op *op,
		 struct cerr *err)
{
	if (runner_find(r, rt->session))
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
	t->parent = xstrdup_opt(rt->parent_turn);
	t->submit_id = xstrdup_opt(rt->client_submit_id);
	t->dequeued = xstrdup_opt(rt->dequeued_input);
	t->settings = rt->settings ? cJSON_Duplicate(rt->settings, 1) : NULL;
	t->j = rt->journal;
	t->ctx = rt->ctx;
	t->spec = rt->call;
	t->model = xstrdup_opt(rt->call.params.model);
	t->base_url = xstrdup_opt(rt->call.params.base_url);
	t->api_key = xstrdup_opt(rt->call.params.api_key);
	t->system = xstrdup_opt(rt->call.params.system);
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

	struct journal_write w = {
		.op = &t->op, .running = true, .provider = t->provider, .model = t->model};
	if (journal_append(t->j, before_events(t), &w, before_done, t, err) < 0) {
		runner_unlink(r, t);
		runner_turn_free(t);
		return -1;
	}
	return 0;
}

void runner_cancel(struct runner *r, const char *session)
{
	struct turn *t = runner_find(r, session);
	if (!t || t->cancel || t->st >= TURN_ENDED)
		return;
	t->cancel = true;
	if (t->call)
		call_cancel(t->call);
	if (t->ts)
		toolstep_cancel(t->ts, NULL);
}
