/* test_log_cursor.c — the session log writer's append cursor (persist/log.h;
 * the fixture: support_log.h): frames written and synced in two steps, a
 * failed sync taking back its frames and later ones, appends that never
 * re-read the log unless another writer moved it, and appends that follow a
 * truncated or replaced file (refusing another session's log). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_log.h"

/* ---- the append cursor ---- */

static int preads;
static ssize_t counting_pread(int fd, void *b, size_t n, off_t off)
{
	preads++;
	return fsops_real.pread(fd, b, n, off);
}
static struct fsops counting_ops;

static void count_preads(void)
{
	counting_ops = fsops_real;
	counting_ops.pread = counting_pread;
	preads = 0;
	fsops = &counting_ops;
}

/* Two-step appends: log_write writes frames nobody may call durable yet
 * (log_durable still names the last sync, log_pending says so), several
 * queue up, and one log_sync makes them all durable. */
static int write_only(struct log *lg, uint64_t expect, const char *batch, struct cerr *err)
{
	cJSON *arr = cJSON_Parse(batch);
	assert_non_null(arr);
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
	struct log_event *evs = calloc(n, sizeof *evs);
	for (cJSON *c = arr->child; c; c = c->next, i++) {
		const cJSON *turn = cJSON_GetObjectItem(c, "turn");
		evs[i].type = cJSON_GetObjectItem(c, "type")->valuestring;
		evs[i].turn = turn ? turn->valuestring : NULL;
		evs[i].data = cJSON_GetObjectItem(c, "data");
	}
	uint64_t next = 0;
	int r = log_write(lg, expect, evs, n, &next, err);
	if (r == 0)
		assert_int_equal(next, expect + n);
	free(evs);
	cJSON_Delete(arr);
	return r;
}

static void test_written_frames_are_pending_until_synced(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "two", NULL, NULL, &lg, &err), 0);
	/* A first publication is durable at once: nothing pending. */
	assert_int_equal(write_only(lg, 1, B_TURN, &err), 0);
	assert_false(log_pending(lg));
	assert_int_equal(log_durable(lg).rev.next_seq, 3);
	assert_int_equal(log_sync(lg, &err), 0);
	assert_int_equal(write_only(lg, 3, B_TEXT, &err), 0);
	assert_int_equal(write_only(lg, 4, B_TEXT, &err), 0);
	assert_true(log_pending(lg));
	assert_int_equal(log_next_seq(lg), 5);
	assert_int_equal(log_durable(lg).rev.len, 0); /* not durable yet: no watermark */
	/* The seq check sees the unsynced frames. */
	assert_int_equal(write_only(lg, 4, B_TEXT, &err), -1);
	assert_int_equal(err.cls, CERR_CONFLICT);
	assert_int_equal(log_sync(lg, &err), 0);
	assert_false(log_pending(lg));
	struct log_mark d = log_durable(lg);
	assert_int_equal(d.rev.next_seq, 5);
	assert_int_equal(log_sync(lg, &err), 0); /* nothing pending: a no-op */
	log_close(lg);
	struct scan *s = scan_path(P(f, "root/sessions/_no-cwd/two/session.jsonl.zst"));
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, 5);
	assert_int_equal(s->rev.len, d.rev.len);
	scan_free(s);
}

/* log_sync in steps: frames written after log_sync_begin are not part of
 * that sync (still pending after log_sync_end); when the sync failed,
 * log_sync_end takes back its frames and those written after them, and
 * the next write builds on what the file holds. */
static void test_failed_sync_takes_back_its_frames_and_later_ones(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "steps", NULL, NULL, &lg, &err), 0);
	assert_int_equal(write_only(lg, 1, B_TURN, &err), 0); /* published: durable */
	assert_int_equal(write_only(lg, 3, B_TEXT, &err), 0);
	assert_true(log_sync_begin(lg));
	assert_false(log_pending(lg));
	assert_int_equal(write_only(lg, 4, B_TEXT, &err), 0); /* during the sync */
	assert_int_equal(log_sync_end(lg, log_sync_fd(lg), &err), 0);
	assert_true(log_pending(lg));
	assert_int_equal(log_durable(lg).rev.len, 0); /* seq 4 is not synced yet */
	assert_int_equal(log_sync(lg, &err), 0);
	assert_int_equal(log_durable(lg).rev.next_seq, 5);
	assert_false(log_sync_begin(lg)); /* nothing to take */

	assert_int_equal(write_only(lg, 5, B_TEXT, &err), 0);
	assert_true(log_sync_begin(lg));
	assert_int_equal(write_only(lg, 6, B_TEXT, &err), 0);
	assert_int_equal(log_sync_end(lg, EIO, &err), -1); /* as if it failed */
	assert_int_equal(err.cls, CERR_IO);
	assert_int_equal(err.sys_errno, EIO);
	assert_true(err.outcome_unknown);
	assert_false(log_pending(lg));
	assert_int_equal(log_next_seq(lg), 5);
	struct scan *s = scan_path(P(f, "root/sessions/_no-cwd/steps/session.jsonl.zst"));
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, 5); /* both frames taken back */
	scan_free(s);
	assert_int_equal(write_only(lg, 5, B_TEXT, &err), 0);
	assert_int_equal(log_sync(lg, &err), 0);
	assert_int_equal(log_durable(lg).rev.next_seq, 6);
	log_close(lg);
}

