/* test_call.c — one model call against the fake model server over real
 * sockets on 127.0.0.1 (engine/call.h): every row of the failure table —
 * complete streams of both wire formats, connect failures retried then
 * reported, 429/5xx/529 retried with backoff or Retry-After (never for
 * insufficient_quota, never past the cap), other HTTP errors with the
 * server's message, errors inside the stream, replies cut off or stalled
 * (delivery unknown, never re-sent), what counts as progress (content,
 * never comments), the deadline, a finish_reason that closes a reply held
 * open — plus cancel at every stage, the
 * caller's go-ahead before each attempt, pause and resume, and the offline
 * provider. Each test ends with uv_loop_close() == 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/call.h"
#include "engine/offline.h"
#include "tests/unit/support_servers.h"
#include "tests/unit/support_fixture.h"

struct run {
	uv_loop_t loop;
	struct http *http;
	struct fake fake;
	bool have_fake;
	/* what the call reported */
	struct buf text;
	unsigned asked;          /* before_attempt calls */
	int done;
	struct call_result res;
	/* behaviour */
	bool hold_first;         /* do not proceed with attempt 1: cancel it instead */
	size_t cancel_after;     /* call_cancel after this many text events (0: never) */
	size_t pause_after;      /* call_pause after this many text events (0: never) */
	size_t texts;
	size_t texts_at_pause;
	struct call *c;
	uv_timer_t resume;       /* resumes a paused call later */
	struct http_timeouts timeouts; /* when connect_ms is set, instead of the usual */
	uint64_t ms;             /* from call_start to on_done */
};

static void before_attempt(void *ud, struct call *c, unsigned attempt)
{
	struct run *r = ud;
	r->asked++;
	assert_int_equal(attempt, r->asked);
	assert_int_equal(call_attempt(c), attempt);
	if (r->hold_first && attempt == 1) {
		call_cancel(c);
		return;
	}
	call_proceed(c);
}

static void resume_cb(uv_timer_t *t)
{
	struct run *r = t->data;
	/* Nothing came while paused. */
	assert_int_equal(r->texts, r->texts_at_pause);
	call_resume(r->c);
}

static void on_event(void *ud, struct call *c, const struct stream_event *ev)
{
	struct run *r = ud;
	if (ev->kind != STREAM_TEXT)
		return;
	buf_add(&r->text, ev->text, ev->len);
	r->texts++;
	if (r->cancel_after && r->texts == r->cancel_after)
		call_cancel(c);
	if (r->pause_after && r->texts == r->pause_after) {
		call_pause(c);
		r->texts_at_pause = r->texts;
		uv_timer_start(&r->resume, resume_cb, 300, 0);
	}
}

static void on_done(void *ud, struct call *c, const struct call_result *res)
{
	(void)c;
	struct run *r = ud;
	r->done++;
	r->res = *res;
	r->c = NULL;
}

static void run_init(struct run *r)
{
	memset(r, 0, sizeof *r);
	assert_int_equal(uv_loop_init(&r->loop), 0);
	struct cerr err;
	r->http = http_new(&r->loop, &err);
	if (!r->http)
		fail_msg("http_new: %s", err.msg);
	buf_init(&r->text);
	uv_timer_init(&r->loop, &r->resume);
	r->resume.data = r;
}

static void closed_cb(void *ud)
{
	(*(int *)ud)++;
}

static void run_end(struct run *r)
{
	if (!r->http)
		return;
	int closed = 0;
	http_close(r->http, closed_cb, &closed);
	uv_close((uv_handle_t *)&r->resume, NULL);
	uv_run(&r->loop, UV_RUN_DEFAULT);
	assert_int_equal(closed, 1);
	assert_int_equal(uv_loop_close(&r->loop), 0);
	if (r->have_fake)
		fake_stop(&r->fake);
	buf_release(&r->text);
	r->http = NULL;
}

