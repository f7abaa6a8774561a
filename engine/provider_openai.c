/* provider_openai.c — OpenAI-compatible Chat Completions: the streaming
 * request and its chunks, as OpenAI, Ollama, llama.cpp server, vLLM and
 * OpenRouter send them. */
#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/provider.h"
#include "engine/stream_int.h"
#include "engine/textfix.h"

#include <stdlib.h>
#include <string.h>

/* ---- request ---- */

static cJSON *assistant_json(const struct ctx_message *m)
{
	struct buf text = BUF_INIT;
	cJSON *calls = NULL;
	for (size_t k = 0; k < m->nparts; k++) {
		const struct ctx_part *p = &m->parts[k];
		if (p->kind == CTX_TEXT) {
			/* Separate text blocks (around a tool call) read as paragraphs. */
			if (text.len)
				buf_adds(&text, "\n\n");
			buf_adds(&text, p->text);
		} else if (p->kind == CTX_TOOL_CALL) {
			if (!calls)
				calls = cJSON_CreateArray();
			cJSON *c = cJSON_CreateObject(), *f = cJSON_CreateObject();
			cJSON_AddStringToObject(c, "id", p->call_id);
			cJSON_AddStringToObject(c, "type", "function");
			cJSON_AddStringToObject(f, "name", p->name);
			cJSON_AddStringToObject(f, "arguments", p->args);
			cJSON_AddItemToObject(c, "function", f);
			cJSON_AddItemToArray(calls, c);
		}
		/* Reasoning is never sent back: Chat Completions has no place
		 * for it, and some compatible servers refuse it. */
	}
	if (!text.len && !calls) {
		buf_release(&text);
		return NULL; /* only reasoning, or nothing: omitted */
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "role", "assistant");
	if (text.len)
		cJSON_AddStringToObject(o, "content", text.p);
	else
		cJSON_AddNullToObject(o, "content");
	if (calls)
		cJSON_AddItemToObject(o, "tool_calls", calls);
	buf_release(&text);
	return o;
}

static cJSON *message_json(const struct ctx_message *m)
{
	if (m->role == CTX_ASSISTANT)
		return assistant_json(m);
	cJSON *o = cJSON_CreateObject();
	if (m->role == CTX_TOOL) {
		cJSON_AddStringToObject(o, "role", "tool");
		cJSON_AddStringToObject(o, "tool_call_id", m->parts[0].call_id);
		cJSON_AddStringToObject(o, "content", m->parts[0].text);
		return o;
	}
	struct buf text = BUF_INIT;
	for (size_t k = 0; k < m->nparts; k++) {
		if (text.len)
			buf_adds(&text, "\n\n");
		buf_adds(&text, m->parts[k].text);
	}
	cJSON_AddStringToObject(o, "role", "user");
	cJSON_AddStringToObject(o, "content", text.len ? text.p : "");
	buf_release(&text);
	return o;
}

int provider_openai_build(const struct provider_params *p, const struct ctx_message *msgs,
			  size_t n, struct provider_request *out, struct cerr *err)
{
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
	cJSON_AddStringToObject(root, "model", p->model);
	if (p->system && *p->system) {
		cJSON *s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "role", "system");
		cJSON_AddStringToObject(s, "content", p->system);
		cJSON_AddItemToArray(arr, s);
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *m = message_json(&msgs[i]);
		if (m)
			cJSON_AddItemToArray(arr, m);
	}
	cJSON_AddItemToObject(root, "messages", arr);
	cJSON_AddTrueToObject(root, "stream");
	cJSON *so = cJSON_CreateObject();
	cJSON_AddTrueToObject(so, "include_usage");
	cJSON_AddItemToObject(root, "stream_options", so);
	if (cJSON_GetArraySize(p->tools) > 0) {
		/* An empty list is omitted: some servers refuse "tools": []. */
		cJSON *tools = cJSON_CreateArray();
		for (const cJSON *t = p->tools->child; t; t = t->next) {
			const char *name, *desc;
			const cJSON *params = provider_tool_schema(t, &name, &desc);
			cJSON *o = cJSON_CreateObject(), *f = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "type", "function");
			cJSON_AddStringToObject(f, "name", name);
			if (desc)
				cJSON_AddStringToObject(f, "description", desc);
			if (params)
				cJSON_AddItemToObject(f, "parameters", cJSON_Duplicate(params, true));
			else
				cJSON_AddItemToObject(f, "parameters", cJSON_Parse("{\"type\":\"object\"}"));
			cJSON_AddItemToObject(o, "function", f);
			cJSON_AddItemToArray(tools, o);
		}
		cJSON_AddItemToObject(root, "tools", tools);
	}
	provider_request_begin(out, p->base_url, "/chat/completions");
	if (p->api_key && *p->api_key)
		provider_add_header(out, "Authorization: Bearer %s", p->api_key);
	provider_set_body(out, root);
	return 0;
}

