/* outq.h — a file descriptor written from the loop without blocking it:
 * standard output of headless mode, which may be a terminal, a pipe that
 * nobody reads, or a file.
 *
 * Writes are queued (libuv streams for a terminal or a pipe); once more
 * than OUTQ_HIGH bytes wait, outq_full says so and the writer stops
 * producing (headless mode stops reading the sink, which pauses the HTTP
 * transfer); the drain callback says when the queue is back under
 * OUTQ_LOW. A regular file (or anything libuv cannot stream) is written
 * directly: a disk does not make the loop wait on a reader. A write error
 * (EPIPE: the reader went away) is reported once through the error
 * callback; later writes are dropped. */
#ifndef CAIRN_OUTQ_H
#define CAIRN_OUTQ_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#define OUTQ_HIGH (256u * 1024u)
#define OUTQ_LOW (64u * 1024u)

struct outq;

struct outq_hooks {
	void (*on_drain)(void *ud);           /* back under OUTQ_LOW after being full */
	void (*on_error)(void *ud, int uverr); /* the first failed write (UV_EPIPE, ...) */
	void *ud;
};

/* Write fd from loop; the caller closes it with outq_close. */
struct outq *outq_new(uv_loop_t *loop, int fd, const struct outq_hooks *hooks);
/* Is fd a terminal? */
bool outq_is_tty(const struct outq *q);
/* Queue p[0..n) (copied). */
void outq_write(struct outq *q, const void *p, size_t n);
/* More than OUTQ_HIGH bytes are waiting. */
bool outq_full(const struct outq *q);
/* Bytes queued and not written yet. */
size_t outq_pending(const struct outq *q);
/* Flush what is queued (the loop keeps running until it is written or
 * fails), then close; cb (may be NULL) runs after, and q is freed. */
void outq_close(struct outq *q, void (*cb)(void *ud), void *ud);

#endif
