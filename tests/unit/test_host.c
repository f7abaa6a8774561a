/* test_host.c — conformance scenarios of the host (engine/host.h), part
 * one: sending and turns — idempotent submit (also across a restart),
 * queued input and when it runs or waits, taking it back, cancel at each
 * stage, provider failure, delivery unknown, busy settings, the settings
 * a turn records, a stale marker.
 * Driven through the host's API alone (support_host.h: the real FIFO, the
 * offline provider and the fake model server over 127.0.0.1); each reads
 * the log back from disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "persist/limits.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_host.h"

/* A known client_submit_id never dispatches again: in the same run, and
 * after a restart (the lookup reads the opened log). */
static void test_host_send_is_idempotent_also_across_a_restart(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	hx_send(x, "first", "sub-1");
	assert_string_equal(x->turn, "t1");
	assert_false(x->replayed);
	WAIT(x, x->settled == 1);
	hx_send(x, "first again", "sub-1");
	assert_true(x->replayed);
	assert_string_equal(x->turn, "t1");
	/* a restart: a new FIFO and host open the session from its log */
	hx_stop(x);
	hx_start(x);
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_open(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	hx_send(x, "first, once more", "sub-1");
	assert_true(x->replayed);
	assert_string_equal(x->turn, "t1");
	hx_send(x, "second", "sub-2");
	assert_false(x->replayed);
	assert_string_equal(x->turn, "t2");
	WAIT(x, x->settled == 2);
	struct scan *s = hx_read_log(x);
	assert_int_equal(hx_count(s, "turn/start"), 2);
	size_t t2 = hx_find(s, hx_find(s, 0, "turn/end"), "turn/start");
	assert_string_equal(hx_str(s->events[t2].data, "parent_turn"), "t1");
	/* the first turn is a root: null, never left to the absent rule */
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(s->events[hx_find(s, 0, "turn/start")].data,
						     "parent_turn")));
	scan_free(s);
}

struct history {
	struct buf lines; /* "seq type turn\n" per event */
	size_t n;
};

static void history_cb(void *ctx, enum vocab_type type, const char *turn, uint64_t seq,
		       int64_t t_ms, const cJSON *data)
{
	struct history *hi = ctx;
	assert_true(t_ms > 0);
	assert_non_null(data);
	buf_printf(&hi->lines, "%llu %s %s\n", (unsigned long long)seq, vocab_type_name(type),
		   turn ? turn : "-");
	hi->n++;
}

/* Opening with the history: every event of the log, in order, with its
 * seq, type and turn, before the open completes. */
static void test_host_open_gives_the_history(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	hx_send(x, "first", NULL);
	WAIT(x, x->settled == 1);
	hx_send(x, "second", NULL);
	WAIT(x, x->settled == 2);
	hx_stop(x);
	hx_start(x);
	struct history hi = {BUF_INIT, 0};
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_open_history(x->h, x->id, history_cb, &hi, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	struct scan *s = hx_read_log(x);
	struct buf want = BUF_INIT;
	for (size_t i = 0; i < s->n_events; i++)
		buf_printf(&want, "%llu %s %s\n", (unsigned long long)s->events[i].seq,
			   s->events[i].type, s->events[i].turn ? s->events[i].turn : "-");
	assert_int_equal(hi.n, s->n_events);
	assert_string_equal(hi.lines.p, want.p);
	scan_free(s);
	buf_release(&want);
	buf_release(&hi.lines);
}

/* A prompt sent while a turn runs is queued input, durable before the
 * callback, and becomes the next turn once the running one completed and
 * was saved: its input/dequeued in the same batch as its turn/start, whose
 * client_submit_id is its input_id. */
static void test_host_send_during_a_turn_is_queued_then_runs_after_a_saved_success(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"one two three four five\","
					  "\"pieces\":5,\"rate\":20},{\"text\":\"second answer\"}]}");
	hx_create(x, &c);
	hx_send(x, "first", NULL);
	hx_send(x, "next, please", "q-1");
	assert_true(x->queued);
	assert_string_equal(x->input, "q-1");
	{
		struct scan *s = hx_read_log(x); /* durable already */
		size_t q = hx_find(s, 0, "input/queued");
		assert_true(q < s->n_events);
		assert_string_equal(hx_str(s->events[q].data, "input_id"), "q-1");
		scan_free(s);
	}
	const struct host_input *in;
	assert_int_equal(host_queued(x->h, x->id, &in), 1);
	assert_true(in[0].armed);
	WAIT(x, x->settled == 2);
	assert_int_equal(x->settled_ok, 2);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "completed");
	assert_string_equal(hx_str(hx_done(x, 1), "outcome"), "completed");
	assert_int_equal(host_queued(x->h, x->id, &in), 0);
	struct scan *s = hx_read_log(x);
	size_t end1 = hx_find(s, 0, "turn/end");
	size_t dq = hx_find(s, 0, "input/dequeued");
	assert_true(dq > end1 && dq < s->n_events);
	assert_string_equal(s->events[dq + 1].type, "turn/start");
	assert_string_equal(hx_str(s->events[dq + 1].data, "client_submit_id"), "q-1");
	assert_int_equal(hx_frame_of(x, dq + 1), hx_frame_of(x, dq)); /* one batch */
	scan_free(s);
	/* the second request carried the first exchange */
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 2);
	char *body = cJSON_PrintUnformatted(cJSON_GetArrayItem(reqs, 1));
	assert_non_null(strstr(body, "one two three"));
	assert_non_null(strstr(body, "next, please"));
	free(body);
	cJSON_Delete(reqs);
}

