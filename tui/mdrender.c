/* mdrender.c — a cmark-gfm tree walked into display lines (see
 * mdrender.h). Containers (quotes, lists, items) push a line prefix, the
 * first line of an item showing its bullet and the others its hanging
 * indent; each leaf block is laid out through tui/wrap.c under the prefix
 * in effect. Both walks use cmark's iterator, not recursion, so a hostile
 * nesting depth costs heap, not stack. */
#include "tui/mdrender.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm-extension_api.h>

#include "base/xalloc.h"
#include "tui/mdrender_int.h"

/* Prefixes past this depth are not shown (wrap drops them sooner anyway). */
#define MAX_MARKS 32

static const char *const bullets[] = {"\xe2\x80\xa2 ", "\xe2\x97\xa6 ", "\xe2\x96\xaa "}; /* • ◦ ▪ */
#define RULE "\xe2\x94\x80"                                                               /* ─ */
#define QUOTE_BAR "\xe2\x94\x82 "                                                         /* │ */

/* One open container. */
struct box {
	cmark_node *node;
	char first[32], rest[32]; /* its prefix: first line, other lines */
	unsigned mark_style;
	bool pending;         /* its first line is not out yet */
	unsigned saved_style; /* the style before it */
	/* a list: */
	int next_number, number_width, depth;
};

struct walk {
	struct mdrender *r;
	struct textlines *out;
	int width;
	struct box *boxes;
	size_t nbox, capbox;
	unsigned style;
	int list_depth;
	struct wrap_mark first[MAX_MARKS], rest[MAX_MARKS];
};

struct mdrender *mdrender_new(void)
{
	struct mdrender *r = xcalloc(1, sizeof *r);
	r->wrap = wrap_new();
	r->cellwrap = wrap_new();
	return r;
}

void mdrender_free(struct mdrender *r)
{
	if (!r)
		return;
	wrap_free(r->wrap);
	wrap_free(r->cellwrap);
	free(r);
}

cmark_node *mdrender_parse(const char *src, size_t n)
{
	static const char *const exts[] = {"table", "strikethrough", "autolink", "tasklist"};
	cmark_gfm_core_extensions_ensure_registered();
	cmark_parser *p = cmark_parser_new(CMARK_OPT_VALIDATE_UTF8);
	for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
		cmark_syntax_extension *e = cmark_find_syntax_extension(exts[i]);
		if (e)
			cmark_parser_attach_syntax_extension(p, e);
	}
	cmark_parser_feed(p, src, n);
	cmark_node *doc = cmark_parser_finish(p);
	cmark_parser_free(p);
	return doc;
}

static bool is_type(cmark_node *n, const char *name)
{
	const char *t = cmark_node_get_type_string(n);
	return t && strcmp(t, name) == 0;
}

/* ---- inline content --------------------------------------------------- */

/* The text of a link whose only child is text, or NULL. */
static const char *link_text(cmark_node *link)
{
	cmark_node *c = cmark_node_first_child(link);
	if (!c || cmark_node_next(c) || cmark_node_get_type(c) != CMARK_NODE_TEXT)
		return NULL;
	return cmark_node_get_literal(c);
}

/* Whether a link's target adds nothing to its text (autolinks). */
static bool url_shown_by_text(const char *url, const char *text)
{
	if (!text)
		return false;
	static const char *const schemes[] = {"", "mailto:", "http://", "https://"};
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
		size_t k = strlen(schemes[i]);
		if (strncmp(url, schemes[i], k) == 0 && strcmp(url + k, text) == 0)
			return true;
	}
	return false;
}

static void add_str(struct wrap *w, const char *s, unsigned style)
{
	if (s)
		wrap_add(w, s, strlen(s), style);
}

static void show_url(struct wrap *w, cmark_node *n, unsigned style)
{
	const char *url = cmark_node_get_url(n);
	if (!url || !*url || url_shown_by_text(url, link_text(n)))
		return;
	add_str(w, " (", style | TS_DIM);
	add_str(w, url, (style & ~(unsigned)TS_LINK) | TS_URL);
	add_str(w, ")", style | TS_DIM);
}

