/* test_fifo_loop.c — the FIFO used from a running libuv loop that never
 * waits: fifo_barrier ordered against the items of its session (and of all
 * sessions), also while the writer's round in flight is still syncing, and
 * the asynchronous fifo_close with a deadline: a stalled fdatasync (the
 * fault file system) makes it time out with the items outstanding, keeping
 * the FIFO working, and a second close after the stall finishes; no post is
 * taken once a close began; drafts go through the FIFO in post order, adjacent
 * drafts of one project written once with the newest text; a FIFO without
 * helpers; sessions forgotten once idle. Sessions held open are
 * test_fifo_held.c's. Each test ends with uv_loop_close() == 0. */
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
#include "tests/unit/support_fifoloop.h"
#include "tests/unit/support_fixture.h"


/* Rounds of "A, B, A, barrier A, A, B": the barrier's callback follows
 * each earlier item of A and precedes each later one, whatever batches and
 * rounds the writer made of them. */
static void test_barrier_after_earlier_items_before_later(void **state)
{
	struct lx *x = *state;
	static const char *const ids[] = {"A", "B"};
	lx_create_all(x, ids, 2);
	uint64_t a = 2, b = 2;
	for (int k = 0; k < 40; k++) {
		struct lx_rec c[6];
		fifo_set_batch_limit(x->f, (size_t)(k % 3)); /* all, 1, 2 per batch */
		lx_post(x, lx_hist("A", a++, false), &c[0]);
		lx_post(x, lx_hist("B", b++, false), &c[1]);
		lx_post(x, lx_hist("A", a++, false), &c[2]);
		lx_barrier(x, "A", &c[3]);
		lx_post(x, lx_hist("A", a++, false), &c[4]);
		lx_post(x, lx_hist("B", b++, false), &c[5]);
		for (int i = 0; i < 6; i++)
			lx_run_until(x, &c[i].calls, 1);
		lx_run_for(x, 1); /* a second completion would show now */
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
	lx_create_all(x, ids, 3);
	struct lx_rec c[8];
	fifo_set_batch_limit(x->f, 1); /* one item per round: several in flight in turn */
	lx_post(x, lx_hist("A", 2, false), &c[0]);
	lx_post(x, lx_hist("B", 2, false), &c[1]);
	lx_post(x, lx_hist("C", 2, false), &c[2]);
	lx_post(x, lx_hist("C", 3, false), &c[3]);
	lx_barrier(x, NULL, &c[4]);
	lx_post(x, lx_hist("B", 3, false), &c[5]);
	for (int i = 0; i < 6; i++)
		lx_run_until(x, &c[i].calls, 1);
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
	lx_create_all(x, ids, 1);
	lx_order = 0;
	struct lx_rec c[4];
	atomic_store(&lx_stall, true);
	fifo_set_batch_limit(x->f, 1);
	fifo_pause(x->f, true);
	lx_post(x, lx_hist("A", 2, false), &c[0]);
	lx_barrier(x, "A", &c[1]);
	lx_barrier(x, NULL, &c[2]);
	lx_post(x, lx_hist("A", 3, false), &c[3]);
	fifo_pause(x->f, false);
	uint64_t until = deadline(10000);
	while (atomic_load(&lx_stalled) == 0 && clock_mono_ns() / 1000000 < until)
		lx_run_for(x, 1);
	assert_int_not_equal(atomic_load(&lx_stalled), 0); /* the first round is committed, syncing */
	lx_run_for(x, 150);
	for (int i = 0; i < 4; i++)
		assert_int_equal(c[i].calls, 0);
	atomic_store(&lx_stall, false);
	for (int i = 0; i < 4; i++)
		lx_run_until(x, &c[i].calls, 1);
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
	lx_create_all(x, ids, 1);
	lx_order = 0;
	struct lx_rec c[3];
	struct cerr err = {0};
	atomic_store(&lx_stall, true);
	lx_post(x, lx_hist("A", 2, false), &c[0]);
	struct lx_closed t = {0};
	uint64_t t0 = clock_mono_ns();
	assert_int_equal(fifo_close(x->f, deadline(100), lx_close_done, &t), 0);
	assert_int_equal(fifo_close(x->f, deadline(100), lx_close_done, &t), -1); /* one at a time */
	lx_run_until(x, &t.calls, 1);
	uint64_t waited_ms = (clock_mono_ns() - t0) / 1000000;
	assert_int_equal(t.st, FIFO_TIMED_OUT);
	assert_int_equal(t.outstanding, 1);
	assert_true(waited_ms >= 90);
	assert_int_equal(c[0].calls, 0);
	/* Still the caller's and still working. */
	lx_barrier(x, "A", &c[1]);
	lx_post(x, lx_hist("A", 3, false), &c[2]);
	atomic_store(&lx_stall, false);
	struct lx_closed d = {0};
	assert_int_equal(fifo_close(x->f, deadline(10000), lx_close_done, &d), 0);
	assert_int_equal(fifo_post(x->f, lx_hist("A", 4, false), lx_done_cb, &c[0], &err), -1);
	lx_run_until(x, &d.calls, 1);
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
	struct lx_rec before, late, late_barrier;
	struct cerr err = {0};
	lx_post(x, lx_hist("A", 1, true), &before);
	struct lx_closed d = {0};
	assert_int_equal(fifo_close(x->f, deadline(10000), lx_close_done, &d), 0);
	memset(&late, 0, sizeof late);
	memset(&late_barrier, 0, sizeof late_barrier);
	assert_int_equal(fifo_post(x->f, lx_hist("A", 2, false), lx_done_cb, &late, &err), -1);
	assert_int_equal(err.cls, CERR_USAGE);
	err = (struct cerr){0};
	assert_int_equal(fifo_barrier(x->f, "A", lx_done_cb, &late_barrier, &err), -1);
	assert_int_equal(err.cls, CERR_USAGE);
	lx_run_until(x, &d.calls, 1);
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
	struct lx_rec d[5], b;
	static const char *const ids[] = {"A"};
	lx_create_all(x, ids, 1);
	lx_order = 0;
	/* Paused: the three drafts of /p reach the writer together, so they
	 * are one write of the newest; /q's in between would split them. */
	fifo_pause(x->f, true);
	lx_post(x, fifo_draft("/p", "one"), &d[0]);
	lx_post(x, fifo_draft("/p", "two"), &d[1]);
	lx_post(x, fifo_draft("/p", "three"), &d[2]);
	lx_post(x, fifo_draft("/q", "other"), &d[3]);
	lx_post(x, lx_hist("A", 2, false), &d[4]); /* an append: no rename */
	lx_barrier(x, NULL, &b);
	faultfs_reset_counts();
	fifo_pause(x->f, false);
	lx_run_until(x, &b.calls, 1);
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
	lx_post(x, fifo_draft("/p", "four"), &d[0]);
	lx_post(x, fifo_draft("/p", "five"), &d[1]);
	faultfs_fail(FF_RENAME, 1, EIO);
	fifo_pause(x->f, false);
	lx_run_until(x, &d[1].calls, 1);
	assert_false(d[0].ok);
	assert_false(d[1].ok);
	t = read_draft(x, "/p");
	assert_string_equal(t, "three");
	free(t);

	/* An empty draft removes it; a usage error completes as a failure. */
	lx_post(x, fifo_draft("/p", ""), &d[0]);
	lx_post(x, fifo_draft("/q", "bad \xff"), &d[1]);
	lx_run_until(x, &d[1].calls, 1);
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
	lx_renew(x, &(struct fifo_opts){.helpers = 0});
	static const char *const ids[] = {"A", "B", "C"};
	lx_create_all(x, ids, 3);
	uint64_t seq[3] = {2, 2, 2};
	struct lx_rec c[60];
	for (int k = 0; k < 60; k++) {
		if (k % 20 == 0)
			fifo_set_batch_limit(x->f, (size_t)(k / 20)); /* all, 1, 2 per batch */
		lx_post(x, lx_hist(ids[k % 3], seq[k % 3]++, false), &c[k]);
	}
	struct lx_rec b;
	lx_barrier(x, NULL, &b);
	lx_run_until(x, &b.calls, 1);
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
	lx_renew(x, &(struct fifo_opts){.helpers = 2, .max_open = 4});
	char ids[40][8];
	struct lx_rec c[40];
	for (int i = 0; i < 40; i++) {
		snprintf(ids[i], sizeof ids[i], "S%02d", i);
		lx_post(x, lx_hist(ids[i], 1, true), &c[i]);
	}
	for (int i = 0; i < 40; i++) {
		lx_run_until(x, &c[i].calls, 1);
		assert_true(c[i].ok);
	}
	uint64_t until = deadline(10000);
	while (fifo_sessions_known(x->f) > 4 && clock_mono_ns() / 1000000 < until)
		lx_run_for(x, 5);
	assert_true(fifo_sessions_known(x->f) <= 4);
	/* A forgotten session is found again: its next write goes on. */
	lx_post(x, lx_hist(ids[0], 2, false), &c[0]);
	lx_run_until(x, &c[0].calls, 1);
	assert_true(c[0].ok);
	assert_int_equal(c[0].next_seq, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_barrier_after_earlier_items_before_later, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_null_barrier_waits_for_all_sessions, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_barrier_waits_for_round_in_flight, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_close_times_out_then_closes, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_post_after_close_is_refused_and_never_called_back, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_drafts_saved_in_order_adjacent_ones_merged, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_no_helpers_syncs_on_the_writer, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_idle_sessions_out_of_the_cache_are_forgotten, lx_setup, lx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
