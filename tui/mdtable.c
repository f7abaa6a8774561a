/* mdtable.c — a GFM table laid out in columns by display width. Each cell
 * is rendered on one line first, to learn its width; when the columns and
 * their " │ " separators fit the width the table is a grid (a header, a
 * rule, the rows, each cell aligned as the delimiter row says), otherwise
 * each row becomes "header: value" lines, wrapped, with an empty line
 * between rows, which stays readable at any width. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmark-gfm-core-extensions.h>

#include "base/xalloc.h"
#include "tui/mdrender_int.h"

#define SEP " \xe2\x94\x82 "                 /* " │ " */
#define CROSS "\xe2\x94\x80\xe2\x94\xbc\xe2\x94\x80" /* "─┼─" */
#define RULE "\xe2\x94\x80"                  /* ─ */

struct table {
	size_t rows, cols;
	struct textlines *cell; /* one line per cell, row-major */
	int *colw;
	uint8_t *align;      /* per column: 'l', 'c', 'r' or 0 */
	cmark_node **cnodes; /* the cell nodes, row-major; NULL: missing */
};

static void measure(struct mdrender *r, struct table *t, cmark_node *table, unsigned style)
{
	for (cmark_node *row = cmark_node_first_child(table); row; row = cmark_node_next(row))
		t->rows++;
	t->cols = cmark_gfm_extensions_get_table_columns(table);
	t->colw = xcalloc(t->cols ? t->cols : 1, sizeof *t->colw);
	t->cnodes = xcalloc(t->rows * t->cols + 1, sizeof *t->cnodes);
	t->align = cmark_gfm_extensions_get_table_alignments(table);
	t->cell = textlines_new();
	size_t i = 0;
	for (cmark_node *row = cmark_node_first_child(table); row; row = cmark_node_next(row), i++) {
		bool head = cmark_gfm_extensions_get_table_row_is_header(row);
		cmark_node *c = cmark_node_first_child(row);
		for (size_t j = 0; j < t->cols; j++) {
			struct wrap_opts o = {WRAP_NOLIMIT, WRAP_WORDS, NULL, NULL, 0, 0, 0};
			struct textlines *one = textlines_new();
			wrap_begin(r->cellwrap, one, &o);
			if (c)
				mdrender_inlines(r->cellwrap, c, style | (head ? TS_BOLD : 0));
			wrap_end(r->cellwrap);
			/* A cell is one line; a hard break in it would be a second. */
			textlines_add_line(t->cell, one, 0, 0);
			textlines_end_line(t->cell);
			textlines_free(one);
			struct tline l = textlines_get(t->cell, i * t->cols + j);
			if (l.cells > t->colw[j])
				t->colw[j] = l.cells;
			t->cnodes[i * t->cols + j] = c;
			if (c)
				c = cmark_node_next(c);
		}
	}
}

static void spaces(struct wrap *w, int n, unsigned style)
{
	while (n-- > 0)
		wrap_add(w, " ", 1, style);
}

/* Adds the spans of line i of tl to w (they are safe already: wrap
 * measures them again and changes nothing). */
static void add_spans(struct wrap *w, const struct textlines *tl, size_t i)
{
	struct tline l = textlines_get(tl, i);
	for (size_t k = 0; k < l.n; k++)
		wrap_add(w, l.text + l.spans[k].off, l.spans[k].len, l.spans[k].style);
}

static void grid(struct mdrender *r, const struct table *t, const struct mdleaf *leaf)
{
	unsigned mark = TS_MARK | TS_DIM | leaf->style;
	for (size_t i = 0; i < t->rows; i++) {
		if (i == 1) { /* the rule under the header */
			for (size_t j = 0; j < t->cols; j++) {
				if (j)
					wrap_add(r->wrap, CROSS, sizeof CROSS - 1, mark);
				for (int c = 0; c < t->colw[j]; c++)
					wrap_add(r->wrap, RULE, sizeof RULE - 1, mark);
			}
			wrap_add(r->wrap, "\n", 1, leaf->style);
		}
		for (size_t j = 0; j < t->cols; j++) {
			if (j)
				wrap_add(r->wrap, SEP, sizeof SEP - 1, mark);
			struct tline l = textlines_get(t->cell, i * t->cols + j);
			int gap = t->colw[j] - l.cells;
			int before = t->align && t->align[j] == 'r' ? gap
				     : t->align && t->align[j] == 'c' ? gap / 2
									: 0;
			spaces(r->wrap, before, leaf->style);
			add_spans(r->wrap, t->cell, i * t->cols + j);
			spaces(r->wrap, gap - before, leaf->style);
		}
		if (i + 1 < t->rows)
			wrap_add(r->wrap, "\n", 1, leaf->style);
	}
}

/* Too wide for a grid: "header: value" per cell, rows apart. */
static void records(struct mdrender *r, const struct table *t, const struct mdleaf *leaf)
{
	for (size_t i = 1; i < t->rows; i++) {
		if (i > 1)
			wrap_add(r->wrap, "\n", 1, leaf->style);
		for (size_t j = 0; j < t->cols; j++) {
			add_spans(r->wrap, t->cell, j);
			wrap_add(r->wrap, ": ", 2, leaf->style | TS_BOLD);
			if (t->cnodes[i * t->cols + j])
				mdrender_inlines(r->wrap, t->cnodes[i * t->cols + j], leaf->style);
			if (j + 1 < t->cols || i + 1 < t->rows)
				wrap_add(r->wrap, "\n", 1, leaf->style);
		}
	}
	if (t->rows == 1) /* a header alone */
		for (size_t j = 0; j < t->cols; j++) {
			add_spans(r->wrap, t->cell, j);
			if (j + 1 < t->cols)
				wrap_add(r->wrap, "\n", 1, leaf->style);
		}
}

void mdtable_render(struct mdrender *r, cmark_node *table, const struct mdleaf *leaf)
{
	struct table t = {0};
	measure(r, &t, table, leaf->style);
	int total = 0, prefix = 0;
	for (size_t j = 0; j < t.cols; j++)
		total += t.colw[j] + (j ? 3 : 0);
	for (size_t k = 0; k < leaf->nfirst || k < leaf->nrest; k++) {
		int a = k < leaf->nfirst ? wrap_cells(leaf->first[k].text, strlen(leaf->first[k].text)) : 0;
		int b = k < leaf->nrest ? wrap_cells(leaf->rest[k].text, strlen(leaf->rest[k].text)) : 0;
		prefix += a > b ? a : b;
	}
	struct wrap_opts o = {leaf->width, WRAP_WORDS, leaf->first, leaf->rest,
			      leaf->nfirst, leaf->nrest, 0};
	wrap_begin(r->wrap, leaf->out, &o);
	if (t.rows && total <= leaf->width - prefix)
		grid(r, &t, leaf);
	else
		records(r, &t, leaf);
	wrap_end(r->wrap);
	textlines_free(t.cell);
	free(t.colw);
	free(t.cnodes);
}
