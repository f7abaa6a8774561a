/* fifo_writer.c — how the FIFO's writer thread executes a batch.
 *
 * A batch runs in rounds. A round first prepares each append (history,
 * full save, meta) in post order: the checks, then log_write, which writes
 * the frame without syncing it. Then it commits them together: the logs
 * sync on their lanes (fifo_lane.c), all at once, while this thread
 * projects every write in one catalog transaction; only after both do the
 * items complete. The last round of a batch stays in flight: the writer
 * takes the next batch and writes it while those syncs run, and settles
 * the round in flight (its items complete) just before it commits the
 * next one. That transaction may commit before its log
 * is durable, so it marks each row as not matching a durable file (a
 * catalog_sync elsewhere reads the log again); the watermark and the file
 * identity are recorded after the sync, in the next transaction or when
 * the writer goes idle. So the watermark may lag a log, never lead it.
 * Delete, restore and purge end the round and run on their own. A barrier
 * does nothing here: batches are delivered in order, so it completes after
 * every item posted before it, those of the round in flight included. */
#include "persist/fifo_int.h"
#include "persist/event_batch.h"
#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define MAX_OPEN_LOGS 64      /* writer handles kept open (each holds a lock) */
#define MERGE_MAX_EVENTS 4096 /* events in one merged history append */

/* ---- rounds ---- */

enum proj { PROJ_OK, PROJ_WHOLE, PROJ_FAILED };

/* One append of the round: an item, or a merged group first..last. */
struct pend {
	struct fifo_item *first, *last;
	size_t s; /* its session's part: r->rs[s] */
	cJSON *all; /* events built here (merged, meta); owned */
	struct log_event *evs;
	size_t n;
	uint64_t first_seq, version;
	int64_t batch_t;
	bool full;
	enum proj proj;
};

/* One session's part in a round. */
struct rsess {
	struct wsess *w;
	bool full;          /* a full save (clears the status override) */
	uint64_t upto;      /* its writes' count, for its lane (0: none to sync) */
	bool synced;        /* its log had frames to sync */
	int sync_rc;        /* the outcome of that sync (or of the one before) */
	struct cerr sync_err;
	bool whole;         /* its row is to be rebuilt from the log */
	bool proj_failed;   /* its projection failed; later writes fail with it */
	struct cerr proj_err;
};

/* A round: prepared (written, transaction open), then committed (its
 * projection committed, its logs syncing), then settled (items complete).
 * The last round of a batch may stay committed while the next batch is
 * prepared: it is the writer's round in flight (f->flight). */
struct round {
	struct fifo *f;
	uint64_t num;     /* f->round while it is prepared */
	struct fifo_item *batch; /* delivered when this round settles */
	struct pend *p;
	size_t n, cap;
	struct rsess *rs; /* the sessions written, each once */
	size_t n_rs, cap_rs;
	bool tx;          /* the round's catalog transaction is open */
	bool tx_failed;   /* it could not be opened: the round writes nothing */
	struct cerr tx_err;
};

/* ---- sessions and handles ---- */

static struct wsess *wsess_get(struct fifo *f, const char *id)
{
	for (size_t i = 0; i < f->n_ws; i++)
		if (strcmp(f->ws[i]->id, id) == 0) {
			f->ws[i]->used = ++f->use_clock;
			return f->ws[i];
		}
	struct wsess *w = xcalloc(1, sizeof *w);
	snprintf(w->id, sizeof w->id, "%s", id);
	w->used = ++f->use_clock;
	lane_init(w);
	f->ws = xreallocarray(f->ws, f->n_ws + 1, sizeof *f->ws);
	f->ws[f->n_ws++] = w;
	return w;
}

static void wsess_close_log(struct fifo *f, struct wsess *w)
{
	lane_quiesce(f, w);
	log_close(w->lg);
	w->lg = NULL;
}

/* Keep at most MAX_OPEN_LOGS handles (and so locks) open; never one the
 * current round or the round in flight wrote to. */
