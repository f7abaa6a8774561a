/* test_sink.c — the ordered event sink (sink/sink.h) on a real libuv loop:
 * publication order is delivery order, a marker comes after everything
 * published before it, deltas coalesce only with the queued delta of the
 * same stream, a consumer that stops reading pauses the producer within
 * the limits and resumes it under the low mark, nothing is delivered from
 * inside a publish, and the sink closes like a uv handle. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "sink/sink.h"

struct seen {
	struct buf log;       /* one line per item: kind and content */
	struct buf text;      /* every delta, concatenated */
	size_t items, texts, markers;
	size_t stop_after;    /* read_stop after this many items (0: never) */
	int pauses, resumes;
	bool in_publish;      /* set around publish calls: delivery must not happen then */
	struct sink_op current;
	size_t settled;       /* markers of the current operation */
	size_t republish;     /* publish this many events from inside the callback */
};

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	struct seen *w = ctx;
	if (w->in_publish)
		fail_msg("an item was delivered from inside a publish");
	w->items++;
	switch (it->kind) {
	case SINK_EVENT:
		buf_printf(&w->log, "event %s %llu\n", vocab_type_name(it->vtype),
			   (unsigned long long)it->seq);
		break;
	case SINK_TEXT:
		w->texts++;
		buf_add(&w->text, it->text, it->len);
		assert_int_equal(strlen(it->text), it->len);
		buf_printf(&w->log, "text %d %s\n", (int)it->stream, it->turn ? it->turn : "-");
		break;
	case SINK_NOTICE:
		buf_printf(&w->log, "notice %s\n", sink_notice_name(it->notice));
		break;
	case SINK_MARKER:
		w->markers++;
		if (sink_op_same(&it->op, &w->current))
			w->settled++;
		buf_printf(&w->log, "marker %s %s/%llu/%llu\n", sink_marker_name(it->marker), it->op.session,
			   (unsigned long long)it->op.generation, (unsigned long long)it->op.operation);
		break;
	}
	if (w->republish) {
		w->republish--;
		sink_publish_event(s, &it->op, VT_STEP_END, NULL, 900 + w->republish, true, NULL);
	}
	if (w->stop_after && w->items == w->stop_after)
		sink_read_stop(s);
}

static void pressure_cb(struct sink *s, bool paused, void *ctx)
{
	(void)s;
	struct seen *w = ctx;
	if (paused)
		w->pauses++;
	else
		w->resumes++;
}

static void closed_cb(struct sink *s, void *ctx)
{
	(void)s;
	(*(int *)ctx)++;
}

static void finish(uv_loop_t *loop, struct sink *s, struct seen *w)
{
	int closed = 0;
	sink_close(s, closed_cb, &closed);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(closed, 1);
	assert_int_equal(uv_loop_close(loop), 0);
	buf_release(&w->log);
	buf_release(&w->text);
}

/* Every kind, in one order, arrives in that order, and only from the loop. */
static void test_sink_delivers_in_publication_order_from_the_loop(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sink *s = sink_new(&loop, NULL);
	struct seen w = {.log = BUF_INIT, .text = BUF_INIT};
	sink_op_set(&w.current, "S1", 1, 7);
	sink_read_start(s, read_cb, &w);
	cJSON *d = cJSON_Parse("{\"text\":\"hi\"}");
	w.in_publish = true;
	sink_publish_event(s, &w.current, VT_TURN_START, "t1", 3, true, NULL);
	sink_publish_event(s, &w.current, VT_USER_MESSAGE, "t1", 4, true, d);
	sink_publish_text(s, &w.current, "t1", SINK_STREAM_REASONING, "hmm", 3);
	sink_publish_text(s, &w.current, "t1", SINK_STREAM_TEXT, "Hello", 5);
	sink_publish_notice(s, &w.current, SINK_NOTICE_SAVED, NULL);
	sink_publish_text(s, &w.current, "t1", SINK_STREAM_TEXT, " world", 6);
	sink_publish_marker(s, &w.current, SINK_MARKER_TURN_DONE, d);
	w.in_publish = false;
	cJSON_Delete(d);
	assert_int_equal(w.items, 0);
	assert_int_equal(sink_queued(s), 7);
	uv_run(&loop, UV_RUN_DEFAULT); /* returns: an empty sink keeps no loop alive */
	assert_string_equal(w.log.p, "event turn/start 3\n"
				     "event user/message 4\n"
				     "text 1 t1\n"
				     "text 0 t1\n"
				     "notice saved\n"
				     "text 0 t1\n"
				     "marker turn_done S1/1/7\n");
	assert_string_equal(w.text.p, "hmmHello world");
	assert_int_equal(w.settled, 1);
	assert_int_equal(sink_queued(s), 0);
	assert_int_equal(sink_queued_bytes(s), 0);
	finish(&loop, s, &w);
}

