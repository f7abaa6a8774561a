/* test_mdrender.c — tui/mdrender and tui/textmsg: markdown samples of the
 * kind models write (headings, emphasis, nested lists, quotes, fenced
 * code, tables with CJK and emoji, links) rendered to the expected lines
 * and styles; hostile bytes inert wherever they appear; a message streamed
 * in random pieces gives exactly the lines of the whole text, at several
 * widths, including the cases where a partial line could change the block
 * structure or a reference definition makes a paragraph node vanish;
 * closed blocks are not rendered again; a width change equals a fresh rendering; plain messages. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "tests/unit/support_tline.h"
#include "tui/mdcode.h"
#include "tui/textlines.h"
#include "tui/textmsg.h"

static const char sample_answer[] =
	"# Reading a file in C\n"
	"\n"
	"There are *two* common ways, and **both** are fine. Use `fopen` with `fread`\n"
	"when you want buffering, or `open` with `read` for raw access; see the\n"
	"[man page](https://man7.org/linux/man-pages/man3/fopen.3.html) or https://cppreference.com.\n"
	"\n"
	"## Steps\n"
	"\n"
	"1. Open the file:\n"
	"   - check the result;\n"
	"   - report `errno` with `strerror`.\n"
	"2. Read in a loop until it returns 0.\n"
	"\n"
	"   A short read is not an error.\n"
	"3. Close it.\n"
	"\n"
	"> **Note:** a pipe or a socket can return fewer bytes than asked for, even\n"
	"> when more will come later.\n"
	"\n"
	"```c\n"
	"#include <stdio.h>\n"
	"\n"
	"int main(void) {\n"
	"\tFILE *f = fopen(\"data.txt\", \"r\"); /* a comment long enough to be cut at the width */\n"
	"\treturn f ? 0 : 1;\n"
	"}\n"
	"```\n"
	"\n"
	"| Function | Buffered | Header |\n"
	"|----------|:--------:|-------:|\n"
	"| `fread`  | yes      | stdio.h |\n"
	"| `read`   | no       | unistd.h |\n"
	"\n"
	"---\n"
	"\n"
	"That's all ~~folks~~.\n";

static const char sample_intl[] =
	"## 多语言 — Ünïcödé\n"
	"\n"
	"中文段落没有空格，但仍然需要按照显示宽度换行，而且绝不能把一个宽字符拆成两半。\n"
	"日本語の文章も同じです。\n"
	"\n"
	"- Emoji: 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ done\n"
	"- Combining: Cafe\xcc\x81 re\xcc\x81sume\xcc\x81 nai\xcc\x88ve — Z\xcc\xa4\xcd\x94\xcd\x8e" "a\xcc\x88lgo\n"
	"  - nested: 한국어 텍스트도 넓은 문자입니다\n"
	"    - deeper still, with a long line that wraps under its own bullet\n"
	"\n"
	"| 名前 | 数量 | 備考 |\n"
	"|------|-----:|------|\n"
	"| りんご | 3 | 🍎 新鮮 |\n"
	"| pear | 12 | é |\n"
	"\n"
	"> 引用：**太字** と `コード`\n"
	">\n"
	"> - list in a quote\n"
	">   continued lazily\n"
	"\n"
	"- [ ] 未完了\n"
	"- [x] done ✅\n";

/* Cases where the block structure hangs on a line not yet complete, or on
 * lines far apart. */
