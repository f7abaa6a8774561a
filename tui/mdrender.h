/* mdrender.h — markdown (CommonMark with the GitHub extensions: tables,
 * strikethrough, autolinks, task lists) rendered into display lines.
 *
 * Headings, emphasis, strong, strikethrough and code spans become styles;
 * lists get bullets (•, ◦, ▪ by depth) or right-aligned numbers and a
 * hanging indent; block quotes a bar (│); fenced and indented code keeps its
 * lines (never re-wrapped as prose), each padded to the width in
 * TS_CODEBLOCK, a line wider than the width going on after ↪; links show
 * their target after the text, "text (url)", unless the text is the url;
 * tables are laid out in columns by display width, or shown as one
 * "header: value" line per cell when the columns do not fit; top-level
 * blocks are separated by one empty line. Every piece of text goes
 * through tui/wrap.c, which makes it safe for the terminal.
 *
 * Reference links resolve only against definitions in the same text that
 * is rendered (tui/textmsg.c renders a message block by block). */
#ifndef CAIRN_MDRENDER_H
#define CAIRN_MDRENDER_H

#include <stddef.h>

#include <cmark-gfm.h>

#include "tui/textlines.h"

struct mdrender;

/* A renderer (scratch space reused from one call to the next); the caller
 * frees it with mdrender_free, which accepts NULL. */
struct mdrender *mdrender_new(void);
void mdrender_free(struct mdrender *r);

/* src[0..n) parsed as markdown with the extensions above (any bytes: NUL
 * and malformed UTF-8 become U+FFFD); the caller frees the tree with
 * cmark_node_free. */
cmark_node *mdrender_parse(const char *src, size_t n);

/* Appends the lines of the document doc (borrowed), width cells wide, to
 * out. An empty document adds no line. */
void mdrender_doc(struct mdrender *r, cmark_node *doc, int width, struct textlines *out);

/* mdrender_parse then mdrender_doc. */
void mdrender_text(struct mdrender *r, const char *src, size_t n, int width,
		   struct textlines *out);

#endif
