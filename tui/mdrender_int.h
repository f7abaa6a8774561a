/* mdrender_int.h — what mdrender.c shares with mdtable.c: the renderer's
 * state while it lays out one leaf block. */
#ifndef CAIRN_MDRENDER_INT_H
#define CAIRN_MDRENDER_INT_H

#include <cmark-gfm.h>

#include "tui/textlines.h"
#include "tui/wrap.h"

struct mdrender {
	struct wrap *wrap;
	struct wrap *cellwrap; /* table cells, measured while a row is built */
};

/* The line prefix in effect for a leaf block and where it goes. */
struct mdleaf {
	struct textlines *out;
	int width;
	const struct wrap_mark *first, *rest;
	size_t nfirst, nrest;
	unsigned style; /* TS_QUOTE inside a quote */
};

/* wrap_add's of the inline content of node (a paragraph, heading or table
 * cell) into w, which the caller began, in base style. */
void mdrender_inlines(struct wrap *w, cmark_node *node, unsigned style);

/* Lays out the GFM table node under the prefix of leaf. */
void mdtable_render(struct mdrender *r, cmark_node *table, const struct mdleaf *leaf);

#endif
