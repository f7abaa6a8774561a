/* offline.c — the offline provider's reply and its tokens (offline.h). */
#include "engine/offline.h"
#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/textfix.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

#define ECHO_MAX 2000 /* bytes of the prompt quoted back */

struct offline {
	char *reply;
	char *tool, *tool_args; /* a proposed call (NULL: none) */
	bool tool_sent;
	size_t len, at;
	size_t tokens, prompt_tokens;
	struct stream_usage usage;
	bool done;
};

/* The length of the token at s: a run of non-blanks and the blanks after
 * it; a newline ends a token so lines arrive whole. */
static size_t token_len(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && s[i] != ' ' && s[i] != '\n')
		i++;
	while (i < n && s[i] == ' ')
		i++;
	if (i < n && s[i] == '\n')
		i++;
	return i ? i : 1;
}

static size_t count_tokens(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; c++)
		i += token_len(s + i, n - i);
	return c;
}

/* The prompt as a markdown quote, cut at ECHO_MAX on a character. */
static void add_quote(struct buf *b, const char *prompt)
{
	char *p = textfix_string(prompt, strlen(prompt));
	size_t n = strlen(p), cut = n;
	if (cut > ECHO_MAX) {
		cut = ECHO_MAX;
		while (cut && ((unsigned char)p[cut] & 0xc0) == 0x80)
			cut--;
	}
	buf_adds(b, "> ");
	for (size_t i = 0; i < cut; i++) {
		buf_addc(b, p[i]);
		if (p[i] == '\n')
			buf_adds(b, "> ");
	}
	if (cut < n)
		buf_adds(b, "…");
	buf_addc(b, '\n');
	free(p);
}

/* s without leading and trailing blanks, as a new string. */
static char *trimmed(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	return xstrndup(s, n);
}

/* "run CMD", "read PATH", "list [PATH]": the call it proposes. */
static bool propose(struct offline *o, const char *prompt)
{
	char *p = trimmed(prompt);
	cJSON *args = cJSON_CreateObject();
	const char *tool = NULL;
	if (strncmp(p, "run ", 4) == 0 && p[4]) {
		tool = "shell";
		cJSON_AddStringToObject(args, "command", p + 4);
	} else if (strncmp(p, "read ", 5) == 0 && p[5]) {
		tool = "read_file";
		cJSON_AddStringToObject(args, "path", p + 5);
	} else if (strcmp(p, "list") == 0 || (strncmp(p, "list ", 5) == 0 && p[5])) {
		tool = "list_dir";
		if (p[4])
			cJSON_AddStringToObject(args, "path", p + 5);
	}
	if (tool) {
		o->tool = xstrdup(tool);
		o->tool_args = cJSON_PrintUnformatted(args);
	}
	cJSON_Delete(args);
	free(p);
	return tool != NULL;
}

struct offline *offline_new_ask(const struct offline_ask *a)
{
	if (a->tool_result) {
		/* After a tool: "done: " and the result's first line. */
		struct offline *o = xcalloc(1, sizeof *o);
		const char *nl = strchr(a->tool_result, '\n');
		size_t n = nl ? (size_t)(nl - a->tool_result) : strlen(a->tool_result);
		char *line = textfix_string(a->tool_result, n);
		o->reply = xasprintf("done: %s", line);
		o->len = strlen(o->reply);
		free(line);
		return o;
	}
	if (a->tools && a->prompt) {
		struct offline *o = xcalloc(1, sizeof *o);
		if (propose(o, a->prompt)) {
			o->reply = xstrdup("");
			o->prompt_tokens = count_tokens(a->prompt, strlen(a->prompt));
			return o;
		}
		free(o);
	}
	return offline_new(a->prompt);
}

struct offline *offline_new(const char *prompt)
{
	struct offline *o = xcalloc(1, sizeof *o);
	struct buf b = BUF_INIT;
	buf_adds(&b, "# Offline reply\n\n"
		     "This answer comes from cairn's built-in **offline** provider: no model and no "
		     "network are involved. You wrote:\n\n");
	if (prompt && *prompt)
		add_quote(&b, prompt);
	else
		buf_adds(&b, "> (nothing)\n");
	buf_adds(&b, "\n## What the screen can show\n\n"
		     "- headings, **bold**, `code` and lists like this one\n"
		     "- tables and fenced code blocks, below\n"
		     "- text streamed token by token, one every `offline.pace_ms`\n\n"
		     "| provider | to use it |\n"
		     "|---|---|\n"
		     "| openai | set `OPENAI_API_KEY`, or `OPENAI_BASE_URL` for a local server |\n"
		     "| anthropic | set `ANTHROPIC_API_KEY` |\n"
		     "| offline | nothing to set: this reply |\n\n"
		     "```sh\n"
		     "export ANTHROPIC_API_KEY=...   # or OPENAI_API_KEY\n"
		     "cairn config                   # the provider cairn will use\n"
		     "```\n");
	o->reply = buf_detach(&b, &o->len);
	o->prompt_tokens = prompt ? count_tokens(prompt, strlen(prompt)) : 0;
	return o;
}

void offline_free(struct offline *o)
{
	if (!o)
		return;
	free(o->reply);
	free(o->tool);
	free(o->tool_args);
	free(o);
}

const char *offline_reply(const struct offline *o)
{
	return o->reply;
}

bool offline_step(struct offline *o, stream_emit_fn emit, void *arg)
{
	if (o->done)
		return false;
	if (o->tool && !o->tool_sent) {
		o->tool_sent = true;
		emit(arg, &(struct stream_event){.kind = STREAM_TOOL_START, .id = "offline-1",
						 .name = o->tool});
		emit(arg, &(struct stream_event){.kind = STREAM_TOOL_END, .id = "offline-1",
						 .name = o->tool, .text = o->tool_args,
						 .len = strlen(o->tool_args)});
		o->tokens++;
		return true;
	}
	if (o->at < o->len) {
		size_t n = token_len(o->reply + o->at, o->len - o->at);
		/* emit's text is NUL-terminated: copy the token out. */
		char *tok = xstrndup(o->reply + o->at, n);
		emit(arg, &(struct stream_event){.kind = STREAM_TEXT, .text = tok, .len = n});
		free(tok);
		o->at += n;
		o->tokens++;
		return true;
	}
	o->usage = (struct stream_usage){(int64_t)o->prompt_tokens, (int64_t)o->tokens, -1, -1, -1};
	emit(arg, &(struct stream_event){.kind = STREAM_USAGE, .usage = &o->usage});
	if (o->tool)
		emit(arg, &(struct stream_event){.kind = STREAM_FINISH, .finish = FINISH_TOOL_CALLS,
						 .text = "tool_calls", .len = 10});
	else
		emit(arg, &(struct stream_event){.kind = STREAM_FINISH, .finish = FINISH_STOP,
						 .text = "stop", .len = 4});
	emit(arg, &(struct stream_event){.kind = STREAM_DONE});
	o->done = true;
	return false;
}
