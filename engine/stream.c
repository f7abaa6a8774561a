/* stream.c — the provider-neutral decoder core: valid text, tool call
 * slots, finish, errors (stream.h, stream_int.h). */
#include "engine/stream_int.h"
#include "base/json.h"
#include "base/ulid.h"
#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct stream_decoder *stream_decoder_new(enum provider_kind kind, stream_emit_fn emit, void *arg)
{
	struct stream_decoder *d = xcalloc(1, sizeof *d);
	d->kind = kind;
	d->emit = emit;
	d->arg = arg;
	d->usage = (struct stream_usage){-1, -1, -1, -1, -1};
	return d;
}

void stream_decoder_free(struct stream_decoder *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->ntools; i++) {
		free(d->tools[i].id);
		free(d->tools[i].name);
		buf_release(&d->tools[i].args);
	}
	free(d->tools);
	buf_release(&d->signature);
	buf_release(&d->scratch);
	free(d);
}

void stream_decoder_feed(struct stream_decoder *d, const char *name, const char *data, size_t len)
{
	if (d->closed || d->failed)
		return;
	if (d->kind == PROVIDER_ANTHROPIC)
		provider_anthropic_feed(d, name, data, len);
	else
		provider_openai_feed(d, name, data, len);
}

bool stream_decoder_closed(const struct stream_decoder *d)
{
	/* A finish_reason closes an OpenAI stream even without [DONE]: only
	 * the usage chunk may follow it. */
	return d->closed || (d->kind == PROVIDER_OPENAI && d->finished && !d->failed);
}

bool stream_decoder_failed(const struct stream_decoder *d)
{
	return d->failed;
}

const struct stream_usage *stream_decoder_usage(const struct stream_decoder *d)
{
	return &d->usage;
}

bool stream_event_content(const struct stream_event *ev)
{
	switch (ev->kind) {
	case STREAM_TEXT:
	case STREAM_REASONING:
	case STREAM_REASONING_END:
	case STREAM_REDACTED:
	case STREAM_TOOL_START:
	case STREAM_TOOL_ARGS:
		return true;
	case STREAM_TOOL_END:
	case STREAM_USAGE:
	case STREAM_FINISH:
	case STREAM_ERROR:
	case STREAM_DONE:
		return false;
	}
	return false;
}

const char *stream_finish_name(enum stream_finish f)
{
	switch (f) {
	case FINISH_STOP: return "stop";
	case FINISH_TOOL_CALLS: return "tool_calls";
	case FINISH_LENGTH: return "length";
	case FINISH_FILTER: return "filter";
	case FINISH_OTHER: return "other";
	}
	return "other";
}

static void emit(struct stream_decoder *d, struct stream_event ev)
{
	d->emit(d->arg, &ev);
}

cJSON *stream_parse(struct stream_decoder *d, const char *data, size_t len)
{
	buf_reset(&d->scratch);
	if (textfix_json_escapes(data, len, &d->scratch)) {
		data = d->scratch.p;
		len = d->scratch.len;
	}
	cJSON *j = cJSON_ParseWithLength(data, len);
	if (!j || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		stream_error(d, "malformed", "the server sent an event that is not a JSON object");
		return NULL;
	}
	return j;
}

/* Run s[0..n) through fix and emit what is valid as kind. */
static void emit_fixed(struct stream_decoder *d, enum stream_kind kind, struct textfix *fix,
		       const char *s, size_t n, bool final)
{
	struct buf b = BUF_INIT;
	if (s)
		textfix_feed(fix, s, n, &b);
	if (final)
		textfix_finish(fix, &b);
	if (b.len)
		emit(d, (struct stream_event){.kind = kind, .text = b.p, .len = b.len});
	buf_release(&b);
}

void stream_text(struct stream_decoder *d, const char *s, size_t n)
{
	if (d->failed || d->finished || !n)
		return;
	emit_fixed(d, STREAM_TEXT, &d->text_fix, s, n, false);
}

