/* transcript.h — the model of what the chat screen shows of one session:
 * its turns as blocks (prompt, answer, reasoning, tool calls, outcome),
 * the queued prompts, and what the status line says. Pure: no terminal,
 * no rendering, no disk; everything on the loop thread.
 *
 * Two sources go through one code path (transcript_apply_event):
 * - the engine's sink, item by item as the screen reads it
 *   (transcript_apply_sink): deltas while the answer streams, the durable
 *   events once each batch is acknowledged, notices and markers;
 * - the events of the session's log when it is opened (docs/format.md §7),
 *   so a resumed session shows the turns as they were.
 * Streamed text and the durable assistant/text (or assistant/reasoning)
 * events are the same bytes, cut differently: each source advances its
 * own byte cursor per turn and stream, and only the bytes past what is
 * shown are appended, so each character shows once whichever source
 * brings it first, and a model built from the sink equals one built from
 * the log once the turn is saved. Durable events carry their log seq: an
 * event at or below the last seq applied is ignored, so feeding the log
 * and then the live sink never doubles anything.
 *
 * Text is kept as given (model, tool and log text included): sanitising
 * control characters and escape sequences is the renderer's job
 * (base/termsafe.h), never the model's, so copying a block gives the
 * exact bytes.
 *
 * Changes: every change bumps a clock; each block and turn records the
 * clock of its last change, so the screen keeps the clock it last drew at
 * and re-renders only turns and blocks newer than it (while an answer
 * streams, only the open block changes).
 *
 * Memory: turns can be dropped from the front (transcript_drop_before, or
 * a window set with transcript_set_window); the model remembers that
 * earlier turns exist (transcript_dropped, transcript_has_earlier) and the
 * seq where what it holds begins, for paging them in from the log.
 *
 * Calling sequence:
 *	tr = transcript_new(session_id);
 *	host_open_history(h, id, transcript_history, tr, opened_cb, ...);
 *	(or, for a log read otherwise, transcript_apply_event per event)
 *	in the sink's read callback: if (transcript_apply_sink(tr, it, now)) mark dirty;
 *	when drawing: transcript_changed_from(tr, drawn_at) ... drawn_at = transcript_version(tr);
 *	transcript_free(tr); */
#ifndef CAIRN_TRANSCRIPT_H
#define CAIRN_TRANSCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "persist/vocab.h"
#include "sink/sink.h"

struct transcript;
struct transcript_turn;
struct transcript_block;

enum transcript_kind {
	TR_PROMPT,    /* the user's message */
	TR_TEXT,      /* the model's answer (consecutive pieces joined) */
	TR_REASONING, /* the model's reasoning: collapsed by default */
	TR_TOOL,      /* one tool call, its approval, run and result */
	TR_OUTCOME,   /* how a turn that did not complete ended, in words */
};

enum transcript_outcome {
	TR_OPEN, /* still running (or its end is not in what was read) */
	TR_COMPLETED,
	TR_CANCELED,
	TR_FAILED,      /* its error says why (provider, delivery_unknown, step_limit, ...) */
	TR_INTERRUPTED, /* closed by repair: the process stopped during it */
};

/* A tool call's arguments, as far as they are known. */
enum transcript_args {
	TR_ARGS_STREAMING, /* the model is still writing them (no tool/call yet) */
	TR_ARGS_OK,        /* a JSON object */
	TR_ARGS_CUT_OFF,   /* incomplete: the output limit or a cancel cut them */
	TR_ARGS_BLOB,      /* too long for the log: spilled to a blob, head and tail kept */
	TR_ARGS_INVALID,   /* not a JSON object: kept as the model sent them */
};

enum transcript_approval {
	TR_APPROVAL_NONE,     /* not decided (yet) */
	TR_APPROVAL_WAITING,  /* the user is asked */
	TR_APPROVAL_ONCE,     /* allowed by the user, once */
	TR_APPROVAL_SESSION,  /* allowed by the user for the session */
	TR_APPROVAL_POLICY,   /* allowed by the approval policy */
	TR_APPROVAL_DENIED,   /* denied by the user (note: what they said) */
	TR_APPROVAL_CANCELED, /* the turn was canceled, or repair closed it */
};

enum transcript_status {
	TR_STATUS_NONE, /* no result yet */
	TR_STATUS_OK,
	TR_STATUS_ERROR,
	TR_STATUS_DENIED,
	TR_STATUS_CANCELED,
	TR_STATUS_NOT_EXECUTED,
	TR_STATUS_OUTCOME_UNKNOWN,
};