/* Queued deltas of one stream merge into one item with the same bytes; a
 * structural item, another stream, turn or operation, or the size cap
 * starts a new one, so order and content never change. */
static void test_sink_coalesces_only_adjacent_deltas_of_one_stream(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sink_limits lim = SINK_LIMITS_DEFAULT;
	lim.text_max = 1000;
	struct sink *s = sink_new(&loop, &lim);
	struct seen w = {.log = BUF_INIT, .text = BUF_INIT};
	struct sink_op op, other;
	sink_op_set(&op, "S1", 1, 1);
	sink_op_set(&other, "S1", 2, 1);
	struct buf want = BUF_INIT;
	for (int i = 0; i < 300; i++) { /* 300 x 10 bytes: 3 items under the cap of 1000 */
		char piece[16];
		snprintf(piece, sizeof piece, "<%07d>", i);
		sink_publish_text(s, &op, "t1", SINK_STREAM_TEXT, piece, 9);
		buf_add(&want, piece, 9);
	}
	sink_publish_text(s, &op, "t1", SINK_STREAM_TEXT, "\xc3\xa9", 2); /* joins the last */
	buf_add(&want, "\xc3\xa9", 2);
	sink_publish_event(s, &op, VT_TOOL_CALL, "t1", 0, false, NULL);
	sink_publish_text(s, &op, "t1", SINK_STREAM_TEXT, "a", 1);
	sink_publish_text(s, &op, "t2", SINK_STREAM_TEXT, "b", 1);
	sink_publish_text(s, &op, "t2", SINK_STREAM_REASONING, "c", 1);
	sink_publish_text(s, &other, "t2", SINK_STREAM_REASONING, "d", 1);
	sink_publish_text(s, &other, "t2", SINK_STREAM_REASONING, "e", 1);
	sink_publish_text(s, &other, "t2", SINK_STREAM_REASONING, "", 0); /* nothing */
	buf_adds(&want, "abcde");
	assert_int_equal(sink_queued(s), 3 + 1 + 4);
	sink_read_start(s, read_cb, &w);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(w.texts, 3 + 4);
	assert_int_equal(w.items, 8);
	assert_string_equal(w.text.p, want.p);
	buf_release(&want);
	finish(&loop, s, &w);
}

/* A consumer that stops reading holds the producer: the pressure callback
 * says pause once the queued bytes reach the high mark (a producer that
 * obeys never queues much more), and go on once reading brings them down
 * to the low mark; nothing is lost on the way. */
static void test_sink_slow_consumer_pauses_the_producer_within_bounds(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sink_limits lim = {8192, 2048, 512, 4};
	struct sink *s = sink_new(&loop, &lim);
	struct seen w = {.log = BUF_INIT, .text = BUF_INIT};
	sink_set_pressure(s, pressure_cb, &w);
	struct sink_op op;
	sink_op_set(&op, "S1", 1, 1);
	struct buf want = BUF_INIT;
	char chunk[100];
	memset(chunk, 'x', sizeof chunk);
	size_t produced = 0, peak = 0;
	/* A producer on the loop: publish while not paused; the consumer
	 * is stopped (stdout backed up). */
	for (int round = 0; round < 50 && !sink_paused(s); round++) {
		chunk[0] = (char)('A' + round % 26);
		sink_publish_text(s, &op, "t", SINK_STREAM_TEXT, chunk, sizeof chunk);
		if (round % 7 == 0)
			sink_publish_event(s, &op, VT_STEP_END, "t", (uint64_t)round, true, NULL);
		buf_add(&want, chunk, sizeof chunk);
		produced++;
		if (sink_queued_bytes(s) > peak)
			peak = sink_queued_bytes(s);
	}
	assert_true(sink_paused(s));
	assert_int_equal(w.pauses, 1);
	assert_true(produced < 50);
	/* At most one publish past the mark: a bounded overshoot. */
	assert_true(peak < lim.high + 2 * (sizeof chunk + 512));
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(w.items, 0);
	assert_true(sink_paused(s));
	/* The consumer drains: pressure lifts at the low mark, once. */
	sink_read_start(s, read_cb, &w);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_false(sink_paused(s));
	assert_int_equal(w.resumes, 1);
	assert_int_equal(w.pauses, 1);
	assert_string_equal(w.text.p, want.p);
	buf_release(&want);
	finish(&loop, s, &w);
}

/* A backlog is delivered per_tick items per loop iteration, so timers and
 * input still run between; read_stop inside the callback stops at once,
 * and items published from the callback go to the end of the queue. */
