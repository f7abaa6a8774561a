/* catalog_sync.c — bringing the catalog in line with the session
 * directories: what is new or rewritten on disk (file identity, length,
 * ctime) is read again, outside any transaction, and projected in short
 * transactions; vanished sessions are forgotten. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/readlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


/* Read one session's log for projection, with its watermark. */
static struct scan *read_entry(struct store *st, const struct store_entry *e,
			       const struct cat_watermark *wm)
{
	struct scan *s = NULL;
	struct cerr oe;
	bool trash = e->trash;
	if (readlog_session(st, &e->ref, &trash, wm, &s, &oe) < 0) {
		if (oe.cls == CERR_MISSING)
			return NULL; /* vanished meanwhile: the next sync sees it */
		/* Listing is tolerant: a session that cannot be read is listed
		 * with the reason, as a corrupt one. */
		s = scan_buffer(NULL, 0);
		cerr_set(&s->err, CERR_CORRUPT, 0, "%s", oe.msg);
	} else if (trash != e->trash) {
		/* Deleted or restored since it was listed: projected where it
		 * is now by the next sync, never under the area it left. */
		scan_free(s);
		return NULL;
	}
	return s;
}

#define SYNC_CHUNK 32

struct todo {
	const struct store_entry *e;
	struct cat_watermark wm;
};

/* Entries by id, a live session before a trashed one with the same id,
 * then by project key: of one id under two project folders (a damaged
 * store, which doctor reports) the same one is listed every time. */
static int cmp_entry(const void *pa, const void *pb)
{
	const struct store_entry *a = pa, *b = pb;
	int c = strcmp(a->ref.id, b->ref.id);
	if (!c)
		c = (int)a->trash - (int)b->trash;
	return c ? c : strcmp(a->ref.key, b->ref.key);
}

int catalog_sync(struct catalog *c, struct store *st, size_t *changed, struct cerr *err)
{
	struct todo *todo = NULL;
	size_t n_todo = 0, todo_cap = 0;
	struct store_entry *ents = NULL;
	size_t n = 0, count = 0;
	char **gone = NULL; /* rows whose session is no longer on disk */
	size_t n_gone = 0;
	int ret = -1;
	if (changed)
		*changed = 0;
	/* What a write adds to a WAL that cannot be copied back for lack of
	 * room, even a write that fails, could only be given back by that
	 * copy: the logs have the space first. */
	if (!cat_ckpt_room(c))
		return cerr_set(err, CERR_IO, ENOSPC, "catalog: no room to copy the WAL back into '%s'",
				CATALOG_FILE);
	if (store_list_entries(st, &ents, &n, err) < 0)
		return -1;
	/* Merge the directory listing and the rows, both sorted by id: no
	 * copy of the ten thousand ids that did not change. */
	qsort(ents, n, sizeof *ents, cmp_entry);
	sqlite3_stmt *q = cat_prepare(c, "SELECT id, project_key, proj_dev, proj_ino, proj_len,"
					 " deleted_at IS NOT NULL, w.len, w.seq, w.head, proj_ctime"
					 " FROM sessions LEFT JOIN watermarks w ON w.session = id"
					 " ORDER BY id", err);
	if (!q)
		goto out;
	int rc = sqlite3_step(q);
	size_t ei = 0;
	while (rc == SQLITE_ROW || ei < n) {
		const char *rid = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
		int cmp = !rid ? 1 : ei >= n ? -1 : strcmp(rid, ents[ei].ref.id);
		if (cmp < 0) {
			gone = xreallocarray(gone, n_gone + 1, sizeof *gone);
			gone[n_gone++] = xstrdup(rid);
			rc = sqlite3_step(q);
			continue;
		}
		const struct store_entry *e = &ents[ei];
		struct cat_watermark wm = {0};
		bool same = false;
		if (cmp == 0) {
			const char *key = (const char *)sqlite3_column_text(q, 1);
			cat_read_watermark(q, 6, &wm);
			/* Any rewrite of the file (even in place, same length)
			 * changes its ctime. */
			same = (uint64_t)sqlite3_column_int64(q, 2) == (uint64_t)e->dev &&
			       (uint64_t)sqlite3_column_int64(q, 3) == (uint64_t)e->ino &&
			       (uint64_t)sqlite3_column_int64(q, 4) == e->size &&
			       sqlite3_column_int64(q, 9) == e->ctime_ns &&
			       (sqlite3_column_int(q, 5) != 0) == e->trash && key &&
			       strcmp(key, e->ref.key) == 0;
			rc = sqlite3_step(q);
		}
		if (!same) {
			if (n_todo == todo_cap)
				todo = xreallocarray(todo, todo_cap = todo_cap ? todo_cap * 2 : 64,
						     sizeof *todo);
			todo[n_todo++] = (struct todo){e, wm};
		}
		/* The same id live and in the trash: the live one wins. */
		for (ei++; ei < n && strcmp(ents[ei].ref.id, e->ref.id) == 0; ei++)
			;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		cat_done(c, q);
		cat_fail(c, err, rc, "read sessions");
		goto out;
	}
	cat_done(c, q);
	bool began = false;
	/* Logs are read outside any transaction, so a long sync (thousands
	 * of new logs, a reindex) never holds the write lock while it reads;
	 * each chunk is then written in one short transaction. */
	for (size_t i = 0; i < n_todo; i += SYNC_CHUNK) {
		size_t m = n_todo - i < SYNC_CHUNK ? n_todo - i : SYNC_CHUNK;
		struct scan *scans[SYNC_CHUNK];
		for (size_t j = 0; j < m; j++)
			scans[j] = read_entry(st, todo[i + j].e, &todo[i + j].wm);
		int r = catalog_begin(c, err);
		for (size_t j = 0; j < m && r == 0; j++) {
			const struct store_entry *e = todo[i + j].e;
			if (!scans[j])
				continue;
			int64_t deleted_at = e->trash ? (e->dir_ctime_ms ? e->dir_ctime_ms : 1) : 0;
			r = catalog_project_scan(c, &e->ref, scans[j], deleted_at, NULL, err);
			count++;
		}
		if (r == 0)
			r = catalog_commit(c, err);
		else
			catalog_rollback(c);
		for (size_t j = 0; j < m; j++)
			scan_free(scans[j]);
		if (r < 0)
			goto out;
	}
	for (size_t g = 0; g < n_gone; g++) {
		if (!began && catalog_begin(c, err) < 0)
			goto out;
		began = true;
		if (catalog_forget(c, gone[g], err) < 0) {
			catalog_rollback(c);
			goto out;
		}
		count++;
	}
	if (began && catalog_commit(c, err) < 0)
		goto out;
	if (changed)
		*changed = count;
	ret = 0;
out:
	for (size_t g = 0; g < n_gone; g++)
		free(gone[g]);
	free(gone);
	free(todo);
	free(ents);
	return ret;
}