static void test_appends_do_not_reread_the_log(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	count_preads();
	assert_int_equal(log_create(f->st, "cur", NULL, NULL, &lg, &err), 0);
	add_ok(lg, 1, B_TURN, 3);
	for (uint64_t i = 3; i < 10; i++)
		add_ok(lg, i, B_TEXT, i + 1);
	assert_int_equal(preads, 0);
	log_close(lg);
	assert_int_equal(log_open(f->st, "cur", &lg, &err), 0);
	assert_true(preads > 0);
	preads = 0;
	for (uint64_t i = 10; i < 20; i++)
		add_ok(lg, i, B_TEXT, i + 1);
	assert_int_equal(preads, 0);
	/* another writer's frame: the cursor no longer matches, so re-read */
	struct buf fr = BUF_INIT;
	text_frame(&fr, 20);
	spit(log_path(lg), fr.p, fr.len, O_APPEND);
	struct cerr e2;
	assert_int_equal(add(lg, 20, B_TEXT, NULL, &e2), -1);
	assert_int_equal(e2.cls, CERR_CONFLICT);
	assert_true(preads > 0);
	assert_int_equal(log_next_seq(lg), 21);
	preads = 0;
	add_ok(lg, 21, B_TEXT, 22);
	assert_int_equal(preads, 0);
	buf_release(&fr);
	log_close(lg);
	fsops = &fsops_real;
	struct scan *s = scan_path(P(f, "root/sessions/_no-cwd/cur/session.jsonl.zst"));
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, 22);
	assert_string_equal(s->events[20].data->child->valuestring, "from elsewhere");
	scan_free(s);
}

static void test_append_after_truncation_builds_on_the_file(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "trunc", 3); /* seqs 0..4, three frames */
	struct log *lg = open_ok(f, "trunc");
	struct cerr err;
	const struct scan *s = log_scan(lg);
	assert_int_equal(s->n_frames, 4);
	uint64_t cut = s->frames[3].offset;
	assert_int_equal(truncate(path, (off_t)cut), 0);
	FAILS(add(lg, 5, B_TEXT, NULL, &err), CERR_CONFLICT);
	assert_int_equal(log_next_seq(lg), 4);
	add_ok(lg, 4, B_TEXT, 5);
	/* truncated inside a frame: a torn tail to cut, then the append */
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - 3), 0);
	add_ok(lg, 4, B_TEXT, 5);
	assert_true(log_cut_bytes(lg) > 0);
	log_close(lg);
	struct scan *t = scan_path(path);
	assert_int_equal(t->status, SCAN_OK);
	assert_int_equal(t->n_frames, 4);
	assert_int_equal(t->rev.next_seq, 5);
	scan_free(t);
}

static void test_append_follows_a_replaced_file_refuses_another_log(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "repl", 1);
	const char *other = make_session(f, "other", 1);
	struct log *lg = open_ok(f, "repl");
	struct cerr err;
	size_t n;
	uint8_t *bytes = slurp(path, &n);
	const char *copy = P(f, "root/sessions/_no-cwd/repl/copy");
	spit(copy, bytes, n, O_EXCL);
	assert_int_equal(rename(copy, path), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	add_ok(lg, 3, B_TEXT, 4); /* lands in the new file */
	assert_int_equal(log_revision_of(lg).ino, st.st_ino);
	struct scan *s = scan_path(path);
	assert_int_equal(s->rev.next_seq, 4);
	scan_free(s);
	/* replaced by another session's log: refuse */
	free(bytes);
	bytes = slurp(other, &n);
	spit(copy, bytes, n, O_EXCL);
	assert_int_equal(rename(copy, path), 0);
	assert_int_equal(add(lg, 3, B_TEXT, NULL, &err), -1);
	assert_true(err.cls == CERR_CONFLICT || err.cls == CERR_CORRUPT);
	assert_same_file(path, bytes, n);
	free(bytes);
	log_close(lg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		LOGFX_TEST(test_written_frames_are_pending_until_synced),
		LOGFX_TEST(test_failed_sync_takes_back_its_frames_and_later_ones),
		LOGFX_TEST(test_appends_do_not_reread_the_log),
		LOGFX_TEST(test_append_after_truncation_builds_on_the_file),
		LOGFX_TEST(test_append_follows_a_replaced_file_refuses_another_log),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
