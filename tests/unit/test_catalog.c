/* test_catalog.c — persist/catalog.h on real files and real SQLite: file
 * modes, schema version, concurrent connections and processes, listing, and
 * reconciliation with the directories. The projection of logs is tested in
 * test_catalog_project.c; the shared fixture is support_catalog.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/clock.h"
#include "persist/catalog.h"
#include "persist/lock.h"
#include "persist/log.h"
#include "persist/store.h"
#include "tests/unit/support_catalog.h"
#include "tests/unit/support_fixture.h"

static int setup(void **state)
{
	return catfx_setup(state, "cairn-test-catalog");
}

static void expect_modes(const char *root)
{
	static const char *const names[] = {CATALOG_FILE, CATALOG_FILE "-wal", CATALOG_FILE "-shm"};
	for (size_t i = 0; i < 3; i++) {
		char p[512];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", root, names[i]);
		if (stat(p, &st) < 0)
			fail_msg("%s: %s", p, strerror(errno));
		assert_int_equal(st.st_mode & 07777, 0600);
	}
}

/* Close f's catalog and mark its file with schema version v. */
static void close_and_mark_schema(struct fx *f, int v)
{
	catalog_close(f->cat);
	f->cat = NULL;
	sqlite3 *db = raw_open(f->root);
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA user_version=%d", v);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* ---- files, schema, connections ---- */

static void test_catalog_files_are_0600_whatever_the_umask(void **state)
{
	struct fx *f = *state;
	static const mode_t masks[] = {0, 077, 022};
	for (size_t i = 0; i < 3; i++) {
		char root[192], p[256];
		struct store *st;
		struct catalog *c;
		struct cerr err;
		snprintf(root, sizeof root, "%s/umask%zu", f->dir, i);
		mode_t old = umask(masks[i]);
		assert_int_equal(store_open(root, true, &st, &err), 0);
		if (catalog_open(st, &c, &err) < 0)
			fail_msg("catalog_open: %s", err.msg);
		expect_modes(root); /* new: index 0600, and -wal, -shm while open */
		catalog_close(c);
		/* A loosened index and sidecars left 0644 are tightened. */
		static const char *const names[] = {CATALOG_FILE, CATALOG_FILE "-wal", CATALOG_FILE "-shm"};
		for (size_t k = 0; k < 3; k++) {
			snprintf(p, sizeof p, "%s/%s", root, names[k]);
			int fd = open(p, O_RDWR | O_CREAT, 0644);
			assert_true(fd >= 0);
			assert_int_equal(fchmod(fd, 0644), 0);
			close(fd);
		}
		if (catalog_open(st, &c, &err) < 0)
			fail_msg("catalog_open again: %s", err.msg);
		expect_modes(root);
		catalog_close(c);
		store_close(st);
		umask(old);
	}
}

/* Turn a catalog's docs table back into schema 4's: no indexed column,
 * triggers without conditions. */
#define SCHEMA_4_DOCS                                                                              \
	"DROP INDEX docs_open; DROP TRIGGER docs_ai; DROP TRIGGER docs_ad; DROP TRIGGER docs_au;"  \
	"ALTER TABLE docs DROP COLUMN indexed;"                                                     \
	"CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN"                                        \
	"  INSERT INTO fts_words(rowid, body) VALUES (new.docid, new.body);"                       \
	"END;"                                                                                     \
	"CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN"                                        \
	"  INSERT INTO fts_words(fts_words, rowid, body) VALUES ('delete', old.docid, old.body);"  \
	"END;"                                                                                     \
	"CREATE TRIGGER docs_au AFTER UPDATE ON docs BEGIN"                                        \
	"  INSERT INTO fts_words(fts_words, rowid, body) VALUES ('delete', old.docid, old.body);"  \
	"  INSERT INTO fts_words(rowid, body) VALUES (new.docid, new.body);"                       \
	"END;"

/* Turn a catalog's watermarks back into schema 5's: columns of the
 * session rows, keyed by the file's device and inode. */
#define SCHEMA_5_WM                                                                                \
	"DROP TABLE watermarks;"                                                                   \
	"ALTER TABLE sessions ADD COLUMN wm_len INTEGER; ALTER TABLE sessions ADD COLUMN wm_seq INTEGER;" \
	"ALTER TABLE sessions ADD COLUMN wm_dev INTEGER; ALTER TABLE sessions ADD COLUMN wm_ino INTEGER;"

/* A search for q finds n hits. */
static void expect_hits(struct fx *f, const char *q, size_t n)
{
	struct cat_hit *h;
	size_t got;
	struct cerr err;
	if (catalog_search(f->cat, q, 0, false, &h, &got, NULL, &err) < 0)
		fail_msg("search '%s': %s", q, err.msg);
	cat_hits_free(h, got);
	if (got != n)
		fail_msg("search '%s': %zu hits, want %zu", q, got, n);
}

static void test_catalog_schema_is_wal_versioned_and_kept_on_reopen(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" USER("x") "]"));
	assert_int_equal(sync_ok(f), 1);
	raw_expect(f->root, "PRAGMA journal_mode", "wal");
	raw_expect(f->root, "PRAGMA user_version", CATALOG_SCHEMA_STR);
	raw_expect(f->root, "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE"
			    " name IN ('sessions','docs','claims','fts_words') ORDER BY name)",
		   "claims,docs,fts_words,sessions");
	catalog_close(f->cat); /* reopened: kept */
	f->cat = NULL;
	expect_row(f, "s1", "title=x|status=idle");
	bool ok = false;
	char *msg = NULL;
	struct cerr err;
	assert_int_equal(catalog_integrity(f->cat, &ok, &msg, &err), 0);
	assert_true(ok);
	assert_string_equal(msg, "ok");
	free(msg);
	/* A newer schema is refused and left alone. */
	close_and_mark_schema(f, 99);
	assert_int_equal(catalog_open(f->st, &f->cat, &err), -1);
	assert_int_equal(err.cls, CERR_UNSUPPORTED);
	assert_non_null(strstr(err.msg, "99"));
	f->cat = NULL;
	raw_expect(f->root, "PRAGMA user_version", "99");
	/* An older schema is dropped and rebuilt from the logs. */
	close_and_mark_schema(f, 1);
	assert_int_equal(catalog_open(f->st, &f->cat, &err), 0);
	raw_expect(f->root, "PRAGMA user_version", CATALOG_SCHEMA_STR);
	raw_expect(f->root, "SELECT count(*) FROM sessions", "0");
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "s1", "title=x|status=idle");
	/* Schema 3 (the order index without id, and as schema 4 no mark of
	 * open turns' text) is migrated in place: rows kept, nothing to read
	 * again, the text still found, and a listing walks the index without
	 * sorting. */
	catalog_close(f->cat);
	f->cat = NULL;
	sqlite3 *db = raw_open(f->root);
	assert_int_equal(sqlite3_exec(db, SCHEMA_5_WM SCHEMA_4_DOCS "DROP INDEX sessions_order;"
					  "CREATE INDEX sessions_order ON sessions(pinned DESC, updated_at DESC);"
					  "PRAGMA user_version=3", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(catalog_open(f->st, &f->cat, &err), 0);
	raw_expect(f->root, "PRAGMA user_version", CATALOG_SCHEMA_STR);
	raw_expect(f->root, "SELECT count(*) FROM sessions", "1");
	raw_expect(f->root, "SELECT count(*) FROM docs WHERE indexed = 1", "1");
	assert_int_equal(sync_ok(f), 0);
	expect_hits(f, "x", 1);
	raw_expect(f->root, "SELECT sql FROM sqlite_master WHERE name = 'sessions_order'",
		   "CREATE INDEX sessions_order ON sessions(pinned DESC, updated_at DESC, id DESC)");
	db = raw_open(f->root);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN SELECT id FROM sessions ORDER BY"
						" pinned DESC, updated_at DESC, id DESC", -1, &q, NULL),
			 SQLITE_OK);
	bool sorts = false;
	while (sqlite3_step(q) == SQLITE_ROW)
		sorts |= strstr((const char *)sqlite3_column_text(q, 3), "TEMP B-TREE") != NULL;
	sqlite3_finalize(q);
	sqlite3_close(db);
	assert_false(sorts);
	expect_row(f, "s1", "title=x|status=idle");
}