/* A tool block's fields: read-only for the screen, owned by the model and
 * valid until the next apply, drop or free. The output is the block's
 * text (transcript_block_text). */
struct transcript_tool {
	const char *call_id;      /* NULL while the arguments stream */
	const char *provider_id;  /* NULL: none given */
	const char *name;
	const char *target;       /* the command or path it names; NULL: none */
	const char *args;         /* the arguments as JSON text, or as sent */
	enum transcript_args args_state;
	uint64_t args_blob_size;  /* TR_ARGS_BLOB: the whole arguments' bytes */
	enum transcript_approval approval;
	const char *summary;      /* the approval request's summary; NULL: none */
	const char *request_id;   /* the approval request's id (for host_respond) */
	const char *note;         /* a denial's note; NULL: none */
	bool started;             /* tool/started: it may have taken effect */
	int64_t started_ms;       /* when it started (elapsed display) */
	int64_t ended_ms;         /* when its result came; 0: none yet */
	enum transcript_status status;
	bool synthetic;           /* the result was written by repair */
	bool truncated;           /* its output was cut to the tool's limit */
	bool has_exit_code, has_signal;
	int64_t exit_code, signal;
	bool output_in_blob;      /* the output went to a blob: the text is its head and tail */
	uint64_t output_blob_size;
};

/* What the status line says of the session. */
enum transcript_activity {
	TR_IDLE,
	TR_WAITING,      /* a turn runs, the request is sent, no token yet */
	TR_STREAMING,    /* tokens arrive */
	TR_RUNNING_TOOL, /* a tool runs (tool: which) */
	TR_APPROVAL,     /* a tool call waits for the user's answer (tool: which) */
};

struct transcript_state {
	enum transcript_activity activity;
	int64_t since_ms;       /* when the activity began (the caller's clock, or the log's) */
	const char *turn;       /* the running turn's id; NULL when idle */
	const char *tool;       /* TR_RUNNING_TOOL, TR_APPROVAL: the tool's name */
	size_t stream_chars;    /* characters streamed in the current model call */
	int64_t output_tokens;  /* the running (or last) turn's output tokens; -1: unknown */
	size_t queued;          /* prompts waiting in the queue */
	bool unsaved;           /* a full save failed and no recovery save succeeded yet */
	const char *unsaved_error; /* its message; NULL when saved */
	bool interrupted;       /* the last turn was closed by repair */
	const char *title, *provider, *model; /* NULL: not known */
};

/* ---- life ---- */

/* A new, empty model of session (copied; items of other sessions are
 * ignored). The caller owns it and frees it with transcript_free. */
struct transcript *transcript_new(const char *session);
void transcript_free(struct transcript *tr);

/* ---- feeding ---- */

/* Apply one sink item (borrowed; nothing kept) read at now_ms. Returns
 * true when what the screen shows changed. */
bool transcript_apply_sink(struct transcript *tr, const struct sink_item *it, int64_t now_ms);
/* Apply one session event: type, its envelope turn (NULL: none), its log
 * seq (0: not known), its time t_ms and data (borrowed). Events at or
 * below the last seq applied are ignored. Returns true when something
 * shown changed. */
bool transcript_apply_event(struct transcript *tr, enum vocab_type type, const char *turn,
			    uint64_t seq, int64_t t_ms, const cJSON *data);
/* transcript_apply_event as a host_history_fn (engine/host.h) for
 * host_open_history, ctx the transcript: it touches nothing but tr, so it
 * may run on the opening worker while tr is nobody else's. */
void transcript_history(void *tr, enum vocab_type type, const char *turn, uint64_t seq,
			int64_t t_ms, const cJSON *data);
/* A queued prompt left the queue by a write that the sink does not carry
 * (host_input_take while no turn runs). */
bool transcript_input_removed(struct transcript *tr, const char *input_id);

/* ---- turns and blocks ---- */

/* Turns held are [transcript_dropped, transcript_end): absolute indexes,
 * stable while turns are dropped from the front. */
size_t transcript_dropped(const struct transcript *tr);
size_t transcript_end(const struct transcript *tr);
/* Turn k (absolute), NULL when not held; owned by the model, valid until
 * the next drop or free. */
const struct transcript_turn *transcript_turn(const struct transcript *tr, size_t k);
const char *transcript_turn_id(const struct transcript_turn *t);
enum transcript_outcome transcript_turn_outcome(const struct transcript_turn *t);
/* The turn's error class and message (NULL: none), its start and end
 * times (0: not known), and output tokens (-1: not reported). Strings
 * owned by the model. */
