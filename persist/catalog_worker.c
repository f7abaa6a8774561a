/* catalog_worker.c — listing and search off the loop thread (see
 * catalog_worker.h for the contract).
 *
 * Which thread touches what:
 *   loop thread: the worker struct, each lane's running/waiting requests,
 *     and the decision to stop a lane's running request (lane->stop);
 *   the pool thread running a lane's request: the lane's store and
 *     connection (opened there on first use; closed by the close work,
 *     which runs when no request of either lane is running);
 *   both: lane->stop (atomic: set on the loop, read by the connection's
 *     progress handler) and lane->db (atomic: published once the
 *     connection is open, so the loop can sqlite3_interrupt it; never
 *     closed while a request could still be interrupted).
 * uv_queue_work orders the rest: a lane starts its next request only from
 * the completion of the last one, on the loop. */
#include "persist/catalog_worker.h"
#include "persist/catalog_int.h"
#include "base/bgprio.h"
#include "base/xalloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* VM steps between two looks at lane->stop: a few microseconds. */
#define PROGRESS_STEPS 1000

enum lane_kind { LANE_LIST, LANE_SEARCH, LANES };

struct req;

struct lane {
	struct catalog_worker *w;
	enum lane_kind kind;
	struct req *running, *waiting; /* loop thread */
	atomic_bool stop;              /* the running request is superseded or closing */
	_Atomic(sqlite3 *) db;         /* the connection, once open */
	struct store *st;              /* pool thread (one request at a time) */
	struct catalog *cat;
};

struct req {
	struct lane *lane;
	uv_work_t work;
	catalog_worker_cb cb;
	void *ctx;
	struct catalog_worker_listing what; /* lists; what.project is ours */
	char *query;                        /* searches */
	size_t limit;
	bool with_deleted;
	struct catalog_worker_result r;
};

struct catalog_worker {
	uv_loop_t *loop;
	char *root;
	struct lane lanes[LANES];
	atomic_size_t started;
	bool closing, close_queued;
	catalog_worker_close_cb close_cb;
	void *close_ctx;
	uv_work_t close_work;
};

struct catalog_worker *catalog_worker_new(uv_loop_t *loop, const char *root)
{
	struct catalog_worker *w = xcalloc(1, sizeof *w);
	w->loop = loop;
	w->root = xstrdup(root);
	atomic_init(&w->started, 0);
	for (int i = 0; i < LANES; i++) {
		w->lanes[i].w = w;
		w->lanes[i].kind = (enum lane_kind)i;
		atomic_init(&w->lanes[i].stop, false);
		atomic_init(&w->lanes[i].db, NULL);
	}
	return w;
}

size_t catalog_worker_started(const struct catalog_worker *w)
{
	return atomic_load(&((struct catalog_worker *)w)->started);
}

static void req_free(struct req *q)
{
	free((char *)q->what.project);
	free(q->query);
	cat_sessions_free(q->r.sessions, q->r.n_sessions);
	cat_hits_free(q->r.hits, q->r.n_hits);
	free(q);
}

/* Deliver q's outcome and free it. Results go to the receiver only with
 * CATALOG_WORKER_DONE. */
static void complete(struct req *q, enum catalog_worker_outcome outcome)
{
	q->r.outcome = outcome;
	if (outcome != CATALOG_WORKER_DONE) {
		cat_sessions_free(q->r.sessions, q->r.n_sessions);
		cat_hits_free(q->r.hits, q->r.n_hits);
		q->r.sessions = NULL, q->r.hits = NULL;
		q->r.n_sessions = q->r.n_hits = 0;
	}
	q->cb(q->ctx, &q->r);
	q->r.sessions = NULL, q->r.hits = NULL; /* the receiver's now */
	q->r.n_sessions = q->r.n_hits = 0;
	req_free(q);
}

/* ---- the pool thread ---- */

static int progress(void *arg)
{
	return atomic_load_explicit(&((struct lane *)arg)->stop, memory_order_relaxed);
}

/* The lane's connection, opened on first use. */
static int lane_open(struct lane *l, struct cerr *err)
{
	if (l->cat)
		return 0;
	if (!l->st && store_open(l->w->root, false, &l->st, err) < 0)
		return -1;
	if (catalog_open_ro(l->st, &l->cat, err) < 0)
		return -1;
	if (l->kind == LANE_SEARCH)
		sqlite3_progress_handler(l->cat->db, PROGRESS_STEPS, progress, l);
	atomic_store(&l->db, l->cat->db);
	return 0;
}

/* A search interrupted in its transaction may not have been able to end
 * it (the ROLLBACK is interrupted too): end it here, with the progress
 * handler off, or the next BEGIN fails and the snapshot holds the WAL. */
static void end_tx(struct lane *l)
{
	sqlite3 *db = l->cat->db;
	if (sqlite3_get_autocommit(db))
		return;
	sqlite3_progress_handler(db, 0, NULL, NULL);
	/* An interrupt that lands between statements is a no-op; one that
	 * lands on the ROLLBACK itself is retried. */
	for (int i = 0; i < 4 && !sqlite3_get_autocommit(db); i++)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_progress_handler(db, PROGRESS_STEPS, progress, l);
}

