/* test_composer.c — tui/composer.h: cleaning what is inserted, editing by
 * grapheme cluster, kills that append as in Emacs, history with the draft
 * kept, Up/Down by visual rows keeping the goal column, layout at every
 * width with the cursor inside, and a 1 MB paste. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "tui/composer.h"
#include "tui/grapheme.h"
#include "tui/key.h"
#include "tui/keytab.h"
#include "tui/wrap.h"

#define E_ACUTE "e\xcc\x81"                                                 /* e + U+0301 */
#define FAMILY "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7" /* 👩‍👩‍👧 */
#define ZHONG "\xe4\xb8\xad"                                                /* 中 */
#define WEN "\xe6\x96\x87"                                                  /* 文 */
#define FLAG_FR "\xf0\x9f\x87\xab\xf0\x9f\x87\xb7"
#define FLAG_DE "\xf0\x9f\x87\xa9\xf0\x9f\x87\xaa"

static void type(struct composer *c, const char *s)
{
	composer_insert(c, s, strlen(s));
}

static void expect_text(const struct composer *c, const char *want)
{
	size_t len;
	char *t = composer_text(c, &len);
	if (len != strlen(want) || memcmp(t, want, len) != 0)
		fail_msg("text '%s', expected '%s'", t, want);
	free(t);
}

/* The text with '|' at the cursor. */
static void expect_at(const struct composer *c, const char *want)
{
	size_t len;
	char *t = composer_text(c, &len);
	size_t at = composer_cursor(c);
	assert_true(at <= len);
	struct buf b = BUF_INIT;
	buf_add(&b, t, at);
	buf_addc(&b, '|');
	buf_add(&b, t + at, len - at);
	if (strcmp(b.p, want) != 0)
		fail_msg("'%s', expected '%s'", b.p, want);
	buf_release(&b);
	free(t);
}

static struct composer *with(const char *s)
{
	struct composer *c = composer_new();
	composer_set(c, s, strlen(s));
	return c;
}

static void test_insert_cleans_text(void **state)
{
	(void)state;
	struct composer *c = composer_new();
	assert_true(composer_empty(c));
	type(c, "a\tb");
	composer_insert(c, "\0x", 2);
	type(c, "\xff\xc3(");
	type(c, "\r\nc\rd");
	type(c, "\x1b[31m\x07\x7f");
	type(c, "\xc2\x9b\xe2\x80\xae"); /* C1 CSI, RIGHT-TO-LEFT OVERRIDE */
	expect_text(c, "a\tb\xef\xbf\xbdx\xef\xbf\xbd\xef\xbf\xbd(\nc\nd^[[31m^G^?\\u009b\\u202e");
	size_t len;
	char *t = composer_text(c, &len);
	assert_true(utf8_valid(t, len, NULL));
	for (size_t i = 0; i < len; i++)
		assert_false((unsigned char)t[i] < 0x20 && t[i] != '\n' && t[i] != '\t');
	free(t);
	composer_free(c);
	composer_free(NULL);
}

static void test_backspace_and_delete_by_cluster(void **state)
{
	(void)state;
	struct composer *c = with("a" E_ACUTE FAMILY ZHONG FLAG_FR FLAG_DE);
	composer_backspace(c);
	expect_at(c, "a" E_ACUTE FAMILY ZHONG FLAG_FR "|");
	composer_backspace(c);
	expect_at(c, "a" E_ACUTE FAMILY ZHONG "|");
	composer_backspace(c);
	expect_at(c, "a" E_ACUTE FAMILY "|");
	composer_backspace(c);
	expect_at(c, "a" E_ACUTE "|");
	composer_backspace(c);
	expect_at(c, "a|");
	composer_set(c, "a" E_ACUTE FAMILY "b", strlen("a" E_ACUTE FAMILY "b"));
	composer_set_cursor(c, 1);
	composer_delete(c);
	expect_at(c, "a|" FAMILY "b");
	composer_delete(c);
	expect_at(c, "a|b");
	/* a cursor set inside a cluster goes to its start */
	composer_set(c, FAMILY, strlen(FAMILY));
	composer_set_cursor(c, 5);
	expect_at(c, "|" FAMILY);
	assert_false(composer_backspace(c));
	composer_free(c);
}