const char *transcript_turn_error_class(const struct transcript_turn *t);
const char *transcript_turn_error(const struct transcript_turn *t);
int64_t transcript_turn_started_ms(const struct transcript_turn *t);
int64_t transcript_turn_ended_ms(const struct transcript_turn *t);
int64_t transcript_turn_output_tokens(const struct transcript_turn *t);
uint64_t transcript_turn_version(const struct transcript_turn *t);
size_t transcript_turn_blocks(const struct transcript_turn *t);
/* Block i of turn t, owned by the model (valid until the next apply that
 * changes t, a drop or free). */
const struct transcript_block *transcript_turn_block(const struct transcript_turn *t, size_t i);

enum transcript_kind transcript_block_kind(const struct transcript_block *b);
/* The block's text (NUL-terminated, *len its bytes, may be NULL): the
 * prompt, the answer, the reasoning, a tool's output, an outcome in words.
 * Owned by the model; exactly as received (not sanitised). */
const char *transcript_block_text(const struct transcript_block *b, size_t *len);
/* The clock of the block's last change. */
uint64_t transcript_block_version(const struct transcript_block *b);
/* Reasoning and tool output are collapsed unless expanded. */
bool transcript_block_expanded(const struct transcript_block *b);
void transcript_block_set_expanded(struct transcript *tr, const struct transcript_block *b,
				   bool expanded);
/* TR_PROMPT: the prompt went to a blob (the text is its head and tail
 * around a line naming it); *size its whole bytes. */
bool transcript_block_in_blob(const struct transcript_block *b, uint64_t *size);
/* TR_TOOL: its fields (owned by the model); NULL for other kinds. */
const struct transcript_tool *transcript_block_tool(const struct transcript_block *b);

/* ---- queued prompts ---- */

/* Prompts queued and not dequeued, oldest first. */
size_t transcript_queued(const struct transcript *tr);
/* Queued prompt k: its input id and text (owned by the model, valid until
 * the next apply); *in_blob (may be NULL): its text went to a blob. */
const char *transcript_queued_text(const struct transcript *tr, size_t k, const char **input_id,
				   bool *in_blob);

/* ---- status and changes ---- */

/* The status line's facts now; strings owned by the model, valid until
 * the next apply. */
void transcript_state(const struct transcript *tr, struct transcript_state *out);
/* The tool whose approval the user is being asked for: the last one of
 * the open turn still waiting, when the status says so, and only one with
 * a request_id, since no answer can reach a request without one (model
 * owned, valid until the next apply); NULL when none. The approval bar and
 * the approval keys both ask this, so the bar is shown exactly when the
 * keys can answer it. */
const struct transcript_tool *transcript_pending_approval(const struct transcript *tr);
/* The change clock: raised by every change. */
uint64_t transcript_version(const struct transcript *tr);
/* The first (absolute) turn changed after clock since, transcript_end
 * when none; a drop also counts (the screen compares transcript_dropped). */
size_t transcript_changed_from(const struct transcript *tr, uint64_t since);
/* The clock of the queue's last change. */
uint64_t transcript_queue_version(const struct transcript *tr);

/* ---- memory ---- */

/* Free turns before absolute index k; they are then counted as earlier. */
void transcript_drop_before(struct transcript *tr, size_t k);
/* Hold at most max_turns turns (0: all): older ones are dropped as new
 * ones start. */
void transcript_set_window(struct transcript *tr, size_t max_turns);
/* What was fed begins at seq first_seq (a log read from its end): earlier
 * events exist that the model has not seen. */
void transcript_begin_at(struct transcript *tr, uint64_t first_seq);
/* Earlier turns exist that the model does not hold (dropped, or before
 * the seq it began at). */
bool transcript_has_earlier(const struct transcript *tr);
/* The seq of the first event held (0: none), where paging back starts. */
uint64_t transcript_first_seq(const struct transcript *tr);
/* The last durable seq applied (0: none). */
uint64_t transcript_last_seq(const struct transcript *tr);
/* What from knows of the session as a whole (the queue, the title, the
 * provider and model, a failed save) moves to tr, replacing tr's own: a
 * model read from part of the log (paging earlier turns in) keeps what
 * the whole log said. from keeps its turns. */
void transcript_adopt_session(struct transcript *tr, struct transcript *from);

#endif
