/* fifo.h — the persistence FIFO: one writer thread executes save items in
 * the order they were posted; the libuv loop thread posts them and gets each
 * one's completion back through uv_async (DESIGN §2, §3, §6).
 *
 * Calling sequence on a running loop (the loop thread never waits):
 *   fifo_new(loop, root, opts) -> fifo_post(item, cb) ... -> fifo_barrier(session,
 *   cb) where the caller needs "everything so far is durable" -> fifo_close(
 *   deadline, close_cb): on FIFO_CLOSED f is gone; on FIFO_TIMED_OUT f still
 *   works and fifo_close may be called again.
 * Where no loop runs (CLI commands, tests), the blocking forms instead:
 *   fifo_new -> fifo_post ... -> fifo_flush_wait (optional) ->
 *   fifo_close_wait(deadline) -> run the loop to finish it.
 * Completions are delivered in post order, across sessions too.
 * Every posted item completes exactly once, on the loop thread, with a
 * receipt (next seq, content version) or a classified error; the item is
 * freed after its callback returns. Per session, items run in post order;
 * after a failed item the session's later items fail fast until a full
 * save recovers it, so nothing is ever written after a gap. Adjacent
 * history items of one session may be merged into one append; a full save
 * is never merged. Drafts (FIFO_DRAFT) touch no log and no catalog. Items
 * that reach the writer together share one catalog transaction (group
 * commit).
 * A host holds its session: fifo_open (the writer takes the session's lock,
 * repairs what a crash left, and completes with the session read) ...
 * items marked running (fifo_item_set_running) ... a full save ...
 * fifo_release. A held session is never closed by the handle cache, so
 * other processes get CERR_LOCKED when they write to it.
 * Threads: the writer, and fifo_opts.helpers helpers (0 for a one-shot
 * command). The writer's files: fifo_writer.c (a batch), fifo_round.c
 * (rounds, enum round_state), fifo_sess.c (per-session state, failure and
 * recovery), fifo_hold.c (open, release), fifo_move.c (delete, restore,
 * purge), fifo_lane.c (syncs), fifo_ckpt.c (checkpoints), fifo_draft.c. */
#ifndef CAIRN_FIFO_H
#define CAIRN_FIFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/err.h"

struct fifo;
struct fifo_item;
struct prepared;
struct scan;

enum fifo_kind {
	FIFO_HISTORY,   /* append a transcript batch (expected seq) */
	FIFO_FULL_SAVE, /* append the final batch + commit the projection (seq and version) */
	FIFO_META,      /* title / pin as a session/meta event */
	FIFO_DELETE,    /* move to the trash */
	FIFO_RESTORE,   /* back from the trash */
	FIFO_PURGE,     /* remove from the trash for good */
	FIFO_BARRIER,   /* writes nothing: completes after the items posted before it */
	FIFO_DRAFT,     /* replace a project's composer draft (draft.h), no session */
	FIFO_OPEN,      /* hold a session open: lock, read, repair; completes with it read */
	FIFO_RELEASE,   /* let a held session go: its handle closes, its lock is released */
};

struct fifo_receipt {
	uint64_t next_seq;        /* the log's next seq after this item */
	uint64_t content_version; /* the catalog's version of the session */
	int64_t deleted_at;       /* FIFO_DELETE: when */
	/* The item is durable (its event in the log, or its session moved)
	 * but the catalog could not be updated: it lags until a later write
	 * of the session or a sync catches up. Still a success, never to be
	 * retried (that would append twice); catalog_err says why.
	 * content_version is then the version the catalog will have. */
	bool catalog_behind;
	struct cerr catalog_err;
	/* FIFO_OPEN: what the open repaired (a torn tail cut, closers
	 * appended for an interrupted turn) and the session as read after
	 * that, prepared for a runner (prepare.h: its events, turns, open
	 * turn, unmatched calls, queued inputs, settings), owned by the
	 * callback (prepared_free; freed with the item when there is no
	 * callback). */
	uint64_t cut_bytes;
	size_t closers;
	struct prepared *prepared;
};

/* Called once per item on the loop thread; err is NULL on success (see
 * fifo_receipt.catalog_behind: a success whose catalog lags). The item
 * and everything it owns are freed after the call returns. */
typedef void (*fifo_done_cb)(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
			     const struct cerr *err);

/* Items. events is a JSON array of {"type","turn"?,"data"?,"ignorable"?}
 * objects and is owned by the item from then on. */
struct fifo_item *fifo_history(const char *session, uint64_t expected_seq, cJSON *events);
struct fifo_item *fifo_full_save(const char *session, uint64_t expected_seq,
				 uint64_t expected_version, cJSON *events);
/* meta: {"title": string|null} and/or {"pinned": bool}; owned by the item. */
struct fifo_item *fifo_meta(const char *session, cJSON *meta);
struct fifo_item *fifo_delete(const char *session);
struct fifo_item *fifo_restore(const char *session);
struct fifo_item *fifo_purge(const char *session);
/* Replace the draft of project cwd (NULL: no cwd) with a copy of text
 * (empty: remove it); see draft.h. It belongs to no session (its session
 * is ""). Adjacent drafts of one project are merged: only the newest is
 * written, and all of them complete with its result. */
struct fifo_item *fifo_draft(const char *cwd, const char *text);
/* Hold session open for this FIFO's owner (DESIGN §4.5): the writer takes
 * its writer lock on its own descriptor, reads the log, cuts a torn tail
 * and closes an interrupted turn whatever the catalog says, rebuilds the
 * session's row from the log, and completes with the session read (the
 * receipt's prepared session, next seq and content version). The session stays open
 * and locked (the handle cache never closes it; another process gets
 * CERR_LOCKED when it writes) until a fifo_release item. A missing,
 * corrupt or locked session fails the item and is not held. */
