/* test_http_timeouts.c — engine/http.c's timeouts on a real libuv loop
 * (the fixture: support_http.h): connecting (a server that takes the TCP
 * connection and never speaks TLS), the first byte after the request was
 * sent, the gap between pieces of a stream that stalls, and a steady stream
 * that outlives the gap because the gap bounds the pauses, not the whole
 * response. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_silent_server_times_out_connecting),
		cmocka_unit_test(test_no_first_byte_times_out_after_sending),
		cmocka_unit_test(test_stall_mid_stream_times_out_on_the_gap),
		cmocka_unit_test(test_steady_stream_outlives_the_gap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
