/* support_http.c — the HTTP engine tests' fixture (see support_http.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/support_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

const char *const auth_headers[] = {"Authorization: Bearer sk-test",
				    "Content-Type: application/json", NULL};

const char chat[] = "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
		    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

int on_sse(void *ud, const char *name, const char *data, size_t len)
{
	struct got *g = ud;
	buf_printf(&g->events, "%s %.*s\n", name, (int)len, data);
	if (g->progress_by_events && g->x)
		http_xfer_progress(g->x);
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

void got_init(struct got *g)
{
	memset(g, 0, sizeof *g);
	buf_init(&g->body);
	buf_init(&g->events);
}

void got_release(struct got *g)
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
void run_until(uv_loop_t *loop, const int *flag)
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

struct http_xfer *start(struct http *h, struct got *g, const char *u, const char *body,
			const char *const *headers, struct http_timeouts t)
{
	struct http_request req = {
		.method = "POST", .url = u, .headers = headers, .body = body,
		.body_len = body ? strlen(body) : 0, .timeouts = t,
		.receiver_progress = g->progress_by_events,
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

void close_all(uv_loop_t *loop, struct http *h)
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
uint64_t one_transfer(struct got *g, const char *u, const char *body,
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

void setup_env(void)
{
	static const char *const proxies[] = {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy",
					      "ALL_PROXY", "no_proxy", "NO_PROXY"};
	for (size_t i = 0; i < sizeof proxies / sizeof *proxies; i++)
		unsetenv(proxies[i]);
}