static void test_moves_by_cluster_and_marks_join(void **state)
{
	(void)state;
	struct composer *c = with(E_ACUTE FAMILY ZHONG);
	composer_line_start(c);
	composer_right(c);
	expect_at(c, E_ACUTE "|" FAMILY ZHONG);
	composer_right(c);
	expect_at(c, E_ACUTE FAMILY "|" ZHONG);
	composer_left(c);
	composer_left(c);
	expect_at(c, "|" E_ACUTE FAMILY ZHONG);
	assert_false(composer_left(c));
	/* a mark typed after a letter joins it; a letter typed before a mark
	 * takes it, and the cursor never stays between them */
	composer_set(c, "x\xcc\x81", 3);
	composer_set_cursor(c, 1);
	expect_at(c, "|x\xcc\x81");
	composer_line_end(c);
	type(c, "e");
	type(c, "\xcc\x81");
	expect_at(c, "x\xcc\x81" E_ACUTE "|");
	composer_backspace(c);
	expect_at(c, "x\xcc\x81|");
	composer_set(c, "\xcc\x81!", 3);
	composer_line_start(c);
	type(c, "e");
	expect_at(c, E_ACUTE "|!");
	composer_free(c);
}

static void test_lines_join_and_split(void **state)
{
	(void)state;
	struct composer *c = with("ab\ncd");
	composer_set_cursor(c, 3);
	composer_backspace(c);
	expect_at(c, "ab|cd");
	composer_newline(c);
	expect_at(c, "ab\n|cd");
	composer_set_cursor(c, 2);
	composer_delete(c);
	expect_at(c, "ab|cd");
	type(c, "1\n2\n3");
	expect_at(c, "ab1\n2\n3|cd");
	composer_line_start(c);
	expect_at(c, "ab1\n2\n|3cd");
	composer_line_end(c);
	expect_at(c, "ab1\n2\n3cd|");
	composer_free(c);
}

static void test_kills_append_and_yank(void **state)
{
	(void)state;
	/* Ctrl-W twice: one kill of both words */
	struct composer *c = with("one two three");
	composer_kill_word_back(c);
	composer_kill_word_back(c);
	expect_at(c, "one |");
	composer_yank(c);
	expect_at(c, "one two three|");
	/* Ctrl-K three times: the rest, the newline, the next line */
	composer_set(c, "abc\ndef\ng", 9);
	composer_set_cursor(c, 1);
	composer_kill_to_end(c);
	composer_kill_to_end(c);
	composer_kill_to_end(c);
	expect_at(c, "a|\ng");
	composer_line_end(c);
	composer_yank(c);
	expect_at(c, "abc\ndef|\ng");
	/* Ctrl-U runs add before */
	composer_set(c, "xy\nzw", 5);
	composer_set_cursor(c, 4);
	composer_kill_to_start(c);
	composer_kill_to_start(c);
	composer_kill_to_start(c);
	expect_at(c, "|w");
	composer_yank(c);
	expect_at(c, "xy\nz|w");
	/* a move ends the run: the next kill replaces the buffer */
	composer_set(c, "aa bb cc", 8);
	composer_kill_word_back(c);
	composer_left(c);
	composer_kill_word_back(c);
	expect_at(c, "aa | ");
	composer_line_end(c);
	composer_yank(c);
	expect_at(c, "aa  bb|");
	/* a yank ends the run too; an empty kill changes nothing */
	composer_set(c, "", 0);
	assert_false(composer_kill_to_end(c));
	assert_true(composer_yank(c));
	expect_at(c, "bb|");
	composer_free(c);
}

