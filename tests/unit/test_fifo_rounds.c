/* test_fifo_rounds.c — persist/fifo.h (the fixture: support_fifo.h) when
 * rounds overlap and writers change: full saves posted before the last
 * receipt share one round and one sync, a session's next round is written
 * while the one before it syncs, a stale version in such a round conflicts
 * and what follows it fails fast, a new writer checks the version of its
 * very first item, and a writer opening a log raises a lagging durable
 * watermark. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "persist/catalog.h"
#include "persist/fifo.h"
#include "persist/scan.h"
#include "tests/unit/support_fifo.h"
#include "tests/unit/support_fixture.h"

/* Items c[0..n) acknowledged, each with next seq and content version
 * want[i] (one event a seq: the version is the projected next seq). */
static void want_receipts(const struct rec *c, const uint64_t *want, int n)
{
	for (int i = 0; i < n; i++) {
		want_ok(&c[i], "a pipelined item");
		assert_int_equal(c[i].r.next_seq, want[i]);
		assert_int_equal(c[i].r.content_version, want[i]);
	}
}

/* Wait until the catalog records durable seq `seq` for session id. */
static void wait_watermark(struct fx *x, const char *id, uint64_t seq)
{
	uint64_t until = deadline(5000);
	for (;;) {
		struct cat_session row = row_of(x, id);
		uint64_t at = row.durable_seq;
		cat_session_release(&row);
		if (at == seq)
			return;
		if (clock_mono_ns() / 1000000 > until)
			fail_msg("the watermark stays at %llu, not %llu", (unsigned long long)at,
				 (unsigned long long)seq);
		usleep(1000);
	}
}

/* P at seq and version 10: a full save that fits, then one with a stale
 * version (a conflict) and a history item after it (fails fast), queued
 * together; c gets the three completions. */
static void stale_then_after(struct fx *x, struct rec *c)
{
	fifo_pause(x->f, true);
	post(x, full("P", 10, 10, "e", 1), &c[0]);
	post(x, full("P", 11, 10, "stale", 1), &c[1]);
	post(x, hist("P", 11, "after", 1), &c[2]);
	fifo_pause(x->f, false);
	wait_all(x, c, 3);
	check_receipt(x, "P", &c[0], 11);
	want_err(&c[1], CERR_CONFLICT, "a stale expected version");
	want_err(&c[2], CERR_CONFLICT, "an item after the conflict");
	assert_non_null(strstr(c[2].err.msg, "failed save before this one"));
	assert_int_equal(next_seq_of(x, "P"), 11);
}

/* Full saves posted before the last receipt (each expects the version the
 * one before it makes: the next seq) run in one round with one sync of the
 * log; receipts come in order and the watermark follows once the writer is
 * idle. In the same way a save whose expected version is stale conflicts,
 * and the session's later items in the round fail fast. */
static void test_pipelined_full_saves_share_one_round_and_sync(void **state)
{
	struct fx *x = *state;
	struct rec c[8];
	step_ok(x, create("P", NULL, "p", 2), &c[0], "create");
	fifo_pause(x->f, true);
	post(x, full("P", 3, 3, "a", 2), &c[1]);
	post(x, full("P", 5, 5, "b", 1), &c[2]);
	post(x, hist("P", 6, "c", 3), &c[3]);
	post(x, full("P", 9, 9, "d", 1), &c[4]);
	fifo_pause(x->f, false);
	wait_all(x, c + 1, 4);
	want_receipts(c + 1, (const uint64_t[]){5, 6, 9, 10}, 4);
	check_receipt(x, "P", &c[4], 10);
	/* The watermark is recorded after the sync, when the writer idles. */
	wait_watermark(x, "P", 10);
	stale_then_after(x, c + 5);
}

/* Each item a batch of its own, queued before the one ahead settles: a
 * session's next round is written while the one before it syncs (its
 * lane then syncs it right after), another session's rounds interleave.
 * Receipts, the log's order, the catalog's row and the watermark all
 * come out as if each had waited; a stale version in such a round still
 * conflicts, and what follows it fails fast. */
