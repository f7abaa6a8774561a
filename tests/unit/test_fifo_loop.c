/* test_fifo_loop.c — the FIFO used from a running libuv loop that never
 * waits: fifo_barrier ordered against the items of its session (and of all
 * sessions), also while the writer's round in flight is still syncing, and
 * the asynchronous fifo_close with a deadline: a stalled fdatasync (the
 * fault file system) makes it time out with the items outstanding, keeping
 * the FIFO working, and a second close after the stall finishes; no post is
 * taken once a close began; drafts go through the FIFO in post order, adjacent
 * drafts of one project written once with the newest text; a FIFO without
 * helpers; sessions forgotten once idle; sessions held open (fifo_open
 * repairs, holds the lock through a handle cache of 4 under 200 sessions,
 * fifo_release lets go); the running status set with an append and
 * cleared by a full save, a stale one not blocking a delete; an open
 * rebuilding the row only for a changed log; a created
 * session's header. Each test ends with uv_loop_close() == 0. */
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

struct lx {
	char dir[64];
	char root[128];
	uv_loop_t loop;
	struct fifo *f;
};

static int order; /* callbacks so far, items and closes alike */

/* ---- a stalled fdatasync ---- */

static atomic_bool stall;
static atomic_int stalled; /* fdatasyncs that reached the stall */

static void stall_hook(void *ctx, enum faultfs_op op, bool after)
{
	(void)ctx;
	if (after || op != FF_FDATASYNC || !atomic_load(&stall))
		return;
	atomic_fetch_add(&stalled, 1);
	while (atomic_load(&stall))
		usleep(500);
}

/* ---- fixture ---- */

