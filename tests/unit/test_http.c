/* test_http.c — engine/http.c on a real libuv loop against real servers
 * (the fixture: support_http.h): tests/fake/fake_model.py as a child
 * process, and raw sockets on 127.0.0.1 (in a thread) where a test needs
 * exact misbehaviour: nothing listening, a connection closed before the
 * response. Each outcome of a transfer is pinned with what it says about
 * the request having been sent: complete (an HTTP error included), refused,
 * a bad URL, a scheme other than http(s) (file://, ftp://), no response, broken mid-body, and no resend on a reused
 * connection. Timeouts: test_http_timeouts.c; cancel and pause:
 * test_http_control.c; descriptors, signals and the environment:
 * test_http_env.c. Every test ends with uv_loop_close() == 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/http.h"
#include "engine/sse.h"
#include "tests/unit/support_http.h"
#include "tests/unit/support_servers.h"

/* The text of an OpenAI stream's content deltas, from the SSE events. */
static char *openai_text(const char *events)
{
	struct buf t = BUF_INIT;
	buf_adds(&t, "");
	const char *p = events;
	while (*p) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, (size_t)(nl - p));
		cJSON *j = cJSON_Parse(line + strlen("message "));
		cJSON *c = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0), "delta");
		cJSON *s = cJSON_GetObjectItem(c, "content");
		if (cJSON_IsString(s))
			buf_adds(&t, s->valuestring);
		cJSON_Delete(j);
		free(line);
		p = nl + 1;
	}
	return buf_detach(&t, NULL);
}

static void test_stream_completes_with_every_byte_in_order(void **state)
{
	setup_env();
	static const char text[] = "H\xc3\xa9llo w\xc3\xb6rld \xf0\x9f\x98\x80, streamed in pieces";
	char script[512];
	snprintf(script, sizeof script,
		 "{\"replies\":[{\"text\":\"%s\",\"pieces\":9,\"split\":\"random\",\"seed\":7}]}", text);
	struct fake f;
	fake_start(&f, script, NULL);
	struct got g;
	got_init(&g);
	g.sse = sse_new(0, on_sse, &g);
	/* A body over 1 MiB: libcurl would wait for "100 Continue" first. */
	struct buf body = BUF_INIT;
	buf_add(&body, chat, strlen(chat) - 1);
	buf_adds(&body, ",\"pad\":\"");
	for (int i = 0; i < 2 * 1024 * 1024; i++)
		buf_addc(&body, 'p');
	buf_adds(&body, "\"}");
	char *u = url(f.port, "/v1/chat/completions");
	one_transfer(&g, u, body.p, auth_headers, (struct http_timeouts){0});

	assert_int_equal(g.res.outcome, HTTP_COMPLETE);
	assert_true(g.res.request_sent && g.res.response_started);
	assert_int_equal(g.res.status, 200);
	assert_string_equal(g.res.msg, "");
	assert_int_equal(g.heads, 1);
	assert_int_equal(g.head_status, 200);
	assert_string_equal(g.ctype, "text/event-stream; charset=utf-8");
	assert_true(g.body_calls > 1);
	char *t = openai_text(g.events.p);
	assert_string_equal(t, text);
	free(t);
	assert_non_null(strstr(g.events.p, "message [DONE]\n"));
	assert_false(sse_pending(g.sse));

	cJSON *reqs = fake_requests(&f);
	assert_int_equal(cJSON_GetArraySize(reqs), 1);
	cJSON *r0 = cJSON_GetArrayItem(reqs, 0);
	cJSON *hd = cJSON_GetObjectItem(r0, "headers");
	assert_string_equal(cJSON_GetObjectItem(hd, "authorization")->valuestring, "Bearer sk-test");
	assert_null(cJSON_GetObjectItem(hd, "expect"));
	cJSON *pad = cJSON_GetObjectItem(cJSON_GetObjectItem(r0, "body"), "pad");
	assert_int_equal(strlen(pad->valuestring), 2 * 1024 * 1024);
	cJSON_Delete(reqs);

	free(u);
	buf_release(&body);
	got_release(&g);
	fake_stop(&f);
}

static void test_http_error_with_retry_after(void **state)
{
	setup_env();
	struct fake f;
	fake_start(&f, "{\"replies\":[{\"status\":429,\"headers\":{\"Retry-After\":\"3\"}}]}", NULL);
	struct got g;
	got_init(&g);
	char *u = url(f.port, "/v1/messages");
	static const char *const ant[] = {"x-api-key: ant-test", "anthropic-version: 2023-06-01", NULL};
	one_transfer(&g, u,
	      "{\"model\":\"m\",\"max_tokens\":5,\"stream\":true,\"messages\":[{\"role\":\"user\","
	      "\"content\":\"hi\"}]}",
	      ant, (struct http_timeouts){0});
	/* An HTTP error is a complete exchange: the caller reads the status. */
	assert_int_equal(g.res.outcome, HTTP_COMPLETE);
	assert_int_equal(g.res.status, 429);
	assert_string_equal(g.retry_after, "3");
	assert_non_null(strstr(g.body.p, "\"rate_limit_error\""));
	free(u);
	got_release(&g);
	fake_stop(&f);
}

static void test_refused_connect_fails_before_sending(void **state)
{
	setup_env();
	int port;
	close(listen_any(&port)); /* nothing listens there now */
	struct got g;
	got_init(&g);
	char *u = url(port, "/v1/chat/completions");
	one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){0});
	assert_int_equal(g.res.outcome, HTTP_E_CONNECT);
	assert_false(g.res.request_sent);
	assert_false(g.res.response_started);
	assert_int_equal(g.res.status, 0);
	assert_true(g.res.curl_code != 0);
	assert_true(strlen(g.res.msg) > 0);
	assert_null(strstr(g.res.msg, "sk-test")); /* never a header */
	assert_int_equal(g.heads, 0);
	free(u);
	got_release(&g);
}

