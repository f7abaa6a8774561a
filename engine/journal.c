/* journal.c — the only writer of an open session's log (journal.h).
 *
 * Writes wait in `waiting` until they may go, then sit in `posted` until
 * the FIFO completes them; the FIFO completes a session's items in post
 * order, so the completed one is always the head of `posted`. A history
 * item goes at once; a full save (a settlement's, or a recovery) waits
 * until nothing is in flight, since it expects the content version after
 * every item before it, and writes behind it wait with it.
 *
 * The cursor is the seq the next item expects. A failed item fails every
 * later one of the session until a full save, so the log ends at the
 * durable head: a failed write that keeps its events (a turn's streamed
 * batches, a full save) leaves the cursor after them, to be written from
 * the durable head by the next full save; one that does not (a host
 * command, which fails as a whole) gives its seqs back.
 *
 * Durability (enum journal_state), changed only by journal_to():
 *
 *   SAVED      --full save failed------------------------> UNSAVED
 *   UNSAVED    --recovery save queued--------------------> RECOVERING
 *   UNSAVED    --full save failed------------------------> UNSAVED
 *   RECOVERING --recovery save acknowledged-------------> SAVED
 *   RECOVERING --recovery save failed or refused--------> UNSAVED
 */
#include "engine/journal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "persist/pathkey.h"

/* The transitions above: journal_next[from] has bit `to` set. */
static const unsigned journal_next[] = {
	[JOURNAL_SAVED] = 1u << JOURNAL_UNSAVED,
	[JOURNAL_UNSAVED] = 1u << JOURNAL_RECOVERING | 1u << JOURNAL_UNSAVED,
	[JOURNAL_RECOVERING] = 1u << JOURNAL_SAVED | 1u << JOURNAL_UNSAVED,
};

enum wkind { W_HISTORY, W_FULL, W_RECOVERY, W_ITEM };

struct jwrite {
	struct journal *j;
	enum wkind kind;
	cJSON *events;        /* the write's events (kept ones first once posted) */
	struct sink_op op;
	bool keep, running;
	char *provider, *model;
	uint64_t first_seq;
	journal_done_fn cb;
	void *ctx;
	struct fifo_item *item; /* W_ITEM: posted as it is ... */
	fifo_done_cb item_cb;   /* ... and completed through this */
	struct jwrite *next;
};

struct waiter {
	journal_done_fn cb;
	void *ctx;
	struct waiter *next;
};

struct journal {
	struct fifo *f;
	struct sink *sink;
	struct context *ctx;
	char session[SESSION_ID_MAX + 1];
	struct sink_op own;
	char *cwd;
	enum journal_state st;
	bool created, closing;
	uint64_t cursor;            /* the seq the next item expects */
	uint64_t next_seq, version; /* the durable head */
	cJSON *kept;                /* failed writes' events, written next from next_seq */
	struct jwrite *waiting, *waiting_tail;
	struct jwrite *posted, *posted_tail;
	size_t inflight;
	unsigned in_cb;             /* completions running: close frees after them */
	struct waiter *recovery;    /* journal_recover callers waiting */
	struct cerr refusal;        /* why the FIFO last refused a write */
	journal_state_fn st_fn;
	void *st_ud;
	journal_durable_fn durable_fn;
	void *durable_ud;
};

bool journal_may(enum journal_state from, enum journal_state to)
{
	return (journal_next[from] & (1u << to)) != 0;
}

static void journal_to(struct journal *j, enum journal_state to, const struct cerr *err)
{
	assert(journal_may(j->st, to));
	j->st = to;
	if (j->st_fn && !j->closing)
		j->st_fn(j->st_ud, to, err);
}

struct journal *journal_new(const struct journal_deps *d, struct context *ctx, bool created,
			    uint64_t next_seq, uint64_t version)
{
	struct journal *j = xcalloc(1, sizeof *j);
	j->f = d->fifo;
	j->sink = d->sink;
	j->ctx = ctx;
	snprintf(j->session, sizeof j->session, "%s", d->session);
	sink_op_set(&j->own, d->session, d->generation, 0);
	j->cwd = xstrdup_opt(d->cwd);
	j->st = JOURNAL_SAVED;
	j->created = created;
	j->cursor = j->next_seq = created ? next_seq : 1; /* a new log's header is seq 0 */
	j->version = version;
	j->kept = cJSON_CreateArray();
	return j;
}

