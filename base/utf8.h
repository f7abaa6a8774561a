/* utf8.h — UTF-8 validation and encoding (utf8proc does the decoding). */
#ifndef CAIRN_UTF8_H
#define CAIRN_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates).
 * On failure *bad_at (if non-NULL) is the offset of the first bad byte. */
bool utf8_valid(const char *s, size_t n, size_t *bad_at);
/* The UTF-8 of code point cp in out (room for 4 bytes); U+FFFD for a
 * surrogate or a value past U+10FFFF. Returns the bytes written. */
size_t utf8_encode(uint32_t cp, char *out);

#endif
