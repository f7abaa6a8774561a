/* test_host_saves.c — conformance scenarios of the host (engine/host.h),
 * part two: when saves fail and processes end — a failed full save leaves
 * the session unsaved until a recovery save (the fault file system fails
 * the syncs), a capture failure, queued input that waits while unsaved,
 * start-up recovery of sessions a dead process left running, close within
 * and past its deadline, and title, pin, release, delete. */
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
#include "engine/http.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_host.h"

/* A full save that fails leaves the session unsaved (told to the
 * consumer), keeps its durable head, lets explicit input work; a recovery
 * save writes the rest of the turn. */
static void test_host_failed_full_save_is_unsaved_until_a_recovery_save(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	x->hold = true;
	hx_send(x, "hello", NULL);
	WAIT(x, x->have_held);
	hx_settle_held_failing(x);
	assert_int_equal(x->settled, 1);
	assert_int_equal(x->settled_ok, 0);
	assert_int_equal(x->unsaved, 1);
	assert_int_equal(host_save_state(x->h, x->id), HOST_UNSAVED);
	assert_int_equal(host_state(x->h, x->id), HOST_IDLE);
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_save(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_int_equal(host_save_state(x->h, x->id), HOST_SAVED);
	WAIT(x, x->saved == 1);
	struct scan *s = hx_read_log(x);
	assert_string_equal(s->events[s->n_events - 1].type, "turn/end");
	assert_string_equal(hx_str(s->events[s->n_events - 1].data, "outcome"), "completed");
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
	/* and the session goes on */
	x->hold = false;
	hx_send(x, "again", NULL);
	WAIT(x, x->settled == 2);
	assert_int_equal(x->settled_ok, 1);
}

/* A send to an unsaved session posts the recovery save ahead of its
 * BEFORE save. */
static void test_host_send_to_an_unsaved_session_recovers_it_first(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	x->hold = true;
	hx_send(x, "hello", NULL);
	WAIT(x, x->have_held);
	hx_settle_held_failing(x);
	assert_int_equal(host_save_state(x->h, x->id), HOST_UNSAVED);
	x->hold = false;
	hx_send(x, "next", NULL);
	WAIT(x, x->settled == 2);
	assert_int_equal(x->settled_ok, 1);
	assert_int_equal(host_save_state(x->h, x->id), HOST_SAVED);
	struct scan *s = hx_read_log(x);
	assert_int_equal(hx_count(s, "turn/end"), 2);
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
}

/* Close cancels the running turn and finishes within its deadline while
 * the consumer reads; a consumer that stops reading holds the settlement,
 * so the deadline passes and nothing is closed; closing again later works. */
static void test_host_close_within_and_past_its_deadline(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"a b c d e f\",\"pieces\":6,"
					  "\"split\":\"event\",\"rate\":4}]}");
	hx_create(x, &c);
	hx_send(x, "first", NULL);
	WAIT(x, x->text.len > 0);
	sink_read_stop(x->sink); /* a consumer that stopped reading */
	int hc = 0;
	assert_int_equal(host_close(x->h, clock_mono_ns() / 1000000 + 300, hx_host_closed, &hc), 0);
	struct cerr err;
	struct host_send s = {.text = "refused"};
	FAILS(host_send(x->h, x->id, &s, hx_done_cb, x, &err), CERR_USAGE);
	WAIT(x, hc != 0);
	assert_int_equal(hc, 2); /* timed out: the turn waits for its consumer */
	assert_int_equal(host_state(x->h, x->id), HOST_TURN);
	sink_read_start(x->sink, hx_read_cb, x);
	hc = 0;
	assert_int_equal(host_close(x->h, clock_mono_ns() / 1000000 + 10000, hx_host_closed, &hc), 0);
	WAIT(x, hc != 0);
	assert_int_equal(hc, 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "canceled");
	host_free(x->h);
	x->h = NULL;
	hx_close_parts(x);
	struct scan *sc = hx_read_log(x);
	assert_int_equal(sc->n_open_turns, 0);
	scan_free(sc);
}