void journal_set_context(struct journal *j, struct context *ctx)
{
	j->ctx = ctx;
}

void journal_adopt(struct journal *j, uint64_t next_seq, uint64_t version)
{
	assert(!j->posted && !j->waiting);
	j->created = true;
	j->cursor = j->next_seq = next_seq;
	j->version = version;
}

void journal_on_state(struct journal *j, journal_state_fn fn, void *ud)
{
	j->st_fn = fn;
	j->st_ud = ud;
}

void journal_on_durable(struct journal *j, journal_durable_fn fn, void *ud)
{
	j->durable_fn = fn;
	j->durable_ud = ud;
}

static void write_free(struct jwrite *w)
{
	cJSON_Delete(w->events);
	free(w->provider);
	free(w->model);
	free(w);
}

static void maybe_free(struct journal *j)
{
	if (!j->closing || j->inflight || j->in_cb)
		return;
	while (j->recovery) {
		struct waiter *r = j->recovery;
		j->recovery = r->next;
		free(r);
	}
	cJSON_Delete(j->kept);
	free(j->cwd);
	free(j);
}

/* ---- publication ---- */

static void publish(struct journal *j, const struct jwrite *w)
{
	uint64_t seq = w->first_seq;
	for (const cJSON *e = w->events ? w->events->child : NULL; e; e = e->next, seq++) {
		const cJSON *type = cJSON_GetObjectItem(e, "type");
		const cJSON *turn = cJSON_GetObjectItem(e, "turn");
		enum vocab_type vt = cJSON_IsString(type) ? vocab_type_of(type->valuestring)
							  : VT_UNKNOWN;
		const char *tn = cJSON_IsString(turn) ? turn->valuestring : NULL;
		const cJSON *data = cJSON_GetObjectItem(e, "data");
		if (j->sink)
			sink_publish_event(j->sink, &w->op, vt, tn, seq, true, data);
		struct cerr err;
		if (j->ctx)
			(void)context_add(j->ctx, vt, tn, data, &err);
	}
	if (j->durable_fn)
		j->durable_fn(j->durable_ud, w->events, w->first_seq);
}

/* ---- completion ---- */

/* Events that did not reach the log, to be written by the next full save. */
static void keep(struct journal *j, struct jwrite *w)
{
	for (cJSON *e; (e = cJSON_DetachItemFromArray(w->events, 0));)
		cJSON_AddItemToArray(j->kept, e);
}

static void pump(struct journal *j);

static void call_recovery_waiters(struct journal *j, const struct journal_receipt *r,
				  const struct cerr *err)
{
	while (j->recovery) {
		struct waiter *wt = j->recovery;
		j->recovery = wt->next;
		if (!j->closing)
			wt->cb(wt->ctx, r, err);
		free(wt);
	}
}

/* w is done (err NULL: durable with receipt rc). */
static void finish(struct journal *j, struct jwrite *w, struct fifo_item *it,
		   const struct fifo_receipt *rc, const struct cerr *err)
{
	struct journal_receipt r = {w->first_seq, j->next_seq, j->version};
	if (w->kind == W_ITEM) { /* not a write of the log: the head stays */
		if (w->item_cb && !j->closing)
			w->item_cb(it, w->ctx, rc, err);
		write_free(w);
		return;
	}
	if (!err) {
		j->next_seq = r.next_seq = rc->next_seq;
		j->version = r.version = rc->content_version;
		if (!j->closing)
			publish(j, w);
		if (w->kind == W_RECOVERY)
			journal_to(j, JOURNAL_SAVED, NULL);
	} else if (w->kind == W_HISTORY && !w->keep) {
		/* Never written, never to be: its seqs go back. */
		j->cursor -= (uint64_t)cJSON_GetArraySize(w->events);
	} else {
		/* For the next full save; a failed full save leaves the
		 * session unsaved, a failed batch only poisons the log. */
		keep(j, w);
		if (w->kind != W_HISTORY)
			journal_to(j, JOURNAL_UNSAVED, err);
	}
	if (w->kind == W_RECOVERY)
		call_recovery_waiters(j, &r, err);
	else if (w->cb && !j->closing)
		w->cb(w->ctx, &r, err);
	write_free(w);
}