void mdrender_inlines(struct wrap *w, cmark_node *node, unsigned style)
{
	unsigned *stack = NULL;
	size_t depth = 0, cap = 0;
	cmark_iter *it = cmark_iter_new(node);
	cmark_event_type ev;
	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		cmark_node *n = cmark_iter_get_node(it);
		if (n == node)
			continue;
		cmark_node_type t = cmark_node_get_type(n);
		if (ev == CMARK_EVENT_EXIT) {
			if (t == CMARK_NODE_LINK)
				show_url(w, n, stack[depth - 1]);
			if (t == CMARK_NODE_IMAGE) {
				add_str(w, "]", stack[depth - 1] | TS_DIM);
				show_url(w, n, stack[depth - 1]);
			}
			style = stack[--depth];
			continue;
		}
		switch (t) {
		case CMARK_NODE_TEXT:
		case CMARK_NODE_FOOTNOTE_REFERENCE:
			add_str(w, cmark_node_get_literal(n), style);
			continue;
		case CMARK_NODE_CODE:
			add_str(w, cmark_node_get_literal(n), style | TS_CODE);
			continue;
		case CMARK_NODE_HTML_INLINE:
			add_str(w, cmark_node_get_literal(n), style | TS_DIM);
			continue;
		case CMARK_NODE_SOFTBREAK:
			wrap_add(w, " ", 1, style);
			continue;
		case CMARK_NODE_LINEBREAK:
			wrap_add(w, "\n", 1, style);
			continue;
		default:
			break;
		}
		if (!cmark_node_first_child(n) && t != CMARK_NODE_LINK && t != CMARK_NODE_IMAGE &&
		    !is_type(n, "strikethrough") && t != CMARK_NODE_EMPH && t != CMARK_NODE_STRONG) {
			add_str(w, cmark_node_get_literal(n), style); /* an unknown leaf */
			continue;
		}
		if (depth == cap) {
			cap = cap ? 2 * cap : 16;
			stack = xreallocarray(stack, cap, sizeof *stack);
		}
		stack[depth++] = style;
		if (t == CMARK_NODE_EMPH)
			style |= TS_ITALIC;
		else if (t == CMARK_NODE_STRONG)
			style |= TS_BOLD;
		else if (t == CMARK_NODE_LINK)
			style |= TS_LINK;
		else if (t == CMARK_NODE_IMAGE) {
			add_str(w, "[image: ", style | TS_DIM);
			style |= TS_ITALIC;
		} else if (is_type(n, "strikethrough"))
			style |= TS_STRIKE;
	}
	cmark_iter_free(it);
	free(stack);
}

/* ---- containers and leaves -------------------------------------------- */

/* The prefix for the next leaf: the pending containers show their first
 * line's mark. */
static struct mdleaf leaf_of(struct walk *k)
{
	size_t n = 0;
	for (size_t i = 0; i < k->nbox && n < MAX_MARKS; i++) {
		struct box *b = &k->boxes[i];
		if (!b->first[0] && !b->rest[0])
			continue; /* a list: its items carry the marks */
		k->first[n].text = b->pending ? b->first : b->rest;
		k->first[n].style = b->mark_style;
		k->rest[n].text = b->rest;
		k->rest[n].style = b->mark_style;
		n++;
	}
	struct mdleaf l = {k->out, k->width, k->first, k->rest, n, n, k->style};
	return l;
}

static void leaf_done(struct walk *k)
{
	for (size_t i = 0; i < k->nbox; i++)
		k->boxes[i].pending = false;
}

static void begin(struct walk *k, const struct mdleaf *l, enum wrap_mode mode, unsigned fill)
{
	struct wrap_opts o = {l->width, mode, l->first, l->rest, l->nfirst, l->nrest, fill};
	wrap_begin(k->r->wrap, l->out, &o);
}

/* An empty line inside the containers: only their continuation marks. */
static void blank_line(struct walk *k)
{
	struct mdleaf l = leaf_of(k);
	l.first = l.rest;
	l.nfirst = l.nrest;
	begin(k, &l, WRAP_WORDS, 0);
	wrap_end(k->r->wrap);
}

