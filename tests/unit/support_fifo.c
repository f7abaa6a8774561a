/* support_fifo.c — the FIFO tests' fixture (see support_fifo.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/support_fifo.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

/* ---- fixture: a fresh root, loop and FIFO per test ---- */

static pthread_t loop_thread;
static int done_order;

int fifofx_setup(void **state)
{
	struct fx *x = xcalloc(1, sizeof *x);
	struct cerr err = {0};
	assert_int_equal(tmp_root("cairn-fifo", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(store_open(x->root, true, &x->st, &err), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)) || catalog_open(x->st, &x->cat, &err) < 0)
		fail_msg("fifo_new or catalog_open: %s", err.msg);
	loop_thread = pthread_self();
	done_order = 0;
	*state = x;
	return 0;
}

/* Close the FIFO and run the loop to completion: a forgotten handle fails. */
int fifofx_teardown(void **state)
{
	struct fx *x = *state;
	if (x->f)
		assert_int_equal(fifo_close_wait(x->f, deadline(10000)), 0);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	catalog_close(x->cat);
	store_close(x->st);
	rm_rf(x->dir);
	free(x);
	return 0;
}

/* ---- completions ---- */

/* No assertion here: cmocka must not longjmp out of uv_run. */
void done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
	     const struct cerr *err)
{
	struct rec *c = ctx;
	c->calls++;
	c->order = ++done_order;
	c->on_loop = pthread_equal(pthread_self(), loop_thread);
	c->kind = fifo_item_kind(it);
	snprintf(c->session, sizeof c->session, "%s", fifo_item_session(it));
	c->both_or_none = (r == NULL) == (err == NULL);
	c->ok = err == NULL;
	if (r)
		c->r = *r;
	if (err)
		c->err = *err;
}

void post(struct fx *x, struct fifo_item *it, struct rec *c)
{
	struct cerr err = {0};
	memset(c, 0, sizeof *c);
	if (fifo_post(x->f, it, done_cb, c, &err) != 0)
		fail_msg("fifo_post: %s", err.msg);
}

/* Flush, then run the loop until every rec completed (10 s at most). */
void wait_all(struct fx *x, struct rec *c, size_t n)
{
	assert_int_equal(fifo_flush_wait(x->f, NULL, deadline(10000)), 0);
	uint64_t until = deadline(10000);
	for (size_t done = 0; done < n;) {
		done = 0;
		for (size_t i = 0; i < n; i++)
			done += c[i].calls > 0;
		if (clock_mono_ns() / 1000000 > until)
			fail_msg("%zu of %zu items never completed", n - done, n);
		uv_run(&x->loop, UV_RUN_NOWAIT);
		usleep(200);
	}
	uv_run(&x->loop, UV_RUN_NOWAIT); /* a second completion would show now */
	for (size_t i = 0; i < n; i++)
		if (c[i].calls != 1 || !c[i].on_loop || c[i].both_or_none)
			fail_msg("item %zu: %d completions, on the loop: %d, a bad one: %d", i,
				 c[i].calls, c[i].on_loop, c[i].both_or_none);
}

void want_ok(const struct rec *c, const char *what)
{
	if (!c->ok)
		fail_msg("%s failed: %s: %s", what, cerr_class_name(c->err.cls), c->err.msg);
}

void want_err(const struct rec *c, enum cerr_class cls, const char *what)
{
	if (c->ok || c->err.cls != cls)
		fail_msg("%s: %s (%s), want %s", what, c->ok ? "ok" : cerr_class_name(c->err.cls),
			 c->err.msg, cerr_class_name(cls));
}

/* Post one item and wait for it. */
void step(struct fx *x, struct fifo_item *it, struct rec *c)
{
	post(x, it, c);
	wait_all(x, c, 1);
}

void step_ok(struct fx *x, struct fifo_item *it, struct rec *c, const char *what)
{
	step(x, it, c);
	want_ok(c, what);
}

void step_err(struct fx *x, struct fifo_item *it, struct rec *c, enum cerr_class cls,
	      const char *what)
{
	step(x, it, c);
	want_err(c, cls, what);
}

/* ---- items ---- */

cJSON *msgs_typed(const char *type, const char *tag, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		char text[96];
		snprintf(text, sizeof text, "%s %d", tag, i);
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "type", type);
		cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "data"), "text", text);
		cJSON_AddItemToArray(a, e);
	}
	return a;
}

struct fifo_item *hist(const char *id, uint64_t seq, const char *tag, int n)
{
	return fifo_history(id, seq, msgs_typed("user/message", tag, n));
}

struct fifo_item *create(const char *id, const char *cwd, const char *tag, int n)
{
	struct fifo_item *it = hist(id, 1, tag, n);
	fifo_item_create(it, cwd);
	return it;
}

struct fifo_item *full(const char *id, uint64_t seq, uint64_t version, const char *tag, int n)
{
	return fifo_full_save(id, seq, version, msgs_typed("assistant/text", tag, n));
}

struct fifo_item *meta(const char *json)
{
	cJSON *m = cJSON_Parse(json);
	assert_non_null(m);
	return fifo_meta("A", m);
}

/* ---- reading back ---- */

char *file_of(const struct fx *x, const char *area, const char *cwd, const char *id)
{
	return session_path(x->root, area, cwd, id, LOG_FILE);
}

/* The log at path as read now, which must be there and ok (frees path). */
struct scan *scan_file(char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("cannot open '%s'", path);
	free(path);
	struct scan *s;
	struct cerr err;
	assert_int_equal(scan_fd(fd, &s, &err), 0);
	close(fd);
	assert_int_equal(s->status, SCAN_OK);
	return s;
}

struct scan *scan_of(const struct fx *x, const char *id)
{
	return scan_file(file_of(x, STORE_SESSIONS, NULL, id));
}

uint64_t next_seq_of(const struct fx *x, const char *id)
{
	struct scan *s = scan_of(x, id);
	uint64_t n = s->rev.next_seq;
	scan_free(s);
	return n;
}

const char *text_at(const struct scan *s, size_t i)
{
	assert_true(i < s->n_events);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s->events[i].data, "text");
	return cJSON_IsString(t) ? t->valuestring : "";
}

/* The log file's bytes; *n gets the length. */
uint8_t *log_bytes(const struct fx *x, const char *id, size_t *n)
{
	char *p = file_of(x, STORE_SESSIONS, NULL, id);
	uint8_t *buf = slurp(p, n);
	free(p);
	return buf;
}

void assert_same_bytes(const struct fx *x, const char *id, const uint8_t *before, size_t n)
{
	size_t m;
	uint8_t *now = log_bytes(x, id, &m);
	if (m != n || memcmp(now, before, n) != 0)
		fail_msg("the log of '%s' changed (%zu -> %zu bytes)", id, n, m);
	free(now);
}

struct cat_session row_of(struct fx *x, const char *id)
{
	struct cat_session row;
	struct cerr err;
	if (catalog_get(x->cat, id, &row, &err) < 0)
		fail_msg("catalog_get '%s': %s", id, err.msg);
	return row;
}

uint64_t version_of(struct fx *x, const char *id)
{
	struct cat_session row = row_of(x, id);
	uint64_t v = row.content_version;
	cat_session_release(&row);
	return v;
}

/* A receipt matches the log and the catalog as they are right after it. */
void check_receipt(struct fx *x, const char *id, const struct rec *c, uint64_t want_next)
{
	want_ok(c, id);
	assert_int_equal(c->r.next_seq, want_next);
	assert_int_equal(next_seq_of(x, id), want_next);
	assert_int_equal(c->r.content_version, version_of(x, id));
}
