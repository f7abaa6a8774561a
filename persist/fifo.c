/* fifo.c — the persistence FIFO: a queue guarded by a mutex, one writer
 * thread that drains it in batches (fifo_writer.c executes them), and a
 * uv_async that hands completions back to the loop thread in order, and
 * signals an asynchronous close its progress. */
#include "persist/fifo.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/fifo_int.h"
#include "persist/prepare.h"
#include "base/bgprio.h"
#include "persist/scan.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* After a batch the writer polls the queue this long before it sleeps: a
 * completion often prompts the next post within microseconds, and waking a
 * sleeping thread costs more than that on a virtual machine. */
#define FIFO_POLL_NS 200000

/* A session's last post not delivered yet (f->last_ticket), for
 * fifo_flush_wait; gone once delivered. */
struct fifo_ticket {
	uint64_t ticket;
	char session[];
};

static struct fifo_ticket *ticket_of(const struct fifo *f, const char *session)
{
	size_t v;
	return strmap_get(&f->last_ticket, session, &v) ? (struct fifo_ticket *)(uintptr_t)v : NULL;
}

/* ---- items ---- */

static struct fifo_item *item_new(enum fifo_kind kind, const char *session)
{
	struct fifo_item *it = xcalloc(1, sizeof *it);
	it->kind = kind;
	snprintf(it->session, sizeof it->session, "%s", session ? session : "");
	return it;
}

static void item_free(struct fifo_item *it)
{
	if (!it)
		return;
	cJSON_Delete(it->events);
	cJSON_Delete(it->meta);
	cJSON_Delete(it->header);
	prepared_free(it->rcpt.prepared); /* a receipt no callback took */
	free(it->cwd);
	free(it->text);
	free(it);
}

struct fifo_item *fifo_history(const char *session, uint64_t expected_seq, cJSON *events)
{
	struct fifo_item *it = item_new(FIFO_HISTORY, session);
	it->expected_seq = expected_seq;
	it->events = events ? events : cJSON_CreateArray();
	return it;
}

struct fifo_item *fifo_full_save(const char *session, uint64_t expected_seq,
				 uint64_t expected_version, cJSON *events)
{
	struct fifo_item *it = fifo_history(session, expected_seq, events);
	it->kind = FIFO_FULL_SAVE;
	it->expected_version = expected_version;
	return it;
}

struct fifo_item *fifo_meta(const char *session, cJSON *meta)
{
	struct fifo_item *it = item_new(FIFO_META, session);
	it->meta = meta ? meta : cJSON_CreateObject();
	return it;
}

struct fifo_item *fifo_delete(const char *session)
{
	return item_new(FIFO_DELETE, session);
}

struct fifo_item *fifo_restore(const char *session)
{
	return item_new(FIFO_RESTORE, session);
}

struct fifo_item *fifo_purge(const char *session)
{
	return item_new(FIFO_PURGE, session);
}

struct fifo_item *fifo_draft(const char *cwd, const char *text)
{
	struct fifo_item *it = item_new(FIFO_DRAFT, NULL);
	it->cwd = xstrdup_opt(cwd);
	it->text = xstrdup(text ? text : "");
	return it;
}

struct fifo_item *fifo_open(const char *session)
{
	return item_new(FIFO_OPEN, session);
}

struct fifo_item *fifo_release(const char *session)
{
	return item_new(FIFO_RELEASE, session);
}

void fifo_item_create(struct fifo_item *it, const char *cwd)
{
	it->create = true;
	free(it->cwd);
	it->cwd = xstrdup_opt(cwd);
}

void fifo_item_create_header(struct fifo_item *it, const char *cwd, const char *provider,
			     const char *model, const cJSON *forked_from)
{
	fifo_item_create(it, cwd);
	cJSON_Delete(it->header);
	it->header = cJSON_CreateObject();
	if (provider)
		cJSON_AddStringToObject(it->header, "provider", provider);
	if (model)
		cJSON_AddStringToObject(it->header, "model", model);
	if (forked_from)
		cJSON_AddItemToObject(it->header, "forked_from", cJSON_Duplicate(forked_from, 1));
}

void fifo_fail_items(struct fifo_item *first, struct fifo_item *last, const struct cerr *err)
{
	for (struct fifo_item *m = first;; m = m->next) {
		m->failed = true;
		m->err = *err;
		if (m == last)
			break;
	}
}

void fifo_item_set_running(struct fifo_item *it)
{
	it->running = true;
}

