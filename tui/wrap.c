/* wrap.c — text made safe, cut into grapheme clusters, measured and laid
 * out into lines (see wrap.h). A paragraph is collected one hard line at a
 * time as an array of graphemes (offset, length, cells, style) over one
 * buffer of sanitised text; at each hard break the graphemes are laid out
 * greedily and the runs of one style become spans. */
#include "tui/wrap.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "base/buf.h"
#include "base/termsafe.h"
#include "base/xalloc.h"

#define CONT_MARK "\xe2\x86\xaa" /* ↪ U+21AA, one cell */
#define MIN_TEXT 8

struct gr {
	uint32_t off; /* into w->text */
	uint32_t len;
	uint16_t style;
	uint8_t cells;
	uint8_t space; /* a plain space (or part of a tab): a break opportunity */
	uint8_t ri;    /* regional indicators seen (a flag is two) */
};

struct wrap {
	struct textlines *out;
	struct wrap_opts o;
	size_t nfirst, nrest; /* marks kept after the width check */
	int firstw, restw;    /* their cells */
	struct buf text;      /* sanitised text of the current hard line */
	struct buf safe;      /* scratch: termsafe output */
	struct gr *g;
	size_t ng, capg;
	utf8proc_int32_t prev_cp, gstate;
	int col;         /* cells since the hard line started, for tabs */
	bool first_done; /* the paragraph's first line is out */
};

struct wrap *wrap_new(void)
{
	struct wrap *w = xcalloc(1, sizeof *w);
	buf_init(&w->text);
	buf_init(&w->safe);
	return w;
}

void wrap_free(struct wrap *w)
{
	if (!w)
		return;
	buf_release(&w->text);
	buf_release(&w->safe);
	free(w->g);
	free(w);
}

/* The cells of one code point as it adds to the grapheme g. */
static void gr_add_cp(struct gr *g, utf8proc_int32_t cp)
{
	int cw = utf8proc_charwidth(cp);
	if (cw > 2)
		cw = 2;
	if (cw > g->cells)
		g->cells = (uint8_t)cw;
	if (cp == 0xfe0f && g->cells == 1)
		g->cells = 2; /* emoji presentation: terminals draw two cells */
	if (cp >= 0x1f1e6 && cp <= 0x1f1ff && ++g->ri == 2)
		g->cells = 2; /* a flag */
}

static struct gr *gr_new(struct wrap *w, size_t off, unsigned style, bool space)
{
	if (w->ng == w->capg) {
		w->capg = w->capg ? 2 * w->capg : 64;
		w->g = xreallocarray(w->g, w->capg, sizeof *w->g);
	}
	struct gr *g = &w->g[w->ng++];
	memset(g, 0, sizeof *g);
	g->off = (uint32_t)off;
	g->style = (uint16_t)style;
	g->space = space;
	return g;
}

static int mark_cells(const char *s)
{
	return wrap_cells(s, strlen(s));
}

/* How many of the n marks fit in limit cells; *cells their width. */
static size_t marks_fit(const struct wrap_mark *m, size_t n, int limit, int *cells)
{
	int sum = 0;
	size_t k = 0;
	for (; k < n; k++) {
		int c = mark_cells(m[k].text);
		if (sum + c > limit)
			break;
		sum += c;
	}
	*cells = sum;
	return k;
}

void wrap_begin(struct wrap *w, struct textlines *out, const struct wrap_opts *o)
{
	w->out = out;
	w->o = *o;
	if (w->o.width < 2)
		w->o.width = 2;
	int width = w->o.width;
	int limit = width > 2 * MIN_TEXT ? width - MIN_TEXT : width / 2;
	if (width - limit < 2)
		limit = width - 2;
	w->nfirst = marks_fit(o->first, o->nfirst, limit, &w->firstw);
	w->nrest = marks_fit(o->rest, o->nrest, limit, &w->restw);
	w->first_done = false;
	buf_reset(&w->text);
	w->ng = 0;
	w->prev_cp = -1;
	w->gstate = 0;
	w->col = 0;
}

/* Appends graphemes[a..b) as spans, one per run of a style. */
static void emit_range(struct wrap *w, size_t a, size_t b)
{
	while (a < b) {
		size_t e = a;
		int cells = 0;
		uint16_t st = w->g[a].style;
		while (e < b && w->g[e].style == st)
			cells += w->g[e++].cells;
		size_t off = w->g[a].off, end = w->g[e - 1].off + w->g[e - 1].len;
		textlines_add(w->out, w->text.p + off, end - off, cells, st);
		a = e;
	}
}

static void emit_prefix(struct wrap *w)
{
	const struct wrap_mark *m = w->first_done ? w->o.rest : w->o.first;
	size_t n = w->first_done ? w->nrest : w->nfirst;
	for (size_t k = 0; k < n; k++)
		textlines_add(w->out, m[k].text, strlen(m[k].text), mark_cells(m[k].text),
			      m[k].style);
}

static void pad(struct wrap *w, int cells)
{
	static const char spaces[] = "                                ";
	while (cells > 0) {
		int k = cells < (int)sizeof spaces - 1 ? cells : (int)sizeof spaces - 1;
		textlines_add(w->out, spaces, (size_t)k, k, w->o.fill);
		cells -= k;
	}
}

/* One output line holding graphemes [a, b); cont: a code line's
 * continuation, after the mark. */
