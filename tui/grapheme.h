/* grapheme.h — user-perceived characters (UAX #29 extended grapheme
 * clusters, by utf8proc) in valid UTF-8 text, and the terminal cells each
 * takes. The cells of a cluster are what wrap_cells (tui/wrap.h) gives
 * for it, so the composer and the transcript measure alike: its widest
 * code point, 2 for an emoji presentation selector or a flag. A
 * cluster of zero width (a lone combining mark, a lone ZWJ) is shown after
 * U+25CC DOTTED CIRCLE and takes one cell, so the cursor can stand on it.
 * A tab takes the cells up to the next multiple of GRAPHEME_TAB. */
#ifndef CAIRN_TUI_GRAPHEME_H
#define CAIRN_TUI_GRAPHEME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define GRAPHEME_TAB 8

/* The byte length of the cluster starting at s[0], within s[0..n) (n > 0,
 * s[0] at a cluster boundary). */
size_t grapheme_next(const char *s, size_t n);
/* The last cluster boundary at or before at (<= n) in s[0..n), s[0] being
 * one (a line start). Cost: the bytes back to the last pair of ASCII
 * characters (a boundary in any text) and forward to at. */
size_t grapheme_floor(const char *s, size_t n, size_t at);
/* The start of the cluster before the boundary at (0 < at <= n). */
size_t grapheme_prev(const char *s, size_t n, size_t at);
/* The cells the cluster s[0..n) takes at column col (only a tab depends on
 * col); at least 1. */
int grapheme_cells(const char *s, size_t n, int col);
/* Append the cluster as it is drawn (a tab as spaces up to the next stop,
 * a zero-width cluster after U+25CC) to out; returns its cells at col. */
int grapheme_show(struct buf *out, const char *s, size_t n, int col);
/* The first code point of the cluster s[0..n). */
uint32_t grapheme_first(const char *s, size_t n);

#endif
