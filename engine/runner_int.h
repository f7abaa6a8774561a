/* runner_int.h — what the runner's files share (not a public header:
 * everything else uses runner.h). runner.c holds a turn's life (admission,
 * the BEFORE save, its end and marker), runner_step.c one model step (the
 * call and its tool calls), runner_note.c the host's events written into a
 * running turn, runner_settle.c the settlement. */
#ifndef CAIRN_RUNNER_INT_H
#define CAIRN_RUNNER_INT_H

#include "base/buf.h"
#include "engine/capture.h"
#include "engine/journal.h"
#include "engine/runner.h"
#include "engine/toolstep.h"

/* A turn's states, with their transitions:
 *   BEFORE   --BEFORE save acknowledged--------------> CALLING  (first call)
 *   BEFORE   --BEFORE save rejected, or canceled-----> ENDED    (not_started / canceled)
 *   CALLING  --call done: step/end, turn/end captured-> ENDED    (marker turn_done)
 *   CALLING  --the step's tool calls answered--------> CALLING  (the next step)
 *   ENDED    --runner_settle-------------------------> SETTLING (full save posted)
 *   SETTLING --full save completed-------------------> freed    (marker settled) */
enum turn_state { TURN_BEFORE, TURN_CALLING, TURN_ENDED, TURN_SETTLING };

/* Events a host writes into a running turn's history (runner_note). */
struct note {
	cJSON *events;
	runner_note_fn cb;
	void *ctx;
	struct note *next;
};

struct turn {
	struct runner *r;
	struct turn *next;
	enum turn_state st;
	struct sink_op op;
	char *session, *id, *text, *provider;
	char *parent, *submit_id, *dequeued;
	cJSON *settings;          /* recorded by the BEFORE save, or NULL */
	struct journal *j;        /* the session's: every write of the turn */
	struct context *ctx;
	/* the call's spec, with its strings owned here */
	struct call_spec spec;
	char *model, *base_url, *api_key, *system;
	cJSON *tools;
	struct capture *cap;
	bool cap_paused; /* its capture has too much text in flight: the call waits */
	struct call *call;
	unsigned step, max_steps, calls;
	const struct tool_ctx *tool_ctx;
	enum approval_policy approval;
	struct approvals *grants;
	struct toolstep *ts;          /* this step's tool calls */
	struct toolstep *ts_old;      /* the last step's, freed once out of its own callback */
	enum vocab_outcome pending_outcome; /* the step's outcome while its calls are answered */
	struct stream_usage total;    /* the usage of every step */
	bool cancel;
	struct buf answer;        /* the answer's text, for the marker */
	struct call_result res;   /* the last call's */
	/* the outcome, once ended */
	const char *outcome;
	cJSON *error;             /* {"class","message","http_status"?} or NULL */
	struct note *notes;       /* waiting for the BEFORE save */
};

struct runner {
	struct runner_deps d;
	struct turn *turns;
	uint64_t next_op;
	bool paused;              /* the sink asks producers to pause */
};

/* runner.c */
/* The turn of session, or NULL (the runner's turns are few: a list). */
struct turn *runner_find(const struct runner *r, const char *session);
/* Take t out of the runner's list (runner_turn_free frees it). */
void runner_unlink(struct runner *r, struct turn *t);
void runner_turn_free(struct turn *t);
/* A usage object (a new one) or NULL when nothing was reported. */
cJSON *runner_usage_json(const struct stream_usage *u);
/* The turn's error {"class","message","http_status"?}, replacing any. */
void runner_set_error(struct turn *t, const char *cls, const char *message, long http_status);
/* End the turn: turn/end captured, the turn_done marker published. */
void runner_end_turn(struct turn *t, enum vocab_outcome outcome);

/* runner_step.c */
/* Start the turn's next model call. */
void runner_step_start(struct turn *t);

/* runner_note.c */
/* Capture and commit the notes that waited for the BEFORE save. */
void runner_note_flush(struct turn *t);
/* Fail every note still waiting, with err. */
void runner_note_fail(struct turn *t, const struct cerr *err);

#endif
