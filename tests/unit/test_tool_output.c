/* test_tool_output.c — engine/tool_output: short text unchanged, long text
 * as head + note + tail within the cap, a cut never inside a character,
 * the tail starting on a line, NUL and invalid bytes as U+FFFD; and
 * tool_result_text, which fills a result's output and full from it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "engine/tool_int.h"
#include "engine/tool_output.h"

#define FFFD "\xef\xbf\xbd"
#define NOTE_MAX 40 /* "[... N bytes cut ...]\n" and a newline before it */

static void test_short_text_unchanged(void **state)
{
	bool cut = true;
	char *s = tool_output_cap("hello\nworld", 11, 100, &cut);
	assert_string_equal(s, "hello\nworld");
	assert_false(cut);
	free(s);
	s = tool_output_cap("", 0, 100, &cut);
	assert_string_equal(s, "");
	assert_false(cut);
	free(s);
	/* Exactly max bytes is not cut. */
	s = tool_output_cap("0123456789", 10, 10, &cut);
	assert_string_equal(s, "0123456789");
	assert_false(cut);
	free(s);
	s = tool_output_cap(NULL, 0, 10, NULL);
	assert_string_equal(s, "");
	free(s);
}

static void test_long_text_keeps_head_and_tail(void **state)
{
	/* Lines "line 00001\n" ... 11 bytes each. */
	size_t lines = 10000, n = lines * 11;
	char *in = malloc(n + 1);
	for (size_t i = 0; i < lines; i++)
		snprintf(in + i * 11, 12, "line %05zu\n", i + 1);
	bool cut = false;
	char *s = tool_output_cap(in, n, 1000, &cut);
	assert_true(cut);
	size_t len = strlen(s);
	assert_true(len <= 1000 + NOTE_MAX);
	assert_memory_equal(s, "line 00001\nline 00002\n", 22);
	assert_string_equal(s + len - 22, "line 09999\nline 10000\n");
	/* The note says how much is missing, and that adds up. */
	char *note = strstr(s, "[... ");
	assert_non_null(note);
	unsigned long cutn = strtoul(note + 5, NULL, 10);
	char *after = strstr(note, " bytes cut ...]\n");
	assert_non_null(after);
	size_t head = (size_t)(note - s), tail = len - (size_t)(after + 16 - s);
	if (head && s[head - 1] == '\n' && in[head - 1] != '\n')
		head--; /* the newline added before the note */
	assert_int_equal(head + cutn + tail, n);
	/* The tail starts on a line. */
	assert_memory_equal(after + 16, "line ", 5);
	free(s);
	free(in);
}

static void test_never_splits_a_character(void **state)
{
	/* "€" is 3 bytes; no line breaks, so cuts fall anywhere. */
	for (size_t max = 10; max < 40; max++) {
		char in[3 * 200 + 1];
		for (size_t i = 0; i < 200; i++)
			memcpy(in + 3 * i, "\xe2\x82\xac", 3);
		bool cut = false;
		char *s = tool_output_cap(in, 600, max, &cut);
		assert_true(cut);
		size_t len = strlen(s), bad;
		assert_true(len <= max + NOTE_MAX);
		assert_true(utf8_valid(s, len, &bad));
		assert_null(strstr(s, FFFD)); /* nothing was broken into replacement */
		free(s);
	}
}

static void test_nul_and_invalid_bytes_become_fffd(void **state)
{
	const char in[] = "a\0b\xff" "c\xe2\x82";
	char *s = tool_output_cap(in, sizeof in - 1, 100, NULL);
	assert_string_equal(s, "a" FFFD "b" FFFD "c" FFFD);
	free(s);
	/* Counted after the repair: 50 NULs are 150 bytes of U+FFFD. */
	char zeros[50] = {0};
	bool cut = false;
	s = tool_output_cap(zeros, sizeof zeros, 100, &cut);
	assert_true(cut);
	size_t bad;
	assert_true(utf8_valid(s, strlen(s), &bad));
	assert_true(strlen(s) <= 100 + NOTE_MAX);
	free(s);
}

static void test_result_text_keeps_full_only_when_cut(void **state)
{
	struct tool_limits l = tool_limits_resolve(&(struct tool_limits){.result_max = 100});
	assert_int_equal(l.result_max, 100);
	assert_int_equal(l.full_max, TOOL_FULL_MAX_DEFAULT);
	assert_int_equal(l.timeout_ms, TOOL_TIMEOUT_MS_DEFAULT);
	assert_int_equal(l.read_max, TOOL_READ_MAX_DEFAULT);
	assert_int_equal(l.grep_max, TOOL_GREP_MAX_DEFAULT);
	struct tool_result r = {0};
	tool_result_text(&r, "short", 5, &l);
	assert_string_equal(r.output, "short");
	assert_false(r.truncated);
	assert_null(r.full);
	char big[1000];
	memset(big, 'x', sizeof big);
	tool_result_text(&r, big, sizeof big, &l); /* replaces what r held */
	assert_true(r.truncated);
	assert_true(strlen(r.output) <= 100 + NOTE_MAX);
	assert_non_null(r.full);
	assert_int_equal(strlen(r.full), sizeof big);
	l.full_max = 500;
	tool_result_text(&r, big, sizeof big, &l);
	assert_true(strlen(r.full) <= 500 + NOTE_MAX);
	assert_non_null(strstr(r.full, "bytes cut"));
	tool_result_release(&r);
	assert_null(r.output);
	assert_null(r.full);
	tool_result_release(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_text_unchanged),
		cmocka_unit_test(test_long_text_keeps_head_and_tail),
		cmocka_unit_test(test_never_splits_a_character),
		cmocka_unit_test(test_nul_and_invalid_bytes_become_fffd),
		cmocka_unit_test(test_result_text_keeps_full_only_when_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
