/* test_fifo_close.c — the FIFO's deadlines (persist/fifo.h; the fixture:
 * support_fifo.h): flush returns once everything earlier is durable, or at
 * a passed deadline while the writer is paused, losing nothing; close times
 * out on a paused writer keeping ownership, then closes delivering what was
 * pending; a post after close fails and its callback never runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "base/clock.h"
#include "persist/fifo.h"
#include "persist/scan.h"
#include "tests/unit/support_fifo.h"
#include "tests/unit/support_fixture.h"

/* Flush returns 0 once everything earlier is durable (the log already holds
 * it before the loop delivers anything), and 1 at a passed deadline while
 * the writer is paused; nothing is lost by a timeout. */
static void test_flush_waits_for_durability_and_times_out_losing_nothing(void **state)
{
	struct fx *x = *state;
	struct rec c[3], setup;
	step(x, create("A", NULL, "a", 1), &setup);
	step(x, create("B", NULL, "b", 1), &setup);
	fifo_pause(x->f, true);
	post(x, hist("A", 2, "fa", 2), &c[0]);
	post(x, hist("B", 2, "fb", 1), &c[1]);
	post(x, hist("A", 4, "fa2", 1), &c[2]);
	uint64_t past = deadline(-5);
	assert_int_equal(fifo_flush_wait(x->f, "A", past), 1);
	assert_int_equal(fifo_flush_wait(x->f, NULL, past), 1);
	assert_int_equal(fifo_flush_wait(x->f, "nobody", past), 0); /* nothing posted for it */
	uint64_t t0 = clock_mono_ns();
	assert_int_equal(fifo_flush_wait(x->f, "B", deadline(80)), 1);
	assert_true(clock_mono_ns() - t0 >= 70 * 1000000ull);
	assert_int_equal(next_seq_of(x, "A"), 2);
	uv_run(&x->loop, UV_RUN_NOWAIT);
	for (int i = 0; i < 3; i++)
		assert_int_equal(c[i].calls, 0);

	fifo_pause(x->f, false);
	assert_int_equal(fifo_flush_wait(x->f, "A", deadline(10000)), 0);
	struct scan *s = scan_of(x, "A"); /* durable before any delivery */
	assert_int_equal(s->rev.next_seq, 5);
	assert_string_equal(text_at(s, 4), "fa2 0");
	scan_free(s);
	assert_int_equal(fifo_flush_wait(x->f, NULL, deadline(10000)), 0);
	assert_int_equal(next_seq_of(x, "B"), 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(c[i].calls, 0);
	wait_all(x, c, 3);
	want_ok(&c[0], "A"), want_ok(&c[1], "B"), want_ok(&c[2], "A");
	assert_int_equal(c[2].r.next_seq, 5);
	assert_int_equal(c[1].r.next_seq, 3);
}

/* fifo_close_wait on a paused writer times out and keeps ownership; once let go
 * it closes, delivering what was pending; a post after that fails and its
 * callback never runs. */
static void test_close_timeout_and_post_after_close(void **state)
{
	struct fx *x = *state;
	struct rec c, setup, late;
	struct cerr err = {0};
	step(x, create("A", NULL, "a", 1), &setup);
	fifo_pause(x->f, true);
	post(x, hist("A", 2, "pending", 1), &c);
	assert_int_equal(fifo_close_wait(x->f, deadline(-1)), 1);
	assert_int_equal(fifo_close_wait(x->f, deadline(30)), 1);
	uv_run(&x->loop, UV_RUN_NOWAIT);
	assert_int_equal(c.calls, 0);
	assert_int_equal(next_seq_of(x, "A"), 2);
	fifo_pause(x->f, false);
	assert_int_equal(fifo_close_wait(x->f, deadline(10000)), 0);
	assert_int_equal(c.calls, 1); /* delivered by the close, on this thread */
	assert_true(c.on_loop);
	want_ok(&c, "pending item");
	assert_int_equal(c.r.next_seq, 3);
	assert_int_equal(next_seq_of(x, "A"), 3);
	memset(&late, 0, sizeof late);
	assert_int_equal(fifo_post(x->f, hist("A", 3, "late", 1), done_cb, &late, &err), -1);
	assert_int_not_equal(err.cls, CERR_OK);
	x->f = NULL;
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(late.calls, 0);
	assert_int_equal(next_seq_of(x, "A"), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FIFOFX_TEST(test_flush_waits_for_durability_and_times_out_losing_nothing),
		FIFOFX_TEST(test_close_timeout_and_post_after_close),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
