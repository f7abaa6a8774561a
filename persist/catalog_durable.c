/* catalog_durable.c — what the catalog knows of the logs on disk: each
 * session's durable watermark (length and next seq acknowledged after an
 * fsync, with the file's identity), the file a projection matches, and the
 * content version a writer checks before it writes. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"

#include <string.h>

int cat_write_watermark(struct catalog *c, const char *id, const struct cat_watermark *wm,
			struct cerr *err)
{
	if (!wm || !wm->known)
		return 0;
	/* Never backwards on the same file; a new file (salvage, replaced
	 * log) starts its own watermark. */
	sqlite3_stmt *st = cat_prepare(c,
		"UPDATE sessions SET wm_len = ?2, wm_seq = ?3, wm_dev = ?4, wm_ino = ?5 WHERE id = ?1"
		" AND (wm_len IS NULL OR wm_dev IS NOT ?4 OR wm_ino IS NOT ?5 OR wm_len <= ?2)", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)wm->len);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)wm->next_seq);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)wm->dev);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)wm->ino);
	int rc = sqlite3_step(st);
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "store watermark");
}

struct wm_args {
	const char *id;
	const struct cat_watermark *wm;
};

static int do_set_watermark(struct catalog *c, void *arg, struct cerr *err)
{
	struct wm_args *a = arg;
	if (cat_write_watermark(c, a->id, a->wm, err) < 0)
		return -1;
	if (!a->wm || !a->wm->known || sqlite3_changes(c->db) > 0)
		return 0;
	/* Nothing changed: an older watermark is kept, or no such session. */
	sqlite3_stmt *st = cat_prepare(c, "SELECT 1 FROM sessions WHERE id = ?1", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, a->id);
	int rc = sqlite3_step(st);
	cat_done(c, st);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc == SQLITE_DONE)
		return cerr_set(err, CERR_MISSING, 0, "catalog has no session '%s'", a->id);
	return cat_fail(c, err, rc, "read session");
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
	sqlite3_bind_int64(st, 3, (sqlite3_int64)a->wm->dev);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)a->wm->ino);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)a->wm->len);
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
	if (!wm || !wm->known || wm->next_seq != version)
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

int catalog_get_watermark(struct catalog *c, const char *id, struct cat_watermark *wm,
			  struct cerr *err)
{
	memset(wm, 0, sizeof *wm);
	sqlite3_stmt *st = cat_prepare(c, "SELECT wm_len, wm_seq, wm_dev, wm_ino FROM sessions"
					  " WHERE id = ?1 AND wm_len IS NOT NULL", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		wm->known = true;
		wm->len = (uint64_t)sqlite3_column_int64(st, 0);
		wm->next_seq = (uint64_t)sqlite3_column_int64(st, 1);
		wm->dev = (dev_t)sqlite3_column_int64(st, 2);
		wm->ino = (ino_t)sqlite3_column_int64(st, 3);
		rc = SQLITE_DONE;
	}
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "load watermark");
}

static int do_reread_watermarked(struct catalog *c, void *arg, struct cerr *err)
{
	return cat_exec(c, "UPDATE sessions SET proj_len = -1 WHERE wm_len IS NOT NULL", err);
}

int catalog_reread_watermarked(struct catalog *c, struct cerr *err)
{
	return cat_in_tx(c, err, do_reread_watermarked, NULL);
}
