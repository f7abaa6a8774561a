/* test_fifo_catalog_faults.c — the persistence FIFO when the catalog fails
 * (the runs: support_fiforun.h): a write lock held by another connection
 * (the batch fails locked, leaving no gap), a projection or deletion mark
 * aborted after the log write (acknowledged, with the catalog behind), one
 * session's projection failing in a round of two; and a root fifo_new
 * cannot open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/fifo.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fiforun.h"
#include "tests/unit/support_fixture.h"

/* A fresh root with a FIFO on it, for the tests below. */
static void open_plain(const char *what)
{
	struct cerr err = {0};
	struct store *st;
	memset(&R, 0, sizeof R);
	snprintf(R.what, sizeof R.what, "%s", what);
	assert_int_equal(tmp_root("cairn-fifo-faults", R.dir, sizeof R.dir, R.root, sizeof R.root), 0);
	assert_int_equal(store_open(R.root, true, &st, &err), 0);
	store_close(st);
	run_loop_init();
	if (!(R.f = fifo_new(&R.loop, R.root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	R.nojudge = true;
}

static void close_plain(void)
{
	assert_int_equal(fifo_close_wait(R.f, deadline(30000)), 0);
	assert_int_equal(uv_run(&R.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&R.loop), 0);
	for (size_t i = 0; i < R.n; i++)
		cJSON_Delete(R.it[i].evs);
	rm_rf(R.dir);
}

static uint64_t next_on_disk(void)
{
	struct scan *s = run_read_log(R.root, STORE_SESSIONS, 0);
	assert_non_null(s);
	uint64_t n = s->rev.next_seq;
	scan_free(s);
	return n;
}

/* A connection of the test's own to the FIFO's catalog. The writer
 * records watermarks in short transactions of its own when it goes idle:
 * it waits for them as any other process would. */
static sqlite3 *open_db(void)
{
	sqlite3 *db;
	char *path = xasprintf("%s/%s", R.root, CATALOG_FILE);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	free(path);
	return db;
}

/* Another connection holding the catalog's write lock delays a batch; past
 * the busy timeout the batch fails locked, writes nothing and leaves no gap:
 * the same seq works once the lock is gone. */
static void test_busy_catalog_fails_locked_and_leaves_no_gap(void **state)
{
	(void)state;
	sqlite3 *db;
	open_plain("busy catalog");
	run_hist(0, 1, 2, true);
	run_settle();
	assert_true(R.it[0].ok);
	db = open_db();
	assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	run_hist(0, 3, 1, false);
	usleep(300 * 1000);
	assert_int_equal(R.it[1].calls, 0);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	run_settle();
	if (!R.it[1].ok)
		fail_msg("a briefly busy catalog failed the batch: %s", R.it[1].err.msg);
	assert_int_equal(R.it[1].r.next_seq, 4);

	assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	run_hist(0, 4, 1, false);
	run_meta(0, "{\"title\":\"busy\"}");
	run_settle();
	for (size_t i = 2; i < 4; i++)
		if (R.it[i].ok || R.it[i].err.cls != CERR_LOCKED)
			fail_msg("item %zu under a held catalog lock: %s (%s), want locked", i,
				 R.it[i].ok ? "ok" : cerr_class_name(R.it[i].err.cls), R.it[i].err.msg);
	assert_int_equal(next_on_disk(), 4);
	assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	run_hist(0, 4, 1, false);
	run_settle();
	if (!R.it[4].ok)
		fail_msg("after a locked batch the session does not go on: %s", R.it[4].err.msg);
	assert_int_equal(R.it[4].r.next_seq, 5);
	assert_int_equal(next_on_disk(), 5);
	close_plain();
}

static void sql(sqlite3 *db, const char *q)
{
	char *msg = NULL;
	if (sqlite3_exec(db, q, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", q, msg ? msg : "?");
}

/* The catalog fails after the log write is durable (a trigger aborts the
 * projection, then the deletion mark): the item may fail, but then its
 * error must say the outcome is unknown, since the log (or the trash)
 * holds what it did. A recovery save at the seq on disk goes on. */
static void test_catalog_fails_after_durable_write(void **state)
{
	(void)state;
	sqlite3 *db;
	open_plain("catalog failure");
	run_hist(0, 1, 2, true);
	run_hist(1, 1, 1, true);
	run_settle();
	assert_true(R.it[0].ok && R.it[1].ok);
	db = open_db();
	sql(db, "CREATE TRIGGER boom BEFORE UPDATE OF content_version ON sessions"
		" WHEN NEW.content_version > 3 BEGIN SELECT RAISE(ABORT, 'injected'); END");
	run_hist(0, 3, 1, false);
	run_settle();
	sql(db, "DROP TRIGGER boom");
	/* Durable, the catalog behind: a success that says so (a failure
	 * would invite a retry that appends twice). */
	const struct titem *t = &R.it[2];
	uint64_t on_disk = next_on_disk();
	assert_int_equal(on_disk, 4);
	if (!t->ok)
		fail_msg("a durable write whose projection failed was not acknowledged: %s", t->err.msg);
	assert_true(t->r.catalog_behind);
	assert_non_null(strstr(t->r.catalog_err.msg, "injected"));
	assert_int_equal(t->r.next_seq, 4);
	assert_int_equal(t->r.content_version, 4);
	/* The session goes on (no gap in its log): a full save builds on what
	 * was acknowledged and brings the catalog up to date. */
	run_fsave(0, on_disk, t->r.content_version, 1, 0);
	run_settle();
	if (!R.it[3].ok)
		fail_msg("a full save after a catalog failure: %s", R.it[3].err.msg);
	assert_false(R.it[3].r.catalog_behind);
	assert_int_equal(R.it[3].r.next_seq, on_disk + 1);
	assert_int_equal(R.it[3].r.content_version, on_disk + 1);

	sql(db, "CREATE TRIGGER boom BEFORE UPDATE OF deleted_at ON sessions"
		" WHEN NEW.deleted_at != 0 BEGIN SELECT RAISE(ABORT, 'injected'); END");
	R.it[R.n].sess = 1;
	run_put(1, fifo_delete(run_ids[1]), NULL, 0);
	run_settle();
	sql(db, "DROP TRIGGER boom");
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	struct scan *live = run_read_log(R.root, STORE_SESSIONS, 1);
	t = &R.it[4];
	assert_null(live); /* moved to the trash */
	if (!t->ok)
		fail_msg("a delete that moved the session was not acknowledged: %s", t->err.msg);
	assert_true(t->r.catalog_behind);
	assert_non_null(strstr(t->r.catalog_err.msg, "injected"));
	scan_free(live);
	close_plain();
}

/* Two sessions written in one round, and the projection of one fails (a
 * trigger aborts it): the round's transaction is run again without that
 * session, so the other's write is projected and acknowledged; the
 * failing one is acknowledged too (its log holds it) with the catalog
 * behind, and its next write brings its row up to date. */
static void test_one_projection_fails_in_a_round(void **state)
{
	(void)state;
	sqlite3 *db;
	open_plain("one projection fails");
	run_hist(0, 1, 2, true);
	run_hist(1, 1, 2, true);
	run_settle();
	assert_true(R.it[0].ok && R.it[1].ok);
	db = open_db();
	sql(db, "CREATE TRIGGER boom BEFORE UPDATE OF content_version ON sessions"
		" WHEN NEW.id = 'A' BEGIN SELECT RAISE(ABORT, 'injected'); END");
	fifo_pause(R.f, true);
	run_hist(0, 3, 1, false);
	run_hist(1, 3, 1, false);
	fifo_pause(R.f, false);
	run_settle();
	sql(db, "DROP TRIGGER boom");
	const struct titem *a = &R.it[2], *b = &R.it[3];
	if (!a->ok)
		fail_msg("A's durable write was not acknowledged: %s", a->err.msg);
	if (!a->r.catalog_behind || !strstr(a->r.catalog_err.msg, "injected"))
		fail_msg("A's receipt does not say the catalog is behind: %s", a->r.catalog_err.msg);
	if (!b->ok)
		fail_msg("B failed with A: %s", b->err.msg);
	assert_false(b->r.catalog_behind);
	assert_int_equal(b->r.next_seq, 4);
	assert_int_equal(b->r.content_version, 4);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT content_version FROM sessions WHERE id = 'B'",
					    -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), 4);
	sqlite3_finalize(q);
	run_hist(0, 4, 1, false);
	run_settle();
	if (!R.it[4].ok || R.it[4].r.catalog_behind)
		fail_msg("A's next write: %s", R.it[4].ok ? "catalog still behind" : R.it[4].err.msg);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT content_version FROM sessions WHERE id = 'A'",
					    -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), 5);
	sqlite3_finalize(q);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	close_plain();
}

/* A root that cannot be made: fifo_new fails with an error and leaves the
 * loop with nothing to close. */
static void test_fifo_new_on_a_bad_root_fails_leaving_nothing(void **state)
{
	(void)state;
	uv_loop_t loop;
	struct cerr err = {0};
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_null(fifo_new(&loop, "/dev/null/cairn-root", NULL, &err));
	assert_int_not_equal(err.cls, CERR_OK);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_catalog_fails_locked_and_leaves_no_gap),
		cmocka_unit_test(test_catalog_fails_after_durable_write),
		cmocka_unit_test(test_one_projection_fails_in_a_round),
		cmocka_unit_test(test_fifo_new_on_a_bad_root_fails_leaving_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
