/* catalog.c — the catalog's connection: opening index.db (pragmas, WAL,
 * the schema brought up to date), closing it, transactions and savepoints,
 * the prepared-statement cache and the small helpers every catalog_*.c
 * file uses, and the integrity check. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cat_fail(struct catalog *c, struct cerr *err, int rc, const char *what)
{
	enum cerr_class cls = CERR_IO;
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		cls = CERR_LOCKED;
	return cerr_set(err, cls, 0, "catalog: %s: %s", what, c && c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
}

int cat_exec(struct catalog *c, const char *sql, struct cerr *err)
{
	char *msg = NULL;
	int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		enum cerr_class cls = rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? CERR_LOCKED : CERR_IO;
		cerr_set(err, cls, 0, "catalog: %s", msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

sqlite3_stmt *cat_prepare_once(struct catalog *c, const char *sql, struct cerr *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		cat_fail(c, err, rc, "prepare");
		return NULL;
	}
	return st;
}

sqlite3_stmt *cat_prepare(struct catalog *c, const char *sql, struct cerr *err)
{
	for (size_t i = 0; i < c->n_cache; i++) {
		if (strcmp(c->cache[i].sql, sql) != 0)
			continue;
		if (sqlite3_stmt_busy(c->cache[i].st))
			return cat_prepare_once(c, sql, err); /* in use further up */
		return c->cache[i].st;
	}
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
	if (rc != SQLITE_OK) {
		cat_fail(c, err, rc, "prepare");
		return NULL;
	}
	if (c->n_cache < CAT_CACHE) {
		c->cache[c->n_cache].sql = sql;
		c->cache[c->n_cache++].st = st;
	}
	return st;
}

void cat_done(struct catalog *c, sqlite3_stmt *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < c->n_cache; i++)
		if (c->cache[i].st == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return;
		}
	sqlite3_finalize(st);
}

char *cat_col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? xstrdup((const char *)t) : NULL;
}

