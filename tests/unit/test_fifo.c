/* test_fifo.c — persist/fifo.h with real files in a mkdtemp root, a real
 * libuv loop and the real writer thread: completion exactly once on the loop
 * thread in post order, receipts against the log and the catalog, session
 * creation, coalescing of history items (frames counted), full saves and
 * meta items as boundaries, group commit, seq and version conflicts,
 * fail-fast after a failed item and recovery by a full save, meta, delete /
 * restore / purge (running here, locked by another process), flush and
 * close deadlines, and posting after close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/fifo.h"
#include "persist/lock.h"
#include "persist/log.h"
#include "persist/pathkey.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

/* ---- fixture: a fresh root, loop and FIFO per test ---- */

struct fx {
	char dir[64];
	char root[128];
	struct store *st;    /* the test's own view of the root */
	struct catalog *cat; /* the test's own connection */
	uv_loop_t loop;
	struct fifo *f;
};

static pthread_t loop_thread;
static int done_order;

static uint64_t deadline(int64_t ms)
{
	return (uint64_t)((int64_t)(clock_mono_ns() / 1000000) + ms);
}

static int setup(void **state)
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
static int teardown(void **state)
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

struct rec {
	int calls, order;
	bool on_loop, ok, both_or_none;
	struct fifo_receipt r;
	struct cerr err;
	enum fifo_kind kind;
	char session[SESSION_ID_MAX + 1];
};

/* No assertion here: cmocka must not longjmp out of uv_run. */
static void done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
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

static void post(struct fx *x, struct fifo_item *it, struct rec *c)
{
	struct cerr err = {0};
	memset(c, 0, sizeof *c);
	if (fifo_post(x->f, it, done_cb, c, &err) != 0)
		fail_msg("fifo_post: %s", err.msg);
}

/* Flush, then run the loop until every rec completed (10 s at most). */
static void wait_all(struct fx *x, struct rec *c, size_t n)
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

static void want_ok(const struct rec *c, const char *what)
{
	if (!c->ok)
		fail_msg("%s failed: %s: %s", what, cerr_class_name(c->err.cls), c->err.msg);
}

static void want_err(const struct rec *c, enum cerr_class cls, const char *what)
{
	if (c->ok || c->err.cls != cls)
		fail_msg("%s: %s (%s), want %s", what, c->ok ? "ok" : cerr_class_name(c->err.cls),
			 c->err.msg, cerr_class_name(cls));
}

/* Post one item and wait for it. */
static void step(struct fx *x, struct fifo_item *it, struct rec *c)
{
	post(x, it, c);
	wait_all(x, c, 1);
}

static void step_ok(struct fx *x, struct fifo_item *it, struct rec *c, const char *what)
{
	step(x, it, c);
	want_ok(c, what);
}

static void step_err(struct fx *x, struct fifo_item *it, struct rec *c, enum cerr_class cls,
		     const char *what)
{
	step(x, it, c);
	want_err(c, cls, what);
}

/* ---- items ---- */

static cJSON *msgs_typed(const char *type, const char *tag, int n)
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

static struct fifo_item *hist(const char *id, uint64_t seq, const char *tag, int n)
{
	return fifo_history(id, seq, msgs_typed("user/message", tag, n));
}

static struct fifo_item *create(const char *id, const char *cwd, const char *tag, int n)
{
	struct fifo_item *it = hist(id, 1, tag, n);
	fifo_item_create(it, cwd);
	return it;
}

static struct fifo_item *full(const char *id, uint64_t seq, uint64_t version, const char *tag,
			      int n)
{
	return fifo_full_save(id, seq, version, msgs_typed("assistant/text", tag, n));
}

static struct fifo_item *meta(const char *json)
{
	cJSON *m = cJSON_Parse(json);
	assert_non_null(m);
	return fifo_meta("A", m);
}

/* ---- reading back ---- */

static char *file_of(const struct fx *x, const char *area, const char *cwd, const char *id)
{
	return session_path(x->root, area, cwd, id, LOG_FILE);
}

/* The log at path as read now, which must be there and ok (frees path). */
static struct scan *scan_file(char *path)
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

static struct scan *scan_of(const struct fx *x, const char *id)
{
	return scan_file(file_of(x, STORE_SESSIONS, NULL, id));
}

static uint64_t next_seq_of(const struct fx *x, const char *id)
{
	struct scan *s = scan_of(x, id);
	uint64_t n = s->rev.next_seq;
	scan_free(s);
	return n;
}

static const char *text_at(const struct scan *s, size_t i)
{
	assert_true(i < s->n_events);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s->events[i].data, "text");
	return cJSON_IsString(t) ? t->valuestring : "";
}

/* The log file's bytes; *n gets the length. */
static uint8_t *log_bytes(const struct fx *x, const char *id, size_t *n)
{
	char *p = file_of(x, STORE_SESSIONS, NULL, id);
	uint8_t *buf = slurp(p, n);
	free(p);
	return buf;
}

static void assert_same_bytes(const struct fx *x, const char *id, const uint8_t *before, size_t n)
{
	size_t m;
	uint8_t *now = log_bytes(x, id, &m);
	if (m != n || memcmp(now, before, n) != 0)
		fail_msg("the log of '%s' changed (%zu -> %zu bytes)", id, n, m);
	free(now);
}