static bool in_tight_list(cmark_node *n)
{
	cmark_node *p = cmark_node_parent(n);
	if (p && cmark_node_get_type(p) == CMARK_NODE_ITEM)
		p = cmark_node_parent(p);
	return p && cmark_node_get_type(p) == CMARK_NODE_LIST && cmark_node_get_list_tight(p);
}

/* The empty line between a block and the one before it: none in a tight
 * list. */
static void separate(struct walk *k, cmark_node *n)
{
	if (cmark_node_previous(n) && !in_tight_list(n))
		blank_line(k);
}

static struct box *push(struct walk *k, cmark_node *n)
{
	if (k->nbox == k->capbox) {
		k->capbox = k->capbox ? 2 * k->capbox : 16;
		k->boxes = xreallocarray(k->boxes, k->capbox, sizeof *k->boxes);
	}
	struct box *b = &k->boxes[k->nbox++];
	memset(b, 0, sizeof *b);
	b->node = n;
	b->pending = true;
	b->saved_style = k->style;
	return b;
}

static void pop(struct walk *k)
{
	struct box *b = &k->boxes[--k->nbox];
	k->style = b->saved_style;
	if (cmark_node_get_type(b->node) == CMARK_NODE_LIST)
		k->list_depth--;
}

static int digits(int v)
{
	int d = 1;
	for (; v >= 10 || v <= -10; v /= 10)
		d++;
	return v < 0 ? d + 1 : d;
}

static void enter_list(struct walk *k, cmark_node *n)
{
	struct box *b = push(k, n);
	b->pending = false; /* a list has no mark of its own */
	b->depth = k->list_depth++;
	b->next_number = cmark_node_get_list_start(n);
	int items = 0;
	for (cmark_node *c = cmark_node_first_child(n); c; c = cmark_node_next(c))
		items++;
	int last = b->next_number + (items > 0 ? items - 1 : 0);
	int w = digits(last) > digits(b->next_number) ? digits(last) : digits(b->next_number);
	b->number_width = w > 9 ? 9 : w;
}

static void enter_item(struct walk *k, cmark_node *n)
{
	struct box *list = &k->boxes[k->nbox - 1]; /* an item's parent is its list */
	char mark[16];
	if (cmark_node_get_list_type(cmark_node_parent(n)) == CMARK_ORDERED_LIST) {
		char delim = cmark_node_get_list_delim(cmark_node_parent(n)) == CMARK_PAREN_DELIM ? ')' : '.';
		snprintf(mark, sizeof mark, "%*d%c ", list->number_width, list->next_number++, delim);
	} else {
		snprintf(mark, sizeof mark, "%s", bullets[list->depth % 3]);
	}
	struct box *b = push(k, n);
	if (is_type(n, "tasklist"))
		snprintf(b->first, sizeof b->first, "%s[%c] ", mark,
			 cmark_gfm_extensions_get_tasklist_item_checked(n) ? 'x' : ' ');
	else
		snprintf(b->first, sizeof b->first, "%s", mark);
	int cells = wrap_cells(b->first, strlen(b->first));
	memset(b->rest, ' ', (size_t)cells);
	b->rest[cells] = '\0';
	b->mark_style = TS_MARK | k->style;
	if (!cmark_node_first_child(n)) { /* an empty item: its bullet alone */
		struct mdleaf l = leaf_of(k);
		begin(k, &l, WRAP_WORDS, 0);
		wrap_end(k->r->wrap);
		leaf_done(k);
	}
}

static void code_block(struct walk *k, cmark_node *n, unsigned style, unsigned fill)
{
	struct mdleaf l = leaf_of(k);
	const char *info = cmark_node_get_fence_info(n);
	const char *lit = cmark_node_get_literal(n);
	size_t len = lit ? strlen(lit) : 0;
	if (len && lit[len - 1] == '\n')
		len--;
	begin(k, &l, WRAP_CODE, fill);
	if (info && *info) {
		wrap_add(k->r->wrap, info, strlen(info), fill | TS_DIM);
		wrap_add(k->r->wrap, "\n", 1, fill);
	}
	wrap_add(k->r->wrap, lit ? lit : "", len, style);
	wrap_end(k->r->wrap);
}