static void test_sink_backlog_is_spread_over_loop_iterations(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sink_limits lim = SINK_LIMITS_DEFAULT;
	lim.per_tick = 10;
	struct sink *s = sink_new(&loop, &lim);
	struct seen w = {.log = BUF_INIT, .text = BUF_INIT};
	struct sink_op op;
	sink_op_set(&op, "S1", 1, 1);
	for (uint64_t i = 0; i < 100; i++)
		sink_publish_event(s, &op, VT_ASSISTANT_TEXT, "t", i, true, NULL);
	sink_read_start(s, read_cb, &w);
	assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 1);
	assert_int_equal(w.items, 10);
	w.stop_after = 15;
	w.republish = 2;
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(w.items, 15); /* stopped inside the callback */
	assert_int_equal(sink_queued(s), 100 - 15 + 2);
	assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 0); /* stopped: nothing keeps the loop */
	w.stop_after = 0;
	sink_read_start(s, read_cb, &w);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(w.items, 102);
	/* The two published from the callback come after all 100. */
	const char *tail = w.log.p + w.log.len - strlen("event step/end 901\nevent step/end 900\n");
	assert_string_equal(tail, "event step/end 901\nevent step/end 900\n");
	finish(&loop, s, &w);
}

/* A marker of another session or an older generation settles nothing. */
static void test_sink_stale_marker_is_told_apart(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sink *s = sink_new(&loop, NULL);
	struct seen w = {.log = BUF_INIT, .text = BUF_INIT};
	sink_op_set(&w.current, "S1", 2, 5);
	struct sink_op old, elsewhere, before, now;
	sink_op_set(&old, "S1", 1, 5);
	sink_op_set(&elsewhere, "S2", 2, 5);
	sink_op_set(&before, "S1", 2, 4);
	sink_op_set(&now, "S1", 2, 5);
	sink_publish_marker(s, &old, SINK_MARKER_TURN_DONE, NULL);
	sink_publish_marker(s, &elsewhere, SINK_MARKER_TURN_DONE, NULL);
	sink_publish_marker(s, &before, SINK_MARKER_TURN_DONE, NULL);
	sink_publish_marker(s, &now, SINK_MARKER_TURN_DONE, NULL);
	sink_read_start(s, read_cb, &w);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(w.markers, 4);
	assert_int_equal(w.settled, 1);
	struct sink_op longid;
	char big[200];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	sink_op_set(&longid, big, 1, 1);
	assert_int_equal(strlen(longid.session), SESSION_ID_MAX);
	finish(&loop, s, &w);
}

/* Closing with items queued frees them undelivered, refuses later
 * publishing, and leaves a loop that closes cleanly. */
static void test_sink_close_drops_the_queue_and_closes_the_handle(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sink *s = sink_new(&loop, NULL);
	struct seen w = {.log = BUF_INIT, .text = BUF_INIT};
	struct sink_op op;
	sink_op_set(&op, "S1", 1, 1);
	cJSON *d = cJSON_Parse("{\"a\":[1,2,{\"b\":\"c\"}]}");
	sink_publish_event(s, &op, VT_USER_MESSAGE, "t", 1, true, d);
	sink_publish_text(s, &op, "t", SINK_STREAM_TEXT, "x", 1);
	cJSON_Delete(d);
	sink_read_start(s, read_cb, &w);
	finish(&loop, s, &w);
	assert_int_equal(w.items, 0);
}

/* Every notice and marker name reads back as its enumerator, names are
 * distinct, and a name not in the lists is refused. */
static void test_sink_notice_and_marker_names_round_trip(void **state)
{
	(void)state;
#define NOTICE_ROW(e, name)                                                \
	assert_string_equal(sink_notice_name(e), name);                     \
	assert_int_equal(sink_notice_of(name), e);                          \
	assert_int_equal(sink_marker_of(name), SINK_MARKER_UNKNOWN);
	SINK_NOTICES(NOTICE_ROW)
#undef NOTICE_ROW
#define MARKER_ROW(e, name)                                                \
	assert_string_equal(sink_marker_name(e), name);                     \
	assert_int_equal(sink_marker_of(name), e);                          \
	assert_int_equal(sink_notice_of(name), SINK_NOTICE_UNKNOWN);
	SINK_MARKERS(MARKER_ROW)
#undef MARKER_ROW
	assert_null(sink_notice_name(SINK_NOTICE_UNKNOWN));
	assert_null(sink_marker_name(SINK_MARKER_UNKNOWN));
	const char *bad[] = {"", "Unsaved", "unsaved ", "turn-done", "queued", "closed", NULL};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(sink_notice_of(bad[i]), SINK_NOTICE_UNKNOWN);
		assert_int_equal(sink_marker_of(bad[i]), SINK_MARKER_UNKNOWN);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sink_delivers_in_publication_order_from_the_loop),
		cmocka_unit_test(test_sink_coalesces_only_adjacent_deltas_of_one_stream),
		cmocka_unit_test(test_sink_slow_consumer_pauses_the_producer_within_bounds),
		cmocka_unit_test(test_sink_backlog_is_spread_over_loop_iterations),
		cmocka_unit_test(test_sink_stale_marker_is_told_apart),
		cmocka_unit_test(test_sink_close_drops_the_queue_and_closes_the_handle),
		cmocka_unit_test(test_sink_notice_and_marker_names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
