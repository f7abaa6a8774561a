/* toolstep.c — one step's tool calls (toolstep.h). */
#include "engine/toolstep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "engine/textfix.h"
#include "persist/closer_text.h"

enum call_state { C_NEW, C_DECIDING, C_ASKING, C_STARTING, C_RUNNING, C_DONE };

struct tcall {
	enum call_state st;
	char *id, *provider_id, *name;
	char *args_text;  /* as the model sent it */
	cJSON *args;      /* parsed: an object, else NULL */
	char *args_error; /* why args is NULL (a complete call) */
	bool incomplete;
	char request_id[64];
	char *decision; /* the answer it got, once answered */
};

struct toolstep {
	struct toolstep_hooks hk;
	struct toolstep_opts o;
	char *turn;
	struct tcall *v;
	size_t n, cur;
	bool canceled, ended, recorded;
	char *why; /* why calls not yet run never will be (the cancel's reason) */
	struct tool_run *run;
	uv_work_t decide;
	bool need; /* the decision: ask the user */
	bool ro_allows; /* the read-only policy would allow the call */
};

struct toolstep *toolstep_new(const struct toolstep_hooks *hk, const struct toolstep_opts *o)
{
	struct toolstep *ts = xcalloc(1, sizeof *ts);
	ts->hk = *hk;
	ts->o = *o;
	ts->turn = xstrdup(o->turn ? o->turn : "t");
	ts->o.turn = ts->turn;
	ts->decide.data = ts;
	return ts;
}

void toolstep_free(struct toolstep *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->n; i++) {
		struct tcall *c = &ts->v[i];
		free(c->id);
		free(c->provider_id);
		free(c->name);
		free(c->args_text);
		cJSON_Delete(c->args);
		free(c->args_error);
		free(c->decision);
	}
	free(ts->v);
	free(ts->why);
	free(ts->turn);
	free(ts);
}

size_t toolstep_count(const struct toolstep *ts)
{
	return ts->n;
}

/* An event holds its data, and the data of a tool/call its args: two
 * levels of the log's nesting limit are taken before the arguments'. */
#define ARGS_DEPTH_MAX (CJSON_NESTING_LIMIT - 2)

/* The nesting depth of v's containers, v at level (stops past the max). */
static int depth(const cJSON *v, int level)
{
	int most = level;
	for (const cJSON *c = v->child; c && most <= ARGS_DEPTH_MAX; c = c->next)
		if (cJSON_IsArray(c) || cJSON_IsObject(c)) {
			int d = depth(c, level + 1);
			most = d > most ? d : most;
		}
	return most;
}

/* The call's arguments as a JSON object the log can keep, else args NULL
 * and args_error why: not JSON, not an object, or JSON the log's strict
 * rules refuse (a duplicate key, a number a double cannot hold, an escaped
 * NUL — which cJSON would cut a string at, shortening a command — or
 * nesting deeper than an event may hold). */
static void parse_args(struct tcall *c)
{
	const char *text = *c->args_text ? c->args_text : "{}";
	const char *end = NULL, *why = NULL;
	cJSON *loose = cJSON_ParseWithOpts(text, &end, 1);
	if (!loose) {
		c->args_error = xasprintf("the arguments are not valid JSON (near byte %zu)",
					  end ? (size_t)(end - text) : 0);
		return;
	}
	bool obj = cJSON_IsObject(loose);
	cJSON_Delete(loose);
	if (!obj) {
		c->args_error = xstrdup("the arguments are not a JSON object");
		return;
	}
	c->args = json_parse_strict(text, strlen(text), &why);
	if (!c->args) {
		c->args_error = xasprintf("the arguments are JSON that cannot be kept as it is (%s)",
					  why);
	} else if (depth(c->args, 1) > ARGS_DEPTH_MAX) {
		cJSON_Delete(c->args);
		c->args = NULL;
		c->args_error = xasprintf("the arguments are JSON nested deeper than %d levels",
					  ARGS_DEPTH_MAX);
	}
}

