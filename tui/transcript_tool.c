/* transcript_tool.c — a turn's tool blocks (transcript_int.h): a call
 * announced while its arguments stream, then its tool/call, approval
 * (asked, answered by the user or the policy, canceled), tool/started and
 * tool/result, whether they come live or from the log. */
#include "tui/transcript_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"

void transcript_tool_release(struct transcript_block *b)
{
	struct transcript_tool *x = &b->tool;
	const char **owned[] = {&x->call_id, &x->provider_id, &x->name, &x->target,
				&x->args,    &x->summary,     &x->request_id, &x->note};
	for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) {
		free((char *)*owned[i]);
		*owned[i] = NULL;
	}
}

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

/* The tool block of turn t whose call id (or, with request, approval
 * request id) is id; the latest when several. */
static struct transcript_block *tool_by(struct transcript_turn *t, const char *id, bool request)
{
	for (size_t i = t->n; id && i-- > 0;) {
		const struct transcript_tool *x = &t->b[i]->tool;
		const char *v = request ? x->request_id : x->call_id;
		if (t->b[i]->kind == TR_TOOL && v && strcmp(v, id) == 0)
			return t->b[i];
	}
	return NULL;
}

bool transcript_tool_notice(struct transcript *tr, struct transcript_turn *t, const cJSON *data)
{
	struct transcript_block *b = transcript_block_add(tr, t, TR_TOOL);
	b->pending = true;
	b->tool.args_state = TR_ARGS_STREAMING;
	transcript_set_str(&b->tool.provider_id, nonempty(transcript_str(data, "provider_id")));
	const char *name = transcript_str(data, "name");
	transcript_set_str(&b->tool.name, name ? name : "");
	return true;
}

/* The announced call a tool/call records: the one with its provider id,
 * else (no id given on either side) the first still announced. */
static struct transcript_block *announced(struct transcript_turn *t, const char *provider_id)
{
	struct transcript_block *first = NULL;
	for (size_t i = 0; i < t->n; i++) {
		struct transcript_block *b = t->b[i];
		if (!b->pending)
			continue;
		if (provider_id && b->tool.provider_id && strcmp(provider_id, b->tool.provider_id) == 0)
			return b;
		if (!first && (!provider_id || !b->tool.provider_id))
			first = b;
	}
	return first;
}

/* What the call acts on, as a person reads it: the command or the path. */
static char *target_of(const cJSON *args)
{
	const char *cmd = transcript_str(args, "command");
	const char *path = transcript_str(args, "path");
	const char *pattern = transcript_str(args, "pattern");
	if (cmd)
		return xstrdup(cmd);
	if (pattern)
		return path ? xasprintf("%s in %s", pattern, path) : xstrdup(pattern);
	return xstrdup_opt(path);
}

static bool call(struct transcript *tr, struct transcript_turn *t, const cJSON *d)
{
	const char *id = transcript_str(d, "call_id");
	if (!id || tool_by(t, id, false))
		return false;
	const char *pid = nonempty(transcript_str(d, "provider_id"));
	struct transcript_block *b = announced(t, pid);
	if (!b)
		b = transcript_block_add(tr, t, TR_TOOL);
	b->pending = false;
	struct transcript_tool *x = &b->tool;
	const char *name = transcript_str(d, "name");
	transcript_set_str(&x->call_id, id);
	transcript_set_str(&x->provider_id, pid);
	transcript_set_str(&x->name, name ? name : "");
	const cJSON *args = cJSON_GetObjectItem(d, "args");
	const cJSON *blob = cJSON_GetObjectItem(d, "blob");
	/* Arguments that were not a JSON object the log could keep: the
	 * text the model sent is what is shown. */
	bool raw = cJSON_IsString(cJSON_GetObjectItem(d, "args_raw"));
	if (raw)
		args = cJSON_GetObjectItem(d, "args_raw");
	free((char *)x->args);
	free((char *)x->target);
	x->target = NULL;
	if (cJSON_IsObject(args)) {
		x->args_state = TR_ARGS_OK;
		x->args = json_print(args);
		x->target = target_of(args);
	} else if (cJSON_IsString(args)) {
		/* A string is what the model sent when it was not an object:
		 * cut off, spilled to a blob, or simply not valid. */
		x->args = xstrdup(args->valuestring);
		x->args_state = cJSON_IsTrue(cJSON_GetObjectItem(d, "incomplete")) ? TR_ARGS_CUT_OFF
				: blob && !raw ? TR_ARGS_BLOB : TR_ARGS_INVALID;
		int64_t size = 0;
		if (blob && json_get_int(cJSON_GetObjectItem(blob, "size"), 0, INT64_MAX, &size))
			x->args_blob_size = (uint64_t)size;
	} else {
		x->args_state = TR_ARGS_INVALID;
		x->args = args ? json_print(args) : xstrdup("");
	}
	transcript_touch(tr, t, b);
	return true;
}

static bool request(struct transcript *tr, struct transcript_turn *t, const cJSON *d,
		    int64_t t_ms)
{
	struct transcript_block *b = tool_by(t, transcript_str(d, "call_id"), false);
	if (!b)
		return false;
	bool changed = transcript_set_str(&b->tool.request_id, transcript_str(d, "request_id"));
	changed |= transcript_set_str(&b->tool.summary, transcript_str(d, "summary"));
	if (b->tool.approval == TR_APPROVAL_NONE) {
		b->tool.approval = TR_APPROVAL_WAITING;
		b->since_ms = t_ms;
		changed = true;
	}
	if (changed)
		transcript_touch(tr, t, b);
	return changed;
}

