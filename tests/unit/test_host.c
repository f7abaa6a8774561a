/* test_host.c — conformance scenarios of the host (engine/host.h): the
 * behaviour headless mode and the chat screen share, driven through the
 * host's API alone, with a consumer on the same loop that applies every
 * sink item and reports each marker it handled, the real FIFO on a temp
 * root, the offline provider and the fake model server over 127.0.0.1,
 * and the fault file system for failed saves. Each reads the log back
 * from disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "engine/host.h"
#include "engine/http.h"
#include "persist/load.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_servers.h"

struct hx {
	char dir[64], root[128];
	uv_loop_t loop;
	struct fifo *f;
	struct sink *sink;
	struct http *http;
	struct host *h;
	struct fake fake;
	bool have_fake;
	char *base;
	char id[SESSION_ID_MAX + 1];
	/* the consumer */
	bool hold;                 /* don't report turn_done (yet) */
	struct sink_item held;     /* the turn_done held (op copied) */
	bool have_held;
	struct buf seen;           /* one line per item */
	struct buf text;           /* streamed answers */
	cJSON *dones;              /* every turn_done payload */
	int settled, settled_ok;
	int unsaved, saved;
	/* command results */
	int calls;
	struct cerr last;
	char turn[32], input[64];
	char *taken;
	bool queued, replayed;
	bool faults;
	uv_timer_t tick; /* so a wait never blocks for good: its deadline is checked */
};

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	(void)s;
	struct hx *x = ctx;
	switch (it->kind) {
	case SINK_EVENT:
		buf_printf(&x->seen, "%s %llu\n", vocab_type_name(it->vtype),
			   (unsigned long long)it->seq);
		break;
	case SINK_TEXT:
		if (it->stream == SINK_STREAM_TEXT)
			buf_add(&x->text, it->text, it->len);
		break;
	case SINK_NOTICE:
		buf_printf(&x->seen, "notice %s\n", it->name);
		if (strcmp(it->name, "unsaved") == 0)
			x->unsaved++;
		if (strcmp(it->name, "saved") == 0)
			x->saved++;
		break;
	case SINK_MARKER:
		buf_printf(&x->seen, "marker %s\n", it->name);
		if (strcmp(it->name, "turn_done") == 0) {
			cJSON_AddItemToArray(x->dones, cJSON_Duplicate(it->data, 1));
			if (x->hold) {
				x->held = *it;
				x->held.name = "turn_done";
				x->held.data = NULL;
				x->have_held = true;
				break;
			}
			struct cerr err;
			if (host_applied(x->h, it, &err) < 0)
				fail_msg("applied: %s", err.msg);
		} else if (strcmp(it->name, "settled") == 0) {
			x->settled++;
			if (cJSON_IsTrue(cJSON_GetObjectItem(it->data, "ok")))
				x->settled_ok++;
		}
		break;
	}
}

static void done_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct hx *x = ctx;
	x->calls++;
	x->last = err ? *err : (struct cerr){0};
	x->queued = r->queued;
	x->replayed = r->replayed;
	snprintf(x->turn, sizeof x->turn, "%s", r->turn ? r->turn : "");
	snprintf(x->input, sizeof x->input, "%s", r->input_id ? r->input_id : "");
	free(x->taken);
	x->taken = r->text ? xstrdup(r->text) : NULL;
}

#define WAIT(x, cond)                                                                     \
	do {                                                                              \
		uint64_t until_ = clock_mono_ns() / 1000000 + 20000;                      \
		while (!(cond)) {                                                         \
			if (clock_mono_ns() / 1000000 > until_)                           \
				fail_msg("timed out waiting for %s; seen:\n%s", #cond,    \
					 (x)->seen.p ? (x)->seen.p : "");                 \
			uv_run(&(x)->loop, UV_RUN_ONCE);                                  \
		}                                                                         \
	} while (0)

