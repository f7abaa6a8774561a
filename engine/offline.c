/* offline.c — the offline provider's reply and its tokens (offline.h). */
#include "engine/offline.h"
#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/textfix.h"

#include <stdlib.h>
#include <string.h>

#define ECHO_MAX 2000 /* bytes of the prompt quoted back */

struct offline {
	char *reply;
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
	emit(arg, &(struct stream_event){.kind = STREAM_FINISH, .finish = FINISH_STOP, .text = "stop", .len = 4});
	emit(arg, &(struct stream_event){.kind = STREAM_DONE});
	o->done = true;
	return false;
}