/* Every test runs in a struct run that the teardown ends, also after a
 * failed assertion: the server never outlives its test. */
static int setup(void **state)
{
	struct run *r = xcalloc(1, sizeof *r);
	run_init(r);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct run *r = *state;
	run_end(r);
	free(r);
	return 0;
}

static const struct ctx_message *one_prompt(size_t *n)
{
	static char text[] = "Say hello";
	static struct ctx_part part = {.kind = CTX_TEXT, .text = text};
	static struct ctx_message msg = {.role = CTX_USER, .parts = &part, .nparts = 1};
	*n = 1;
	return &msg;
}

/* Run one call of kind against base_url (NULL: the fake's) to its end. */
static void run_call(struct run *r, enum provider_kind kind, const char *base_url)
{
	size_t n;
	const struct ctx_message *msgs = one_prompt(&n);
	char *own = NULL;
	if (!base_url)
		base_url = own = url(r->fake.port, kind == PROVIDER_OPENAI ? "/v1" : "");
	struct call_spec spec = {
		.kind = kind,
		.params = {.model = "m-1", .base_url = base_url, .api_key = kind == PROVIDER_ANTHROPIC ? "ant-test" : "sk-test"},
		.msgs = msgs,
		.n = n,
		.prompt = "Say hello",
		.pace_ms = 0,
		.timeouts = {2000, 2000, 300, 0},
		.retry = {3, 5, 20, 60000},
	};
	if (r->timeouts.connect_ms)
		spec.timeouts = r->timeouts;
	struct call_hooks hk = {before_attempt, on_event, on_done, r};
	uv_update_time(&r->loop);
	uint64_t t0 = uv_now(&r->loop);
	r->c = call_start(&r->loop, r->http, &spec, &hk);
	assert_int_equal(r->asked, 0); /* never from inside call_start */
	while (!r->done)
		uv_run(&r->loop, UV_RUN_ONCE);
	r->ms = uv_now(&r->loop) - t0;
	assert_int_equal(r->done, 1);
	free(own);
}

static void serve(struct run *r, const char *script)
{
	fake_start(&r->fake, script, NULL);
	r->have_fake = true;
}

/* Ready for another call on the same loop, engine and server. */
static void again(struct run *r)
{
	r->done = 0;
	r->asked = 0;
	r->texts = 0;
	buf_release(&r->text);
	buf_init(&r->text);
}

static int requests(struct run *r)
{
	cJSON *all = fake_requests(&r->fake);
	int n = cJSON_GetArraySize(all);
	cJSON_Delete(all);
	return n;
}

/* ---- complete replies ---- */

/* An OpenAI stream cut at random byte offsets (characters split across
 * writes) arrives whole, with its finish reason and usage; the key goes in
 * the Authorization header and usage is asked for. */
static void test_call_openai_stream_completes(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"Hello, w\\u00f6rld \\u2713 \\ud83d\\ude00!\",\"pieces\":9,"
		  "\"usage\":{\"input\":11,\"output\":7}}]}");
	run_call(r, PROVIDER_OPENAI, NULL);
	assert_int_equal(r->res.outcome, CALL_COMPLETE);
	assert_string_equal(r->text.p, "Hello, w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\x98\x80!");
	assert_int_equal(r->res.attempts, 1);
	assert_true(r->res.have_finish);
	assert_int_equal(r->res.finish, FINISH_STOP);
	assert_int_equal(r->res.usage.input, 11);
	assert_int_equal(r->res.usage.output, 7);
	assert_int_equal(r->res.http_status, 200);
	cJSON *all = fake_requests(&r->fake);
	cJSON *rq = cJSON_GetArrayItem(all, 0);
	const cJSON *h = cJSON_GetObjectItem(rq, "headers");
	const cJSON *auth = cJSON_GetObjectItem(h, "Authorization");
	if (!auth)
		auth = cJSON_GetObjectItem(h, "authorization");
	assert_string_equal(auth->valuestring, "Bearer sk-test");
	const cJSON *rb = cJSON_GetObjectItem(rq, "body");
	cJSON *body = cJSON_IsString(rb) ? cJSON_Parse(rb->valuestring) : cJSON_Duplicate(rb, 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(body, "stream")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(body, "stream_options"),
						     "include_usage")));
	cJSON_Delete(body);
	cJSON_Delete(all);
	run_end(r);
}