static const char sample_edges[] =
	"- a\n"
	"---x\n"
	"\n"
	"- b\n"
	"---\n"
	"para\n"
	"| a | b |\n"
	"|---|---|\n"
	"| 1 | 2 |\n"
	"\n"
	"Setext\n"
	"======\n"
	"\n"
	"* loose one\n"
	"\n"
	"* loose two\n"
	"\n"
	"\n"
	"  still two after two blank lines\n"
	"\n"
	"```\n"
	"fenced\n"
	"\n"
	"\n"
	"with blank lines\n"
	"```not a close\n"
	"```\n"
	"\n"
	"    indented code\n"
	"\n"
	"    more of it\n"
	"after\r\n"
	"\r\n"
	"crlf para\r"
	"cr line\n"
	"\n"
	"[ref]: https://example.com\n"
	"\n"
	"uses [ref] here\n"
	"\n"
	"<div>\n"
	"html block\n"
	"</div>\n"
	"\n"
	"```\r\n"
	"crlf code\r\n"
	"cr code\r"
	"\r"
	"``not a fence\n"
	"  ~~~ nor this\n"
	"```\r\n"
	"\n"
	"r\n"
	"---\n"
	"p|tt\n"
	"| a |\n"
	"|-x not a delimiter row\n"
	"more\n"
	"\n"
	"10. ten\n"
	"11. eleven\n"
	"\n"
	"> quote\n"
	"lazy\n"
	"- list after quote\n"
	"\n"
	"~~~\n"
	"unclosed fence at the end";

static const char sample_hostile[] =
	"# Title \x1b]0;pwned\x07 \x1b[2J\n"
	"\n"
	"text \x1b[31mred\x1b[0m \xc2\x9b"
	"6n \x9b"
	"6n \xe2\x80\xae"
	"txet \x00 nul \xff\xfe bad \x1b]52;c;aGVsbG8=\x07\n"
	"\n"
	"```\n"
	"code \x1b[2J \x1b]52;c;aGVsbG8=\x1b\\ \x08\x08\n"
	"```\n"
	"\n"
	"| h\x1b[1m | x |\n"
	"|---|---|\n"
	"| \xe2\x80\xae | [l](http://x/\x1b[2J) |\n"
	"\n"
	"- item \x07\x07\n";

/* Reference definitions after the text that uses them: while "[q]: ..."
 * streams in, a paragraph node starts on its line, then vanishes once the
 * line is a whole definition. */
static const char sample_refs[] =
	"See [q] and [r] here.\n"
	"\n"
	"[q]: http://q.example\n"
	"[r]: http://r.example \"title\"\n";

static const char *const samples[] = {sample_answer, sample_intl, sample_edges, sample_hostile,
				      sample_refs};
static const size_t sample_len[] = {sizeof sample_answer - 1, sizeof sample_intl - 1,
				    sizeof sample_edges - 1, sizeof sample_hostile - 1,
				    sizeof sample_refs - 1};
#define NSAMPLES 5

static struct textmsg *render(enum textmsg_kind kind, const char *s, size_t n, int width)
{
	struct textmsg *m = textmsg_new(kind, TS_NORMAL, width);
	textmsg_append(m, s, n);
	return m;
}

static char *line_text(const struct textmsg *m, size_t i)
{
	struct tline l = textmsg_line(m, i);
	struct buf b = BUF_INIT;
	textlines_plain_view(&l, &b);
	buf_addc(&b, '\0');
	return buf_detach(&b, NULL);
}

/* The index of the first line equal to want (with prefix: starting
 * with it), or fail. */
static size_t find_in(const struct textmsg *m, const char *want, bool prefix)
{
	for (size_t i = 0; i < textmsg_count(m); i++) {
		char *got = line_text(m, i);
		int eq = prefix ? strncmp(got, want, strlen(want)) == 0 : strcmp(got, want) == 0;
		free(got);
		if (eq)
			return i;
	}
	for (size_t i = 0; i < textmsg_count(m); i++) {
		char *got = line_text(m, i);
		print_message("  |%s|\n", got);
		free(got);
	}
	fail_msg("no line '%s'", want);
	return 0;
}

static size_t find_line(const struct textmsg *m, const char *want)
{
	return find_in(m, want, false);
}

/* The style of the span of line i holding the text at, or fail. */
static unsigned style_at(const struct textmsg *m, size_t i, const char *at)
{
	struct tline l = textmsg_line(m, i);
	for (size_t k = 0; k < l.n; k++)
		if (memmem(l.text + l.spans[k].off, l.spans[k].len, at, strlen(at)))
			return l.spans[k].style;
	fail_msg("no span '%s' in line %zu", at, i);
	return 0;
}

/* No line wider than width, cells consistent, nothing a terminal acts on. */
static void check_inert(const struct textmsg *m, int width)
{
	for (size_t i = 0; i < textmsg_count(m); i++) {
		struct tline l = textmsg_line(m, i);
		support_check_tline(&l, width, i);
	}
}