static void trim_handles(struct fifo *f, struct wsess *keep)
{
	size_t open = 0;
	for (size_t i = 0; i < f->n_ws; i++)
		open += f->ws[i]->lg != NULL;
	while (open > MAX_OPEN_LOGS) {
		struct wsess *old = NULL;
		for (size_t i = 0; i < f->n_ws; i++) {
			struct wsess *w = f->ws[i];
			bool busy = w->round == f->round ||
				    (f->flight && w->round == f->flight->num); /* may be syncing */
			if (w->lg && w != keep && !w->failed && !busy &&
			    (!old || w->used < old->used))
				old = w;
		}
		if (!old)
			break;
		wsess_close_log(f, old);
		open--;
	}
}

/* The log was just read whole under its writer lock: when every frame is
 * complete and valid past a watermark that lags (a catalog update that
 * failed after a durable write) or is missing, sync it and raise the
 * watermark to all of it, in the transaction the round holds open. Once
 * per log opened, and only when it lags. Best effort: the watermark only
 * stays behind. */
static void heal_watermark(struct fifo *f, struct wsess *w)
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

/* The session's log open for writing, created if the item allows it. */
static int ensure_log(struct fifo *f, struct wsess *w, const struct fifo_item *it,
		      struct cerr *err)
{
	if (w->lg)
		return 0;
	struct cat_watermark wm;
	if (catalog_get_watermark(f->cat, w->id, &wm, err) < 0)
		return -1;
	struct scan_opts o = catalog_scan_opts(&wm);
	if (log_open_opts(f->st, w->id, &o, &w->lg, err) == 0) {
		heal_watermark(f, w);
		trim_handles(f, w);
		return 0;
	}
	if (err->cls != CERR_MISSING || !it->create)
		return -1;
	if (log_create(f->st, w->id, it->cwd, NULL, &w->lg, err) < 0)
		return -1;
	trim_handles(f, w);
	return 0;
}

static struct cat_watermark durable_wm(const struct log *lg)
{
	return catalog_watermark_of(log_durable(lg));
}

/* Project the session whole from its log read again (its row lags the
 * log, is missing, or may hold writes that failed). */
static int reproject(struct fifo *f, struct wsess *w, uint64_t *version, struct cerr *err)
{
	lane_quiesce(f, w);
	if (log_reread(w->lg, err) < 0)
		return -1;
	struct session_ref ref;
	if (store_resolve(f->st, w->id, &ref, err) < 0)
		return -1;
	struct cat_watermark wm = durable_wm(w->lg);
	if (catalog_project_scan(f->cat, &ref, log_scan(w->lg), 0, &wm, err) < 0)
		return -1;
	if (version)
		*version = log_scan(w->lg)->rev.next_seq;
	return 0;
}

/* ---- failures ---- */

void fifo_fail_items(struct fifo_item *first, struct fifo_item *last, const struct cerr *err)
{
	for (struct fifo_item *m = first;; m = m->next) {
		m->failed = true;
		m->err = *err;
		if (m == last)
			break;
	}
}

/* A conflict or a failed write leaves a gap the session must not write
 * past until a full save recovers it. */
static void set_failed(struct wsess *w, const struct cerr *err)
{
	if (!w->failed) {
		w->failed = true;
		w->why = *err;
	}
}

/* A failed full save leaves the session unsaved. */
static void set_unsaved(struct fifo *f, struct wsess *w)
{
	struct cerr e;
	catalog_set_status(f->cat, w->id, "unsaved", &e);
}

/* ---- a round ---- */

/* Record the watermarks left from earlier rounds, in the open
 * transaction; a session this round writes again gets a newer one after
 * it, which replaces its own. A failure is no reason to fail the round:
 * they stay for the next transaction. */
static bool record_durable(struct fifo *f)
{
	struct cerr err;
	for (size_t i = 0; i < f->n_durable; i++) {
		struct durable *d = &f->durable[i];
		if (d->w->round != f->round &&
		    catalog_set_durable(f->cat, d->w->id, d->version, &d->wm, NULL, &err) < 0)
			return false;
	}
	return true;
}

