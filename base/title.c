/* title.c — the title a session gets from its first prompt (or its own,
 * shown on a terminal): whitespace collapsed, controls and invisible
 * formatting dropped (joiners kept), bounded in grapheme clusters with an
 * ellipsis at a cut. */
#include "base/title.h"
#include "base/buf.h"
#include "base/xalloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

char *title_of(const char *prompt, size_t max)
{
	if (max == 0)
		return xstrdup("");
	/* Normalise first, remembering where each character (grapheme
	 * cluster: an emoji family or a letter with its accents is one)
	 * starts, so a cut never splits one. */
	struct buf b = BUF_INIT;
	size_t *starts = NULL, chars = 0, cap = 0;
	bool space = false;
	utf8proc_int32_t prev = -1, state = 0;
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)prompt;
	utf8proc_ssize_t left = (utf8proc_ssize_t)strlen(prompt);
	while (left > 0 && chars <= max) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t r = utf8proc_iterate(p, left, &cp);
		if (r <= 0) {
			p++, left--;
			continue;
		}
		utf8proc_category_t cat = utf8proc_category(cp);
		bool ws = cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cat == UTF8PROC_CATEGORY_ZS ||
			  cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
		/* Controls and invisible formatting go, but the joiners that
		 * build emoji sequences and Persian or Indic words stay. */
		bool drop = !ws && (cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF) &&
			    cp != 0x200C && cp != 0x200D;
		if (ws) {
			space = b.len > 0;
			prev = -1;
		} else if (!drop) {
			if (space) {
				if (chars == cap)
					starts = xreallocarray(starts, cap = cap ? cap * 2 : 64, sizeof *starts);
				starts[chars++] = b.len;
				buf_addc(&b, ' ');
				space = false;
				prev = ' ';
				state = 0;
			}
			if (prev < 0 || utf8proc_grapheme_break_stateful(prev, cp, &state)) {
				if (chars == cap)
					starts = xreallocarray(starts, cap = cap ? cap * 2 : 64, sizeof *starts);
				starts[chars++] = b.len;
			}
			buf_add(&b, p, (size_t)r);
			prev = cp;
		}
		p += r;
		left -= r;
	}
	if (chars > max) {
		/* Keep max - 1 characters and an ellipsis. */
		b.len = starts[max - 1];
		while (b.len && b.p[b.len - 1] == ' ')
			b.len--;
		b.p[b.len] = '\0';
		buf_adds(&b, "\xE2\x80\xA6");
	}
	free(starts);
	return buf_detach(&b, NULL);
}
