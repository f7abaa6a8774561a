/* test_http_timeouts.c — engine/http.c's timeouts on a real libuv loop
 * (the fixture: support_http.h): connecting (a server that takes the TCP
 * connection and never speaks TLS), the first byte after the request was
 * sent, the gap between pieces of a stream that stalls, and a steady stream
 * that outlives the gap because the gap bounds the pauses, not the whole
 * response; the total bounds it, without the time the receiver held it
 * paused; with receiver_progress, bytes that the receiver does not call
 * progress (comments, a trickle) hold nothing open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "base/xalloc.h"
#include "engine/http.h"
#include "tests/unit/support_http.h"
#include "tests/unit/support_servers.h"

static void test_silent_server_times_out_connecting(void **state)
{
	setup_env();
	/* TLS is part of connecting: a server that takes the TCP connection
	 * and never speaks TLS keeps the transfer connecting. */
	struct raw r;
	raw_start(&r, RAW_SILENT);
	struct got g;
	got_init(&g);
	char *u = xasprintf("https://127.0.0.1:%d/v1/messages", r.port);
	uint64_t ms = one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){.connect_ms = 200});
	assert_int_equal(g.res.outcome, HTTP_E_TIMEOUT_CONNECT);
	assert_false(g.res.request_sent);
	assert_false(g.res.response_started);
	assert_true(ms >= 195 && ms < 5000); /* libuv counts whole milliseconds */
	assert_string_equal(g.res.msg, "no connection within 200 ms");
	free(u);
	got_release(&g);
	raw_stop(&r);
}

static void test_no_first_byte_times_out_after_sending(void **state)
{
	setup_env();
	struct raw r;
	raw_start(&r, RAW_SILENT);
	struct got g;
	got_init(&g);
	char *u = url(r.port, "/v1/chat/completions");
	uint64_t ms = one_transfer(&g, u, chat, auth_headers,
	      (struct http_timeouts){.connect_ms = 5000, .first_byte_ms = 250, .gap_ms = 100});
	assert_int_equal(g.res.outcome, HTTP_E_TIMEOUT_FIRST_BYTE);
	assert_true(g.res.request_sent);
	assert_false(g.res.response_started);
	if (ms < 245 || ms >= 5000) /* libuv counts whole milliseconds */
		fail_msg("timed out after %llu ms", (unsigned long long)ms);
	assert_non_null(strstr(r.first_line, "POST /v1/chat/completions HTTP/1.1"));
	free(u);
	got_release(&g);
	raw_stop(&r);
}

static void test_stall_mid_stream_times_out_on_the_gap(void **state)
{
	setup_env();
	struct fake f;
	fake_start(&f,
		   "{\"replies\":[{\"text\":\"one two three four five six\",\"pieces\":6,"
		   "\"split\":\"event\",\"stall_after\":3,\"stall_ms\":3000}]}",
		   NULL);
	struct got g;
	got_init(&g);
	char *u = url(f.port, "/v1/chat/completions");
	uint64_t ms = one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){.gap_ms = 300});
	assert_int_equal(g.res.outcome, HTTP_E_TIMEOUT_GAP);
	assert_true(g.res.request_sent && g.res.response_started);
	assert_int_equal(g.res.status, 200);
	assert_true(g.body.len > 0);
	assert_null(strstr(g.body.p, "[DONE]"));
	assert_true(ms < 2500);
	free(u);
	got_release(&g);
	fake_stop(&f);
}

static void test_steady_stream_outlives_the_gap(void **state)
{
	/* 14 writes 100 ms apart: 1.3 s in all, each gap well under 300 ms.
	 * The gap is between pieces, not a bound on the whole response. */
	setup_env();
	struct fake f;
	fake_start(&f,
		   "{\"replies\":[{\"text\":\"a steady stream of words\",\"pieces\":10,"
		   "\"split\":\"event\",\"rate\":10}]}",
		   NULL);
	struct got g;
	got_init(&g);
	char *u = url(f.port, "/v1/chat/completions");
	uint64_t ms = one_transfer(&g, u, chat, auth_headers,
				   (struct http_timeouts){.first_byte_ms = 300, .gap_ms = 300});
	if (g.res.outcome != HTTP_COMPLETE)
		fail_msg("outcome %s (%s)", http_outcome_name(g.res.outcome), g.res.msg);
	assert_true(ms >= 1000);
	assert_non_null(strstr(g.body.p, "[DONE]"));
	free(u);
	got_release(&g);
	fake_stop(&f);
}

/* The deadline: a steady stream, each gap short, ends when its total
 * runs out. */