/* Project write p in the open transaction: PROJ_OK, PROJ_WHOLE (its row
 * lags the log or is missing: the whole log is projected after the sync),
 * or PROJ_FAILED with the error in *e. */
static enum proj project_one(struct fifo *f, struct pend *p, struct wsess *w, struct cerr *e)
{
	enum proj res = PROJ_OK;
	if (p->n > 0 && catalog_project_batch(f->cat, w->id, p->first_seq, p->batch_t, p->evs,
					      p->n, NULL, &p->version, e) < 0) {
		if (e->cls != CERR_CONFLICT && e->cls != CERR_MISSING)
			return PROJ_FAILED;
		res = PROJ_WHOLE;
	}
	if (p->full && catalog_set_status(f->cat, w->id, NULL, e) < 0 && e->cls != CERR_MISSING)
		return PROJ_FAILED; /* settled: no override */
	return res;
}

/* The rest of the round's catalog transaction, which prepare() opened
 * before the first write (so a busy catalog fails a round before it writes
 * anything). It runs while the logs sync on helpers: the watermarks
 * left from earlier rounds, each write's projection, the commit. When one
 * write's projection fails, the transaction is rolled back and run again
 * without that session's writes, so no savepoint is needed per write. */
static void project_round(struct round *r)
{
	struct fifo *f = r->f;
	struct cerr err;
	for (;;) {
		if (!r->tx && catalog_begin(f->cat, &err) < 0)
			break;
		r->tx = true;
		bool durable_ok = record_durable(f);
		bool again = false;
		for (size_t k = 0; k < r->n_rs; k++)
			r->rs[k].whole = false;
		for (size_t i = 0; i < r->n && !again; i++) {
			struct pend *p = &r->p[i];
			struct rsess *rs = &r->rs[p->s];
			if (rs->proj_failed || rs->sync_rc < 0) {
				p->proj = PROJ_FAILED; /* never past a write the catalog missed */
				continue;
			}
			p->proj = project_one(f, p, rs->w, &err);
			if (p->proj == PROJ_WHOLE)
				rs->whole = true;
			if (p->proj == PROJ_FAILED) {
				rs->proj_failed = true;
				rs->proj_err = err;
				again = true;
			}
		}
		if (again) {
			catalog_rollback(f->cat);
			r->tx = false;
			continue;
		}
		r->tx = false;
		if (catalog_commit(f->cat, &err) < 0)
			break;
		if (durable_ok)
			f->n_durable = 0;
		return;
	}
	/* No transaction, or its commit failed: no write of the round is in
	 * the catalog. */
	for (size_t i = 0; i < r->n; i++) {
		struct rsess *rs = &r->rs[r->p[i].s];
		r->p[i].proj = PROJ_FAILED;
		rs->whole = false;
		if (!rs->proj_failed)
			rs->proj_failed = true, rs->proj_err = err;
	}
}

/* Remember a watermark to record with the next transaction (one per
 * session: a newer one replaces it). */
