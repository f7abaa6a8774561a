/* outq.c — a descriptor written from the loop without blocking (outq.h). */
#include "app/outq.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xalloc.h"

enum outq_kind { OUTQ_STREAM, OUTQ_DIRECT };

struct outq {
	enum outq_kind kind;
	union {
		uv_handle_t h;
		uv_tty_t tty;
		uv_pipe_t pipe;
	} u;
	int fd;
	bool tty;
	bool was_full;
	bool failed;
	size_t pending;
	struct outq_hooks hk;
	void (*close_cb)(void *ud);
	void *close_ud;
	bool closing;
	bool handle_closing;       /* a stream that could not be opened is closing */
};

struct req {
	uv_write_t w;
	struct outq *q;
	size_t n;
	char data[];
};

static void fail(struct outq *q, int uverr)
{
	if (q->failed)
		return;
	q->failed = true;
	if (q->hk.on_error)
		q->hk.on_error(q->hk.ud, uverr);
}

static void dead_closed(uv_handle_t *h)
{
	struct outq *q = h->data;
	q->handle_closing = false;
	if (q->closing) {
		if (q->close_cb)
			q->close_cb(q->close_ud);
		free(q);
	}
}

struct outq *outq_new(uv_loop_t *loop, int fd, const struct outq_hooks *hooks)
{
	struct outq *q = xcalloc(1, sizeof *q);
	q->fd = fd;
	if (hooks)
		q->hk = *hooks;
	q->kind = OUTQ_DIRECT;
	switch (uv_guess_handle(fd)) {
	case UV_TTY:
		if (uv_tty_init(loop, &q->u.tty, fd, 0) == 0) {
			q->kind = OUTQ_STREAM;
			q->tty = true;
		}
		break;
	case UV_NAMED_PIPE:
		if (uv_pipe_init(loop, &q->u.pipe, 0) == 0) {
			/* A duplicate for the handle, which closes it: fd itself
			 * stays for stdio after outq_close. */
			int d = dup(fd);
			if (d >= 0 && uv_pipe_open(&q->u.pipe, d) == 0) {
				q->kind = OUTQ_STREAM;
			} else {
				if (d >= 0)
					close(d);
				q->u.h.data = q;
				q->handle_closing = true;
				uv_close(&q->u.h, dead_closed); /* then written directly */
			}
		}
		break;
	default:
		break;
	}
	if (q->kind == OUTQ_STREAM)
		q->u.h.data = q;
	return q;
}

bool outq_is_tty(const struct outq *q)
{
	return q->tty;
}

static void write_cb(uv_write_t *w, int status)
{
	struct req *r = (struct req *)w;
	struct outq *q = r->q;
	q->pending -= r->n;
	free(r);
	if (status < 0)
		fail(q, status);
	if (q->was_full && q->pending <= OUTQ_LOW) {
		q->was_full = false;
		if (q->hk.on_drain && !q->closing)
			q->hk.on_drain(q->hk.ud);
	}
}

void outq_write(struct outq *q, const void *p, size_t n)
{
	if (q->failed || n == 0)
		return;
	if (q->kind == OUTQ_DIRECT) {
		const char *s = p;
		while (n > 0) {
			ssize_t w = write(q->fd, s, n);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				fail(q, uv_translate_sys_error(errno));
				return;
			}
			s += w;
			n -= (size_t)w;
		}
		return;
	}
	struct req *r = xmalloc(sizeof *r + n);
	r->q = q;
	r->n = n;
	memcpy(r->data, p, n);
	uv_buf_t b = uv_buf_init(r->data, (unsigned)n);
	q->pending += n;
	int e = uv_write(&r->w, (uv_stream_t *)&q->u.h, &b, 1, write_cb);
	if (e < 0) {
		q->pending -= n;
		free(r);
		fail(q, e);
		return;
	}
	if (q->pending > OUTQ_HIGH)
		q->was_full = true;
}

bool outq_full(const struct outq *q)
{
	return q->pending > OUTQ_HIGH;
}

size_t outq_pending(const struct outq *q)
{
	return q->pending;
}

static void closed_cb(uv_handle_t *h)
{
	struct outq *q = h->data;
	/* libuv made the shared open file non-blocking: give it back as the
	 * next program on this pipe expects it. */
	int fl = fcntl(q->fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		(void)fcntl(q->fd, F_SETFL, fl & ~O_NONBLOCK);
	if (q->close_cb)
		q->close_cb(q->close_ud);
	free(q);
}

static void shutdown_cb(uv_shutdown_t *s, int status)
{
	struct outq *q = s->data;
	(void)status;
	free(s);
	if (q->tty)
		uv_tty_reset_mode();
	uv_close(&q->u.h, closed_cb);
}

void outq_close(struct outq *q, void (*cb)(void *ud), void *ud)
{
	q->closing = true;
	q->close_cb = cb;
	q->close_ud = ud;
	if (q->kind == OUTQ_DIRECT) {
		if (q->handle_closing)
			return; /* dead_closed finishes */
		if (cb)
			cb(ud);
		free(q);
		return;
	}
	/* Shutdown waits for the queued writes; fd stays open (the handle
	 * holds a duplicate of a pipe; a terminal is reopened by libuv). */
	uv_shutdown_t *s = xmalloc(sizeof *s);
	s->data = q;
	if (uv_shutdown(s, (uv_stream_t *)&q->u.h, shutdown_cb) < 0) {
		free(s);
		uv_close(&q->u.h, closed_cb);
	}
}
