/* toolstep.h — one model step's tool calls, from the model's request to
 * their results (issue: tools, approvals and spawn groups; DESIGN §5).
 *
 * The runner feeds the step's finished calls (STREAM_TOOL_END) as they
 * stream, then runs them once the reply is whole. Every call gets exactly
 * one tool/result, in the model's order, one call at a time:
 *
 *   1. every tool/call is captured first (cairn's call_id "<turn>.<n>",
 *      the provider's id kept as provider_id; arguments that are not a
 *      JSON object are kept as the text the model sent);
 *   2. per call: a call cut off by the output limit, past the step limit,
 *      or after a cancel is answered not_executed; malformed arguments or
 *      an unknown tool get an error result the model can read;
 *   3. the approval: interaction/request {request_id, call_id, tool,
 *      summary}, then interaction/answer {request_id, decision, by, note?}
 *      — by the policy at once (approval.h, decided on a worker: it reads
 *      the disk), or by the user through toolstep_answer after the ask
 *      hook published the request; deny → a denied result;
 *   4. intent before effect: tool/started is captured and everything
 *      committed; only after the acknowledgment does the body run (a cancel
 *      that came meanwhile answers "canceled: not run");
 *   5. the tool's result is captured (its whole output, up to the tool's
 *      full_max: what the model reads of it is capped by the context).
 * A failed commit stops the step: the runner fails the turn.
 *
 * A call's states: NEW --checks--> DECIDING --policy allows--> STARTING
 *   DECIDING --must ask--> ASKING --allowed--> STARTING --acknowledged-->
 *   RUNNING --result--> DONE; any --answered without running--> DONE. */
#ifndef CAIRN_TOOLSTEP_H
#define CAIRN_TOOLSTEP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "engine/approval.h"
#include "engine/stream.h"
#include "engine/tool.h"
#include "persist/vocab.h"

struct toolstep;

enum toolstep_end {
	TOOLSTEP_DONE,     /* every call answered: the next request may go */
	TOOLSTEP_CANCELED, /* canceled: every call answered, the turn ends canceled */
	TOOLSTEP_FAILED,   /* a commit failed: the turn fails (capture_failed) */
};

typedef void (*toolstep_commit_fn)(void *arg, const struct cerr *err);

struct toolstep_hooks {
	void *ud;
	/* Capture an event of the turn (data borrowed). */
	void (*capture)(void *ud, enum vocab_type type, const cJSON *data);
	/* Make everything captured so far durable, then call cb (err: failed). */
	int (*commit)(void *ud, toolstep_commit_fn cb, void *arg);
	/* A request is durable and waits for the user (its interaction/request data). */
	void (*ask)(void *ud, const cJSON *request);
	/* The step is over (once). */
	void (*done)(void *ud, enum toolstep_end end, const struct cerr *err);
};

struct toolstep_opts {
	const struct tool_ctx *tools; /* loop, cwd, env, limits (borrowed) */
	enum approval_policy policy;
	struct approvals *grants;     /* the session's (borrowed; allow_session adds to it) */
	const char *turn;             /* the turn's id, for call ids (copied) */
	unsigned first_call;          /* the number of the step's first call in the turn */
	bool over_limit;              /* the step limit is reached: no call runs */
};

/* A step; hooks and opts copied. Free with toolstep_free once done ran. */
struct toolstep *toolstep_new(const struct toolstep_hooks *hk, const struct toolstep_opts *o);
void toolstep_free(struct toolstep *ts);
/* A finished call of the reply (STREAM_TOOL_END). */
void toolstep_add(struct toolstep *ts, const struct stream_event *ev);
size_t toolstep_count(const struct toolstep *ts);
/* Capture the step's tool/call events (step 1 above), before the
 * step/end that closes the model's reply; toolstep_run does it when it
 * was not done. */
void toolstep_record(struct toolstep *ts);
/* Run the calls (above); done follows. */
void toolstep_run(struct toolstep *ts);
/* The user's answer to request_id: decision allow_once | allow_session |
 * deny | canceled, note may be NULL. A request of this step answered
 * already: the same answer again is a no-op, a different one is recorded
 * with superseded: true and changes nothing. Any other: CERR_MISSING. */
int toolstep_answer(struct toolstep *ts, const char *request_id, const char *decision,
		    const char *note, struct cerr *err);
/* Cancel: a call waiting for approval is answered canceled, a running
 * tool is stopped (its result canceled), later calls are not executed,
 * their results saying why (NULL: "the turn was canceled"; copied). */
void toolstep_cancel(struct toolstep *ts, const char *why);

#endif