void stream_reasoning(struct stream_decoder *d, const char *s, size_t n)
{
	if (d->failed || d->finished || !n)
		return;
	emit_fixed(d, STREAM_REASONING, &d->reasoning_fix, s, n, false);
}

/* Does the valid text s fit one log event once JSON-escaped? A field the
 * log cannot hold must never reach the capture: its batch would be
 * refused, and the session with it. */
static bool fits_event(const char *s)
{
	size_t n = strlen(s);
	return textfix_piece(s, n, TEXTFIX_PIECE_MAX) == n;
}

void stream_reasoning_end(struct stream_decoder *d, const char *sig)
{
	if (d->failed || d->finished)
		return;
	emit_fixed(d, STREAM_REASONING, &d->reasoning_fix, NULL, 0, true);
	char *s = sig ? textfix_string(sig, strlen(sig)) : NULL;
	if (s && !fits_event(s)) {
		/* Too long to keep (it comes in any number of deltas): the
		 * block stays, unsigned, and is never sent back. */
		free(s);
		s = NULL;
	}
	emit(d, (struct stream_event){.kind = STREAM_REASONING_END, .text = s, .len = s ? strlen(s) : 0});
	free(s);
}

void stream_redacted(struct stream_decoder *d, const char *data)
{
	if (d->failed || d->finished)
		return;
	char *s = textfix_string(data, strlen(data));
	/* Opaque data the log cannot hold in one event is dropped: the
	 * block can only go back whole. */
	if (fits_event(s))
		emit(d, (struct stream_event){.kind = STREAM_REDACTED, .text = s, .len = strlen(s)});
	free(s);
}

size_t stream_tool_new(struct stream_decoder *d, long index, const char *id, const char *name)
{
	d->tools = xreallocarray(d->tools, d->ntools + 1, sizeof *d->tools);
	struct stream_tool *t = &d->tools[d->ntools];
	*t = (struct stream_tool){.index = index, .args = BUF_INIT, .fix = TEXTFIX_INIT};
	t->id = id && *id ? textfix_string(id, strlen(id)) : NULL;
	if (t->id && textfix_piece(t->id, strlen(t->id), STREAM_ID_MAX) < strlen(t->id)) {
		free(t->id); /* longer than any id: one of ours goes back instead */
		t->id = NULL;
	}
	if (!t->id) {
		/* Some servers send no id; the log and the next request need
		 * one that no other call of the session has. */
		char u[ULID_LEN + 1];
		ulid_new(u);
		t->id = xasprintf("call_%s", u);
	}
	t->name = textfix_string(name ? name : "", name ? strlen(name) : 0);
	/* No tool has a name this long: the call answers "no such tool",
	 * and the log and the next request get its head only. */
	t->name[textfix_piece(t->name, strlen(t->name), STREAM_ID_MAX)] = '\0';
	if (!d->failed && !d->finished) {
		t->announced = true;
		emit(d, (struct stream_event){.kind = STREAM_TOOL_START, .id = t->id, .name = t->name});
	}
	return d->ntools++;
}

void stream_tool_args(struct stream_decoder *d, size_t slot, const char *s, size_t n)
{
	if (d->failed || d->finished || !n)
		return;
	struct stream_tool *t = &d->tools[slot];
	size_t from = t->args.len;
	textfix_feed(&t->fix, s, n, &t->args);
	if (t->args.len > from)
		emit(d, (struct stream_event){.kind = STREAM_TOOL_ARGS, .id = t->id, .name = t->name,
					      .text = t->args.p + from, .len = t->args.len - from});
}

/* Whole arguments are one JSON object ("" counts as {}: a call with no
 * parameters may send no argument text at all). */