/* a and b hold the same lines: text, style and cells of every span. */
static void assert_same_lines(const struct textmsg *a, const struct textmsg *b, const char *what)
{
	if (textmsg_count(a) != textmsg_count(b))
		fail_msg("%s: %zu lines vs %zu", what, textmsg_count(a), textmsg_count(b));
	for (size_t i = 0; i < textmsg_count(a); i++) {
		struct tline x = textmsg_line(a, i), y = textmsg_line(b, i);
		int same = x.n == y.n && x.cells == y.cells;
		for (size_t k = 0; same && k < x.n; k++)
			same = x.spans[k].len == y.spans[k].len && x.spans[k].style == y.spans[k].style &&
			       x.spans[k].cells == y.spans[k].cells &&
			       !memcmp(x.text + x.spans[k].off, y.text + y.spans[k].off, x.spans[k].len);
		if (!same) {
			char *p = line_text(a, i), *q = line_text(b, i);
			fail_msg("%s: line %zu differs: '%s' vs '%s'", what, i, p, q);
		}
	}
}

static void test_answer_rendered(void **state)
{
	(void)state;
	struct textmsg *m = render(TEXTMSG_MARKDOWN, sample_answer, sizeof sample_answer - 1, 50);
	check_inert(m, 50);
	size_t h = find_line(m, "Reading a file in C");
	assert_int_equal(style_at(m, h, "Reading"), TS_BOLD | TS_HEADING(1));
	assert_int_equal(TS_HEADING_LEVEL(style_at(m, find_line(m, "Steps"), "Steps")), 2);
	size_t p = find_line(m, "There are two common ways, and both are fine. Use");
	assert_int_equal(style_at(m, p, "two"), TS_ITALIC);
	assert_int_equal(style_at(m, p, "both"), TS_BOLD);
	/* a link shows its target; an autolink does not show it twice */
	size_t l = find_line(m, "with read for raw access; see the man page");
	assert_int_equal(style_at(m, l, "man page"), TS_LINK);
	assert_int_equal(style_at(m, l, "read"), TS_CODE);
	assert_int_equal(style_at(m, l + 1, "https://man7.org"), TS_URL);
	find_line(m, "l) or https://cppreference.com.");
	/* ordered list, nested bullets, a loose item's second paragraph under
	 * its hanging indent */
	find_line(m, "1. Open the file:");
	size_t b = find_line(m, "   \xe2\x97\xa6 check the result;");
	assert_true(style_at(m, b, "\xe2\x97\xa6") & TS_MARK);
	find_line(m, "   A short read is not an error.");
	find_line(m, "3. Close it.");
	/* the quote bar on every line of the quote */
	size_t q = find_line(m, "\xe2\x94\x82 Note: a pipe or a socket can return fewer bytes");
	assert_true(style_at(m, q, "Note:") & TS_QUOTE);
	assert_true(style_at(m, q, "Note:") & TS_BOLD);
	find_line(m, "\xe2\x94\x82 than asked for, even when more will come later.");
	/* code keeps its lines, padded to the width, tabs at 4, a long line cut */
	size_t c = find_line(m, "#include <stdio.h>                                ");
	assert_int_equal(style_at(m, c, "#include"), TS_CODEBLOCK);
	assert_int_equal(textmsg_line(m, c + 1).cells, 50);
	find_line(m, "    FILE *f = fopen(\"data.txt\", \"r\"); /* a comment");
	find_line(m, "\xe2\x86\xaa long enough to be cut at the width */           ");
	find_line(m, "c                                                 ");
	/* the table as a grid, aligned as its delimiter row says */
	find_line(m, "Function \xe2\x94\x82 Buffered \xe2\x94\x82   Header");
	find_line(m, "fread    \xe2\x94\x82   yes    \xe2\x94\x82  stdio.h");
	find_line(m, "read     \xe2\x94\x82    no    \xe2\x94\x82 unistd.h");
	size_t r = find_line(m, "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
				"\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\xbc"
				"\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
				"\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\xbc"
				"\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
				"\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80");
	assert_true(style_at(m, r, "\xe2\x94\xbc") & TS_MARK);
	assert_int_equal(style_at(m, r + 1, "fread"), TS_CODE);
	/* the thematic break spans the width; strikethrough */
	struct tline hr = textmsg_line(m, find_line(m, "That's all folks.") - 2);
	assert_int_equal(hr.cells, 50);
	assert_int_equal(style_at(m, find_line(m, "That's all folks."), "folks"), TS_STRIKE);
	textmsg_free(m);
}

