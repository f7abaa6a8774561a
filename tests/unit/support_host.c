/* support_host.c — the host scenarios' fixture (support_host.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "engine/http.h"
#include "persist/load.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_host.h"


void hx_read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	(void)s;
	struct hx *x = ctx;
	if (x->tap)
		x->tap(it, x->tap_ctx);
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
		buf_printf(&x->seen, "notice %s\n", sink_notice_name(it->notice));
		if (it->notice == SINK_NOTICE_UNSAVED)
			x->unsaved++;
		if (it->notice == SINK_NOTICE_SAVED)
			x->saved++;
		if (it->notice == SINK_NOTICE_INTERACTION) {
			cJSON_AddItemToArray(x->requests, cJSON_Duplicate(it->data, 1));
			struct cerr err;
			const cJSON *rid = cJSON_GetObjectItem(it->data, "request_id");
			if (x->decision &&
			    host_respond(x->h, it->op.session, rid->valuestring, x->decision, x->note,
					 NULL, NULL, &err) < 0)
				fail_msg("respond: %s", err.msg);
		}
		break;
	case SINK_MARKER:
		buf_printf(&x->seen, "marker %s\n", sink_marker_name(it->marker));
		if (it->marker == SINK_MARKER_TURN_DONE) {
			cJSON_AddItemToArray(x->dones, cJSON_Duplicate(it->data, 1));
			if (x->hold) {
				x->held = *it;
				x->held.data = NULL;
				x->have_held = true;
				break;
			}
			struct cerr err;
			if (host_applied(x->h, it, &err) < 0)
				fail_msg("applied: %s", err.msg);
		} else if (it->marker == SINK_MARKER_SETTLED) {
			x->settled++;
			if (cJSON_IsTrue(cJSON_GetObjectItem(it->data, "ok")))
				x->settled_ok++;
		}
		break;
	}
}

void hx_done_cb(void *ctx, const struct host_result *r, const struct cerr *err)
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



void hx_start(struct hx *x)
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
	sink_read_start(x->sink, hx_read_cb, x);
}

void hx_noop(void *ud)
{
	(void)ud;
}

void hx_fifo_closed(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t n)
{
	(void)f;
	(void)n;
	assert_int_equal(st, FIFO_CLOSED);
	(*(int *)ctx)++;
}

void hx_host_closed(struct host *h, void *ctx, enum host_close_status st)
{
	(void)h;
	*(int *)ctx = st == HOST_CLOSED ? 1 : 2;
}

/* Close the host (every session released), then its parts. */
void hx_stop(struct hx *x)
{
	int hc = 0;
	assert_int_equal(host_close(x->h, clock_mono_ns() / 1000000 + 20000, hx_host_closed, &hc), 0);
	WAIT(x, hc != 0);
	assert_int_equal(hc, 1);
	host_free(x->h);
	x->h = NULL;
	hx_close_parts(x);
}

void hx_close_parts(struct hx *x)
{
	int closed = 0;
	assert_int_equal(fifo_close(x->f, clock_mono_ns() / 1000000 + 10000, hx_fifo_closed, &closed), 0);
	http_close(x->http, hx_noop, NULL);
	sink_close(x->sink, NULL, NULL);
	while (!closed)
		uv_run(&x->loop, UV_RUN_ONCE);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
}

void hx_settle_held_failing(struct hx *x)
{
	/* everything the turn posted so far is durable; then every sync fails */
	assert_int_equal(fifo_flush_wait(x->f, NULL, clock_mono_ns() / 1000000 + 10000), 0);
	faultfs_install();
	x->faults = true;
	for (unsigned k = 1; k <= 4; k++) {
		faultfs_fail(FF_FDATASYNC, k, EIO);
		faultfs_fail(FF_FSYNC, k, EIO);
	}
	int settled = x->settled;
	struct cerr err;
	assert_int_equal(host_applied(x->h, &x->held, &err), 0);
	WAIT(x, x->settled > settled);
	faultfs_disarm();
}

