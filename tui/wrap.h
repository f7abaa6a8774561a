/* wrap.h — text made safe, measured and wrapped into display lines.
 *
 * Every piece of text from a model, a tool or a log reaches a line through
 * wrap_add, which passes it through base/termsafe (no control character or
 * escape sequence survives; ESC shows as ^[) and measures it with utf8proc:
 * a grapheme cluster is never split, its width is that of its widest code
 * point (CJK and emoji 2, combining marks 0; an emoji presentation selector
 * or a flag pair makes 2), and no cell is ever split: a wide character that
 * does not fit moves to the next line.
 *
 * Calling sequence, one paragraph at a time:
 *	wrap_begin(w, out, &opts);
 *	wrap_add(w, text, n, style); ...   ('\n' in text is a hard break)
 *	wrap_end(w);                       (the lines are appended to out) */
#ifndef CAIRN_WRAP_H
#define CAIRN_WRAP_H

#include <stddef.h>

#include "tui/textlines.h"

/* A width with no limit in practice: one line per hard line. */
#define WRAP_NOLIMIT (1 << 28)

enum wrap_mode {
	/* Prose: break at spaces (the spaces at a break are dropped, leading
	 * spaces of a hard line kept); a word wider than the line is broken
	 * between graphemes. Tabs go to the next multiple of 8. */
	WRAP_WORDS,
	/* Verbatim (code): nothing is dropped; a line wider than the width is
	 * cut between graphemes and goes on after a continuation mark (↪);
	 * every line is padded with spaces to the width, in the fill style, so
	 * a background forms a rectangle. Tabs go to the next multiple of 4. */
	WRAP_CODE,
};

/* A piece of a line prefix (quote bar, bullet, hanging indent): constant
 * text of the renderer's own, shown with style. */
struct wrap_mark {
	const char *text;
	unsigned style;
};

struct wrap_opts {
	int width; /* in cells, prefix included; below 2 counts as 2 */
	enum wrap_mode mode;
	/* The first line of the paragraph starts with first[0..nfirst), every
	 * other line with rest[0..nrest). Marks that would leave less than 8
	 * cells (half the width on narrow screens) for text are left out, the
	 * innermost first. Borrowed until wrap_end. */
	const struct wrap_mark *first, *rest;
	size_t nfirst, nrest;
	unsigned fill; /* WRAP_CODE: style of the padding and the mark */
};

struct wrap;

/* A new wrapper (reusable for any number of paragraphs); the caller frees
 * it with wrap_free, which accepts NULL. */
struct wrap *wrap_new(void);
void wrap_free(struct wrap *w);

/* Starts a paragraph whose lines go to out (borrowed until wrap_end). */
void wrap_begin(struct wrap *w, struct textlines *out, const struct wrap_opts *o);
/* Adds s[0..n) (any bytes) in style; it is made safe here. */
void wrap_add(struct wrap *w, const char *s, size_t n, unsigned style);
/* Lays out what was added since wrap_begin and appends the lines to out;
 * a paragraph with nothing added gives one line holding the first prefix. */
void wrap_end(struct wrap *w);

/* The cells that safe text s[0..n) (no control characters) takes on one
 * line, measured as wrap measures. */
int wrap_cells(const char *s, size_t n);

#endif