bool transcript_tool_asked(struct transcript *tr, struct transcript_turn *t, const cJSON *data,
			   int64_t now_ms)
{
	/* The request is durable before the user is asked, so its event came
	 * first; the notice only confirms it. */
	return request(tr, t, data, now_ms);
}

static bool answer(struct transcript *tr, struct transcript_turn *t, const cJSON *d)
{
	/* A second, different answer changes nothing (toolstep.h). */
	if (cJSON_IsTrue(cJSON_GetObjectItem(d, "superseded")))
		return false;
	struct transcript_block *b = tool_by(t, transcript_str(d, "request_id"), true);
	const char *decision = transcript_str(d, "decision");
	if (!b || !decision)
		return false;
	const char *by = transcript_str(d, "by");
	enum transcript_approval a = TR_APPROVAL_NONE;
	if (strcmp(decision, "allow_once") == 0)
		a = by && strcmp(by, "policy") == 0 ? TR_APPROVAL_POLICY : TR_APPROVAL_ONCE;
	else if (strcmp(decision, "allow_session") == 0)
		a = TR_APPROVAL_SESSION;
	else if (strcmp(decision, "deny") == 0)
		a = TR_APPROVAL_DENIED;
	else if (strcmp(decision, "canceled") == 0)
		a = TR_APPROVAL_CANCELED;
	bool changed = transcript_set_str(&b->tool.note, transcript_str(d, "note"));
	if (a != b->tool.approval) {
		b->tool.approval = a;
		changed = true;
	}
	if (changed)
		transcript_touch(tr, t, b);
	return changed;
}

static enum transcript_status status_of(const char *s)
{
	switch (vocab_status_of(s)) {
	case VS_OK: return TR_STATUS_OK;
	case VS_ERROR: return TR_STATUS_ERROR;
	case VS_DENIED: return TR_STATUS_DENIED;
	case VS_CANCELED: return TR_STATUS_CANCELED;
	case VS_NOT_EXECUTED: return TR_STATUS_NOT_EXECUTED;
	case VS_OUTCOME_UNKNOWN: return TR_STATUS_OUTCOME_UNKNOWN;
	case VS_UNKNOWN:
		/* The enum is closed in format 1 (an unknown value is
		 * unsupported): a result whatever its name is at least an error. */
		return TR_STATUS_ERROR;
	}
	return TR_STATUS_ERROR;
}

static bool result(struct transcript *tr, struct transcript_turn *t, const cJSON *d,
		   int64_t t_ms)
{
	const char *id = transcript_str(d, "call_id");
	struct transcript_block *b = tool_by(t, id, false);
	if (!b) { /* its call is before what was read, or not in the log */
		b = transcript_block_add(tr, t, TR_TOOL);
		transcript_set_str(&b->tool.call_id, id);
		transcript_set_str(&b->tool.name, "");
		b->tool.args_state = TR_ARGS_INVALID;
	}
	struct transcript_tool *x = &b->tool;
	x->status = status_of(transcript_str(d, "status"));
	x->synthetic = cJSON_IsTrue(cJSON_GetObjectItem(d, "synthetic"));
	x->truncated = cJSON_IsTrue(cJSON_GetObjectItem(d, "truncated"));
	x->has_exit_code = json_get_int(cJSON_GetObjectItem(d, "exit_code"), INT64_MIN, INT64_MAX,
					&x->exit_code);
	x->has_signal = json_get_int(cJSON_GetObjectItem(d, "signal"), INT64_MIN, INT64_MAX,
				     &x->signal);
	const cJSON *blob = cJSON_GetObjectItem(d, "blob");
	int64_t size = 0;
	x->output_in_blob = blob != NULL;
	if (blob && json_get_int(cJSON_GetObjectItem(blob, "size"), 0, INT64_MAX, &size))
		x->output_blob_size = (uint64_t)size;
	x->ended_ms = t_ms;
	const cJSON *out = cJSON_GetObjectItem(d, "output");
	buf_reset(&b->text);
	if (cJSON_IsString(out)) {
		buf_adds(&b->text, out->valuestring);
	} else if (out) {
		char *s = json_print(out);
		buf_adds(&b->text, s);
		free(s);
	}
	transcript_touch(tr, t, b);
	/* The result ends the call: the turn waits for the next request. */
	t->phase = TR_WAITING;
	t->phase_ms = t_ms;
	return true;
}

bool transcript_tool_event(struct transcript *tr, struct transcript_turn *t,
			   enum vocab_type type, int64_t t_ms, const cJSON *data)
{
	struct transcript_block *b;
	switch (type) {
	case VT_TOOL_CALL:
		return call(tr, t, data);
	case VT_INTERACTION_REQUEST:
		return request(tr, t, data, t_ms);
	case VT_INTERACTION_ANSWER:
		return answer(tr, t, data);
	case VT_TOOL_STARTED:
		if (!(b = tool_by(t, transcript_str(data, "call_id"), false)) || b->tool.started)
			return false;
		b->tool.started = true;
		b->tool.started_ms = t_ms;
		transcript_touch(tr, t, b);
		return true;
	case VT_TOOL_RESULT:
		return result(tr, t, data, t_ms);
	default:
		return false;
	}
}

bool transcript_tool_drop_pending(struct transcript *tr, struct transcript_turn *t)
{
	bool changed = false;
	for (size_t i = t->n; i-- > 0;)
		if (t->b[i]->pending) {
			transcript_block_remove(tr, t, i);
			changed = true;
		}
	return changed;
}