static struct cat_session row_of(struct fx *x, const char *id)
{
	struct cat_session row;
	struct cerr err;
	if (catalog_get(x->cat, id, &row, &err) < 0)
		fail_msg("catalog_get '%s': %s", id, err.msg);
	return row;
}

static uint64_t version_of(struct fx *x, const char *id)
{
	struct cat_session row = row_of(x, id);
	uint64_t v = row.content_version;
	cat_session_release(&row);
	return v;
}

/* A receipt matches the log and the catalog as they are right after it. */
static void check_receipt(struct fx *x, const char *id, const struct rec *c, uint64_t want_next)
{
	want_ok(c, id);
	assert_int_equal(c->r.next_seq, want_next);
	assert_int_equal(next_seq_of(x, id), want_next);
	assert_int_equal(c->r.content_version, version_of(x, id));
}

/* ---- tests ---- */

/* Step by step, each receipt is the log's next seq and the catalog's
 * content version right after the item; meta items (title, pin) append a
 * session/meta event each and show in the catalog. */
static void test_receipt_is_next_seq_and_catalog_version(void **state)
{
	struct fx *x = *state;
	struct rec c;
	step(x, create("A", NULL, "a1", 2), &c);
	check_receipt(x, "A", &c, 3); /* header 0, events 1 and 2 */
	assert_int_equal(c.kind, FIFO_HISTORY);
	assert_string_equal(c.session, "A");
	step(x, hist("A", 3, "a2", 3), &c);
	check_receipt(x, "A", &c, 6);
	step(x, meta("{\"title\":\"Named\",\"pinned\":true}"), &c);
	check_receipt(x, "A", &c, 7);
	assert_int_equal(c.kind, FIFO_META);
	struct cat_session row = row_of(x, "A");
	assert_string_equal(row.title, "Named");
	assert_true(row.pinned);
	cat_session_release(&row);
	step(x, full("A", 7, 7, "a3", 2), &c);
	check_receipt(x, "A", &c, 9);
	assert_int_equal(c.kind, FIFO_FULL_SAVE);
	struct scan *s = scan_of(x, "A");
	assert_int_equal(s->n_events, 9);
	assert_string_equal(s->events[0].type, "session/header");
	assert_string_equal(text_at(s, 1), "a1 0");
	assert_string_equal(text_at(s, 5), "a2 2");
	assert_string_equal(s->events[6].type, "session/meta");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s->events[6].data, "title");
	assert_true(cJSON_IsString(t) && strcmp(t->valuestring, "Named") == 0);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s->events[6].data, "pinned")));
	assert_string_equal(s->events[7].type, "assistant/text");
	assert_string_equal(text_at(s, 8), "a3 1");
	scan_free(s);
	step(x, meta("{\"title\":null}"), &c);
	check_receipt(x, "A", &c, 10);
	step(x, meta("{\"pinned\":false}"), &c);
	check_receipt(x, "A", &c, 11);
	row = row_of(x, "A");
	assert_false(row.pinned);
	assert_true(row.title == NULL || strcmp(row.title, "Named") != 0);
	/* The durable watermark follows the receipt: the writer records it
	 * in its next transaction or when it goes idle, after the sync. */
	uint64_t until = deadline(10000);
	while (row.durable_seq != 11 && clock_mono_ns() / 1000000 < until) {
		cat_session_release(&row);
		usleep(1000);
		row = row_of(x, "A");
	}
	assert_int_equal(row.durable_seq, 11);
	cat_session_release(&row);
}

/* Pipelined items of two sessions complete once each, on the loop thread,
 * in post order, only when the loop runs, with chained receipts. */
static void test_items_complete_once_in_post_order_on_the_loop(void **state)
{
	struct fx *x = *state;
	enum { N = 14 };
	struct rec c[N];
	uint64_t want[N], seq[2] = {1, 1};
	const char *ids[2] = {"A", "B"};
	for (int i = 0; i < N; i++) {
		int k = i % 2, n = 1 + i % 3;
		char tag[16];
		snprintf(tag, sizeof tag, "%s%d", ids[k], i);
		struct fifo_item *it = i < 2	      ? create(ids[k], NULL, tag, n)
				       : i % 5 == 4 ? full(ids[k], seq[k], seq[k], tag, n)
						    : hist(ids[k], seq[k], tag, n);
		want[i] = seq[k] += (uint64_t)n;
		post(x, it, &c[i]);
		if (i == N / 2) { /* the loop has not run: nothing completed yet */
			assert_int_equal(fifo_flush_wait(x->f, NULL, deadline(10000)), 0);
			for (int j = 0; j <= i; j++)
				assert_int_equal(c[j].calls, 0);
		}
	}
	wait_all(x, c, N);
	for (int i = 0; i < N; i++) {
		want_ok(&c[i], ids[i % 2]);
		assert_int_equal(c[i].order, i + 1);
		assert_int_equal(c[i].r.next_seq, want[i]);
		assert_true(c[i].r.content_version >= want[i]);
		assert_string_equal(c[i].session, ids[i % 2]);
	}
	for (int k = 0; k < 2; k++) {
		assert_int_equal(version_of(x, ids[k]), c[N - 2 + k].r.content_version);
		struct scan *s = scan_of(x, ids[k]); /* events in post order */
		assert_int_equal(s->rev.next_seq, seq[k]);
		size_t e = 1;
		for (int i = k; i < N; i += 2)
			for (int j = 0; j < 1 + i % 3; j++) {
				char text[32];
				snprintf(text, sizeof text, "%s%d %d", ids[k], i, j);
				assert_string_equal(text_at(s, e++), text);
			}
		assert_int_equal(e, s->n_events);
		scan_free(s);
	}
}