void cat_bind_str(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* The -wal and -shm files take the database file's mode in SQLite's unix
 * VFS; check them anyway, as they may predate us. */
static int tighten_sidecars(struct catalog *c, struct cerr *err)
{
	static const char *const side[] = {CATALOG_FILE "-wal", CATALOG_FILE "-shm"};
	/* Never open them: closing any fd of a file drops every POSIX lock
	 * this process holds on it, SQLite's -shm locks included. */
	for (size_t i = 0; i < 2; i++) {
		struct stat st;
		if (fsops->fstatat(c->rootfd, side[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return cerr_set(err, CERR_IO, errno, "cannot stat '%s'", side[i]);
		}
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
			return cerr_set(err, CERR_IO, 0, "'%s' is not a regular file of ours", side[i]);
		if ((st.st_mode & 07777) != 0600 && fchmodat(c->rootfd, side[i], 0600, 0) < 0)
			return cerr_set(err, CERR_IO, errno, "cannot set mode of '%s'", side[i]);
	}
	return 0;
}

int cat_setup_connection(struct catalog *c, struct cerr *err)
{
	sqlite3_busy_timeout(c->db, 5000);
	if (cat_register_tokenizer(c->db, err) < 0 || cat_register_rank(c->db, err) < 0)
		return -1;
	sqlite3_extended_result_codes(c->db, 0);
	/* Sorting in memory: a full disk often means a full /tmp too. */
	return cat_exec(c, "PRAGMA temp_store=MEMORY", err);
}

int catalog_open(struct store *st, struct catalog **out, struct cerr *err)
{
	if (!cat_shm_room(store_root_fd(st)))
		return cerr_set(err, CERR_IO, ENOSPC, "cannot open catalog '%s/%s'", store_root(st),
				CATALOG_FILE);
	int fd = safefs_openfile(store_root_fd(st), CATALOG_FILE, O_RDWR | O_CREAT, err);
	if (fd < 0)
		return -1;
	fs_close_quiet(fd);
	struct catalog *c = xcalloc(1, sizeof *c);
	c->rootfd = store_root_fd(st);
	c->path = xasprintf("%s/%s", store_root(st), CATALOG_FILE);
	int rc = sqlite3_open_v2(c->path, &c->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		cat_fail(c, err, rc, "open");
		goto fail;
	}
	if (cat_setup_connection(c, err) < 0)
		goto fail;
	/* WAL so readers never block the writer; NORMAL because the catalog is
	 * a projection of fsynced logs: losing its last commits to a power loss
	 * only makes it lag (watermarks included), never lead. Switching a
	 * new database to WAL takes an exclusive lock, and SQLite gives up at
	 * once (no busy handler) while another opener holds a shared one:
	 * retry for as long as the busy timeout. */
	for (int i = 0; i < 500 && sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) ==
					   SQLITE_BUSY; i++)
		sqlite3_sleep(10);
	if (cat_exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			"PRAGMA journal_size_limit=" CATALOG_WAL_LIMIT_STR "; PRAGMA foreign_keys=OFF;",
		     err) < 0)
		goto fail;
	cat_wal_init(c);
	if (cat_schema_upgrade(c, err) < 0)
		goto fail;
	if (tighten_sidecars(c, err) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	catalog_close(c);
	return -1;
}

void catalog_close(struct catalog *c)
{
	if (!c)
		return;
	if (c->db)
		cat_wal_close(c); /* may use the cache */
	for (size_t i = 0; i < c->n_cache; i++)
		sqlite3_finalize(c->cache[i].st);
	c->n_cache = 0;
	if (c->db)
		sqlite3_close_v2(c->db);
	free(c->path);
	free(c);
}

int catalog_begin(struct catalog *c, struct cerr *err)
{
	if (cat_exec(c, "BEGIN IMMEDIATE", err) < 0)
		return -1;
	c->in_tx = true;
	return 0;
}

int catalog_commit(struct catalog *c, struct cerr *err)
{
	c->in_tx = false;
	if (cat_exec(c, "COMMIT", err) < 0) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	cat_wal_after_commit(c);
	return 0;
}

void catalog_rollback(struct catalog *c)
{
	c->in_tx = false;
	sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

int catalog_savepoint(struct catalog *c, struct cerr *err)
{
	return cat_exec(c, "SAVEPOINT item", err);
}

void catalog_savepoint_rollback(struct catalog *c)
{
	sqlite3_exec(c->db, "ROLLBACK TO item; RELEASE item", NULL, NULL, NULL);
}

void catalog_savepoint_release(struct catalog *c)
{
	sqlite3_exec(c->db, "RELEASE item", NULL, NULL, NULL);
}

int cat_in_tx(struct catalog *c, struct cerr *err, int (*fn)(struct catalog *, void *, struct cerr *),
	      void *arg)
{
	if (c->in_tx)
		return fn(c, arg, err);
	if (catalog_begin(c, err) < 0)
		return -1;
	if (fn(c, arg, err) < 0) {
		catalog_rollback(c);
		return -1;
	}
	return catalog_commit(c, err);
}

struct cat_work catalog_work(struct catalog *c)
{
	int hit = 0, miss = 0, write = 0, hw;
	sqlite3_db_status(c->db, SQLITE_DBSTATUS_CACHE_HIT, &hit, &hw, 1);
	sqlite3_db_status(c->db, SQLITE_DBSTATUS_CACHE_MISS, &miss, &hw, 1);
	sqlite3_db_status(c->db, SQLITE_DBSTATUS_CACHE_WRITE, &write, &hw, 1);
	return (struct cat_work){(uint64_t)hit + (uint64_t)miss, (uint64_t)miss, (uint64_t)write};
}

int catalog_integrity(struct catalog *c, bool *ok, char **msg, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, "PRAGMA integrity_check", err);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		cat_done(c, st);
		return cat_fail(c, err, rc, "integrity check");
	}
	*msg = cat_col_str(st, 0);
	*ok = *msg && strcmp(*msg, "ok") == 0;
	cat_done(c, st);
	if (*ok && c->readonly) {
		/* FTS5 checks itself only through an INSERT. */
		free(*msg);
		*msg = xstrdup("ok (full-text index not checked: read only)");
	} else if (*ok) {
		/* The full-text index must agree with the documents too. */
		char *e = NULL;
		if (sqlite3_exec(c->db, "INSERT INTO fts_words(fts_words) VALUES('integrity-check')", NULL,
				 NULL, &e) != SQLITE_OK) {
			free(*msg);
			*msg = xasprintf("full-text index: %s", e ? e : "integrity check failed");
			*ok = false;
		}
		sqlite3_free(e);
	}
	return 0;
}
