/* fifo_round.c — a round of the FIFO's writer: the appends of a batch
 * written together, synced together and projected in one catalog
 * transaction.
 *
 * A round first prepares each append (history, full save, meta) in post
 * order: the checks, then log_write, which writes the frame without
 * syncing it. Then it commits them together: the logs sync on their lanes
 * (fifo_lane.c), all at once, while this thread projects every write in
 * one catalog transaction; only after both do the items complete. The
 * last round of a batch stays in flight: the writer takes the next batch
 * and writes it while those syncs run, and settles the round in flight
 * (its items complete) just before it commits the next one. That
 * transaction may commit before its log is durable, so it marks each row
 * as not matching a durable file (a catalog_sync elsewhere reads the log
 * again); the watermark and the file identity are recorded after the
 * sync, in the next transaction or when the writer goes idle. So the
 * watermark may lag a log, never lead it.
 *
 * A round's phases (enum round_state), changed only by round_to():
 *
 *   EMPTY --(first write: its transaction opens)--> WRITING
 *   EMPTY --(the transaction cannot open)--> BARRED (every later write of
 *                                            the round fails, none written)
 *   EMPTY | WRITING | BARRED --(commit: syncs requested, the projection
 *                               committed or rolled back)--> PROJECTED
 *   PROJECTED --(nothing was written)--> EMPTY (the next round number)
 *   PROJECTED --(the batch's last round, all projected)--> IN_FLIGHT
 *   PROJECTED | IN_FLIGHT --(syncs waited for, items complete)--> SETTLED
 *   SETTLED --(the batch goes on: the next round number)--> EMPTY
 *
 * A round is freed, its batch delivered, when EMPTY after its batch's end
 * or SETTLED from IN_FLIGHT. */
#include "persist/fifo_int.h"
#include "base/xalloc.h"
#include "persist/event_batch.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

enum round_state {
	ROUND_EMPTY,     /* nothing written, no transaction */
	ROUND_WRITING,   /* writes prepared, the transaction open */
	ROUND_BARRED,    /* the transaction could not open: the round writes nothing */
	ROUND_PROJECTED, /* the transaction ended; the logs syncing */
	ROUND_IN_FLIGHT, /* projected, its syncs running while the next batch is written */
	ROUND_SETTLED,   /* syncs known, every item completed */
};

/* The transitions above: round_next[from] has bit `to` set. */
static const unsigned round_next[] = {
	[ROUND_EMPTY] = 1u << ROUND_WRITING | 1u << ROUND_BARRED | 1u << ROUND_PROJECTED,
	[ROUND_WRITING] = 1u << ROUND_PROJECTED,
	[ROUND_BARRED] = 1u << ROUND_PROJECTED,
	[ROUND_PROJECTED] = 1u << ROUND_EMPTY | 1u << ROUND_IN_FLIGHT | 1u << ROUND_SETTLED,
	[ROUND_IN_FLIGHT] = 1u << ROUND_SETTLED,
	[ROUND_SETTLED] = 1u << ROUND_EMPTY,
};

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
	bool running; /* an item of it marks the session running */
	enum proj proj;
};

/* One session's part in a round. */
struct rsess {
	struct fifo_sess *w;
	bool full;          /* a full save (clears the status override) */
	bool running;       /* its last write marks it running (a full save: not) */
	uint64_t upto;      /* its writes' count, for its lane (0: none to sync) */
	bool synced;        /* its log had frames to sync */
	int sync_rc;        /* the outcome of that sync (or of the one before) */
	struct cerr sync_err;
	bool whole;         /* its row is to be rebuilt from the log */
	bool proj_failed;   /* its projection failed; later writes fail with it */
	struct cerr proj_err;
};

/* A round (see the phases above); the one IN_FLIGHT is f->flight. */
struct round {
	struct fifo *f;
	uint64_t num;     /* f->round while it is prepared */
	struct fifo_item *batch; /* delivered when this round settles */
	struct pend *p;
	size_t n, cap;
	struct rsess *rs; /* the sessions written, each once */
	size_t n_rs, cap_rs;
	enum round_state state;
	struct cerr tx_err; /* BARRED: why */
};

static void round_to(struct round *r, enum round_state to)
{
	assert(round_next[r->state] & (1u << to));
	r->state = to;
	if (to == ROUND_EMPTY) {
		r->n = r->n_rs = 0;
		r->num = r->f->round;
	}
}