/* A history item with fifo_item_create makes the session (id of our
 * choosing, key from its cwd); without it, or with a bad id, nothing is. */
static void test_create_flag_makes_the_session_and_a_bad_id_nothing(void **state)
{
	struct fx *x = *state;
	struct rec c[3];
	const char *id = "new_Session-42", *cwd = "/tmp/cairn fifo/project";
	assert_true(pathkey_valid_id(id));
	char *p = file_of(x, STORE_SESSIONS, cwd, id), *ghost = file_of(x, STORE_SESSIONS, NULL, "ghost");
	char *evil = xasprintf("%s/evil", x->root), *key = pathkey_project(cwd);
	assert_false(exists(p));
	post(x, hist("ghost", 1, "g", 1), &c[0]); /* no create flag */
	post(x, create("../evil", cwd, "e", 1), &c[1]);
	post(x, create(id, cwd, "n", 2), &c[2]);
	wait_all(x, c, 3);
	want_err(&c[0], CERR_MISSING, "history of an unknown session");
	assert_false(c[1].ok);
	assert_int_not_equal(c[1].err.cls, CERR_OK);
	want_ok(&c[2], "create");
	assert_int_equal(c[2].r.next_seq, 3);
	assert_false(exists(ghost));
	assert_false(exists(evil));
	struct scan *s = scan_file(xstrdup(p));
	assert_string_equal(s->id, id);
	assert_string_equal(s->cwd, cwd);
	assert_int_equal(s->rev.next_seq, 3);
	scan_free(s);
	struct cat_session row = row_of(x, id);
	assert_string_equal(row.project_key, key);
	assert_string_equal(row.cwd, cwd);
	assert_int_equal(row.content_version, c[2].r.content_version);
	cat_session_release(&row);
	free(p), free(ghost), free(evil), free(key);
}

/* Five adjacent history items reaching the writer together land as one
 * frame, each with its own receipt; a full save or a meta item between
 * history items is never merged. */
static void test_coalescing_and_boundaries(void **state)
{
	struct fx *x = *state;
	struct rec c[8];
	step(x, create("A", NULL, "a", 1), &c[0]);
	struct scan *s = scan_of(x, "A");
	size_t frames = s->n_frames;
	scan_free(s);
	assert_int_equal(frames, 2); /* header + first batch */
	fifo_pause(x->f, true);
	uint64_t seq = 2;
	for (int i = 0; i < 5; i++) {
		char tag[16];
		snprintf(tag, sizeof tag, "h%d", i);
		post(x, hist("A", seq, tag, i + 1), &c[i]);
		seq += (uint64_t)i + 1;
	}
	fifo_pause(x->f, false);
	wait_all(x, c, 5);
	for (uint64_t i = 0, want = 2; i < 5; i++) {
		want_ok(&c[i], "coalesced history");
		assert_int_equal(c[i].r.next_seq, want += i + 1);
		assert_int_equal(c[i].r.content_version, version_of(x, "A"));
	}
	s = scan_of(x, "A");
	assert_int_equal(s->n_frames, frames + 1);
	assert_int_equal(s->frames[frames].first_seq, 2);
	assert_int_equal(s->frames[frames].end_seq, seq);
	assert_string_equal(text_at(s, 2), "h0 0");
	assert_string_equal(text_at(s, seq - 1), "h4 4");
	frames = s->n_frames;
	scan_free(s);

	fifo_pause(x->f, true); /* from seq 17 */
	post(x, hist("A", 17, "h1", 1), &c[0]);
	post(x, hist("A", 18, "h2", 2), &c[1]);
	post(x, full("A", 20, 20, "fs1", 3), &c[2]);
	post(x, hist("A", 23, "h3", 1), &c[3]);
	post(x, hist("A", 24, "h4", 1), &c[4]);
	post(x, meta("{\"pinned\":true}"), &c[5]);
	post(x, full("A", 26, 26, "fs2", 1), &c[6]);
	post(x, full("A", 27, 27, "fs3", 1), &c[7]);
	fifo_pause(x->f, false);
	wait_all(x, c, 8);
	static const uint64_t want[8] = {18, 20, 23, 24, 25, 26, 27, 28};
	for (int i = 0; i < 8; i++) {
		want_ok(&c[i], "item");
		assert_int_equal(c[i].r.next_seq, want[i]);
	}
	assert_int_equal(c[2].r.content_version, 23);
	assert_int_equal(c[7].r.content_version, version_of(x, "A"));
	s = scan_of(x, "A");
	/* [h1 h2] [fs1] [h3 h4] [meta] [fs2] [fs3] */
	assert_int_equal(s->n_frames, frames + 6);
	static const uint64_t starts[6] = {17, 20, 23, 25, 26, 27};
	for (int i = 0; i < 6; i++)
		assert_int_equal(s->frames[frames + (size_t)i].first_seq, starts[i]);
	assert_int_equal(s->frames[frames + 1].n_events, 3);
	assert_int_equal(s->rev.next_seq, 28);
	scan_free(s);
}

