/* fifo_sess.c — the writer's per-session state: its log handle (and so
 * its writer lock), the handle cache, the failure that bars it until a
 * full save recovers it, and the durable watermarks the catalog has not
 * recorded yet.
 *
 * After a failed write (a conflict, a failed sync) the session must not
 * be written past the gap: its later items fail fast (fifo_round.c) until
 * a full save reads the log again through the same handle and rebuilds the
 * session's row from it (fifo_sess_recover). */
#include "persist/fifo_int.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/load.h"

#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>

struct fifo_sess *fifo_sess_get(struct fifo *f, const char *id)
{
	size_t i;
	if (strmap_get(&f->ws_map, id, &i)) {
		f->ws[i]->used = ++f->use_clock;
		return f->ws[i];
	}
	struct fifo_sess *w = xcalloc(1, sizeof *w);
	snprintf(w->id, sizeof w->id, "%s", id);
	w->used = ++f->use_clock;
	fifo_lane_init(w);
	f->ws = xreallocarray(f->ws, f->n_ws + 1, sizeof *f->ws);
	strmap_put(&f->ws_map, w->id, f->n_ws);
	f->ws[f->n_ws++] = w;
	atomic_store(&f->ws_known, f->n_ws);
	return w;
}

/* Whether w keeps nothing the writer needs: no handle (no lock), no
 * failure to fail fast on, no acknowledged version the catalog lags, not
 * held, not part of a round, no watermark waiting to be recorded. */
static bool sess_idle(const struct fifo *f, const struct fifo_sess *w)
{
	if (w->lg || w->held || w->failed || w->behind || w->lane_job_out || fifo_round_holds(f, w))
		return false;
	for (size_t i = 0; i < f->n_durable; i++)
		if (f->durable[i].w == w)
			return false;
	return true;
}

/* Forget ws[i] (its place taken by the last one). */
static void sess_drop(struct fifo *f, size_t i)
{
	struct fifo_sess *w = f->ws[i];
	strmap_del(&f->ws_map, w->id);
	if (i != --f->n_ws) {
		f->ws[i] = f->ws[f->n_ws];
		strmap_put(&f->ws_map, f->ws[i]->id, i);
	}
	atomic_store(&f->ws_known, f->n_ws);
	fifo_lane_destroy(w);
	free(w);
}

static void drop_if_idle(struct fifo *f, struct fifo_sess *w)
{
	size_t i;
	if (sess_idle(f, w) && strmap_get(&f->ws_map, w->id, &i))
		sess_drop(f, i);
}

/* Keep at most f->max_open handles (and so locks) open besides the held
 * sessions'; never close one the current round or the round in flight
 * wrote to, nor a held one. A session whose handle closes is dropped when
 * it keeps nothing else. */
static void trim_handles(struct fifo *f, struct fifo_sess *keep)
{
	size_t open = 0;
	for (size_t i = 0; i < f->n_ws; i++)
		open += f->ws[i]->lg != NULL && !f->ws[i]->held;
	while (open > f->max_open) {
		struct fifo_sess *old = NULL;
		for (size_t i = 0; i < f->n_ws; i++) {
			struct fifo_sess *w = f->ws[i];
			if (w->lg && w != keep && !w->held && !w->failed && !fifo_round_holds(f, w) &&
			    (!old || w->used < old->used))
				old = w;
		}
		if (!old)
			break;
		fifo_sess_close_log(f, old);
		drop_if_idle(f, old);
		open--;
	}
}

void fifo_sess_sweep(struct fifo *f)
{
	trim_handles(f, NULL); /* a batch may have opened more than the cache holds */
	for (size_t i = f->n_ws; i-- > 0;)
		if (sess_idle(f, f->ws[i]))
			sess_drop(f, i);
}

void fifo_sess_close_log(struct fifo *f, struct fifo_sess *w)
{
	fifo_lane_quiesce(f, w);
	log_close(w->lg);
	w->lg = NULL;
}

/* The log was just read whole under its writer lock: when every frame is
 * complete and valid past a watermark that lags (a catalog update that
 * failed after a durable write) or is missing, sync it and raise the
 * watermark to all of it, in the transaction the round holds open. Once
 * per log opened, and only when it lags. Best effort: the watermark only
 * stays behind. */
static void heal_watermark(struct fifo *f, struct fifo_sess *w)
{
	const struct scan *s = log_scan(w->lg);
	struct cerr e;
	if (!s || s->status != SCAN_OK || !scan_wm_lags(s) || log_settle(w->lg, &e) < 0)
		return;
	struct cat_watermark wm = catalog_watermark_of(log_durable(w->lg));
	if (wm.known && catalog_savepoint(f->cat, &e) == 0) {
		if (catalog_set_watermark(f->cat, w->id, &wm, &e) == 0)
			catalog_savepoint_release(f->cat);
		else
			catalog_savepoint_rollback(f->cat);
	}
}

