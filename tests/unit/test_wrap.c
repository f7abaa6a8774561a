/* test_wrap.c — tui/wrap: word wrap at spaces, long words broken between
 * graphemes, display widths (CJK and emoji two cells, combining marks
 * none), no cell ever split, code lines cut with a continuation mark and
 * padded, prefixes, and hostile bytes shown inert. A random test checks
 * the invariants on mixed text at many widths. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "tests/unit/support_tline.h"
#include "tui/textlines.h"
#include "tui/wrap.h"

/* Wraps s at width in mode (no prefix) into a new textlines. */
static struct textlines *wrap_str(const char *s, size_t n, int width, enum wrap_mode mode)
{
	struct textlines *tl = textlines_new();
	struct wrap *w = wrap_new();
	struct wrap_opts o = {width, mode, NULL, NULL, 0, 0, TS_CODEBLOCK};
	wrap_begin(w, tl, &o);
	wrap_add(w, s, n, TS_NORMAL);
	wrap_end(w);
	wrap_free(w);
	return tl;
}

static char *line_text(const struct textlines *tl, size_t i)
{
	struct buf b = BUF_INIT;
	textlines_plain(tl, i, &b);
	buf_addc(&b, '\0');
	return buf_detach(&b, NULL);
}

/* tl holds exactly the lines want[0..n). */
static void expect_lines(const struct textlines *tl, const char *const *want, size_t n)
{
	for (size_t i = 0; i < textlines_count(tl) && i < n; i++) {
		char *got = line_text(tl, i);
		if (strcmp(got, want[i]) != 0)
			fail_msg("line %zu: got '%s', want '%s'", i, got, want[i]);
		free(got);
	}
	if (textlines_count(tl) != n)
		fail_msg("%zu lines, want %zu", textlines_count(tl), n);
}

#define EXPECT_WRAP(s, width, mode, ...)                                                       \
	do {                                                                                   \
		static const char *const want_[] = {__VA_ARGS__};                              \
		struct textlines *tl_ = wrap_str(s, strlen(s), width, mode);                    \
		expect_lines(tl_, want_, sizeof want_ / sizeof want_[0]);                       \
		textlines_free(tl_);                                                            \
	} while (0)

static void check_lines(const struct textlines *tl, int width)
{
	for (size_t i = 0; i < textlines_count(tl); i++) {
		struct tline l = textlines_get(tl, i);
		support_check_tline(&l, width, i);
	}
}

static void test_words_wrap_at_spaces(void **state)
{
	(void)state;
	EXPECT_WRAP("the quick brown fox jumps", 10, WRAP_WORDS, "the quick", "brown fox", "jumps");
	/* spaces at a break are dropped, spaces inside a line and leading ones kept */
	EXPECT_WRAP("  indented  two  spaces", 12, WRAP_WORDS, "  indented", "two  spaces");
	EXPECT_WRAP("exactly ten", 11, WRAP_WORDS, "exactly ten");
	EXPECT_WRAP("first\nsecond line\n\nlast", 80, WRAP_WORDS, "first", "second line", "", "last");
	EXPECT_WRAP("", 10, WRAP_WORDS, "");
}

static void test_long_word_broken_by_graphemes(void **state)
{
	(void)state;
	EXPECT_WRAP("abcdefghijkl", 5, WRAP_WORDS, "abcde", "fghij", "kl");
	EXPECT_WRAP("go https://example.com/a/very/long/path", 12, WRAP_WORDS, "go",
		    "https://exam", "ple.com/a/ve", "ry/long/path");
	/* decomposed é (e + U+0301) never loses its accent to the next line */
	EXPECT_WRAP("e\xcc\x81"
		    "e\xcc\x81"
		    "e\xcc\x81"
		    "e\xcc\x81"
		    "e\xcc\x81",
		    2, WRAP_WORDS, "e\xcc\x81"
				   "e\xcc\x81",
		    "e\xcc\x81"
		    "e\xcc\x81",
		    "e\xcc\x81");
}