static uint64_t wal_size(const struct fx *x)
{
	char *p = xasprintf("%s/%s-wal", x->root, CATALOG_FILE);
	struct stat st;
	uint64_t n = stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
	free(p);
	return n;
}

/* Items of several sessions in one batch share one catalog transaction:
 * all complete, the catalog holds each, and the WAL grows by far less than
 * for the same items committed one by one. */
static void test_sessions_in_one_batch_share_one_transaction(void **state)
{
	struct fx *x = *state;
	struct rec c[6];
	const char *one[3] = {"D", "E", "F"}, *grouped[3] = {"A", "B", "C"};
	uint64_t w0 = wal_size(x);
	for (int k = 0; k < 3; k++) {
		step(x, create(one[k], NULL, one[k], 2), &c[2 * k]);
		step(x, full(one[k], 3, 3, one[k], 1), &c[2 * k + 1]);
	}
	uint64_t w1 = wal_size(x);
	fifo_pause(x->f, true);
	for (int k = 0; k < 3; k++) {
		post(x, create(grouped[k], NULL, grouped[k], 2), &c[2 * k]);
		post(x, full(grouped[k], 3, 3, grouped[k], 1), &c[2 * k + 1]);
	}
	fifo_pause(x->f, false);
	wait_all(x, c, 6);
	uint64_t w2 = wal_size(x);
	for (int k = 0; k < 3; k++) {
		want_ok(&c[2 * k], "create");
		want_ok(&c[2 * k + 1], "full save");
		assert_int_equal(c[2 * k + 1].r.next_seq, 4);
		assert_int_equal(c[2 * k + 1].r.content_version, 4);
		assert_int_equal(version_of(x, grouped[k]), 4);
		assert_int_equal(next_seq_of(x, grouped[k]), 4);
	}
	print_message("# WAL bytes: %llu one by one, %llu grouped\n",
		      (unsigned long long)(w1 - w0), (unsigned long long)(w2 - w1));
	assert_true(w1 > w0 && w2 > w1);
	assert_true((w2 - w1) * 2 < (w1 - w0));
}

/* Items c[0..n) acknowledged, each with next seq and content version
 * want[i] (one event a seq: the version is the projected next seq). */
static void want_receipts(const struct rec *c, const uint64_t *want, int n)
{
	for (int i = 0; i < n; i++) {
		want_ok(&c[i], "a pipelined item");
		assert_int_equal(c[i].r.next_seq, want[i]);
		assert_int_equal(c[i].r.content_version, want[i]);
	}
}

/* Wait until the catalog records durable seq `seq` for session id. */
static void wait_watermark(struct fx *x, const char *id, uint64_t seq)
{
	uint64_t until = deadline(5000);
	for (;;) {
		struct cat_session row = row_of(x, id);
		uint64_t at = row.durable_seq;
		cat_session_release(&row);
		if (at == seq)
			return;
		if (clock_mono_ns() / 1000000 > until)
			fail_msg("the watermark stays at %llu, not %llu", (unsigned long long)at,
				 (unsigned long long)seq);
		usleep(1000);
	}
}

/* P at seq and version 10: a full save that fits, then one with a stale
 * version (a conflict) and a history item after it (fails fast), queued
 * together; c gets the three completions. */
static void stale_then_after(struct fx *x, struct rec *c)
{
	fifo_pause(x->f, true);
	post(x, full("P", 10, 10, "e", 1), &c[0]);
	post(x, full("P", 11, 10, "stale", 1), &c[1]);
	post(x, hist("P", 11, "after", 1), &c[2]);
	fifo_pause(x->f, false);
	wait_all(x, c, 3);
	check_receipt(x, "P", &c[0], 11);
	want_err(&c[1], CERR_CONFLICT, "a stale expected version");
	want_err(&c[2], CERR_CONFLICT, "an item after the conflict");
	assert_non_null(strstr(c[2].err.msg, "failed save before this one"));
	assert_int_equal(next_seq_of(x, "P"), 11);
}

/* Checkpoints keep up with a writer that never pauses: 500 saves, each
 * its own round and commit (about 10 pages, 40 KB, each), would leave a
 * WAL of some 20 MB without them (13 MB when a helper checkpointed on a
 * connection of its own: the WAL never restarted while the writer went
 * on committing); it stays near the 1000-page threshold (4 MB) instead,
 * and every save is acknowledged. */
static void test_checkpoints_bound_the_wal(void **state)
{
	struct fx *x = *state;
	enum { N = 500 };
	struct rec c0, *c = xcalloc(N, sizeof *c);
	step_ok(x, create("W", NULL, "w", 1), &c0, "create");
	fifo_pause(x->f, true);
	fifo_set_batch_limit(x->f, 1);
	for (int i = 0; i < N; i++)
		post(x, full("W", 2 + (uint64_t)i, 2 + (uint64_t)i, "save", 1), &c[i]);
	fifo_pause(x->f, false);
	wait_all(x, c, N);
	fifo_set_batch_limit(x->f, 0);
	for (int i = 0; i < N; i++)
		want_ok(&c[i], "a save");
	check_receipt(x, "W", &c[N - 1], 2 + N);
	uint64_t wal = wal_size(x);
	unsigned long helper = fifo_helper_checkpoints(x->f);
	print_message("# WAL %llu bytes after %d saves, %lu checkpoints on a helper\n",
		      (unsigned long long)wal, N, helper);
	if (helper == 0)
		fail_msg("no checkpoint ran on a helper");
	if (wal > 8u << 20)
		fail_msg("the WAL grew to %llu bytes", (unsigned long long)wal);
	free(c);
}