static void test_steady_stream_ends_at_the_total(void **state)
{
	setup_env();
	struct fake f;
	fake_start(&f,
		   "{\"replies\":[{\"text\":\"a steady stream of words\",\"pieces\":10,"
		   "\"split\":\"event\",\"rate\":10}]}",
		   NULL);
	struct got g;
	got_init(&g);
	char *u = url(f.port, "/v1/chat/completions");
	uint64_t ms = one_transfer(&g, u, chat, auth_headers,
				   (struct http_timeouts){.gap_ms = 300, .total_ms = 500});
	if (g.res.outcome != HTTP_E_TIMEOUT_TOTAL)
		fail_msg("outcome %s (%s)", http_outcome_name(g.res.outcome), g.res.msg);
	assert_string_equal(g.res.msg, "not done within the deadline of 500 ms");
	assert_true(g.res.request_sent && g.res.response_started);
	if (ms < 495 || ms >= 1200)
		fail_msg("ended after %llu ms", (unsigned long long)ms);
	free(u);
	got_release(&g);
	fake_stop(&f);
}

static void resume_cb(uv_timer_t *t)
{
	struct got *g = t->data;
	g->pause = false;
	http_xfer_resume(g->x);
}

/* Paused by the receiver for longer than the total: the time paused does
 * not count, the reply completes. */
static void test_paused_time_does_not_count_toward_the_total(void **state)
{
	setup_env();
	struct fake f;
	fake_start(&f, "{\"replies\":[{\"text\":\"short\",\"pieces\":2,\"split\":\"event\"}]}", NULL);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct http *h = http_new(&loop, NULL);
	struct got g;
	got_init(&g);
	g.pause = true;
	char *u = url(f.port, "/v1/chat/completions");
	start(h, &g, u, chat, auth_headers, (struct http_timeouts){.total_ms = 600});
	uv_timer_t resume;
	uv_timer_init(&loop, &resume);
	resume.data = &g;
	uv_timer_start(&resume, resume_cb, 1200, 0);
	run_until(&loop, &g.dones);
	if (g.res.outcome != HTTP_COMPLETE)
		fail_msg("outcome %s (%s)", http_outcome_name(g.res.outcome), g.res.msg);
	assert_true(g.body_calls >= 2); /* it was paused, then resumed */
	uv_close((uv_handle_t *)&resume, NULL);
	free(u);
	got_release(&g);
	close_all(&loop, h);
	fake_stop(&f);
}

/* With receiver_progress, keep-alive comments and a byte-by-byte trickle
 * are bytes, not progress: the first-byte timeout ends them; events the
 * receiver calls progress keep a stream going past it. */
static void test_receiver_progress_ignores_bytes(void **state)
{
	setup_env();
	static const char *const rows[] = {
		"{\"replies\":[{\"text\":\"x\",\"keepalive_ms\":50,\"keepalive_for_ms\":5000}]}",
		"{\"replies\":[{\"text\":\"x\",\"split\":1,\"rate\":50}]}",
	};
	for (size_t i = 0; i < 2; i++) {
		struct fake f;
		fake_start(&f, rows[i], NULL);
		struct got g;
		got_init(&g);
		g.sse = sse_new(0, on_sse, &g);
		g.progress_by_events = true;
		char *u = url(f.port, "/v1/chat/completions");
		uint64_t ms = one_transfer(&g, u, chat, auth_headers,
					   (struct http_timeouts){.first_byte_ms = 400, .gap_ms = 5000});
		if (g.res.outcome != HTTP_E_TIMEOUT_FIRST_BYTE)
			fail_msg("row %zu: outcome %s (%s)", i, http_outcome_name(g.res.outcome), g.res.msg);
		assert_string_equal(g.res.msg, "nothing within 400 ms");
		assert_true(g.res.response_started && g.body.len > 0);
		assert_true(ms >= 395 && ms < 3000);
		free(u);
		got_release(&g);
		fake_stop(&f);
	}
	/* Events every 100 ms: each one progress, past the first byte's 400 ms. */
	struct fake f;
	fake_start(&f,
		   "{\"replies\":[{\"text\":\"a steady stream of words\",\"pieces\":10,"
		   "\"split\":\"event\",\"rate\":10}]}",
		   NULL);
	struct got g;
	got_init(&g);
	g.sse = sse_new(0, on_sse, &g);
	g.progress_by_events = true;
	char *u = url(f.port, "/v1/chat/completions");
	uint64_t ms = one_transfer(&g, u, chat, auth_headers,
				   (struct http_timeouts){.first_byte_ms = 400, .gap_ms = 400});
	if (g.res.outcome != HTTP_COMPLETE)
		fail_msg("outcome %s (%s)", http_outcome_name(g.res.outcome), g.res.msg);
	assert_true(ms >= 1000);
	free(u);
	got_release(&g);
	fake_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_silent_server_times_out_connecting),
		cmocka_unit_test(test_no_first_byte_times_out_after_sending),
		cmocka_unit_test(test_stall_mid_stream_times_out_on_the_gap),
		cmocka_unit_test(test_steady_stream_outlives_the_gap),
		cmocka_unit_test(test_steady_stream_ends_at_the_total),
		cmocka_unit_test(test_paused_time_does_not_count_toward_the_total),
		cmocka_unit_test(test_receiver_progress_ignores_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