/* The scan of session id's log file (the caller frees it). */
static struct scan *scan_of(struct fx *f, const char *id, struct stat *sb)
{
	char path[512];
	path_of(f, STORE_SESSIONS, "/p", id, LOG_FILE, path, sizeof path);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, sb), 0);
	struct scan *s;
	struct cerr err;
	assert_int_equal(scan_fd(fd, &s, &err), 0);
	close(fd);
	return s;
}

/* Schema 5 kept watermarks in the session rows, keyed by (device, inode),
 * where a reindex cleared them. Migrated in place: each one still true of
 * its file moves to the watermarks table keyed by the digest of the log's
 * header frame, and goes on telling damage from a torn tail; one whose
 * file was replaced since applied to nothing and is dropped. */
static void test_schema_5_watermarks_migrate_by_header_or_drop(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" USER("one") "]", "[" USER("two") "]"));
	make(f, "s2", "/p", NULL, B("[" USER("three") "]"));
	assert_int_equal(sync_ok(f), 2);
	catalog_close(f->cat);
	f->cat = NULL;
	struct stat b1, b2;
	struct scan *s1 = scan_of(f, "s1", &b1), *s2 = scan_of(f, "s2", &b2);
	char sql[1024];
	snprintf(sql, sizeof sql, SCHEMA_5_WM
		 "UPDATE sessions SET wm_len = %lld, wm_seq = %llu, wm_dev = %lld, wm_ino = %lld"
		 " WHERE id = 's1';"
		 "UPDATE sessions SET wm_len = %lld, wm_seq = %llu, wm_dev = %lld, wm_ino = %lld"
		 " WHERE id = 's2';"
		 "PRAGMA user_version=5",
		 (long long)b1.st_size, (unsigned long long)s1->rev.next_seq, (long long)b1.st_dev,
		 (long long)b1.st_ino, (long long)b2.st_size, (unsigned long long)s2->rev.next_seq,
		 (long long)b2.st_dev, (long long)b2.st_ino + 1);
	sqlite3 *db = raw_open(f->root);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	struct cerr err;
	if (catalog_open(f->st, &f->cat, &err) < 0)
		fail_msg("open: %s", err.msg);
	raw_expect(f->root, "PRAGMA user_version", CATALOG_SCHEMA_STR);
	raw_expect(f->root, "SELECT count(*) FROM pragma_table_info('sessions') WHERE name LIKE 'wm%'",
		   "0");
	raw_expect(f->root, "SELECT count(*) FROM sessions", "2");
	struct cat_watermark wm;
	assert_int_equal(catalog_get_watermark(f->cat, "s1", &wm, &err), 0);
	assert_true(wm.known);
	assert_int_equal(wm.rev.len, (uint64_t)b1.st_size);
	assert_int_equal(wm.rev.next_seq, s1->rev.next_seq);
	assert_true(s1->head_known);
	assert_memory_equal(wm.head, s1->head, SHA256_LEN);
	assert_int_equal(catalog_get_watermark(f->cat, "s2", &wm, &err), 0);
	assert_false(wm.known);
	assert_int_equal(sync_ok(f), 0); /* the projection was kept */
	/* The watermark still works: a log cut short below it is damage,
	 * not a torn write. */
	char path[512];
	path_of(f, STORE_SESSIONS, "/p", "s1", LOG_FILE, path, sizeof path);
	assert_int_equal(truncate(path, b1.st_size - 3), 0);
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "s1", "status=corrupt|error~durable watermark");
	scan_free(s1);
	scan_free(s2);
}

