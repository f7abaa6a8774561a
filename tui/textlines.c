/* textlines.c — display lines as styled spans (see textlines.h). All text
 * lives in one buffer, spans are offsets into it and lines are ranges of
 * the span array, so a set of lines is three allocations however long. */
#include "tui/textlines.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"

struct lrange {
	size_t first; /* index of the line's first span */
	size_t n;
	int cells;
};

struct textlines {
	struct buf text;
	struct tspan *spans;
	size_t nspans, capspans;
	struct lrange *lines;
	size_t nlines, caplines;
	size_t open_first; /* first span of the line being built */
	int open_cells;
};

struct textlines *textlines_new(void)
{
	struct textlines *tl = xcalloc(1, sizeof *tl);
	buf_init(&tl->text);
	return tl;
}

void textlines_free(struct textlines *tl)
{
	if (!tl)
		return;
	buf_release(&tl->text);
	free(tl->spans);
	free(tl->lines);
	free(tl);
}

void textlines_clear(struct textlines *tl)
{
	buf_reset(&tl->text);
	tl->nspans = tl->nlines = tl->open_first = 0;
	tl->open_cells = 0;
}

size_t textlines_count(const struct textlines *tl)
{
	return tl->nlines;
}

struct tline textlines_get(const struct textlines *tl, size_t i)
{
	const struct lrange *r = &tl->lines[i];
	/* Lines that are all empty have no span array at all. */
	struct tline l = {tl->spans ? tl->spans + r->first : NULL, r->n, tl->text.p, r->cells};
	return l;
}

void textlines_plain_view(const struct tline *l, struct buf *out)
{
	for (size_t k = 0; k < l->n; k++)
		buf_add(out, l->text + l->spans[k].off, l->spans[k].len);
}

void textlines_plain(const struct textlines *tl, size_t i, struct buf *out)
{
	struct tline l = textlines_get(tl, i);
	textlines_plain_view(&l, out);
}

void textlines_add(struct textlines *tl, const char *s, size_t n, int cells, unsigned style)
{
	if (n == 0)
		return;
	tl->open_cells += cells;
	if (tl->nspans > tl->open_first) {
		struct tspan *last = &tl->spans[tl->nspans - 1];
		if (last->style == style && last->off + last->len == tl->text.len) {
			buf_add(&tl->text, s, n);
			last->len += (uint32_t)n;
			last->cells += (uint32_t)cells;
			return;
		}
	}
	if (tl->nspans == tl->capspans) {
		tl->capspans = tl->capspans ? 2 * tl->capspans : 16;
		tl->spans = xreallocarray(tl->spans, tl->capspans, sizeof *tl->spans);
	}
	struct tspan *sp = &tl->spans[tl->nspans++];
	sp->off = (uint32_t)tl->text.len;
	sp->len = (uint32_t)n;
	sp->cells = (uint32_t)cells;
	sp->style = (uint16_t)style;
	buf_add(&tl->text, s, n);
}

void textlines_truncate(struct textlines *tl, size_t n)
{
	if (n >= tl->nlines)
		return;
	tl->nspans = tl->lines[n].first;
	tl->text.len = tl->nspans ? tl->spans[tl->nspans - 1].off + tl->spans[tl->nspans - 1].len : 0;
	if (tl->text.p)
		tl->text.p[tl->text.len] = '\0';
	tl->nlines = n;
	tl->open_first = tl->nspans;
	tl->open_cells = 0;
}

void textlines_end_line(struct textlines *tl)
{
	if (tl->nlines == tl->caplines) {
		tl->caplines = tl->caplines ? 2 * tl->caplines : 16;
		tl->lines = xreallocarray(tl->lines, tl->caplines, sizeof *tl->lines);
	}
	struct lrange *r = &tl->lines[tl->nlines++];
	r->first = tl->open_first;
	r->n = tl->nspans - tl->open_first;
	r->cells = tl->open_cells;
	tl->open_first = tl->nspans;
	tl->open_cells = 0;
}

void textlines_add_line(struct textlines *tl, const struct textlines *src, size_t i,
			unsigned add_style)
{
	struct tline l = textlines_get(src, i);
	for (size_t k = 0; k < l.n; k++)
		textlines_add(tl, l.text + l.spans[k].off, l.spans[k].len, (int)l.spans[k].cells,
			      l.spans[k].style | add_style);
}

void textlines_append(struct textlines *tl, const struct textlines *src, unsigned add_style)
{
	for (size_t i = 0; i < src->nlines; i++) {
		textlines_add_line(tl, src, i, add_style);
		textlines_end_line(tl);
	}
}
