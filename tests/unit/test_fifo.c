/* test_fifo.c — persist/fifo.h with real files in a mkdtemp root, a real
 * libuv loop and the real writer thread (the fixture: support_fifo.h):
 * completion exactly once on the loop thread in post order, receipts
 * against the log and the catalog, meta items, session creation,
 * coalescing of history items (frames counted), full saves and meta items
 * as boundaries, and group commit (one catalog transaction a batch, the WAL
 * kept small by checkpoints). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/fifo.h"
#include "persist/pathkey.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fifo.h"
#include "tests/unit/support_fixture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		FIFOFX_TEST(test_receipt_is_next_seq_and_catalog_version),
		FIFOFX_TEST(test_items_complete_once_in_post_order_on_the_loop),
		FIFOFX_TEST(test_create_flag_makes_the_session_and_a_bad_id_nothing),
		FIFOFX_TEST(test_coalescing_and_boundaries),
		FIFOFX_TEST(test_sessions_in_one_batch_share_one_transaction),
		FIFOFX_TEST(test_checkpoints_bound_the_wal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
