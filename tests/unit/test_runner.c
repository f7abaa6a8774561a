/* test_runner.c — one turn end to end through the runner, the sink and
 * the real FIFO (engine/runner.h), with the offline provider and with the
 * fake model server over 127.0.0.1, a consumer on the same loop reading
 * the sink as the chat screen will: the BEFORE save before any byte goes
 * to a provider, request/prepared durable before the server is asked (the
 * server checks the log itself), the marker after every item of the turn,
 * settlement by a full save whose receipt is adopted, a stale marker that
 * settles nothing, the settings a turn changes in its BEFORE save, busy
 * admission, cancel before dispatch, a provider's
 * refusal, and a failed capture that stops every further request. The log
 * is read back from disk in each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "engine/runner.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_servers.h"
#include "tests/unit/support_fixture.h"

struct rx {
	char dir[64], root[128];
	uv_loop_t loop;
	struct fifo *f;
	struct sink *sink;
	struct http *http;
	struct runner *run;
	struct context *ctx;
	struct journal *j;        /* session S's */
	struct fake fake;
	bool have_fake;
	/* the consumer */
	struct buf seen;          /* one line per item */
	struct buf text;          /* streamed answer */
	cJSON *done;              /* the turn_done payload */
	cJSON *settled;           /* the settled payload */
	bool settle_stale;        /* settle with a wrong generation first */
	struct cerr stale_err;
	size_t durable_before_done;
};

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	(void)s;
	struct rx *x = ctx;
	switch (it->kind) {
	case SINK_EVENT:
		buf_printf(&x->seen, "%s %llu\n", vocab_type_name(it->vtype),
			   (unsigned long long)it->seq);
		if (!x->done)
			x->durable_before_done++;
		break;
	case SINK_TEXT:
		if (it->stream == SINK_STREAM_TEXT)
			buf_add(&x->text, it->text, it->len);
		break;
	case SINK_NOTICE:
		break;
	case SINK_MARKER:
		buf_printf(&x->seen, "marker %s\n", sink_marker_name(it->marker));
		if (it->marker == SINK_MARKER_TURN_DONE) {
			x->done = cJSON_Duplicate(it->data, 1);
			struct cerr err;
			if (x->settle_stale) {
				struct sink_op old = it->op;
				old.generation++;
				assert_int_equal(runner_settle(x->run, &old, &x->stale_err), -1);
			}
			if (runner_settle(x->run, &it->op, &err) < 0)
				fail_msg("settle: %s", err.msg);
		} else if (it->marker == SINK_MARKER_SETTLED) {
			x->settled = cJSON_Duplicate(it->data, 1);
		}
		break;
	}
}