static void test_display_widths(void **state)
{
	(void)state;
	assert_int_equal(wrap_cells("abc", 3), 3);
	assert_int_equal(wrap_cells("\xe4\xb8\xad\xe6\x96\x87", 6), 4);        /* 中文 */
	assert_int_equal(wrap_cells("e\xcc\x81", 3), 1);                        /* e + U+0301 */
	assert_int_equal(wrap_cells("\xf0\x9f\x98\x80", 4), 2);                 /* 😀 */
	assert_int_equal(wrap_cells("\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", 8), 2); /* 👍🏽 */
	assert_int_equal(wrap_cells("\xe2\x9d\xa4\xef\xb8\x8f", 6), 2);         /* ❤️ (VS16) */
	assert_int_equal(wrap_cells("\xf0\x9f\x87\xab\xf0\x9f\x87\xb7", 8), 2); /* 🇫🇷 */
	/* 👨‍👩‍👧: one grapheme of five code points */
	const char *family = "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7";
	assert_int_equal(wrap_cells(family, strlen(family)), 2);
}

static void test_wide_char_never_split(void **state)
{
	(void)state;
	/* one cell left: the wide character moves to the next line */
	EXPECT_WRAP("ab\xe4\xb8\xad", 3, WRAP_WORDS, "ab", "\xe4\xb8\xad");
	EXPECT_WRAP("\xe4\xb8\xad\xe6\x96\x87\xe6\x96\x87\xe6\x9c\xac", 5, WRAP_WORDS,
		    "\xe4\xb8\xad\xe6\x96\x87", "\xe6\x96\x87\xe6\x9c\xac");
	EXPECT_WRAP("a\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", 2, WRAP_WORDS, "a", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd");
	/* in code too: the wide character goes after the mark */
	struct textlines *tl = wrap_str("ab\xe4\xb8\xad", 5, 3, WRAP_CODE);
	const char *const want[] = {"ab ", "\xe2\x86\xaa\xe4\xb8\xad"};
	expect_lines(tl, want, 2);
	check_lines(tl, 3);
	textlines_free(tl);
}

/* A combining mark or an emoji modifier right after a tab has no base of
 * its own: it joins the tab's last space, and every span's cells are what
 * wrap_cells measures of its text (the fuzzer found a tab's spaces and a
 * lone U+1F3FD counted as two clusters here and as one there). */
static void test_mark_after_a_tab(void **state)
{
	(void)state;
	static const char *const in[] = {"x\t\xf0\x9f\x8f\xbd end", "\t\xcc\x81" "a", "ab\t\xf0\x9f\x8f\xbd\t\xcc\x81"};
	for (size_t k = 0; k < sizeof in / sizeof *in; k++)
		for (int width = 2; width <= 20; width++)
			for (int mode = 0; mode < 2; mode++) {
				struct textlines *tl = wrap_str(in[k], strlen(in[k]), width,
								mode ? WRAP_CODE : WRAP_WORDS);
				check_lines(tl, width);
				textlines_free(tl);
			}
}

static void test_code_cut_with_mark_and_padded(void **state)
{
	(void)state;
	const char *src = "int x;\n\tif (a) return averyveryverylongname;";
	struct textlines *tl = wrap_str(src, strlen(src), 16, WRAP_CODE);
	const char *const want[] = {"int x;          ", "    if (a) retur", "\xe2\x86\xaa" "n averyveryvery",
				    "\xe2\x86\xaa" "longname;      "};
	expect_lines(tl, want, 4);
	for (size_t i = 0; i < textlines_count(tl); i++) {
		struct tline l = textlines_get(tl, i);
		assert_int_equal(l.cells, 16); /* a rectangle of background */
		if (i != 1) /* the padding and the mark take the fill style */
			assert_int_equal(l.spans[i == 0 ? 1 : 0].style, TS_CODEBLOCK | (i ? TS_MARK : 0));
	}
	textlines_free(tl);
}

static void test_prefixes_and_hanging_indent(void **state)
{
	(void)state;
	struct wrap_mark first[] = {{"\xe2\x94\x82 ", TS_MARK}, {"- ", TS_MARK}};
	struct wrap_mark rest[] = {{"\xe2\x94\x82 ", TS_MARK}, {"  ", TS_MARK}};
	struct textlines *tl = textlines_new();
	struct wrap *w = wrap_new();
	struct wrap_opts o = {14, WRAP_WORDS, first, rest, 2, 2, 0};
	wrap_begin(w, tl, &o);
	wrap_add(w, "one two ", 8, TS_NORMAL);
	wrap_add(w, "three four", 10, TS_BOLD);
	wrap_end(w);
	const char *const want[] = {"\xe2\x94\x82 - one two", "\xe2\x94\x82   three four"};
	expect_lines(tl, want, 2);
	struct tline l = textlines_get(tl, 1);
	assert_int_equal(l.spans[l.n - 1].style, TS_BOLD);
	check_lines(tl, 14);
	/* too narrow for the marks: the innermost goes, the text keeps room */
	textlines_clear(tl);
	o.width = 6;
	wrap_begin(w, tl, &o);
	wrap_add(w, "abcdefgh", 8, TS_NORMAL);
	wrap_end(w);
	const char *const narrow[] = {"\xe2\x94\x82 abcd", "\xe2\x94\x82 efgh"};
	expect_lines(tl, narrow, 2);
	wrap_free(w);
	textlines_free(tl);
}

static void test_hostile_bytes_inert(void **state)
{
	(void)state;
	static const char in[] = "a\x1b[2Jb \x1b]52;c;aGVsbG8=\x07 c\xc2\x9b"
				 "1m d\x9b"
				 "e \xe2\x80\xae"
				 "evil \xff\xfe\x00z\r\x7f";
	struct textlines *tl = wrap_str(in, sizeof in - 1, 200, WRAP_WORDS);
	const char *const want[] = {"a^[[2Jb ^[]52;c;aGVsbG8=^G c\\u009b1m d\\x9be \\u202eevil "
				    "\\xff\\xfe^@z^M^?"};
	expect_lines(tl, want, 1);
	check_lines(tl, 200);
	textlines_free(tl);
	tl = wrap_str(in, sizeof in - 1, 7, WRAP_CODE);
	check_lines(tl, 7);
	textlines_free(tl);
}

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* Random text of words, CJK, emoji, combining marks, hostile bytes: at
 * every width, the invariants hold and nothing but spaces at breaks is
 * lost (code mode: nothing but the marks is added). */
static void test_random_text_invariants(void **state)
{
	(void)state;
	static const char *const pieces[] = {
		"word", "a", "longerwordwithoutspaces", " ", " ", "  ", "\xe4\xb8\xad\xe6\x96\x87",
		"e\xcc\x81", "\xf0\x9f\x98\x80", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "\x1b[31m",
		"\xe2\x80\xae", "\xc3\xa9", "\xf0\x9f\x87\xab\xf0\x9f\x87\xb7", ",", "\xcc\x81"};
	for (int round = 0; round < 300; round++) {
		struct buf in = BUF_INIT;
		int n = 1 + (int)rnd(40);
		for (int i = 0; i < n; i++)
			buf_adds(&in, pieces[rnd(sizeof pieces / sizeof pieces[0])]);
		int width = 2 + (int)rnd(30);
		for (int mode = 0; mode < 2; mode++) {
			struct textlines *tl = wrap_str(in.p, in.len, width, (enum wrap_mode)mode);
			check_lines(tl, width);
			struct buf out = BUF_INIT;
			for (size_t i = 0; i < textlines_count(tl); i++)
				textlines_plain(tl, i, &out);
			/* the same text once the spaces and marks are taken out */
			struct buf a = BUF_INIT, b = BUF_INIT;
			struct textlines *one = wrap_str(in.p, in.len, WRAP_NOLIMIT, WRAP_WORDS);
			textlines_plain(one, 0, &a);
			textlines_free(one);
			for (size_t i = 0; i < out.len; i++) {
				if (out.p[i] == ' ')
					continue;
				if (mode == WRAP_CODE && !memcmp(out.p + i, "\xe2\x86\xaa", 3)) {
					i += 2;
					continue;
				}
				buf_addc(&b, out.p[i]);
			}
			struct buf a2 = BUF_INIT;
			for (size_t i = 0; i < a.len; i++)
				if (a.p[i] != ' ')
					buf_addc(&a2, a.p[i]);
			if (a2.len != b.len || memcmp(a2.p, b.p, b.len) != 0)
				fail_msg("round %d mode %d width %d: text changed", round, mode, width);
			buf_release(&a);
			buf_release(&a2);
			buf_release(&b);
			buf_release(&out);
			textlines_free(tl);
		}
		buf_release(&in);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words_wrap_at_spaces),
		cmocka_unit_test(test_long_word_broken_by_graphemes),
		cmocka_unit_test(test_display_widths),
		cmocka_unit_test(test_wide_char_never_split),
		cmocka_unit_test(test_mark_after_a_tab),
		cmocka_unit_test(test_code_cut_with_mark_and_padded),
		cmocka_unit_test(test_prefixes_and_hanging_indent),
		cmocka_unit_test(test_hostile_bytes_inert),
		cmocka_unit_test(test_random_text_invariants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
