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

static void push_row(size_t **rows, size_t *n, size_t *cap, size_t off)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 4;
		*rows = xreallocarray(*rows, *cap, sizeof **rows);
	}
	(*rows)[(*n)++] = off;
}

void composer_line_edited(struct cline *l, size_t at, size_t removed, size_t added)
{
	if (l->rows_width < 0)
		return; /* laid out whole when next needed anyway */
	if (l->dirty == SIZE_MAX) {
		l->dirty = at;
		l->edit_end = at + added;
		l->delta = (ptrdiff_t)added - (ptrdiff_t)removed;
		l->one_edit = true;
	} else {
		l->one_edit = false;
		if (at < l->dirty)
			l->dirty = at;
	}
}

/* The last row of l starting at or before o. */
static size_t row_of(const struct cline *l, size_t o);

void composer_line_rows(struct composer *c, struct cline *l, int width)
{
	(void)c;
	if (l->rows_width == width && l->dirty == SIZE_MAX)
		return;
	size_t *old = l->rows, n_old = l->n_rows;
	size_t *rows = NULL, n = 0, cap = 0;
	size_t k = 0; /* the row laying out starts at */
	bool resync = false;
	if (l->rows_width == width && width > 0) {
		/* Rows before the one holding the byte before the edit are as
		 * they were; the row before that too, but a cluster that shrank
		 * could now fit on it: start there. */
		k = row_of(l, l->dirty > 0 ? l->dirty - 1 : 0);
		if (k > 0)
			k--;
		resync = l->one_edit;
	}
	cap = n_old > k + 4 ? n_old : k + 4;
	rows = xreallocarray(NULL, cap, sizeof *rows);
	if (k > 0)
		memcpy(rows, old, k * sizeof *rows);
	n = k;
	push_row(&rows, &n, &cap, k < n_old ? old[k] : 0);
	size_t off = rows[n - 1], j = k + 1;
	int col = 0;
	bool done = width <= 0;
	while (!done && off < l->len) {
		size_t g = grapheme_next(l->p + off, l->len - off);
		int w = cells_at(l->p + off, g, col, width);
		if (col > 0 && col + w > width) {
			push_row(&rows, &n, &cap, off);
			col = 0;
			w = cells_at(l->p + off, g, col, width);
			if (resync && off >= l->edit_end) {
				/* past the edit, a row starting where an old one did
				 * (shifted) is followed by the old rows */
				while (j < n_old && (ptrdiff_t)old[j] + l->delta < (ptrdiff_t)off)
					j++;
				if (j < n_old && (ptrdiff_t)old[j] + l->delta == (ptrdiff_t)off) {
					for (size_t i = j + 1; i < n_old; i++)
						push_row(&rows, &n, &cap, (size_t)((ptrdiff_t)old[i] + l->delta));
					done = true;
					break;
				}
			}
		}
		col += w;
		off += g;
	}
	/* a full last row: the cursor after it goes on a row of its own */
	if (!done && width > 0 && col >= width)
		push_row(&rows, &n, &cap, l->len);
	free(old);
	l->rows = rows;
	l->n_rows = n;
	l->rows_cap = cap;
	l->rows_width = width;
	l->dirty = SIZE_MAX;
}

static size_t row_end(const struct cline *l, size_t r)
{
	return r + 1 < l->n_rows ? l->rows[r + 1] : l->len;
}

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
