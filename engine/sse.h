/* sse.h — an incremental Server-Sent Events parser (WHATWG HTML §9.2.6).
 *
 * Bytes go in pieces of any size, split anywhere (inside a line, between
 * the CR and LF of a CRLF, inside a leading BOM); every complete event is
 * handed to a callback as (event name, data, length). Lines end with LF,
 * CRLF or CR; `:` lines are comments; `data:` lines join with LF; `event:`,
 * `id:` and `retry:` follow the spec. What one event may hold is bounded:
 * beyond the limit the parser fails with SSE_E_LIMIT instead of growing.
 *
 * Calling sequence: sse_new, sse_feed as bytes arrive (any number of times),
 * sse_free. An event still open at the end of the stream is never
 * dispatched (the spec's rule); sse_pending says whether one is. */
#ifndef CAIRN_SSE_H
#define CAIRN_SSE_H

#include <stdbool.h>
#include <stddef.h>

/* Default bound of one event: its pending line, its data and its name. */
#define SSE_EVENT_MAX (1024u * 1024u)

/* sse_feed results besides 0 and the callback's own positive codes. */
#define SSE_E_LIMIT (-1) /* an event outgrew its bound; the parser is dead */

/* One dispatched event. name is "message" when the event set none (a C
 * string: a name holding a NUL ends there); data is NUL-terminated at
 * data[len] and may hold NULs. Both are borrowed: valid
 * only during the call. Return 0 to go on, or a positive code to stop:
 * sse_feed returns it at once and the rest of that piece is dropped. */
typedef int (*sse_event_cb)(void *ud, const char *name, const char *data, size_t len);

struct sse;

/* A parser bounding each event to max_event bytes (0: SSE_EVENT_MAX)
 * that calls cb(ud, ...) per event. The caller frees it with sse_free. */
struct sse *sse_new(size_t max_event, sse_event_cb cb, void *ud);
/* Free the parser and what it holds; NULL is fine. */
void sse_free(struct sse *s);

/* Parse p[0..n): 0 when consumed, SSE_E_LIMIT (then on every later call
 * too), or the positive code a callback stopped with. */
int sse_feed(struct sse *s, const void *p, size_t n);

/* True when bytes of an unfinished event are held (a stream ending now was
 * cut inside an event). */
bool sse_pending(const struct sse *s);
/* The last event ID set by an `id:` field ("" if none); owned by the parser. */
const char *sse_last_id(const struct sse *s);
/* The reconnection time of the last valid `retry:` field, or -1 if none. */
long long sse_retry_ms(const struct sse *s);

#endif