static void item_done(struct fifo_item *it, void *ctx, const struct fifo_receipt *rc,
		      const struct cerr *err)
{
	struct jwrite *w = ctx;
	struct journal *j = w->j;
	assert(j->posted == w);
	j->posted = w->next;
	if (!j->posted)
		j->posted_tail = NULL;
	j->inflight--;
	j->in_cb++; /* a callback may close the journal */
	finish(j, w, it, rc, err);
	pump(j);
	j->in_cb--;
	maybe_free(j);
}

/* ---- posting ---- */

static int post(struct journal *j, struct jwrite *w, struct cerr *err)
{
	struct fifo_item *it;
	if (w->kind == W_ITEM) {
		it = w->item;
		w->item = NULL; /* the FIFO's from now on, posted or not */
		w->first_seq = j->cursor;
		if (fifo_post(j->f, it, item_done, w, err) < 0)
			return -1;
		j->inflight++;
		if (j->posted_tail)
			j->posted_tail->next = w;
		else
			j->posted = w;
		j->posted_tail = w;
		return 0;
	}
	if (w->kind == W_HISTORY) {
		w->first_seq = j->cursor;
		it = fifo_history(j->session, w->first_seq, cJSON_Duplicate(w->events, 1));
	} else {
		/* The kept events go first, from the durable head. */
		if (cJSON_GetArraySize(j->kept) > 0) {
			for (cJSON *e; (e = cJSON_DetachItemFromArray(w->events, 0));)
				cJSON_AddItemToArray(j->kept, e);
			cJSON_Delete(w->events);
			w->events = j->kept;
			j->kept = cJSON_CreateArray();
			w->first_seq = j->next_seq;
		} else {
			w->first_seq = j->cursor;
		}
		it = fifo_full_save(j->session, w->first_seq, j->version,
				    cJSON_Duplicate(w->events, 1));
	}
	if (!j->created)
		fifo_item_create_header(it, j->cwd, w->provider, w->model, NULL);
	if (w->running)
		fifo_item_set_running(it);
	if (fifo_post(j->f, it, item_done, w, err) < 0) {
		if (w->kind != W_HISTORY) /* back where they were */
			keep(j, w);
		return -1;
	}
	j->created = true;
	j->cursor = w->first_seq + (uint64_t)cJSON_GetArraySize(w->events);
	j->inflight++;
	if (j->posted_tail)
		j->posted_tail->next = w;
	else
		j->posted = w;
	j->posted_tail = w;
	return 0;
}

/* A waiting write the FIFO refused (it is closing): it fails. */
static void refused(struct journal *j, struct jwrite *w, const struct cerr *err)
{
	struct journal_receipt r = {j->cursor, j->next_seq, j->version};
	j->refusal = *err;
	if (w->kind == W_ITEM) {
		if (w->item_cb && !j->closing)
			w->item_cb(NULL, w->ctx, NULL, err);
		write_free(w);
		return;
	}
	if (w->kind != W_HISTORY)
		journal_to(j, JOURNAL_UNSAVED, err);
	if (w->kind == W_RECOVERY) {
		call_recovery_waiters(j, &r, err);
	} else if (w->cb && !j->closing) {
		w->cb(w->ctx, &r, err);
	}
	write_free(w);
}

/* Post the waiting writes in order; a full save once nothing is in
 * flight. */
static void pump(struct journal *j)
{
	struct jwrite *w;
	while ((w = j->waiting) != NULL && !j->closing) {
		if ((w->kind == W_FULL || w->kind == W_RECOVERY) && j->inflight > 0)
			return;
		j->waiting = w->next;
		if (!j->waiting)
			j->waiting_tail = NULL;
		w->next = NULL;
		struct cerr err;
		if (post(j, w, &err) < 0)
			refused(j, w, &err);
	}
}

static void enqueue(struct journal *j, struct jwrite *w)
{
	if (j->waiting_tail)
		j->waiting_tail->next = w;
	else
		j->waiting = w;
	j->waiting_tail = w;
}

static struct jwrite *new_write(struct journal *j, enum wkind kind, cJSON *events,
				const struct sink_op *op, journal_done_fn cb, void *ctx)
{
	struct jwrite *w = xcalloc(1, sizeof *w);
	w->j = j;
	w->kind = kind;
	w->events = events ? events : cJSON_CreateArray();
	w->op = op ? *op : j->own;
	w->cb = cb;
	w->ctx = ctx;
	return w;
}

