/* test_log.c — the session log writer (persist/log.h) against real files in
 * a private temporary directory (the fixture: support_log.h): creation and
 * first publication, appends at a wrong seq, a torn tail cut by the next
 * append, and logs that must not be opened for writing. Validation of
 * events: test_log_validate.c; the append cursor and two-step syncs:
 * test_log_cursor.c; the writer lock: test_lock.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "persist/lock.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_log.h"

/* ---- creation and first publication ---- */

static void test_create_writes_nothing_until_the_first_append(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, NULL, "/w/p", NULL, &lg, &err), 0);
	assert_int_equal(strlen(log_id(lg)), 26);
	assert_int_equal(log_next_seq(lg), 1);
	assert_null(log_scan(lg));
	struct revision r = log_revision_of(lg);
	assert_int_equal(r.len, 0);
	assert_int_equal(r.next_seq, 0);
	char want[1024];
	snprintf(want, sizeof want, "%s/sessions/-w-p/%s/session.jsonl.zst", f->root, log_id(lg));
	assert_string_equal(log_path(lg), want);
	assert_false(exists(P(f, "root/sessions")));
	/* an empty batch is a no-op, even on a log not yet published */
	uint64_t next = 99;
	assert_int_equal(log_append(lg, 1, NULL, 0, &next, &err), 0);
	assert_int_equal(next, 1);
	assert_false(exists(P(f, "root/sessions")));
	/* a CAS miss on the first append writes nothing either */
	FAILS(add(lg, 0, B_TURN, NULL, &err), CERR_CONFLICT);
	assert_false(exists(P(f, "root/sessions")));
	log_close(lg);
	assert_false(exists(P(f, "root/sessions")));
}

static void test_first_append_publishes_the_header_and_events(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	cJSON *extra = cJSON_Parse("{\"model\":\"m1\",\"id\":\"evil\"}");
	int64_t before = clock_unix_ms();
	assert_int_equal(log_create(f->st, "sess1", "/w/p", extra, &lg, &err), 0);
	cJSON_Delete(extra);
	int64_t after = clock_unix_ms();
	add_ok(lg, 1, "[{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{},\"t\":12345},"
		      "{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"hi\"}}]", 3);
	const char *path = P(f, "root/sessions/-w-p/sess1/session.jsonl.zst");
	assert_string_equal(log_path(lg), path);
	/* no staging file is left behind */
	glob_t g;
	assert_int_equal(glob(P(f, "root/sessions/-w-p/sess1/.*.tmp"), 0, NULL, &g), GLOB_NOMATCH);
	globfree(&g);
	assert_true(exists(P(f, "root/sessions/-w-p/sess1/session.lock")));

	struct scan *s = scan_path(path);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_frames, 2);
	assert_int_equal(s->frames[0].n_events, 1);
	assert_int_equal(s->frames[1].n_events, 2);
	assert_int_equal(s->frames[1].offset, s->frames[0].len);
	assert_int_equal(s->good_len, s->rev.len);
	assert_string_equal(s->id, "sess1");
	assert_string_equal(s->cwd, "/w/p");
	assert_int_equal(s->format, 1);
	assert_in_range(s->created_at, before, after);
	assert_int_equal(s->n_events, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(s->events[i].seq, i);
	assert_string_equal(s->events[0].type, "session/header");
	assert_string_equal(cJSON_GetObjectItem(s->events[0].data, "model")->valuestring, "m1");
	/* an extra can't override a field the store writes */
	assert_string_equal(cJSON_GetObjectItem(s->events[0].data, "id")->valuestring, "sess1");
	assert_string_equal(s->events[1].type, "turn/start");
	assert_int_equal(s->events[1].t, 12345);
	assert_string_equal(s->events[1].turn, "t1");
	assert_in_range(s->events[2].t, before, clock_unix_ms());
	assert_string_equal(s->events[2].type, "user/message");
	assert_string_equal(scan_open_turn(s), "t1");
	size_t len = (size_t)s->rev.len;
	scan_free(s);

	log_close(lg);
	assert_int_equal(log_open(f->st, "sess1", &lg, &err), 0);
	assert_int_equal(log_next_seq(lg), 3);
	assert_string_equal(log_id(lg), "sess1");
	struct revision r = log_revision_of(lg);
	assert_int_equal(r.len, len);
	assert_int_equal(r.next_seq, 3);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(r.ino, st.st_ino);
	assert_int_equal(log_scan(lg)->status, SCAN_OK);
	assert_int_equal(log_cut_bytes(lg), 0);
	add_ok(lg, 3, B_TEXT, 4);
	/* without its parsed read the handle appends from its cursor, and a
	 * refresh reads everything again, its own appends included */
	log_drop_scan(lg);
	assert_null(log_scan(lg));
	add_ok(lg, 4, B_TEXT, 5);
	assert_int_equal(log_next_seq(lg), 5);
	assert_int_equal(log_refresh(lg, &err), 0);
	assert_non_null(log_scan(lg));
	assert_int_equal(log_scan(lg)->n_events, 5);
	assert_int_equal(log_scan(lg)->rev.next_seq, 5);
	log_close(lg);
	/* an existing id can't be created again */
	FAILS(log_create(f->st, "sess1", NULL, NULL, &lg, &err), CERR_CONFLICT);
	FAILS(log_create(f->st, "../x", NULL, NULL, &lg, &err), CERR_USAGE);
	/* a cwd the header's JSON cannot hold: refused, not written unreadable */
	FAILS(log_create(f->st, "sess2", "/w/a\x9b" "b", NULL, &lg, &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "not UTF-8"));
}

