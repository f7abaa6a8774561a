/* provider_anthropic.c — Anthropic Messages: the streaming request
 * (thinking blocks sent back with their signature, redacted thinking
 * verbatim) and its events. */
#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/provider.h"
#include "engine/stream_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- request ---- */

#define ANTHROPIC_VERSION "2023-06-01"
#define ANTHROPIC_DEFAULT_MAX_TOKENS 8192

/* Output limits per model family; the longest matching prefix wins. */
static const struct {
	const char *prefix;
	int64_t max_tokens;
} max_tokens_table[] = {
	{"claude-opus-4-5", 64000},
	{"claude-opus-4", 32000},
	{"claude-sonnet-4", 64000},
	{"claude-haiku-4", 64000},
	{"claude-3-7-sonnet", 64000},
	{"claude-3-5-sonnet", 8192},
	{"claude-3-5-haiku", 8192},
	{"claude-3-opus", 4096},
	{"claude-3-sonnet", 4096},
	{"claude-3-haiku", 4096},
};

int64_t provider_anthropic_max_tokens(const char *model)
{
	size_t best = 0;
	int64_t v = ANTHROPIC_DEFAULT_MAX_TOKENS;
	for (size_t i = 0; i < sizeof max_tokens_table / sizeof max_tokens_table[0]; i++) {
		size_t n = strlen(max_tokens_table[i].prefix);
		if (n > best && strncmp(model, max_tokens_table[i].prefix, n) == 0)
			best = n, v = max_tokens_table[i].max_tokens;
	}
	return v;
}

/* Tool ids must match [A-Za-z0-9_-]+; an id another provider made may
 * not, so it is mapped the same way in tool_use and tool_result. */
static void add_tool_id(cJSON *block, const char *key, const char *id)
{
	char *s = xstrdup(*id ? id : "call");
	for (char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '-'))
			*p = '_';
	cJSON_AddStringToObject(block, key, s);
	free(s);
}

static cJSON *block(const char *type)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", type);
	return b;
}

/* Append m's blocks to content; false when m gives none. */
static bool add_blocks(cJSON *content, const struct ctx_message *m)
{
	bool any = false;
	for (size_t k = 0; k < m->nparts; k++) {
		const struct ctx_part *p = &m->parts[k];
		cJSON *b = NULL;
		switch (p->kind) {
		case CTX_TEXT:
			b = block("text");
			cJSON_AddStringToObject(b, "text", p->text);
			break;
		case CTX_REASONING:
			/* Sent back unchanged, as the API requires for thinking
			 * before a tool call; a block without its signature
			 * (cut off, or another provider's) never is. */
			if (p->redacted) {
				b = block("redacted_thinking");
				cJSON_AddStringToObject(b, "data", p->text);
			} else if (p->signature) {
				b = block("thinking");
				cJSON_AddStringToObject(b, "thinking", p->text);
				cJSON_AddStringToObject(b, "signature", p->signature);
			}
			break;
		case CTX_TOOL_CALL: {
			b = block("tool_use");
			add_tool_id(b, "id", p->call_id);
			cJSON_AddStringToObject(b, "name", p->name);
			cJSON *in = cJSON_Parse(p->args);
			if (!cJSON_IsObject(in)) {
				cJSON_Delete(in);
				in = cJSON_CreateObject();
			}
			cJSON_AddItemToObject(b, "input", in);
			break;
		}
		case CTX_TOOL_RESULT: {
			b = block("tool_result");
			add_tool_id(b, "tool_use_id", p->call_id);
			cJSON_AddStringToObject(b, "content", p->text);
			if (p->is_error)
				cJSON_AddTrueToObject(b, "is_error");
			break;
		}
		}
		if (b) {
			cJSON_AddItemToArray(content, b);
			any = true;
		}
	}
	return any;
}

int provider_anthropic_build(const struct provider_params *p, const struct ctx_message *msgs,
			     size_t n, struct provider_request *out, struct cerr *err)
{
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
	cJSON_AddStringToObject(root, "model", p->model);
	cJSON_AddNumberToObject(root, "max_tokens",
				(double)(p->max_tokens > 0 ? p->max_tokens : provider_anthropic_max_tokens(p->model)));
	if (p->system && *p->system)
		cJSON_AddStringToObject(root, "system", p->system);
	/* Tool results are user content; messages of one role in a row (a
	 * result and the next prompt, a prompt whose answer was empty) are
	 * one message, as the API wants roles to alternate. */
	cJSON *cur = NULL, *content = NULL;
	const char *cur_role = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *role = msgs[i].role == CTX_ASSISTANT ? "assistant" : "user";
		cJSON *c = cJSON_CreateArray();
		if (!add_blocks(c, &msgs[i])) {
			cJSON_Delete(c); /* an empty assistant message is omitted */
			continue;
		}
		if (cur && strcmp(cur_role, role) == 0) {
			cJSON *b;
			while ((b = c->child))
				cJSON_AddItemToArray(content, cJSON_DetachItemViaPointer(c, b));
			cJSON_Delete(c);
			continue;
		}
		cur = cJSON_CreateObject();
		cJSON_AddStringToObject(cur, "role", role);
		cJSON_AddItemToObject(cur, "content", c);
		cJSON_AddItemToArray(arr, cur);
		content = c;
		cur_role = role;
	}
	cJSON_AddItemToObject(root, "messages", arr);
	if (cJSON_GetArraySize(p->tools) > 0) {
		cJSON *tools = cJSON_CreateArray();
		for (const cJSON *t = p->tools->child; t; t = t->next) {
			const char *name, *desc;
			const cJSON *params = provider_tool_schema(t, &name, &desc);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", name);
			if (desc)
				cJSON_AddStringToObject(o, "description", desc);
			cJSON_AddItemToObject(o, "input_schema", params ? cJSON_Duplicate(params, true)
									: cJSON_Parse("{\"type\":\"object\"}"));
			cJSON_AddItemToArray(tools, o);
		}
		cJSON_AddItemToObject(root, "tools", tools);
	}
	cJSON_AddTrueToObject(root, "stream");
	provider_request_begin(out, p->base_url, "/v1/messages");
	provider_add_header(out, "anthropic-version: " ANTHROPIC_VERSION);
	if (p->api_key && *p->api_key)
		provider_add_header(out, "x-api-key: %s", p->api_key);
	provider_set_body(out, root);
	return 0;
}