static void item_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	(void)r;
	if (err)
		fail_msg("item: %s", err->msg);
	(*(int *)ctx)++;
}

static void recovered_cb(void *ctx, size_t recovered, size_t failed, const struct cerr *err)
{
	struct hx *x = ctx;
	assert_null(err);
	x->calls++;
	snprintf(x->turn, sizeof x->turn, "%zu/%zu", recovered, failed);
}

/* A process died mid-turn (its row left running, its lock gone with it):
 * start-up recovery finds it through the catalog, repairs it (the turn
 * closed as interrupted), keeps its queued input queued and dispatches
 * nothing; a session that finished is left alone. */
static void test_host_start_up_recovery_repairs_running_sessions_only(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c); /* a session that completes: not to be touched */
	hx_send(x, "fine", NULL);
	WAIT(x, x->settled == 1);
	char done_id[SESSION_ID_MAX + 1];
	snprintf(done_id, sizeof done_id, "%s", x->id);
	/* the dead process's session: BEFORE save and a queued input, then
	 * nothing (its FIFO closes without a full save, as a kill leaves it) */
	snprintf(x->id, sizeof x->id, "01JDEADPROCESS0000000000AA");
	int n = 0;
	struct cerr err;
	struct fifo_item *it = fifo_history(
		x->id, 1,
		cJSON_Parse("[{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{}},"
			    "{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"cut\"}},"
			    "{\"type\":\"input/queued\",\"data\":{\"input_id\":\"q-9\","
			    "\"text\":\"later\"}}]"));
	fifo_item_create_header(it, x->cwd, "offline", NULL, NULL);
	fifo_item_set_running(it);
	assert_int_equal(fifo_post(x->f, it, item_cb, &n, &err), 0);
	WAIT(x, n == 1);
	hx_stop(x);
	hx_start(x);
	int before = x->calls;
	assert_int_equal(host_recover_interrupted(x->h, recovered_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_string_equal(x->turn, "1/0");
	struct scan *s = hx_read_log(x);
	const cJSON *end = s->events[s->n_events - 1].data;
	assert_string_equal(s->events[s->n_events - 1].type, "turn/end");
	assert_string_equal(hx_str(end, "outcome"), "interrupted");
	assert_int_equal(hx_count(s, "input/dequeued"), 0);
	assert_int_equal(hx_count(s, "turn/start"), 1);
	scan_free(s);
	/* once repaired it is no longer running: a second recovery finds none */
	before = x->calls;
	assert_int_equal(host_recover_interrupted(x->h, recovered_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_string_equal(x->turn, "0/0");
	/* the finished session was not opened: its log ends as it did */
	snprintf(x->id, sizeof x->id, "%s", done_id);
	s = hx_read_log(x);
	assert_string_equal(hx_str(s->events[s->n_events - 1].data, "outcome"), "completed");
	scan_free(s);
}

static void meta_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	(void)r;
	(void)err;
	(*(int *)ctx)++;
}

/* Another write lands in the log between the BEFORE save and the first
 * request: the capture fails, nothing is sent, the turn fails with
 * capture_failed, and its save cannot land either: unsaved. */
static void test_host_capture_failure_sends_nothing_more(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"never\"}]}");
	hx_create(x, &c);
	hx_send(x, "hi", NULL);
	int metas = 0;
	struct cerr err;
	assert_int_equal(fifo_post(x->f, fifo_meta(x->id, cJSON_Parse("{\"title\":\"elsewhere\"}")),
				   meta_cb, &metas, &err),
			 0);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "failed");
	assert_string_equal(hx_str(cJSON_GetObjectItem(hx_done(x, 0), "error"), "class"),
			    "capture_failed");
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 0);
	cJSON_Delete(reqs);
	WAIT(x, x->unsaved == 1);
	assert_int_equal(host_save_state(x->h, x->id), HOST_UNSAVED);
}