struct fifo_item *fifo_open(const char *session);
/* Let a held session go once every item posted before it has completed:
 * the writer closes its handle, which releases the lock. */
struct fifo_item *fifo_release(const char *session);
/* Let a history or full save create the session when it does not exist
 * yet (its first append publishes the header with this cwd, NULL: none). */
void fifo_item_create(struct fifo_item *it, const char *cwd);
/* The same, and the header also names provider and model (NULL: not set)
 * and the lineage of a fork, forked_from (borrowed, copied; NULL: none). */
void fifo_item_create_header(struct fifo_item *it, const char *cwd, const char *provider,
			     const char *model, const cJSON *forked_from);
/* Mark the session running in the same catalog transaction as this
 * history item's append (a full save clears it back to what the log says:
 * idle). A running row whose writer lock is free was left by a crash. */
void fifo_item_set_running(struct fifo_item *it);
enum fifo_kind fifo_item_kind(const struct fifo_item *it);
const char *fifo_item_session(const struct fifo_item *it);

/* How an asynchronous fifo_close ended. */
enum fifo_close_status {
	FIFO_CLOSED,    /* drained, writer stopped, handles closed: f is freed after the callback */
	FIFO_TIMED_OUT, /* the deadline passed first: f keeps working and is still the caller's */
};
/* Called once on the loop thread per fifo_close; outstanding is the number
 * of items posted and not completed yet (0 when closed). f is valid during
 * the call only when closed. */
typedef void (*fifo_close_cb)(struct fifo *f, void *ctx, enum fifo_close_status st,
			      uint64_t outstanding);

#define FIFO_HELPERS 8   /* fifo_opts.helpers for a program that saves as it runs */
#define FIFO_MAX_OPEN 64 /* fifo_opts.max_open by default */

struct fifo_opts {
	/* Helper threads: a round's logs sync on them (one lane each), all
	 * at once, while the writer commits the round's catalog transaction;
	 * the catalog's checkpoint runs on one too. 0: the writer does it all
	 * itself (a one-shot command). */
	unsigned helpers;
	/* Log handles (each holds its session's writer lock) the writer keeps
	 * open for sessions not held (fifo_open); 0: FIFO_MAX_OPEN. */
	size_t max_open;
};

/* Start the writer for the data root `root` (its own store and catalog
 * connection); opts NULL: FIFO_HELPERS helpers, FIFO_MAX_OPEN handles.
 * Returns NULL with err on failure; the FIFO is the caller's to close. */
struct fifo *fifo_new(uv_loop_t *loop, const char *root, const struct fifo_opts *opts,
		      struct cerr *err);
/* Post an item (ownership passes to the FIFO). Fails only after
 * fifo_close began: then cb never runs and the item is freed. */
int fifo_post(struct fifo *f, struct fifo_item *it, fifo_done_cb cb, void *ctx, struct cerr *err);
/* Post a barrier for session (NULL: all sessions): its callback runs on
 * the loop once every item posted before it for that session has completed
 * (their syncs of the writer's round in flight included), after their
 * callbacks and before those of items posted after it. It always succeeds
 * (err NULL, a zero receipt). Fails like fifo_post once a close began: then
 * cb never runs. Since completions follow post order, it in fact also
 * comes after every earlier item of other sessions. */
int fifo_barrier(struct fifo *f, const char *session, fifo_done_cb cb, void *ctx,
		 struct cerr *err);
/* Close without blocking the loop, like uv_close: new items are refused at
 * once; the writer drains the queue and signals progress through the FIFO's
 * uv_async; cb runs on the loop with FIFO_CLOSED (every completion
 * delivered before it, writer and helpers stopped, every handle of f closed:
 * uv_loop_close may follow) or, when deadline_ms of clock_mono_ns()/1e6
 * passes first, FIFO_TIMED_OUT with the items still outstanding (then f
 * accepts items again and fifo_close may be called again). Once drained,
 * the writer's last catalog update and the teardown are no longer bounded
 * by the deadline: they run on the writer thread, and cb waits for them.
 * Returns -1 (cb never runs) while a close is already under way. */
int fifo_close(struct fifo *f, uint64_t deadline_ms, fifo_close_cb cb, void *ctx);
/* Blocking forms, only where no loop runs (CLI commands, tests): they
 * block the calling thread, and so a loop running on it. */
/* Wait until every item posted before the call for session (NULL: all
 * sessions) is durable, or until deadline_ms of clock_mono_ns()/1e6
 * passes. Returns 0 when done, 1 on timeout (nothing is lost; wait again
 * later). Completions are still delivered by the loop. */
int fifo_flush_wait(struct fifo *f, const char *session, uint64_t deadline_ms);
/* Flush until deadline_ms, then stop the writer, deliver every pending
 * completion on the calling thread and close the FIFO's handles (run the
 * loop to finish it; f is freed by then). Returns 1 without closing when
 * the flush timed out: the FIFO keeps ownership and the caller may call
 * fifo_close_wait again. */
int fifo_close_wait(struct fifo *f, uint64_t deadline_ms);
/* Test hook: pause the writer before it takes its next batch (true) or let
 * it go (false), so tests can queue items that reach it together. */
void fifo_pause(struct fifo *f, bool paused);
/* Test hook: let the writer take at most n queued items per batch (0: all
 * of them), so tests can make one session's saves meet in consecutive
 * rounds, the later one written while the earlier one syncs. */
void fifo_set_batch_limit(struct fifo *f, size_t n);
/* Test hook: the sessions the writer keeps state for (any thread). */
size_t fifo_sessions_known(struct fifo *f);
/* Test hook: the checkpoints a helper has completed (any thread). */
unsigned long fifo_helper_checkpoints(struct fifo *f);

#endif