/* ---- stream ---- */

static const struct stream_word stop_reasons[] = {
	{"end_turn", FINISH_STOP},
	{"stop_sequence", FINISH_STOP},
	{"tool_use", FINISH_TOOL_CALLS},
	{"max_tokens", FINISH_LENGTH},
	{"refusal", FINISH_FILTER},
	{NULL, FINISH_OTHER}, /* pause_turn and later words */
};

static void read_usage(struct stream_decoder *d, const cJSON *u)
{
	if (!cJSON_IsObject(u))
		return;
	/* message_delta repeats the totals so far: later values win. */
	struct stream_usage *s = &d->usage;
	int64_t v;
	if ((v = stream_int(u, "input_tokens")) >= 0)
		s->input = v;
	if ((v = stream_int(u, "output_tokens")) >= 0)
		s->output = v;
	if ((v = stream_int(u, "cache_read_input_tokens")) >= 0)
		s->cache_read = v;
	if ((v = stream_int(u, "cache_creation_input_tokens")) >= 0)
		s->cache_write = v;
	stream_emit_usage(d);
}

static void block_start(struct stream_decoder *d, const cJSON *j)
{
	const cJSON *cb = cJSON_GetObjectItemCaseSensitive(j, "content_block");
	const char *type = stream_str(cb, "type");
	const char *s;
	d->block = BLOCK_OTHER;
	if (!type)
		return;
	if (strcmp(type, "text") == 0) {
		d->block = BLOCK_TEXT;
		if ((s = stream_str(cb, "text")))
			stream_text(d, s, strlen(s));
	} else if (strcmp(type, "thinking") == 0) {
		d->block = BLOCK_THINKING;
		buf_reset(&d->signature);
		if ((s = stream_str(cb, "thinking")))
			stream_reasoning(d, s, strlen(s));
		if ((s = stream_str(cb, "signature")))
			buf_adds(&d->signature, s);
	} else if (strcmp(type, "redacted_thinking") == 0) {
		d->block = BLOCK_REDACTED;
		stream_redacted(d, (s = stream_str(cb, "data")) ? s : "");
	} else if (strcmp(type, "tool_use") == 0) {
		d->block = BLOCK_TOOL;
		d->block_tool = stream_tool_new(d, (long)stream_int(j, "index"), stream_str(cb, "id"),
						stream_str(cb, "name"));
	}
}

static void block_delta(struct stream_decoder *d, const cJSON *j)
{
	const cJSON *delta = cJSON_GetObjectItemCaseSensitive(j, "delta");
	const char *type = stream_str(delta, "type"), *s;
	if (!type)
		return;
	if (strcmp(type, "text_delta") == 0 && (s = stream_str(delta, "text")))
		stream_text(d, s, strlen(s));
	else if (strcmp(type, "thinking_delta") == 0 && (s = stream_str(delta, "thinking")))
		stream_reasoning(d, s, strlen(s));
	else if (strcmp(type, "signature_delta") == 0 && (s = stream_str(delta, "signature")))
		buf_adds(&d->signature, s);
	else if (strcmp(type, "input_json_delta") == 0 && d->block == BLOCK_TOOL &&
		 (s = stream_str(delta, "partial_json")))
		stream_tool_args(d, d->block_tool, s, strlen(s));
}

void provider_anthropic_feed(struct stream_decoder *d, const char *name, const char *data, size_t len)
{
	cJSON *j = stream_parse(d, data, len);
	if (!j)
		return;
	const char *type = stream_str(j, "type");
	if (!type)
		type = name ? name : "";
	if (strcmp(type, "message_start") == 0) {
		read_usage(d, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "message"), "usage"));
	} else if (strcmp(type, "content_block_start") == 0) {
		block_start(d, j);
	} else if (strcmp(type, "content_block_delta") == 0) {
		block_delta(d, j);
	} else if (strcmp(type, "content_block_stop") == 0) {
		if (d->block == BLOCK_THINKING)
			stream_reasoning_end(d, d->signature.len ? d->signature.p : NULL);
		d->block = BLOCK_OTHER;
	} else if (strcmp(type, "message_delta") == 0) {
		read_usage(d, cJSON_GetObjectItemCaseSensitive(j, "usage"));
		const char *r = stream_str(cJSON_GetObjectItemCaseSensitive(j, "delta"), "stop_reason");
		if (r)
			stream_finish(d, stream_finish_of(stop_reasons, r), r);
	} else if (strcmp(type, "message_stop") == 0) {
		stream_finish(d, FINISH_STOP, NULL);
		stream_done(d);
	} else if (strcmp(type, "error") == 0) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		const char *msg = stream_str(e, "message");
		stream_error(d, stream_str(e, "type"), msg ? msg : "the server reported an error in the stream");
	}
	/* ping and event types added later are ignored, as the API asks. */
	cJSON_Delete(j);
}