static int setup(void **state)
{
	struct rx *x = xcalloc(1, sizeof *x);
	struct cerr err;
	assert_int_equal(tmp_root("cairn-runner", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	x->sink = sink_new(&x->loop, NULL);
	if (!(x->http = http_new(&x->loop, &err)))
		fail_msg("http_new: %s", err.msg);
	struct runner_deps d = {.loop = &x->loop, .http = x->http, .sink = x->sink};
	x->run = runner_new(&d);
	x->ctx = context_new();
	struct journal_deps jd = {
		.fifo = x->f, .sink = x->sink, .session = "S", .generation = 1, .cwd = "/w"};
	x->j = journal_new(&jd, x->ctx, false, 1, 0);
	buf_init(&x->seen);
	buf_init(&x->text);
	sink_read_start(x->sink, read_cb, x);
	*state = x;
	return 0;
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

static int teardown(void **state)
{
	struct rx *x = *state;
	runner_free(x->run);
	journal_close(x->j);
	context_free(x->ctx);
	int closed = 0;
	assert_int_equal(fifo_close(x->f, clock_mono_ns() / 1000000 + 10000, fifo_closed, &closed), 0);
	http_close(x->http, noop, NULL);
	sink_close(x->sink, NULL, NULL);
	while (!closed)
		uv_run(&x->loop, UV_RUN_ONCE);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	if (x->have_fake)
		fake_stop(&x->fake);
	cJSON_Delete(x->done);
	cJSON_Delete(x->settled);
	buf_release(&x->seen);
	buf_release(&x->text);
	rm_rf(x->dir);
	free(x);
	return 0;
}

static struct runner_turn offline_turn(struct rx *x, const char *text)
{
	struct runner_turn t = {
		.session = "S",
		.journal = x->j,
		.generation = 1,
		.ctx = x->ctx,
		.turn = "t1",
		.client_submit_id = "submit-1",
		.text = text,
		.provider = "offline",
		.call = {.kind = PROVIDER_OFFLINE, .pace_ms = 0, .retry = {3, 5, 20, 60000}},
	};
	return t;
}

static void run_until_settled(struct rx *x)
{
	uint64_t until = clock_mono_ns() / 1000000 + 20000;
	while (!x->settled) {
		if (clock_mono_ns() / 1000000 > until)
			fail_msg("no settlement in 20 s; seen:\n%s", x->seen.p ? x->seen.p : "");
		uv_run(&x->loop, UV_RUN_ONCE);
	}
}

static struct scan *read_log(struct rx *x)
{
	char *p = session_path(x->root, STORE_SESSIONS, "/w", "S", LOG_FILE);
	struct scan *s = scan_path(p);
	free(p);
	assert_int_equal(s->status, SCAN_OK);
	return s;
}

/* The index of the first event of type in s from i on, or s->n_events. */
static size_t find_type(const struct scan *s, size_t i, const char *type)
{
	while (i < s->n_events && strcmp(s->events[i].type, type) != 0)
		i++;
	return i;
}

static const char *outcome_of(const cJSON *o)
{
	const cJSON *v = cJSON_GetObjectItem(o, "outcome");
	return cJSON_IsString(v) ? v->valuestring : "";
}

/* The offline provider's whole turn: saves in order, the marker last,
 * the full save's receipt adopted and the session no longer running. */
static void test_runner_offline_turn_saves_in_order_and_settles(void **state)
{
	struct rx *x = *state;
	struct runner_turn t = offline_turn(x, "hello there");
	struct sink_op op;
	struct cerr err;
	assert_int_equal(runner_start(x->run, &t, &op, &err), 0);
	assert_string_equal(op.session, "S");
	assert_true(runner_busy(x->run, "S"));
	/* one turn per session */
	assert_int_equal(runner_start(x->run, &t, NULL, &err), -1);
	assert_int_equal(err.cls, CERR_BUSY);
	run_until_settled(x);
	assert_false(runner_busy(x->run, "S"));
	assert_string_equal(outcome_of(x->done), "completed");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(x->settled, "ok")));
	assert_non_null(strstr(x->text.p, "hello there"));
	struct scan *s = read_log(x);
	assert_string_equal(s->events[1].type, "turn/start");
	assert_string_equal(
		cJSON_GetObjectItem(s->events[1].data, "client_submit_id")->valuestring, "submit-1");
	assert_string_equal(s->events[2].type, "user/message");
	size_t rp = find_type(s, 3, "request/prepared");
	size_t txt = find_type(s, 3, "assistant/text");
	assert_true(rp < txt && txt < s->n_events);
	const cJSON *d = s->events[rp].data;
	assert_string_equal(cJSON_GetObjectItem(d, "provider")->valuestring, "offline");
	assert_int_equal(cJSON_GetObjectItem(d, "attempt")->valueint, 1);
	assert_int_equal(strlen(cJSON_GetObjectItem(d, "context_fp")->valuestring), 64);
	size_t se = find_type(s, txt, "step/end");
	size_t te = find_type(s, se, "turn/end");
	assert_int_equal(te, s->n_events - 1);
	assert_string_equal(outcome_of(s->events[te].data), "completed");
	/* what streamed is what was saved */
	struct buf saved = BUF_INIT;
	for (size_t i = txt; i < se; i++)
		if (strcmp(s->events[i].type, "assistant/text") == 0)
			buf_adds(&saved, cJSON_GetObjectItem(s->events[i].data, "text")->valuestring);
	assert_string_equal(saved.p, x->text.p);
	buf_release(&saved);
	/* the receipt is the log's head */
	assert_int_equal((uint64_t)cJSON_GetObjectItem(x->settled, "next_seq")->valuedouble,
			 s->rev.next_seq);
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
	/* every durable event reached the sink, the marker after the turn's */
	assert_non_null(strstr(x->seen.p, "turn/start 1\nuser/message 2\n"));
	assert_non_null(strstr(x->seen.p, "marker turn_done\n"));
	const char *end = strstr(x->seen.p, "turn/end");
	assert_true(end > strstr(x->seen.p, "marker turn_done"));
	assert_true(strstr(x->seen.p, "marker settled") > end);
}

/* A marker of another generation settles nothing; the real one does. */
static void test_runner_stale_marker_settles_nothing(void **state)
{
	struct rx *x = *state;
	x->settle_stale = true;
	struct runner_turn t = offline_turn(x, "x");
	struct cerr err;
	assert_int_equal(runner_start(x->run, &t, NULL, &err), 0);
	run_until_settled(x);
	assert_int_equal(x->stale_err.cls, CERR_CONFLICT);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(x->settled, "ok")));
}