static void add_durable(struct fifo *f, struct wsess *w)
{
	struct cat_watermark wm = durable_wm(w->lg);
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

/* Rebuild from their logs, in one transaction, the rows the round's
 * projection could not extend (new sessions, rows that lag); their logs
 * are synced by now. No transaction is open. */
static void whole_rows(struct round *r)
{
	struct fifo *f = r->f;
	struct cerr err;
	bool any = false;
	for (size_t k = 0; k < r->n_rs; k++)
		any |= r->rs[k].whole && r->rs[k].sync_rc == 0;
	if (!any)
		return;
	bool tx = catalog_begin(f->cat, &err) == 0;
	for (size_t k = 0; k < r->n_rs; k++) {
		struct rsess *rs = &r->rs[k];
		if (!rs->whole || rs->sync_rc < 0)
			continue;
		struct cerr e = err;
		if (tx && catalog_savepoint(f->cat, &e) == 0) {
			if (reproject(f, rs->w, NULL, &e) == 0) {
				catalog_savepoint_release(f->cat);
				continue;
			}
			catalog_savepoint_rollback(f->cat);
		}
		rs->whole = false;
		rs->proj_failed = true;
		rs->proj_err = e;
	}
	if (tx && catalog_commit(f->cat, &err) < 0)
		for (size_t k = 0; k < r->n_rs; k++) {
			struct rsess *rs = &r->rs[k];
			if (rs->whole && rs->sync_rc == 0) {
				rs->whole = false;
				rs->proj_failed = true;
				rs->proj_err = err;
			}
		}
}

/* Rebuild a row from its log after a failed sync rolled the log back
 * (the projection may have committed); inside the transaction `cur` holds
 * open, if any, under a savepoint. If that fails too, the row stays marked
 * as not durable and a recovery save rebuilds it. */
static void reproject_after(struct fifo *f, struct wsess *w, const struct round *cur)
{
	struct cerr e;
	if (!cur || !cur->tx) {
		reproject(f, w, NULL, &e);
	} else if (catalog_savepoint(f->cat, &e) == 0) {
		if (reproject(f, w, NULL, &e) == 0)
			catalog_savepoint_release(f->cat);
		else
			catalog_savepoint_rollback(f->cat);
	}
}

/* Settle committed round r: wait for its syncs, then complete its items.
 * `cur` is the round being prepared meanwhile (or NULL): a failed sync
 * also took back the frames cur wrote to that log since, so cur's writes
 * of that session fail with it. */
static void settle(struct round *r, struct round *cur)
{
	struct fifo *f = r->f;
	for (size_t k = 0; k < r->n_rs; k++) {
		struct rsess *rs = &r->rs[k];
		if (!rs->synced)
			continue;
		int e = lane_wait(rs->w, rs->upto);
		if (e)
			lane_quiesce(f, rs->w); /* before the log is rolled back */
		rs->sync_rc = log_sync_end(rs->w->lg, e, &rs->sync_err);
		if (e)
			lane_reset(f, rs->w);
	}
	for (size_t k = 0; k < r->n_rs; k++) {
		struct rsess *rs = &r->rs[k];
		struct wsess *w = rs->w;
		if (rs->sync_rc == 0)
			continue;
		reproject_after(f, w, cur);
		if (cur && w->round == cur->num) {
			struct rsess *c = &cur->rs[w->rs_idx];
			c->sync_rc = -1;
			c->sync_err = rs->sync_err;
		}
	}
	whole_rows(r); /* only in a round settled as it commits: no transaction */
	for (size_t i = 0; i < r->n; i++) {
		struct pend *p = &r->p[i];
		struct rsess *rs = &r->rs[p->s];
		struct wsess *w = rs->w;
		if (rs->sync_rc < 0) {
			set_failed(w, &rs->sync_err);
			fifo_fail_items(p->first, p->last, &rs->sync_err);
		} else {
			/* Durable. A projection that failed (or a rebuild that
			 * did) leaves the catalog behind, not the log: no gap, no
			 * failure; a later write of the session rebuilds its row. */
			bool behind = p->proj == PROJ_FAILED || rs->proj_failed;
			uint64_t seq = p->first_seq;
			for (struct fifo_item *m = p->first;; m = m->next) {
				seq += m->kind == FIFO_META ? 1 : (uint64_t)cJSON_GetArraySize(m->events);
				m->rcpt.next_seq = seq;
				m->rcpt.content_version = p->version;
				if (behind) {
					m->rcpt.catalog_behind = true;
					m->rcpt.catalog_err = rs->proj_err;
				}
				if (m == p->last)
					break;
			}
			w->acked = true;
			w->acked_version = p->version;
			w->behind = behind;
		}
		free(p->evs);
		cJSON_Delete(p->all);
	}
	for (size_t k = 0; k < r->n_rs; k++) {
		struct rsess *rs = &r->rs[k];
		if (rs->sync_rc < 0) {
			if (rs->full)
				set_unsaved(f, rs->w);
		} else if (!rs->proj_failed && rs->synced && !rs->whole) {
			add_durable(f, rs->w); /* a row rebuilt whole recorded it already */
		}
	}
	r->n = r->n_rs = 0;
}

/* Deliver a settled round's batch and free it (r may be NULL). */
static void deliver_round(struct fifo *f, struct round *r)
{
	if (!r)
		return;
	fifo_deliver(f, r->batch);
	free(r->p);
	free(r->rs);
	free(r);
}

/* Settle the round in flight, if any, and deliver its batch; `cur` as for
 * settle(). */
static void settle_flight(struct fifo *f, struct round *cur)
{
	struct round *r = f->flight;
	if (!r)
		return;
	f->flight = NULL;
	settle(r, cur);
	deliver_round(f, r);
}

/* Commit round r: every log r wrote syncs on a helper, on its lane right
 * after the syncs of the round in flight, while this thread commits r's
 * projection; then the round in flight settles (its syncs have had the
 * projection's time to end). The projection is built on the flight's
 * writes before their syncs are known: if one fails, it rolled back r's
 * writes to that log too, so those fail with it and settle() rebuilds the
 * row from the log. If `may_fly` and r needs nothing more from the
 * catalog, r stays in flight, to settle when the next round commits (its
 * writes made meanwhile); else it settles now. */
static void commit_round(struct round *r, bool may_fly)
{
	struct fifo *f = r->f;
	for (size_t k = 0; k < r->n_rs; k++) {
		struct rsess *rs = &r->rs[k];
		struct wsess *w = rs->w;
		if (w->lg && log_pending(w->lg))
			lane_request(f, w, rs->upto = ++w->gen);
	}
	r->tx_failed = false;
	if (fifo_writer_flight_synced(f))
		settle_flight(f, r); /* its receipts need not wait for r's projection */
	if (r->n > 0) {
		project_round(r);
	} else if (r->tx) {
		struct cerr e;
		if (catalog_commit(f->cat, &e) < 0)
			catalog_rollback(f->cat);
		r->tx = false;
	}
	settle_flight(f, r); /* if it was not synced before */
	if (r->n == 0) {
		r->n_rs = 0;
		r->num = ++f->round;
		ckpt_after_commit(f);
		return;
	}
	for (size_t k = 0; k < r->n_rs; k++) {
		struct rsess *rs = &r->rs[k];
		rs->synced = rs->upto && rs->sync_rc == 0 && log_sync_begin(rs->w->lg);
	}
	f->round++;
	bool fly = may_fly;
	for (size_t k = 0; k < r->n_rs && fly; k++)
		fly = !r->rs[k].whole && !r->rs[k].proj_failed && r->rs[k].sync_rc == 0;
	if (fly) {
		f->flight = r;
	} else {
		settle(r, NULL);
		r->num = f->round;
	}
	ckpt_after_commit(f);
}

/* Recovery by a full save: read the log again through the same handle
 * (which syncs or cuts what a failed sync left unsure; a fresh handle would
 * build on it) and rebuild the session's row from it, since the catalog
 * may hold a projection of writes that failed. */
static int recover(struct fifo *f, struct wsess *w, const struct fifo_item *it, struct cerr *err)
{
	if (!w->lg) {
		if (ensure_log(f, w, it, err) < 0)
			return -1;
	}
	if (reproject(f, w, NULL, err) < 0)
		return err->cls == CERR_MISSING ? 0 : -1; /* never published: the append will */
	return 0;
}

/* Prepare history, full save or meta items first..last of one session. */
static void prepare(struct round *r, struct fifo_item *first, struct fifo_item *last)
{
	struct fifo *f = r->f;
	struct wsess *w = wsess_get(f, first->session);
	struct fifo_item *it = first;
	bool full = it->kind == FIFO_FULL_SAVE;
	struct cerr err = {0};
	if (w->failed && !full) {
		/* Never a write after a gap: wait for a full save. */
		cerr_set(&err, w->why.cls, 0, "session '%s' has a failed save before this one (%s); a full save must recover it first",
			 w->id, w->why.msg);
		fifo_fail_items(first, last, &err);
		return;
	}
	if (!w->acked) {
		/* The version this writer finds (0: no row) is what a recovery
		 * save builds on until it acknowledges one. */
		struct cerr e;
		uint64_t v;
		bool found;
		if (catalog_get_version(f->cat, w->id, &v, &found, &e) == 0) {
			w->acked = true;
			w->acked_version = found ? v : 0;
		}
	}
	/* A recovery reads the log: what this session wrote must be settled
	 * first. */
	if (full && w->failed && f->flight && w->round == f->flight->num)
		settle_flight(f, r);
	if (full && w->failed && w->round == r->num)
		commit_round(r, false);
	if (r->tx_failed) {
		err = r->tx_err; /* nothing written: no gap */
		fifo_fail_items(first, last, &err);
		return;
	}
	if (!r->tx) {
		if (catalog_begin(f->cat, &err) < 0) {
			r->tx_failed = true;
			r->tx_err = err;
			fifo_fail_items(first, last, &err);
			return;
		}
		r->tx = true;
	}
	bool checked = false;
	if (full && w->failed) {
		/* The catalog may hold a projection of the failed write: the
		 * version to build on is the one last acknowledged (or found). */
		uint64_t base = w->acked_version;
		bool known = w->acked;
		if (!known && catalog_get_version(f->cat, w->id, &base, &known, &err) < 0)
			goto fail;
		if (known && base != it->expected_version) {
			cerr_set(&err, CERR_CONFLICT, 0, "session '%s' is at version %llu, not %llu",
				 w->id, (unsigned long long)base,
				 (unsigned long long)it->expected_version);
			goto fail;
		}
		if (recover(f, w, it, &err) < 0)
			goto fail;
		checked = true;
	}
	/* Its last write is in this round or the one in flight: that write
	 * makes the version to build on. */
	bool in_round = w->round == r->num || (f->flight && w->round == f->flight->num);
	if (ensure_log(f, w, it, &err) < 0)
		goto fail;
	cJSON *all = NULL;
	const cJSON *arr = it->events;
	uint64_t expected = it->expected_seq;
	if (it->kind == FIFO_META) {
		all = cJSON_CreateArray();
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "type", "session/meta");
		cJSON_AddItemToObject(ev, "data", cJSON_Duplicate(it->meta, 1));
		cJSON_AddItemToArray(all, ev);
		arr = all;
		expected = log_next_seq(w->lg);
	} else if (first != last) {
		all = cJSON_CreateArray();
		for (struct fifo_item *m = first;; m = m->next) {
			for (cJSON *e = m->events->child; e; e = e->next)
				cJSON_AddItemToArray(all, cJSON_Duplicate(e, 1));
			if (m == last)
				break;
		}
		arr = all;
	}
	/* The version a full save builds on: what this round's earlier write
	 * makes, else what this writer acknowledged while the catalog lags,
	 * else the catalog's. */
	uint64_t have = 0;
	bool found = in_round || w->behind;
	if (in_round) {
		have = w->version;
	} else if (w->behind) {
		have = w->acked_version; /* the catalog lags what was acknowledged */
	} else {
		struct cerr e;
		if (catalog_get_version(f->cat, w->id, &have, &found, &e) < 0)
			found = false; /* the projection meets the same error */
	}
	if (full && !checked && found && have != it->expected_version) {
		cerr_set(&err, CERR_CONFLICT, 0, "session '%s' is at version %llu, not %llu", w->id,
			 (unsigned long long)have, (unsigned long long)it->expected_version);
		cJSON_Delete(all);
		goto fail;
	}
	struct event_batch b;
	int rc = event_batch_from_json(arr, &b, &err);
	size_t n = b.n;
	struct log_event *evs = b.evs;
	if (rc == 0)
		rc = log_write(w->lg, expected, evs, n, NULL, &err);
	if (rc == 0 && n == 0 && expected != log_next_seq(w->lg)) {
		/* An empty batch writes nothing, but its expectation still
		 * has to hold. */
		cerr_set(&err, CERR_CONFLICT, 0, "'%s' is at seq %llu, not %llu", w->id,
			 (unsigned long long)log_next_seq(w->lg), (unsigned long long)expected);
		rc = -1;
	}
	if (rc < 0 && err.cls == CERR_USAGE && first != last) {
		/* One invalid event must not fail the valid items merged with
		 * it: nothing was written, prepare them one by one. */
		free(evs);
		cJSON_Delete(all);
		struct fifo_item *stop = last->next;
		for (struct fifo_item *m = first; m != stop; m = m->next) {
			struct fifo_item *keep = m->next;
			prepare(r, m, m);
			m->next = keep;
		}
		return;
	}
	if (rc < 0) {
		free(evs);
		cJSON_Delete(all);
		goto fail;
	}
	if (r->n == r->cap)
		r->p = xreallocarray(r->p, r->cap = r->cap ? 2 * r->cap : 16, sizeof *r->p);
	if (w->round != r->num) {
		if (r->n_rs == r->cap_rs)
			r->rs = xreallocarray(r->rs, r->cap_rs = r->cap_rs ? 2 * r->cap_rs : 16,
					      sizeof *r->rs);
		w->round = r->num;
		w->rs_idx = r->n_rs;
		r->rs[r->n_rs++] = (struct rsess){.w = w};
	}
	struct pend *p = &r->p[r->n++];
	*p = (struct pend){.first = first, .last = last, .s = w->rs_idx, .all = all, .evs = evs,
			   .n = n, .first_seq = expected, .full = full};
	p->batch_t = log_batch_time(w->lg);
	p->version = n > 0 ? log_next_seq(w->lg) : found ? have : 0;
	r->rs[w->rs_idx].full |= full;
	w->version = p->version;
	if (full)
		w->failed = false; /* recovered, unless this write fails */
	return;
fail:
	/* A usage error or a missing session wrote nothing and changes
	 * nothing. */
	if (err.cls != CERR_USAGE && err.cls != CERR_MISSING)
		set_failed(w, &err);
	if (full)
		set_unsaved(f, w);
	fifo_fail_items(first, last, &err);
}