void toolstep_add(struct toolstep *ts, const struct stream_event *ev)
{
	ts->v = xrealloc(ts->v, (ts->n + 1) * sizeof *ts->v);
	struct tcall *c = &ts->v[ts->n];
	memset(c, 0, sizeof *c);
	c->id = xasprintf("%s.%u", ts->turn, ts->o.first_call + (unsigned)ts->n);
	c->provider_id = ev->id && *ev->id ? xstrdup(ev->id) : NULL;
	c->name = textfix_string(ev->name ? ev->name : "", ev->name ? strlen(ev->name) : 0);
	c->args_text = textfix_string(ev->text ? ev->text : "", ev->text ? ev->len : 0);
	c->incomplete = ev->incomplete;
	if (!c->incomplete)
		parse_args(c);
	snprintf(c->request_id, sizeof c->request_id, "r-%s", c->id);
	ts->n++;
}

/* ---- results ---- */

static void next(struct toolstep *ts);

static void result(struct toolstep *ts, struct tcall *c, enum vocab_status status, const char *output,
		   const struct tool_result *r)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "call_id", c->id);
	cJSON_AddStringToObject(d, "status", vocab_status_name(status));
	cJSON_AddStringToObject(d, "output", output);
	if (r) {
		if (r->exit_code >= 0 && strcmp(c->name, "shell") == 0)
			cJSON_AddNumberToObject(d, "exit_code", r->exit_code);
		if (r->signal > 0)
			cJSON_AddNumberToObject(d, "signal", r->signal);
		if (r->truncated)
			cJSON_AddBoolToObject(d, "truncated", 1);
		for (const cJSON *e = r->extra ? r->extra->child : NULL; e; e = e->next)
			if (!cJSON_GetObjectItem(d, e->string))
				cJSON_AddItemToObject(d, e->string, cJSON_Duplicate(e, 1));
	}
	ts->hk.capture(ts->hk.ud, VT_TOOL_RESULT, d);
	cJSON_Delete(d);
	c->st = C_DONE;
	ts->cur++;
	next(ts);
}

static void closer(struct toolstep *ts, struct tcall *c, enum closer_kind k, const char *why)
{
	char *text = closer_text(k, why);
	result(ts, c, closer_status(k), text, NULL);
	free(text);
}

static void finish(struct toolstep *ts, enum toolstep_end end, const struct cerr *err)
{
	if (ts->ended)
		return;
	ts->ended = true;
	ts->hk.done(ts->hk.ud, end, err);
}

/* ---- running a call ---- */

static void tool_done(void *ctx, struct tool_run *run, struct tool_result *r)
{
	(void)run;
	struct toolstep *ts = ctx;
	struct tcall *c = &ts->v[ts->cur];
	ts->run = NULL;
	const char *text = r->full ? r->full : r->output ? r->output : "";
	if (r->status == TOOL_CANCELED) {
		char *t = closer_text(CLOSER_CANCELED, NULL);
		char *out = *text ? xasprintf("%s\n%s", t, text) : xstrdup(t);
		result(ts, c, VS_CANCELED, out, r);
		free(out);
		free(t);
	} else {
		result(ts, c, r->status == TOOL_OK ? VS_OK : VS_ERROR, text, r);
	}
	tool_result_release(r);
}

static void started(void *arg, const struct cerr *err)
{
	struct toolstep *ts = arg;
	struct tcall *c = &ts->v[ts->cur];
	if (err) {
		finish(ts, TOOLSTEP_FAILED, err);
		return;
	}
	/* A cancel that came while tool/started was saved: it never runs. */
	if (ts->canceled) {
		closer(ts, c, CLOSER_CANCELED_NOT_RUN, NULL);
		return;
	}
	c->st = C_RUNNING;
	struct cerr e;
	ts->run = tool_start(ts->o.tools, c->name, c->args, tool_done, ts, &e);
	if (!ts->run) {
		char *msg = xasprintf("error: %s", e.msg);
		result(ts, c, VS_ERROR, msg, NULL);
		free(msg);
	}
}

static void start(struct toolstep *ts, struct tcall *c)
{
	c->st = C_STARTING;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "call_id", c->id);
	ts->hk.capture(ts->hk.ud, VT_TOOL_STARTED, d);
	cJSON_Delete(d);
	/* intent before effect: the call, its answer and tool/started durable */
	if (ts->hk.commit(ts->hk.ud, started, ts) < 0) {
		struct cerr err;
		cerr_set(&err, CERR_IO, 0, "the turn's capture is closing");
		finish(ts, TOOLSTEP_FAILED, &err);
	}
}

