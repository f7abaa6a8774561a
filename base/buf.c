/* buf.c — growable byte buffer. */
#include "base/buf.h"
#include "base/xalloc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void buf_init(struct buf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
}

void buf_release(struct buf *b)
{
	free(b->p);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

void buf_grow(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
	b->p[b->len] = '\0'; /* a fresh buffer is "" too, not garbage */
}

void buf_add(struct buf *b, const void *data, size_t n)
{
	buf_grow(b, n);
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_addc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n > 0) {
		buf_grow(b, (size_t)n);
		vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
		b->len += (size_t)n;
	}
	va_end(ap2);
}

void buf_add_int(struct buf *b, int64_t v)
{
	char d[24], *p = d + sizeof d;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	buf_add(b, p, (size_t)(d + sizeof d - p));
}

void buf_add_json_string(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	buf_addc(b, '"');
	const unsigned char *p = (const unsigned char *)s;
	for (;;) {
		/* Copy the run of bytes that need no escape in one go. */
		const unsigned char *run = p;
		while (*p >= 0x20 && *p != '"' && *p != '\\')
			p++;
		if (p > run)
			buf_add(b, run, (size_t)(p - run));
		if (!*p)
			break;
		switch (*p) {
		case '"': buf_add(b, "\\\"", 2); break;
		case '\\': buf_add(b, "\\\\", 2); break;
		case '\n': buf_add(b, "\\n", 2); break;
		case '\r': buf_add(b, "\\r", 2); break;
		case '\t': buf_add(b, "\\t", 2); break;
		case '\b': buf_add(b, "\\b", 2); break;
		case '\f': buf_add(b, "\\f", 2); break;
		default: {
			char e[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
			buf_add(b, e, 6);
		}
		}
		p++;
	}
	buf_addc(b, '"');
}

char *buf_detach(struct buf *b, size_t *len)
{
	if (!b->p)
		buf_grow(b, 0), b->p[0] = '\0';
	char *p = b->p;
	if (len)
		*len = b->len;
	buf_init(b);
	return p;
}