/* The settings a turn changes lead its BEFORE batch, durable and in the
 * sink before the prompt; a turn given none writes none. */
static void test_runner_before_batch_holds_the_settings_given(void **state)
{
	struct rx *x = *state;
	struct runner_turn t = offline_turn(x, "first");
	cJSON *set = cJSON_Parse("{\"provider\":\"offline\",\"model\":\"offline\","
				 "\"system_prompt\":\"be brief\"}");
	t.settings = set;
	struct cerr err;
	assert_int_equal(runner_start(x->run, &t, NULL, &err), 0);
	cJSON_Delete(set); /* copied by the runner */
	run_until_settled(x);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(x->settled, "ok")));
	assert_non_null(strstr(x->seen.p, "session/settings 1\nturn/start 2\nuser/message 3\n"));
	uint64_t next = (uint64_t)cJSON_GetObjectItem(x->settled, "next_seq")->valuedouble;
	uint64_t version = (uint64_t)cJSON_GetObjectItem(x->settled, "version")->valuedouble;
	assert_int_equal(journal_next_seq(x->j), next); /* the journal holds the head */
	assert_int_equal(journal_version(x->j), version);
	struct scan *s = read_log(x);
	assert_string_equal(s->events[1].type, "session/settings");
	assert_null(s->events[1].turn);
	const cJSON *d = s->events[1].data;
	assert_string_equal(cJSON_GetObjectItem(d, "system_prompt")->valuestring, "be brief");
	assert_string_equal(cJSON_GetObjectItem(d, "model")->valuestring, "offline");
	assert_string_equal(s->events[2].type, "turn/start");
	assert_string_equal(s->events[3].type, "user/message");
	/* in the BEFORE save's frame, with the prompt */
	bool one_frame = false;
	for (size_t f = 0; f < s->n_frames; f++)
		one_frame |= s->frames[f].first_event == 1 && s->frames[f].n_events == 3;
	assert_true(one_frame);
	size_t first_turn = s->n_events;
	scan_free(s);

	/* the next turn, nothing changed: no settings */
	cJSON_Delete(x->done);
	cJSON_Delete(x->settled);
	x->done = x->settled = NULL;
	t = offline_turn(x, "second");
	t.turn = "t2";
	t.client_submit_id = NULL;
	assert_int_equal(runner_start(x->run, &t, NULL, &err), 0);
	run_until_settled(x);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(x->settled, "ok")));
	s = read_log(x);
	assert_string_equal(s->events[first_turn].type, "turn/start");
	assert_int_equal(find_type(s, first_turn, "session/settings"), s->n_events);
	scan_free(s);
}

/* Canceled before its BEFORE save is acknowledged: nothing is dispatched,
 * and the turn ends canceled once the save completes. */
static void test_runner_cancel_before_dispatch_sends_nothing(void **state)
{
	struct rx *x = *state;
	struct runner_turn t = offline_turn(x, "never answered");
	struct cerr err;
	assert_int_equal(runner_start(x->run, &t, NULL, &err), 0);
	runner_cancel(x->run, "S");
	run_until_settled(x);
	assert_string_equal(outcome_of(x->done), "canceled");
	assert_int_equal(x->text.len, 0);
	struct scan *s = read_log(x);
	assert_int_equal(find_type(s, 0, "request/prepared"), s->n_events);
	assert_string_equal(outcome_of(s->events[s->n_events - 1].data), "canceled");
	scan_free(s);
}

static char *cairn_path(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	return xasprintf("%s/cairn", dirname(dirname(exe)));
}

static struct runner_turn openai_turn(struct rx *x, const char *text, char **base)
{
	*base = url(x->fake.port, "/v1");
	struct runner_turn t = offline_turn(x, text);
	t.provider = "openai";
	t.call.kind = PROVIDER_OPENAI;
	t.call.params = (struct provider_params){.model = "m-1", .base_url = *base,
						 .api_key = "sk-test"};
	t.call.timeouts = (struct http_timeouts){2000, 2000, 1000, 0};
	return t;
}

/* Over HTTP: the server itself checks, before it answers, that the
 * session's log already holds the request/prepared of that request. */
