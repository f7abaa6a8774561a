/* runner.h — turns on the loop: admission, the BEFORE save, the model
 * calls with their capture, and the completion marker (DESIGN §3 steps
 * 1–4); settlement (step 5) when the consumer says it handled the marker.
 *
 * A turn, in order:
 * 1. admission: one turn per session at a time (another: CERR_BUSY);
 * 2. the BEFORE save: session/settings when the turn changes them (the
 *    caller says what: runner_turn.settings), turn/start (parent_turn,
 *    client_submit_id) and user/message, marking the session running;
 *    nothing is sent to a provider before it is acknowledged. Rejected:
 *    nothing is dispatched, the turn ends "not_started" and its marker
 *    gives the text back;
 * 3. each model call: request/prepared and every pending batch are durable
 *    before each attempt goes out; streamed text goes to the sink as it
 *    comes and to the capture (engine/capture.h); a failed capture stops
 *    every further request (the turn fails with class capture_failed);
 * 4. step/end and turn/end are captured (not committed) and the marker
 *    "turn_done" is published into the sink after every item of the turn,
 *    with the turn's outcome: {"turn", "outcome", "error"?, "usage"?,
 *    "text"?}. outcome is one of turn/end's (completed, canceled, failed)
 *    or "not_started"; "text" (the prompt, back to the composer) when
 *    nothing was dispatched (not started, or canceled before any call),
 *    and "input_id" when the turn was a queued input's (which stays queued
 *    when it did not start);
 * 5. runner_settle (the consumer applied everything up to that marker):
 *    the marker's identity is checked (a stale one settles nothing), the
 *    rest of the turn is taken from the capture and saved by a full save;
 *    its receipt is adopted, the durable events are published, the session
 *    is released, and a marker "settled" follows: {"ok": true, "next_seq",
 *    "version"} or {"ok": false, "error"} (the session is then unsaved).
 * Every write of the turn goes through the session's journal
 * (engine/journal.h), which publishes each event to the sink as a durable
 * event (with its seq) once the FIFO acknowledged it, and adds it to the
 * session's context, so the next call or turn sees what the log holds;
 * streamed text reaches the sink at once.
 * Sink items carry the turn's identity (session, generation, operation).
 * While the sink asks the producer to pause, every running call stops
 * reading its reply (backpressure). Everything runs on the loop thread. */
#ifndef CAIRN_RUNNER_H
#define CAIRN_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "base/err.h"
#include "engine/approval.h"
#include "engine/call.h"
#include "engine/context.h"
#include "engine/journal.h"
#include "engine/tool.h"
#include "sink/sink.h"

struct runner;

/* How a turn's settlement ended, for its owner (the host): told before
 * the "settled" marker is published. */
struct runner_settlement {
	const char *session, *turn; /* borrowed for the call */
	struct sink_op op;
	const char *outcome;        /* turn_done's outcome */
	bool ok;                    /* the full save succeeded (or nothing was to be saved) */
	uint64_t next_seq, version; /* ok: the session's durable head now */
	/* !ok: why; the session's journal keeps the full save's events for
	 * its recovery save (journal.h). */
	const struct cerr *err;
};
typedef void (*runner_settled_fn)(void *ud, struct runner_settlement *s);

struct runner_deps {
	uv_loop_t *loop;
	struct http *http; /* NULL: only the offline provider can run */
	struct sink *sink; /* its pressure callback becomes the runner's */
	runner_settled_fn settled; /* NULL: none */
	void *ud;
};

struct runner_turn {
	const char *session;          /* the session's id */
	struct journal *journal;      /* the session's (borrowed for the turn): every
				       * write of the turn goes through it, the BEFORE
				       * save creating the log when it does not exist */
	uint64_t generation;          /* of the session's runtime */
	struct context *ctx;          /* its events so far (borrowed for the turn; the
				       * journal adds the turn's own once durable) */
	const char *turn;             /* the new turn's id */
	const char *parent_turn;      /* the active leaf it continues; NULL: a root */
	const char *client_submit_id; /* NULL: none */
	const char *dequeued_input;   /* a queued input this turn takes: its
				       * input/dequeued joins the BEFORE save (NULL: none) */
	const char *text;             /* the prompt */
	const char *provider;         /* its name, for request/prepared and the header */
	/* Tools (NULL: none offered; then call.params.tools should be NULL
	 * too): the calls the model asks for run through engine/toolstep.h. */
	const struct tool_ctx *tools; /* borrowed for the turn */
	enum approval_policy approval;
	struct approvals *grants;     /* the session's; borrowed for the turn */
	unsigned max_steps;           /* model calls per turn (0: 50) */
	const cJSON *settings;        /* session/settings data the BEFORE save records
				       * first (prepared_settings_change), NULL: none */
	struct call_spec call;        /* kind, params (model, base_url, key, system,
				       * tools), pace, timeouts, retry; msgs/n/prompt
				       * are the runner's */
};

/* A runner on deps (borrowed; they outlive it). Free with runner_free
 * once every turn has settled. */
struct runner *runner_new(const struct runner_deps *deps);
void runner_free(struct runner *r);
/* The HTTP engine for turns started from now on (borrowed; NULL: only the
 * offline provider can run): an application creates it once it knows a
 * network provider is needed. */
void runner_set_http(struct runner *r, struct http *http);
/* Start turn t (strings copied). *op (may be NULL) gets the identity its
 * sink items carry. A session with a turn not yet settled: CERR_BUSY. */
int runner_start(struct runner *r, const struct runner_turn *t, struct sink_op *op,
		 struct cerr *err);
/* Cancel session's turn: before its BEFORE save is acknowledged nothing is
 * dispatched; a call in flight is aborted (its partial text kept). The
 * marker follows with outcome canceled (or not_started). No turn: no-op. */
void runner_cancel(struct runner *r, const char *session);
/* The consumer handled the "turn_done" marker op: settle it (above).
 * A stale or unknown op: CERR_CONFLICT, nothing is saved. */
int runner_settle(struct runner *r, const struct sink_op *op, struct cerr *err);
/* Called once per runner_note: err NULL when its events are durable. */
typedef void (*runner_note_fn)(void *ctx, const struct cerr *err);
/* Write events (a JSON array, owned by the runner from then on) into the
 * history of session's running turn, in order with the turn's own (the
 * host's queued input while a turn runs): captured and committed now, or
 * right after the BEFORE save when it is still in flight. -1 (events
 * freed, cb never runs): no turn (CERR_MISSING: write it directly), a
 * turn settling (CERR_BUSY: write it once settled), or a failed capture
 * (CERR_IO). */
int runner_note(struct runner *r, const char *session, cJSON *events, runner_note_fn cb,
		void *ctx, struct cerr *err);
/* The user's answer to an interaction request of session's turn (a
 * notice "interaction" carried it): decision allow_once | allow_session |
 * deny | canceled, note may be NULL. Not pending: CERR_MISSING. */
int runner_answer(struct runner *r, const char *session, const char *request_id,
		  const char *decision, const char *note, struct cerr *err);
/* Does session have a turn that is not settled yet? */
bool runner_busy(const struct runner *r, const char *session);

#endif
