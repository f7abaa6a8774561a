/* fifo.c — the persistence FIFO: a queue guarded by a mutex, one writer
 * thread that drains it in batches (log appends, then one catalog
 * transaction for the batch), and a uv_async that hands completions back to
 * the loop thread in order. */
#include "persist/fifo.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/strmap.h"
#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/log.h"
#include "persist/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OPEN_LOGS 64     /* writer handles kept open (each holds a lock) */
#define MERGE_MAX_EVENTS 4096 /* events in one merged history append */

struct fifo_item {
	struct fifo_item *next;
	enum fifo_kind kind;
	char session[SESSION_ID_MAX + 1];
	bool create;
	char *cwd;
	uint64_t expected_seq, expected_version;
	cJSON *events; /* array */
	cJSON *meta;
	fifo_done_cb cb;
	void *ctx;
	uint64_t ticket;
	bool failed;
	struct cerr err;
	struct fifo_receipt rcpt;
};

/* The writer's view of one session. */
struct wsess {
	char id[SESSION_ID_MAX + 1];
	struct log *lg;
	bool failed;        /* an item failed: only a full save may go on */
	struct cerr why;
	uint64_t used;      /* for closing the least recently used handle */
};

struct fifo {
	uv_loop_t *loop;
	uv_async_t async;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	struct fifo_item *queue, *queue_tail; /* posted, not taken */
	struct fifo_item *done, *done_tail;   /* completed, not delivered */
	uint64_t posted, completed;           /* tickets */
	struct strmap last_ticket;            /* session -> ticket of its last post */
	char **ticket_keys;
	size_t n_ticket_keys;
	bool stopping, paused;

	/* writer thread only */
	struct store *st;
	struct catalog *cat;
	struct wsess **ws;
	size_t n_ws;
	uint64_t use_clock;
};

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
	free(it->cwd);
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

void fifo_item_create(struct fifo_item *it, const char *cwd)
{
	it->create = true;
	free(it->cwd);
	it->cwd = cwd ? xstrdup(cwd) : NULL;
}

enum fifo_kind fifo_item_kind(const struct fifo_item *it)
{
	return it->kind;
}

const char *fifo_item_session(const struct fifo_item *it)
{
	return it->session;
}

/* ---- writer: sessions and handles ---- */

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
	f->ws = xreallocarray(f->ws, f->n_ws + 1, sizeof *f->ws);
	f->ws[f->n_ws++] = w;
	return w;
}

static void wsess_close_log(struct wsess *w)
{
	log_close(w->lg);
	w->lg = NULL;
}

/* Keep at most MAX_OPEN_LOGS handles (and so locks) open. */
static void trim_handles(struct fifo *f, struct wsess *keep)
{
	size_t open = 0;
	for (size_t i = 0; i < f->n_ws; i++)
		open += f->ws[i]->lg != NULL;
	while (open > MAX_OPEN_LOGS) {
		struct wsess *old = NULL;
		for (size_t i = 0; i < f->n_ws; i++)
			if (f->ws[i]->lg && f->ws[i] != keep && !f->ws[i]->failed &&
			    (!old || f->ws[i]->used < old->used))
				old = f->ws[i];
		if (!old)
			break;
		wsess_close_log(old);
		open--;
	}
}

/* The session's log open for writing, created if the item allows it. */
static int ensure_log(struct fifo *f, struct wsess *w, const struct fifo_item *it,
		      struct cerr *err)
{
	if (w->lg)
		return 0;
	struct cat_watermark wm;
	struct scan_opts o = {0};
	if (catalog_get_watermark(f->cat, w->id, &wm, err) < 0)
		return -1;
	if (wm.known)
		o = (struct scan_opts){true, wm.len, wm.next_seq, wm.dev, wm.ino};
	if (log_open_opts(f->st, w->id, &o, &w->lg, err) == 0) {
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

static void fail_item(struct fifo_item *it, const struct cerr *err)
{
	it->failed = true;
	it->err = *err;
}

/* Events of a JSON array as log events borrowing from it. */
static struct log_event *to_events(const cJSON *arr, size_t *n)
{
	*n = (size_t)cJSON_GetArraySize(arr);
	struct log_event *evs = xcalloc(*n ? *n : 1, sizeof *evs);
	size_t i = 0;
	for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next, i++) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
		const cJSON *turn = cJSON_GetObjectItemCaseSensitive(e, "turn");
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(e, "data");
		evs[i].type = cJSON_IsString(type) ? type->valuestring : NULL;
		evs[i].turn = cJSON_IsString(turn) ? turn->valuestring : NULL;
		evs[i].data = cJSON_IsObject(data) ? data : NULL;
		evs[i].ignorable = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "ignorable"));
	}
	return evs;
}