static void test_wide_text_and_tables(void **state)
{
	(void)state;
	struct textmsg *m = render(TEXTMSG_MARKDOWN, sample_intl, sizeof sample_intl - 1, 30);
	check_inert(m, 30);
	/* CJK wraps by width: 15 wide characters in 30 cells */
	find_line(m, "中文段落没有空格，但仍然需要按");
	/* nested bullets with hanging indents, by depth */
	find_line(m, "  \xe2\x97\xa6 nested: 한국어 텍스트도");
	find_line(m, "    넓은 문자입니다");
	find_line(m, "    \xe2\x96\xaa deeper still, with a");
	find_line(m, "      long line that wraps");
	/* the table by display width: りんご is 6 cells, 名前 4 */
	find_line(m, "名前   \xe2\x94\x82 数量 \xe2\x94\x82 備考");
	find_line(m, "りんご \xe2\x94\x82    3 \xe2\x94\x82 🍎 新鮮");
	find_line(m, "\xe2\x94\x82 \xe2\x80\xa2 list in a quote continued");
	find_line(m, "\xe2\x80\xa2 [x] done ✅");
	textmsg_free(m);
	/* too narrow for the grid: one "header: value" line per cell */
	m = render(TEXTMSG_MARKDOWN, sample_intl, sizeof sample_intl - 1, 14);
	check_inert(m, 14);
	size_t r = find_line(m, "名前: りんご");
	find_line(m, "数量: 3");
	assert_true(style_at(m, r, "名前") & TS_BOLD);
	textmsg_free(m);
}

static void test_hostile_markdown_inert(void **state)
{
	(void)state;
	for (int width = 8; width <= 80; width += 9) {
		struct textmsg *m = render(TEXTMSG_MARKDOWN, sample_hostile, sizeof sample_hostile - 1, width);
		check_inert(m, width);
		textmsg_free(m);
		m = render(TEXTMSG_PLAIN, sample_hostile, sizeof sample_hostile - 1, width);
		check_inert(m, width);
		textmsg_free(m);
	}
	struct textmsg *m = render(TEXTMSG_MARKDOWN, sample_hostile, sizeof sample_hostile - 1, 200);
	find_line(m, "Title ^[]0;pwned^G ^[[2J");
	find_in(m, "code ^[[2J ^[]52;c;aGVsbG8=^[\\ ^H^H   ", true);
	/* the link target with its ESC: shown, inert */
	find_line(m, "\\u202e \xe2\x94\x82 l (http://x/^[[2J)");
	/* cmark turns NUL and bytes that are not UTF-8 into U+FFFD */
	find_line(m, "text ^[[31mred^[[0m \\u009b6n \xef\xbf\xbd" "6n \\u202etxet \xef\xbf\xbd nul "
		     "\xef\xbf\xbd\xef\xbf\xbd bad ^[]52;c;aGVsbG8=^G");
	textmsg_free(m);
	m = render(TEXTMSG_PLAIN, sample_hostile, sizeof sample_hostile - 1, 200);
	find_line(m, "text ^[[31mred^[[0m \\u009b6n \\x9b6n \\u202etxet ^@ nul \\xff\\xfe bad "
		     "^[]52;c;aGVsbG8=^G");
	textmsg_free(m);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* Appends s[0..n) to a new message in random pieces (1 to max bytes,
 * cutting characters anywhere). */
static struct textmsg *stream(enum textmsg_kind kind, const char *s, size_t n, int width, unsigned max)
{
	struct textmsg *m = textmsg_new(kind, TS_NORMAL, width);
	for (size_t i = 0; i < n;) {
		size_t k = 1 + rnd(max);
		if (k > n - i)
			k = n - i;
		textmsg_append(m, s + i, k);
		i += k;
	}
	return m;
}

static void test_streaming_equals_whole(void **state)
{
	(void)state;
	static const int widths[] = {12, 37, 80};
	static const unsigned maxes[] = {1, 3, 8, 40};
	char what[96];
	for (size_t s = 0; s < NSAMPLES; s++)
		for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
			struct textmsg *whole = render(TEXTMSG_MARKDOWN, samples[s], sample_len[s], widths[w]);
			struct textmsg *plain = render(TEXTMSG_PLAIN, samples[s], sample_len[s], widths[w]);
			for (int round = 0; round < 12; round++) {
				unsigned max = maxes[round % 4];
				snprintf(what, sizeof what, "sample %zu width %d round %d", s, widths[w], round);
				struct textmsg *m = stream(TEXTMSG_MARKDOWN, samples[s], sample_len[s], widths[w], max);
				assert_same_lines(whole, m, what);
				textmsg_free(m);
				m = stream(TEXTMSG_PLAIN, samples[s], sample_len[s], widths[w], max);
				assert_same_lines(plain, m, what);
				textmsg_free(m);
			}
			textmsg_free(whole);
			textmsg_free(plain);
		}
}

