/* journal.h — the only writer of an open session's log (DESIGN §3).
 *
 * One journal per open session. Every durable write of the engine goes
 * through it: a turn's BEFORE batch, its streamed batches (engine/capture.h
 * posts them here), the settlement's full save, recovery saves, and the
 * host's own commands (title, pin, settings, queued input and its dequeue).
 * The journal owns the append cursor (the seq the next item expects, after
 * every item posted so far) and the durable head (next seq and content
 * version of the last acknowledged item), the order in which items are
 * posted and acknowledged, and the session's durability state.
 *
 * Publication: every event is published once durable, in log order, to
 * the session's context (what the next request is built from) and to the
 * sink (the screen and headless mode), with the identity the write was
 * given (journal_write.op; NULL: the journal's own, operation 0).
 *
 * Durability, changed only by journal_to() (journal.c):
 *   SAVED      --a full save failed----------------------> UNSAVED
 *   UNSAVED    --recovery save posted (journal_recover, or
 *                ahead of the next write)------------------> RECOVERING
 *   RECOVERING --recovery save acknowledged---------------> SAVED
 *   RECOVERING --recovery save failed---------------------> UNSAVED
 *   UNSAVED    --a full save failed----------------------> UNSAVED
 * Nothing else: a SAVED session has nothing to recover, an UNSAVED one
 * becomes SAVED only through its recovery save.
 *
 * The promises, which callers build on:
 * - Log order: items are posted in call order, each expecting the seq after
 *   the one before it; their callbacks run in the same order, after the
 *   events are published. A full save is posted only once every item before
 *   it has completed (it expects the version after all of them); writes
 *   made meanwhile wait behind it.
 * - Markers before full saves: a caller publishing a marker into the sink
 *   before it asks for a full save sees the marker ahead of the save's
 *   events (the journal publishes only from a completion).
 * - Intent before effect: a write's callback runs only once its events are
 *   durable; the caller performs the effect (a provider request after the
 *   prompt, a tool's first effect after its tool/started) from there.
 * - A failed item whose write says keep (a turn's streamed batches): its
 *   events are kept, with those of kept items that failed after it, and the
 *   next full save writes them first, from the seq the first of them
 *   expected; the FIFO fails every later item fast until then, so nothing
 *   lands after a gap. A failed full save keeps all its events: the session
 *   is UNSAVED until a recovery save writes them.
 * - The recovery save goes ahead of the next write: an append or full save
 *   asked for while UNSAVED posts the recovery save first (the write fails
 *   fast behind it when the recovery fails).
 * - Queued input is dispatched only after a saved success: the host asks
 *   journal_state() == JOURNAL_SAVED before it dispatches.
 * Everything runs on the loop thread. */
#ifndef CAIRN_JOURNAL_H
#define CAIRN_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "engine/context.h"
#include "persist/fifo.h"
#include "sink/sink.h"

struct journal;

enum journal_state { JOURNAL_SAVED, JOURNAL_UNSAVED, JOURNAL_RECOVERING };

/* Is from -> to in the transition table above? */
bool journal_may(enum journal_state from, enum journal_state to);

struct journal_deps {
	struct fifo *fifo;
	struct sink *sink;       /* NULL: nothing published */
	const char *session;     /* copied */
	uint64_t generation;     /* of the session's runtime: the journal's own sink identity */
	const char *cwd;         /* the header's when the first write creates the log (copied) */
};

/* What an acknowledged write did: its events hold seqs first_seq.., and
 * the durable head is now (next_seq, version). */
struct journal_receipt {
	uint64_t first_seq, next_seq, version;
};
/* Called once per write, on the loop: err NULL once its events are durable
 * and published. Never from inside the call that made the write. */
typedef void (*journal_done_fn)(void *ctx, const struct journal_receipt *r,
				const struct cerr *err);
