/* pool.h — a few helper threads for blocking work (an fdatasync, a
 * catalog transaction) that one thread wants done while it does something
 * else.
 *
 * Calling sequence (one submitting thread):
 *   pool_new -> pool_submit(job) ... -> pool_wait(job) for each -> pool_free.
 * A job submitted is run exactly once, by a helper or by pool_wait itself
 * when no helper has taken it yet, so waiting never depends on a helper
 * being free (a pool of zero helpers runs every job in pool_wait). Jobs are
 * taken in submit order. The job struct is the caller's and must live until
 * pool_wait returns. */
#ifndef CAIRN_POOL_H
#define CAIRN_POOL_H

#include <stdatomic.h>
#include <stddef.h>

#include "base/err.h"

struct pool;

struct pool_job {
	void (*fn)(void *arg);
	void *arg;
	/* private */
	struct pool_job *next;
	_Atomic int state;
};

/* Start n helper threads (n may be 0). NULL with err when a thread cannot
 * be started. Caller frees with pool_free. */
struct pool *pool_new(size_t n, struct cerr *err);
/* Queue job (fn, arg set by the caller). */
void pool_submit(struct pool *p, struct pool_job *job);
/* Return once job has run: run it here if it is still queued, else wait
 * for the helper running it (polling for a short while first, since the
 * jobs are short and a sleeping thread takes long to wake). */
void pool_wait(struct pool *p, struct pool_job *job);
/* Stop and join the helpers; every job must have been waited for. */
void pool_free(struct pool *p);

#endif