/* Turn a catalog's docs table back into schema 6's: one row per
 * (session, turn, role), no segments, no tail. */
#define SCHEMA_6_DOCS                                                                              \
	"DROP INDEX docs_open; DROP TRIGGER docs_ai; DROP TRIGGER docs_ad; DROP TRIGGER docs_au;"  \
	"ALTER TABLE docs RENAME TO d7;"                                                            \
	"CREATE TABLE docs (docid INTEGER PRIMARY KEY, session TEXT NOT NULL, turn TEXT NOT NULL," \
	" role TEXT NOT NULL, body TEXT NOT NULL, indexed INTEGER NOT NULL DEFAULT 1,"              \
	" UNIQUE(session, turn, role));"                                                            \
	"INSERT INTO docs SELECT docid, session, turn, role, body, indexed FROM d7; DROP TABLE d7;" \
	"CREATE INDEX docs_open ON docs(session) WHERE indexed = 0;"                                \
	"CREATE TRIGGER docs_ai AFTER INSERT ON docs WHEN new.indexed BEGIN"                        \
	"  INSERT INTO fts_words(rowid, body) VALUES (new.docid, new.body);"                       \
	"END;"                                                                                     \
	"CREATE TRIGGER docs_ad AFTER DELETE ON docs WHEN old.indexed BEGIN"                       \
	"  INSERT INTO fts_words(fts_words, rowid, body) VALUES ('delete', old.docid, old.body);"  \
	"END;"                                                                                     \
	"CREATE TRIGGER docs_au AFTER UPDATE OF body, indexed ON docs BEGIN"                       \
	"  INSERT INTO fts_words(fts_words, rowid, body) SELECT 'delete', old.docid, old.body"     \
	"   WHERE old.indexed;"                                                                    \
	"  INSERT INTO fts_words(rowid, body) SELECT new.docid, new.body WHERE new.indexed;"       \
	"END;"