/* Every prefix of a sample, streamed, equals the same prefix whole: what
 * the screen shows mid-stream is what the finished text would show. */
static void test_every_prefix_streamed_equals_whole(void **state)
{
	(void)state;
	char what[64];
	for (size_t s = 0; s < NSAMPLES; s++) {
		struct textmsg *m = textmsg_new(TEXTMSG_MARKDOWN, TS_NORMAL, 33);
		for (size_t i = 0; i < sample_len[s]; i++) {
			textmsg_append(m, samples[s] + i, 1);
			struct textmsg *whole = render(TEXTMSG_MARKDOWN, samples[s], i + 1, 33);
			snprintf(what, sizeof what, "sample %zu prefix %zu", s, i + 1);
			assert_same_lines(whole, m, what);
			textmsg_free(whole);
		}
		textmsg_free(m);
	}
}

static void test_closed_blocks_kept(void **state)
{
	(void)state;
	struct textmsg *m = textmsg_new(TEXTMSG_MARKDOWN, TS_NORMAL, 40);
	textmsg_append(m, "first paragraph\n\nsecond", 23);
	textmsg_append(m, "\n", 1); /* "second" starts on a complete line: the first block closes */
	const char *kept = textmsg_line(m, 0).text;
	for (int i = 0; i < 50; i++)
		textmsg_append(m, " more words\n\nanother paragraph", 29);
	/* the first block was rendered once: its line still points at the
	 * same storage */
	assert_ptr_equal(textmsg_line(m, 0).text, kept);
	char *t = line_text(m, 0);
	assert_string_equal(t, "first paragraph");
	free(t);
	textmsg_free(m);
	/* an open fenced code block is laid out line by line (the cost is
	 * bench_render's); its lines are those of the whole text */
	m = textmsg_new(TEXTMSG_MARKDOWN, TS_NORMAL, 40);
	textmsg_append(m, "```c\nint first;\n", 16);
	for (int i = 0; i < 50; i++)
		textmsg_append(m, "x = y;\n", 7);
	t = line_text(m, 1);
	assert_string_equal(t, "int first;                              ");
	free(t);
	assert_int_equal(textmsg_count(m), 52);
	textmsg_append(m, "```\n\nafter\n", 12);
	assert_int_equal(textmsg_count(m), 54);
	textmsg_free(m);
}

/* Nine top-level nodes in one parse, the ninth a paragraph that a table
 * took over (cmark-gfm puts it at line 0): the grouping grows its array
 * there. */
static void test_table_after_many_blocks(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	for (int i = 0; i < 8; i++)
		buf_printf(&b, "paragraph %d\n\n", i);
	buf_adds(&b, "intro\n| a | b |\n|---|---|\n| 1 | 2 |\n");
	struct textmsg *m = render(TEXTMSG_MARKDOWN, b.p, b.len, 40);
	find_line(m, "paragraph 7");
	find_line(m, "intro");
	find_line(m, "1 \xe2\x94\x82 2");
	check_inert(m, 40);
	textmsg_free(m);
	buf_release(&b);
}