enum fifo_kind fifo_item_kind(const struct fifo_item *it)
{
	return it->kind;
}

const char *fifo_item_session(const struct fifo_item *it)
{
	return it->session;
}

/* Poll for new work a short while (see FIFO_POLL_NS); true if some came. */
static bool poll_queue(struct fifo *f)
{
	uint64_t until = clock_mono_ns() + FIFO_POLL_NS;
	while (clock_mono_ns() < until)
		if (atomic_load_explicit(&f->queued, memory_order_acquire))
			return true;
	return false;
}

/* While a round is in flight, poll until work comes (true) or its syncs
 * end, for at most FIFO_POLL_NS (false). */
static bool poll_work_or_flight(struct fifo *f)
{
	uint64_t until = clock_mono_ns() + FIFO_POLL_NS;
	while (!fifo_round_flight_synced(f) && clock_mono_ns() < until)
		if (atomic_load_explicit(&f->queued, memory_order_acquire))
			return true;
	return false;
}

/* Take the queued items (at most f->batch_limit when set); mu held. */
static struct fifo_item *take_batch(struct fifo *f)
{
	struct fifo_item *batch = f->queue;
	struct fifo_item *last = batch;
	for (size_t n = 1; f->batch_limit && n < f->batch_limit && last->next; n++)
		last = last->next;
	if (f->batch_limit && last->next) {
		f->queue = last->next;
		last->next = NULL;
	} else {
		f->queue = f->queue_tail = NULL;
		atomic_store_explicit(&f->queued, false, memory_order_release);
	}
	return batch;
}

void fifo_deliver(struct fifo *f, struct fifo_item *batch)
{
	pthread_mutex_lock(&f->mu);
	struct fifo_item *tail = batch;
	while (tail->next)
		tail = tail->next;
	if (f->done_tail)
		f->done_tail->next = batch;
	else
		f->done = batch;
	f->done_tail = tail;
	f->completed = tail->ticket;
	for (struct fifo_item *it = batch; it; it = it->next) {
		struct fifo_ticket *t = ticket_of(f, it->session);
		if (t && t->ticket == it->ticket) {
			strmap_del(&f->last_ticket, t->session);
			free(t);
		}
	}
	pthread_cond_broadcast(&f->done_cv);
	uv_async_send(&f->async);
	pthread_mutex_unlock(&f->mu);
}

/* Stop the helpers, close the catalog and the store (what the writer
 * thread uses; whoever ends it). */
static void close_parts(struct fifo *f)
{
	pool_free(f->pool);
	catalog_close(f->cat);
	store_close(f->st);
	f->pool = NULL;
	f->cat = NULL;
	f->st = NULL;
}