/* After a canceled turn queued input waits (held) until an explicit send. */
static void test_host_queue_is_held_after_a_cancel_until_sent(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"slow slow slow slow\","
					  "\"pieces\":4,\"split\":\"event\",\"stall_ms\":3000,\"stall_after\":3},"
					  "{\"text\":\"the held one ran\"}]}");
	hx_create(x, &c);
	hx_send(x, "first", NULL);
	hx_send(x, "queued", "q-1");
	assert_true(x->queued);
	WAIT(x, x->text.len > 0); /* mid-stream */
	host_cancel(x->h, x->id);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "canceled");
	/* a moment for anything that would wrongly dispatch */
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	const struct host_input *in;
	assert_int_equal(host_queued(x->h, x->id, &in), 1);
	assert_false(in[0].armed);
	assert_int_equal(host_state(x->h, x->id), HOST_IDLE);
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_input_send(x->h, x->id, "q-1", hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_string_equal(x->turn, "t2");
	WAIT(x, x->settled == 2);
	assert_string_equal(hx_str(hx_done(x, 1), "outcome"), "completed");
	struct scan *s = hx_read_log(x);
	/* the partial answer of the canceled turn is kept */
	size_t txt = hx_find(s, 0, "assistant/text");
	assert_true(txt < hx_find(s, 0, "turn/end"));
	assert_int_equal(hx_count(s, "input/dequeued"), 1);
	scan_free(s);
}

/* After a failed turn queued input is held as well. */
static void test_host_queue_is_held_after_a_failed_turn(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"status\":400,\"stall_before_ms\":300,"
					  "\"error\":{\"type\":\"invalid_request_error\","
					  "\"message\":\"bad\"}}]}");
	hx_create(x, &c);
	hx_send(x, "first", NULL);
	hx_send(x, "queued", "q-1");
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "failed");
	assert_string_equal(hx_str(cJSON_GetObjectItem(hx_done(x, 0), "error"), "class"), "provider");
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	const struct host_input *in;
	assert_int_equal(host_queued(x->h, x->id, &in), 1);
	assert_false(in[0].armed);
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 1);
	cJSON_Delete(reqs);
}

/* A queued prompt is taken out of the queue by one call, to edit it or to
 * drop it: its text returned, a durable input/dequeued, and it never
 * runs — nor comes back when the session is opened again. */