static bool running_elsewhere(struct fifo *f, const char *id)
{
	struct cat_session row;
	struct cerr e;
	if (catalog_get(f->cat, id, &row, &e) < 0)
		return false;
	bool running = row.status && strcmp(row.status, "running") == 0;
	cat_session_release(&row);
	return running;
}

/* A move that is done while the catalog could not record it. */
static void behind(struct fifo_item *it, const struct cerr *e)
{
	it->rcpt.catalog_behind = true;
	it->rcpt.catalog_err = *e;
}

/* Delete, restore or purge: this writer's own handle goes first (it holds
 * the lock); a session running here or locked elsewhere stays. */
static void run_move(struct fifo *f, struct fifo_item *it)
{
	struct wsess *w = wsess_get(f, it->session);
	struct cerr err = {0};
	if (it->kind != FIFO_RESTORE && running_elsewhere(f, w->id)) {
		cerr_set(&err, CERR_LOCKED, 0, "session '%s' is running", w->id);
		goto fail;
	}
	wsess_close_log(f, w);
	struct session_ref ref;
	struct cerr e;
	if (it->kind == FIFO_DELETE) {
		int64_t at = 0;
		if (store_resolve(f->st, it->session, &ref, &err) < 0 ||
		    strcmp(ref.id, it->session) != 0 || store_trash(f->st, &ref, &at, &err) < 0)
			goto fail;
		it->rcpt.deleted_at = at;
		/* Moved: done, even when the catalog is not told (its next
		 * sync sees where the session is). */
		if (catalog_set_deleted(f->cat, ref.id, at, &e) < 0 && e.cls != CERR_MISSING)
			behind(it, &e);
	} else if (it->kind == FIFO_RESTORE) {
		if (store_resolve_in(f->st, STORE_TRASH, it->session, &ref, &err) < 0 ||
		    store_restore(f->st, &ref, &err) < 0)
			goto fail;
		if (catalog_set_deleted(f->cat, ref.id, 0, &e) < 0 && e.cls != CERR_MISSING)
			behind(it, &e);
	} else {
		if (store_resolve_in(f->st, STORE_TRASH, it->session, &ref, &err) < 0 ||
		    store_purge(f->st, &ref, &err) < 0 || catalog_forget(f->cat, ref.id, &err) < 0 ||
		    catalog_drop_watermark(f->cat, ref.id, &err) < 0)
			goto fail;
	}
	return;
fail:
	fifo_fail_items(it, it, &err);
}