static void test_append_at_a_wrong_seq_conflicts_and_writes_nothing(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "cas", 2);
	size_t n;
	uint8_t *before = slurp(path, &n);
	struct log *lg = open_ok(f, "cas");
	struct cerr err;
	assert_int_equal(log_next_seq(lg), 4);
	uint64_t next = 0;
	assert_int_equal(log_append(lg, 4, NULL, 0, &next, &err), 0);
	assert_int_equal(next, 4);
	assert_same_file(path, before, n);
	static const uint64_t wrong[] = {0, 1, 3, 5, UINT64_MAX};
	for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
		FAILS(add(lg, wrong[i], B_TEXT, NULL, &err), CERR_CONFLICT);
		assert_int_equal(log_next_seq(lg), 4);
	}
	assert_same_file(path, before, n);
	add_ok(lg, 4, B_TEXT, 5);
	log_close(lg);
	free(before);
}

/* ---- torn tails ---- */

/* Append the first half of a valid frame to path; returns the bytes added. */
static size_t tear(const char *path, uint64_t seq)
{
	struct buf fr = BUF_INIT;
	text_frame(&fr, seq);
	size_t half = fr.len / 2;
	spit(path, fr.p, half, O_APPEND);
	buf_release(&fr);
	return half;
}

static void test_torn_tail_cut_by_append(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "torn", 2);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	size_t good = (size_t)st.st_size, half = tear(path, 4);
	struct log *lg = open_ok(f, "torn");
	assert_int_equal(log_scan(lg)->status, SCAN_TORN);
	assert_int_equal(log_scan(lg)->good_len, good);
	assert_int_equal(log_revision_of(lg).len, good + half);
	assert_int_equal(log_next_seq(lg), 4);
	assert_int_equal(log_cut_bytes(lg), 0);
	add_ok(lg, 4, B_TEXT, 5);
	assert_int_equal(log_cut_bytes(lg), half);
	log_close(lg);
	struct scan *s = scan_path(path);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_frames, 4);
	assert_int_equal(s->frames[3].offset, good);
	assert_int_equal(s->rev.next_seq, 5);
	scan_free(s);
}

/* ---- logs that must not be opened for writing ---- */

/* Corrupt and unsupported logs: see test_repair.c. */
static void test_open_header_id_mismatch(void **state)
{
	struct fx *f = *state;
	size_t n;
	uint8_t *bytes = slurp(make_session(f, "aaa", 1), &n);
	assert_int_equal(mkdir(P(f, "root/sessions/_no-cwd/mismatch"), 0700), 0);
	const char *path = P(f, "root/sessions/_no-cwd/mismatch/session.jsonl.zst");
	spit(path, bytes, n, O_EXCL);
	struct log *lg = NULL;
	struct cerr err;
	FAILS(log_open(f->st, "mismatch", &lg, &err), CERR_CORRUPT);
	assert_null(lg);
	assert_same_file(path, bytes, n);
	free(bytes);
	/* by path there is no directory id to match: it opens */
	assert_int_equal(log_open_path(path, &lg, &err), 0);
	assert_string_equal(log_id(lg), "aaa");
	log_close(lg);
	FAILS(log_open(f->st, "nosuch", &lg, &err), CERR_MISSING);
	FAILS(log_open(f->st, "aa", &lg, &err), CERR_MISSING); /* a prefix is not an id */
	FAILS(log_open(f->st, "a/b", &lg, &err), CERR_USAGE);
	FAILS(log_open(f->st, "..", &lg, &err), CERR_USAGE);
}

static void test_open_path_reads_a_log_outside_the_store(void **state)
{
	struct fx *f = *state;
	const char *src = make_session(f, "anywhere", 1);
	size_t n;
	uint8_t *bytes = slurp(src, &n);
	assert_int_equal(mkdir(P(f, "elsewhere"), 0755), 0);
	const char *path = P(f, "elsewhere/my.log");
	spit(path, bytes, n, O_EXCL);
	free(bytes);
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_open_path(path, &lg, &err), 0);
	assert_string_equal(log_id(lg), "anywhere");
	assert_string_equal(log_path(lg), path);
	assert_int_equal(log_next_seq(lg), 3);
	struct stat st;
	assert_int_equal(lstat(P(f, "elsewhere/session.lock"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	/* the lock is the directory's: a second taker is refused */
	int dfd = open(P(f, "elsewhere"), O_RDONLY | O_DIRECTORY);
	FAILS(lock_take(-1, "x", dfd, &err), CERR_LOCKED);
	add_ok(lg, 3, B_TEXT, 4);
	log_close(lg);
	int lk = lock_take(-1, "x", dfd, &err);
	assert_true(lk >= 0);
	FAILS(log_open_path(path, &lg, &err), CERR_LOCKED);
	lock_release(lk);
	close(dfd);
	struct scan *s = scan_path(path);
	assert_int_equal(s->rev.next_seq, 4);
	scan_free(s);
	FAILS(log_open_path(P(f, "elsewhere/none.log"), &lg, &err), CERR_MISSING);
	FAILS(log_open_path(P(f, "nodir/x.log"), &lg, &err), CERR_MISSING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		LOGFX_TEST(test_create_writes_nothing_until_the_first_append),
		LOGFX_TEST(test_first_append_publishes_the_header_and_events),
		LOGFX_TEST(test_append_at_a_wrong_seq_conflicts_and_writes_nothing),
		LOGFX_TEST(test_torn_tail_cut_by_append),
		LOGFX_TEST(test_open_header_id_mismatch),
		LOGFX_TEST(test_open_path_reads_a_log_outside_the_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