/* Full saves posted before the last receipt (each expects the version the
 * one before it makes: the next seq) run in one round with one sync of the
 * log; receipts come in order and the watermark follows once the writer is
 * idle. In the same way a save whose expected version is stale conflicts,
 * and the session's later items in the round fail fast. */
static void test_pipelined_full_saves_share_one_round_and_sync(void **state)
{
	struct fx *x = *state;
	struct rec c[8];
	step_ok(x, create("P", NULL, "p", 2), &c[0], "create");
	fifo_pause(x->f, true);
	post(x, full("P", 3, 3, "a", 2), &c[1]);
	post(x, full("P", 5, 5, "b", 1), &c[2]);
	post(x, hist("P", 6, "c", 3), &c[3]);
	post(x, full("P", 9, 9, "d", 1), &c[4]);
	fifo_pause(x->f, false);
	wait_all(x, c + 1, 4);
	want_receipts(c + 1, (const uint64_t[]){5, 6, 9, 10}, 4);
	check_receipt(x, "P", &c[4], 10);
	/* The watermark is recorded after the sync, when the writer idles. */
	wait_watermark(x, "P", 10);
	stale_then_after(x, c + 5);
}

/* Each item a batch of its own, queued before the one ahead settles: a
 * session's next round is written while the one before it syncs (its
 * lane then syncs it right after), another session's rounds interleave.
 * Receipts, the log's order, the catalog's row and the watermark all
 * come out as if each had waited; a stale version in such a round still
 * conflicts, and what follows it fails fast. */
static void test_overlapping_rounds_end_as_if_each_had_waited(void **state)
{
	struct fx *x = *state;
	struct rec c[10];
	step_ok(x, create("P", NULL, "p", 2), &c[0], "create P");
	step_ok(x, create("R", NULL, "r", 1), &c[1], "create R");
	fifo_pause(x->f, true);
	fifo_set_batch_limit(x->f, 1);
	post(x, full("P", 3, 3, "a", 2), &c[2]);
	post(x, full("P", 5, 5, "b", 1), &c[3]);
	post(x, full("R", 2, 2, "s", 1), &c[4]);
	post(x, hist("P", 6, "c", 3), &c[5]);
	post(x, full("P", 9, 9, "d", 1), &c[6]);
	fifo_pause(x->f, false);
	wait_all(x, c + 2, 5);
	want_receipts(c + 2, (const uint64_t[]){5, 6, 3, 9, 10}, 5);
	check_receipt(x, "P", &c[6], 10);
	check_receipt(x, "R", &c[4], 3);
	struct scan *sc = scan_of(x, "P");
	assert_non_null(sc);
	const char *texts[] = {"p 0", "p 1", "a 0", "a 1", "b 0", "c 0", "c 1", "c 2", "d 0"};
	assert_int_equal(sc->n_events, 10); /* the header, then seq 1.. */
	for (size_t i = 0; i < 9; i++)
		assert_string_equal(text_at(sc, i + 1), texts[i]);
	scan_free(sc);
	wait_watermark(x, "P", 10);
	stale_then_after(x, c + 7);
	fifo_set_batch_limit(x->f, 0);
}

/* A new writer (a new process) builds on what the catalog says: its very
 * first item, a full save at the session's version, goes through, and one
 * at a stale version conflicts. */
static void reopen_fifo(struct fx *x)
{
	struct cerr err = {0};
	assert_int_equal(fifo_close_wait(x->f, deadline(10000)), 0);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
}

static void test_new_writer_checks_the_first_item_version(void **state)
{
	struct fx *x = *state;
	struct rec c[4];
	step_ok(x, create("Q", NULL, "q", 2), &c[0], "create");
	step_ok(x, full("Q", 3, 3, "a", 1), &c[1], "full save");
	reopen_fifo(x);
	step_err(x, full("Q", 4, 3, "stale", 1), &c[2], CERR_CONFLICT, "first item, stale version");
	reopen_fifo(x);
	step(x, full("Q", 4, 4, "b", 1), &c[3]);
	check_receipt(x, "Q", &c[3], 5);
}

/* A writer that opens a log whose watermark lags (here: the catalog holds
 * another log's) syncs the log and raises it to all of it, even when it
 * writes nothing. */
static void test_writer_open_raises_a_lagging_watermark(void **state)
{
	struct fx *x = *state;
	struct rec c[2];
	struct cerr err;
	step_ok(x, create("H", NULL, "h", 2), &c[0], "create");
	struct cat_watermark wm = {.known = true, .rev.len = 10, .rev.next_seq = 1};
	memset(wm.head, 0xAB, sizeof wm.head);
	assert_int_equal(catalog_set_watermark(x->cat, "H", &wm, &err), 0);
	reopen_fifo(x);
	step_ok(x, hist("H", 3, "none", 0), &c[1], "an empty batch");
	assert_int_equal(catalog_get_watermark(x->cat, "H", &wm, &err), 0);
	size_t n;
	uint8_t *bytes = log_bytes(x, "H", &n);
	struct scan *s = scan_of(x, "H");
	assert_true(wm.known);
	assert_int_equal(wm.rev.len, n);
	assert_int_equal(wm.rev.next_seq, 3);
	assert_memory_equal(wm.head, s->head, SHA256_LEN);
	scan_free(s);
	free(bytes);
}