int fifo_sess_ensure_log(struct fifo *f, struct fifo_sess *w, const struct fifo_item *it,
			 struct cerr *err)
{
	if (w->lg)
		return 0;
	struct cat_watermark wm;
	if (catalog_get_watermark(f->cat, w->id, &wm, err) < 0)
		return -1;
	struct scan_opts o = catalog_scan_opts(&wm);
	/* A compact read: no tree per event (an open hands it on). */
	if (log_open_load(f->st, w->id, &o, &w->lg, err) == 0) {
		if (it->kind != FIFO_OPEN)
			load_free(log_take_load(w->lg)); /* only an open hands the read on */
		heal_watermark(f, w);
		trim_handles(f, w);
		return 0;
	}
	if (err->cls != CERR_MISSING || !it->create)
		return -1;
	if (log_create(f->st, w->id, it->cwd, it->header, &w->lg, err) < 0)
		return -1;
	trim_handles(f, w);
	return 0;
}

int fifo_sess_reproject(struct fifo *f, struct fifo_sess *w, struct cerr *err)
{
	fifo_lane_quiesce(f, w);
	if (log_reread_full(w->lg, err) < 0) /* the projection needs every event */
		return -1;
	struct session_ref ref;
	if (store_find_in(f->st, STORE_SESSIONS, w->id, &ref, err) < 0)
		return -1;
	struct cat_watermark wm = catalog_watermark_of(log_durable(w->lg));
	return catalog_project_scan(f->cat, &ref, log_scan(w->lg), 0, &wm, err);
}

int fifo_sess_refresh(struct fifo *f, struct fifo_sess *w, struct cerr *err)
{
	/* A row rebuilt from a log of 1,000 turns is most of the cost of
	 * opening it (its search index rewritten whole). The file as read:
	 * all of it, nothing cut or appended since. */
	const struct scan *s = log_scan(w->lg);
	struct revision file = log_revision_of(w->lg);
	struct session_ref ref;
	struct stat st;
	bool current = false;
	if (s && s->status == SCAN_OK && file.next_seq == log_next_seq(w->lg) &&
	    fsops->fstat(log_fd(w->lg), &st) == 0 && (uint64_t)st.st_dev == file.dev &&
	    (uint64_t)st.st_ino == file.ino && (uint64_t)st.st_size == file.len &&
	    store_resolve(f->st, w->id, &ref, err) == 0 &&
	    catalog_row_current(f->cat, &ref, &file,
				(int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec, &current,
				err) < 0)
		return -1;
	return current ? 0 : fifo_sess_reproject(f, w, err);
}

/* ---- failure and recovery ---- */

void fifo_sess_fail(struct fifo_sess *w, const struct cerr *err)
{
	if (!w->failed) {
		w->failed = true;
		w->why = *err;
	}
}

void fifo_sess_unsaved(struct fifo *f, struct fifo_sess *w)
{
	struct cerr e;
	catalog_set_status(f->cat, w->id, "unsaved", &e);
}

/* Recovery by a full save: read the log again through the same handle
 * (which syncs or cuts what a failed sync left unsure; a fresh handle would
 * build on it) and rebuild the session's row from it, since the catalog
 * may hold a projection of writes that failed. */
int fifo_sess_recover(struct fifo *f, struct fifo_sess *w, const struct fifo_item *it,
		      struct cerr *err)
{
	if (fifo_sess_ensure_log(f, w, it, err) < 0)
		return -1;
	if (fifo_sess_reproject(f, w, err) < 0)
		return err->cls == CERR_MISSING ? 0 : -1; /* never published: the append will */
	return 0;
}

/* ---- durable watermarks ---- */

void fifo_sess_durable_add(struct fifo *f, struct fifo_sess *w)
{
	struct cat_watermark wm = catalog_watermark_of(log_durable(w->lg));
	if (!wm.known)
		return;
	size_t i = 0;
	while (i < f->n_durable && f->durable[i].w != w)
		i++;
	if (i == f->n_durable)
		f->durable = xreallocarray(f->durable, ++f->n_durable, sizeof *f->durable);
	f->durable[i].w = w;
	f->durable[i].version = w->version;
	f->durable[i].wm = wm;
}

bool fifo_sess_durable_record(struct fifo *f, bool skip_round)
{
	struct cerr err;
	for (size_t i = 0; i < f->n_durable; i++) {
		struct durable *d = &f->durable[i];
		if (skip_round && d->w->round == f->round)
			continue;
		if (catalog_set_durable(f->cat, d->w->id, d->version, &d->wm, NULL, &err) < 0)
			return false;
	}
	return true;
}

void fifo_sess_free_all(struct fifo *f)
{
	for (size_t i = 0; i < f->n_ws; i++) {
		fifo_lane_quiesce(f, f->ws[i]);
		log_close(f->ws[i]->lg);
		fifo_lane_destroy(f->ws[i]);
		free(f->ws[i]);
	}
	free(f->ws);
	strmap_release(&f->ws_map);
	free(f->durable);
	f->ws = NULL;
	f->durable = NULL;
	f->n_ws = f->n_durable = 0;
}