static void test_word_moves(void **state)
{
	(void)state;
	struct composer *c = with("foo_bar, h\xc3\xa9llo  w" E_ACUTE "rd\nnext");
	composer_set_cursor(c, 0);
	composer_word_right(c);
	expect_at(c, "foo_bar|, h\xc3\xa9llo  w" E_ACUTE "rd\nnext");
	composer_word_right(c);
	expect_at(c, "foo_bar, h\xc3\xa9llo|  w" E_ACUTE "rd\nnext");
	composer_word_right(c);
	expect_at(c, "foo_bar, h\xc3\xa9llo  w" E_ACUTE "rd|\nnext");
	composer_word_right(c);
	expect_at(c, "foo_bar, h\xc3\xa9llo  w" E_ACUTE "rd\nnext|");
	assert_false(composer_word_right(c));
	composer_word_left(c);
	composer_word_left(c);
	expect_at(c, "foo_bar, h\xc3\xa9llo  |w" E_ACUTE "rd\nnext");
	composer_word_left(c);
	composer_word_left(c);
	expect_at(c, "|foo_bar, h\xc3\xa9llo  w" E_ACUTE "rd\nnext");
	composer_free(c);
}

static char *take(struct composer *c)
{
	size_t len;
	return composer_take(c, &len);
}

static void test_history_keeps_draft_and_edits(void **state)
{
	(void)state;
	struct composer *c = composer_new();
	composer_history_add(c, "first", 5);
	composer_history_add(c, "second\nline", 11);
	composer_history_add(c, "second\nline", 11); /* not twice */
	assert_int_equal(composer_history_len(c), 2);
	type(c, "draft");
	assert_true(composer_edited(c));
	assert_true(composer_up(c));
	expect_at(c, "|second\nline"); /* at the start: Up goes on walking */
	assert_true(composer_edited(c)); /* the draft is kept aside */
	assert_true(composer_up(c));
	expect_at(c, "|first");
	assert_false(composer_up(c));
	assert_true(composer_down(c));
	expect_at(c, "second\nline|");
	assert_true(composer_down(c));
	expect_at(c, "draft|");
	assert_false(composer_down(c));
	/* an entry edited while shown keeps its edit; the history does not change */
	composer_up(c);
	type(c, "X");
	composer_up(c);
	expect_text(c, "first");
	composer_down(c);
	expect_text(c, "Xsecond\nline");
	composer_down(c);
	expect_text(c, "draft");
	char *t = take(c);
	assert_string_equal(t, "draft");
	free(t);
	assert_true(composer_empty(c));
	assert_false(composer_edited(c));
	composer_up(c);
	expect_text(c, "second\nline");
	assert_false(composer_edited(c));
	/* Down inside a multi-line entry moves by rows before walking on */
	composer_down(c);
	expect_at(c, "second\n|line");
	composer_down(c);
	expect_text(c, "");
	composer_history_add(c, "third", 5);
	composer_up(c);
	expect_text(c, "third");
	composer_up(c);
	expect_at(c, "|second\nline");
	composer_down(c);
	expect_at(c, "second\n|line");
	composer_free(c);
}

static void test_set_take_and_edited(void **state)
{
	(void)state;
	struct composer *c = composer_new();
	assert_false(composer_edited(c));
	composer_set(c, "queued", 6);
	assert_false(composer_edited(c)); /* pulled back, not typed */
	expect_at(c, "queued|");
	type(c, "!");
	assert_true(composer_edited(c));
	composer_set(c, "", 0);
	assert_false(composer_edited(c));
	/* a draft saved before a restart is the user's text */
	composer_restore(c, "draft", 5);
	assert_true(composer_edited(c));
	expect_at(c, "draft|");
	composer_restore(c, "", 0);
	assert_false(composer_edited(c));
	type(c, "x");
	composer_backspace(c);
	assert_false(composer_edited(c)); /* edited, but nothing is unsent */
	composer_free(c);
}

