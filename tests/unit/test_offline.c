/* test_offline.c — engine/offline: the reply is the same for the same
 * prompt, quotes it, shows a heading, a list, a table and a code block,
 * and its tokens (whole characters, whole lines at newlines) join back to
 * it, followed by usage, finish and done. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "engine/offline.h"

struct rec {
	struct buf text;
	size_t tokens, usage, finish, done;
	int64_t out_tokens;
};

static void rec_cb(void *arg, const struct stream_event *ev)
{
	struct rec *r = arg;
	switch (ev->kind) {
	case STREAM_TEXT:
		assert_int_equal(r->finish, 0);
		assert_true(utf8_valid(ev->text, ev->len, NULL));
		buf_add(&r->text, ev->text, ev->len);
		r->tokens++;
		break;
	case STREAM_USAGE:
		r->usage++;
		r->out_tokens = ev->usage->output;
		break;
	case STREAM_FINISH:
		assert_int_equal(ev->finish, FINISH_STOP);
		r->finish++;
		break;
	case STREAM_DONE: r->done++; break;
	default: fail_msg("unexpected event %d", ev->kind);
	}
}

static char *run(const char *prompt, size_t *tokens)
{
	struct offline *o = offline_new(prompt);
	struct rec r = {.text = BUF_INIT};
	size_t steps = 0;
	while (offline_step(o, rec_cb, &r))
		steps++;
	assert_false(offline_step(o, rec_cb, &r)); /* nothing after done */
	assert_int_equal(r.usage, 1);
	assert_int_equal(r.finish, 1);
	assert_int_equal(r.done, 1);
	assert_int_equal(steps, r.tokens);
	assert_int_equal(r.out_tokens, (int64_t)r.tokens);
	assert_string_equal(r.text.p, offline_reply(o));
	offline_free(o);
	*tokens = r.tokens;
	return buf_detach(&r.text, NULL);
}

static void test_offline_reply_is_deterministic_markdown_quoting_input(void **state)
{
	size_t n1, n2;
	char *a = run("list the files\nin \xc3\xa9t\xc3\xa9", &n1);
	char *b = run("list the files\nin \xc3\xa9t\xc3\xa9", &n2);
	assert_string_equal(a, b);
	assert_int_equal(n1, n2);
	assert_true(n1 > 50);
	assert_non_null(strstr(a, "# Offline reply\n"));
	assert_non_null(strstr(a, "**offline**"));
	assert_non_null(strstr(a, "> list the files\n> in \xc3\xa9t\xc3\xa9\n"));
	assert_non_null(strstr(a, "\n- "));
	assert_non_null(strstr(a, "|---|---|\n"));
	assert_non_null(strstr(a, "```sh\n"));
	free(a);
	free(b);
	/* A long prompt is quoted up to 2000 bytes, cut on a character. */
	char big[3001];
	for (int i = 0; i < 1500; i++)
		memcpy(big + 2 * i, "\xc3\xa9", 2);
	big[3000] = '\0';
	a = run(big, &n1);
	assert_non_null(strstr(a, "\xc3\xa9\xe2\x80\xa6\n"));
	assert_null(strstr(a, big));
	free(a);
	a = run(NULL, &n1);
	assert_non_null(strstr(a, "> (nothing)"));
	free(a);
}

struct calls {
	char name[32];
	char *args;
	int starts, ends, finish_tools, done;
	struct buf text;
};

static void call_cb(void *arg, const struct stream_event *ev)
{
	struct calls *k = arg;
	switch (ev->kind) {
	case STREAM_TOOL_START: k->starts++; break;
	case STREAM_TOOL_END:
		k->ends++;
		snprintf(k->name, sizeof k->name, "%s", ev->name);
		k->args = xstrndup(ev->text, ev->len);
		break;
	case STREAM_TEXT: buf_add(&k->text, ev->text, ev->len); break;
	case STREAM_FINISH: k->finish_tools += ev->finish == FINISH_TOOL_CALLS; break;
	case STREAM_DONE: k->done++; break;
	default: break;
	}
}

static void ask(const struct offline_ask *a, struct calls *k)
{
	struct offline *o = offline_new_ask(a);
	*k = (struct calls){.text = BUF_INIT};
	while (offline_step(o, call_cb, k))
		;
	offline_free(o);
}

/* With tools offered, "run CMD", "read PATH" and "list [PATH]" become one
 * call each; a result is answered "done: <its first line>"; without tools,
 * or for any other prompt, the markdown reply. */
static void test_offline_proposes_tool_calls_and_answers_their_result(void **state)
{
	(void)state;
	struct calls k;
	ask(&(struct offline_ask){.prompt = "  run ls -la\n", .tools = true}, &k);
	assert_int_equal(k.starts, 1);
	assert_int_equal(k.ends, 1);
	assert_int_equal(k.finish_tools, 1);
	assert_int_equal(k.done, 1);
	assert_string_equal(k.name, "shell");
	assert_string_equal(k.args, "{\"command\":\"ls -la\"}");
	assert_int_equal(k.text.len, 0);
	free(k.args);
	buf_release(&k.text);
	ask(&(struct offline_ask){.prompt = "read src/a.c", .tools = true}, &k);
	assert_string_equal(k.name, "read_file");
	assert_string_equal(k.args, "{\"path\":\"src/a.c\"}");
	free(k.args);
	buf_release(&k.text);
	ask(&(struct offline_ask){.prompt = "list", .tools = true}, &k);
	assert_string_equal(k.name, "list_dir");
	assert_string_equal(k.args, "{}");
	free(k.args);
	buf_release(&k.text);
	ask(&(struct offline_ask){.prompt = "run ls", .tools = false}, &k);
	assert_int_equal(k.ends, 0);
	assert_non_null(strstr(k.text.p, "# Offline reply"));
	buf_release(&k.text);
	ask(&(struct offline_ask){.prompt = "runner", .tools = true}, &k);
	assert_int_equal(k.ends, 0);
	buf_release(&k.text);
	ask(&(struct offline_ask){.prompt = "run ls", .tool_result = "a.c\nb.c\n", .tools = true}, &k);
	assert_int_equal(k.ends, 0);
	assert_string_equal(k.text.p, "done: a.c");
	buf_release(&k.text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offline_reply_is_deterministic_markdown_quoting_input),
		cmocka_unit_test(test_offline_proposes_tool_calls_and_answers_their_result),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
