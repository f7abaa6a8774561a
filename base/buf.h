/* buf.h — a growable byte buffer, always NUL-terminated (git strbuf style).
 * Embedded: buf_init / buf_release. buf_detach hands the storage to the
 * caller, who frees it. */
#ifndef CAIRN_BUF_H
#define CAIRN_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	char *p;    /* read-only for callers; NUL-terminated when cap > 0 */
	size_t len; /* read-only */
	size_t cap; /* private */
};

#define BUF_INIT {NULL, 0, 0}

void buf_init(struct buf *b);
void buf_release(struct buf *b);
void buf_reset(struct buf *b);
void buf_grow(struct buf *b, size_t extra);
void buf_add(struct buf *b, const void *data, size_t n);
void buf_adds(struct buf *b, const char *s);
void buf_addc(struct buf *b, char c);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append v in decimal (no locale, no printf). */
void buf_add_int(struct buf *b, int64_t v);
/* Append s as a JSON string literal (quotes included, RFC 8259 escapes). */
void buf_add_json_string(struct buf *b, const char *s);
/* Take the storage; the caller owns and frees it. b is left empty. */
char *buf_detach(struct buf *b, size_t *len);

#endif