/* Input queued during a turn whose full save fails is not dispatched,
 * neither while unsaved nor after the recovery: it waits to be sent. */
static void test_host_queue_waits_while_unsaved_and_after_recovery(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	x->hold = true;
	hx_send(x, "hello", NULL);
	hx_send(x, "queued meanwhile", "q-1");
	assert_true(x->queued);
	WAIT(x, x->have_held);
	hx_settle_held_failing(x);
	assert_int_equal(x->settled, 1);
	struct cerr err;
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	const struct host_input *in;
	assert_int_equal(host_queued(x->h, x->id, &in), 1);
	assert_false(in[0].armed);
	int before = x->calls;
	assert_int_equal(host_save(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	assert_int_equal(x->settled, 1); /* nothing dispatched */
	assert_int_equal(host_queued(x->h, x->id, &in), 1);
	x->hold = false;
	before = x->calls;
	assert_int_equal(host_input_send(x->h, x->id, "q-1", hx_done_cb, x, &err), 0);
	WAIT(x, x->settled == 2);
	assert_int_equal(x->settled_ok, 1);
}

/* Title, pin, release and delete, through the log and the FIFO. */
static void test_host_rename_pin_release_and_delete(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	hx_send(x, "hello", NULL);
	WAIT(x, x->settled == 1);
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_rename(x->h, x->id, "named", hx_done_cb, x, &err), 0);
	assert_int_equal(host_pin(x->h, x->id, true, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls == before + 2);
	assert_int_equal(x->last.cls, CERR_OK);
	struct scan *s = hx_read_log(x);
	assert_string_equal(hx_str(s->events[s->n_events - 2].data, "title"), "named");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s->events[s->n_events - 1].data, "pinned")));
	scan_free(s);
	/* released: another writer may take it */
	before = x->calls;
	assert_int_equal(host_release(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_int_equal(host_state(x->h, x->id), HOST_RELEASING); /* forgotten */
	before = x->calls;
	assert_int_equal(host_open(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	before = x->calls;
	assert_int_equal(host_delete(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	char *trashed = session_path(x->root, STORE_TRASH, x->cwd, x->id, LOG_FILE);
	assert_true(exists(trashed));
	free(trashed);
}

struct order {
	int recovered, closed;
	int seq;
};

static void rec_first(void *ctx, size_t recovered, size_t failed, const struct cerr *err)
{
	(void)recovered;
	(void)failed;
	(void)err;
	struct order *o = ctx;
	o->recovered = ++o->seq;
}

static void closed_after(struct host *h, void *ctx, enum host_close_status st)
{
	(void)h;
	struct order *o = ctx;
	assert_int_equal(st, HOST_CLOSED);
	o->closed = ++o->seq;
}

/* A close while start-up recovery still asks the catalog on a worker
 * waits for it: the host is never freed under the worker. */
static void test_host_close_waits_for_start_up_recovery(void **state)
{
	struct hx *x = *state;
	struct order o = {0};
	struct cerr err;
	assert_int_equal(host_recover_interrupted(x->h, rec_first, &o, &err), 0);
	assert_int_equal(host_close(x->h, clock_mono_ns() / 1000000 + 20000, closed_after, &o), 0);
	WAIT(x, o.closed != 0);
	assert_int_equal(o.recovered, 1);
	assert_int_equal(o.closed, 2);
	host_free(x->h);
	x->h = NULL;
	hx_close_parts(x);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, hx_setup, hx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_host_failed_full_save_is_unsaved_until_a_recovery_save),
		T(test_host_send_to_an_unsaved_session_recovers_it_first),
		T(test_host_close_within_and_past_its_deadline),
		T(test_host_start_up_recovery_repairs_running_sessions_only),
		T(test_host_capture_failure_sends_nothing_more),
		T(test_host_queue_waits_while_unsaved_and_after_recovery),
		T(test_host_rename_pin_release_and_delete),
		T(test_host_close_waits_for_start_up_recovery),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
