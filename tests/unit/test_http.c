/* test_http.c — engine/http.c on a real libuv loop against real servers:
 * tests/fake/fake_model.py as a child process, and raw sockets on
 * 127.0.0.1 (in a thread) where a test needs exact misbehaviour: nothing
 * listening, a request read and never answered, a connection closed before
 * the response, a body sent faster than it is read. Each outcome of a
 * transfer is pinned here, with what it says about the request having been
 * sent; every test ends with uv_loop_close() == 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "engine/http.h"
#include "engine/sse.h"
#include "support_fixture.h"
#include "support_servers.h"

extern char **environ;

/* ---- one transfer, observed ---- */

struct got {
	struct http_xfer *x;
	int dones, heads;
	long head_status;
	char retry_after[32];
	char ctype[64];
	struct http_result res;
	struct buf body;
	struct sse *sse;
	struct buf events;     /* SSE event names and data, one per line */
	size_t cancel_after;   /* cancel once this many body bytes arrived (0: never) */
	bool pause;            /* pause at every body call until resumed */
	size_t body_calls;
	size_t body_after_cancel;
	bool canceled;
};

static int on_sse(void *ud, const char *name, const char *data, size_t len)
{
	struct got *g = ud;
	buf_printf(&g->events, "%s %.*s\n", name, (int)len, data);
	return 0;
}

static void on_head(void *ud, struct http_xfer *x, long status)
{
	struct got *g = ud;
	g->heads++;
	g->head_status = status;
	const char *v = http_xfer_header(x, "retry-after");
	snprintf(g->retry_after, sizeof g->retry_after, "%s", v ? v : "");
	v = http_xfer_header(x, "Content-Type");
	snprintf(g->ctype, sizeof g->ctype, "%s", v ? v : "");
}

static int on_body(void *ud, struct http_xfer *x, const char *p, size_t n)
{
	struct got *g = ud;
	g->body_calls++;
	if (g->canceled)
		g->body_after_cancel += n;
	if (g->pause)
		return HTTP_BODY_PAUSE;
	buf_add(&g->body, p, n);
	if (g->sse)
		assert_int_equal(sse_feed(g->sse, p, n), 0);
	if (g->cancel_after && g->body.len >= g->cancel_after && !g->canceled) {
		g->canceled = true;
		http_xfer_cancel(x);
		http_xfer_cancel(x); /* twice is fine */
	}
	return HTTP_BODY_OK;
}

static void on_done(void *ud, struct http_xfer *x, const struct http_result *res)
{
	struct got *g = ud;
	g->dones++;
	g->res = *res;
	g->x = NULL;
}

static void got_init(struct got *g)
{
	memset(g, 0, sizeof *g);
	buf_init(&g->body);
	buf_init(&g->events);
}

static void got_release(struct got *g)
{
	buf_release(&g->body);
	buf_release(&g->events);
	sse_free(g->sse);
}

static void deadline_cb(uv_timer_t *t)
{
	fail_msg("the loop did not get there in time");
}

/* Run the loop until *flag is non-zero (at most 20 s). */
static void run_until(uv_loop_t *loop, const int *flag)
{
	uv_timer_t dl;
	uv_timer_init(loop, &dl);
	uv_timer_start(&dl, deadline_cb, 20000, 0);
	uv_unref((uv_handle_t *)&dl);
	while (!*flag)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&dl, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

static const char *const auth_headers[] = {"Authorization: Bearer sk-test",
					   "Content-Type: application/json", NULL};

static struct http_xfer *start(struct http *h, struct got *g, const char *u, const char *body,
			       const char *const *headers, struct http_timeouts t)
{
	struct http_request req = {
		.method = "POST", .url = u, .headers = headers, .body = body,
		.body_len = body ? strlen(body) : 0, .timeouts = t,
		.on_head = on_head, .on_body = on_body, .on_done = on_done, .ud = g,
	};
	struct cerr err;
	g->x = http_start(h, &req, &err);
	assert_non_null(g->x);
	return g->x;
}

static void closed_cb(void *ud)
{
	*(int *)ud = 1;
}

static void close_all(uv_loop_t *loop, struct http *h)
{
	int closed = 0;
	http_close(h, closed_cb, &closed);
	run_until(loop, &closed);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(loop), 0);
}

/* One POST to u on a fresh loop and engine, run until on_done, the engine
 * closed and the loop too; g (got_init'ed) holds what was seen. The
 * milliseconds from start to on_done. */