static void test_up_down_keep_the_goal_column(void **state)
{
	(void)state;
	struct composer *c = with("abcde\nxy\nfghijk");
	composer_set_cursor(c, 14); /* after "fghij" */
	composer_up(c);
	expect_at(c, "abcde\nxy|\nfghijk");
	composer_up(c);
	expect_at(c, "abcde|\nxy\nfghijk");
	composer_down(c);
	composer_down(c);
	expect_at(c, "abcde\nxy\nfghij|k");
	assert_false(composer_down(c));
	/* a horizontal move forgets the goal */
	composer_left(c);
	composer_up(c);
	expect_at(c, "abcde\nxy|\nfghijk");
	composer_up(c);
	expect_at(c, "abcd|e\nxy\nfghijk");
	/* visual rows once laid out: width 4 */
	struct composer_row rows[8];
	struct composer_view v;
	composer_set(c, "abcdefghij", 10);
	composer_layout(c, 4, 8, rows, &v);
	assert_int_equal(v.rows, 3);
	assert_int_equal(v.cursor_y, 2);
	assert_int_equal(v.cursor_x, 2);
	composer_up(c);
	expect_at(c, "abcdef|ghij");
	composer_up(c);
	expect_at(c, "ab|cdefghij");
	assert_false(composer_up(c));
	/* a wide character: the goal column lands before it, never inside */
	composer_set(c, "a" ZHONG "b\nxyz", strlen("a" ZHONG "b\nxyz"));
	composer_layout(c, 80, 8, rows, &v);
	composer_set_cursor(c, strlen("a" ZHONG "b\nxy"));
	composer_up(c);
	expect_at(c, "a|" ZHONG "b\nxyz");
	composer_free(c);
}

static void expect_rows(struct composer *c, int width, const char *const *want, size_t n, size_t cy, int cx)
{
	struct composer_row rows[32];
	struct composer_view v;
	composer_layout(c, width, 32, rows, &v);
	assert_int_equal(v.rows, n);
	assert_int_equal(v.shown, n);
	for (size_t i = 0; i < n; i++) {
		if (rows[i].len != strlen(want[i]) || memcmp(rows[i].text, want[i], rows[i].len) != 0)
			fail_msg("row %zu '%.*s', expected '%s'", i, (int)rows[i].len, rows[i].text, want[i]);
	}
	assert_int_equal(v.cursor_y, cy);
	assert_int_equal(v.cursor_x, cx);
}

static void test_layout_rows(void **state)
{
	(void)state;
	struct composer *c = with("abc");
	expect_rows(c, 3, (const char *[]){"abc", ""}, 2, 1, 0); /* a full row: the cursor below */
	expect_rows(c, 4, (const char *[]){"abc"}, 1, 0, 3);
	composer_set(c, ZHONG WEN ZHONG, 9);
	expect_rows(c, 3, (const char *[]){ZHONG, WEN, ZHONG}, 3, 2, 2);
	expect_rows(c, 5, (const char *[]){ZHONG WEN, ZHONG}, 2, 1, 2);
	expect_rows(c, 1, (const char *[]){ZHONG, WEN, ZHONG, ""}, 4, 3, 0);
	composer_set(c, "a\tb", 3);
	expect_rows(c, 80, (const char *[]){"a       b"}, 1, 0, 9);
	expect_rows(c, 4, (const char *[]){"a   ", "b"}, 2, 1, 1);
	composer_set(c, "\xcc\x81x", 3); /* a mark with nothing to carry it */
	expect_rows(c, 80, (const char *[]){"\xe2\x97\x8c\xcc\x81x"}, 1, 0, 2);
	/* an emoji sequence, a flag and a heart with its presentation selector
	 * take two cells each, as the transcript draws them */
	composer_set(c, FAMILY FLAG_FR "\xe2\x9d\xa4\xef\xb8\x8f", strlen(FAMILY FLAG_FR "\xe2\x9d\xa4\xef\xb8\x8f"));
	expect_rows(c, 80, (const char *[]){FAMILY FLAG_FR "\xe2\x9d\xa4\xef\xb8\x8f"}, 1, 0, 6);
	expect_rows(c, 4, (const char *[]){FAMILY FLAG_FR, "\xe2\x9d\xa4\xef\xb8\x8f"}, 2, 1, 2);
	composer_set(c, E_ACUTE FAMILY "\n\nz", strlen(E_ACUTE FAMILY "\n\nz"));
	composer_set_cursor(c, 3);
	expect_rows(c, 80, (const char *[]){E_ACUTE FAMILY, "", "z"}, 3, 0, 1);
	composer_free(c);
}

