/* utf8.c — UTF-8 validation on top of utf8proc_iterate, and the one encoder. */
#include "base/utf8.h"

#include <stdint.h>
#include <string.h>

#include <utf8proc.h>

bool utf8_valid(const char *s, size_t n, size_t *bad_at)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	size_t i = 0;
	while (i < n) {
		/* ASCII fast paths: most of a log is ASCII JSON. */
		if (i + 8 <= n) {
			uint64_t w;
			memcpy(&w, p + i, 8);
			if (!(w & 0x8080808080808080ull)) {
				i += 8;
				continue;
			}
		}
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		utf8proc_int32_t cp;
		utf8proc_ssize_t r = utf8proc_iterate(p + i, (utf8proc_ssize_t)(n - i), &cp);
		if (r <= 0 || cp < 0) {
			if (bad_at)
				*bad_at = i;
			return false;
		}
		i += (size_t)r;
	}
	return true;
}

size_t utf8_encode(uint32_t cp, char *out)
{
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}