static uint64_t one_transfer(struct got *g, const char *u, const char *body,
			     const char *const *headers, struct http_timeouts t)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct cerr err;
	struct http *h = http_new(&loop, &err);
	assert_non_null(h);
	uint64_t t0 = clock_mono_ns();
	start(h, g, u, body, headers, t);
	assert_int_equal(g->dones, 0); /* never from inside http_start */
	run_until(&loop, &g->dones);
	uint64_t ms = (clock_mono_ns() - t0) / 1000000;
	close_all(&loop, h);
	return ms;
}

static void setup_env(void)
{
	static const char *const proxies[] = {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy",
					      "ALL_PROXY", "no_proxy", "NO_PROXY"};
	for (size_t i = 0; i < sizeof proxies / sizeof *proxies; i++)
		unsetenv(proxies[i]);
}

static const char chat[] = "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
			   "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

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

/* ---- tests ---- */

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
	buf_add(&body, chat, sizeof chat - 2);
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

static void test_cancel_mid_stream_or_before_start_reports_canceled(void **state)
{
	setup_env();
	struct fake f;
	fake_start(&f,
		   "{\"replies\":[{\"text\":\"slow words arriving one by one\",\"pieces\":20,"
		   "\"split\":\"event\",\"rate\":20}]}",
		   NULL);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct http *h = http_new(&loop, NULL);
	/* Mid-stream, from inside on_body. */
	struct got g;
	got_init(&g);
	g.cancel_after = 1;
	char *u = url(f.port, "/v1/chat/completions");
	start(h, &g, u, chat, auth_headers, (struct http_timeouts){0});
	run_until(&loop, &g.dones);
	assert_int_equal(g.dones, 1);
	assert_int_equal(g.res.outcome, HTTP_E_CANCELED);
	assert_true(g.res.request_sent && g.res.response_started);
	assert_int_equal(g.body_after_cancel, 0);
	/* Before anything happened, from the loop: on_done comes later. */
	struct got g2;
	got_init(&g2);
	struct http_xfer *x = start(h, &g2, u, chat, auth_headers, (struct http_timeouts){0});
	http_xfer_cancel(x);
	assert_int_equal(g2.dones, 0);
	run_until(&loop, &g2.dones);
	assert_int_equal(g2.res.outcome, HTTP_E_CANCELED);
	assert_false(g2.res.request_sent);
	/* In flight when the engine closes. */
	struct got g3;
	got_init(&g3);
	start(h, &g3, u, chat, auth_headers, (struct http_timeouts){0});
	uv_run(&loop, UV_RUN_NOWAIT);
	free(u);
	close_all(&loop, h);
	assert_int_equal(g3.dones, 1);
	assert_int_equal(g3.res.outcome, HTTP_E_CANCELED);
	got_release(&g);
	got_release(&g2);
	got_release(&g3);
	fake_stop(&f);
}

/* Resident set size in bytes. */
static size_t rss(void)
{
	FILE *fp = fopen("/proc/self/statm", "r");
	unsigned long size = 0, res = 0;
	assert_int_equal(fscanf(fp, "%lu %lu", &size, &res), 2);
	fclose(fp);
	return res * (size_t)sysconf(_SC_PAGESIZE);
}

struct pause_probe {
	struct got *g;
	struct raw *r;
	int step, finished;
	size_t sent_a, rss_a;
};

static void probe_cb(uv_timer_t *t)
{
	struct pause_probe *p = t->data;
	if (p->g->dones)
		fail_msg("the transfer ended while paused: %s (%s)", http_outcome_name(p->g->res.outcome),
			 p->g->res.msg);
	if (p->step == 0) {
		p->sent_a = atomic_load(&p->r->sent);
		p->rss_a = rss();
		p->step = 1;
		uv_timer_start(t, probe_cb, 300, 0);
		return;
	}
	/* The server kept trying to send for 300 ms more: nothing moved. */
	size_t sent_b = atomic_load(&p->r->sent);
	assert_true(p->g->body_calls >= 1);
	assert_int_equal(p->g->body.len, 0);
	assert_true(sent_b - p->sent_a < 256 * 1024);
	assert_true(sent_b < 8u * 1024 * 1024);
	assert_true(rss() < p->rss_a + 2u * 1024 * 1024);
	p->g->pause = false;
	http_xfer_resume(p->g->x);
	p->finished = 1;
}