/* Project what was just appended: incrementally onto an existing row, or
 * the whole log for a session the catalog does not know yet. */
static int project(struct fifo *f, struct wsess *w, uint64_t first_seq, const struct log_event *evs,
		   size_t n, uint64_t *version, struct cerr *err)
{
	struct log_revision d = log_durable(w->lg);
	struct cat_watermark wm = {d.len > 0, d.len, d.next_seq, d.dev, d.ino, d.ctime_ns};
	struct cat_session row;
	struct cerr e;
	if (catalog_get(f->cat, w->id, &row, &e) == 0) {
		cat_session_release(&row);
		if (catalog_project_batch(f->cat, w->id, first_seq, log_batch_time(w->lg), evs, n, &wm,
					  version, &e) == 0)
			return 0;
		if (e.cls != CERR_CONFLICT) {
			*err = e;
			return -1;
		}
		/* The row lags the log (a write it missed): project it whole. */
	} else if (e.cls != CERR_MISSING) {
		*err = e;
		return -1;
	}
	if (log_reread(w->lg, err) < 0)
		return -1;
	struct session_ref ref;
	if (store_resolve(f->st, w->id, &ref, err) < 0)
		return -1;
	if (catalog_project_scan(f->cat, &ref, log_scan(w->lg), 0, &wm, err) < 0)
		return -1;
	*version = log_scan(w->lg)->next_seq;
	return 0;
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

/* Run one item (or a merged group of history items, first..last). */
static void run_group(struct fifo *f, struct fifo_item *first, struct fifo_item *last)
{
	struct wsess *w = wsess_get(f, first->session);
	struct cerr err = {0};
	struct fifo_item *it = first;
	bool appends = it->kind == FIFO_HISTORY || it->kind == FIFO_FULL_SAVE || it->kind == FIFO_META;
	if (w->failed && (it->kind == FIFO_HISTORY || it->kind == FIFO_META)) {
		/* Never a write after a gap: wait for a full save. */
		cerr_set(&err, w->why.cls, 0, "session '%s' has a failed save before this one (%s); a full save must recover it first",
			 w->id, w->why.msg);
		goto fail;
	}
	if (it->kind == FIFO_FULL_SAVE && w->failed && w->lg &&
	    log_reread(w->lg, &err) < 0 && err.cls != CERR_MISSING)
		goto fail; /* recovery: re-read from disk through the same handle, which
			    * syncs or cuts what a failed sync left unsure (a fresh handle
			    * would build on it); MISSING: never published, the append will */
	if (appends) {
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
		if (it->kind == FIFO_FULL_SAVE) {
			struct cat_session row;
			struct cerr e;
			if (catalog_get(f->cat, w->id, &row, &e) == 0) {
				bool stale = row.content_version != it->expected_version;
				uint64_t have = row.content_version;
				cat_session_release(&row);
				if (stale) {
					cerr_set(&err, CERR_CONFLICT, 0,
						 "session '%s' is at version %llu, not %llu", w->id,
						 (unsigned long long)have,
						 (unsigned long long)it->expected_version);
					cJSON_Delete(all);
					goto fail;
				}
			}
		}
		size_t n;
		struct log_event *evs = to_events(arr, &n);
		uint64_t next = 0, version = 0;
		int rc = log_append(w->lg, expected, evs, n, &next, &err);
		if (rc == 0 && n == 0 && expected != log_next_seq(w->lg)) {
			/* An empty batch writes nothing, but its expectation
			 * still has to hold. */
			cerr_set(&err, CERR_CONFLICT, 0, "'%s' is at seq %llu, not %llu", w->id,
				 (unsigned long long)log_next_seq(w->lg), (unsigned long long)expected);
			rc = -1;
		}
		if (rc < 0 && err.cls == CERR_USAGE && first != last) {
			/* One invalid event must not fail the valid items merged
			 * with it: nothing was written, run them one by one. */
			free(evs);
			cJSON_Delete(all);
			struct fifo_item *stop = last->next;
			for (struct fifo_item *m = first; m != stop; m = m->next) {
				struct fifo_item *keep = m->next;
				run_group(f, m, m);
				m->next = keep;
			}
			return;
		}
		if (rc == 0 && n > 0) {
			/* The log is durable: its projection (and watermark) go
			 * into this batch's transaction, undone alone on failure. */
			struct cerr pe;
			if (catalog_savepoint(f->cat, &pe) < 0 ||
			    project(f, w, expected, evs, n, &version, &pe) < 0) {
				catalog_savepoint_rollback(f->cat);
				err = pe;
				cerr_prefix(&err, "the log is durable but the catalog was not updated");
				err.outcome_unknown = true; /* written, but no receipt to give */
				rc = -1;
			} else {
				catalog_savepoint_release(f->cat);
			}
		} else if (rc == 0) {
			struct cat_session row;
			struct cerr e;
			if (catalog_get(f->cat, w->id, &row, &e) == 0) {
				version = row.content_version;
				cat_session_release(&row);
			}
		}
		free(evs);
		cJSON_Delete(all);
		if (rc < 0)
			goto fail;
		if (it->kind == FIFO_FULL_SAVE) {
			struct cerr e;
			catalog_set_status(f->cat, w->id, NULL, &e); /* settled: no override */
			w->failed = false;
		}
		uint64_t seq = expected;
		for (struct fifo_item *m = first;; m = m->next) {
			seq += m->kind == FIFO_META ? 1 : (uint64_t)cJSON_GetArraySize(m->events);
			m->rcpt.next_seq = seq;
			m->rcpt.content_version = version;
			if (m == last)
				break;
		}
		(void)next;
		return;
	}
	/* Delete, restore, purge: this writer's own handle goes first (it
	 * holds the lock); a session running here or locked elsewhere stays. */
	if (it->kind != FIFO_RESTORE && running_elsewhere(f, w->id)) {
		cerr_set(&err, CERR_LOCKED, 0, "session '%s' is running", w->id);
		goto fail;
	}
	wsess_close_log(w);
	struct session_ref ref;
	if (it->kind == FIFO_DELETE) {
		int64_t at = 0;
		if (store_resolve(f->st, it->session, &ref, &err) < 0 ||
		    strcmp(ref.id, it->session) != 0 || store_trash(f->st, &ref, &at, &err) < 0)
			goto fail_plain;
		it->rcpt.deleted_at = at;
		struct cerr e;
		if (catalog_set_deleted(f->cat, ref.id, at, &e) < 0 && e.cls != CERR_MISSING) {
			err = e;
			err.outcome_unknown = true; /* moved, catalog not told */
			goto fail_plain;
		}
	} else if (it->kind == FIFO_RESTORE) {
		if (store_resolve_in(f->st, STORE_TRASH, it->session, &ref, &err) < 0 ||
		    store_restore(f->st, &ref, &err) < 0)
			goto fail_plain;
		struct cerr e;
		if (catalog_set_deleted(f->cat, ref.id, 0, &e) < 0 && e.cls != CERR_MISSING) {
			err = e;
			err.outcome_unknown = true; /* moved back, catalog not told */
			goto fail_plain;
		}
	} else {
		if (store_resolve_in(f->st, STORE_TRASH, it->session, &ref, &err) < 0 ||
		    store_purge(f->st, &ref, &err) < 0 || catalog_forget(f->cat, ref.id, &err) < 0)
			goto fail_plain;
	}
	return;
fail:
	if (appends) {
		/* A conflict or a failed write leaves a gap this session must
		 * not write past; a usage error or a missing session wrote
		 * nothing and changes nothing. */
		if (err.cls != CERR_USAGE && err.cls != CERR_MISSING && !w->failed) {
			w->failed = true;
			w->why = err;
		}
		if (it->kind == FIFO_FULL_SAVE) {
			struct cerr e;
			catalog_set_status(f->cat, w->id, "unsaved", &e);
		}
	}
fail_plain:
	for (struct fifo_item *m = first;; m = m->next) {
		fail_item(m, &err);
		if (m == last)
			break;
	}
}

/* May `b` be merged into the history group ending at `a`? */
static bool mergeable(const struct fifo_item *a, const struct fifo_item *b, size_t n)
{
	return b && a->kind == FIFO_HISTORY && b->kind == FIFO_HISTORY &&
	       strcmp(a->session, b->session) == 0 && !b->create &&
	       b->expected_seq == a->expected_seq + (uint64_t)cJSON_GetArraySize(a->events) &&
	       n + (size_t)cJSON_GetArraySize(b->events) <= MERGE_MAX_EVENTS;
}

static void process(struct fifo *f, struct fifo_item *batch)
{
	struct cerr err;
	bool tx = catalog_begin(f->cat, &err) == 0;
	for (struct fifo_item *it = batch; it;) {
		struct fifo_item *last = it;
		size_t n = (size_t)cJSON_GetArraySize(it->events);
		while (mergeable(last, last->next, n)) {
			n += (size_t)cJSON_GetArraySize(last->next->events);
			last = last->next;
		}
		if (tx) {
			run_group(f, it, last);
		} else {
			/* No catalog transaction: fail, write nothing. */
			for (struct fifo_item *m = it; m != last->next; m = m->next)
				fail_item(m, &err);
		}
		it = last->next;
	}
	if (tx && catalog_commit(f->cat, &err) < 0) {
		/* The logs are durable, the projections are not: the sessions
		 * need a full save to recover. */
		cerr_prefix(&err, "the catalog commit failed");
		for (struct fifo_item *it = batch; it; it = it->next) {
			if (it->failed)
				continue;
			fail_item(it, &err);
			struct wsess *w = wsess_get(f, it->session);
			if (!w->failed)
				w->failed = true, w->why = err;
		}
	}
}

static void *writer_main(void *arg)
{
	struct fifo *f = arg;
	pthread_mutex_lock(&f->mu);
	for (;;) {
		while ((!f->queue || f->paused) && !(f->stopping && !f->queue))
			pthread_cond_wait(&f->work_cv, &f->mu);
		if (!f->queue && f->stopping)
			break;
		struct fifo_item *batch = f->queue;
		f->queue = f->queue_tail = NULL;
		pthread_mutex_unlock(&f->mu);
		process(f, batch);
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
		pthread_cond_broadcast(&f->done_cv);
		uv_async_send(&f->async);
	}
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
		if (it->cb)
			it->cb(it, it->ctx, it->failed ? NULL : &it->rcpt, it->failed ? &it->err : NULL);
		item_free(it);
	}
}