/* Schema 6 (a document per role and turn, an open turn's text whole in
 * one row) is migrated in place to segments: each row is part 0 with its
 * docid, so the word index stays valid; an open turn's text becomes its
 * tail, and both are still found; its turn ending indexes it. */
static void test_schema_6_documents_migrate_in_place(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL,
	     B("[" START("t0") ",{'type':'user/message','turn':'t0','data':{'text':'alpha first'}}]",
	       "[" END("t0", "completed") "]",
	       "[" START("t1") ",{'type':'assistant/text','turn':'t1','data':{'text':'open beta'}}]"));
	assert_int_equal(sync_ok(f), 1);
	catalog_close(f->cat);
	f->cat = NULL;
	sqlite3 *db = raw_open(f->root);
	assert_int_equal(sqlite3_exec(db, SCHEMA_6_DOCS "PRAGMA user_version=6", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	struct cerr err;
	if (catalog_open(f->st, &f->cat, &err) < 0)
		fail_msg("open: %s", err.msg);
	raw_expect(f->root, "PRAGMA user_version", CATALOG_SCHEMA_STR);
	raw_expect(f->root, "SELECT group_concat(turn || '/' || part || '/' || indexed || '/' || tail,"
			    " ' ') FROM (SELECT * FROM docs ORDER BY turn)", "t0/0/1/0 t1/0/0/9");
	assert_int_equal(sync_ok(f), 0); /* nothing to read again */
	expect_hits(f, "alpha", 1);
	expect_hits(f, "beta", 1);
	bool ok = false;
	char *msg = NULL;
	assert_int_equal(catalog_integrity(f->cat, &ok, &msg, &err), 0);
	assert_true(ok);
	free(msg);
	append_sync(f, "s1", "[" END("t1", "completed") "]");
	raw_expect(f->root, "SELECT count(*) FROM docs WHERE NOT indexed", "0");
	expect_hits(f, "beta", 1);
}

static void test_second_connection_reads_during_a_write(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" START("t1") "]"));
	sync_ok(f);
	struct catalog *c2;
	struct cerr err;
	assert_int_equal(catalog_open(f->st, &c2, &err), 0);
	int lock = hold_lock(f, "s1"); /* running: its writer holds the lock */
	assert_int_equal(catalog_set_status(c2, "s1", "running", &err), 0);
	expect_row(f, "s1", "status=running");
	/* A write transaction on one connection does not block readers. */
	assert_int_equal(catalog_begin(c2, &err), 0);
	assert_int_equal(catalog_set_status(c2, "s1", NULL, &err), 0);
	expect_row(f, "s1", "status=running"); /* not committed yet */
	assert_int_equal(catalog_commit(c2, &err), 0);
	expect_row(f, "s1", "status=interrupted");
	lock_release(lock);
	catalog_close(c2);
}

/* In a forked child a crash ends it (cmocka's handlers would go on running
 * the tests there). Children fork before the parent opens any connection:
 * SQLite state must not cross a fork. */
static void child_init(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], SIG_DFL);
}

static void expect_exit0(pid_t pid)
{
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	if (WIFSIGNALED(ws))
		fail_msg("child killed by signal %d", WTERMSIG(ws));
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
}

/* A child opens the catalog, holds a write transaction for hold_ms, then
 * commits. Returns once it holds the lock. */