static bool args_whole(const struct buf *a)
{
	size_t i = 0;
	while (i < a->len && (a->p[i] == ' ' || a->p[i] == '\n' || a->p[i] == '\t' || a->p[i] == '\r'))
		i++;
	if (i == a->len)
		return true;
	cJSON *j = cJSON_ParseWithLength(a->p, a->len);
	bool ok = cJSON_IsObject(j);
	cJSON_Delete(j);
	return ok;
}

void stream_finish(struct stream_decoder *d, enum stream_finish reason, const char *raw)
{
	if (d->failed || d->finished)
		return;
	emit_fixed(d, STREAM_TEXT, &d->text_fix, NULL, 0, true);
	emit_fixed(d, STREAM_REASONING, &d->reasoning_fix, NULL, 0, true);
	for (size_t i = 0; i < d->ntools; i++) {
		struct stream_tool *t = &d->tools[i];
		textfix_finish(&t->fix, &t->args);
		/* When the output limit cut the reply, the last call and any
		 * whose arguments are not whole were cut off: never executed.
		 * Otherwise arguments that are not a JSON object are the
		 * model's mistake: the call answers with an error it can read. */
		bool incomplete = reason == FINISH_LENGTH && (i + 1 == d->ntools || !args_whole(&t->args));
		if (!t->args.len)
			buf_adds(&t->args, incomplete ? "" : "{}");
		emit(d, (struct stream_event){.kind = STREAM_TOOL_END, .id = t->id, .name = t->name,
					      .text = t->args.p, .len = t->args.len, .incomplete = incomplete});
	}
	/* Tool calls mean the model waits for their results, whatever word
	 * the server used ("stop" from some compatible servers). */
	if (d->ntools && reason == FINISH_STOP)
		reason = FINISH_TOOL_CALLS;
	d->finished = true;
	/* The provider's word is shown and logged: valid text like the rest. */
	char *r = raw ? textfix_string(raw, strlen(raw)) : NULL;
	emit(d, (struct stream_event){.kind = STREAM_FINISH, .finish = reason, .text = r,
				      .len = r ? strlen(r) : 0});
	free(r);
}

void stream_decoder_cut(struct stream_decoder *d)
{
	if (d->finished)
		return;
	d->finished = true;
	for (size_t i = 0; i < d->ntools; i++) {
		struct stream_tool *t = &d->tools[i];
		if (!t->announced)
			continue;
		textfix_finish(&t->fix, &t->args);
		emit(d, (struct stream_event){.kind = STREAM_TOOL_END, .id = t->id, .name = t->name,
					      .text = t->args.p ? t->args.p : "", .len = t->args.len,
					      .incomplete = true});
	}
}

void stream_emit_usage(struct stream_decoder *d)
{
	if (!d->failed)
		emit(d, (struct stream_event){.kind = STREAM_USAGE, .usage = &d->usage});
}

void stream_error(struct stream_decoder *d, const char *type, const char *msg)
{
	if (d->failed)
		return;
	d->failed = true;
	char *m = textfix_string(msg ? msg : "", msg ? strlen(msg) : 0);
	char *t = type ? textfix_string(type, strlen(type)) : NULL;
	emit(d, (struct stream_event){.kind = STREAM_ERROR, .text = m, .len = strlen(m),
				      .error_type = t});
	free(t);
	free(m);
}

void stream_done(struct stream_decoder *d)
{
	if (d->failed || d->closed)
		return;
	d->closed = true;
	emit(d, (struct stream_event){.kind = STREAM_DONE});
}

enum stream_finish stream_finish_of(const struct stream_word *table, const char *r)
{
	for (; table->word; table++)
		if (strcmp(table->word, r) == 0)
			return table->finish;
	return FINISH_OTHER;
}

const char *stream_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int64_t stream_int(const cJSON *o, const char *key)
{
	int64_t v;
	return json_get_int(cJSON_GetObjectItemCaseSensitive(o, key), 0, JSON_MAX_SAFE_INT, &v) ? v : -1;
}
