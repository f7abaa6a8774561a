/* catalog_durable.c — what the catalog knows of the logs on disk: each
 * session's durable watermark (length and next seq acknowledged after an
 * fsync, keyed by the log's head digest), the file a projection matches, and the
 * content version a writer checks before it writes. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/safefs.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cat_write_watermark(struct catalog *c, const char *id, const struct cat_watermark *wm,
			struct cerr *err)
{
	if (!wm || !wm->known)
		return 0;
	/* Never backwards on the same log; another log (salvage, replaced
	 * file, a new log under the same id) starts its own watermark. */
	sqlite3_stmt *st = cat_prepare(c,
		"INSERT INTO watermarks (session, len, seq, head) VALUES (?1, ?2, ?3, ?4)"
		" ON CONFLICT(session) DO UPDATE SET len = ?2, seq = ?3, head = ?4"
		" WHERE head IS NOT ?4 OR len <= ?2", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)wm->rev.len);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)wm->rev.next_seq);
	sqlite3_bind_blob(st, 4, wm->head, SHA256_LEN, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "store watermark");
}

int catalog_drop_watermark(struct catalog *c, const char *id, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, "DELETE FROM watermarks WHERE session = ?1", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	int rc = sqlite3_step(st);
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "drop watermark");
}

struct wm_args {
	const char *id;
	const struct cat_watermark *wm;
};

static int do_set_watermark(struct catalog *c, void *arg, struct cerr *err)
{
	struct wm_args *a = arg;
	return cat_write_watermark(c, a->id, a->wm, err);
}

int catalog_set_watermark(struct catalog *c, const char *id, const struct cat_watermark *wm,
			  struct cerr *err)
{
	struct wm_args a = {id, wm};
	return cat_in_tx(c, err, do_set_watermark, &a);
}

struct durable_args {
	const char *id;
	uint64_t version;
	const struct cat_watermark *wm;
	bool applied;
};

static int do_set_durable(struct catalog *c, void *arg, struct cerr *err)
{
	struct durable_args *a = arg;
	sqlite3_stmt *st = cat_prepare(c,
		"UPDATE sessions SET proj_dev = ?3, proj_ino = ?4, proj_len = ?5, proj_ctime = ?6"
		" WHERE id = ?1 AND content_version = ?2", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, a->id);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)a->version);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)a->wm->rev.dev);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)a->wm->rev.ino);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)a->wm->rev.len);
	sqlite3_bind_int64(st, 6, a->wm->ctime_ns);
	int rc = sqlite3_step(st);
	cat_done(c, st);
	if (rc != SQLITE_DONE)
		return cat_fail(c, err, rc, "record the durable log");
	a->applied = sqlite3_changes(c->db) > 0;
	return a->applied ? cat_write_watermark(c, a->id, a->wm, err) : 0;
}

int catalog_set_durable(struct catalog *c, const char *id, uint64_t version,
			const struct cat_watermark *wm, bool *applied, struct cerr *err)
{
	struct durable_args a = {id, version, wm, false};
	if (applied)
		*applied = false;
	if (!wm || !wm->known || wm->rev.next_seq != version)
		return 0;
	if (cat_in_tx(c, err, do_set_durable, &a) < 0)
		return -1;
	if (applied)
		*applied = a.applied;
	return 0;
}

int catalog_get_version(struct catalog *c, const char *id, uint64_t *version, bool *found,
			struct cerr *err)
{
	*version = 0;
	*found = false;
	sqlite3_stmt *st = cat_prepare(c, "SELECT content_version FROM sessions WHERE id = ?1", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = true;
		*version = (uint64_t)sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
	}
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "load session version");
}

int catalog_row_current(struct catalog *c, const struct session_ref *ref,
			const struct revision *file, int64_t ctime_ns, bool *current,
			struct cerr *err)
{
	*current = false;
	if (file->len == 0 || ctime_ns == 0)
		return 0;
	sqlite3_stmt *st = cat_prepare(c, "SELECT 1 FROM sessions WHERE id = ?1 AND project_key = ?2"
					  " AND deleted_at IS NULL AND content_version = ?3"
					  " AND proj_dev = ?4 AND proj_ino = ?5 AND proj_len = ?6"
					  " AND proj_ctime = ?7", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, ref->id);
	cat_bind_str(st, 2, ref->key);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)file->next_seq);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)file->dev);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)file->ino);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)file->len);
	sqlite3_bind_int64(st, 7, ctime_ns);
	int rc = sqlite3_step(st);
	*current = rc == SQLITE_ROW;
	cat_done(c, st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "load the durable log");
}