static pid_t child_holding(struct fx *f, int hold_ms)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_init();
		struct store *st;
		struct catalog *c;
		struct cerr e;
		int bad = store_open(f->root, false, &st, &e) < 0 || catalog_open(st, &c, &e) < 0 ||
			  catalog_sync(c, st, NULL, &e) < 0 || catalog_begin(c, &e) < 0 ||
			  catalog_set_status(c, "s1", "running", &e) < 0;
		if (bad)
			fprintf(stderr, "child: %s\n", e.msg);
		(void)!write(p[1], bad ? "x" : "k", 1);
		usleep((useconds_t)hold_ms * 1000);
		_exit(bad || catalog_commit(c, &e) < 0);
	}
	close(p[1]);
	char ch = 0;
	assert_int_equal(read(p[0], &ch, 1), 1);
	close(p[0]);
	assert_int_equal(ch, 'k');
	return pid;
}

static void test_write_waits_out_another_process_writing(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" START("t1") "]"));
	make(f, "s2", "/p", NULL, B("[" START("t1") "]"));
	pid_t pid = child_holding(f, 400);
	uint64_t t0 = clock_mono_ns();
	struct cerr err;
	if (catalog_set_status(cat(f), "s2", "unsaved", &err) < 0)
		fail_msg("set_status while another process writes: %s (class %d)", err.msg, err.cls);
	assert_true(clock_mono_ns() - t0 >= 250000000u); /* it waited for the other writer */
	expect_exit0(pid);
	raw_expect(f->root, "SELECT status_override FROM sessions WHERE id = 's1'", "running");
	expect_row(f, "s1", "status=interrupted"); /* set by a process now gone: stale */
	expect_row(f, "s2", "status=unsaved");
}

static void test_busy_beyond_timeout_locked(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" START("t1") "]"));
	pid_t pid = child_holding(f, 6500);
	uint64_t t0 = clock_mono_ns();
	struct cerr err;
	assert_int_equal(catalog_set_status(cat(f), "s1", "unsaved", &err), -1);
	assert_int_equal(err.cls, CERR_LOCKED);
	uint64_t waited = (clock_mono_ns() - t0) / 1000000;
	assert_true(waited >= 4500 && waited < 6400);
	expect_exit0(pid);
}

/* One of two processes on a fresh catalog: its own log appended and
 * projected batch by batch, status changes, listing and search. */
static int writer(const char *root, const char *id, int rounds)
{
	struct store *st;
	struct catalog *c;
	struct log *lg;
	struct cerr e;
	int bad = 0;
	if (store_open(root, false, &st, &e) < 0 || catalog_open(st, &c, &e) < 0 ||
	    log_open(st, id, &lg, &e) < 0)
		return fprintf(stderr, "%s: open: %s\n", id, e.msg), 100;
	struct session_ref ref = {"", "-p"};
	snprintf(ref.id, sizeof ref.id, "%s", id);
	struct log_mark d = {log_revision_of(lg), 0, {0}};
	struct cat_watermark wm = wm_of(d);
	if (catalog_project_scan(c, &ref, log_scan(lg), 0, &wm, &e) < 0)
		bad++, fprintf(stderr, "%s: project_scan: %s\n", id, e.msg);
	for (int i = 0; i < rounds && !bad; i++) {
		char text[64], turn[16];
		snprintf(text, sizeof text, "word%s round%d", id, i);
		snprintf(turn, sizeof turn, "t%d", i);
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "text", text);
		struct log_event evs[2] = {{"turn/start", turn, false, NULL, 0},
					   {"user/message", turn, false, data, 0}};
		uint64_t first = log_next_seq(lg), ver = 0;
		struct cat_session *v = NULL;
		struct cat_hit *h = NULL;
		size_t nv = 0, nh = 0;
		if (log_append(lg, first, evs, 2, NULL, &e) < 0)
			bad++, fprintf(stderr, "%s: append: %s\n", id, e.msg);
		d = log_durable(lg);
		wm = wm_of(d);
		if (!bad && (catalog_project_batch(c, id, first, clock_unix_ms(), evs, 2, &wm, &ver, &e) < 0 ||
			     catalog_set_status(c, id, i % 2 ? "running" : NULL, &e) < 0 ||
			     catalog_list(c, true, false, NULL, 0, &v, &nv, &e) < 0 ||
			     catalog_search(c, text, 0, false, &h, &nh, NULL, &e) < 0))
			bad++, fprintf(stderr, "%s: round %d: %s (class %d)\n", id, i, e.msg, e.cls);
		else if (!bad && (ver != first + 2 || nv < 1 || nv > 2 || nh != 1))
			bad++, fprintf(stderr, "%s: round %d: version %llu, %zu sessions, %zu hits\n", id, i,
				       (unsigned long long)ver, nv, nh);
		cJSON_Delete(data);
		cat_sessions_free(v, nv);
		cat_hits_free(h, nh);
	}
	log_close(lg);
	catalog_close(c);
	store_close(st);
	return bad;
}

