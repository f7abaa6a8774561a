/* test_readlog.c — the one read path of a session's log (persist/
 * readlog.h): the watermark the caller gives applies, a log holding
 * another session where this one belongs is corrupt, a session deleted or
 * restored since it was listed is read where it is now, and one purged is
 * missing. Real files in a temporary data root. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "persist/catalog.h"
#include "persist/log.h"
#include "persist/readlog.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

struct fx {
	char dir[64], root[128];
	struct store *st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct cerr err;
	if (tmp_root("cairn-test-readlog", f->dir, sizeof f->dir, f->root, sizeof f->root) < 0 ||
	    store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	store_close(f->st);
	rm_rf(f->dir);
	free(f);
	return 0;
}

/* Session id with n batches of one user/message each; its durable mark. */
static struct log_mark mk(struct store *st, const char *id, int n)
{
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(st, id, "/w", NULL, &lg, &err), 0);
	cJSON *d = cJSON_Parse("{\"text\":\"hello\"}");
	struct log_event ev = {.type = "user/message", .data = d};
	for (int i = 0; i < n; i++)
		assert_int_equal(log_append(lg, log_next_seq(lg), &ev, 1, NULL, &err), 0);
	cJSON_Delete(d);
	struct log_mark m = log_durable(lg);
	log_close(lg);
	return m;
}

static struct session_ref ref_of(struct store *st, const char *id)
{
	struct session_ref ref;
	struct cerr err;
	assert_int_equal(store_resolve(st, id, &ref, &err), 0);
	return ref;
}

/* The same cut file reads torn without a watermark and corrupt with the
 * one that acknowledged the cut bytes: the caller's watermark is applied. */
static void test_readlog_applies_the_watermark_given(void **state)
{
	struct fx *f = *state;
	struct log_mark m = mk(f->st, "s1", 3);
	struct session_ref ref = ref_of(f->st, "s1");
	char *path = store_log_path(f->st, &ref, false);
	assert_int_equal(truncate(path, (off_t)m.rev.len - 3), 0);
	struct scan *s;
	struct cerr err;
	bool trash = false;
	assert_int_equal(readlog_session(f->st, &ref, &trash, NULL, &s, &err), 0);
	assert_int_equal(s->status, SCAN_TORN);
	scan_free(s);
	struct cat_watermark wm = catalog_watermark_of(m);
	assert_int_equal(readlog_session(f->st, &ref, &trash, &wm, &s, &err), 0);
	assert_int_equal(s->status, SCAN_CORRUPT);
	assert_true(s->wm_applied);
	scan_free(s);
	free(path);
}

/* A log copied into another session's folder is not that session: corrupt,
 * naming both ids; a log already damaged keeps its own reason. */
static void test_readlog_log_of_another_session_is_corrupt(void **state)
{
	struct fx *f = *state;
	mk(f->st, "s1", 1);
	mk(f->st, "s2", 2);
	struct session_ref r1 = ref_of(f->st, "s1"), r2 = ref_of(f->st, "s2");
	char *p1 = store_log_path(f->st, &r1, false), *p2 = store_log_path(f->st, &r2, false);
	size_t n;
	uint8_t *bytes = slurp(p1, &n);
	spit(p2, bytes, n, O_TRUNC);
	struct scan *s;
	struct cerr err;
	bool trash = false;
	assert_int_equal(readlog_session(f->st, &r2, &trash, NULL, &s, &err), 0);
	assert_int_equal(s->status, SCAN_CORRUPT);
	assert_int_equal(s->err.cls, CERR_CORRUPT);
	if (!strstr(s->err.msg, "'s1'") || !strstr(s->err.msg, "'s2'"))
		fail_msg("both ids not named: %s", s->err.msg);
	scan_free(s);
	spit(p2, bytes, 7, O_TRUNC); /* frame 0 incomplete: its own reason */
	assert_int_equal(readlog_session(f->st, &r2, &trash, NULL, &s, &err), 0);
	assert_int_equal(s->status, SCAN_CORRUPT);
	assert_null(strstr(s->err.msg, "holds session"));
	scan_free(s);
	free(bytes);
	free(p1);
	free(p2);
}

/* Listed live, deleted since: read in the trash and said so; restored:
 * read live again; purged: missing. */
static void test_readlog_follows_a_session_that_moved(void **state)
{
	struct fx *f = *state;
	mk(f->st, "s1", 2);
	struct session_ref ref = ref_of(f->st, "s1");
	struct cerr err;
	assert_int_equal(store_trash(f->st, &ref, NULL, &err), 0);
	struct scan *s;
	bool trash = false;
	assert_int_equal(readlog_session(f->st, &ref, &trash, NULL, &s, &err), 0);
	assert_true(trash);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, 3);
	scan_free(s);
	assert_int_equal(store_restore(f->st, &ref, &err), 0);
	assert_int_equal(readlog_session(f->st, &ref, &trash, NULL, &s, &err), 0);
	assert_false(trash);
	scan_free(s);
	assert_int_equal(store_trash(f->st, &ref, NULL, &err), 0);
	assert_int_equal(store_purge(f->st, &ref, &err), 0);
	FAILS(readlog_session(f->st, &ref, &trash, NULL, &s, &err), CERR_MISSING);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_readlog_applies_the_watermark_given),
		T(test_readlog_log_of_another_session_is_corrupt),
		T(test_readlog_follows_a_session_that_moved),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