static void test_overlapping_rounds_end_as_if_each_had_waited(void **state)
{
	struct fx *x = *state;
	struct rec c[10];
	step_ok(x, create("P", NULL, "p", 2), &c[0], "create P");
	step_ok(x, create("R", NULL, "r", 1), &c[1], "create R");
	fifo_pause(x->f, true);
	fifo_set_batch_limit(x->f, 1);
	post(x, full("P", 3, 3, "a", 2), &c[2]);
	post(x, full("P", 5, 5, "b", 1), &c[3]);
	post(x, full("R", 2, 2, "s", 1), &c[4]);
	post(x, hist("P", 6, "c", 3), &c[5]);
	post(x, full("P", 9, 9, "d", 1), &c[6]);
	fifo_pause(x->f, false);
	wait_all(x, c + 2, 5);
	want_receipts(c + 2, (const uint64_t[]){5, 6, 3, 9, 10}, 5);
	check_receipt(x, "P", &c[6], 10);
	check_receipt(x, "R", &c[4], 3);
	struct scan *sc = scan_of(x, "P");
	assert_non_null(sc);
	const char *texts[] = {"p 0", "p 1", "a 0", "a 1", "b 0", "c 0", "c 1", "c 2", "d 0"};
	assert_int_equal(sc->n_events, 10); /* the header, then seq 1.. */
	for (size_t i = 0; i < 9; i++)
		assert_string_equal(text_at(sc, i + 1), texts[i]);
	scan_free(sc);
	wait_watermark(x, "P", 10);
	stale_then_after(x, c + 7);
	fifo_set_batch_limit(x->f, 0);
}

/* A new writer (a new process) builds on what the catalog says: its very
 * first item, a full save at the session's version, goes through, and one
 * at a stale version conflicts. */
static void reopen_fifo(struct fx *x)
{
	struct cerr err = {0};
	assert_int_equal(fifo_close_wait(x->f, deadline(10000)), 0);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
}

static void test_new_writer_checks_the_first_item_version(void **state)
{
	struct fx *x = *state;
	struct rec c[4];
	step_ok(x, create("Q", NULL, "q", 2), &c[0], "create");
	step_ok(x, full("Q", 3, 3, "a", 1), &c[1], "full save");
	reopen_fifo(x);
	step_err(x, full("Q", 4, 3, "stale", 1), &c[2], CERR_CONFLICT, "first item, stale version");
	reopen_fifo(x);
	step(x, full("Q", 4, 4, "b", 1), &c[3]);
	check_receipt(x, "Q", &c[3], 5);
}

/* A writer that opens a log whose watermark lags (here: the catalog holds
 * another log's) syncs the log and raises it to all of it, even when it
 * writes nothing. */
static void test_writer_open_raises_a_lagging_watermark(void **state)
{
	struct fx *x = *state;
	struct rec c[2];
	struct cerr err;
	step_ok(x, create("H", NULL, "h", 2), &c[0], "create");
	struct cat_watermark wm = {.known = true, .rev.len = 10, .rev.next_seq = 1};
	memset(wm.head, 0xAB, sizeof wm.head);
	assert_int_equal(catalog_set_watermark(x->cat, "H", &wm, &err), 0);
	reopen_fifo(x);
	step_ok(x, hist("H", 3, "none", 0), &c[1], "an empty batch");
	assert_int_equal(catalog_get_watermark(x->cat, "H", &wm, &err), 0);
	size_t n;
	uint8_t *bytes = log_bytes(x, "H", &n);
	struct scan *s = scan_of(x, "H");
	assert_true(wm.known);
	assert_int_equal(wm.rev.len, n);
	assert_int_equal(wm.rev.next_seq, 3);
	assert_memory_equal(wm.head, s->head, SHA256_LEN);
	scan_free(s);
	free(bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FIFOFX_TEST(test_pipelined_full_saves_share_one_round_and_sync),
		FIFOFX_TEST(test_overlapping_rounds_end_as_if_each_had_waited),
		FIFOFX_TEST(test_new_writer_checks_the_first_item_version),
		FIFOFX_TEST(test_writer_open_raises_a_lagging_watermark),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
