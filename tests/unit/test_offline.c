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
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offline_reply_is_deterministic_markdown_quoting_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