void cat_read_watermark(sqlite3_stmt *st, int col, struct cat_watermark *wm)
{
	memset(wm, 0, sizeof *wm);
	wm->known = sqlite3_column_type(st, col) != SQLITE_NULL &&
		    sqlite3_column_bytes(st, col + 2) == SHA256_LEN;
	if (!wm->known)
		return;
	wm->rev.len = (uint64_t)sqlite3_column_int64(st, col);
	wm->rev.next_seq = (uint64_t)sqlite3_column_int64(st, col + 1);
	memcpy(wm->head, sqlite3_column_blob(st, col + 2), SHA256_LEN);
}

struct scan_opts catalog_scan_opts(const struct cat_watermark *wm)
{
	struct scan_opts o = {0};
	if (wm && wm->known) {
		o = (struct scan_opts){true, wm->rev.len, wm->rev.next_seq, {0}};
		memcpy(o.head, wm->head, SHA256_LEN);
	}
	return o;
}

struct cat_watermark catalog_watermark_of(struct log_mark d)
{
	struct cat_watermark wm = {d.rev.len > 0, d.rev, {0}, d.ctime_ns};
	memcpy(wm.head, d.head, SHA256_LEN);
	return wm;
}

int catalog_get_watermark(struct catalog *c, const char *id, struct cat_watermark *wm,
			  struct cerr *err)
{
	memset(wm, 0, sizeof *wm);
	sqlite3_stmt *st = cat_prepare(c, "SELECT len, seq, head FROM watermarks WHERE session = ?1",
				       err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		cat_read_watermark(st, 0, wm);
		rc = SQLITE_DONE;
	}
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "load watermark");
}

int catalog_watermarks(struct catalog *c, char ***ids, struct cat_watermark **wms, size_t *n,
		       struct cerr *err)
{
	*ids = NULL;
	*wms = NULL;
	*n = 0;
	sqlite3_stmt *st = cat_prepare(c, "SELECT session, len, seq, head FROM watermarks", err);
	if (!st)
		return -1;
	size_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			*ids = xreallocarray(*ids, cap, sizeof **ids);
			*wms = xreallocarray(*wms, cap, sizeof **wms);
		}
		(*ids)[*n] = cat_col_str(st, 0);
		cat_read_watermark(st, 1, &(*wms)[*n]);
		(*n)++;
	}
	cat_done(c, st);
	if (rc == SQLITE_DONE)
		return 0;
	for (size_t i = 0; i < *n; i++)
		free((*ids)[i]);
	free(*ids), free(*wms);
	*ids = NULL, *wms = NULL, *n = 0;
	return cat_fail(c, err, rc, "load watermarks");
}

/* The head digest of a session's log, if it is still the file (dev, ino)
 * a schema-5 watermark was recorded for. */
static bool legacy_head(int rootfd, const char *area, const char *key, const char *id,
			dev_t dev, ino_t ino, uint8_t head[SHA256_LEN])
{
	struct cerr e;
	bool found = false;
	int areafd = safefs_opendir(rootfd, area, false, NULL, &e);
	int keyfd = areafd < 0 ? -1 : safefs_opendir(areafd, key, false, NULL, &e);
	int dirfd = keyfd < 0 ? -1 : safefs_opendir(keyfd, id, false, NULL, &e);
	int fd = dirfd < 0 ? -1 : safefs_openfile(dirfd, LOG_FILE, O_RDONLY, &e);
	struct stat sb;
	if (fd >= 0 && fsops->fstat(fd, &sb) == 0 && sb.st_dev == dev && sb.st_ino == ino &&
	    scan_head_fd(fd, head, &found, &e) < 0)
		found = false;
	fs_close_quiet(fd);
	fs_close_quiet(dirfd);
	fs_close_quiet(keyfd);
	fs_close_quiet(areafd);
	return found;
}

int cat_migrate_5(struct catalog *c, struct cerr *err)
{
	sqlite3_stmt *q = cat_prepare_once(c,
		"SELECT id, project_key, deleted_at IS NOT NULL, wm_len, wm_seq, wm_dev, wm_ino"
		" FROM sessions WHERE wm_len IS NOT NULL", err);
	if (!q)
		return -1;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(q, 0);
		const char *key = (const char *)sqlite3_column_text(q, 1);
		struct cat_watermark wm = {.known = true};
		wm.rev.len = (uint64_t)sqlite3_column_int64(q, 3);
		wm.rev.next_seq = (uint64_t)sqlite3_column_int64(q, 4);
		/* A watermark whose file is gone or replaced applied to no
		 * log: it is dropped (the next writer records a new one). */
		if (!id || !key || !pathkey_valid_id(id) || !pathkey_valid_key(key) ||
		    !legacy_head(c->rootfd, sqlite3_column_int(q, 2) ? STORE_TRASH : STORE_SESSIONS,
				 key, id, (dev_t)sqlite3_column_int64(q, 5),
				 (ino_t)sqlite3_column_int64(q, 6), wm.head))
			continue;
		if (cat_write_watermark(c, id, &wm, err) < 0) {
			cat_done(c, q);
			return -1;
		}
	}
	cat_done(c, q);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "migrate watermarks");
}