static void hx_tick_cb(uv_timer_t *t)
{
	(void)t;
}

int hx_setup(void **state)
{
	struct hx *x = xcalloc(1, sizeof *x);
	assert_int_equal(tmp_root("cairn-host", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	buf_init(&x->seen);
	buf_init(&x->text);
	x->dones = cJSON_CreateArray();
	x->requests = cJSON_CreateArray();
	snprintf(x->cwd, sizeof x->cwd, "%s/w", x->dir);
	assert_int_equal(mkdir(x->cwd, 0700), 0);
	uv_timer_init(&x->loop, &x->tick);
	uv_timer_start(&x->tick, hx_tick_cb, 100, 100);
	uv_unref((uv_handle_t *)&x->tick);
	hx_start(x);
	*state = x;
	return 0;
}

int hx_teardown(void **state)
{
	struct hx *x = *state;
	if (x->faults)
		faultfs_uninstall();
	if (x->h)
		hx_stop(x);
	uv_close((uv_handle_t *)&x->tick, NULL);
	uv_run(&x->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	if (x->have_fake)
		fake_stop(&x->fake);
	free(x->base);
	free(x->taken);
	cJSON_Delete(x->dones);
	cJSON_Delete(x->requests);
	buf_release(&x->seen);
	buf_release(&x->text);
	rm_rf(x->dir);
	free(x);
	return 0;
}

struct host_call hx_offline_call(void)
{
	struct host_call c = {
		.provider = "offline",
		.call = {.kind = PROVIDER_OFFLINE, .pace_ms = 0, .retry = {3, 5, 20, 60000}},
	};
	return c;
}

/* The fake server with script, and a call to it. */
struct host_call hx_fake_call(struct hx *x, const char *script)
{
	fake_start(&x->fake, script, NULL);
	x->have_fake = true;
	x->base = url(x->fake.port, "/v1");
	struct host_call c = hx_offline_call();
	c.provider = "openai";
	c.call.kind = PROVIDER_OPENAI;
	c.call.params = (struct provider_params){.model = "m-1", .base_url = x->base,
						 .api_key = "sk-test"};
	c.call.timeouts = (struct http_timeouts){2000, 8000, 8000, 0};
	return c;
}

void hx_create(struct hx *x, const struct host_call *c)
{
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_create(x->h, x->cwd, c, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
}

/* Send text with submit id sid (NULL: made up); wait for its callback. */
void hx_send(struct hx *x, const char *text, const char *sid)
{
	struct host_send s = {.text = text, .client_submit_id = sid};
	struct cerr err;
	int before = x->calls;
	if (host_send(x->h, x->id, &s, hx_done_cb, x, &err) < 0)
		fail_msg("send: %s", err.msg);
	WAIT(x, x->calls > before);
	if (x->last.cls != CERR_OK)
		fail_msg("send: %s", x->last.msg);
}

struct scan *hx_read_log(struct hx *x)
{
	char *p = session_path(x->root, STORE_SESSIONS, x->cwd, x->id, LOG_FILE);
	struct scan *s = scan_path(p);
	free(p);
	assert_int_equal(s->status, SCAN_OK);
	return s;
}

/* The frame (the batch) event i of the log was written in. */
uint32_t hx_frame_of(struct hx *x, size_t i)
{
	char *p = session_path(x->root, STORE_SESSIONS, x->cwd, x->id, LOG_FILE);
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

size_t hx_count(const struct scan *s, const char *type)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_events; i++)
		n += strcmp(s->events[i].type, type) == 0;
	return n;
}

size_t hx_find(const struct scan *s, size_t i, const char *type)
{
	while (i < s->n_events && strcmp(s->events[i].type, type) != 0)
		i++;
	return i;
}

const char *hx_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsString(v) ? v->valuestring : "";
}

const cJSON *hx_done(struct hx *x, int k)
{
	return cJSON_GetArrayItem(x->dones, k);
}