static bool valid_row_text(const struct composer_row *r)
{
	for (size_t i = 0; i < r->len; i++)
		if ((unsigned char)r->text[i] < 0x20)
			return false;
	return utf8_valid(r->text, r->len, NULL);
}

/* At every width from 1 to 80 and every cursor place: the cursor is
 * inside the width and the window, rows fit unless one cluster is wider,
 * and the rows put together give back the text (no cluster split). */
static void test_layout_every_width_cursor_inside(void **state)
{
	(void)state;
	const char *text = "Hello " ZHONG WEN " w" E_ACUTE "rld " FAMILY " " FLAG_FR FLAG_DE "\n\n"
			   "a long line with many words in it to be wrapped at small widths " ZHONG ZHONG ZHONG
			   "\n" FAMILY FAMILY FAMILY ZHONG "x";
	struct composer *c = with(text);
	size_t len = strlen(text);
	struct composer_row rows[200];
	struct composer_view v;
	for (int width = 1; width <= 80; width++) {
		composer_set_cursor(c, 0);
		for (;;) {
			composer_layout(c, width, 200, rows, &v);
			assert_true(v.cursor_x >= 0 && v.cursor_x < width);
			assert_true(v.cursor_y < v.shown);
			assert_int_equal(v.shown, v.rows);
			struct buf back = BUF_INIT;
			buf_adds(&back, "");
			for (size_t i = 0; i < v.shown; i++) {
				assert_true(valid_row_text(&rows[i]));
				/* measured as the transcript measures */
				assert_int_equal(rows[i].cells, wrap_cells(rows[i].text, rows[i].len));
				if (rows[i].cells > width) /* one cluster wider than the row */
					assert_int_equal(grapheme_next(rows[i].text, rows[i].len), rows[i].len);
				buf_add(&back, rows[i].text, rows[i].len);
				if (!rows[i].wrapped && i + 1 < v.shown)
					buf_addc(&back, '\n');
			}
			if (back.len != len || memcmp(back.p, text, len) != 0)
				fail_msg("width %d: rows give '%s'", width, back.p);
			buf_release(&back);
			/* a window of 3 rows still holds the cursor */
			struct composer_view w;
			composer_layout(c, width, 3, rows, &w);
			assert_true(w.cursor_y < w.shown && w.shown <= 3);
			assert_int_equal(w.top + w.cursor_y, v.cursor_y);
			if (!composer_right(c))
				break;
		}
		/* walk back up by rows: each Up moves one row until the top */
		size_t prev_row = v.cursor_y;
		while (composer_up(c)) {
			composer_layout(c, width, 200, rows, &v);
			assert_int_equal(v.cursor_y + 1, prev_row);
			prev_row = v.cursor_y;
		}
		assert_int_equal(prev_row, 0);
	}
	composer_free(c);
}

/* All rows of c at width, as text with '/' between rows and '|' between
 * lines, and the cursor. */