/* The same through Anthropic's Messages stream (message_stop closes it). */
static void test_call_anthropic_stream_completes(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"Bonjour \\u00e0 tous\",\"pieces\":5,"
		  "\"usage\":{\"input\":4,\"output\":3}}]}");
	run_call(r, PROVIDER_ANTHROPIC, NULL);
	assert_int_equal(r->res.outcome, CALL_COMPLETE);
	assert_string_equal(r->text.p, "Bonjour \xc3\xa0 tous");
	assert_int_equal(r->res.usage.output, 3);
	run_end(r);
}

/* ---- retried ---- */

/* 429 with Retry-After, then 529, then a reply: three attempts, each one
 * asked for first; the reply is the last attempt's. */
static void test_call_rate_limit_and_overload_are_retried(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"status\":429,\"headers\":{\"Retry-After\":\"0\"},"
		  "\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}},"
		  "{\"status\":529,\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}},"
		  "{\"text\":\"at last\"}]}");
	run_call(r, PROVIDER_ANTHROPIC, NULL);
	assert_int_equal(r->res.outcome, CALL_COMPLETE);
	assert_int_equal(r->res.attempts, 3);
	assert_int_equal(r->asked, 3);
	assert_string_equal(r->text.p, "at last");
	assert_int_equal(requests(r), 3);
	run_end(r);
}

/* 5xx four times: the first attempt and three retries, then the server's
 * message with its status. */
static void test_call_server_errors_give_up_after_three_retries(void **state)
{
	struct run *r = *state;
	const char *e = "{\"status\":503,\"error\":{\"type\":\"server_error\",\"message\":\"down for now\"}}";
	char script[512];
	snprintf(script, sizeof script, "{\"replies\":[%s,%s,%s,%s,%s]}", e, e, e, e, e);
	serve(r, script);
	run_call(r, PROVIDER_OPENAI, NULL);
	assert_int_equal(r->res.outcome, CALL_PROVIDER_ERROR);
	assert_int_equal(r->res.attempts, 4);
	assert_int_equal(r->res.http_status, 503);
	assert_non_null(strstr(r->res.message, "down for now"));
	assert_int_equal(requests(r), 4);
	run_end(r);
}

/* Nothing listens: the request never goes out, so it is tried again, and
 * in the end the provider cannot be reached. */
static void test_call_connect_failure_is_retried_then_reported(void **state)
{
	struct run *r = *state;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t al = sizeof a;
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
	close(s); /* bound once, never listened: connection refused */
	char *base = xasprintf("http://127.0.0.1:%d/v1", ntohs(a.sin_port));
	run_call(r, PROVIDER_OPENAI, base);
	assert_int_equal(r->res.outcome, CALL_PROVIDER_ERROR);
	assert_int_equal(r->res.attempts, 4);
	assert_int_equal(r->res.http_status, 0);
	assert_non_null(strstr(r->res.message, "cannot reach"));
	free(base);
	run_end(r);
}

/* ---- not retried ---- */

/* A 429 for an exhausted quota, a 401, a Retry-After past the cap: one
 * attempt each, the server's message and status kept. */