static void capture_answer(struct toolstep *ts, struct tcall *c, const char *decision,
			   const char *note, const char *by)
{
	if (!c->decision)
		c->decision = xstrdup(decision);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "request_id", c->request_id);
	cJSON_AddStringToObject(d, "decision", decision);
	if (note && *note)
		cJSON_AddStringToObject(d, "note", note);
	cJSON_AddStringToObject(d, "by", by);
	ts->hk.capture(ts->hk.ud, VT_INTERACTION_ANSWER, d);
	cJSON_Delete(d);
}

static cJSON *request_data(struct tcall *c)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "request_id", c->request_id);
	cJSON_AddStringToObject(d, "call_id", c->id);
	cJSON_AddStringToObject(d, "tool", c->name);
	char *s = approval_summary(c->name, c->args);
	cJSON_AddStringToObject(d, "summary", s);
	free(s);
	return d;
}

static void asked(void *arg, const struct cerr *err)
{
	struct toolstep *ts = arg;
	struct tcall *c = &ts->v[ts->cur];
	if (err) {
		finish(ts, TOOLSTEP_FAILED, err);
		return;
	}
	if (ts->canceled) {
		capture_answer(ts, c, "canceled", NULL, "user");
		closer(ts, c, CLOSER_CANCELED_NOT_RUN, NULL);
		return;
	}
	cJSON *d = request_data(c);
	/* For the consumer only (not in the log): the least policy that
	 * would allow the call without asking, for advice that holds. */
	cJSON_AddStringToObject(d, "allowed_by", ts->ro_allows ? "read-only" : "all");
	ts->hk.ask(ts->hk.ud, d);
	cJSON_Delete(d);
}

static void decide_work(uv_work_t *w)
{
	struct toolstep *ts = w->data;
	struct tcall *c = &ts->v[ts->cur];
	ts->need = approval_needed(ts->o.policy, ts->o.grants, c->name, c->args, ts->o.tools->cwd);
	ts->ro_allows = ts->need && !approval_needed(APPROVAL_READ_ONLY, ts->o.grants, c->name,
						     c->args, ts->o.tools->cwd);
}

static void decided(uv_work_t *w, int status)
{
	struct toolstep *ts = w->data;
	struct tcall *c = &ts->v[ts->cur];
	if (status < 0) {
		ts->need = true; /* not decided: ask */
		ts->ro_allows = false;
	}
	cJSON *d = request_data(c);
	ts->hk.capture(ts->hk.ud, VT_INTERACTION_REQUEST, d);
	cJSON_Delete(d);
	if (ts->canceled) {
		capture_answer(ts, c, "canceled", NULL, "user");
		closer(ts, c, CLOSER_CANCELED_NOT_RUN, NULL);
		return;
	}
	if (!ts->need) {
		capture_answer(ts, c, "allow_once", NULL, "policy");
		start(ts, c);
		return;
	}
	c->st = C_ASKING;
	/* The request is durable before anyone is asked. */
	if (ts->hk.commit(ts->hk.ud, asked, ts) < 0) {
		struct cerr err;
		cerr_set(&err, CERR_IO, 0, "the turn's capture is closing");
		finish(ts, TOOLSTEP_FAILED, &err);
	}
}

static bool known_tool(const char *name)
{
	static const char *const tools[] = {"shell", "read_file", "write_file", "edit_file",
					    "list_dir", "grep"};
	for (size_t i = 0; i < sizeof tools / sizeof *tools; i++)
		if (strcmp(name, tools[i]) == 0)
			return true;
	return false;
}

static void next(struct toolstep *ts)
{
	if (ts->ended)
		return;
	if (ts->cur == ts->n) {
		finish(ts, ts->canceled ? TOOLSTEP_CANCELED : TOOLSTEP_DONE, NULL);
		return;
	}
	struct tcall *c = &ts->v[ts->cur];
	if (ts->canceled) {
		closer(ts, c, CLOSER_NOT_EXECUTED, ts->why ? ts->why : "the turn was canceled");
	} else if (ts->o.over_limit) {
		closer(ts, c, CLOSER_NOT_EXECUTED, "the step limit was reached");
	} else if (c->incomplete) {
		closer(ts, c, CLOSER_NOT_EXECUTED, "its arguments were cut off by the output limit");
	} else if (!known_tool(c->name)) {
		char *msg = xasprintf("error: there is no tool named '%s'", c->name);
		result(ts, c, VS_ERROR, msg, NULL);
		free(msg);
	} else if (c->args_error) {
		char *msg = xasprintf("error: invalid arguments: %s; the call did not run. "
				      "You sent: %s",
				      c->args_error, c->args_text);
		result(ts, c, VS_ERROR, msg, NULL);
		free(msg);
	} else {
		c->st = C_DECIDING;
		if (uv_queue_work(ts->o.tools->loop, &ts->decide, decide_work, decided) != 0)
			decided(&ts->decide, -1);
	}
}