static void test_host_queued_prompt_is_taken_back_or_removed(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"a b c d\",\"pieces\":4,"
					  "\"stall_ms\":800,\"stall_after\":1}]}");
	hx_create(x, &c);
	hx_send(x, "first", NULL);
	hx_send(x, "to edit", "q-1");
	hx_send(x, "to drop", "q-2");
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_input_take(x->h, x->id, "q-1", hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_string_equal(x->taken, "to edit");
	before = x->calls;
	assert_int_equal(host_input_take(x->h, x->id, "q-2", hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_string_equal(x->taken, "to drop");
	FAILS(host_input_take(x->h, x->id, "q-2", hx_done_cb, x, &err), CERR_MISSING);
	WAIT(x, x->settled == 1);
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	assert_int_equal(x->settled, 1); /* nothing else ran */
	struct scan *s = hx_read_log(x);
	assert_int_equal(hx_count(s, "input/queued"), 2);
	assert_int_equal(hx_count(s, "input/dequeued"), 2);
	assert_int_equal(hx_count(s, "turn/start"), 1);
	scan_free(s);
	hx_stop(x);
	hx_start(x);
	before = x->calls;
	assert_int_equal(host_open(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	const struct host_input *in;
	assert_int_equal(host_queued(x->h, x->id, &in), 0);
}

/* Canceled before the BEFORE save is acknowledged: nothing is dispatched,
 * the turn ends canceled once the save completes, and the prompt comes
 * back in the marker. */
static void test_host_cancel_before_the_before_save_sends_nothing(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"never\"}]}");
	hx_create(x, &c);
	fifo_pause(x->f, true);
	hx_send(x, "take it back", NULL);
	host_cancel(x->h, x->id);
	fifo_pause(x->f, false);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "canceled");
	assert_string_equal(hx_str(hx_done(x, 0), "text"), "take it back");
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 0);
	cJSON_Delete(reqs);
	struct scan *s = hx_read_log(x);
	assert_int_equal(hx_find(s, 0, "request/prepared"), s->n_events);
	assert_string_equal(hx_str(s->events[s->n_events - 1].data, "outcome"), "canceled");
	scan_free(s);
}

/* Cancel while waiting for the first byte: the transfer is aborted. */
static void test_host_cancel_while_waiting_for_the_first_byte(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"late\",\"stall_before_ms\":5000}]}");
	hx_create(x, &c);
	hx_send(x, "hello", NULL);
	/* the request is out once the server recorded it */
	uint64_t until = clock_mono_ns() / 1000000 + 10000;
	for (;;) {
		cJSON *reqs = fake_requests(&x->fake);
		int n = cJSON_GetArraySize(reqs);
		cJSON_Delete(reqs);
		if (n == 1)
			break;
		assert_true(clock_mono_ns() / 1000000 < until);
		uv_run(&x->loop, UV_RUN_NOWAIT);
		uv_sleep(5);
	}
	uint64_t t0 = clock_mono_ns();
	host_cancel(x->h, x->id);
	WAIT(x, x->settled == 1);
	assert_true(clock_mono_ns() - t0 < 4000000000ull); /* not the server's 5 s */
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "canceled");
	assert_int_equal(x->text.len, 0);
}

/* A provider failure before any output, and a stream cut off mid-way
 * (delivery unknown: the partial text kept, never re-sent). */
static void test_host_provider_failure_and_delivery_unknown(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(
		x, "{\"replies\":[{\"status\":401,\"error\":{\"type\":\"authentication_error\","
		   "\"message\":\"bad key\"}},{\"text\":\"partial then gone\",\"split\":\"event\","
		   "\"pieces\":3,\"disconnect_after\":3}]}");
	hx_create(x, &c);
	hx_send(x, "one", NULL);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "failed");
	assert_string_equal(hx_str(cJSON_GetObjectItem(hx_done(x, 0), "error"), "class"), "provider");
	hx_send(x, "two", NULL);
	WAIT(x, x->settled == 2);
	assert_string_equal(hx_str(hx_done(x, 1), "outcome"), "failed");
	assert_string_equal(hx_str(cJSON_GetObjectItem(hx_done(x, 1), "error"), "class"),
			    "delivery_unknown");
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 2); /* never re-sent */
	cJSON_Delete(reqs);
	struct scan *s = hx_read_log(x);
	size_t t2 = hx_find(s, hx_find(s, 0, "turn/end"), "turn/start");
	assert_true(hx_find(s, t2, "assistant/text") < s->n_events);
	scan_free(s);
}

/* A settings change cannot wait behind a turn: busy; when idle it is
 * recorded. */