/* Queue the recovery save (UNSAVED -> RECOVERING). */
static void queue_recovery(struct journal *j)
{
	journal_to(j, JOURNAL_RECOVERING, NULL);
	enqueue(j, new_write(j, W_RECOVERY, NULL, NULL, NULL, NULL));
}

/* Queue w (after a recovery save when UNSAVED) and post what may go. -1
 * with err when the FIFO refused w at once (w freed, its cb never runs). */
static int submit(struct journal *j, struct jwrite *w, struct cerr *err)
{
	if (j->closing) {
		if (w->item)
			(void)fifo_post(j->f, w->item, NULL, NULL, err);
		write_free(w);
		return cerr_set(err, CERR_USAGE, 0, "the journal of session '%s' is closed",
				j->session);
	}
	if (j->st == JOURNAL_UNSAVED && w->kind != W_ITEM)
		queue_recovery(j);
	/* Posted now when nothing waits before it and it may go. */
	pump(j);
	if (!j->waiting && (w->kind == W_HISTORY || w->kind == W_ITEM || j->inflight == 0)) {
		if (post(j, w, err) < 0) {
			if (w->kind == W_FULL) /* its events kept */
				journal_to(j, JOURNAL_UNSAVED, err);
			write_free(w);
			return -1;
		}
		return 0;
	}
	enqueue(j, w);
	return 0;
}

int journal_append(struct journal *j, cJSON *events, const struct journal_write *wr,
		   journal_done_fn cb, void *ctx, struct cerr *err)
{
	struct jwrite *w = new_write(j, W_HISTORY, events, wr ? wr->op : NULL, cb, ctx);
	if (wr) {
		w->keep = wr->keep;
		w->running = wr->running;
		w->provider = xstrdup_opt(wr->provider);
		w->model = xstrdup_opt(wr->model);
	}
	return submit(j, w, err);
}

int journal_full_save(struct journal *j, cJSON *events, const struct sink_op *op,
		      journal_done_fn cb, void *ctx, struct cerr *err)
{
	return submit(j, new_write(j, W_FULL, events, op, cb, ctx), err);
}

int journal_post_item(struct journal *j, struct fifo_item *it, fifo_done_cb cb, void *ctx,
		      struct cerr *err)
{
	struct jwrite *w = new_write(j, W_ITEM, NULL, NULL, NULL, ctx);
	w->item = it; /* every path posts it: the FIFO frees it even when refused */
	w->item_cb = cb;
	return submit(j, w, err);
}

int journal_recover(struct journal *j, journal_done_fn cb, void *ctx, struct cerr *err)
{
	if (j->st == JOURNAL_SAVED)
		return 1;
	if (j->closing)
		return cerr_set(err, CERR_USAGE, 0, "the journal of session '%s' is closed",
				j->session);
	if (j->st == JOURNAL_UNSAVED) {
		queue_recovery(j);
		pump(j);
		if (j->st == JOURNAL_UNSAVED) { /* refused at once */
			*err = j->refusal;
			return -1;
		}
	}
	struct waiter *wt = xcalloc(1, sizeof *wt);
	wt->cb = cb;
	wt->ctx = ctx;
	struct waiter **p = &j->recovery;
	while (*p)
		p = &(*p)->next;
	*p = wt;
	return 0;
}

enum journal_state journal_state(const struct journal *j)
{
	return j->st;
}

bool journal_created(const struct journal *j)
{
	return j->created;
}

uint64_t journal_next_seq(const struct journal *j)
{
	return j->next_seq;
}

uint64_t journal_version(const struct journal *j)
{
	return j->version;
}

uint64_t journal_cursor(const struct journal *j)
{
	return j->cursor;
}

size_t journal_outstanding(const struct journal *j)
{
	size_t n = j->inflight;
	for (const struct jwrite *w = j->waiting; w; w = w->next)
		n++;
	return n;
}

size_t journal_kept(const struct journal *j)
{
	return (size_t)cJSON_GetArraySize(j->kept);
}

void journal_close(struct journal *j)
{
	if (!j || j->closing)
		return;
	j->closing = true;
	while (j->waiting) {
		struct jwrite *w = j->waiting;
		j->waiting = w->next;
		struct cerr err;
		if (w->item) /* a release still lets the session go; refused: freed */
			(void)fifo_post(j->f, w->item, NULL, NULL, &err);
		write_free(w);
	}
	j->waiting_tail = NULL;
	maybe_free(j);
}
