/* composer_layout.c — the composer's text wrapped into visual rows, the
 * cursor's place on them, and Up/Down, which move by those rows. Rows are
 * greedy: each takes clusters while they fit, so an edit changes the rows
 * of its own line only, and each line keeps its row starts for the width
 * it was laid out at. */
#include "tui/composer_int.h"

#include "base/xalloc.h"
#include "tui/grapheme.h"

#include <stdlib.h>
#include <string.h>

/* The cells of the cluster s[0..n) at column col of a row width wide (0: no
 * limit); a tab stops at the row's end. */
static int cells_at(const char *s, size_t n, int col, int width)
{
	int w = grapheme_cells(s, n, col);
	if (n == 1 && s[0] == '\t' && width > 0) {
		if (w > width - col)
			w = width - col;
		if (w < 1)
			w = 1;
	}
	return w;
}

static void push_row(struct cline *l, size_t off)
{
	if (l->n_rows == l->rows_cap) {
		l->rows_cap = l->rows_cap ? 2 * l->rows_cap : 4;
		l->rows = xreallocarray(l->rows, l->rows_cap, sizeof *l->rows);
	}
	l->rows[l->n_rows++] = off;
}

void composer_line_rows(struct composer *c, struct cline *l, int width)
{
	(void)c;
	if (l->rows_width == width)
		return;
	l->n_rows = 0;
	l->rows_width = width;
	push_row(l, 0);
	if (width <= 0)
		return;
	size_t off = 0;
	int col = 0;
	while (off < l->len) {
		size_t g = grapheme_next(l->p + off, l->len - off);
		int w = cells_at(l->p + off, g, col, width);
		if (col > 0 && col + w > width) {
			push_row(l, off);
			col = 0;
			w = cells_at(l->p + off, g, col, width);
		}
		col += w;
		off += g;
	}
	/* a full last row: the cursor after it goes on a row of its own */
	if (col >= width)
		push_row(l, l->len);
}

static size_t row_end(const struct cline *l, size_t r)
{
	return r + 1 < l->n_rows ? l->rows[r + 1] : l->len;
}

/* The row of line l that holds byte offset o. */
static size_t row_of(const struct cline *l, size_t o)
{
	size_t lo = 0, hi = l->n_rows; /* the last row starting at or before o */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->rows[mid] <= o)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The column of offset o in row r of line l. */
static int col_of(const struct cline *l, size_t r, size_t o, int width)
{
	int col = 0;
	for (size_t off = l->rows[r]; off < o;) {
		size_t g = grapheme_next(l->p + off, l->len - off);
		col += cells_at(l->p + off, g, col, width);
		off += g;
	}
	return col;
}

/* The offset in row r of line l closest to column goal without passing it;
 * on a row that wraps, before its last cluster (its end is the next row's
 * start). */
static size_t offset_at(const struct cline *l, size_t r, int goal, int width)
{
	size_t end = row_end(l, r);
	bool last = r + 1 == l->n_rows;
	int col = 0;
	size_t off = l->rows[r];
	while (off < end) {
		size_t g = grapheme_next(l->p + off, l->len - off);
		int w = cells_at(l->p + off, g, col, width);
		if (col + w > goal || (!last && off + g >= end))
			break;
		col += w;
		off += g;
	}
	return off;
}

static void goto_row(struct composer *c, size_t line, size_t r)
{
	struct cline *l = &c->lines[line];
	composer_line_rows(c, l, c->width);
	c->cl = line;
	c->co = offset_at(l, r, c->goal, c->width);
}

/* Start a vertical move: the goal column is set on the first of a run. */
static struct cline *vertical_begin(struct composer *c, size_t *r)
{
	struct cline *l = &c->lines[c->cl];
	composer_line_rows(c, l, c->width);
	*r = row_of(l, c->co);
	if (c->goal < 0)
		c->goal = col_of(l, *r, c->co, c->width);
	c->killing = false;
	return l;
}

bool composer_up(struct composer *c)
{
	size_t r;
	vertical_begin(c, &r);
	if (r > 0) {
		goto_row(c, c->cl, r - 1);
	} else if (c->cl > 0) {
		struct cline *p = &c->lines[c->cl - 1];
		composer_line_rows(c, p, c->width);
		goto_row(c, c->cl - 1, p->n_rows - 1);
	} else if (c->hpos > 0) {
		composer_history_show(c, c->hpos - 1, false);
	} else {
		return false;
	}
	return true;
}

bool composer_down(struct composer *c)
{
	size_t r;
	struct cline *l = vertical_begin(c, &r);
	if (r + 1 < l->n_rows)
		goto_row(c, c->cl, r + 1);
	else if (c->cl + 1 < c->n_lines)
		goto_row(c, c->cl + 1, 0);
	else if (c->hpos < c->n_hist)
		composer_history_show(c, c->hpos + 1, true);
	else
		return false;
	return true;
}

void composer_layout(struct composer *c, int width, int height, struct composer_row *rows,
		     struct composer_view *v)
{
	if (width < 1)
		width = 1;
	if (height < 1)
		height = 1;
	c->width = width;
	size_t total = 0, cursor = 0;
	for (size_t i = 0; i < c->n_lines; i++) {
		struct cline *l = &c->lines[i];
		composer_line_rows(c, l, width);
		if (i == c->cl)
			cursor = total + row_of(l, c->co);
		total += l->n_rows;
	}
	size_t h = (size_t)height;
	if (c->top > cursor)
		c->top = cursor;
	if (cursor >= c->top + h)
		c->top = cursor - h + 1;
	if (c->top + h > total)
		c->top = total > h ? total - h : 0;
	v->rows = total;
	v->top = c->top;
	v->shown = total - c->top < h ? total - c->top : h;
	v->cursor_y = cursor - c->top;
	const struct cline *cl = &c->lines[c->cl];
	v->cursor_x = col_of(cl, row_of(cl, c->co), c->co, width);

	/* the rows' text; pointers are set once the buffer stops moving */
	buf_reset(&c->show);
	size_t line = 0, seen = 0;
	while (seen + c->lines[line].n_rows <= c->top)
		seen += c->lines[line++].n_rows;
	size_t r = c->top - seen;
	size_t *starts = xcalloc(v->shown + 1, sizeof *starts);
	for (size_t k = 0; k < v->shown; k++) {
		const struct cline *l = &c->lines[line];
		starts[k] = c->show.len;
		int col = 0;
		size_t end = row_end(l, r);
		for (size_t off = l->rows[r]; off < end;) {
			size_t g = grapheme_next(l->p + off, l->len - off);
			if (l->p[off] == '\t') {
				int w = cells_at(l->p + off, g, col, width);
				for (int s = 0; s < w; s++)
					buf_addc(&c->show, ' ');
				col += w;
			} else {
				col += grapheme_show(&c->show, l->p + off, g, col);
			}
			off += g;
		}
		rows[k].cells = col;
		rows[k].wrapped = r + 1 < l->n_rows;
		if (++r == l->n_rows)
			line++, r = 0;
	}
	starts[v->shown] = c->show.len;
	buf_adds(&c->show, "");
	for (size_t k = 0; k < v->shown; k++) {
		rows[k].text = c->show.p + starts[k];
		rows[k].len = starts[k + 1] - starts[k];
	}
	free(starts);
}
