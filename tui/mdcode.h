/* mdcode.h — the code blocks of a markdown text as the renderer parses it
 * (mdrender_parse: cmark-gfm with the same extensions), fenced and
 * indented, in order: their content exactly, for copying one. */
#ifndef CAIRN_MDCODE_H
#define CAIRN_MDCODE_H

#include <stddef.h>

struct mdcode {
	char *text; /* the block's content, NUL terminated (owned) */
	char *info; /* a fence's info string ("" when none; owned) */
};

/* The code blocks of md[0..n): the count, and *out (NULL when none; the
 * caller frees it with mdcode_free). */
size_t mdcode_blocks(const char *md, size_t n, struct mdcode **out);
void mdcode_free(struct mdcode *v, size_t n);

#endif