static void test_call_refusals_are_not_retried(void **state)
{
	(void)state;
	static const struct {
		const char *reply;
		long status;
		const char *code, *says;
	} rows[] = {
		{"{\"status\":429,\"error\":{\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\","
		 "\"message\":\"You exceeded your current quota\"}}",
		 429, "insufficient_quota", "exceeded your current quota"},
		{"{\"status\":404,\"error\":{\"type\":\"invalid_request_error\",\"code\":\"model_not_found\","
		 "\"message\":\"The model m-1 does not exist\"}}",
		 404, "model_not_found", "does not exist"},
		{"{\"status\":429,\"headers\":{\"Retry-After\":\"120\"},\"error\":{\"type\":\"rate_limit\","
		 "\"message\":\"come back later\"}}",
		 429, NULL, "come back later"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		struct run *r = *state;
		if (!r->http)
			run_init(r);
		char script[512];
		snprintf(script, sizeof script, "{\"replies\":[%s,{\"text\":\"never\"}]}", rows[i].reply);
		serve(r, script);
		run_call(r, PROVIDER_OPENAI, NULL);
		assert_int_equal(r->res.outcome, CALL_PROVIDER_ERROR);
		assert_int_equal(r->res.attempts, 1);
		assert_int_equal(r->res.http_status, rows[i].status);
		if (rows[i].code)
			assert_string_equal(r->res.code, rows[i].code);
		if (!strstr(r->res.message, rows[i].says))
			fail_msg("row %zu: %s", i, r->res.message);
		assert_int_equal(requests(r), 1);
		run_end(r);
	}
}

/* The wrong key: 401 with the API's message, once. */
static void test_call_bad_key_is_a_provider_error(void **state)
{
	struct run *r = *state;
	const char *const extra[] = {"--openai-key", "sk-other", NULL};
	fake_start(&r->fake, "{\"replies\":[{\"text\":\"never\"}]}", extra);
	r->have_fake = true;
	run_call(r, PROVIDER_OPENAI, NULL);
	assert_int_equal(r->res.outcome, CALL_PROVIDER_ERROR);
	assert_int_equal(r->res.http_status, 401);
	assert_int_equal(r->res.attempts, 1);
	assert_null(strstr(r->res.message, "sk-test"));
	run_end(r);
}

/* An error event inside the stream ends the call as a provider error; the
 * text before it was delivered. */
static void test_call_error_inside_the_stream(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"partial answer\",\"stream_error\":{\"type\":\"server_error\","
		  "\"message\":\"the model crashed\"}}]}");
	run_call(r, PROVIDER_OPENAI, NULL);
	assert_int_equal(r->res.outcome, CALL_PROVIDER_ERROR);
	assert_non_null(strstr(r->res.message, "the model crashed"));
	assert_string_equal(r->text.p, "partial answer");
	assert_int_equal(r->res.attempts, 1);
	run_end(r);
}

/* ---- delivery unknown: never sent again ---- */

static void test_call_lost_replies_are_delivery_unknown(void **state)
{
	(void)state;
	static const char *const rows[] = {
		/* the connection dropped mid-stream */
		"{\"text\":\"one two three four five six\",\"pieces\":6,\"split\":\"event\","
		"\"disconnect_after\":4}",
		/* a clean end without [DONE] or a finish_reason */
		"{\"text\":\"abc\",\"omit_end\":true}",
		/* a stall longer than the gap timeout (300 ms) */
		"{\"text\":\"slow reply\",\"pieces\":3,\"split\":\"event\",\"stall_ms\":1500,"
		"\"stall_after\":2}",
		/* the request read, the connection closed without a reply */
		"{\"close_without_response\":true}",
	};
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		struct run *r = *state;
		if (!r->http)
			run_init(r);
		char script[512];
		snprintf(script, sizeof script, "{\"replies\":[%s,{\"text\":\"never\"}]}", rows[i]);
		serve(r, script);
		run_call(r, PROVIDER_OPENAI, NULL);
		if (r->res.outcome != CALL_DELIVERY_UNKNOWN)
			fail_msg("row %zu: %s (%s)", i, call_outcome_name(r->res.outcome), r->res.message);
		assert_int_equal(r->res.attempts, 1);
		assert_int_equal(requests(r), 1);
		assert_null(strstr(r->text.p ? r->text.p : "", "never"));
		run_end(r);
	}
}