static void start_parts(struct hx *x)
{
	struct cerr err;
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	x->sink = sink_new(&x->loop, NULL);
	if (!(x->http = http_new(&x->loop, &err)))
		fail_msg("http_new: %s", err.msg);
	struct host_deps d = {.loop = &x->loop, .root = x->root, .fifo = x->f, .http = x->http,
			      .sink = x->sink};
	x->h = host_new(&d);
	sink_read_start(x->sink, read_cb, x);
}

static void noop(void *ud)
{
	(void)ud;
}

static void fifo_closed(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t n)
{
	(void)f;
	(void)n;
	assert_int_equal(st, FIFO_CLOSED);
	(*(int *)ctx)++;
}

static void host_closed(struct host *h, void *ctx, enum host_close_status st)
{
	(void)h;
	*(int *)ctx = st == HOST_CLOSED ? 1 : 2;
}

/* Close the host (every session released), then its parts. */
static void stop_parts(struct hx *x)
{
	int hc = 0;
	assert_int_equal(host_close(x->h, clock_mono_ns() / 1000000 + 20000, host_closed, &hc), 0);
	WAIT(x, hc != 0);
	assert_int_equal(hc, 1);
	host_free(x->h);
	x->h = NULL;
	int closed = 0;
	assert_int_equal(fifo_close(x->f, clock_mono_ns() / 1000000 + 10000, fifo_closed, &closed), 0);
	http_close(x->http, noop, NULL);
	sink_close(x->sink, NULL, NULL);
	while (!closed)
		uv_run(&x->loop, UV_RUN_ONCE);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
}

static void tick_cb(uv_timer_t *t)
{
	(void)t;
}