static void test_host_settings_change_is_busy_during_a_turn(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"a b\",\"pieces\":2,"
					  "\"stall_ms\":500,\"stall_after\":1}]}");
	hx_create(x, &c);
	hx_send(x, "first", NULL);
	struct host_settings set = {.model = "m-2"};
	struct cerr err;
	FAILS(host_update_settings(x->h, x->id, &set, hx_done_cb, x, &err), CERR_BUSY);
	WAIT(x, x->settled == 1);
	int before = x->calls;
	assert_int_equal(host_update_settings(x->h, x->id, &set, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	struct host_settings now;
	assert_int_equal(host_settings(x->h, x->id, &now, &err), 0);
	assert_string_equal(now.model, "m-2");
	struct scan *s = hx_read_log(x);
	assert_string_equal(s->events[s->n_events - 1].type, "session/settings");
	scan_free(s);
}

/* A turn records in its BEFORE batch the settings it is sent with where
 * they differ from the session's; a second turn with the same call writes
 * none. A system prompt that went to a blob is read whole when the session
 * is opened again, and compared whole. */
static void test_host_turn_records_the_settings_that_changed(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	c.call.params.model = "offline";
	c.call.params.system = "be brief";
	hx_create(x, &c);
	hx_send(x, "first", NULL);
	WAIT(x, x->settled == 1);
	hx_send(x, "second", NULL);
	WAIT(x, x->settled == 2);
	struct scan *s = hx_read_log(x);
	assert_int_equal(hx_count(s, "session/settings"), 1);
	size_t k = hx_find(s, 0, "session/settings");
	assert_string_equal(s->events[k + 1].type, "turn/start");
	assert_int_equal(hx_frame_of(x, k), hx_frame_of(x, k + 1)); /* the BEFORE batch */
	assert_string_equal(hx_str(s->events[k].data, "provider"), "offline");
	assert_string_equal(hx_str(s->events[k].data, "model"), "offline");
	assert_string_equal(hx_str(s->events[k].data, "system_prompt"), "be brief");
	scan_free(s);

	/* a prompt over BLOB_INLINE_MAX: only it is recorded, in a blob */
	size_t n = BLOB_INLINE_MAX + 1000;
	char *big = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		big[i] = "rule 0123456789\n"[i % 16];
	big[n] = '\0';
	c.call.params.system = big;
	struct cerr err;
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	hx_send(x, "third", NULL);
	WAIT(x, x->settled == 3);
	s = hx_read_log(x);
	assert_int_equal(hx_count(s, "session/settings"), 2);
	k = hx_find(s, k + 1, "session/settings");
	const cJSON *d = s->events[k].data;
	assert_null(cJSON_GetObjectItem(d, "model"));
	assert_non_null(cJSON_GetObjectItem(d, "blob"));
	assert_true(strlen(hx_str(d, "system_prompt")) < n);
	scan_free(s);

	/* opened again: the prompt in effect is the whole one */
	hx_stop(x);
	hx_start(x);
	int before = x->calls;
	assert_int_equal(host_open(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	struct host_settings now;
	assert_int_equal(host_settings(x->h, x->id, &now, &err), 0);
	assert_string_equal(now.system_prompt, big);
	assert_string_equal(now.model, "offline");
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	hx_send(x, "fourth", NULL);
	WAIT(x, x->settled == 4);
	s = hx_read_log(x);
	assert_int_equal(hx_count(s, "session/settings"), 2);
	assert_int_equal(hx_count(s, "turn/end"), 4);
	scan_free(s);
	free(big);
}

/* A marker of another generation settles nothing. */
static void test_host_stale_marker_settles_nothing(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	x->hold = true;
	hx_send(x, "hello", NULL);
	WAIT(x, x->have_held);
	struct sink_item stale = x->held;
	stale.op.generation++;
	struct cerr err;
	FAILS(host_applied(x->h, &stale, &err), CERR_CONFLICT);
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	assert_int_equal(x->settled, 0);
	assert_int_equal(host_applied(x->h, &x->held, &err), 0);
	WAIT(x, x->settled == 1);
	assert_int_equal(x->settled_ok, 1);
}

struct two {
	int open_calls, release_calls;
	struct cerr open_err, release_err;
};

static void open_cb2(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	struct two *t = ctx;
	t->open_calls++;
	t->open_err = err ? *err : (struct cerr){0};
}

static void release_cb2(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	struct two *t = ctx;
	t->release_calls++;
	t->release_err = err ? *err : (struct cerr){0};
}

/* Switching away from a session still opening cancels the open (its
 * callback says so) and releases it: it can be opened again at once. */
static void test_host_release_while_opening_cancels_the_open(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	hx_send(x, "hello", NULL);
	WAIT(x, x->settled == 1);
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_release(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	struct two t = {0};
	assert_int_equal(host_open(x->h, x->id, open_cb2, &t, &err), 0);
	assert_int_equal(host_release(x->h, x->id, release_cb2, &t, &err), 0);
	FAILS(host_release(x->h, x->id, release_cb2, &t, &err), CERR_BUSY); /* one is enough */
	WAIT(x, t.open_calls == 1 && t.release_calls == 1);
	assert_int_equal(t.open_err.cls, CERR_CONFLICT);
	assert_int_equal(t.release_err.cls, CERR_OK);
	assert_int_equal(host_state(x->h, x->id), HOST_RELEASING); /* forgotten */
	before = x->calls;
	assert_int_equal(host_open(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, hx_setup, hx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_host_send_is_idempotent_also_across_a_restart),
		T(test_host_send_during_a_turn_is_queued_then_runs_after_a_saved_success),
		T(test_host_queue_is_held_after_a_cancel_until_sent),
		T(test_host_queue_is_held_after_a_failed_turn),
		T(test_host_queued_prompt_is_taken_back_or_removed),
		T(test_host_cancel_before_the_before_save_sends_nothing),
		T(test_host_cancel_while_waiting_for_the_first_byte),
		T(test_host_provider_failure_and_delivery_unknown),
		T(test_host_settings_change_is_busy_during_a_turn),
		T(test_host_turn_records_the_settings_that_changed),
		T(test_host_stale_marker_settles_nothing),
		T(test_host_release_while_opening_cancels_the_open),
		T(test_host_open_gives_the_history),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
