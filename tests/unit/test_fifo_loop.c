/* test_fifo_loop.c — the FIFO used from a running libuv loop that never
 * waits: fifo_barrier ordered against the items of its session (and of all
 * sessions), also while the writer's round in flight is still syncing, and
 * the asynchronous fifo_close with a deadline: a stalled fdatasync (the
 * fault file system) makes it time out with the items outstanding, keeping
 * the FIFO working, and a second close after the stall finishes; no post is
 * taken once a close began; drafts go through the FIFO in post order, adjacent
 * drafts of one project written once with the newest text. Each test ends
 * with uv_loop_close() == 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/draft.h"
#include "persist/fifo.h"
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

static uint64_t deadline(int64_t ms)
{
	return (uint64_t)((int64_t)(clock_mono_ns() / 1000000) + ms);
}

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
	if (!(x->f = fifo_new(&x->loop, x->root, &err)))
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
	uint64_t next_seq;
};

static void done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	struct rec *c = ctx;
	c->calls++;
	c->order = ++order;
	c->ok = err == NULL;
	c->next_seq = r ? r->next_seq : 0;
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
static void test_post_after_close_fails(void **state)
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_barrier_after_earlier_items_before_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_barrier_waits_for_all_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_barrier_waits_for_round_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_times_out_then_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_after_close_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drafts_saved_in_order_adjacent_ones_merged, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