/* ---- what counts as progress, and the closing event ---- */

/* Keep-alive comments while the model thinks: tolerated up to the
 * first-byte timeout (2 s here), though they outlast the gap (300 ms) —
 * the gap applies only once content came; past the first-byte timeout
 * they hold nothing open. */
static void test_call_comments_before_content_count_for_nothing(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"after thinking\",\"split\":\"event\",\"keepalive_ms\":100,"
		  "\"keepalive_for_ms\":1000},{\"text\":\"never\",\"split\":\"event\","
		  "\"keepalive_ms\":100,\"keepalive_for_ms\":6000}]}");
	run_call(r, PROVIDER_OPENAI, NULL);
	if (r->res.outcome != CALL_COMPLETE)
		fail_msg("%s (%s)", call_outcome_name(r->res.outcome), r->res.message);
	assert_string_equal(r->text.p, "after thinking");
	again(r); /* the same server, its second reply */
	run_call(r, PROVIDER_OPENAI, NULL);
	if (r->res.outcome != CALL_DELIVERY_UNKNOWN)
		fail_msg("%s (%s)", call_outcome_name(r->res.outcome), r->res.message);
	assert_string_equal(r->res.message,
			    "first byte timeout: no content in the reply within 2 s (timeouts.first_byte)");
	assert_true(r->ms >= 1990 && r->ms < 5000);
	assert_null(r->text.p);
	run_end(r);
}

/* Comments between pieces of content: the gap runs on. */
static void test_call_comments_after_content_do_not_reset_the_gap(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"deltas\":[\"one \",\"two\"],\"split\":\"event\",\"keepalive_ms\":50,"
		  "\"keepalive_for_ms\":4000,\"keepalive_after\":2}]}");
	run_call(r, PROVIDER_OPENAI, NULL);
	if (r->res.outcome != CALL_DELIVERY_UNKNOWN)
		fail_msg("%s (%s)", call_outcome_name(r->res.outcome), r->res.message);
	assert_string_equal(r->res.message,
			    "gap timeout: no more content in the reply for 0.3 s (timeouts.gap)");
	assert_string_equal(r->text.p, "one ");
	assert_true(r->ms < 3000);
	run_end(r);
}

/* Content that keeps coming, each piece well within the gap, ends at the
 * deadline; a slow one within it completes. */
static void test_call_deadline_bounds_the_whole_reply(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"a b c d e f g h i j k l m n o p q r s t\",\"pieces\":20,"
		  "\"split\":\"event\",\"rate\":10},{\"text\":\"a b c d\",\"pieces\":4,"
		  "\"split\":\"event\",\"rate\":10}]}");
	r->timeouts = (struct http_timeouts){2000, 2000, 1000, 1000};
	run_call(r, PROVIDER_OPENAI, NULL);
	if (r->res.outcome != CALL_DELIVERY_UNKNOWN)
		fail_msg("%s (%s)", call_outcome_name(r->res.outcome), r->res.message);
	assert_string_equal(r->res.message, "deadline: the reply did not end within 1 s (timeouts.total)");
	assert_true(r->ms >= 995 && r->ms < 1900);
	assert_true(r->text.len > 0 && r->text.len < strlen("a b c d e f g h i j k l m n o p q r s t"));
	again(r);
	r->timeouts = (struct http_timeouts){2000, 2000, 1000, 3000};
	run_call(r, PROVIDER_OPENAI, NULL);
	if (r->res.outcome != CALL_COMPLETE)
		fail_msg("%s (%s)", call_outcome_name(r->res.outcome), r->res.message);
	run_end(r);
}

/* A finish_reason closes an OpenAI reply: a server that then holds the
 * connection without [DONE] gets a short grace (the usage chunk came in
 * it), then the call ends complete — not delivery unknown at the gap. */