static void test_runner_request_prepared_is_durable_before_the_request(void **state)
{
	struct rx *x = *state;
	char *cairn = cairn_path();
	char *check = xasprintf("%s --data-dir %s log cat S | grep -q request/prepared", cairn,
				x->root);
	const char *const extra[] = {"--before-reply", check, NULL};
	fake_start(&x->fake, "{\"replies\":[{\"text\":\"Streamed \\u00e9 reply\",\"pieces\":4,"
			     "\"usage\":{\"input\":9,\"output\":4}}]}",
		   extra);
	x->have_fake = true;
	char *base;
	struct runner_turn t = openai_turn(x, "over http", &base);
	struct cerr err;
	assert_int_equal(runner_start(x->run, &t, NULL, &err), 0);
	run_until_settled(x);
	if (strcmp(outcome_of(x->done), "completed") != 0)
		fail_msg("outcome %s: %s", outcome_of(x->done),
			 cJSON_PrintUnformatted(cJSON_GetObjectItem(x->done, "error")));
	assert_string_equal(x->text.p, "Streamed \xc3\xa9 reply");
	struct scan *s = read_log(x);
	size_t te = s->n_events - 1;
	const cJSON *u = cJSON_GetObjectItem(s->events[te].data, "usage");
	assert_int_equal(cJSON_GetObjectItem(u, "input")->valueint, 9);
	assert_int_equal(cJSON_GetObjectItem(u, "output")->valueint, 4);
	size_t se = find_type(s, 0, "step/end");
	assert_string_equal(cJSON_GetObjectItem(s->events[se].data, "finish_reason")->valuestring,
			    "stop");
	scan_free(s);
	free(check);
	free(cairn);
	free(base);
}

/* A provider's refusal fails the turn with its class, message and status,
 * in the marker and in turn/end. */
static void test_runner_provider_refusal_fails_the_turn(void **state)
{
	struct rx *x = *state;
	fake_start(&x->fake, "{\"replies\":[{\"status\":404,\"error\":{\"type\":\"invalid_request_error\","
			     "\"code\":\"model_not_found\",\"message\":\"no such model m-1\"}}]}",
		   NULL);
	x->have_fake = true;
	char *base;
	struct runner_turn t = openai_turn(x, "hi", &base);
	struct cerr err;
	assert_int_equal(runner_start(x->run, &t, NULL, &err), 0);
	run_until_settled(x);
	assert_string_equal(outcome_of(x->done), "failed");
	const cJSON *e = cJSON_GetObjectItem(x->done, "error");
	assert_string_equal(cJSON_GetObjectItem(e, "class")->valuestring, "provider");
	assert_int_equal(cJSON_GetObjectItem(e, "http_status")->valueint, 404);
	struct scan *s = read_log(x);
	const cJSON *le = cJSON_GetObjectItem(s->events[s->n_events - 1].data, "error");
	assert_non_null(strstr(cJSON_GetObjectItem(le, "message")->valuestring, "no such model"));
	scan_free(s);
	free(base);
}

static void meta_done(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		      const struct cerr *err)
{
	(void)it;
	(void)r;
	assert_null(err);
	(*(int *)ctx)++;
}

/* Another write lands between the BEFORE save and the first request (it
 * is posted right behind the BEFORE save): the capture of request/prepared
 * fails, so nothing is sent and the turn fails with capture_failed. */
static void test_runner_failed_capture_sends_no_request(void **state)
{
	struct rx *x = *state;
	fake_start(&x->fake, "{\"replies\":[{\"text\":\"never\"}]}", NULL);
	x->have_fake = true;
	char *base;
	struct runner_turn t = openai_turn(x, "hi", &base);
	struct cerr err;
	assert_int_equal(runner_start(x->run, &t, NULL, &err), 0);
	int metas = 0;
	assert_int_equal(fifo_post(x->f, fifo_meta("S", cJSON_Parse("{\"title\":\"elsewhere\"}")),
				   meta_done, &metas, &err),
			 0);
	run_until_settled(x);
	assert_int_equal(metas, 1);
	assert_string_equal(outcome_of(x->done), "failed");
	const cJSON *e = cJSON_GetObjectItem(x->done, "error");
	assert_string_equal(cJSON_GetObjectItem(e, "class")->valuestring, "capture_failed");
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 0);
	cJSON_Delete(reqs);
	free(base);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_runner_offline_turn_saves_in_order_and_settles),
		T(test_runner_stale_marker_settles_nothing),
		T(test_runner_before_batch_holds_the_settings_given),
		T(test_runner_cancel_before_dispatch_sends_nothing),
		T(test_runner_request_prepared_is_durable_before_the_request),
		T(test_runner_provider_refusal_fails_the_turn),
		T(test_runner_failed_capture_sends_no_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