void toolstep_record(struct toolstep *ts)
{
	if (ts->recorded)
		return;
	ts->recorded = true;
	for (size_t i = 0; i < ts->n; i++) {
		struct tcall *c = &ts->v[i];
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "call_id", c->id);
		if (c->provider_id)
			cJSON_AddStringToObject(d, "provider_id", c->provider_id);
		cJSON_AddStringToObject(d, "name", c->name);
		if (c->args) {
			cJSON_AddItemToObject(d, "args", cJSON_Duplicate(c->args, 1));
		} else if (c->incomplete) {
			cJSON_AddStringToObject(d, "args", c->args_text); /* the part sent */
		} else {
			/* Not an object the log can keep: the text as sent, and
			 * an empty object in its place (what the model is sent
			 * back with the call). */
			cJSON_AddItemToObject(d, "args", cJSON_CreateObject());
			cJSON_AddStringToObject(d, "args_raw", c->args_text);
		}
		if (c->incomplete)
			cJSON_AddBoolToObject(d, "incomplete", 1);
		ts->hk.capture(ts->hk.ud, VT_TOOL_CALL, d);
		cJSON_Delete(d);
	}
}

void toolstep_run(struct toolstep *ts)
{
	toolstep_record(ts);
	next(ts);
}

int toolstep_answer(struct toolstep *ts, const char *request_id, const char *decision,
		    const char *note, struct cerr *err)
{
	bool allow = strcmp(decision, "allow_once") == 0 || strcmp(decision, "allow_session") == 0;
	if (!allow && strcmp(decision, "deny") != 0 && strcmp(decision, "canceled") != 0)
		return cerr_set(err, CERR_USAGE, 0, "unknown decision '%s'", decision);
	struct tcall *c = ts->cur < ts->n ? &ts->v[ts->cur] : NULL;
	if (!c || c->st != C_ASKING || strcmp(c->request_id, request_id) != 0) {
		/* Answered already in this step: the same answer again changes
		 * nothing; a different one is recorded, superseded. */
		for (size_t i = 0; i < ts->n; i++) {
			struct tcall *a = &ts->v[i];
			if (strcmp(a->request_id, request_id) != 0 || !a->decision)
				continue;
			if (strcmp(a->decision, decision) != 0 && !ts->ended) {
				cJSON *d = cJSON_CreateObject();
				cJSON_AddStringToObject(d, "request_id", request_id);
				cJSON_AddStringToObject(d, "decision", decision);
				if (note && *note)
					cJSON_AddStringToObject(d, "note", note);
				cJSON_AddStringToObject(d, "by", "user");
				cJSON_AddBoolToObject(d, "superseded", 1);
				ts->hk.capture(ts->hk.ud, VT_INTERACTION_ANSWER, d);
				cJSON_Delete(d);
			}
			return 0;
		}
		return cerr_set(err, CERR_MISSING, 0, "no request '%s' is waiting", request_id);
	}
	capture_answer(ts, c, decision, note, "user");
	if (strcmp(decision, "allow_session") == 0)
		approvals_grant(ts->o.grants, c->name, c->args);
	if (allow)
		start(ts, c);
	else if (strcmp(decision, "deny") == 0)
		closer(ts, c, CLOSER_DENIED, note);
	else
		closer(ts, c, CLOSER_CANCELED_NOT_RUN, NULL);
	return 0;
}

void toolstep_cancel(struct toolstep *ts, const char *why)
{
	if (ts->canceled || ts->ended)
		return;
	ts->canceled = true;
	ts->why = xstrdup_opt(why);
	struct tcall *c = ts->cur < ts->n ? &ts->v[ts->cur] : NULL;
	if (!c)
		return;
	if (c->st == C_ASKING) {
		struct cerr err;
		toolstep_answer(ts, c->request_id, "canceled", NULL, &err);
	} else if (c->st == C_RUNNING && ts->run) {
		tool_cancel(ts->run); /* its result comes back canceled */
	}
	/* DECIDING and STARTING look at the flag when they complete. */
}