static void rule(struct walk *k)
{
	struct mdleaf l = leaf_of(k);
	/* As wide as the text can be: WRAP_CODE cuts it at the width (after
	 * the prefix) and the continuation is dropped. */
	struct textlines *tmp = textlines_new();
	struct wrap_opts o = {l.width, WRAP_CODE, l.first, l.rest, l.nfirst, l.nrest, k->style};
	wrap_begin(k->r->wrap, tmp, &o);
	for (int i = 0; i < l.width; i++)
		wrap_add(k->r->wrap, RULE, sizeof RULE - 1, TS_MARK | TS_DIM | k->style);
	wrap_end(k->r->wrap);
	textlines_add_line(l.out, tmp, 0, 0);
	textlines_end_line(l.out);
	textlines_free(tmp);
}

/* Lays out a leaf block; returns false for a node whose children the
 * walk must visit (a container). */
static bool leaf(struct walk *k, cmark_node *n)
{
	cmark_node_type t = cmark_node_get_type(n);
	struct mdleaf l;
	switch (t) {
	case CMARK_NODE_PARAGRAPH:
	case CMARK_NODE_HEADING: {
		unsigned st = k->style;
		if (t == CMARK_NODE_HEADING)
			st |= TS_BOLD | TS_HEADING(cmark_node_get_heading_level(n));
		l = leaf_of(k);
		begin(k, &l, WRAP_WORDS, 0);
		mdrender_inlines(k->r->wrap, n, st);
		wrap_end(k->r->wrap);
		break;
	}
	case CMARK_NODE_CODE_BLOCK:
		code_block(k, n, k->style | TS_CODEBLOCK, k->style | TS_CODEBLOCK);
		break;
	case CMARK_NODE_HTML_BLOCK:
		code_block(k, n, k->style | TS_DIM, k->style);
		break;
	case CMARK_NODE_THEMATIC_BREAK:
		rule(k);
		break;
	default:
		if (!is_type(n, "table"))
			return false;
		l = leaf_of(k);
		mdtable_render(k->r, n, &l);
		break;
	}
	leaf_done(k);
	return true;
}

void mdrender_doc(struct mdrender *r, cmark_node *doc, int width, struct textlines *out)
{
	struct walk k = {.r = r, .out = out, .width = width};
	cmark_iter *it = cmark_iter_new(doc);
	cmark_event_type ev;
	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		cmark_node *n = cmark_iter_get_node(it);
		cmark_node_type t = cmark_node_get_type(n);
		if (n == doc)
			continue;
		if (ev == CMARK_EVENT_EXIT) {
			if (k.nbox && k.boxes[k.nbox - 1].node == n)
				pop(&k);
			continue;
		}
		separate(&k, n);
		if (t == CMARK_NODE_BLOCK_QUOTE) {
			struct box *b = push(&k, n);
			strcpy(b->first, QUOTE_BAR);
			strcpy(b->rest, QUOTE_BAR);
			k.style |= TS_QUOTE;
			b->mark_style = TS_MARK | k.style;
		} else if (t == CMARK_NODE_LIST) {
			enter_list(&k, n);
		} else if (t == CMARK_NODE_ITEM) {
			enter_item(&k, n);
		} else if (leaf(&k, n) || (cmark_node_get_type(n) & CMARK_NODE_TYPE_MASK) ==
						  CMARK_NODE_TYPE_INLINE) {
			cmark_iter_reset(it, n, CMARK_EVENT_EXIT);
		} else if (cmark_node_first_child(n)) {
			/* an unknown container (a footnote definition): its
			 * children are shown where it stands */
			push(&k, n);
		}
	}
	cmark_iter_free(it);
	free(k.boxes);
}

void mdrender_text(struct mdrender *r, const char *src, size_t n, int width,
		   struct textlines *out)
{
	cmark_node *doc = mdrender_parse(src, n);
	mdrender_doc(r, doc, width, out);
	cmark_node_free(doc);
}
