/* catalog_sync.c — bringing the catalog in line with the session
 * directories: what is new or rewritten on disk (file identity, length,
 * ctime) is read again, outside any transaction, and projected in short
 * transactions; vanished sessions are forgotten. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/strmap.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/safefs.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

struct known {
	char *id;
	char *key;
	uint64_t dev, ino, len;
	int64_t ctime_ns;
	bool deleted, seen;
	struct cat_watermark wm;
};

/* Read one session's log for projection, with its watermark. */
static struct scan *read_entry(struct store *st, const struct store_entry *e,
			       const struct cat_watermark *wm)
{
	struct scan *s = NULL;
	struct scan_opts o = {0};
	struct cerr oe;
	int ret = -1;
	if (wm && wm->known)
		o = (struct scan_opts){true, wm->len, wm->next_seq, wm->dev, wm->ino};
	/* Every level opened without following symlinks. */
	int areafd = safefs_opendir(store_root_fd(st), e->trash ? STORE_TRASH : STORE_SESSIONS, false,
				    NULL, &oe);
	int keyfd = areafd < 0 ? -1 : safefs_opendir(areafd, e->ref.key, false, NULL, &oe);
	int dirfd = keyfd < 0 ? -1 : safefs_opendir(keyfd, e->ref.id, false, NULL, &oe);
	int fd = dirfd < 0 ? -1 : safefs_openfile(dirfd, LOG_FILE, O_RDONLY, &oe);
	fs_close_quiet(dirfd);
	fs_close_quiet(keyfd);
	fs_close_quiet(areafd);
	if (fd >= 0) {
		ret = scan_fd_opts(fd, &o, &s, &oe);
		fs_close_quiet(fd);
	}
	if (ret < 0) {
		if (oe.cls == CERR_MISSING)
			return NULL; /* vanished meanwhile: the next sync sees it */
		/* Listing is tolerant: a session that cannot be read is listed
		 * with the reason, as a corrupt one. */
		s = scan_buffer(NULL, 0);
		cerr_set(&s->err, CERR_CORRUPT, 0, "%s", oe.msg);
	}
	if (!s->id || strcmp(s->id, e->ref.id) != 0) {
		if (s->status == SCAN_OK || s->status == SCAN_TORN) {
			s->status = SCAN_CORRUPT;
			cerr_set(&s->err, CERR_CORRUPT, 0, "log holds session '%s', not '%s'",
				 s->id ? s->id : "?", e->ref.id);
		}
	}
	return s;
}

#define SYNC_CHUNK 32

struct todo {
	const struct store_entry *e;
	struct cat_watermark wm;
};

int catalog_sync(struct catalog *c, struct store *st, size_t *changed, struct cerr *err)
{
	struct todo *todo = NULL;
	size_t n_todo = 0, todo_cap = 0;
	struct store_entry *ents = NULL;
	size_t n = 0, nk = 0, count = 0;
	struct known *k = NULL;
	struct strmap map;
	strmap_init(&map);
	int ret = -1;
	if (changed)
		*changed = 0;
	if (store_list_entries(st, &ents, &n, err) < 0)
		return -1;
	sqlite3_stmt *q = cat_prepare(c, "SELECT id, project_key, proj_dev, proj_ino, proj_len,"
					 " deleted_at IS NOT NULL, wm_len, wm_seq, wm_dev, wm_ino,"
					 " wm_len IS NOT NULL, proj_ctime FROM sessions", err);
	if (!q)
		goto out;
	size_t cap = 0;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (nk == cap) {
			cap = cap ? cap * 2 : 256;
			k = xreallocarray(k, cap, sizeof *k);
		}
		struct known *r = &k[nk++];
		memset(r, 0, sizeof *r);
		r->id = cat_col_str(q, 0);
		r->key = cat_col_str(q, 1);
		r->dev = (uint64_t)sqlite3_column_int64(q, 2);
		r->ino = (uint64_t)sqlite3_column_int64(q, 3);
		r->len = (uint64_t)sqlite3_column_int64(q, 4);
		r->deleted = sqlite3_column_int(q, 5) != 0;
		r->wm.known = sqlite3_column_int(q, 10) != 0;
		r->wm.len = (uint64_t)sqlite3_column_int64(q, 6);
		r->wm.next_seq = (uint64_t)sqlite3_column_int64(q, 7);
		r->wm.dev = (dev_t)sqlite3_column_int64(q, 8);
		r->wm.ino = (ino_t)sqlite3_column_int64(q, 9);
		r->ctime_ns = sqlite3_column_int64(q, 11);
	}
	cat_done(c, q);
	if (rc != SQLITE_DONE) {
		cat_fail(c, err, rc, "read sessions");
		goto out;
	}
	for (size_t i = 0; i < nk; i++)
		strmap_put(&map, k[i].id, i);
	bool began = false;
	for (size_t i = 0; i < n; i++) {
		const struct store_entry *e = &ents[i];
		size_t at;
		struct known *r = strmap_get(&map, e->ref.id, &at) ? &k[at] : NULL;
		if (r) {
			if (r->seen)
				continue; /* the same id live and in the trash: live wins */
			r->seen = true;
			/* Any rewrite of the file (even in place, same length)
			 * changes its ctime. */
			if (r->dev == (uint64_t)e->dev && r->ino == (uint64_t)e->ino && r->len == e->size &&
			    r->ctime_ns == e->ctime_ns && r->deleted == e->trash &&
			    strcmp(r->key, e->ref.key) == 0)
				continue;
		}
		if (n_todo == todo_cap)
			todo = xreallocarray(todo, todo_cap = todo_cap ? todo_cap * 2 : 64, sizeof *todo);
		todo[n_todo++] = (struct todo){e, r ? r->wm : (struct cat_watermark){0}};
	}
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
	for (size_t i = 0; i < nk; i++) {
		if (k[i].seen)
			continue;
		if (!began && catalog_begin(c, err) < 0)
			goto out;
		began = true;
		if (catalog_forget(c, k[i].id, err) < 0) {
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
	for (size_t i = 0; i < nk; i++)
		free(k[i].id), free(k[i].key);
	free(k);
	free(todo);
	strmap_release(&map);
	free(ents);
	return ret;
}

