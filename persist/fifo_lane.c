/* fifo_lane.c — a session's sync lane: a helper thread fdatasyncs the
 * session's log while the writer thread goes on, and when the writer wrote
 * more during that sync, the helper starts the next one at once (no thread
 * to wake, no round trip through the writer).
 *
 * The writer counts its writes to the log (w->gen) and asks for a sync up
 * to a count (fifo_lane_request); a sync covers every write counted before it
 * starts, so when it ends, lane_done moves to the target read before it.
 * The writer waits for a count (fifo_lane_wait): done, or the errno of the
 * sync that failed. A failed sync stops the lane until the writer has
 * settled the failure (fifo_lane_reset). While a lane runs, the log's handle
 * stays open: fifo_lane_quiesce waits for the lane to stop before the writer
 * re-reads or closes it. When a sync ends with nothing more to sync, the
 * helper lingers up to LANE_LINGER_NS for the writer's next frame before
 * it goes back to the pool (waking it again through the pool costs
 * 50-130 microseconds on a virtual machine), unless lanes hold every
 * helper. */
#include "persist/fifo_int.h"
#include "base/clock.h"

/* How long fifo_lane_wait polls before it sleeps (see pool.c: waking a thread
 * costs tens of microseconds on a virtual machine). */
#define LANE_POLL_NS 200000
/* How long a lane waits for the next write before its helper goes back to
 * the pool. */
#define LANE_LINGER_NS 300000

void fifo_lane_init(struct fifo_sess *w)
{
	pthread_mutex_init(&w->lane_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->lane_cv, &ca);
	pthread_condattr_destroy(&ca);
}

void fifo_lane_destroy(struct fifo_sess *w)
{
	pthread_cond_destroy(&w->lane_cv);
	pthread_mutex_destroy(&w->lane_mu);
}

/* Whether the lane has a sync to start (lane_mu held). */
static bool fifo_lane_due(struct fifo_sess *w)
{
	return !atomic_load(&w->lane_errno) && atomic_load(&w->lane_done) < w->lane_target;
}

/* The helper: sync until the target is reached or a sync fails; then
 * linger a while for the next target (the writer often writes its next
 * frame just after a sync ends) unless the writer wants the log back. */
static void fifo_lane_run(void *arg)
{
	struct fifo_sess *w = arg;
	pthread_mutex_lock(&w->lane_mu);
	for (;;) {
		while (fifo_lane_due(w)) {
			uint64_t target = w->lane_target;
			pthread_mutex_unlock(&w->lane_mu);
			int e = log_sync_fd(w->lg);
			pthread_mutex_lock(&w->lane_mu);
			if (e)
				atomic_store(&w->lane_errno, e);
			else
				atomic_store(&w->lane_done, target);
			pthread_cond_broadcast(&w->lane_cv);
		}
		if (atomic_load(&w->lane_errno) || atomic_load(&w->lane_f->lanes_busy) >= (int)w->lane_f->helpers)
			break; /* no lingering while other lanes may wait for a helper */
		uint64_t ns = clock_mono_ns() + LANE_LINGER_NS;
		struct timespec until = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
		while (!fifo_lane_due(w) && !w->lane_quit &&
		       pthread_cond_timedwait(&w->lane_cv, &w->lane_mu, &until) == 0)
			;
		if (!fifo_lane_due(w))
			break;
	}
	w->lane_running = false;
	atomic_fetch_sub(&w->lane_f->lanes_busy, 1);
	pthread_cond_broadcast(&w->lane_cv);
	pthread_mutex_unlock(&w->lane_mu);
}

void fifo_lane_request(struct fifo *f, struct fifo_sess *w, uint64_t gen)
{
	pthread_mutex_lock(&w->lane_mu);
	if (gen > w->lane_target)
		w->lane_target = gen;
	bool start = !w->lane_running && !atomic_load(&w->lane_errno) &&
		     atomic_load(&w->lane_done) < w->lane_target;
	if (start)
		w->lane_running = true;
	else if (w->lane_running)
		pthread_cond_broadcast(&w->lane_cv); /* it may be lingering */
	pthread_mutex_unlock(&w->lane_mu);
	if (!start)
		return;
	if (w->lane_job_out)
		pool_wait(f->pool, &w->lane_job); /* the last run, ending */
	w->lane_f = f;
	atomic_fetch_add(&f->lanes_busy, 1);
	w->lane_job = (struct pool_job){.fn = fifo_lane_run, .arg = w};
	pool_submit(f->pool, &w->lane_job);
	w->lane_job_out = true;
	if (!f->helpers) {
		pool_wait(f->pool, &w->lane_job); /* no helper: the sync runs here, now */
		w->lane_job_out = false;
	}
}

int fifo_lane_wait(struct fifo_sess *w, uint64_t gen)
{
	uint64_t until = clock_mono_ns() + LANE_POLL_NS;
	for (;;) {
		if (atomic_load(&w->lane_done) >= gen)
			return 0;
		int e = atomic_load(&w->lane_errno);
		if (e)
			return e;
		if (clock_mono_ns() >= until)
			break;
	}
	pthread_mutex_lock(&w->lane_mu);
	while (atomic_load(&w->lane_done) < gen && !atomic_load(&w->lane_errno))
		pthread_cond_wait(&w->lane_cv, &w->lane_mu);
	int e = atomic_load(&w->lane_done) >= gen ? 0 : atomic_load(&w->lane_errno);
	pthread_mutex_unlock(&w->lane_mu);
	return e;
}

bool fifo_lane_ended(struct fifo_sess *w, uint64_t gen)
{
	return atomic_load(&w->lane_done) >= gen || atomic_load(&w->lane_errno);
}

void fifo_lane_quiesce(struct fifo *f, struct fifo_sess *w)
{
	if (!w->lane_job_out)
		return;
	pthread_mutex_lock(&w->lane_mu);
	w->lane_quit = true; /* no lingering */
	pthread_cond_broadcast(&w->lane_cv);
	while (w->lane_running)
		pthread_cond_wait(&w->lane_cv, &w->lane_mu);
	w->lane_quit = false;
	pthread_mutex_unlock(&w->lane_mu);
	pool_wait(f->pool, &w->lane_job);
	w->lane_job_out = false;
}

void fifo_lane_reset(struct fifo *f, struct fifo_sess *w)
{
	fifo_lane_quiesce(f, w);
	pthread_mutex_lock(&w->lane_mu);
	atomic_store(&w->lane_errno, 0);
	atomic_store(&w->lane_done, w->gen);
	w->lane_target = w->gen;
	pthread_mutex_unlock(&w->lane_mu);
}