/* May `b` be merged into the history group ending at `a`? */
static bool mergeable(const struct fifo_item *a, const struct fifo_item *b, size_t n)
{
	return b && a->kind == FIFO_HISTORY && b->kind == FIFO_HISTORY &&
	       strcmp(a->session, b->session) == 0 && !b->create &&
	       b->expected_seq == a->expected_seq + (uint64_t)cJSON_GetArraySize(a->events) &&
	       n + (size_t)cJSON_GetArraySize(b->events) <= MERGE_MAX_EVENTS;
}

void fifo_writer_process(struct fifo *f, struct fifo_item *batch)
{
	struct round *r = xcalloc(1, sizeof *r);
	r->f = f;
	r->num = f->round;
	r->batch = batch;
	for (struct fifo_item *it = batch; it;) {
		struct fifo_item *last = it;
		size_t n = (size_t)cJSON_GetArraySize(it->events);
		while (mergeable(last, last->next, n)) {
			n += (size_t)cJSON_GetArraySize(last->next->events);
			last = last->next;
		}
		struct fifo_item *next = last->next;
		if (it->kind == FIFO_BARRIER) {
			/* Nothing to do: it completes with its batch, which is
			 * delivered after every earlier batch, the round in flight
			 * included (commit_round settles it). */
		} else if (it->kind == FIFO_DRAFT) {
			next = fifo_draft_run(f, it)->next; /* no log: nothing to commit first */
		} else if (it->kind == FIFO_DELETE || it->kind == FIFO_RESTORE || it->kind == FIFO_PURGE) {
			commit_round(r, false);
			run_move(f, it);
		} else {
			prepare(r, it, last);
		}
		it = next;
	}
	commit_round(r, true);
	if (f->flight == r)
		return; /* delivered when it settles */
	fifo_deliver(f, batch);
	free(r->p);
	free(r->rs);
	free(r);
}

