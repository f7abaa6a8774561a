/* support_http.h — the fixture of the HTTP engine's tests (engine/http.h on
 * a real libuv loop): one transfer observed (its head, body, SSE events and
 * result), the loop run until a flag is set, and one POST run start to end
 * on a fresh loop and engine. Helpers that check fail the running cmocka
 * test.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_HTTP_H
#define CAIRN_SUPPORT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "base/buf.h"
#include "engine/http.h"
#include "engine/sse.h"

/* What one transfer showed its callbacks. */
struct got {
	struct http_xfer *x;
	int dones, heads;
	long head_status;
	char retry_after[32];
	char ctype[64];
	struct http_result res;
	struct buf body;
	struct sse *sse;
	struct buf events;     /* SSE event names and data, one per line */
	size_t cancel_after;   /* cancel once this many body bytes arrived (0: never) */
	bool pause;            /* pause at every body call until resumed */
	bool progress_by_events; /* receiver_progress: each SSE event (g->sse) is progress */
	size_t body_calls;
	size_t body_after_cancel;
	bool canceled;
};

/* The headers of an OpenAI-style request with a test key; static storage. */
extern const char *const auth_headers[];
/* A streaming Chat Completions request body; static storage. */
extern const char chat[];

/* The SSE callback that writes "<name> <data>" lines into the struct got ud's events. */
int on_sse(void *ud, const char *name, const char *data, size_t len);
/* Clear g and its buffers for a transfer. */
void got_init(struct got *g);
/* Free what g holds (not g). */
void got_release(struct got *g);
/* Run the loop until *flag is non-zero (at most 20 s, else the test fails). */
void run_until(uv_loop_t *loop, const int *flag);
/* Start a POST of body to u on h observed by g; the transfer (owned by h) is also g->x. */
struct http_xfer *start(struct http *h, struct got *g, const char *u, const char *body,
			const char *const *headers, struct http_timeouts t);
/* Close h, run the loop dry and close it (it must close). */
void close_all(uv_loop_t *loop, struct http *h);
/* One POST to u on a fresh loop and engine, run until on_done, the engine
 * closed and the loop too; g (got_init'ed) holds what was seen. The
 * milliseconds from start to on_done. */
uint64_t one_transfer(struct got *g, const char *u, const char *body,
		      const char *const *headers, struct http_timeouts t);
/* Unset the proxy variables, so that transfers go straight to 127.0.0.1. */
void setup_env(void);

#endif