static char *all_rows(struct composer *c, int width, struct composer_view *v)
{
	static struct composer_row rows[4096];
	composer_layout(c, width, 4096, rows, v);
	struct buf b = BUF_INIT;
	buf_adds(&b, "");
	for (size_t i = 0; i < v->shown; i++) {
		buf_add(&b, rows[i].text, rows[i].len);
		buf_printf(&b, "%d%c", rows[i].cells, rows[i].wrapped ? '/' : '|');
	}
	return buf_detach(&b, NULL);
}

static uint64_t rnd_state = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (unsigned)(rnd_state % n);
}

/* Rows kept from before an edit, or taken back shifted after it, are the
 * rows a fresh layout of the same text gives: random edits of long lines
 * (clusters that grow and shrink, wide characters, tabs) at several widths. */
static void test_layout_after_edits_matches_fresh(void **state)
{
	(void)state;
	static const char *const pieces[] = {"a", "bc ", "\xcc\x81", ZHONG, FAMILY, "\xe2\x80\x8d", "\t",
					     "\xf0\x9f\x91\xa7", "word ", FLAG_FR, "\n", "xyz"};
	static const int widths[] = {1, 2, 3, 7, 20, 80};
	struct composer *c = composer_new();
	for (size_t i = 0; i < 400; i++)
		type(c, pieces[rnd(sizeof pieces / sizeof pieces[0] - 1)] /* no newline */);
	for (int round = 0; round < 600; round++) {
		int width = widths[rnd(sizeof widths / sizeof widths[0])];
		struct composer_view v1, v2;
		free(all_rows(c, width, &v1)); /* laid out: the next edit is incremental */
		size_t len;
		char *t = composer_text(c, &len);
		composer_set_cursor(c, rnd((unsigned)len + 1));
		switch (rnd(4)) {
		case 0: composer_backspace(c); break;
		case 1: composer_delete(c); break;
		default: type(c, pieces[rnd(sizeof pieces / sizeof pieces[0])]); break;
		}
		free(t);
		char *got = all_rows(c, width, &v1);
		t = composer_text(c, &len);
		struct composer *fresh = with(t);
		composer_set_cursor(fresh, composer_cursor(c));
		char *want = all_rows(fresh, width, &v2);
		if (strcmp(got, want) != 0)
			fail_msg("round %d width %d: rows after the edit differ from a fresh layout", round, width);
		assert_int_equal(v1.rows, v2.rows);
		assert_int_equal(v1.top + v1.cursor_y, v2.top + v2.cursor_y);
		assert_int_equal(v1.cursor_x, v2.cursor_x);
		free(got);
		free(want);
		free(t);
		composer_free(fresh);
	}
	composer_free(c);
}

static void test_paste_of_one_megabyte(void **state)
{
	(void)state;
	size_t n = 1 << 20;
	char *big = malloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = i % 100 == 99 ? '\n' : (char)('a' + i % 26);
	struct composer *c = composer_new();
	type(c, "before after");
	composer_set_cursor(c, 7);
	assert_true(composer_insert(c, big, n));
	assert_int_equal(composer_cursor(c), 7 + n);
	size_t len;
	char *t = composer_text(c, &len);
	assert_int_equal(len, n + 12);
	assert_memory_equal(t + 7, big, n);
	assert_memory_equal(t + 7 + n, "after", 5);
	free(t);
	struct composer_row rows[10];
	struct composer_view v;
	composer_layout(c, 80, 10, rows, &v);
	assert_int_equal(v.rows, (n / 100 + 1) * 2); /* 80 cells or more: two rows each */
	assert_int_equal(v.top + v.cursor_y, v.rows - 2);
	assert_int_equal(v.cursor_x, n % 100);
	/* one line of 1 MB, pasted in the middle of another */
	for (size_t i = 0; i < n; i++)
		if (big[i] == '\n')
			big[i] = ' ';
	composer_set(c, "[]", 2);
	composer_set_cursor(c, 1);
	composer_insert(c, big, n);
	composer_layout(c, 100, 10, rows, &v);
	assert_int_equal(v.rows, (n + 2 + 99) / 100);
	composer_backspace(c);
	assert_int_equal(composer_cursor(c), n);
	free(big);
	composer_free(c);
}