/* A wrong expected seq is a conflict that writes nothing; the session's
 * later history and meta items fail fast (naming the first failure) and
 * write nothing while another session goes on; a full save with a stale
 * version conflicts too and shows it unsaved; one with the right seq and
 * version recovers it (idle again), and history works again. */
static void test_conflict_fail_fast_recovery(void **state)
{
	struct fx *x = *state;
	struct rec c[4];
	step(x, create("A", NULL, "a", 2), &c[0]);
	step(x, create("B", NULL, "b", 1), &c[1]);
	size_t n;
	uint8_t *before = log_bytes(x, "A", &n);

	step_err(x, hist("A", 99, "wrong", 1), &c[0], CERR_CONFLICT, "history at a wrong seq");
	assert_false(c[0].err.outcome_unknown);
	assert_same_bytes(x, "A", before, n);
	struct cerr first = c[0].err;

	post(x, hist("A", 3, "after", 1), &c[0]);
	post(x, meta("{\"title\":\"never\"}"), &c[1]);
	post(x, hist("B", 2, "b2", 1), &c[2]);
	wait_all(x, c, 3);
	for (int i = 0; i < 2; i++) {
		assert_false(c[i].ok);
		if (!strstr(c[i].err.msg, first.msg))
			fail_msg("a fail-fast error does not name the first failure: %s",
				 c[i].err.msg);
	}
	want_ok(&c[2], "another session");
	assert_int_equal(c[2].r.next_seq, 3);
	assert_same_bytes(x, "A", before, n);

	step_err(x, full("A", 3, 1, "stale", 1), &c[0], CERR_CONFLICT, "full save with a stale version");
	assert_same_bytes(x, "A", before, n);
	struct cat_session row = row_of(x, "A");
	assert_int_equal(row.content_version, 3);
	/* A failed full save shows unsaved (DESIGN §3), as one at a stale seq does. */
	bool unsaved = row.status && strcmp(row.status, "unsaved") == 0;
	cat_session_release(&row);
	step(x, hist("A", 3, "still", 1), &c[0]);
	assert_false(c[0].ok);
	assert_same_bytes(x, "A", before, n);

	step(x, full("A", 3, 3, "recover", 2), &c[0]);
	check_receipt(x, "A", &c[0], 5);
	row = row_of(x, "A");
	assert_string_equal(row.status, "idle");
	assert_true(row.title == NULL || strcmp(row.title, "never") != 0); /* the meta never landed */
	cat_session_release(&row);
	step(x, hist("A", 5, "again", 1), &c[0]);
	check_receipt(x, "A", &c[0], 6);
	struct scan *s = scan_of(x, "A");
	assert_string_equal(text_at(s, 3), "recover 0");
	assert_string_equal(text_at(s, 5), "again 0");
	scan_free(s);
	free(before);
	if (!unsaved)
		fail_msg("a full save failed at a stale version did not show the session unsaved");
}

/* A full save with nothing to append still checks its expected seq: its
 * receipt may never claim a seq the log is not at, and it does not recover
 * a failed session at a wrong seq. */
static void test_empty_full_save_checks_seq(void **state)
{
	struct fx *x = *state;
	struct rec c;
	step(x, create("A", NULL, "a", 2), &c);
	step(x, fifo_full_save("A", 10, 3, NULL), &c);
	if (c.ok)
		fail_msg("an empty full save at seq 10 succeeded with next seq %llu; the log is at 3",
			 (unsigned long long)c.r.next_seq);
	assert_int_equal(c.err.cls, CERR_CONFLICT);
	step(x, fifo_full_save("A", 3, 3, NULL), &c);
	check_receipt(x, "A", &c, 3);
}

/* An invalid event fails its own item only: the history item merged with
 * it is not failed on its account. */
static void test_merge_keeps_items_apart(void **state)
{
	struct fx *x = *state;
	struct rec c[2];
	step(x, create("A", NULL, "a", 2), &c[0]);
	fifo_pause(x->f, true);
	post(x, hist("A", 3, "good", 1), &c[0]);
	post(x, fifo_history("A", 4, msgs_typed("Not A Type!", "bad", 1)), &c[1]);
	fifo_pause(x->f, false);
	wait_all(x, c, 2);
	want_err(&c[1], CERR_USAGE, "an invalid event");
	if (!c[0].ok)
		fail_msg("a valid history item failed because of the item merged after it: %s",
			 c[0].err.msg);
	check_receipt(x, "A", &c[0], 4);
	step(x, hist("A", 4, "next", 1), &c[0]);
	check_receipt(x, "A", &c[0], 5);
}

/* Events the log cannot store as given fail their item with a usage
 * error naming the field, and nothing is written: a number JSON cannot
 * carry (it used to be written as null), a null turn (it used to be
 * dropped) and a data that is not an object. */