static void emit_line(struct wrap *w, size_t a, size_t b, bool cont, int avail)
{
	emit_prefix(w);
	int used = 0;
	if (cont) {
		textlines_add(w->out, CONT_MARK, sizeof CONT_MARK - 1, 1, w->o.fill | TS_MARK);
		used = 1;
	}
	for (size_t k = a; k < b; k++)
		used += w->g[k].cells;
	emit_range(w, a, b);
	if (w->o.mode == WRAP_CODE)
		pad(w, avail - used);
	textlines_end_line(w->out);
	w->first_done = true;
}

/* Lays out the graphemes of the current hard line. */
static void flush_hard_line(struct wrap *w)
{
	bool code = w->o.mode == WRAP_CODE;
	size_t i = 0, n = w->ng;
	bool cont = false;
	for (;;) {
		int avail = w->o.width - (w->first_done ? w->restw : w->firstw);
		/* avail >= 2 (wrap_begin keeps it so): a wide grapheme always
		 * fits an empty line; where it would not fit after the mark, the
		 * mark is left out rather than a cell split. */
		if (cont && i < n && avail - 1 < w->g[i].cells)
			cont = false;
		int room = avail - (cont ? 1 : 0);
		size_t j = i, brk = SIZE_MAX;
		int used = 0;
		while (j < n && used + w->g[j].cells <= room) {
			if (!code && w->g[j].space && j > i && !w->g[j - 1].space)
				brk = j;
			used += w->g[j++].cells;
		}
		size_t end = j, next = j;
		if (j < n && !code) {
			if (w->g[j].space)
				end = j;
			else if (brk != SIZE_MAX)
				end = next = brk;
		}
		if (!code)
			while (end > i && w->g[end - 1].space)
				end--;
		emit_line(w, i, end, cont, avail);
		if (j >= n)
			break;
		i = next;
		if (!code) {
			while (i < n && w->g[i].space)
				i++;
			if (i >= n)
				break;
		} else {
			cont = true;
		}
	}
	w->ng = 0;
	buf_reset(&w->text);
	w->prev_cp = -1;
	w->gstate = 0;
	w->col = 0;
}

/* Adds the sanitised text s[0..n), which holds no newline. */
static void add_safe(struct wrap *w, const char *s, size_t n, unsigned style)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	int tab = w->o.mode == WRAP_CODE ? 4 : 8;
	size_t i = 0;
	while (i < n) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t r = utf8proc_iterate(p + i, (utf8proc_ssize_t)(n - i), &cp);
		if (r <= 0) { /* cannot happen after termsafe; keep going */
			r = 1;
			cp = 0xfffd;
		}
		if (cp == '\t') {
			int k = tab - w->col % tab;
			for (int t = 0; t < k; t++) {
				size_t off = w->text.len;
				buf_addc(&w->text, ' ');
				struct gr *g = gr_new(w, off, style, true);
				g->len = 1;
				g->cells = 1;
			}
			w->col += k;
			/* What follows is measured after a space, as wrap_cells will
			 * measure the line's text: a lone combining mark or emoji
			 * modifier joins the tab's last space. */
			w->prev_cp = ' ';
			w->gstate = 0;
			i += (size_t)r;
			continue;
		}
		if (cp >= 0x20 && cp < 0x7f && (w->prev_cp < 0 || w->prev_cp < 0x7f)) {
			/* Between two printable ASCII characters there is always a
			 * grapheme break, and the width is 1: no table lookups.
			 * State START is what utf8proc would resume from. */
			struct gr *g = gr_new(w, w->text.len, style, cp == ' ');
			buf_addc(&w->text, (char)cp);
			g->len = 1;
			g->cells = 1;
			w->col++;
			w->prev_cp = cp;
			w->gstate = 0;
			i++;
			continue;
		}
		bool join = w->prev_cp >= 0 && w->ng > 0 &&
			    !utf8proc_grapheme_break_stateful(w->prev_cp, cp, &w->gstate);
		size_t off = w->text.len;
		buf_add(&w->text, s + i, (size_t)r);
		struct gr *g;
		if (join) {
			g = &w->g[w->ng - 1];
			g->len += (uint32_t)r;
			g->space = 0;
			w->col -= g->cells;
		} else {
			g = gr_new(w, off, style, cp == ' ');
			g->len = (uint32_t)r;
		}
		gr_add_cp(g, cp);
		w->col += g->cells;
		w->prev_cp = cp;
		i += (size_t)r;
	}
}

void wrap_add(struct wrap *w, const char *s, size_t n, unsigned style)
{
	while (n > 0) {
		const char *nl = memchr(s, '\n', n);
		size_t k = nl ? (size_t)(nl - s) : n;
		buf_reset(&w->safe);
		termsafe_add(&w->safe, s, k, TERMSAFE_TEXT);
		add_safe(w, w->safe.p, w->safe.len, style);
		if (!nl)
			break;
		flush_hard_line(w);
		s += k + 1;
		n -= k + 1;
	}
}

void wrap_end(struct wrap *w)
{
	flush_hard_line(w);
	w->out = NULL;
}

int wrap_cells(const char *s, size_t n)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	utf8proc_int32_t prev = -1, state = 0;
	struct gr g = {0};
	int sum = 0;
	size_t i = 0;
	while (i < n) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t r = utf8proc_iterate(p + i, (utf8proc_ssize_t)(n - i), &cp);
		if (r <= 0)
			r = 1, cp = 0xfffd;
		if (prev < 0 || utf8proc_grapheme_break_stateful(prev, cp, &state)) {
			sum += g.cells;
			memset(&g, 0, sizeof g);
		}
		gr_add_cp(&g, cp);
		prev = cp;
		i += (size_t)r;
	}
	return sum + g.cells;
}