static void test_width_change_equals_fresh_render(void **state)
{
	(void)state;
	for (size_t s = 0; s < NSAMPLES; s++) {
		struct textmsg *m = stream(TEXTMSG_MARKDOWN, samples[s], sample_len[s], 80, 9);
		struct textmsg *p = stream(TEXTMSG_PLAIN, samples[s], sample_len[s], 80, 9);
		static const int widths[] = {23, 61, 5, 80};
		for (size_t w = 0; w < 4; w++) {
			textmsg_set_width(m, widths[w]);
			textmsg_set_width(p, widths[w]);
			struct textmsg *f = render(TEXTMSG_MARKDOWN, samples[s], sample_len[s], widths[w]);
			assert_same_lines(f, m, "markdown width change");
			check_inert(m, widths[w]);
			textmsg_free(f);
			f = render(TEXTMSG_PLAIN, samples[s], sample_len[s], widths[w]);
			assert_same_lines(f, p, "plain width change");
			textmsg_free(f);
		}
		textmsg_free(m);
		textmsg_free(p);
	}
}

static void test_plain_text(void **state)
{
	(void)state;
	static const char in[] = "$ make\r\ncc -o x x.c\tok\n\n  indented line that is long\nlast";
	struct textmsg *m = textmsg_new(TEXTMSG_PLAIN, TS_DIM, 16);
	textmsg_append(m, in, sizeof in - 1);
	static const char *const want[] = {"$ make", "cc -o x x.c", "ok", "", "  indented line",
					   "that is long", "last"};
	assert_int_equal(textmsg_count(m), 7);
	for (size_t i = 0; i < 7; i++) {
		char *t = line_text(m, i);
		assert_string_equal(t, want[i]);
		free(t);
	}
	assert_int_equal(style_at(m, 0, "make"), TS_DIM);
	size_t n;
	const char *src = textmsg_source(m, &n);
	assert_int_equal(n, sizeof in - 1);
	assert_memory_equal(src, in, n);
	textmsg_free(m);
}

/* The code blocks a copy can take: fenced (with its info string, the
 * content exactly), indented, inside a list, and a fence never closed
 * (to the end, as cmark-gfm reads it), in order; inline code and a table
 * cell's code are not blocks. */
static void test_code_blocks_for_copying(void **state)
{
	(void)state;
	const char *md = "Intro with `inline` code.\n\n"
			 "```sh\nexport A=1   # two spaces\n\ncd /tmp\n```\n\n"
			 "| a | b |\n|---|---|\n| `x` | y |\n\n"
			 "    indented\n    code\n\n"
			 "- item\n\n  ```\n  in a list\n  ```\n\n"
			 "```python\nunclosed = True\n";
	struct mdcode *v;
	size_t n = mdcode_blocks(md, strlen(md), &v);
	assert_int_equal(n, 4);
	assert_string_equal(v[0].text, "export A=1   # two spaces\n\ncd /tmp\n");
	assert_string_equal(v[0].info, "sh");
	assert_string_equal(v[1].text, "indented\ncode\n");
	assert_string_equal(v[2].text, "in a list\n");
	assert_string_equal(v[2].info, "");
	assert_string_equal(v[3].text, "unclosed = True\n");
	assert_string_equal(v[3].info, "python");
	mdcode_free(v, n);
	assert_int_equal(mdcode_blocks("no code here, `only inline`", 27, &v), 0);
	assert_null(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer_rendered),
		cmocka_unit_test(test_wide_text_and_tables),
		cmocka_unit_test(test_hostile_markdown_inert),
		cmocka_unit_test(test_streaming_equals_whole),
		cmocka_unit_test(test_every_prefix_streamed_equals_whole),
		cmocka_unit_test(test_closed_blocks_kept),
		cmocka_unit_test(test_table_after_many_blocks),
		cmocka_unit_test(test_width_change_equals_fresh_render),
		cmocka_unit_test(test_plain_text),
		cmocka_unit_test(test_code_blocks_for_copying),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