static void test_unstorable_events_refused(void **state)
{
	struct fx *x = *state;
	struct rec c;
	step_ok(x, create("A", NULL, "a", 2), &c, "create");
	size_t n;
	uint8_t *before = log_bytes(x, "A", &n);
	static const double nums[] = {INFINITY, NAN};
	for (size_t i = 0; i < 2; i++) {
		cJSON *evs = msgs_typed("user/message", "num", 1);
		cJSON_AddNumberToObject(cJSON_GetObjectItem(evs->child, "data"), "x", nums[i]);
		step_err(x, fifo_history("A", 3, evs), &c, CERR_USAGE, "an infinite number");
		if (!strstr(c.err.msg, "data.x"))
			fail_msg("the field is not named: %s", c.err.msg);
	}
	cJSON *evs = msgs_typed("user/message", "null turn", 1);
	cJSON_AddNullToObject(evs->child, "turn");
	step_err(x, fifo_history("A", 3, evs), &c, CERR_USAGE, "a null turn");
	if (!strstr(c.err.msg, "\"turn\""))
		fail_msg("the field is not named: %s", c.err.msg);
	/* A data that is not an object is refused, not turned into {}. */
	const char *const not_obj[] = {"\"x\"", "[]", "1", "null", "true"};
	for (size_t i = 0; i < sizeof not_obj / sizeof not_obj[0]; i++) {
		evs = msgs_typed("session/meta", "bad data", 1);
		cJSON_ReplaceItemInObject(evs->child, "data", cJSON_Parse(not_obj[i]));
		step_err(x, fifo_history("A", 3, evs), &c, CERR_USAGE, "a data that is not an object");
		if (!strstr(c.err.msg, "\"data\""))
			fail_msg("the field is not named: %s", c.err.msg);
	}
	assert_same_bytes(x, "A", before, n);
	free(before);
	step_ok(x, hist("A", 3, "fine", 1), &c, "a valid item after them");
	check_receipt(x, "A", &c, 4);
}

/* Delete moves the whole directory to the trash, restore brings it back
 * (and appends work again), purge removes it, lock file included, and the
 * catalog forgets it. */