/* The screen's dispatch in small: bytes from the terminal, decoded, looked
 * up in the key table, applied to the composer. */
static void drive(struct composer *c, const char *bytes)
{
	struct keydec *d = keydec_new();
	for (const char *p = bytes; *p; p++)
		keydec_feed(d, false, (unsigned char)*p);
	keydec_expire(d);
	struct key k;
	while (keydec_next(d, &k)) {
		if (k.sym == KEYSYM_PASTE_END) {
			size_t n;
			const char *t = keydec_text(d, &n);
			composer_insert(c, t, n);
			continue;
		}
		const struct keybinding *b = keytab_find(k, KEYCTX_BIT(KEYCTX_COMPOSER) | KEYCTX_BIT(KEYCTX_GLOBAL));
		if (b)
			composer_apply(c, b->act);
		else
			composer_type(c, k);
	}
	keydec_free(d);
}

static void test_keys_drive_the_composer(void **state)
{
	(void)state;
	struct composer *c = composer_new();
	/* Alt-B, Ctrl-K, 2, Ctrl-Y, Ctrl-A, Alt-Enter, x, a paste, Ctrl-E, Ctrl-W */
	drive(c, "one two\x1b" "b\x0b" "2\x19\x01\x1b\r" "x\x1b[200~p\rq\x1b[201~");
	expect_at(c, "\nxp\nq|one 2two");
	/* Ctrl-E, Ctrl-W, Left, Ctrl-Left, Backspace (joins the lines) */
	drive(c, "\x05\x17\x1b[D\x1b[1;5D\x7f");
	expect_at(c, "\nxp|qone ");
	/* Ctrl-C is not the composer's; Esc alone neither; nothing typed */
	drive(c, "\x03\x1b");
	expect_at(c, "\nxp|qone ");
	composer_free(c);
}

/* composer_apply takes exactly the composer's actions of the key table:
 * all but sending, completing and the external editor, which are the
 * screen's. */
static void test_apply_takes_the_composer_actions(void **state)
{
	(void)state;
	size_t n;
	const struct keybinding *t = keytab_entries(&n);
	struct composer *c = with("some text");
	for (size_t i = 0; i < n; i++) {
		bool screen = t[i].act == KEYACT_SEND || t[i].act == KEYACT_COMPLETE || t[i].act == KEYACT_EDITOR;
		bool composer = t[i].ctx == KEYCTX_COMPOSER && !screen;
		if (composer_apply(c, t[i].act) != composer)
			fail_msg("composer_apply of '%s' (%s)", t[i].help, keytab_ctx_title(t[i].ctx));
	}
	assert_false(composer_type(c, key_char('a', KEYMOD_CTRL)));
	assert_false(composer_type(c, key_sym(KEYSYM_ENTER, 0)));
	assert_true(composer_type(c, key_char(0x4e2d, 0)));
	composer_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_cleans_text),
		cmocka_unit_test(test_backspace_and_delete_by_cluster),
		cmocka_unit_test(test_moves_by_cluster_and_marks_join),
		cmocka_unit_test(test_lines_join_and_split),
		cmocka_unit_test(test_kills_append_and_yank),
		cmocka_unit_test(test_word_moves),
		cmocka_unit_test(test_history_keeps_draft_and_edits),
		cmocka_unit_test(test_set_take_and_edited),
		cmocka_unit_test(test_up_down_keep_the_goal_column),
		cmocka_unit_test(test_layout_rows),
		cmocka_unit_test(test_layout_every_width_cursor_inside),
		cmocka_unit_test(test_layout_after_edits_matches_fresh),
		cmocka_unit_test(test_paste_of_one_megabyte),
		cmocka_unit_test(test_keys_drive_the_composer),
		cmocka_unit_test(test_apply_takes_the_composer_actions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