static void test_bad_url_fails_at_setup_before_sending(void **state)
{
	setup_env();
	struct got g;
	got_init(&g);
	one_transfer(&g, "gopherx://127.0.0.1/", NULL, NULL, (struct http_timeouts){0});
	assert_int_equal(g.res.outcome, HTTP_E_SETUP);
	assert_false(g.res.request_sent);
	got_release(&g);
}

/* Only http:// and https:// go out: a file:// URL is never read as a
 * reply, an ftp:// one never connects. */
static void test_other_schemes_are_refused_at_setup(void **state)
{
	setup_env();
	char dir[] = "/tmp/cairn-http-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *file = xasprintf("%s/reply", dir);
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	fputs("data: {\"choices\":[{\"delta\":{\"content\":\"from a file\"}}]}\n\n", fp);
	fclose(fp);
	char *u = xasprintf("file://%s", file);
	struct got g;
	got_init(&g);
	one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){0});
	if (g.res.outcome != HTTP_E_SETUP)
		fail_msg("file://: outcome %s (%s)", http_outcome_name(g.res.outcome), g.res.msg);
	assert_false(g.res.request_sent);
	assert_int_equal(g.body.len, 0);
	got_release(&g);
	free(u);

	int port;
	int lfd = listen_any(&port);
	u = xasprintf("ftp://127.0.0.1:%d/", port);
	got_init(&g);
	one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){.connect_ms = 500});
	if (g.res.outcome != HTTP_E_SETUP)
		fail_msg("ftp://: outcome %s (%s)", http_outcome_name(g.res.outcome), g.res.msg);
	assert_false(g.res.request_sent);
	/* Nothing ever connected. */
	assert_int_equal(fcntl(lfd, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(accept(lfd, NULL, NULL), -1);
	close(lfd);
	got_release(&g);
	free(u);
	unlink(file);
	rmdir(dir);
	free(file);
}

static void test_close_after_request_is_no_response(void **state)
{
	setup_env();
	struct raw r;
	raw_start(&r, RAW_CLOSE);
	struct got g;
	got_init(&g);
	char *u = url(r.port, "/v1/chat/completions");
	one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){0});
	assert_int_equal(g.res.outcome, HTTP_E_NO_RESPONSE);
	assert_true(g.res.request_sent);
	assert_false(g.res.response_started);
	assert_true(strlen(g.res.msg) > 0);
	free(u);
	got_release(&g);
	raw_stop(&r);
}

/* The server closes (FIN, or RST with reset) mid-body, after some writes. */
static void broken_once(bool reset)
{
	setup_env();
	char script[256];
	snprintf(script, sizeof script,
		 "{\"replies\":[{\"text\":\"a reply cut short\",\"pieces\":6,"
		 "\"split\":\"event\",\"disconnect_after\":3,\"reset\":%s}]}",
		 reset ? "true" : "false");
	struct fake f;
	fake_start(&f, script, NULL);
	struct got g;
	got_init(&g);
	char *u = url(f.port, "/v1/chat/completions");
	one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){0});
	if (g.res.outcome != HTTP_E_BROKEN)
		fail_msg("outcome %s (%s)", http_outcome_name(g.res.outcome), g.res.msg);
	assert_true(g.res.request_sent && g.res.response_started);
	assert_int_equal(g.res.status, 200);
	assert_true(g.body.len > 0);
	assert_null(strstr(g.body.p, "[DONE]"));
	free(u);
	got_release(&g);
	fake_stop(&f);
}

static void test_connection_broken_mid_body_is_broken(void **state)
{
	broken_once(false);
	broken_once(true);
}

static void test_no_resend_on_a_reused_connection(void **state)
{
	setup_env();
	/* The second request goes out on the kept-alive connection, which the
	 * server closes without answering: libcurl would send it again on a
	 * new connection and get the third reply. */
	struct fake f;
	fake_start(&f,
		   "{\"replies\":[{\"text\":\"first\"},{\"close_without_response\":true},"
		   "{\"text\":\"third\"}]}",
		   NULL);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct http *h = http_new(&loop, NULL);
	char *u = url(f.port, "/v1/chat/completions");
	struct got g1, g2;
	got_init(&g1);
	got_init(&g2);
	start(h, &g1, u, chat, auth_headers, (struct http_timeouts){0});
	run_until(&loop, &g1.dones);
	assert_int_equal(g1.res.outcome, HTTP_COMPLETE);
	start(h, &g2, u, chat, auth_headers, (struct http_timeouts){0});
	run_until(&loop, &g2.dones);
	assert_int_equal(g2.res.outcome, HTTP_E_NO_RESPONSE);
	assert_true(g2.res.request_sent);
	assert_false(g2.res.response_started);
	cJSON *reqs = fake_requests(&f);
	assert_int_equal(cJSON_GetArraySize(reqs), 2);
	cJSON_Delete(reqs);
	free(u);
	got_release(&g1);
	got_release(&g2);
	close_all(&loop, h);
	fake_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_completes_with_every_byte_in_order),
		cmocka_unit_test(test_http_error_with_retry_after),
		cmocka_unit_test(test_refused_connect_fails_before_sending),
		cmocka_unit_test(test_bad_url_fails_at_setup_before_sending),
		cmocka_unit_test(test_other_schemes_are_refused_at_setup),
		cmocka_unit_test(test_close_after_request_is_no_response),
		cmocka_unit_test(test_connection_broken_mid_body_is_broken),
		cmocka_unit_test(test_no_resend_on_a_reused_connection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
