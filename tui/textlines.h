/* textlines.h — display lines made of styled spans, the renderer's output.
 *
 * A line is a sequence of spans; a span is text (already made safe for the
 * terminal and measured in cells) and a style. The screen maps each style
 * to terminal attributes and draws the spans one after another; nothing in
 * a line is wider than the width it was wrapped to. Text only gets in
 * through tui/wrap.c (which sanitises and measures) or as the renderer's
 * own constant marks (bullets, rules, table borders). */
#ifndef CAIRN_TEXTLINES_H
#define CAIRN_TEXTLINES_H

#include <stddef.h>
#include <stdint.h>

/* Style bits of a span; a heading also carries its level (1-6) in
 * TS_HEADING_MASK: TS_HEADING(level) to set, TS_HEADING_LEVEL(style) to read
 * (0: not a heading). */
enum textlines_style {
	TS_NORMAL = 0,
	TS_BOLD = 1 << 0,
	TS_ITALIC = 1 << 1,
	TS_CODE = 1 << 2,      /* inline code span */
	TS_CODEBLOCK = 1 << 3, /* fenced or indented code: its own background */
	TS_QUOTE = 1 << 4,     /* inside a block quote */
	TS_LINK = 1 << 5,      /* the text of a link */
	TS_URL = 1 << 6,       /* a link's target, shown after its text */
	TS_DIM = 1 << 7,
	TS_STRIKE = 1 << 8,
	TS_MARK = 1 << 9, /* the renderer's decoration: bullets, quote bars,
			   * rules, table borders, continuation marks */
};
#define TS_HEADING_SHIFT 12
#define TS_HEADING_MASK (7u << TS_HEADING_SHIFT)
#define TS_HEADING(level) ((unsigned)(level) << TS_HEADING_SHIFT)
#define TS_HEADING_LEVEL(style) (((style) & TS_HEADING_MASK) >> TS_HEADING_SHIFT)

/* One span: its text is tline.text + off, len bytes (no NUL inside, no
 * control character), cells terminal cells wide. Read-only. */
struct tspan {
	uint32_t off;
	uint32_t len;
	uint32_t cells;
	uint16_t style;
};

/* A view of one line; every pointer borrows from the textlines (or the
 * message) it came from and stays valid until that is next changed. */
struct tline {
	const struct tspan *spans;
	size_t n;         /* number of spans; 0 for an empty line */
	const char *text; /* base of the spans' text */
	int cells;        /* sum of the spans' cells */
};

struct textlines;
struct buf;

/* ---- lifecycle ---------------------------------------------------------- */

/* A new empty set of lines; the caller frees it with textlines_free. */
struct textlines *textlines_new(void);
/* Frees tl and everything in it; NULL is accepted. */
void textlines_free(struct textlines *tl);
/* Removes every line, keeping the storage for reuse. */
void textlines_clear(struct textlines *tl);

/* ---- reading ------------------------------------------------------------ */

size_t textlines_count(const struct textlines *tl);
/* Line i (i < count) as a view that borrows from tl. */
struct tline textlines_get(const struct textlines *tl, size_t i);
/* Appends the text of line i (spans concatenated, no style) to out; a
 * helper for tests, search and copying. */
void textlines_plain(const struct textlines *tl, size_t i, struct buf *out);
/* The same for a view. */
void textlines_plain_view(const struct tline *l, struct buf *out);

/* ---- writing (tui/wrap.c and the renderers) ------------------------------ */

/* Appends a span to the line being built (started implicitly). The text
 * must be safe and measured already: only wrap.c and constant marks call
 * this. A span with the style of the previous one is merged into it. */
void textlines_add(struct textlines *tl, const char *s, size_t n, int cells, unsigned style);
/* Keeps the first n lines (n <= count) and drops the rest. */
void textlines_truncate(struct textlines *tl, size_t n);
/* Ends the line being built (an empty one when nothing was added). */
void textlines_end_line(struct textlines *tl);
/* Appends every line of src to tl, each span's style ORed with add_style. */
void textlines_append(struct textlines *tl, const struct textlines *src, unsigned add_style);
/* Appends the spans of src's line i to the line being built in tl. */
void textlines_add_line(struct textlines *tl, const struct textlines *src, size_t i,
			unsigned add_style);

#endif
