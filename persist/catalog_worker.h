/* catalog_worker.h — listing and search for the screens, off the loop
 * thread: each request runs on a libuv worker (uv_queue_work) with the
 * worker's own read connection (catalog_open_ro) and completes on the loop
 * with its results.
 *
 * Calling sequence, all on the loop thread:
 *   catalog_worker_new(loop, root) -> catalog_worker_list / _search ... ->
 *   catalog_worker_close(cb): when cb has run nothing of the worker is
 *   left on the loop (uv_loop_close() can return 0).
 *
 * Threads: two lanes, one for lists and one for searches, each with its
 * own store handle and read connection, opened by the lane's first request
 * on a pool thread and closed by the close on one. A lane runs one request
 * at a time, so its connection is used by one thread at a time (catalog.h).
 *
 * A lane holds at most one running request and one waiting. A new request
 * supersedes the waiting one, which never runs: its callback says
 * CATALOG_WORKER_SUPERSEDED, at once, inside the call that superseded it.
 * A new search also interrupts the running one (a flag the connection's
 * progress handler reads, and sqlite3_interrupt): that one completes
 * CATALOG_WORKER_SUPERSEDED too, without results, even when it had got to
 * its end. So typing in a search box never queues work: at most two
 * searches run per keystroke burst, the first and the last. A running list
 * is not interrupted (a list reads one index range; it is short).
 *
 * The worker reads what the catalog holds: bringing it in line with the
 * logs (catalog_sync) is the writer's business. A row left `running` by a
 * process that died is listed as `interrupted` (catalog_live.c). */
#ifndef CAIRN_CATALOG_WORKER_H
#define CAIRN_CATALOG_WORKER_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "base/err.h"
#include "persist/catalog.h"

struct catalog_worker;

enum catalog_worker_outcome {
	CATALOG_WORKER_DONE,       /* results below */
	CATALOG_WORKER_FAILED,     /* err says why (no index.db yet: CERR_MISSING) */
	CATALOG_WORKER_SUPERSEDED, /* a newer request of its kind replaced it: no results */
	CATALOG_WORKER_CLOSED,     /* the worker closed before it ran: no results */
};

/* What a request completes with. On CATALOG_WORKER_DONE the arrays belong
 * to the receiver, which frees them (cat_sessions_free, cat_hits_free);
 * the worker never touches them after the callback. Other outcomes carry
 * none. */
struct catalog_worker_result {
	enum catalog_worker_outcome outcome;
	struct cerr err;                /* CATALOG_WORKER_FAILED */
	bool started;                   /* it ran, at least in part, on a pool thread */
	bool interrupted;               /* SUPERSEDED or CLOSED: stopped midway by the interrupt */
	struct cat_session *sessions;   /* a list's rows (owned by the receiver) */
	size_t n_sessions;
	struct cat_hit *hits;           /* a search's hits (owned by the receiver) */
	size_t n_hits;
	struct cat_search_info info;    /* a search's reach */
};

/* Called once per request on the loop thread; r lives during the call
 * only, its arrays are the receiver's (above). */
typedef void (*catalog_worker_cb)(void *ctx, struct catalog_worker_result *r);
typedef void (*catalog_worker_close_cb)(void *ctx);

/* What to list (catalog_list's arguments); project is copied. */
struct catalog_worker_listing {
	bool with_deleted, only_deleted;
	const char *project; /* NULL: every project */
	size_t limit;        /* 0: no limit */
};

/* A worker for the data root `root` (copied) on `loop`. Opens nothing
 * yet: no disk access on the calling thread. Caller closes it with
 * catalog_worker_close. */
struct catalog_worker *catalog_worker_new(uv_loop_t *loop, const char *root);
/* List sessions (catalog_list) on the list lane; cb gets the rows. A
 * closing worker: CERR_USAGE, and cb is not called. */
int catalog_worker_list(struct catalog_worker *w, const struct catalog_worker_listing *what,
			catalog_worker_cb cb, void *ctx, struct cerr *err);
/* Search (catalog_search; query copied) on the search lane, superseding
 * and interrupting the earlier search. A closing worker: CERR_USAGE, and
 * cb is not called. */
int catalog_worker_search(struct catalog_worker *w, const char *query, size_t limit,
			  bool with_deleted, catalog_worker_cb cb, void *ctx, struct cerr *err);
/* Close, as uv_close does: waiting requests complete CATALOG_WORKER_CLOSED
 * at once, a running search is interrupted (SUPERSEDED), a running list
 * finishes; then the connections are closed on a pool thread and cb (may
 * be NULL) runs on the loop, after which w is gone. Never waits. */
void catalog_worker_close(struct catalog_worker *w, catalog_worker_close_cb cb, void *ctx);
/* Requests started on a pool thread since the worker was made (both lanes). */
size_t catalog_worker_started(const struct catalog_worker *w);

#endif
