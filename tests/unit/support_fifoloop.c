/* support_fifoloop.c — the FIFO on a running loop, for its tests
 * (support_fifoloop.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/draft.h"
#include "persist/fifo.h"
#include "persist/prepare.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_fifoloop.h"


int lx_order; /* callbacks so far, items and closes alike */

/* ---- a stalled fdatasync ---- */

atomic_bool lx_stall;
atomic_int lx_stalled; /* fdatasyncs that reached the stall */

static void stall_hook(void *ctx, enum faultfs_op op, bool after)
{
	(void)ctx;
	if (after || op != FF_FDATASYNC || !atomic_load(&lx_stall))
		return;
	atomic_fetch_add(&lx_stalled, 1);
	while (atomic_load(&lx_stall))
		usleep(500);
}

/* ---- fixture ---- */

int lx_setup(void **state)
{
	struct lx *x = xcalloc(1, sizeof *x);
	struct cerr err = {0};
	assert_int_equal(tmp_root("cairn-fifo-loop", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	/* Every test may stall syncs: the table is in place before any thread. */
	faultfs_install();
	faultfs_set_sync_hook(stall_hook, NULL);
	atomic_store(&lx_stall, false);
	atomic_store(&lx_stalled, 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	lx_order = 0;
	*state = x;
	return 0;
}


void lx_close_done(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t outstanding)
{
	(void)f;
	struct lx_closed *c = ctx;
	c->calls++;
	c->order = ++lx_order;
	c->st = st;
	c->outstanding = outstanding;
}

/* Run the loop until *calls reaches want (10 s at most). */
void lx_run_until(struct lx *x, const int *calls, int want)
{
	uint64_t until = deadline(10000);
	while (*calls < want) {
		if (clock_mono_ns() / 1000000 > until)
			fail_msg("waited 10 s for a callback (%d of %d)", *calls, want);
		uv_run(&x->loop, UV_RUN_NOWAIT);
		usleep(200);
	}
}

/* Run the loop for ms milliseconds. */
void lx_run_for(struct lx *x, int ms)
{
	uint64_t until = deadline(ms);
	while (clock_mono_ns() / 1000000 < until) {
		uv_run(&x->loop, UV_RUN_NOWAIT);
		usleep(200);
	}
}

void lx_close_now(struct lx *x)
{
	struct lx_closed c = {0};
	assert_int_equal(fifo_close(x->f, deadline(10000), lx_close_done, &c), 0);
	lx_run_until(x, &c.calls, 1);
	assert_int_equal(c.st, FIFO_CLOSED);
	assert_int_equal(c.outstanding, 0);
	x->f = NULL;
}

/* Close the FIFO without blocking, then the loop: a handle left open fails. */
int lx_teardown(void **state)
{
	struct lx *x = *state;
	atomic_store(&lx_stall, false);
	if (x->f)
		lx_close_now(x);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	faultfs_uninstall();
	rm_rf(x->dir);
	free(x);
	return 0;
}

/* ---- items ---- */


void lx_done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	struct lx_rec *c = ctx;
	c->calls++;
	c->order = ++lx_order;
	c->ok = err == NULL;
	if (err)
		c->err = *err;
	if (r) {
		c->next_seq = r->next_seq;
		c->version = r->content_version;
		c->catalog_behind = r->catalog_behind;
		c->cut_bytes = r->cut_bytes;
		c->closers = r->closers;
		c->prepared = r->prepared;
	}
}

struct fifo_item *lx_hist(const char *id, uint64_t seq, bool create)
{
	cJSON *a = cJSON_CreateArray();
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", "user/message");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "data"), "text", "hello");
	cJSON_AddItemToArray(a, e);
	struct fifo_item *it = fifo_history(id, seq, a);
	if (create)
		fifo_item_create(it, NULL);
	return it;
}

void lx_post(struct lx *x, struct fifo_item *it, struct lx_rec *c)
{
	struct cerr err = {0};
	memset(c, 0, sizeof *c);
	if (fifo_post(x->f, it, lx_done_cb, c, &err) != 0)
		fail_msg("fifo_post: %s", err.msg);
}

void lx_barrier(struct lx *x, const char *session, struct lx_rec *c)
{
	struct cerr err = {0};
	memset(c, 0, sizeof *c);
	if (fifo_barrier(x->f, session, lx_done_cb, c, &err) != 0)
		fail_msg("fifo_barrier: %s", err.msg);
}

/* Create sessions ids[0..n) (seq 1 written, next is 2). */
void lx_create_all(struct lx *x, const char *const *ids, size_t n)
{
	struct lx_rec c[8];
	for (size_t i = 0; i < n; i++)
		lx_post(x, lx_hist(ids[i], 1, true), &c[i]);
	for (size_t i = 0; i < n; i++) {
		lx_run_until(x, &c[i].calls, 1);
		assert_true(c[i].ok);
	}
}

/* Replace the fixture's FIFO by one made with opts. */
void lx_renew(struct lx *x, const struct fifo_opts *opts)
{
	struct cerr err = {0};
	lx_close_now(x);
	if (!(x->f = fifo_new(&x->loop, x->root, opts, &err)))
		fail_msg("fifo_new: %s", err.msg);
}


/* Post it and run the loop until it completes; fails the test unless ok. */
void lx_post_wait(struct lx *x, struct fifo_item *it, struct lx_rec *c)
{
	lx_post(x, it, c);
	lx_run_until(x, &c->calls, 1);
	if (!c->ok)
		fail_msg("item failed: %s", c->err.msg);
}

/* One event of type (turn: NULL none) with data key=value (key NULL:
 * none) as an array of events. */
cJSON *lx_one_event(const char *type, const char *turn, const char *key, const char *value)
{
	cJSON *a = cJSON_CreateArray();
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", type);
	if (turn)
		cJSON_AddStringToObject(e, "turn", turn);
	if (key)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "data"), key, value);
	cJSON_AddItemToArray(a, e);
	return a;
}