static int setup(void **state)
{
	struct hx *x = xcalloc(1, sizeof *x);
	assert_int_equal(tmp_root("cairn-host", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	buf_init(&x->seen);
	buf_init(&x->text);
	x->dones = cJSON_CreateArray();
	uv_timer_init(&x->loop, &x->tick);
	uv_timer_start(&x->tick, tick_cb, 100, 100);
	uv_unref((uv_handle_t *)&x->tick);
	start_parts(x);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct hx *x = *state;
	if (x->faults)
		faultfs_uninstall();
	if (x->h)
		stop_parts(x);
	uv_close((uv_handle_t *)&x->tick, NULL);
	uv_run(&x->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	if (x->have_fake)
		fake_stop(&x->fake);
	free(x->base);
	free(x->taken);
	cJSON_Delete(x->dones);
	buf_release(&x->seen);
	buf_release(&x->text);
	rm_rf(x->dir);
	free(x);
	return 0;
}

static struct host_call offline_call(void)
{
	struct host_call c = {
		.provider = "offline",
		.call = {.kind = PROVIDER_OFFLINE, .pace_ms = 0, .retry = {3, 5, 20, 60000}},
	};
	return c;
}

/* The fake server with script, and a call to it. */
static struct host_call fake_call(struct hx *x, const char *script)
{
	fake_start(&x->fake, script, NULL);
	x->have_fake = true;
	x->base = url(x->fake.port, "/v1");
	struct host_call c = offline_call();
	c.provider = "openai";
	c.call.kind = PROVIDER_OPENAI;
	c.call.params = (struct provider_params){.model = "m-1", .base_url = x->base,
						 .api_key = "sk-test"};
	c.call.timeouts = (struct http_timeouts){2000, 8000, 8000};
	return c;
}

static void create(struct hx *x, const struct host_call *c)
{
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_create(x->h, "/w", c, x->id, done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
}

/* Send text with submit id sid (NULL: made up); wait for its callback. */
static void send_prompt(struct hx *x, const char *text, const char *sid)
{
	struct host_send s = {.text = text, .client_submit_id = sid};
	struct cerr err;
	int before = x->calls;
	if (host_send(x->h, x->id, &s, done_cb, x, &err) < 0)
		fail_msg("send: %s", err.msg);
	WAIT(x, x->calls > before);
	if (x->last.cls != CERR_OK)
		fail_msg("send: %s", x->last.msg);
}

static struct scan *read_log(struct hx *x)
{
	char *p = session_path(x->root, STORE_SESSIONS, "/w", x->id, LOG_FILE);
	struct scan *s = scan_path(p);
	free(p);
	assert_int_equal(s->status, SCAN_OK);
	return s;
}

/* The frame (the batch) event i of the log was written in. */
static uint32_t frame_of(struct hx *x, size_t i)
{
	char *p = session_path(x->root, STORE_SESSIONS, "/w", x->id, LOG_FILE);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	assert_true(fd >= 0);
	struct load *l;
	struct cerr err;
	assert_int_equal(load_fd(fd, NULL, &l, &err), 0);
	close(fd);
	assert_true(i < load_count(l));
	uint32_t f = load_event(l, i)->frame;
	load_free(l);
	return f;
}

static size_t count_type(const struct scan *s, const char *type)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_events; i++)
		n += strcmp(s->events[i].type, type) == 0;
	return n;
}

static size_t find_type(const struct scan *s, size_t i, const char *type)
{
	while (i < s->n_events && strcmp(s->events[i].type, type) != 0)
		i++;
	return i;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static const cJSON *done_n(struct hx *x, int k)
{
	return cJSON_GetArrayItem(x->dones, k);
}

/* A known client_submit_id never dispatches again: in the same run, and
 * after a restart (the lookup reads the opened log). */
static void test_host_send_is_idempotent_also_across_a_restart(void **state)
{
	struct hx *x = *state;
	struct host_call c = offline_call();
	create(x, &c);
	send_prompt(x, "first", "sub-1");
	assert_string_equal(x->turn, "t1");
	assert_false(x->replayed);
	WAIT(x, x->settled == 1);
	send_prompt(x, "first again", "sub-1");
	assert_true(x->replayed);
	assert_string_equal(x->turn, "t1");
	/* a restart: a new FIFO and host open the session from its log */
	stop_parts(x);
	start_parts(x);
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_open(x->h, x->id, done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	send_prompt(x, "first, once more", "sub-1");
	assert_true(x->replayed);
	assert_string_equal(x->turn, "t1");
	send_prompt(x, "second", "sub-2");
	assert_false(x->replayed);
	assert_string_equal(x->turn, "t2");
	WAIT(x, x->settled == 2);
	struct scan *s = read_log(x);
	assert_int_equal(count_type(s, "turn/start"), 2);
	size_t t2 = find_type(s, find_type(s, 0, "turn/end"), "turn/start");
	assert_string_equal(str(s->events[t2].data, "parent_turn"), "t1");
	scan_free(s);
}

/* A prompt sent while a turn runs is queued input, durable before the
 * callback, and becomes the next turn once the running one completed and
 * was saved: its input/dequeued in the same batch as its turn/start, whose
 * client_submit_id is its input_id. */
static void test_host_send_during_a_turn_is_queued_then_runs_after_a_saved_success(void **state)
{
	struct hx *x = *state;
	struct host_call c = fake_call(x, "{\"replies\":[{\"text\":\"one two three four five\","
					  "\"pieces\":5,\"rate\":20},{\"text\":\"second answer\"}]}");
	create(x, &c);
	send_prompt(x, "first", NULL);
	send_prompt(x, "next, please", "q-1");
	assert_true(x->queued);
	assert_string_equal(x->input, "q-1");
	{
		struct scan *s = read_log(x); /* durable already */
		size_t q = find_type(s, 0, "input/queued");
		assert_true(q < s->n_events);
		assert_string_equal(str(s->events[q].data, "input_id"), "q-1");
		scan_free(s);
	}
	const struct host_input *in;
	assert_int_equal(host_queued(x->h, x->id, &in), 1);
	assert_true(in[0].armed);
	WAIT(x, x->settled == 2);
	assert_int_equal(x->settled_ok, 2);
	assert_string_equal(str(done_n(x, 0), "outcome"), "completed");
	assert_string_equal(str(done_n(x, 1), "outcome"), "completed");
	assert_int_equal(host_queued(x->h, x->id, &in), 0);
	struct scan *s = read_log(x);
	size_t end1 = find_type(s, 0, "turn/end");
	size_t dq = find_type(s, 0, "input/dequeued");
	assert_true(dq > end1 && dq < s->n_events);
	assert_string_equal(s->events[dq + 1].type, "turn/start");
	assert_string_equal(str(s->events[dq + 1].data, "client_submit_id"), "q-1");
	assert_int_equal(frame_of(x, dq + 1), frame_of(x, dq)); /* one batch */
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
	struct host_call c = fake_call(x, "{\"replies\":[{\"text\":\"slow slow slow slow\","
					  "\"pieces\":4,\"split\":\"event\",\"stall_ms\":3000,\"stall_after\":3},"
					  "{\"text\":\"the held one ran\"}]}");
	create(x, &c);
	send_prompt(x, "first", NULL);
	send_prompt(x, "queued", "q-1");
	assert_true(x->queued);
	WAIT(x, x->text.len > 0); /* mid-stream */
	host_cancel(x->h, x->id);
	WAIT(x, x->settled == 1);
	assert_string_equal(str(done_n(x, 0), "outcome"), "canceled");
	/* a moment for anything that would wrongly dispatch */
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	const struct host_input *in;
	assert_int_equal(host_queued(x->h, x->id, &in), 1);
	assert_false(in[0].armed);
	assert_int_equal(host_state(x->h, x->id), HOST_IDLE);
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_input_send(x->h, x->id, "q-1", done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_string_equal(x->turn, "t2");
	WAIT(x, x->settled == 2);
	assert_string_equal(str(done_n(x, 1), "outcome"), "completed");
	struct scan *s = read_log(x);
	/* the partial answer of the canceled turn is kept */
	size_t txt = find_type(s, 0, "assistant/text");
	assert_true(txt < find_type(s, 0, "turn/end"));
	assert_int_equal(count_type(s, "input/dequeued"), 1);
	scan_free(s);
}

/* After a failed turn queued input is held as well. */
static void test_host_queue_is_held_after_a_failed_turn(void **state)
{
	struct hx *x = *state;
	struct host_call c = fake_call(x, "{\"replies\":[{\"status\":400,\"stall_before_ms\":300,"
					  "\"error\":{\"type\":\"invalid_request_error\","
					  "\"message\":\"bad\"}}]}");
	create(x, &c);
	send_prompt(x, "first", NULL);
	send_prompt(x, "queued", "q-1");
	WAIT(x, x->settled == 1);
	assert_string_equal(str(done_n(x, 0), "outcome"), "failed");
	assert_string_equal(str(cJSON_GetObjectItem(done_n(x, 0), "error"), "class"), "provider");
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	const struct host_input *in;
	assert_int_equal(host_queued(x->h, x->id, &in), 1);
	assert_false(in[0].armed);
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 1);
	cJSON_Delete(reqs);
}

/* A queued prompt can be taken back (its text returned) or removed; both
 * are durable input/dequeued events, and neither runs. */
static void test_host_queued_prompt_is_taken_back_or_removed(void **state)
{
	struct hx *x = *state;
	struct host_call c = fake_call(x, "{\"replies\":[{\"text\":\"a b c d\",\"pieces\":4,"
					  "\"stall_ms\":800,\"stall_after\":1}]}");
	create(x, &c);
	send_prompt(x, "first", NULL);
	send_prompt(x, "to edit", "q-1");
	send_prompt(x, "to drop", "q-2");
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_input_take(x->h, x->id, "q-1", done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_string_equal(x->taken, "to edit");
	before = x->calls;
	assert_int_equal(host_input_remove(x->h, x->id, "q-2", done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_string_equal(x->taken, "to drop");
	FAILS(host_input_take(x->h, x->id, "q-2", done_cb, x, &err), CERR_MISSING);
	WAIT(x, x->settled == 1);
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
	assert_int_equal(x->settled, 1); /* nothing else ran */
	struct scan *s = read_log(x);
	assert_int_equal(count_type(s, "input/queued"), 2);
	assert_int_equal(count_type(s, "input/dequeued"), 2);
	assert_int_equal(count_type(s, "turn/start"), 1);
	scan_free(s);
}

/* Canceled before the BEFORE save is acknowledged: nothing is dispatched,
 * the turn ends canceled once the save completes, and the prompt comes
 * back in the marker. */
static void test_host_cancel_before_the_before_save_sends_nothing(void **state)
{
	struct hx *x = *state;
	struct host_call c = fake_call(x, "{\"replies\":[{\"text\":\"never\"}]}");
	create(x, &c);
	fifo_pause(x->f, true);
	send_prompt(x, "take it back", NULL);
	host_cancel(x->h, x->id);
	fifo_pause(x->f, false);
	WAIT(x, x->settled == 1);
	assert_string_equal(str(done_n(x, 0), "outcome"), "canceled");
	assert_string_equal(str(done_n(x, 0), "text"), "take it back");
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 0);
	cJSON_Delete(reqs);
	struct scan *s = read_log(x);
	assert_int_equal(find_type(s, 0, "request/prepared"), s->n_events);
	assert_string_equal(str(s->events[s->n_events - 1].data, "outcome"), "canceled");
	scan_free(s);
}

/* Cancel while waiting for the first byte: the transfer is aborted. */
static void test_host_cancel_while_waiting_for_the_first_byte(void **state)
{
	struct hx *x = *state;
	struct host_call c = fake_call(x, "{\"replies\":[{\"text\":\"late\",\"stall_before_ms\":5000}]}");
	create(x, &c);
	send_prompt(x, "hello", NULL);
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
	assert_string_equal(str(done_n(x, 0), "outcome"), "canceled");
	assert_int_equal(x->text.len, 0);
}

/* A provider failure before any output, and a stream cut off mid-way
 * (delivery unknown: the partial text kept, never re-sent). */
static void test_host_provider_failure_and_delivery_unknown(void **state)
{
	struct hx *x = *state;
	struct host_call c = fake_call(
		x, "{\"replies\":[{\"status\":401,\"error\":{\"type\":\"authentication_error\","
		   "\"message\":\"bad key\"}},{\"text\":\"partial then gone\",\"split\":\"event\","
		   "\"pieces\":3,\"disconnect_after\":3}]}");
	create(x, &c);
	send_prompt(x, "one", NULL);
	WAIT(x, x->settled == 1);
	assert_string_equal(str(done_n(x, 0), "outcome"), "failed");
	assert_string_equal(str(cJSON_GetObjectItem(done_n(x, 0), "error"), "class"), "provider");
	send_prompt(x, "two", NULL);
	WAIT(x, x->settled == 2);
	assert_string_equal(str(done_n(x, 1), "outcome"), "failed");
	assert_string_equal(str(cJSON_GetObjectItem(done_n(x, 1), "error"), "class"),
			    "delivery_unknown");
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 2); /* never re-sent */
	cJSON_Delete(reqs);
	struct scan *s = read_log(x);
	size_t t2 = find_type(s, find_type(s, 0, "turn/end"), "turn/start");
	assert_true(find_type(s, t2, "assistant/text") < s->n_events);
	scan_free(s);
}

/* A full save that fails leaves the session unsaved (told to the
 * consumer), keeps its durable head, lets explicit input work; a recovery
 * save writes the rest of the turn. */
static void test_host_failed_full_save_is_unsaved_until_a_recovery_save(void **state)
{
	struct hx *x = *state;
	struct host_call c = offline_call();
	create(x, &c);
	x->hold = true;
	send_prompt(x, "hello", NULL);
	WAIT(x, x->have_held);
	/* everything the turn posted so far is durable; then every sync fails */
	assert_int_equal(fifo_flush_wait(x->f, NULL, clock_mono_ns() / 1000000 + 10000), 0);
	faultfs_install();
	x->faults = true;
	for (unsigned k = 1; k <= 4; k++) {
		faultfs_fail(FF_FDATASYNC, k, EIO);
		faultfs_fail(FF_FSYNC, k, EIO);
	}
	struct cerr err;
	assert_int_equal(host_applied(x->h, &x->held, &err), 0);
	WAIT(x, x->settled == 1);
	assert_int_equal(x->settled_ok, 0);
	assert_int_equal(x->unsaved, 1);
	assert_int_equal(host_save_state(x->h, x->id), HOST_UNSAVED);
	assert_int_equal(host_state(x->h, x->id), HOST_IDLE);
	faultfs_disarm();
	int before = x->calls;
	assert_int_equal(host_save(x->h, x->id, done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_int_equal(host_save_state(x->h, x->id), HOST_SAVED);
	WAIT(x, x->saved == 1);
	struct scan *s = read_log(x);
	assert_string_equal(s->events[s->n_events - 1].type, "turn/end");
	assert_string_equal(str(s->events[s->n_events - 1].data, "outcome"), "completed");
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
	/* and the session goes on */
	x->hold = false;
	send_prompt(x, "again", NULL);
	WAIT(x, x->settled == 2);
	assert_int_equal(x->settled_ok, 1);
}

/* A send to an unsaved session posts the recovery save ahead of its
 * BEFORE save. */
static void test_host_send_to_an_unsaved_session_recovers_it_first(void **state)
{
	struct hx *x = *state;
	struct host_call c = offline_call();
	create(x, &c);
	x->hold = true;
	send_prompt(x, "hello", NULL);
	WAIT(x, x->have_held);
	assert_int_equal(fifo_flush_wait(x->f, NULL, clock_mono_ns() / 1000000 + 10000), 0);
	faultfs_install();
	x->faults = true;
	for (unsigned k = 1; k <= 4; k++)
		faultfs_fail(FF_FDATASYNC, k, EIO);
	struct cerr err;
	assert_int_equal(host_applied(x->h, &x->held, &err), 0);
	WAIT(x, x->settled == 1);
	assert_int_equal(host_save_state(x->h, x->id), HOST_UNSAVED);
	faultfs_disarm();
	x->hold = false;
	send_prompt(x, "next", NULL);
	WAIT(x, x->settled == 2);
	assert_int_equal(x->settled_ok, 1);
	assert_int_equal(host_save_state(x->h, x->id), HOST_SAVED);
	struct scan *s = read_log(x);
	assert_int_equal(count_type(s, "turn/end"), 2);
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
}

/* A settings change cannot wait behind a turn: busy; when idle it is
 * recorded. */
static void test_host_settings_change_is_busy_during_a_turn(void **state)
{
	struct hx *x = *state;
	struct host_call c = fake_call(x, "{\"replies\":[{\"text\":\"a b\",\"pieces\":2,"
					  "\"stall_ms\":500,\"stall_after\":1}]}");
	create(x, &c);
	send_prompt(x, "first", NULL);
	struct host_settings set = {.model = "m-2"};
	struct cerr err;
	FAILS(host_update_settings(x->h, x->id, &set, done_cb, x, &err), CERR_BUSY);
	WAIT(x, x->settled == 1);
	int before = x->calls;
	assert_int_equal(host_update_settings(x->h, x->id, &set, done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	struct host_settings now;
	assert_int_equal(host_settings(x->h, x->id, &now, &err), 0);
	assert_string_equal(now.model, "m-2");
	struct scan *s = read_log(x);
	assert_string_equal(s->events[s->n_events - 1].type, "session/settings");
	scan_free(s);
}

/* A marker of another generation settles nothing. */
static void test_host_stale_marker_settles_nothing(void **state)
{
	struct hx *x = *state;
	struct host_call c = offline_call();
	create(x, &c);
	x->hold = true;
	send_prompt(x, "hello", NULL);
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

/* Close cancels the running turn and finishes within its deadline while
 * the consumer reads; a consumer that stops reading holds the settlement,
 * so the deadline passes and nothing is closed; closing again later works. */
static void test_host_close_within_and_past_its_deadline(void **state)
{
	struct hx *x = *state;
	struct host_call c = fake_call(x, "{\"replies\":[{\"text\":\"a b c d e f\",\"pieces\":6,"
					  "\"split\":\"event\",\"rate\":4}]}");
	create(x, &c);
	send_prompt(x, "first", NULL);
	WAIT(x, x->text.len > 0);
	sink_read_stop(x->sink); /* a consumer that stopped reading */
	int hc = 0;
	assert_int_equal(host_close(x->h, clock_mono_ns() / 1000000 + 300, host_closed, &hc), 0);
	struct cerr err;
	struct host_send s = {.text = "refused"};
	FAILS(host_send(x->h, x->id, &s, done_cb, x, &err), CERR_USAGE);
	WAIT(x, hc != 0);
	assert_int_equal(hc, 2); /* timed out: the turn waits for its consumer */
	assert_int_equal(host_state(x->h, x->id), HOST_TURN);
	sink_read_start(x->sink, read_cb, x);
	hc = 0;
	assert_int_equal(host_close(x->h, clock_mono_ns() / 1000000 + 10000, host_closed, &hc), 0);
	WAIT(x, hc != 0);
	assert_int_equal(hc, 1);
	assert_string_equal(str(done_n(x, 0), "outcome"), "canceled");
	host_free(x->h);
	x->h = NULL;
	int closed = 0;
	assert_int_equal(fifo_close(x->f, clock_mono_ns() / 1000000 + 10000, fifo_closed, &closed), 0);
	http_close(x->http, noop, NULL);
	sink_close(x->sink, NULL, NULL);
	while (!closed)
		uv_run(&x->loop, UV_RUN_ONCE);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	struct scan *sc = read_log(x);
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
	struct host_call c = offline_call();
	create(x, &c); /* a session that completes: not to be touched */
	send_prompt(x, "fine", NULL);
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
	fifo_item_create_header(it, "/w", "offline", NULL, NULL);
	fifo_item_set_running(it);
	assert_int_equal(fifo_post(x->f, it, item_cb, &n, &err), 0);
	WAIT(x, n == 1);
	stop_parts(x);
	start_parts(x);
	int before = x->calls;
	assert_int_equal(host_recover_interrupted(x->h, recovered_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_string_equal(x->turn, "1/0");
	struct scan *s = read_log(x);
	const cJSON *end = s->events[s->n_events - 1].data;
	assert_string_equal(s->events[s->n_events - 1].type, "turn/end");
	assert_string_equal(str(end, "outcome"), "interrupted");
	assert_int_equal(count_type(s, "input/dequeued"), 0);
	assert_int_equal(count_type(s, "turn/start"), 1);
	scan_free(s);
	/* once repaired it is no longer running: a second recovery finds none */
	before = x->calls;
	assert_int_equal(host_recover_interrupted(x->h, recovered_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_string_equal(x->turn, "0/0");
	/* the finished session was not opened: its log ends as it did */
	snprintf(x->id, sizeof x->id, "%s", done_id);
	s = read_log(x);
	assert_string_equal(str(s->events[s->n_events - 1].data, "outcome"), "completed");
	scan_free(s);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_host_send_is_idempotent_also_across_a_restart),
		T(test_host_send_during_a_turn_is_queued_then_runs_after_a_saved_success),
		T(test_host_queue_is_held_after_a_cancel_until_sent),
		T(test_host_queue_is_held_after_a_failed_turn),
		T(test_host_queued_prompt_is_taken_back_or_removed),
		T(test_host_cancel_before_the_before_save_sends_nothing),
		T(test_host_cancel_while_waiting_for_the_first_byte),
		T(test_host_provider_failure_and_delivery_unknown),
		T(test_host_failed_full_save_is_unsaved_until_a_recovery_save),
		T(test_host_send_to_an_unsaved_session_recovers_it_first),
		T(test_host_settings_change_is_busy_during_a_turn),
		T(test_host_stale_marker_settles_nothing),
		T(test_host_close_within_and_past_its_deadline),
		T(test_host_start_up_recovery_repairs_running_sessions_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