static void test_two_writer_processes_lose_no_batch(void **state)
{
	struct fx *f = *state;
	make(f, "sA", "/p", NULL, B("[" META("{}") "]"));
	make(f, "sB", "/p", NULL, B("[" META("{}") "]"));
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_init();
		_exit(writer(f->root, "sA", 60) != 0);
	}
	int bad = writer(f->root, "sB", 60);
	expect_exit0(pid);
	assert_int_equal(bad, 0);
	expect_row(f, "sA", "turns=60|version=122|wm~/122|prompt=wordsA round59");
	expect_row(f, "sB", "turns=60|version=122|wm~/122|prompt=wordsB round59");
	assert_int_equal(sync_ok(f), 0); /* the batches recorded the files' identity */
}

/* ---- listing and reconciliation ---- */

static void test_list_pinned_first_then_newest_by_project_and_limit(void **state)
{
	struct fx *f = *state;
	make(f, "a", "/p/x", NULL, B("[" USER("a") ",{'type':'step/end','turn':'t','t':100}]"));
	make(f, "b", "/p/x", NULL, B("[{'type':'turn/start','turn':'t','t':300}]"));
	make(f, "c", "/p/y", NULL, B("[{'type':'turn/start','turn':'t','t':20}]",
				       "[{'type':'session/meta','data':{'pinned':true},'t':200}]"));
	make(f, "d", "/p/x", NULL, B("[{'type':'turn/start','turn':'t','t':400}]"));
	make(f, "e", "/p/y", NULL, B("[{'type':'session/meta','data':{'pinned':true},'t':150}]"));
	struct session_ref ref = {"d", "-p-x"};
	int64_t ms = 0;
	struct cerr err;
	assert_int_equal(store_trash(f->st, &ref, &ms, &err), 0);
	assert_int_equal(sync_ok(f), 5);
	list(f, false, false, NULL, 0, "c e b a");
	list(f, true, false, NULL, 0, "c e d b a");
	list(f, false, true, NULL, 0, "d");
	list(f, true, true, NULL, 0, "d");
	list(f, false, false, "/p/x", 0, "b a");
	list(f, true, false, "/p/x", 0, "d b a");
	list(f, false, false, "/p/y", 0, "c e");
	list(f, false, false, "/p/nothing", 0, "");
	list(f, false, false, NULL, 2, "c e");
	list(f, true, false, NULL, 3, "c e d");
	list(f, false, false, "/p/x", 1, "b");
	expect_row(f, "a", "updated=+100|deleted=0|pinned=0");
	expect_row(f, "c", "updated=+200|pinned=1");
	char w[64];
	snprintf(w, sizeof w, "updated=+400|deleted=%lld", (long long)ms); /* the ctime reported */
	expect_row(f, "d", w);
}