/* ---- a round ---- */

/* Project write p in the open transaction: PROJ_OK, PROJ_WHOLE (its row
 * lags the log or is missing: the whole log is projected after the sync),
 * or PROJ_FAILED with the error in *e. */
static enum proj project_one(struct fifo *f, struct pend *p, struct fifo_sess *w, struct cerr *e)
{
	enum proj res = PROJ_OK;
	if (p->n > 0 && catalog_project_batch(f->cat, w->id, p->first_seq, p->batch_t, p->evs,
					      p->n, NULL, &p->version, e) < 0) {
		if (e->cls != CERR_CONFLICT && e->cls != CERR_MISSING)
			return PROJ_FAILED;
		res = PROJ_WHOLE;
	}
	/* A full save settles the session: no override. A row still missing
	 * gets its status after the whole projection (whole_rows). */
	if ((p->full || p->running) &&
	    catalog_set_status(f->cat, w->id, p->full ? NULL : "running", e) < 0 &&
	    e->cls != CERR_MISSING)
		return PROJ_FAILED;
	return res;
}

/* The rest of the round's catalog transaction, which fifo_round_prepare opened
 * before the first write (so a busy catalog fails a round before it writes
 * anything). It runs while the logs sync on helpers: the watermarks
 * left from earlier rounds, each write's projection, the commit. When one
 * write's projection fails, the transaction is rolled back and run again
 * without that session's writes, so no savepoint is needed per write. */
