/* support_fifoloop.h — the FIFO on a running libuv loop for the FIFO's
 * loop tests (test_fifo_loop.c) and held-session tests (test_fifo_held.c):
 * a fresh data root and FIFO per test, the loop run until callbacks come,
 * items posted and recorded, and a fault file system whose fdatasync can
 * be stalled (lx_stall). */
#ifndef CAIRN_SUPPORT_FIFOLOOP_H
#define CAIRN_SUPPORT_FIFOLOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/err.h"
#include "persist/fifo.h"

struct lx {
	char dir[64];
	char root[128];
	uv_loop_t loop;
	struct fifo *f;
};

struct lx_rec {
	int calls, order;
	bool ok;
	struct cerr err;
	uint64_t next_seq, version;
	bool catalog_behind;
	uint64_t cut_bytes;
	size_t closers;
	struct prepared *prepared;
};

struct lx_closed {
	int calls, order;
	enum fifo_close_status st;
	uint64_t outstanding;
};

/* Callbacks so far, items and closes alike (lx_rec.order, lx_closed.order). */
extern int lx_order;
/* While true, every fdatasync waits (counted in lx_stalled). */
extern atomic_bool lx_stall;
extern atomic_int lx_stalled;

/* cmocka setup and teardown: a data root, a loop and a FIFO; the teardown
 * closes the FIFO without blocking, then the loop (a handle left open fails). */
int lx_setup(void **state);
int lx_teardown(void **state);
/* Run the loop until *calls reaches want (10 s at most). */
void lx_run_until(struct lx *x, const int *calls, int want);
/* Run the loop for ms milliseconds. */
void lx_run_for(struct lx *x, int ms);
/* A fifo_close callback recording into a struct lx_closed. */
void lx_close_done(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t outstanding);
/* Close the FIFO, waiting for its callback. */
void lx_close_now(struct lx *x);
/* A history item of one user/message at seq (create: the session is made). */
struct fifo_item *lx_hist(const char *id, uint64_t seq, bool create);
/* A fifo_post or fifo_barrier callback recording into a struct lx_rec. */
void lx_done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		const struct cerr *err);
/* Post it (or a barrier), recorded into c. */
void lx_post(struct lx *x, struct fifo_item *it, struct lx_rec *c);
void lx_barrier(struct lx *x, const char *session, struct lx_rec *c);
/* Create sessions ids[0..n) (seq 1 written, next is 2). */
void lx_create_all(struct lx *x, const char *const *ids, size_t n);
/* Replace the fixture's FIFO by one made with opts. */
void lx_renew(struct lx *x, const struct fifo_opts *opts);
/* Post it and run the loop until it completes; fails the test unless ok. */
void lx_post_wait(struct lx *x, struct fifo_item *it, struct lx_rec *c);
/* One event of type (turn: NULL none) with data key=value (key NULL:
 * none) as an array of events. */
cJSON *lx_one_event(const char *type, const char *turn, const char *key, const char *value);
/* Try to take session id's writer lock as another process would: CERR_OK
 * when taken (and let go), else the error's class. */
enum cerr_class lx_try_lock(struct lx *x, const char *id);
/* The catalog's status (or, with prompt, last prompt) of session id;
 * the caller frees it. */
char *lx_row_field(struct lx *x, const char *id, bool prompt);
char *lx_row_status(struct lx *x, const char *id);
/* Set session id's catalog status (as a process that died mid-turn left it). */
void lx_set_status(struct lx *x, const char *id, const char *status);

#endif