static void run_req(uv_work_t *work)
{
	struct req *q = work->data;
	bgprio_enter(); /* libuv's workers serve background work only */
	struct lane *l = q->lane;
	if (atomic_load(&l->stop))
		return; /* superseded before it started: never runs */
	q->r.started = true;
	atomic_fetch_add(&l->w->started, 1);
	int rc = lane_open(l, &q->r.err);
	if (rc == 0 && l->kind == LANE_LIST)
		rc = catalog_list(l->cat, q->what.with_deleted, q->what.only_deleted, q->what.project,
				  q->what.limit, &q->r.sessions, &q->r.n_sessions, &q->r.err);
	else if (rc == 0) {
		rc = catalog_search(l->cat, q->query, q->limit, q->with_deleted, &q->r.hits,
				    &q->r.n_hits, &q->r.info, &q->r.err);
		/* The error is the interrupt's whenever the lane was stopped:
		 * the search's own ROLLBACK has replaced sqlite3_errcode. */
		q->r.interrupted = rc < 0 && atomic_load(&l->stop);
		end_tx(l);
	}
	q->r.outcome = rc == 0 ? CATALOG_WORKER_DONE : CATALOG_WORKER_FAILED;
}

/* ---- the loop thread ---- */

static void maybe_finish_close(struct catalog_worker *w);
static void after_req(uv_work_t *work, int status);

static void start(struct lane *l, struct req *q)
{
	l->running = q;
	atomic_store(&l->stop, false);
	q->work.data = q;
	uv_queue_work(l->w->loop, &q->work, run_req, after_req);
}

static void after_req(uv_work_t *work, int status)
{
	struct req *q = work->data;
	struct lane *l = q->lane;
	struct catalog_worker *w = l->w;
	bool stopped = atomic_load(&l->stop);
	l->running = NULL;
	struct req *next = l->waiting;
	l->waiting = NULL;
	if (next)
		start(l, next); /* only while open: close takes the waiting one */
	enum catalog_worker_outcome out = q->r.outcome;
	if (stopped || status != 0)
		out = w->closing ? CATALOG_WORKER_CLOSED : CATALOG_WORKER_SUPERSEDED;
	complete(q, out);
	maybe_finish_close(w);
}

/* Stop the running request of a lane that interrupts (searches). */
static void interrupt(struct lane *l)
{
	if (!l->running || l->kind != LANE_SEARCH)
		return;
	atomic_store(&l->stop, true);
	sqlite3 *db = atomic_load(&l->db);
	if (db)
		sqlite3_interrupt(db);
}

static int submit(struct catalog_worker *w, struct lane *l, struct req *q, struct cerr *err)
{
	if (w->closing) {
		req_free(q);
		return cerr_set(err, CERR_USAGE, 0, "the catalog worker is closing");
	}
	q->lane = l;
	if (!l->running) {
		start(l, q);
		return 0;
	}
	struct req *old = l->waiting;
	l->waiting = q;
	interrupt(l);
	if (old)
		complete(old, CATALOG_WORKER_SUPERSEDED); /* never ran */
	return 0;
}

int catalog_worker_list(struct catalog_worker *w, const struct catalog_worker_listing *what,
			catalog_worker_cb cb, void *ctx, struct cerr *err)
{
	struct req *q = xcalloc(1, sizeof *q);
	q->cb = cb;
	q->ctx = ctx;
	q->what = *what;
	q->what.project = xstrdup_opt(what->project);
	return submit(w, &w->lanes[LANE_LIST], q, err);
}

int catalog_worker_search(struct catalog_worker *w, const char *query, size_t limit,
			  bool with_deleted, catalog_worker_cb cb, void *ctx, struct cerr *err)
{
	struct req *q = xcalloc(1, sizeof *q);
	q->cb = cb;
	q->ctx = ctx;
	q->query = xstrdup(query);
	q->limit = limit;
	q->with_deleted = with_deleted;
	return submit(w, &w->lanes[LANE_SEARCH], q, err);
}

/* On the pool: nothing of the worker runs any more. */
static void close_lanes(uv_work_t *work)
{
	struct catalog_worker *w = work->data;
	for (int i = 0; i < LANES; i++) {
		atomic_store(&w->lanes[i].db, NULL);
		catalog_close(w->lanes[i].cat);
		store_close(w->lanes[i].st);
		w->lanes[i].cat = NULL;
		w->lanes[i].st = NULL;
	}
}

static void after_close(uv_work_t *work, int status)
{
	struct catalog_worker *w = work->data;
	if (w->close_cb)
		w->close_cb(w->close_ctx);
	free(w->root);
	free(w);
}

static void maybe_finish_close(struct catalog_worker *w)
{
	if (!w->closing || w->close_queued)
		return;
	for (int i = 0; i < LANES; i++)
		if (w->lanes[i].running)
			return;
	w->close_queued = true;
	w->close_work.data = w;
	uv_queue_work(w->loop, &w->close_work, close_lanes, after_close);
}

void catalog_worker_close(struct catalog_worker *w, catalog_worker_close_cb cb, void *ctx)
{
	w->closing = true;
	w->close_cb = cb;
	w->close_ctx = ctx;
	for (int i = 0; i < LANES; i++) {
		struct lane *l = &w->lanes[i];
		struct req *old = l->waiting;
		l->waiting = NULL;
		interrupt(l);
		if (old)
			complete(old, CATALOG_WORKER_CLOSED);
	}
	maybe_finish_close(w);
}