static void test_sync_follows_growth_trash_restore_and_purge(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'k1'}}," USER("one") "]"));
	assert_int_equal(sync_ok(f), 1);
	assert_int_equal(sync_ok(f), 0); /* nothing changed */
	append_to(f, "s1", "[" END("t1", "completed") "," START("t2") "," USER("grown") "]");
	assert_int_equal(sync_ok(f), 1); /* the log grew: re-projected */
	expect_row(f, "s1", "turns=2|prompt=grown|version=6|status=interrupted");
	assert_int_equal(sync_ok(f), 0);
	/* Trash: marked with the ctime the store reported. */
	struct session_ref ref = {"s1", "-p"};
	int64_t ms = 0;
	struct cerr err;
	struct cat_session s;
	char w[64];
	assert_int_equal(store_trash(f->st, &ref, &ms, &err), 0);
	assert_int_equal(sync_ok(f), 1);
	snprintf(w, sizeof w, "prompt=grown|deleted=%lld", (long long)ms);
	expect_row(f, "s1", w);
	list(f, false, false, NULL, 0, "");
	list(f, false, true, NULL, 0, "s1");
	assert_int_equal(sync_ok(f), 0);
	/* Restored by hand: live again. */
	char from[512], to[512];
	path_of(f, STORE_TRASH, "/p", "s1", NULL, from, sizeof from);
	path_of(f, STORE_SESSIONS, "/p", "s1", NULL, to, sizeof to);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "s1", "deleted=0|turns=2");
	/* Gone for good: the row, its text and its claims are forgotten. */
	rm_rf(to);
	assert_int_equal(sync_ok(f), 1);
	assert_int_equal(catalog_get(cat(f), "s1", &s, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	list(f, true, false, NULL, 0, "");
	raw_expect(f->root, "SELECT (SELECT count(*) FROM docs) + (SELECT count(*) FROM claims)", "0");
	assert_int_equal(sync_ok(f), 0);
}


/* ---- the WAL's bound and reading only ---- */

/* Sessions w<from>..w<from+n-1> of about 40 KiB of words each, synced. */
static void write_wordy(struct fx *f, int from, int n)
{
	static char batch[48 * 1024];
	static unsigned seed = 1;
	for (int i = from; i < from + n; i++) {
		size_t len = (size_t)snprintf(batch, sizeof batch,
					      "[{'type':'user/message','data':{'text':'");
		while (len < 40 * 1024) {
			seed = seed * 1103515245u + 12345u;
			len += (size_t)snprintf(batch + len, sizeof batch - len, "w%u ", (seed >> 8) % 50000);
		}
		snprintf(batch + len, sizeof batch - len, "'}}]");
		char id[16];
		snprintf(id, sizeof id, "w%d", i);
		make(f, id, "/p", NULL, B(batch));
	}
	sync_ok(f);
}

static long long wal_size(const char *root)
{
	char p[256];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s-wal", root, CATALOG_FILE);
	return stat(p, &st) < 0 ? 0 : (long long)st.st_size;
}

/* A plain connection in a read transaction: no checkpoint gets past it. */
static sqlite3 *pin(const char *root)
{
	sqlite3 *db = raw_open(root);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM sessions", -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	sqlite3_finalize(q);
	return db;
}

static void unpin(sqlite3 *db)
{
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* A connection closing (a command's end) copies the WAL back and cuts it
 * to nothing, even while another connection stays open: it never keeps
 * its peak size. */
static void test_close_truncates_the_wal(void **state)
{
	struct fx *f = *state;
	write_wordy(f, 0, 2);
	sqlite3 *reader = pin(f->root);
	write_wordy(f, 2, 60);
	long long peak = wal_size(f->root);
	print_message("# WAL %lld bytes behind a reader\n", peak);
	assert_true(peak > CATALOG_WAL_LIMIT);
	unpin(reader);
	struct catalog *other;
	struct cerr err;
	assert_int_equal(catalog_open(f->st, &other, &err), 0);
	catalog_close(f->cat);
	f->cat = NULL;
	assert_int_equal(wal_size(f->root), 0);
	catalog_close(other);
	list(f, false, false, NULL, 3, "w61 w60 w59");
}

/* A connection that stays open (the interactive client's) with its own
 * checkpoints: once the WAL starts again, its file is cut back to
 * CATALOG_WAL_LIMIT (journal_size_limit). */
static void test_wal_cut_back_when_it_starts_again(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	write_wordy(f, 0, 2);
	catalog_manual_checkpoints(cat(f));
	sqlite3 *reader = pin(f->root);
	write_wordy(f, 2, 60);
	long long peak = wal_size(f->root);
	assert_true(peak > CATALOG_WAL_LIMIT);
	unpin(reader);
	assert_int_equal(catalog_checkpoint(cat(f), &err), 0);
	assert_int_equal(wal_size(f->root), peak); /* copied back, not cut yet */
	write_wordy(f, 62, 1); /* the WAL starts again */
	print_message("# WAL %lld bytes at its peak, %lld after it started again\n", peak,
		      wal_size(f->root));
	assert_true(wal_size(f->root) <= CATALOG_WAL_LIMIT);
}

/* Reading only: no index.db is "missing"; what the last commit holds is
 * seen, even from the WAL; nothing can be written. */
static void test_read_only_open_sees_commits_and_writes_nothing(void **state)
{
	struct fx *f = *state;
	struct catalog *ro;
	struct cerr err;
	assert_int_equal(catalog_open_ro(f->st, &ro, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	make(f, "s1", "/p", NULL, B("[" USER("one") "]"));
	sync_ok(f);
	assert_int_equal(catalog_open_ro(f->st, &ro, &err), 0);
	assert_true(catalog_readonly(ro));
	assert_false(catalog_readonly(cat(f)));
	make(f, "s2", "/p", NULL, B("[" USER("two") "]"));
	sync_ok(f); /* in the WAL, the writer still open */
	assert_true(wal_size(f->root) > 0);
	struct cat_session *v;
	size_t n;
	assert_int_equal(catalog_list(ro, false, false, NULL, 0, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	cat_sessions_free(v, n);
	assert_int_equal(catalog_set_status(ro, "s1", "running", &err), -1);
	bool ok;
	char *msg;
	assert_int_equal(catalog_integrity(ro, &ok, &msg, &err), 0);
	assert_true(ok);
	free(msg);
	catalog_close(ro);
	expect_row(f, "s1", "status=idle");
}

/* The names in dir, sorted, space separated, into out[n]. */
static void names_in(const char *dir, char *out, size_t n)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls -a '%s' | tr '\\n' ' '", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t got = fread(out, 1, n - 1, p);
	out[got] = 0;
	pclose(p);
}

/* A catalog in memory, where index.db cannot be read: filled from the
 * logs themselves, listed and searched like index.db, and nothing of it
 * reaches the disk; an index.db of another schema is left as it is. */
static void test_memory_catalog_fills_from_logs_and_writes_nothing(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" USER("hello memory") "]", "[" META("{'title':'First'}") "]"));
	make(f, "s2", "/q", NULL, B("[" USER("something else") "]"));
	char before[512], after[512];
	names_in(f->root, before, sizeof before);
	struct catalog *m;
	struct cerr err;
	assert_int_equal(catalog_open_memory(f->st, &m, &err), 0);
	assert_true(catalog_in_memory(m));
	struct cat_session *v;
	size_t n;
	assert_int_equal(catalog_list(m, false, false, NULL, 0, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].id, "s2");
	assert_string_equal(v[1].title, "First");
	cat_sessions_free(v, n);
	struct cat_hit *h;
	assert_int_equal(catalog_search(m, "memory", 0, false, &h, &n, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(h[0].session, "s1");
	cat_hits_free(h, n);
	catalog_close(m);
	names_in(f->root, after, sizeof after);
	assert_string_equal(after, before); /* no index.db, -wal or -shm */
	char db[256];
	snprintf(db, sizeof db, "%s/%s", f->root, CATALOG_FILE);
	assert_int_equal(access(db, F_OK), -1);

	sync_ok(f);
	close_and_mark_schema(f, 99);
	struct stat a, b;
	assert_int_equal(stat(db, &a), 0);
	assert_int_equal(catalog_open_ro(f->st, &m, &err), -1);
	assert_int_equal(err.cls, CERR_UNSUPPORTED);
	assert_non_null(strstr(err.msg, "schema 99, newer than"));
	assert_int_equal(catalog_open_memory(f->st, &m, &err), 0);
	assert_int_equal(catalog_list(m, false, false, NULL, 0, &v, &n, &err), 0);
	assert_int_equal(n, 2);
	cat_sessions_free(v, n);
	catalog_close(m);
	assert_int_equal(stat(db, &b), 0);
	assert_int_equal(a.st_size, b.st_size);
	assert_int_equal(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
	raw_expect(f->root, "PRAGMA user_version", "99");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, catfx_teardown)
		T(test_catalog_files_are_0600_whatever_the_umask),
		T(test_catalog_schema_is_wal_versioned_and_kept_on_reopen),
		T(test_schema_5_watermarks_migrate_by_header_or_drop),
		T(test_schema_6_documents_migrate_in_place),
		T(test_second_connection_reads_during_a_write),
		T(test_write_waits_out_another_process_writing),
		T(test_busy_beyond_timeout_locked),
		T(test_two_writer_processes_lose_no_batch),
		T(test_list_pinned_first_then_newest_by_project_and_limit),
		T(test_sync_follows_growth_trash_restore_and_purge),
		T(test_close_truncates_the_wal),
		T(test_wal_cut_back_when_it_starts_again),
		T(test_read_only_open_sees_commits_and_writes_nothing),
		T(test_memory_catalog_fills_from_logs_and_writes_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