static void test_call_finish_reason_without_done_completes(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"whole answer\",\"no_done\":true,\"hold_ms\":8000,"
		  "\"usage\":{\"input\":6,\"output\":2}}]}");
	r->timeouts = (struct http_timeouts){2000, 2000, 5000, 0};
	run_call(r, PROVIDER_OPENAI, NULL);
	if (r->res.outcome != CALL_COMPLETE)
		fail_msg("%s (%s)", call_outcome_name(r->res.outcome), r->res.message);
	assert_string_equal(r->text.p, "whole answer");
	assert_true(r->res.have_finish);
	assert_int_equal(r->res.finish, FINISH_STOP);
	assert_int_equal(r->res.usage.output, 2);
	if (r->ms < 1990 || r->ms >= 4500) /* the grace (2 s), not the gap (5 s) */
		fail_msg("ended after %llu ms", (unsigned long long)r->ms);
	assert_int_equal(requests(r), 1);
	run_end(r);
}

/* ---- the caller's control ---- */

/* Canceled before the first attempt was allowed: nothing is sent. */
static void test_call_cancel_before_sending_sends_nothing(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"never\"}]}");
	r->hold_first = true;
	run_call(r, PROVIDER_OPENAI, NULL);
	assert_int_equal(r->res.outcome, CALL_CANCELED);
	assert_int_equal(requests(r), 0);
	run_end(r);
}

/* Canceled mid-stream: the transfer stops, what arrived stays delivered. */
static void test_call_cancel_mid_stream_keeps_the_partial_text(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"a b c d e f g h\",\"pieces\":8,\"split\":\"event\","
		  "\"rate\":50}]}");
	r->cancel_after = 2;
	run_call(r, PROVIDER_OPENAI, NULL);
	assert_int_equal(r->res.outcome, CALL_CANCELED);
	assert_int_equal(r->texts, 2);
	assert_true(r->text.len > 0 && r->text.len < strlen("a b c d e f g h"));
	run_end(r);
}

/* Paused after the first delta, nothing comes for 300 ms though the
 * server goes on sending; resumed, the rest arrives whole. */
static void test_call_pause_holds_the_reply_until_resumed(void **state)
{
	struct run *r = *state;
	serve(r, "{\"replies\":[{\"text\":\"first second third fourth\",\"pieces\":4,"
		  "\"split\":\"event\"}]}");
	r->pause_after = 1;
	run_call(r, PROVIDER_OPENAI, NULL);
	assert_int_equal(r->res.outcome, CALL_COMPLETE);
	assert_string_equal(r->text.p, "first second third fourth");
	run_end(r);
}

/* The offline provider: no network, the same events, paced by a timer
 * that pause stops. */
static void test_call_offline_streams_its_reply(void **state)
{
	struct run *r = *state;
	r->pause_after = 3;
	run_call(r, PROVIDER_OFFLINE, "unused");
	assert_int_equal(r->res.outcome, CALL_COMPLETE);
	assert_int_equal(r->res.attempts, 1);
	struct offline *o = offline_new("Say hello");
	assert_string_equal(r->text.p, offline_reply(o));
	offline_free(o);
	assert_non_null(strstr(r->text.p, "Say hello"));
	run_end(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_call_openai_stream_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_anthropic_stream_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_rate_limit_and_overload_are_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_server_errors_give_up_after_three_retries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_connect_failure_is_retried_then_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_refusals_are_not_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_bad_key_is_a_provider_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_error_inside_the_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_lost_replies_are_delivery_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_comments_before_content_count_for_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_comments_after_content_do_not_reset_the_gap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_deadline_bounds_the_whole_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_finish_reason_without_done_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_cancel_before_sending_sends_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_cancel_mid_stream_keeps_the_partial_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_pause_holds_the_reply_until_resumed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_call_offline_streams_its_reply, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
