/* mdcode.c — the code blocks of a markdown text (mdcode.h). */
#include "tui/mdcode.h"
#include "base/xalloc.h"
#include "tui/mdrender.h"

#include <cmark-gfm.h>
#include <stdlib.h>

size_t mdcode_blocks(const char *md, size_t n, struct mdcode **out)
{
	*out = NULL;
	cmark_node *doc = mdrender_parse(md, n);
	if (!doc)
		return 0;
	size_t count = 0;
	cmark_iter *it = cmark_iter_new(doc);
	for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;) {
		cmark_node *node = cmark_iter_get_node(it);
		if (ev != CMARK_EVENT_ENTER || cmark_node_get_type(node) != CMARK_NODE_CODE_BLOCK)
			continue;
		const char *lit = cmark_node_get_literal(node), *info = cmark_node_get_fence_info(node);
		*out = xreallocarray(*out, count + 1, sizeof **out);
		(*out)[count++] = (struct mdcode){.text = xstrdup(lit ? lit : ""),
						  .info = xstrdup(info ? info : "")};
	}
	cmark_iter_free(it);
	cmark_node_free(doc);
	return count;
}

void mdcode_free(struct mdcode *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].text);
		free(v[i].info);
	}
	free(v);
}