static void test_delete_restore_purge_move_the_whole_directory(void **state)
{
	struct fx *x = *state;
	struct rec c;
	const char *cwd = "/tmp/cairn-fifo-proj";
	step(x, create("A", cwd, "a", 2), &c);
	char *key = pathkey_project(cwd);
	char *live = xasprintf("%s/%s/%s/A", x->root, STORE_SESSIONS, key);
	char *trash = xasprintf("%s/%s/%s/A", x->root, STORE_TRASH, key);
	char *tlock = xasprintf("%s/%s", trash, LOCK_FILE);
	char *tlog = xasprintf("%s/%s", trash, LOG_FILE);
	assert_true(exists(live));

	step_ok(x, fifo_delete("A"), &c, "delete");
	assert_true(c.r.deleted_at > 0);
	assert_false(exists(live));
	assert_true(exists(tlog));
	assert_true(exists(tlock));
	struct cat_session row = row_of(x, "A");
	assert_int_equal(row.deleted_at, c.r.deleted_at);
	cat_session_release(&row);

	step_ok(x, fifo_restore("A"), &c, "restore");
	assert_true(exists(live));
	assert_false(exists(trash));
	row = row_of(x, "A");
	assert_int_equal(row.deleted_at, 0);
	cat_session_release(&row);
	step_ok(x, hist("A", 3, "restored", 1), &c, "history after restore");
	assert_int_equal(c.r.next_seq, 4);

	step(x, fifo_purge("A"), &c); /* not in the trash */
	want_err(&c, CERR_MISSING, "purge of a live session");
	assert_true(exists(live));
	step_ok(x, fifo_delete("A"), &c, "delete again");
	step_ok(x, fifo_purge("A"), &c, "purge");
	assert_false(exists(tlock));
	assert_false(exists(trash));
	assert_false(exists(live));
	struct cerr err;
	assert_int_equal(catalog_get(x->cat, "A", &row, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	struct cat_watermark wm;
	assert_int_equal(catalog_get_watermark(x->cat, "A", &wm, &err), 0);
	assert_false(wm.known); /* its log is gone: so is its watermark */
	step_err(x, fifo_restore("A"), &c, CERR_MISSING, "restore after purge");
	step_err(x, fifo_delete("nobody"), &c, CERR_MISSING, "delete of an unknown session");
	free(key), free(live), free(trash), free(tlock), free(tlog);
}

/* Delete is refused while the session runs or another process holds its
 * lock; nothing moves; it goes through once released. */
static void test_delete_is_refused_while_running_or_locked(void **state)
{
	struct fx *x = *state;
	struct rec c;
	struct cerr err;
	struct log *lg;
	step_ok(x, create("L", NULL, "l", 1), &c, "create");
	step_ok(x, fifo_delete("L"), &c, "delete"); /* the FIFO lets go of its lock */
	step_ok(x, fifo_restore("L"), &c, "restore");
	int ready[2], go[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork(); /* the child only locks the log and waits */
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store *st;
		char b = 'n';
		if (store_open(x->root, false, &st, &err) == 0 && log_open(st, "L", &lg, &err) == 0)
			b = 'y';
		if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) < 0)
			_exit(2);
		_exit(0);
	}
	char b = 0;
	assert_int_equal(read(ready[0], &b, 1), 1);
	assert_int_equal(b, 'y');
	char *live = file_of(x, STORE_SESSIONS, NULL, "L");
	step_err(x, fifo_delete("L"), &c, CERR_LOCKED, "delete of a session locked elsewhere");
	assert_true(exists(live));
	assert_int_equal(write(go[1], "x", 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);

	step(x, create("R", NULL, "r", 1), &c);
	assert_int_equal(catalog_set_status(x->cat, "R", "running", &err), 0);
	step_err(x, fifo_delete("R"), &c, CERR_LOCKED, "delete of a running session");
	assert_int_equal(next_seq_of(x, "R"), 2);
	assert_int_equal(catalog_set_status(x->cat, "R", NULL, &err), 0);
	step_ok(x, fifo_delete("R"), &c, "delete once stopped");
	step_ok(x, fifo_delete("L"), &c, "delete once unlocked");
	assert_false(exists(live));
	free(live);
}

/* Flush returns 0 once everything earlier is durable (the log already holds
 * it before the loop delivers anything), and 1 at a passed deadline while
 * the writer is paused; nothing is lost by a timeout. */
static void test_flush_waits_for_durability_and_times_out_losing_nothing(void **state)
{
	struct fx *x = *state;
	struct rec c[3], setup;
	step(x, create("A", NULL, "a", 1), &setup);
	step(x, create("B", NULL, "b", 1), &setup);
	fifo_pause(x->f, true);
	post(x, hist("A", 2, "fa", 2), &c[0]);
	post(x, hist("B", 2, "fb", 1), &c[1]);
	post(x, hist("A", 4, "fa2", 1), &c[2]);
	uint64_t past = deadline(-5);
	assert_int_equal(fifo_flush_wait(x->f, "A", past), 1);
	assert_int_equal(fifo_flush_wait(x->f, NULL, past), 1);
	assert_int_equal(fifo_flush_wait(x->f, "nobody", past), 0); /* nothing posted for it */
	uint64_t t0 = clock_mono_ns();
	assert_int_equal(fifo_flush_wait(x->f, "B", deadline(80)), 1);
	assert_true(clock_mono_ns() - t0 >= 70 * 1000000ull);
	assert_int_equal(next_seq_of(x, "A"), 2);
	uv_run(&x->loop, UV_RUN_NOWAIT);
	for (int i = 0; i < 3; i++)
		assert_int_equal(c[i].calls, 0);

	fifo_pause(x->f, false);
	assert_int_equal(fifo_flush_wait(x->f, "A", deadline(10000)), 0);
	struct scan *s = scan_of(x, "A"); /* durable before any delivery */
	assert_int_equal(s->rev.next_seq, 5);
	assert_string_equal(text_at(s, 4), "fa2 0");
	scan_free(s);
	assert_int_equal(fifo_flush_wait(x->f, NULL, deadline(10000)), 0);
	assert_int_equal(next_seq_of(x, "B"), 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(c[i].calls, 0);
	wait_all(x, c, 3);
	want_ok(&c[0], "A"), want_ok(&c[1], "B"), want_ok(&c[2], "A");
	assert_int_equal(c[2].r.next_seq, 5);
	assert_int_equal(c[1].r.next_seq, 3);
}

/* fifo_close_wait on a paused writer times out and keeps ownership; once let go
 * it closes, delivering what was pending; a post after that fails and its
 * callback never runs. */
static void test_close_timeout_and_post_after_close(void **state)
{
	struct fx *x = *state;
	struct rec c, setup, late;
	struct cerr err = {0};
	step(x, create("A", NULL, "a", 1), &setup);
	fifo_pause(x->f, true);
	post(x, hist("A", 2, "pending", 1), &c);
	assert_int_equal(fifo_close_wait(x->f, deadline(-1)), 1);
	assert_int_equal(fifo_close_wait(x->f, deadline(30)), 1);
	uv_run(&x->loop, UV_RUN_NOWAIT);
	assert_int_equal(c.calls, 0);
	assert_int_equal(next_seq_of(x, "A"), 2);
	fifo_pause(x->f, false);
	assert_int_equal(fifo_close_wait(x->f, deadline(10000)), 0);
	assert_int_equal(c.calls, 1); /* delivered by the close, on this thread */
	assert_true(c.on_loop);
	want_ok(&c, "pending item");
	assert_int_equal(c.r.next_seq, 3);
	assert_int_equal(next_seq_of(x, "A"), 3);
	memset(&late, 0, sizeof late);
	assert_int_equal(fifo_post(x->f, hist("A", 3, "late", 1), done_cb, &late, &err), -1);
	assert_int_not_equal(err.cls, CERR_OK);
	x->f = NULL;
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(late.calls, 0);
	assert_int_equal(next_seq_of(x, "A"), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_receipt_is_next_seq_and_catalog_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_items_complete_once_in_post_order_on_the_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_flag_makes_the_session_and_a_bad_id_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coalescing_and_boundaries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions_in_one_batch_share_one_transaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_full_saves_share_one_round_and_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlapping_rounds_end_as_if_each_had_waited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoints_bound_the_wal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_writer_checks_the_first_item_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_open_raises_a_lagging_watermark, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conflict_fail_fast_recovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_full_save_checks_seq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unstorable_events_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_keeps_items_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_restore_purge_move_the_whole_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_is_refused_while_running_or_locked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_waits_for_durability_and_times_out_losing_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_timeout_and_post_after_close, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