void fifo_writer_settle(struct fifo *f)
{
	settle_flight(f, NULL);
}

bool fifo_writer_flight_synced(struct fifo *f)
{
	const struct round *r = f->flight;
	for (size_t k = 0; r && k < r->n_rs; k++)
		if (r->rs[k].synced && !lane_ended(r->rs[k].w, r->rs[k].upto))
			return false;
	return true;
}

void fifo_writer_idle(struct fifo *f)
{
	struct cerr err;
	if (f->n_durable && catalog_begin(f->cat, &err) == 0) {
		size_t i = 0;
		while (i < f->n_durable) {
			struct durable *d = &f->durable[i];
			if (catalog_set_durable(f->cat, d->w->id, d->version, &d->wm, NULL, &err) < 0)
				break;
			i++;
		}
		if (i < f->n_durable)
			catalog_rollback(f->cat); /* kept for the next transaction */
		else if (catalog_commit(f->cat, &err) == 0)
			f->n_durable = 0;
	}
	ckpt_idle(f);
}

void fifo_writer_free(struct fifo *f)
{
	ckpt_stop(f);
	for (size_t i = 0; i < f->n_ws; i++) {
		lane_quiesce(f, f->ws[i]);
		log_close(f->ws[i]->lg);
		lane_destroy(f->ws[i]);
		free(f->ws[i]);
	}
	free(f->ws);
	free(f->durable);
	f->ws = NULL;
	f->durable = NULL;
	f->n_ws = f->n_durable = 0;
}
