/* test_title.c — title_of: the title derived from a
 * session's first prompt. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/title.h"

static void title_is(const char *in, size_t max, const char *want)
{
	char *t = title_of(in, max);
	assert_string_equal(t, want);
	free(t);
}

/* 100 copies of ch cut to TITLE_PROMPT_MAX characters: 79 and "…". */
static void long_title(const char *ch)
{
	char big[512] = "", *t;
	size_t w = strlen(ch);
	for (int i = 0; i < 100; i++)
		strcat(big, ch);
	t = title_of(big, TITLE_PROMPT_MAX);
	assert_int_equal(strlen(t), 79 * w + 3);
	assert_memory_equal(t, big, 79 * w);
	assert_string_equal(t + 79 * w, "\xE2\x80\xA6");
	free(t);
	big[80 * w] = '\0';
	title_is(big, TITLE_PROMPT_MAX, big); /* exactly the maximum: not cut */
}

static void test_title_collapses_space_drops_controls_cuts_with_ellipsis(void **state)
{
	(void)state;
	title_is("  hello \t\n  world  ", 80, "hello world");
	title_is("a\x01" "b\x7f c\x1b[0m", 80, "ab c[0m");
	title_is("\xE3\x80\x80" "x\xE3\x80\x80\xC2\xA0y", 80, "x y"); /* U+3000, U+00A0 */
	title_is("", 80, "");
	title_is(" \t\n", 80, "");
	title_is("ab\xE2\x80\xAE" "cd", 80, "abcd"); /* a bidi override is dropped */
	title_is("a\xFF" "b", 80, "ab");               /* so are stray bytes */
	title_is("abcdef", 6, "abcdef");
	title_is("abcdefg", 6, "abcde\xE2\x80\xA6");
	title_is("abcd efgh", 6, "abcd\xE2\x80\xA6"); /* no space before the ellipsis */
	long_title("x");
	long_title("\xE6\xBC\xA2");     /* 漢: 3 bytes */
	long_title("\xF0\x9F\x98\x80"); /* 😀: 4 bytes */
	title_is("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 ok", 80,
		 "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 ok");
	title_is("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xA7\xE3\x81\x99", 4,
		 "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE2\x80\xA6"); /* 日本語… */
}

/* Joiners that build one character stay, and a cut never splits a grapheme
 * cluster: an emoji family or a letter with its accent is one character. */
static void test_title_cut_never_splits_a_grapheme_cluster(void **state)
{
	(void)state;
	/* 👨‍👩‍👧 family: three emoji joined by U+200D */
	const char *family = "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7";
	char want[64];
	snprintf(want, sizeof want, "%s family", family);
	title_is(want, 80, want);
	/* three clusters, max 2: the first cluster and an ellipsis */
	char in[128];
	snprintf(in, sizeof in, "%s%s%s", family, family, family);
	snprintf(want, sizeof want, "%s\xE2\x80\xA6", family);
	title_is(in, 2, want);
	/* e + combining acute (2 code points, 1 character) x3, max 2 */
	title_is("e\xCC\x81" "e\xCC\x81" "e\xCC\x81", 2, "e\xCC\x81\xE2\x80\xA6");
	title_is("abc", 0, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_title_collapses_space_drops_controls_cuts_with_ellipsis),
		cmocka_unit_test(test_title_cut_never_splits_a_grapheme_cluster),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