static void test_pause_holds_memory_bounded(void **state)
{
	setup_env();
	struct raw r;
	raw_start(&r, RAW_FLOOD);
	r.flood_len = 64u * 1024 * 1024;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct http *h = http_new(&loop, NULL);
	struct got g;
	got_init(&g);
	g.pause = true;
	char *u = url(r.port, "/flood");
	start(h, &g, u, NULL, NULL, (struct http_timeouts){.gap_ms = 200});
	struct pause_probe p = {.g = &g, .r = &r};
	uv_timer_t probe;
	uv_timer_init(&loop, &probe);
	probe.data = &p;
	/* Paused longer than the gap timeout: a paused transfer has none. */
	uv_timer_start(&probe, probe_cb, 300, 0);
	run_until(&loop, &p.finished);
	run_until(&loop, &g.dones);
	assert_int_equal(g.res.outcome, HTTP_COMPLETE);
	assert_int_equal(g.body.len, r.flood_len);
	uv_close((uv_handle_t *)&probe, NULL);
	free(u);
	got_release(&g);
	close_all(&loop, h);
	raw_stop(&r);
}

struct cloexec_probe {
	int checked;
	int sockets;
};

/* Sockets the child of a spawn would inherit, counted from /proc. */
static int inherited_sockets(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char link[PATH_MAX], target[PATH_MAX];
		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		ssize_t k = readlink(link, target, sizeof target - 1);
		if (k > 0 && (target[k] = '\0', strncmp(target, "socket:", 7) == 0))
			n++;
	}
	closedir(d);
	return n;
}

static void cloexec_head(void *ud, struct http_xfer *x, long status)
{
	struct cloexec_probe *c = ud;
	/* Our own sockets: the transfer's, libcurl's wakeup pair. */
	int own = 0;
	for (int fd = 3; fd < 1024; fd++) {
		int fl = fcntl(fd, F_GETFD);
		char link[64], target[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t k = readlink(link, target, sizeof target - 1);
		if (fl < 0 || k <= 0)
			continue;
		target[k] = '\0';
		if (strncmp(target, "socket:", 7) == 0) {
			own++;
			if (!(fl & FD_CLOEXEC))
				fail_msg("socket fd %d is inherited by children", fd);
		}
	}
	assert_true(own >= 1);
	/* A child started now holds none of them. */
	pid_t pid;
	const char *argv[] = {"sleep", "5", NULL};
	assert_int_equal(posix_spawnp(&pid, "sleep", NULL, NULL, (char *const *)argv, environ), 0);
	for (int i = 0; i < 100; i++) { /* until it has exec'd */
		char exe[PATH_MAX] = "", link[64];
		snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
		ssize_t k = readlink(link, exe, sizeof exe - 1);
		if (k > 0 && (exe[k] = '\0', strstr(exe, "sleep")))
			break;
		usleep(10000);
	}
	c->sockets = inherited_sockets(pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	c->checked = 1;
}

static int cloexec_body(void *ud, struct http_xfer *x, const char *p, size_t n)
{
	return HTTP_BODY_OK;
}

static void cloexec_done(void *ud, struct http_xfer *x, const struct http_result *res)
{
	assert_int_equal(res->outcome, HTTP_COMPLETE);
	((struct cloexec_probe *)ud)->checked |= 2;
}

static void test_transfer_sockets_are_close_on_exec(void **state)
{
	setup_env();
	struct fake f;
	fake_start(&f, "{\"replies\":[{\"text\":\"x\",\"stall_after_head_ms\":300}]}", NULL);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct http *h = http_new(&loop, NULL);
	struct cloexec_probe c = {0};
	char *u = url(f.port, "/v1/chat/completions");
	struct http_request req = {.method = "POST", .url = u, .headers = auth_headers, .body = chat,
				   .body_len = strlen(chat), .on_head = cloexec_head,
				   .on_body = cloexec_body, .on_done = cloexec_done, .ud = &c};
	assert_non_null(http_start(h, &req, NULL));
	while (c.checked != 3)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(c.sockets, 0);
	free(u);
	close_all(&loop, h);
	fake_stop(&f);
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

static void test_proxy_from_the_environment(void **state)
{
	setup_env();
	struct raw r;
	raw_start(&r, RAW_PROXY);
	char proxy[64];
	snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", r.port);
	setenv("http_proxy", proxy, 1);
	struct got g;
	got_init(&g);
	one_transfer(&g, "http://model.invalid/v1/chat/completions", chat, auth_headers,
	      (struct http_timeouts){0});
	unsetenv("http_proxy");
	assert_int_equal(g.res.outcome, HTTP_COMPLETE);
	assert_string_equal(g.body.p, "proxied");
	assert_string_equal(r.first_line, "POST http://model.invalid/v1/chat/completions HTTP/1.1");
	got_release(&g);
	raw_stop(&r);
}

/* A self-signed certificate for 127.0.0.1 in dir; false without openssl. */
static bool make_cert(const char *dir)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
		 "-addext subjectAltName=IP:127.0.0.1 -keyout %s/key.pem -out %s/cert.pem "
		 ">/dev/null 2>&1",
		 dir, dir);
	return system(cmd) == 0;
}

static void tls_once(const char *u, enum http_outcome want, bool sent)
{
	struct got g;
	got_init(&g);
	one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){0});
	if (g.res.outcome != want)
		fail_msg("outcome %s (%s), want %s", http_outcome_name(g.res.outcome), g.res.msg,
			 http_outcome_name(want));
	assert_int_equal(g.res.request_sent, sent);
	got_release(&g);
}

