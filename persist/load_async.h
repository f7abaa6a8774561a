/* load_async.h — load and prepare a session off the loop thread.
 *
 * load_async and prepare_async (prepare.h) open the session's log by id
 * under a data root read-only, load (or prepare) it on a libuv worker
 * (uv_queue_work) and call back on the loop thread. They never repair and
 * never take the writer lock, so they serve viewers, the browser's preview
 * and a session another process holds open. The callback runs exactly
 * once: with the result, with an error, or canceled (load_async_cancel
 * before a worker started it). The loop may close once every callback has
 * run. */
#ifndef CAIRN_LOAD_ASYNC_H
#define CAIRN_LOAD_ASYNC_H

#include <stdbool.h>

#include <uv.h>

#include "base/err.h"
#include "persist/load.h"
#include "persist/scan.h"

struct prepared;
struct load_req; /* a request in flight; valid until its callback returns */

/* Called on the loop: l (the callee's, free with load_free) or NULL with
 * err set (the log could not be opened or read: CERR_MISSING, CERR_IO,
 * CERR_CORRUPT for an unsafe path) or with canceled. A damaged log is a
 * load whose load_scan() says so. */
typedef void (*load_async_fn)(void *ctx, struct load *l, const struct cerr *err, bool canceled);
/* The same for prepare_async: p is the callee's (prepared_free). */
typedef void (*prepare_async_fn)(void *ctx, struct prepared *p, const struct cerr *err,
				 bool canceled);

/* Load session `id` (an id or a unique prefix) of the data root `root`
 * with scan options o (NULL: none; copied) on a worker of loop; cb(ctx,
 * ...) runs on the loop. *req (may be NULL) gets the request, for
 * load_async_cancel. 0, or -1 with err when the work cannot be queued
 * (then cb is never called). root and id are copied. */
int load_async(uv_loop_t *loop, const char *root, const char *id, const struct scan_opts *o,
	       load_async_fn cb, void *ctx, struct load_req **req, struct cerr *err);
/* What a worker makes of a load of session id (a view of it for a
 * screen, say), before the load is freed there: the caller's to own. ctx
 * is load_map_async's, the caller's alone until cb ran. */
typedef void *(*load_map_work_fn)(void *ctx, const char *id, const struct load *l);
/* Called on the loop with what map made (NULL with err, or canceled). */
typedef void (*load_map_fn)(void *ctx, void *made, const struct cerr *err, bool canceled);
/* Load session id (its tail of at least min_events events; 0: the whole
 * log), then map it, both on a worker, so a large read never costs the
 * loop more than the callback; cb(ctx, made, ...) runs on the loop
 * exactly once. 0, or -1 with err when the work cannot be queued. */
int load_map_async(uv_loop_t *loop, const char *root, const char *id, size_t min_events,
		   load_map_work_fn map, load_map_fn cb, void *ctx, struct load_req **req,
		   struct cerr *err);
/* Cancel r if no worker has started it: true, and its callback runs on the
 * loop with canceled set. False when it already runs or ran. */
bool load_async_cancel(struct load_req *r);

/* prepare_async's way in (prepare.c): the same request, preparing. */
int load_async_queue(uv_loop_t *loop, const char *root, const char *id, const struct scan_opts *o,
		     load_async_fn load_cb, prepare_async_fn prepare_cb, void *ctx,
		     struct load_req **req, struct cerr *err);

#endif