static void project_round(struct round *r)
{
	struct fifo *f = r->f;
	struct cerr err;
	bool open = r->state == ROUND_WRITING;
	for (;;) {
		if (!open && catalog_begin(f->cat, &err) < 0)
			break;
		open = true;
		bool durable_ok = fifo_sess_durable_record(f, true);
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
			open = false;
			continue;
		}
		round_to(r, ROUND_PROJECTED);
		if (catalog_commit(f->cat, &err) < 0)
			break;
		if (durable_ok)
			f->n_durable = 0;
		return;
	}
	if (r->state != ROUND_PROJECTED)
		round_to(r, ROUND_PROJECTED);
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
			if (fifo_sess_reproject(f, rs->w, &e) == 0 &&
			    (!rs->running || catalog_set_status(f->cat, rs->w->id, "running", &e) == 0)) {
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
static void reproject_after(struct fifo *f, struct fifo_sess *w, const struct round *cur)
{
	struct cerr e;
	if (!cur || cur->state != ROUND_WRITING) {
		fifo_sess_reproject(f, w, &e);
	} else if (catalog_savepoint(f->cat, &e) == 0) {
		if (fifo_sess_reproject(f, w, &e) == 0)
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
		int e = fifo_lane_wait(rs->w, rs->upto);
		if (e)
			fifo_lane_quiesce(f, rs->w); /* before the log is rolled back */
		rs->sync_rc = log_sync_end(rs->w->lg, e, &rs->sync_err);
		if (e)
			fifo_lane_reset(f, rs->w);
	}
	for (size_t k = 0; k < r->n_rs; k++) {
		struct rsess *rs = &r->rs[k];
		struct fifo_sess *w = rs->w;
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
		struct fifo_sess *w = rs->w;
		if (rs->sync_rc < 0) {
			fifo_sess_fail(w, &rs->sync_err);
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
				fifo_sess_unsaved(f, rs->w);
		} else if (!rs->proj_failed && rs->synced && !rs->whole) {
			fifo_sess_durable_add(f, rs->w); /* a row rebuilt whole recorded it already */
		}
	}
	round_to(r, ROUND_SETTLED);
}

/* Deliver a settled round's batch and free it (r may be NULL). */
static void deliver_round(struct fifo *f, struct round *r)
{
	fifo_deliver(f, r->batch);
	free(r->p);
	free(r->rs);
	free(r);
}

/* Settle the round in flight, if any, and deliver its batch; `cur` as for
 * settle(). */
void fifo_round_settle_flight(struct fifo *f, struct round *cur)
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
void fifo_round_commit(struct round *r, bool may_fly)
{
	struct fifo *f = r->f;
	for (size_t k = 0; k < r->n_rs; k++) {
		struct rsess *rs = &r->rs[k];
		struct fifo_sess *w = rs->w;
		if (w->lg && log_pending(w->lg))
			fifo_lane_request(f, w, rs->upto = ++w->gen);
	}
	if (fifo_round_flight_synced(f))
		fifo_round_settle_flight(f, r); /* its receipts need not wait for r's projection */
	if (r->n > 0) {
		project_round(r);
	} else {
		struct cerr e;
		if (r->state == ROUND_WRITING && catalog_commit(f->cat, &e) < 0)
			catalog_rollback(f->cat);
		round_to(r, ROUND_PROJECTED);
	}
	fifo_round_settle_flight(f, r); /* if it was not synced before */
	if (r->n == 0) {
		f->round++;
		round_to(r, ROUND_EMPTY);
		fifo_ckpt_after_commit(f);
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
		round_to(r, ROUND_IN_FLIGHT);
		f->flight = r;
	} else {
		settle(r, NULL);
		round_to(r, ROUND_EMPTY);
	}
	fifo_ckpt_after_commit(f);
}

/* Prepare history, full save or meta items first..last of one session. */
void fifo_round_prepare(struct round *r, struct fifo_item *first, struct fifo_item *last)
{
	struct fifo *f = r->f;
	struct fifo_sess *w = fifo_sess_get(f, first->session);
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
		fifo_round_settle_flight(f, r);
	if (full && w->failed && w->round == r->num)
		fifo_round_commit(r, false);
	if (r->state == ROUND_BARRED) {
		err = r->tx_err; /* nothing written: no gap */
		fifo_fail_items(first, last, &err);
		return;
	}
	if (r->state == ROUND_EMPTY) {
		if (catalog_begin(f->cat, &err) < 0) {
			round_to(r, ROUND_BARRED);
			r->tx_err = err;
			fifo_fail_items(first, last, &err);
			return;
		}
		round_to(r, ROUND_WRITING);
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
		if (fifo_sess_recover(f, w, it, &err) < 0)
			goto fail;
		checked = true;
	}
	/* Its last write is in this round or the one in flight: that write
	 * makes the version to build on. */
	bool in_round = fifo_round_holds(f, w);
	if (fifo_sess_ensure_log(f, w, it, &err) < 0)
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
	struct event_batch b = EVENT_BATCH_INIT;
	/* A long text goes to a blob first: durable before the event naming
	 * it is written (a crash between the two leaves a blob repair sweeps). */
	int rc = fifo_spill_batch(w->lg, (cJSON *)arr, &err);
	if (rc == 0)
		rc = event_batch_from_json(arr, &b, &err);
	size_t n = b.n;
	struct log_event *evs = b.evs; /* owned here: freed with the write (p->evs) */
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
			fifo_round_prepare(r, m, m);
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
	for (struct fifo_item *m = first;; m = m->next) {
		p->running |= m->running;
		if (m == last)
			break;
	}
	if (full || p->running)
		r->rs[w->rs_idx].running = p->running && !full;
	w->version = p->version;
	if (full)
		w->failed = false; /* recovered, unless this write fails */
	return;
fail:
	/* A usage error or a missing session wrote nothing and changes
	 * nothing. */
	if (err.cls != CERR_USAGE && err.cls != CERR_MISSING)
		fifo_sess_fail(w, &err);
	if (full)
		fifo_sess_unsaved(f, w);
	fifo_fail_items(first, last, &err);
}

struct round *fifo_round_new(struct fifo *f, struct fifo_item *batch)
{
	struct round *r = xcalloc(1, sizeof *r);
	r->f = f;
	r->num = f->round;
	r->batch = batch;
	return r;
}

bool fifo_round_end(struct round *r)
{
	fifo_round_commit(r, true);
	if (r->state == ROUND_IN_FLIGHT)
		return false; /* delivered when it settles */
	deliver_round(r->f, r);
	return true;
}

bool fifo_round_flight_synced(const struct fifo *f)
{
	const struct round *r = f->flight;
	for (size_t k = 0; r && k < r->n_rs; k++)
		if (r->rs[k].synced && !fifo_lane_ended(r->rs[k].w, r->rs[k].upto))
			return false;
	return true;
}

bool fifo_round_holds(const struct fifo *f, const struct fifo_sess *w)
{
	return w->round == f->round || (f->flight && w->round == f->flight->num);
}