static int setup(void **state)
{
	struct lx *x = xcalloc(1, sizeof *x);
	struct cerr err = {0};
	assert_int_equal(tmp_root("cairn-fifo-loop", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	/* Every test may stall syncs: the table is in place before any thread. */
	faultfs_install();
	faultfs_set_sync_hook(stall_hook, NULL);
	atomic_store(&stall, false);
	atomic_store(&stalled, 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	order = 0;
	*state = x;
	return 0;
}

struct closed {
	int calls, order;
	enum fifo_close_status st;
	uint64_t outstanding;
};

static void close_done(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t outstanding)
{
	(void)f;
	struct closed *c = ctx;
	c->calls++;
	c->order = ++order;
	c->st = st;
	c->outstanding = outstanding;
}

/* Run the loop until *calls reaches want (10 s at most). */
static void run_until(struct lx *x, const int *calls, int want)
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
static void run_for(struct lx *x, int ms)
{
	uint64_t until = deadline(ms);
	while (clock_mono_ns() / 1000000 < until) {
		uv_run(&x->loop, UV_RUN_NOWAIT);
		usleep(200);
	}
}

static void close_now(struct lx *x)
{
	struct closed c = {0};
	assert_int_equal(fifo_close(x->f, deadline(10000), close_done, &c), 0);
	run_until(x, &c.calls, 1);
	assert_int_equal(c.st, FIFO_CLOSED);
	assert_int_equal(c.outstanding, 0);
	x->f = NULL;
}

/* Close the FIFO without blocking, then the loop: a handle left open fails. */
static int teardown(void **state)
{
	struct lx *x = *state;
	atomic_store(&stall, false);
	if (x->f)
		close_now(x);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	faultfs_uninstall();
	rm_rf(x->dir);
	free(x);
	return 0;
}

/* ---- items ---- */

struct rec {
	int calls, order;
	bool ok;
	struct cerr err;
	uint64_t next_seq, version;
	bool catalog_behind;
	uint64_t cut_bytes;
	size_t closers;
	struct prepared *prepared;
};

static void done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	struct rec *c = ctx;
	c->calls++;
	c->order = ++order;
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

static struct fifo_item *hist(const char *id, uint64_t seq, bool create)
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

static void post(struct lx *x, struct fifo_item *it, struct rec *c)
{
	struct cerr err = {0};
	memset(c, 0, sizeof *c);
	if (fifo_post(x->f, it, done_cb, c, &err) != 0)
		fail_msg("fifo_post: %s", err.msg);
}

static void barrier(struct lx *x, const char *session, struct rec *c)
{
	struct cerr err = {0};
	memset(c, 0, sizeof *c);
	if (fifo_barrier(x->f, session, done_cb, c, &err) != 0)
		fail_msg("fifo_barrier: %s", err.msg);
}

/* Create sessions ids[0..n) (seq 1 written, next is 2). */
static void create_all(struct lx *x, const char *const *ids, size_t n)
{
	struct rec c[8];
	for (size_t i = 0; i < n; i++)
		post(x, hist(ids[i], 1, true), &c[i]);
	for (size_t i = 0; i < n; i++) {
		run_until(x, &c[i].calls, 1);
		assert_true(c[i].ok);
	}
}

/* Replace the fixture's FIFO by one made with opts. */
static void renew(struct lx *x, const struct fifo_opts *opts)
{
	struct cerr err = {0};
	close_now(x);
	if (!(x->f = fifo_new(&x->loop, x->root, opts, &err)))
		fail_msg("fifo_new: %s", err.msg);
}

/* ---- tests ---- */

/* Rounds of "A, B, A, barrier A, A, B": the barrier's callback follows
 * each earlier item of A and precedes each later one, whatever batches and
 * rounds the writer made of them. */
static void test_barrier_after_earlier_items_before_later(void **state)
{
	struct lx *x = *state;
	static const char *const ids[] = {"A", "B"};
	create_all(x, ids, 2);
	uint64_t a = 2, b = 2;
	for (int k = 0; k < 40; k++) {
		struct rec c[6];
		fifo_set_batch_limit(x->f, (size_t)(k % 3)); /* all, 1, 2 per batch */
		post(x, hist("A", a++, false), &c[0]);
		post(x, hist("B", b++, false), &c[1]);
		post(x, hist("A", a++, false), &c[2]);
		barrier(x, "A", &c[3]);
		post(x, hist("A", a++, false), &c[4]);
		post(x, hist("B", b++, false), &c[5]);
		for (int i = 0; i < 6; i++)
			run_until(x, &c[i].calls, 1);
		run_for(x, 1); /* a second completion would show now */
		for (int i = 0; i < 6; i++) {
			assert_int_equal(c[i].calls, 1);
			assert_true(c[i].ok);
		}
		assert_true(c[0].order < c[3].order && c[2].order < c[3].order);
		assert_true(c[3].order < c[4].order);
		assert_int_equal(c[3].next_seq, 0); /* a barrier writes nothing */
		assert_int_equal(c[4].next_seq, a);
	}
}

/* A NULL barrier waits for the earlier items of every session. */
static void test_null_barrier_waits_for_all_sessions(void **state)
{
	struct lx *x = *state;
	static const char *const ids[] = {"A", "B", "C"};
	create_all(x, ids, 3);
	struct rec c[8];
	fifo_set_batch_limit(x->f, 1); /* one item per round: several in flight in turn */
	post(x, hist("A", 2, false), &c[0]);
	post(x, hist("B", 2, false), &c[1]);
	post(x, hist("C", 2, false), &c[2]);
	post(x, hist("C", 3, false), &c[3]);
	barrier(x, NULL, &c[4]);
	post(x, hist("B", 3, false), &c[5]);
	for (int i = 0; i < 6; i++)
		run_until(x, &c[i].calls, 1);
	for (int i = 0; i < 4; i++)
		assert_true(c[i].order < c[4].order);
	assert_true(c[4].order < c[5].order);
}

/* A barrier that reaches the writer while the round in flight cannot sync
 * (its fdatasync stalls) does not complete before that round: one item per
 * batch makes the first item's round fly while the writer takes the
 * barriers; nothing completes until the sync is let go, and then in post
 * order. */
static void test_barrier_waits_for_round_in_flight(void **state)
{
	struct lx *x = *state;
	static const char *const ids[] = {"A"};
	create_all(x, ids, 1);
	order = 0;
	struct rec c[4];
	atomic_store(&stall, true);
	fifo_set_batch_limit(x->f, 1);
	fifo_pause(x->f, true);
	post(x, hist("A", 2, false), &c[0]);
	barrier(x, "A", &c[1]);
	barrier(x, NULL, &c[2]);
	post(x, hist("A", 3, false), &c[3]);
	fifo_pause(x->f, false);
	uint64_t until = deadline(10000);
	while (atomic_load(&stalled) == 0 && clock_mono_ns() / 1000000 < until)
		run_for(x, 1);
	assert_int_not_equal(atomic_load(&stalled), 0); /* the first round is committed, syncing */
	run_for(x, 150);
	for (int i = 0; i < 4; i++)
		assert_int_equal(c[i].calls, 0);
	atomic_store(&stall, false);
	for (int i = 0; i < 4; i++)
		run_until(x, &c[i].calls, 1);
	for (int i = 0; i < 4; i++)
		assert_true(c[i].ok);
	assert_true(c[0].order < c[1].order && c[1].order < c[2].order && c[2].order < c[3].order);
	assert_int_equal(c[0].next_seq, 3);
	assert_int_equal(c[3].next_seq, 4);
}

/* Under a stalled fdatasync, a close with a short deadline times out with
 * the one item outstanding; the FIFO keeps working (a barrier is taken, and
 * no item is refused), and a second close once the stall is let go delivers
 * everything before it reports closed. */
static void test_close_times_out_then_closes(void **state)
{
	struct lx *x = *state;
	static const char *const ids[] = {"A"};
	create_all(x, ids, 1);
	order = 0;
	struct rec c[3];
	struct cerr err = {0};
	atomic_store(&stall, true);
	post(x, hist("A", 2, false), &c[0]);
	struct closed t = {0};
	uint64_t t0 = clock_mono_ns();
	assert_int_equal(fifo_close(x->f, deadline(100), close_done, &t), 0);
	assert_int_equal(fifo_close(x->f, deadline(100), close_done, &t), -1); /* one at a time */
	run_until(x, &t.calls, 1);
	uint64_t waited_ms = (clock_mono_ns() - t0) / 1000000;
	assert_int_equal(t.st, FIFO_TIMED_OUT);
	assert_int_equal(t.outstanding, 1);
	assert_true(waited_ms >= 90);
	assert_int_equal(c[0].calls, 0);
	/* Still the caller's and still working. */
	barrier(x, "A", &c[1]);
	post(x, hist("A", 3, false), &c[2]);
	atomic_store(&stall, false);
	struct closed d = {0};
	assert_int_equal(fifo_close(x->f, deadline(10000), close_done, &d), 0);
	assert_int_equal(fifo_post(x->f, hist("A", 4, false), done_cb, &c[0], &err), -1);
	run_until(x, &d.calls, 1);
	x->f = NULL;
	assert_int_equal(d.st, FIFO_CLOSED);
	assert_int_equal(d.outstanding, 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(c[i].calls, 1);
		assert_true(c[i].ok);
		assert_true(c[i].order < d.order);
	}
	assert_true(c[0].order < c[1].order && c[1].order < c[2].order);
	assert_int_equal(c[2].next_seq, 4);
	assert_int_equal(t.calls, 1);
}

/* Once a close began, items and barriers are refused at once and their
 * callbacks never run; what was posted before completes before the close
 * callback. */
static void test_post_after_close_is_refused_and_never_called_back(void **state)
{
	struct lx *x = *state;
	struct rec before, late, late_barrier;
	struct cerr err = {0};
	post(x, hist("A", 1, true), &before);
	struct closed d = {0};
	assert_int_equal(fifo_close(x->f, deadline(10000), close_done, &d), 0);
	memset(&late, 0, sizeof late);
	memset(&late_barrier, 0, sizeof late_barrier);
	assert_int_equal(fifo_post(x->f, hist("A", 2, false), done_cb, &late, &err), -1);
	assert_int_equal(err.cls, CERR_USAGE);
	err = (struct cerr){0};
	assert_int_equal(fifo_barrier(x->f, "A", done_cb, &late_barrier, &err), -1);
	assert_int_equal(err.cls, CERR_USAGE);
	run_until(x, &d.calls, 1);
	x->f = NULL;
	assert_int_equal(d.st, FIFO_CLOSED);
	assert_int_equal(before.calls, 1);
	assert_true(before.ok);
	assert_true(before.order < d.order);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(late.calls, 0);
	assert_int_equal(late_barrier.calls, 0);
}

/* The draft of cwd as a fresh store reads it. */
static char *read_draft(struct lx *x, const char *cwd)
{
	struct store *st;
	struct cerr err = {0};
	char *text = NULL;
	if (store_open(x->root, false, &st, &err) < 0 || draft_read(st, cwd, &text, &err) < 0)
		fail_msg("draft_read: %s", err.msg);
	store_close(st);
	return text;
}

static void test_drafts_saved_in_order_adjacent_ones_merged(void **state)
{
	struct lx *x = *state;
	struct rec d[5], b;
	static const char *const ids[] = {"A"};
	create_all(x, ids, 1);
	order = 0;
	/* Paused: the three drafts of /p reach the writer together, so they
	 * are one write of the newest; /q's in between would split them. */
	fifo_pause(x->f, true);
	post(x, fifo_draft("/p", "one"), &d[0]);
	post(x, fifo_draft("/p", "two"), &d[1]);
	post(x, fifo_draft("/p", "three"), &d[2]);
	post(x, fifo_draft("/q", "other"), &d[3]);
	post(x, hist("A", 2, false), &d[4]); /* an append: no rename */
	barrier(x, NULL, &b);
	faultfs_reset_counts();
	fifo_pause(x->f, false);
	run_until(x, &b.calls, 1);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(d[i].calls, 1);
		assert_true(d[i].ok);
		assert_int_equal(d[i].order, i + 1);
	}
	assert_int_equal(faultfs_count(FF_RENAME), 2); /* /p once, /q once */
	char *t = read_draft(x, "/p");
	assert_string_equal(t, "three");
	free(t);
	t = read_draft(x, "/q");
	assert_string_equal(t, "other");
	free(t);

	/* A merged run fails as a whole: the newest was not written. */
	fifo_pause(x->f, true);
	post(x, fifo_draft("/p", "four"), &d[0]);
	post(x, fifo_draft("/p", "five"), &d[1]);
	faultfs_fail(FF_RENAME, 1, EIO);
	fifo_pause(x->f, false);
	run_until(x, &d[1].calls, 1);
	assert_false(d[0].ok);
	assert_false(d[1].ok);
	t = read_draft(x, "/p");
	assert_string_equal(t, "three");
	free(t);

	/* An empty draft removes it; a usage error completes as a failure. */
	post(x, fifo_draft("/p", ""), &d[0]);
	post(x, fifo_draft("/q", "bad \xff"), &d[1]);
	run_until(x, &d[1].calls, 1);
	assert_true(d[0].ok);
	assert_false(d[1].ok);
	assert_false(exists(path_in(x->root, "drafts/-p")));
	t = read_draft(x, "/q");
	assert_string_equal(t, "other");
	free(t);
}

/* A FIFO without helper threads (a one-shot command) syncs on its writer:
 * rounds of several sessions, merged and single, complete with the right
 * seqs, and no checkpoint runs on a helper. */
static void test_no_helpers_syncs_on_the_writer(void **state)
{
	struct lx *x = *state;
	renew(x, &(struct fifo_opts){.helpers = 0});
	static const char *const ids[] = {"A", "B", "C"};
	create_all(x, ids, 3);
	uint64_t seq[3] = {2, 2, 2};
	struct rec c[60];
	for (int k = 0; k < 60; k++) {
		if (k % 20 == 0)
			fifo_set_batch_limit(x->f, (size_t)(k / 20)); /* all, 1, 2 per batch */
		post(x, hist(ids[k % 3], seq[k % 3]++, false), &c[k]);
	}
	struct rec b;
	barrier(x, NULL, &b);
	run_until(x, &b.calls, 1);
	for (int k = 0; k < 60; k++) {
		assert_int_equal(c[k].calls, 1);
		assert_true(c[k].ok);
		assert_true(c[k].order < b.order);
	}
	assert_int_equal(c[59].next_seq, seq[59 % 3]);
	assert_int_equal(fifo_helper_checkpoints(x->f), 0);
}

/* The writer forgets a session once its handle left the cache and it
 * keeps nothing else: 40 sessions written through a cache of 4 handles
 * leave at most 4 known once the writer is idle. */
static void test_idle_sessions_out_of_the_cache_are_forgotten(void **state)
{
	struct lx *x = *state;
	renew(x, &(struct fifo_opts){.helpers = 2, .max_open = 4});
	char ids[40][8];
	struct rec c[40];
	for (int i = 0; i < 40; i++) {
		snprintf(ids[i], sizeof ids[i], "S%02d", i);
		post(x, hist(ids[i], 1, true), &c[i]);
	}
	for (int i = 0; i < 40; i++) {
		run_until(x, &c[i].calls, 1);
		assert_true(c[i].ok);
	}
	uint64_t until = deadline(10000);
	while (fifo_sessions_known(x->f) > 4 && clock_mono_ns() / 1000000 < until)
		run_for(x, 5);
	assert_true(fifo_sessions_known(x->f) <= 4);
	/* A forgotten session is found again: its next write goes on. */
	post(x, hist(ids[0], 2, false), &c[0]);
	run_until(x, &c[0].calls, 1);
	assert_true(c[0].ok);
	assert_int_equal(c[0].next_seq, 3);
}

/* ---- sessions held open ---- */

/* Post it and run the loop until it completes; fails the test unless ok. */
static void post_wait(struct lx *x, struct fifo_item *it, struct rec *c)
{
	post(x, it, c);
	run_until(x, &c->calls, 1);
	if (!c->ok)
		fail_msg("item failed: %s", c->err.msg);
}

/* One event of type (turn: NULL none) with data key=value (key NULL:
 * none) as an array of events. */
static cJSON *one_event(const char *type, const char *turn, const char *key, const char *value)
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
static enum cerr_class try_lock(struct lx *x, const char *id)
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
static char *row_field(struct lx *x, const char *id, bool prompt)
{
	struct store *st;
	struct catalog *cat;
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

static char *row_status(struct lx *x, const char *id)
{
	return row_field(x, id, false);
}

/* An open takes the lock and reads the log whatever the catalog says: a
 * torn tail (garbage after the last frame, as a crash mid-write leaves) is
 * cut and the turn left open is closed by a synthetic turn/end; the
 * session comes back read, with the closer in it, and stays locked. */
static void test_open_cuts_torn_tail_and_closes_open_turn(void **state)
{
	struct lx *x = *state;
	struct rec c;
	post_wait(x, hist("A", 1, true), &c);
	post_wait(x, fifo_history("A", 2, one_event("turn/start", "t1", NULL, NULL)), &c);
	post_wait(x, fifo_release("A"), &c); /* the cache's handle goes: the file is free */
	char *path = session_path(x->root, "sessions", NULL, "A", "session.jsonl.zst");
	static const uint8_t torn[] = {0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x10, 0x01};
	spit(path, torn, sizeof torn, O_APPEND);
	post_wait(x, fifo_open("A"), &c);
	assert_int_equal(c.cut_bytes, sizeof torn);
	assert_int_equal(c.closers, 1);
	assert_int_equal(c.next_seq, 4);
	assert_non_null(c.prepared);
	assert_int_equal(prepared_scan(c.prepared)->status, SCAN_OK);
	assert_null(prepared_open_turn(c.prepared));
	const struct load *l = prepared_load(c.prepared);
	assert_int_equal(load_count(l), 4);
	assert_int_equal(load_event(l, 3)->type, VT_TURN_END);
	assert_int_equal(prepared_n_turns(c.prepared), 1);
	prepared_free(c.prepared);
	assert_int_equal(try_lock(x, "A"), CERR_LOCKED);
	/* Opened twice, the repair would end the host's own turn. */
	post(x, fifo_open("A"), &c);
	run_until(x, &c.calls, 1);
	assert_false(c.ok);
	assert_int_equal(c.err.cls, CERR_USAGE);
	/* Writes go on from the seq it reported; the release lets it go. */
	post_wait(x, hist("A", 4, false), &c);
	assert_int_equal(c.next_seq, 5);
	post_wait(x, fifo_release("A"), &c);
	assert_int_equal(try_lock(x, "A"), CERR_OK);
	free(path);
}

/* An open reads its session on a helper while the writer goes on with the
 * batch: items of other sessions in the same batch, and a write of the
 * opened session after it, all complete in post order, and the session
 * read is the log as the open left it (the later write not in it). */
static void test_open_in_a_batch_with_other_writes(void **state)
{
	struct lx *x = *state;
	static const char *const ids[] = {"A", "B"};
	create_all(x, ids, 2);
	struct rec c[5];
	fifo_pause(x->f, true);
	post(x, hist("B", 2, false), &c[0]);
	post(x, fifo_open("A"), &c[1]);
	post(x, hist("B", 3, false), &c[2]);
	post(x, hist("A", 2, false), &c[3]);
	barrier(x, NULL, &c[4]);
	fifo_pause(x->f, false);
	run_until(x, &c[4].calls, 1);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(c[i].calls, 1);
		assert_true(c[i].ok);
		assert_true(i == 0 || c[i - 1].order < c[i].order);
	}
	assert_int_equal(c[1].next_seq, 2);
	assert_int_equal(prepared_scan(c[1].prepared)->status, SCAN_OK);
	assert_int_equal(load_count(prepared_load(c[1].prepared)), 2); /* header and its first event */
	prepared_free(c[1].prepared);
	assert_int_equal(c[2].next_seq, 4);
	assert_int_equal(c[3].next_seq, 3);
	assert_int_equal(try_lock(x, "A"), CERR_LOCKED);
}

/* Set the catalog's last_prompt of id behind the FIFO's back (a row the
 * log does not say), then return what the row says after an open and a
 * release. */
static char *prompt_after_open(struct lx *x, const char *id, const char *set)
{
	char *db = xasprintf("%s/index.db", x->root), *sql = NULL;
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	sql = sqlite3_mprintf("UPDATE sessions SET last_prompt = %Q WHERE id = %Q", set, id);
	assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_free(sql);
	sqlite3_close(h);
	free(db);
	struct rec c;
	post_wait(x, fifo_open(id), &c);
	prepared_free(c.prepared);
	post_wait(x, fifo_release(id), &c);
	return row_field(x, id, true);
}

/* An open rebuilds the session's row only when it is not the projection of
 * the log file as read (identity, length, ctime, version): for an
 * unchanged log it writes nothing but the status (rebuilding a long
 * session's row and search index whole was most of the cost of opening
 * it). A log whose file changed in any way (here only its ctime, by a
 * chmod) is projected again, and a status left running is cleared either
 * way. */
static void test_open_rebuilds_the_row_only_for_a_changed_log(void **state)
{
	struct lx *x = *state;
	struct rec c;
	post_wait(x, hist("A", 1, true), &c);
	post_wait(x, fifo_release("A"), &c);
	char *p = prompt_after_open(x, "A", "not in the log");
	assert_string_equal(p, "not in the log"); /* the row was left alone */
	free(p);
	char *path = session_path(x->root, "sessions", NULL, "A", "session.jsonl.zst");
	assert_int_equal(chmod(path, 0640), 0);
	p = prompt_after_open(x, "A", "not in the log either");
	assert_string_equal(p, "hello"); /* projected again from the log */
	free(p);
	struct store *st;
	struct catalog *cat;
	struct cerr err = {0};
	if (store_open(x->root, false, &st, &err) < 0 || catalog_open(st, &cat, &err) < 0 ||
	    catalog_set_status(cat, "A", "running", &err) < 0)
		fail_msg("catalog: %s", err.msg);
	catalog_close(cat);
	store_close(st);
	free(prompt_after_open(x, "A", "hello"));
	char *status = row_status(x, "A");
	assert_string_equal(status, "idle");
	free(status);
	free(path);
}

/* A session that does not exist cannot be held. */
static void test_open_missing_session_fails(void **state)
{
	struct lx *x = *state;
	struct rec c;
	post(x, fifo_open("NONE"), &c);
	run_until(x, &c.calls, 1);
	assert_false(c.ok);
	assert_int_equal(c.err.cls, CERR_MISSING);
}

/* A held session is never closed by the handle cache: with room for 4
 * handles, 200 other sessions written after the open leave it locked (a
 * descriptor of another open file description gets CERR_LOCKED), while
 * the others' handles are closed once the writer takes its next batch
 * (their locks are free). */
static void test_held_session_survives_handle_cache(void **state)
{
	struct lx *x = *state;
	renew(x, &(struct fifo_opts){.helpers = 2, .max_open = 4});
	struct rec c;
	post_wait(x, hist("H", 1, true), &c);
	post_wait(x, fifo_open("H"), &c);
	prepared_free(c.prepared);
	static struct rec cs[200];
	for (int i = 0; i < 200; i++) {
		char id[8];
		snprintf(id, sizeof id, "S%03d", i);
		post(x, hist(id, 1, true), &cs[i]);
	}
	for (int i = 0; i < 200; i++) {
		run_until(x, &cs[i].calls, 1);
		assert_true(cs[i].ok);
	}
	assert_int_equal(try_lock(x, "H"), CERR_LOCKED);
	post_wait(x, hist("H", 2, false), &c);
	assert_int_equal(c.next_seq, 3);
	/* The cache trims at the writer's next batch: a round still in
	 * flight when the 200 completed keeps its handles till then. */
	assert_int_equal(try_lock(x, "S000"), CERR_OK);
	post_wait(x, fifo_release("H"), &c);
	assert_int_equal(try_lock(x, "H"), CERR_OK);
}

/* A history item marked running sets the row's status in the transaction
 * of its append (also the append that creates the session); a full save
 * clears it back to idle. */
static void test_running_set_with_append_cleared_by_full_save(void **state)
{
	struct lx *x = *state;
	struct rec c;
	struct fifo_item *it = hist("A", 1, true);
	fifo_item_set_running(it);
	post_wait(x, it, &c);
	char *st = row_status(x, "A");
	assert_string_equal(st, "running");
	free(st);
	post_wait(x, fifo_history("A", 2, one_event("turn/start", "t1", NULL, NULL)), &c);
	it = fifo_history("A", 3, one_event("user/message", "t1", "text", "go"));
	fifo_item_set_running(it);
	post_wait(x, it, &c);
	st = row_status(x, "A");
	assert_string_equal(st, "running");
	free(st);
	assert_int_equal(try_lock(x, "A"), CERR_LOCKED); /* the writer holds it while running */
	cJSON *end = one_event("turn/end", "t1", "outcome", "completed");
	post_wait(x, fifo_full_save("A", 4, c.version, end), &c);
	st = row_status(x, "A");
	assert_string_equal(st, "idle");
	free(st);
}

/* A row left running by a crash (no writer holds the session's lock) is
 * stale: it does not keep the session from being deleted. */
static void test_stale_running_row_does_not_block_delete(void **state)
{
	struct lx *x = *state;
	struct rec c;
	post_wait(x, hist("A", 1, true), &c);
	post_wait(x, fifo_release("A"), &c); /* as after the writer's process died */
	struct store *st;
	struct catalog *cat;
	struct cerr err = {0};
	if (store_open(x->root, false, &st, &err) < 0 || catalog_open(st, &cat, &err) < 0 ||
	    catalog_set_status(cat, "A", "running", &err) < 0)
		fail_msg("catalog: %s", err.msg);
	catalog_close(cat);
	store_close(st);
	post_wait(x, fifo_delete("A"), &c);
}

/* A created session's header names the provider, the model and the fork
 * it came from. */
static void test_create_sets_header_provider_model_forked_from(void **state)
{
	struct lx *x = *state;
	struct rec c;
	struct fifo_item *it = hist("F", 1, false);
	cJSON *from = cJSON_CreateObject();
	cJSON_AddStringToObject(from, "session", "A");
	cJSON_AddNumberToObject(from, "seq", 3);
	fifo_item_create_header(it, "/proj", "anthropic", "claude-x", from);
	cJSON_Delete(from);
	post_wait(x, it, &c);
	post_wait(x, fifo_open("F"), &c);
	cJSON *line = load_json(prepared_load(c.prepared), 0);
	const cJSON *h = cJSON_GetObjectItem(line, "data");
	assert_string_equal(cJSON_GetObjectItem(h, "provider")->valuestring, "anthropic");
	assert_string_equal(cJSON_GetObjectItem(h, "model")->valuestring, "claude-x");
	const cJSON *ff = cJSON_GetObjectItem(h, "forked_from");
	assert_string_equal(cJSON_GetObjectItem(ff, "session")->valuestring, "A");
	assert_string_equal(prepared_scan(c.prepared)->cwd, "/proj");
	assert_string_equal(prepared_settings(c.prepared)->provider, "anthropic");
	cJSON_Delete(line);
	prepared_free(c.prepared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_barrier_after_earlier_items_before_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_barrier_waits_for_all_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_barrier_waits_for_round_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_times_out_then_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_after_close_is_refused_and_never_called_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drafts_saved_in_order_adjacent_ones_merged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_helpers_syncs_on_the_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_sessions_out_of_the_cache_are_forgotten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_cuts_torn_tail_and_closes_open_turn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_rebuilds_the_row_only_for_a_changed_log, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_missing_session_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_in_a_batch_with_other_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_session_survives_handle_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_running_set_with_append_cleared_by_full_save, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_sets_header_provider_model_forked_from, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_running_row_does_not_block_delete, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