/* Told of each change of the durability state (err: why it is UNSAVED). */
typedef void (*journal_state_fn)(void *ud, enum journal_state st, const struct cerr *err);

/* How one append is written. */
struct journal_write {
	const struct sink_op *op; /* its events' sink identity (NULL: the journal's) */
	bool keep;                /* failed: its events are kept for the next full save */
	bool running;             /* mark the session running (fifo_item_set_running) */
	const char *provider, *model; /* the header's, if this write creates the log */
};

/* A journal for session whose log does not exist yet (its first write
 * creates it) when created is false, else holding the log at (next_seq,
 * version). ctx (borrowed; may change with journal_set_context) gets every
 * durable event. The caller closes it with journal_close. */
struct journal *journal_new(const struct journal_deps *d, struct context *ctx, bool created,
			    uint64_t next_seq, uint64_t version);
/* The context the durable events go to from now on (borrowed). */
void journal_set_context(struct journal *j, struct context *ctx);
/* The log was opened at (next_seq, version) by someone else (the FIFO's
 * open item): adopt that head. Only before any write. */
void journal_adopt(struct journal *j, uint64_t next_seq, uint64_t version);
/* Be told of durability changes (NULL: no). */
void journal_on_state(struct journal *j, journal_state_fn fn, void *ud);
/* Be told of each acknowledged write after its publication: its events
 * (borrowed for the call), the first at first_seq (NULL: no). */
typedef void (*journal_durable_fn)(void *ud, const cJSON *events, uint64_t first_seq);
void journal_on_durable(struct journal *j, journal_durable_fn fn, void *ud);

/* Append events (a JSON array of {"type","turn"?,"data"?}, owned by the
 * journal from then on) at the cursor as one history item. -1 with err
 * (events freed, cb never runs) once the FIFO refuses items (it is
 * closing). */
int journal_append(struct journal *j, cJSON *events, const struct journal_write *w,
		   journal_done_fn cb, void *ctx, struct cerr *err);
/* Save events (owned from then on) by a full save, once every item before
 * it completed, after the kept events of failed items; op as in
 * journal_write. Failed: the session is UNSAVED with all those events
 * kept. -1 as journal_append. */
int journal_full_save(struct journal *j, cJSON *events, const struct sink_op *op,
		      journal_done_fn cb, void *ctx, struct cerr *err);
/* Recover an UNSAVED session: its kept events written by a full save
 * (posted now) and cb called with its outcome; RECOVERING: cb waits for the
 * recovery in flight. Returns 1 (cb never runs) when SAVED: nothing to
 * recover; -1 with err when the FIFO refuses the save. */
int journal_recover(struct journal *j, journal_done_fn cb, void *ctx, struct cerr *err);

/* Post it (an open, release or delete of the session; owned from then on) in
 * order behind every write asked for before it; cb as fifo_post's. Never
 * preceded by a recovery save (an unsaved session is released as it is).
 * -1 with err (it freed, cb never runs) when the FIFO refuses it. */
int journal_post_item(struct journal *j, struct fifo_item *it, fifo_done_cb cb, void *ctx,
		      struct cerr *err);

enum journal_state journal_state(const struct journal *j);
/* Does the session's log exist (or will its first write, posted, create it)? */
bool journal_created(const struct journal *j);
/* The durable head: the seq after the last acknowledged event, and the
 * content version with it. */
uint64_t journal_next_seq(const struct journal *j);
uint64_t journal_version(const struct journal *j);
/* The seq the next write expects (after every item posted, and every
 * kept event). */
uint64_t journal_cursor(const struct journal *j);
/* Writes posted or waiting, not completed yet. */
size_t journal_outstanding(const struct journal *j);
/* Events kept from failed writes, waiting for a full save. */
size_t journal_kept(const struct journal *j);

/* Close like uv_close: writes in flight still complete in the FIFO, their
 * callbacks no longer run, nothing is published; freed after the last. */
void journal_close(struct journal *j);

#endif