/* ---- stream ---- */

static const struct stream_word finish_reasons[] = {
	{"stop", FINISH_STOP},
	{"tool_calls", FINISH_TOOL_CALLS},
	{"function_call", FINISH_TOOL_CALLS},
	{"length", FINISH_LENGTH},
	{"content_filter", FINISH_FILTER},
	{NULL, FINISH_OTHER},
};

/* The slot a tool-call delta continues, or a new one. With an index the
 * index decides; without one (some servers send whole calls that way) a
 * new id, or a name when the last call already has one, starts a call. */
static size_t tool_slot(struct stream_decoder *d, long index, const char *id, const char *name)
{
	if (index >= 0) {
		for (size_t i = d->ntools; i-- > 0;)
			if (d->tools[i].index == index)
				return i;
		return stream_tool_new(d, index, id, name);
	}
	if (id && *id) {
		for (size_t i = d->ntools; i-- > 0;)
			if (strcmp(d->tools[i].id, id) == 0)
				return i;
		return stream_tool_new(d, -1, id, name);
	}
	if (!d->ntools || (name && *name && *d->tools[d->ntools - 1].name))
		return stream_tool_new(d, -1, NULL, name);
	return d->ntools - 1;
}

static void tool_deltas(struct stream_decoder *d, const cJSON *calls)
{
	const cJSON *tc;
	cJSON_ArrayForEach(tc, calls) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(tc, "function");
		const char *id = stream_str(tc, "id"), *name = stream_str(f, "name");
		const char *args = stream_str(f, "arguments");
		size_t slot = tool_slot(d, (long)stream_int(tc, "index"), id, name);
		struct stream_tool *t = &d->tools[slot];
		if (!*t->name && name && *name) { /* a name after the call's first delta */
			free(t->name);
			t->name = textfix_string(name, strlen(name));
		}
		if (args)
			stream_tool_args(d, slot, args, strlen(args));
	}
}

static void read_usage(struct stream_decoder *d, const cJSON *u)
{
	struct stream_usage *s = &d->usage;
	s->input = stream_int(u, "prompt_tokens");
	s->output = stream_int(u, "completion_tokens");
	int64_t v = stream_int(cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens_details"), "cached_tokens");
	if (v >= 0)
		s->cache_read = v;
	v = stream_int(cJSON_GetObjectItemCaseSensitive(u, "completion_tokens_details"), "reasoning_tokens");
	if (v >= 0)
		s->reasoning = v;
	stream_emit_usage(d);
}

static bool is_done(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		n--;
	return n == 6 && memcmp(s, "[DONE]", 6) == 0;
}

void provider_openai_feed(struct stream_decoder *d, const char *name, const char *data, size_t len)
{
	if (is_done(data, len)) {
		/* A server that never sent a finish_reason: [DONE] closes. */
		stream_finish(d, FINISH_STOP, NULL);
		stream_done(d);
		return;
	}
	cJSON *j = stream_parse(d, data, len);
	if (!j)
		return;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	const char *otype = stream_str(j, "object");
	if (e || (otype && strcmp(otype, "error") == 0) || (name && strcmp(name, "error") == 0)) {
		const cJSON *src = cJSON_IsObject(e) ? e : j;
		const char *msg = cJSON_IsString(e) ? e->valuestring : stream_str(src, "message");
		const char *code = stream_str(src, "code");
		stream_error(d, code ? code : stream_str(src, "type"),
			     msg ? msg : "the server reported an error in the stream");
		cJSON_Delete(j);
		return;
	}
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(j, "choices"), *ch;
	cJSON_ArrayForEach(ch, choices) {
		int64_t idx = stream_int(ch, "index");
		if (idx > 0)
			continue; /* n = 1: only the first choice is ours */
		const cJSON *delta = cJSON_GetObjectItemCaseSensitive(ch, "delta");
		const char *r = stream_str(delta, "reasoning_content");
		if (!r)
			r = stream_str(delta, "reasoning");
		if (r)
			stream_reasoning(d, r, strlen(r));
		const char *c = stream_str(delta, "content");
		if (c)
			stream_text(d, c, strlen(c));
		const cJSON *calls = cJSON_GetObjectItemCaseSensitive(delta, "tool_calls");
		if (cJSON_IsArray(calls))
			tool_deltas(d, calls);
		const char *fr = stream_str(ch, "finish_reason");
		if (fr)
			stream_finish(d, stream_finish_of(finish_reasons, fr), fr);
		break;
	}
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "usage");
	if (cJSON_IsObject(u)) /* "usage": null on every chunk from some servers */
		read_usage(d, u);
	cJSON_Delete(j);
}
