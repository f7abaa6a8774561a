/* utf8.h — UTF-8 validation (utf8proc does the decoding). */
#ifndef CAIRN_UTF8_H
#define CAIRN_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates).
 * On failure *bad_at (if non-NULL) is the offset of the first bad byte. */
bool utf8_valid(const char *s, size_t n, size_t *bad_at);

#endif