static void *writer_main(void *arg)
{
	struct fifo *f = arg;
	bgprio_enter();
	pthread_mutex_lock(&f->mu);
	for (;;) {
		if ((!f->queue || f->paused) && !f->stopping) {
			/* Nothing to prepare while the last round syncs. Work that
			 * comes before its syncs end is written during them (the
			 * next commit settles that round); else complete the round,
			 * then poll a while before sleeping. */
			bool work = false;
			if (!f->paused) {
				pthread_mutex_unlock(&f->mu);
				work = poll_work_or_flight(f);
				pthread_mutex_lock(&f->mu);
			}
			if (!work || f->paused || !f->queue) {
				pthread_mutex_unlock(&f->mu);
				fifo_round_settle_flight(f, NULL);
				if (!poll_queue(f))
					fifo_writer_idle(f); /* before sleeping: what is pending */
				pthread_mutex_lock(&f->mu);
			}
		}
		while ((!f->queue || f->paused) && !(f->stopping && !f->queue))
			pthread_cond_wait(&f->work_cv, &f->mu);
		if (!f->queue && f->stopping)
			break;
		struct fifo_item *batch = take_batch(f);
		pthread_mutex_unlock(&f->mu);
		fifo_writer_process(f, batch); /* delivers it, now or later */
		pthread_mutex_lock(&f->mu);
	}
	pthread_mutex_unlock(&f->mu);
	fifo_round_settle_flight(f, NULL);
	fifo_writer_idle(f);
	/* The teardown runs here, not on the loop: closing the logs and the
	 * catalog touches the disk. */
	fifo_writer_free(f);
	close_parts(f);
	pthread_mutex_lock(&f->mu);
	f->exited = true;
	uv_async_send(&f->async); /* an asynchronous close waits for this */
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* ---- loop side ---- */

static void deliver(struct fifo *f)
{
	pthread_mutex_lock(&f->mu);
	struct fifo_item *list = f->done;
	f->done = f->done_tail = NULL;
	pthread_mutex_unlock(&f->mu);
	while (list) {
		struct fifo_item *it = list;
		list = it->next;
		it->next = NULL;
		if (it->cb) {
			it->cb(it, it->ctx, it->failed ? NULL : &it->rcpt, it->failed ? &it->err : NULL);
			if (!it->failed)
				it->rcpt.prepared = NULL; /* the callback's */
		}
		item_free(it);
	}
}

static void close_progress(struct fifo *f);

static void async_cb(uv_async_t *h)
{
	deliver(h->data);
	close_progress(h->data);
}

static void close_cb(uv_handle_t *h);

struct fifo *fifo_new(uv_loop_t *loop, const char *root, const struct fifo_opts *opts,
		      struct cerr *err)
{
	struct fifo *f = xcalloc(1, sizeof *f);
	f->loop = loop;
	f->helpers = opts ? opts->helpers : FIFO_HELPERS;
	f->max_open = opts && opts->max_open ? opts->max_open : FIFO_MAX_OPEN;
	strmap_init(&f->ws_map);
	f->round = 1; /* a session that never wrote is at round 0 */
	strmap_init(&f->last_ticket);
	if (store_open(root, true, &f->st, err) < 0)
		goto fail;
	if (catalog_open(f->st, &f->cat, err) < 0)
		goto fail;
	catalog_manual_checkpoints(f->cat); /* on a helper: fifo_ckpt.c */
	if (!(f->pool = pool_new(f->helpers, err)))
		goto fail;
	pthread_mutex_init(&f->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->work_cv, NULL);
	pthread_cond_init(&f->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (uv_async_init(loop, &f->async, async_cb) != 0) {
		cerr_set(err, CERR_IO, 0, "cannot create the FIFO's wakeup handle");
		goto fail_sync;
	}
	f->async.data = f;
	f->handles_open = 1;
	int perr = pthread_create(&f->thread, NULL, writer_main, f);
	if (perr != 0) {
		cerr_set(err, CERR_IO, perr, "cannot start the persistence writer");
		close_parts(f);
		f->stopping = true; /* a post before the loop closes it is refused */
		/* The handle lives in f: the loop frees f when it closes it. */
		uv_close((uv_handle_t *)&f->async, close_cb);
		return NULL;
	}
	f->thread_started = true;
	return f;
fail_sync:
	pthread_cond_destroy(&f->work_cv);
	pthread_cond_destroy(&f->done_cv);
	pthread_mutex_destroy(&f->mu);
fail:
	close_parts(f);
	strmap_release(&f->last_ticket);
	strmap_release(&f->ws_map);
	free(f);
	return NULL;
}

int fifo_post(struct fifo *f, struct fifo_item *it, fifo_done_cb cb, void *ctx, struct cerr *err)
{
	pthread_mutex_lock(&f->mu);
	if (f->stopping || f->closing) {
		pthread_mutex_unlock(&f->mu);
		item_free(it);
		return cerr_set(err, CERR_USAGE, 0, "the persistence FIFO is closing");
	}
	it->cb = cb;
	it->ctx = ctx;
	it->ticket = ++f->posted;
	it->next = NULL;
	if (f->queue_tail)
		f->queue_tail->next = it;
	else
		f->queue = it;
	f->queue_tail = it;
	atomic_store_explicit(&f->queued, true, memory_order_release);
	struct fifo_ticket *t = ticket_of(f, it->session);
	if (!t) {
		/* The map borrows its key: the ticket's own copy, never
		 * it->session (freed with the item). */
		size_t len = strlen(it->session) + 1;
		t = xmalloc(sizeof *t + len);
		memcpy(t->session, it->session, len);
		strmap_put(&f->last_ticket, t->session, (size_t)(uintptr_t)t);
	}
	t->ticket = it->ticket;
	pthread_cond_signal(&f->work_cv);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int fifo_barrier(struct fifo *f, const char *session, fifo_done_cb cb, void *ctx,
		 struct cerr *err)
{
	return fifo_post(f, item_new(FIFO_BARRIER, session), cb, ctx, err);
}

int fifo_flush_wait(struct fifo *f, const char *session, uint64_t deadline_ms)
{
	pthread_mutex_lock(&f->mu);
	uint64_t target = f->posted;
	if (session) {
		const struct fifo_ticket *t = ticket_of(f, session);
		target = t ? t->ticket : 0; /* none: all of them delivered */
	}
	int ret = 0;
	while (f->completed < target) {
		struct timespec ts = {(time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000};
		if (pthread_cond_timedwait(&f->done_cv, &f->mu, &ts) == ETIMEDOUT &&
		    f->completed < target) {
			ret = 1;
			break;
		}
	}
	pthread_mutex_unlock(&f->mu);
	return ret;
}

void fifo_pause(struct fifo *f, bool paused)
{
	pthread_mutex_lock(&f->mu);
	f->paused = paused;
	pthread_cond_signal(&f->work_cv);
	pthread_mutex_unlock(&f->mu);
}

size_t fifo_sessions_known(struct fifo *f)
{
	return atomic_load(&f->ws_known);
}

void fifo_set_batch_limit(struct fifo *f, size_t n)
{
	pthread_mutex_lock(&f->mu);
	f->batch_limit = n;
	pthread_mutex_unlock(&f->mu);
}

/* The last handle closed: report an asynchronous close, then free f. */
static void close_cb(uv_handle_t *h)
{
	struct fifo *f = h->data;
	if (--f->handles_open > 0)
		return;
	if (f->close_cb)
		f->close_cb(f, f->close_ctx, FIFO_CLOSED, 0);
	pthread_cond_destroy(&f->work_cv);
	pthread_cond_destroy(&f->done_cv);
	pthread_mutex_destroy(&f->mu);
	strmap_release(&f->last_ticket); /* empty: every post was delivered */
	free(f);
}

/* The writer has ended: deliver what is left and close the handles (the
 * mutex and conditions live until the last close callback: a late
 * fifo_post must find a valid mutex to be refused). */
static void close_handles(struct fifo *f)
{
	pthread_join(f->thread, NULL);
	deliver(f);
	if (f->timer_init) {
		uv_timer_stop(&f->timer);
		f->handles_open++;
		uv_close((uv_handle_t *)&f->timer, close_cb);
	}
	uv_close((uv_handle_t *)&f->async, close_cb);
}

int fifo_close_wait(struct fifo *f, uint64_t deadline_ms)
{
	if (fifo_flush_wait(f, NULL, deadline_ms) != 0)
		return 1;
	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	f->paused = false;
	pthread_cond_signal(&f->work_cv);
	pthread_mutex_unlock(&f->mu);
	close_handles(f);
	return 0;
}

/* ---- asynchronous close (loop thread) ---- */

/* After every delivery while a close runs: once every item has completed,
 * stop the writer; once it has ended, close. */
static void close_progress(struct fifo *f)
{
	if (!f->closing)
		return;
	pthread_mutex_lock(&f->mu);
	bool drained = f->completed == f->posted && !f->done;
	bool exited = f->exited;
	if (exited)
		f->closing = false; /* closed once; posts stay refused (stopping) */
	if (drained && !f->stopping) {
		f->stopping = true;
		f->paused = false;
		pthread_cond_signal(&f->work_cv);
	}
	pthread_mutex_unlock(&f->mu);
	if (exited)
		close_handles(f);
}

static void close_timer_cb(uv_timer_t *t)
{
	struct fifo *f = t->data;
	deliver(f);
	pthread_mutex_lock(&f->mu);
	bool stopping = f->stopping;
	uint64_t outstanding = f->posted - f->completed;
	if (!stopping)
		f->closing = false; /* items are accepted again */
	pthread_mutex_unlock(&f->mu);
	if (stopping) {
		close_progress(f); /* drained already: the close goes on */
		return;
	}
	fifo_close_cb cb = f->close_cb;
	f->close_cb = NULL;
	cb(f, f->close_ctx, FIFO_TIMED_OUT, outstanding);
}

int fifo_close(struct fifo *f, uint64_t deadline_ms, fifo_close_cb cb, void *ctx)
{
	if (f->closing)
		return -1;
	if (!f->timer_init) {
		uv_timer_init(f->loop, &f->timer);
		f->timer.data = f;
		f->timer_init = true;
	}
	pthread_mutex_lock(&f->mu);
	f->closing = true;
	pthread_mutex_unlock(&f->mu);
	f->close_cb = cb;
	f->close_ctx = ctx;
	uint64_t now = clock_mono_ns() / 1000000;
	uv_timer_start(&f->timer, close_timer_cb, deadline_ms > now ? deadline_ms - now : 0, 0);
	deliver(f);
	close_progress(f);
	return 0;
}
