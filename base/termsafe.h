/* termsafe.h — text made safe to show on a terminal.
 *
 * Logs, titles, paths and error messages carry whatever their authors put in
 * them, and a terminal acts on some of it: ESC starts sequences that retitle
 * the window or rewrite the screen, the C1 control CSI (U+009B, or the raw
 * byte 0x9b) does the same on some terminals, bidi controls reorder what is
 * shown. These functions copy text with each such character shown inert:
 *
 *   C0 controls and DEL        caret notation: ESC ^[, BEL ^G, CR ^M, DEL ^?
 *   C1 controls (U+0080-U+009F) and bidi controls (U+061C, U+200E, U+200F,
 *   U+202A-U+202E, U+2066-U+2069)
 *                              \u and four lowercase hex digits: \u0085, \u202e
 *   a byte that is not UTF-8   \x and two lowercase hex digits, one per
 *                              byte: \x9b (U+FFFD would hide which byte)
 *
 * Everything else (printable ASCII, other well-formed UTF-8) is copied as it
 * is. ESC itself becoming ^[, no escape sequence (CSI, OSC, DCS, ...) reaches
 * the terminal. A one-line field (a title, an id, a path in a table) also
 * shows newline as ^J and tab as ^I; multi-line text keeps them. The result
 * is for reading, not for parsing back: a literal "^[" in the input looks
 * the same as ESC. Exact text is what --json output is for (termsafe_json).
 *
 * Calling sequence for a stream (text arriving in pieces):
 *	used = termsafe_add(out, s, n, TERMSAFE_TEXT | TERMSAFE_PARTIAL);
 *	keep s[used..n) and put it in front of the next piece;
 *	at the end, one call without TERMSAFE_PARTIAL for what is left. */
#ifndef CAIRN_TERMSAFE_H
#define CAIRN_TERMSAFE_H

#include <stdarg.h>
#include <stddef.h>

#include "base/buf.h"

enum termsafe_flags {
	TERMSAFE_LINE = 0,    /* one-line field: newline and tab shown too */
	TERMSAFE_TEXT = 1,    /* multi-line text: newline and tab kept */
	TERMSAFE_PARTIAL = 2, /* more input follows: keep an unfinished final character */
};

/* Append s[0..n) made safe to out. Returns the bytes consumed: n, except
 * that with TERMSAFE_PARTIAL a final UTF-8 sequence that more bytes could
 * still complete (1 to 3 bytes) is left unconsumed and not shown. */
size_t termsafe_add(struct buf *out, const char *s, size_t n, unsigned flags);
/* s (NUL-terminated; NULL reads as "") made safe; the caller frees. */
char *termsafe_str(const char *s, unsigned flags);
/* Append a printf-style text to out: the format is trusted and copied as it
 * is, every %s and %c argument is made safe as a one-line field (a %s
 * precision counts bytes of the argument, its width bytes of the result).
 * %n is not supported (abort). */
void termsafe_printf(struct buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void termsafe_vprintf(struct buf *out, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Append the JSON text s[0..n) with every raw C0, DEL, C1 and bidi control
 * inside its strings written as a \uXXXX escape and every byte that is not
 * UTF-8 as \ufffd (JSON cannot carry it). The output is valid JSON when the
 * input is, and parses to the same values when the input is UTF-8. */
void termsafe_json(struct buf *out, const char *s, size_t n);
/* Append s (NUL-terminated) as a JSON string literal, quotes included, with
 * the same escapes: one pass, for output built piece by piece. */
void termsafe_json_string(struct buf *out, const char *s);

#endif
