/* grapheme.c — cluster boundaries and cells (grapheme.h), on utf8proc. The
 * text given is valid UTF-8: the composer validates what it stores. */
#include "tui/grapheme.h"

#include <utf8proc.h>

#include "tui/wrap.h"

static utf8proc_int32_t cp_at(const char *s, size_t n, size_t *len)
{
	utf8proc_int32_t cp = 0xfffd;
	utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &cp);
	*len = l > 0 ? (size_t)l : 1; /* not reached with valid text; still moves on */
	return l > 0 ? cp : 0xfffd;
}

size_t grapheme_next(const char *s, size_t n)
{
	/* ASCII followed by ASCII (or the end) is a cluster of its own, CR LF
	 * aside: most text, without asking utf8proc */
	unsigned char a = (unsigned char)s[0];
	if (a < 0x80 && a != '\r' && (n == 1 || (unsigned char)s[1] < 0x80))
		return 1;
	size_t len;
	utf8proc_int32_t prev = cp_at(s, n, &len);
	utf8proc_int32_t state = 0;
	size_t off = len;
	while (off < n) {
		utf8proc_int32_t cp = cp_at(s + off, n - off, &len);
		if (utf8proc_grapheme_break_stateful(prev, cp, &state))
			break;
		prev = cp;
		off += len;
	}
	return off;
}

size_t grapheme_floor(const char *s, size_t n, size_t at)
{
	if (at >= n)
		return n; /* the end of the text ends a cluster */
	/* Between two ASCII characters there is always a break (CR LF aside,
	 * and the composer has no CR): start there, not at the line start. */
	size_t from = 0;
	for (size_t i = at; i > 0; i--) {
		if ((unsigned char)s[i - 1] < 0x80 && (unsigned char)s[i] < 0x80) {
			from = i;
			break;
		}
	}
	while (from < at) {
		size_t next = from + grapheme_next(s + from, n - from);
		if (next > at)
			break;
		from = next;
	}
	return from;
}

size_t grapheme_prev(const char *s, size_t n, size_t at)
{
	return grapheme_floor(s, n, at - 1);
}

uint32_t grapheme_first(const char *s, size_t n)
{
	size_t len;
	return (uint32_t)cp_at(s, n, &len);
}

int grapheme_cells(const char *s, size_t n, int col)
{
	if (n == 1 && s[0] == '\t')
		return GRAPHEME_TAB - col % GRAPHEME_TAB;
	if (n == 1 && s[0] >= 0x20 && s[0] < 0x7f)
		return 1;
	int w = wrap_cells(s, n);
	return w > 0 ? w : 1;
}

int grapheme_show(struct buf *out, const char *s, size_t n, int col)
{
	int w = grapheme_cells(s, n, col);
	if (n == 1 && s[0] == '\t') {
		for (int i = 0; i < w; i++)
			buf_addc(out, ' ');
		return w;
	}
	if (wrap_cells(s, n) == 0)
		buf_adds(out, "\xe2\x97\x8c"); /* U+25CC, to carry the mark */
	buf_add(out, s, n);
	return w;
}