static void async_cb(uv_async_t *h)
{
	deliver(h->data);
}

static void close_cb(uv_handle_t *h);

struct fifo *fifo_new(uv_loop_t *loop, const char *root, struct cerr *err)
{
	struct fifo *f = xcalloc(1, sizeof *f);
	f->loop = loop;
	strmap_init(&f->last_ticket);
	if (store_open(root, true, &f->st, err) < 0)
		goto fail;
	if (catalog_open(f->st, &f->cat, err) < 0)
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
	int perr = pthread_create(&f->thread, NULL, writer_main, f);
	if (perr != 0) {
		cerr_set(err, CERR_IO, perr, "cannot start the persistence writer");
		catalog_close(f->cat);
		store_close(f->st);
		f->cat = NULL;
		f->st = NULL;
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
	catalog_close(f->cat);
	store_close(f->st);
	strmap_release(&f->last_ticket);
	free(f);
	return NULL;
}

int fifo_post(struct fifo *f, struct fifo_item *it, fifo_done_cb cb, void *ctx, struct cerr *err)
{
	pthread_mutex_lock(&f->mu);
	if (f->stopping) {
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
	size_t k;
	if (!strmap_get(&f->last_ticket, it->session, &k)) {
		char *key = xstrdup(it->session);
		f->ticket_keys = xreallocarray(f->ticket_keys, f->n_ticket_keys + 1, sizeof *f->ticket_keys);
		f->ticket_keys[f->n_ticket_keys++] = key;
		strmap_put(&f->last_ticket, key, (size_t)it->ticket);
	} else {
		/* strmap_put stores the key pointer it is given: pass our own
		 * copy, never it->session (freed with the item). */
		for (size_t i = 0; i < f->n_ticket_keys; i++)
			if (strcmp(f->ticket_keys[i], it->session) == 0) {
				strmap_put(&f->last_ticket, f->ticket_keys[i], (size_t)it->ticket);
				break;
			}
	}
	pthread_cond_signal(&f->work_cv);
	pthread_mutex_unlock(&f->mu);
	return 0;
}

int fifo_flush(struct fifo *f, const char *session, uint64_t deadline_ms)
{
	pthread_mutex_lock(&f->mu);
	size_t target = (size_t)f->posted;
	if (session && !strmap_get(&f->last_ticket, session, &target))
		target = 0;
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

static void close_cb(uv_handle_t *h)
{
	struct fifo *f = h->data;
	pthread_cond_destroy(&f->work_cv);
	pthread_cond_destroy(&f->done_cv);
	pthread_mutex_destroy(&f->mu);
	strmap_release(&f->last_ticket);
	for (size_t i = 0; i < f->n_ticket_keys; i++)
		free(f->ticket_keys[i]);
	free(f->ticket_keys);
	free(f);
}

int fifo_close(struct fifo *f, uint64_t deadline_ms)
{
	if (fifo_flush(f, NULL, deadline_ms) != 0)
		return 1;
	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	f->paused = false;
	pthread_cond_signal(&f->work_cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	deliver(f);
	for (size_t i = 0; i < f->n_ws; i++) {
		log_close(f->ws[i]->lg);
		free(f->ws[i]);
	}
	free(f->ws);
	catalog_close(f->cat);
	store_close(f->st);
	f->cat = NULL;
	f->st = NULL;
	/* The mutex and conditions live until the close callback: a late
	 * fifo_post must find a valid mutex to be refused. */
	uv_close((uv_handle_t *)&f->async, close_cb);
	return 0;
}