/* Try to take session id's writer lock from this process, on a descriptor
 * of its own (as another process would): 0 when taken (and let go), else
 * the error's class. */
enum cerr_class lx_try_lock(struct lx *x, const char *id)
{
	struct store *st;
	struct log *lg;
	struct cerr err = {0};
	if (store_open(x->root, false, &st, &err) < 0)
		fail_msg("store_open: %s", err.msg);
	int rc = log_open(st, id, &lg, &err);
	if (rc == 0)
		log_close(lg);
	store_close(st);
	return rc == 0 ? CERR_OK : err.cls;
}

/* The catalog's status (or, with prompt, last prompt) of session id; the
 * caller frees it. */
char *lx_row_field(struct lx *x, const char *id, bool prompt)
{
	struct store *st = NULL;
	struct catalog *cat = NULL;
	struct cat_session row;
	struct cerr err = {0};
	if (store_open(x->root, false, &st, &err) < 0 || catalog_open(st, &cat, &err) < 0 ||
	    catalog_get(cat, id, &row, &err) < 0)
		fail_msg("catalog row of %s: %s", id, err.msg);
	const char *v = prompt ? row.last_prompt : row.status;
	char *out = xstrdup(v ? v : "");
	cat_session_release(&row);
	catalog_close(cat);
	store_close(st);
	return out;
}

char *lx_row_status(struct lx *x, const char *id)
{
	return lx_row_field(x, id, false);
}

void lx_set_status(struct lx *x, const char *id, const char *status)
{
	struct store *st = NULL;
	struct catalog *cat = NULL;
	struct cerr err = {0};
	if (store_open(x->root, false, &st, &err) < 0 || catalog_open(st, &cat, &err) < 0 ||
	    catalog_set_status(cat, id, status, &err) < 0)
		fail_msg("catalog: %s", err.msg);
	catalog_close(cat);
	store_close(st);
}