static void test_ca_bundle_from_the_environment(void **state)
{
	setup_env();
	char dir[64], root[64];
	assert_int_equal(tmp_root("cert", dir, sizeof dir, root, sizeof root), 0);
	if (!make_cert(dir)) {
		rm_rf(dir);
		skip();
	}
	char cert[128], key[128];
	snprintf(cert, sizeof cert, "%s/cert.pem", dir);
	snprintf(key, sizeof key, "%s/key.pem", dir);
	struct fake f;
	const char *const tls[] = {"--tls", cert, key, NULL};
	fake_start(&f, "{\"replies\":[{\"text\":\"a\"},{\"text\":\"b\"}]}", tls);
	char *u = xasprintf("https://127.0.0.1:%d/v1/chat/completions", f.port);
	char *old_bundle = getenv("CURL_CA_BUNDLE") ? xstrdup(getenv("CURL_CA_BUNDLE")) : NULL;
	char *old_file = getenv("SSL_CERT_FILE") ? xstrdup(getenv("SSL_CERT_FILE")) : NULL;
	char *old_dir = getenv("SSL_CERT_DIR") ? xstrdup(getenv("SSL_CERT_DIR")) : NULL;
	unsetenv("SSL_CERT_DIR");
	/* SSL_CERT_FILE names the bundle. */
	unsetenv("CURL_CA_BUNDLE");
	setenv("SSL_CERT_FILE", cert, 1);
	tls_once(u, HTTP_COMPLETE, true);
	/* CURL_CA_BUNDLE comes first; without the certificate, the handshake
	 * fails before any byte of the request. */
	setenv("CURL_CA_BUNDLE", "/dev/null", 1);
	tls_once(u, HTTP_E_CONNECT, false);
	setenv("CURL_CA_BUNDLE", cert, 1);
	setenv("SSL_CERT_FILE", "/dev/null", 1);
	tls_once(u, HTTP_COMPLETE, true);
	if (old_bundle)
		setenv("CURL_CA_BUNDLE", old_bundle, 1);
	else
		unsetenv("CURL_CA_BUNDLE");
	if (old_file)
		setenv("SSL_CERT_FILE", old_file, 1);
	else
		unsetenv("SSL_CERT_FILE");
	if (old_dir)
		setenv("SSL_CERT_DIR", old_dir, 1);
	free(old_bundle);
	free(old_file);
	free(old_dir);
	free(u);
	fake_stop(&f);
	rm_rf(dir);
}

static void test_http_new_ignores_sigpipe(void **state)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct http *h = http_new(&loop, NULL);
	struct sigaction sa;
	sigaction(SIGPIPE, NULL, &sa);
	assert_true(sa.sa_handler == SIG_IGN);
	close_all(&loop, h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_completes_with_every_byte_in_order),
		cmocka_unit_test(test_http_error_with_retry_after),
		cmocka_unit_test(test_refused_connect_fails_before_sending),
		cmocka_unit_test(test_bad_url_fails_at_setup_before_sending),
		cmocka_unit_test(test_silent_server_times_out_connecting),
		cmocka_unit_test(test_no_first_byte_times_out_after_sending),
		cmocka_unit_test(test_close_after_request_is_no_response),
		cmocka_unit_test(test_stall_mid_stream_times_out_on_the_gap),
		cmocka_unit_test(test_steady_stream_outlives_the_gap),
		cmocka_unit_test(test_connection_broken_mid_body_is_broken),
		cmocka_unit_test(test_cancel_mid_stream_or_before_start_reports_canceled),
		cmocka_unit_test(test_pause_holds_memory_bounded),
		cmocka_unit_test(test_transfer_sockets_are_close_on_exec),
		cmocka_unit_test(test_no_resend_on_a_reused_connection),
		cmocka_unit_test(test_proxy_from_the_environment),
		cmocka_unit_test(test_ca_bundle_from_the_environment),
		cmocka_unit_test(test_http_new_ignores_sigpipe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
