/* sink.h — the ordered event sink from the engine to its consumer (the
 * chat screen, headless mode): DESIGN §2, §3 steps 4–5, §6.
 *
 * Everything runs on the loop thread. The engine publishes items; the
 * consumer reads them, in publication order, through a callback while it
 * has reading started (like uv_read_start / uv_read_stop):
 *
 *   sink_new(loop, limits) -> sink_read_start(cb) ... sink_publish_*() ...
 *   sink_read_stop() while the consumer cannot take more (its output is
 *   backed up) -> sink_read_start() again -> sink_close(close_cb).
 *
 * Delivery is not application. The callback delivers an item; only the
 * consumer knows when it has applied it. A marker (a completion, with the
 * identity of the operation it completes) is delivered after every item
 * published before it, so a consumer that applies items as they come has
 * applied all of them when it handles the marker: handling the marker is
 * the proof, and what the consumer does then (check the identity, snapshot,
 * enqueue the full save) is the settlement. A marker whose identity is not
 * the consumer's current operation (another session, an older generation)
 * settles nothing: sink_op_same says which.
 *
 * Memory stays bounded without dropping anything that matters: text deltas
 * still waiting in the queue coalesce with the next delta of the same
 * stream; structural items (events, notices, markers) are never dropped or
 * merged. When the queued bytes reach limits.high the producer's pressure
 * callback is told to stop producing (the engine pauses its HTTP transfer),
 * and when the consumer has read them down to limits.low it is told to go
 * on. A consumer that never reads (a stdout pipe nobody drains) thus holds
 * the engine still rather than growing a buffer or blocking the loop. */
#ifndef CAIRN_SINK_H
#define CAIRN_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "persist/pathkey.h"
#include "persist/vocab.h"

struct sink;

/* Which operation an item belongs to: a session, the generation of its
 * runtime (raised whenever the session is reopened, rewound or forked),
 * and the operation within it (a turn, a save). */
struct sink_op {
	char session[SESSION_ID_MAX + 1];
	uint64_t generation;
	uint64_t operation;
};

enum sink_kind {
	SINK_EVENT,  /* a session event (log vocabulary), durable or about to be */
	SINK_TEXT,   /* a streamed delta of an answer or of its reasoning */
	SINK_NOTICE, /* host state for the consumer (unsaved, queued input, ...) */
	SINK_MARKER, /* the completion of an operation: every item before it is delivered */
};

enum sink_stream { SINK_STREAM_TEXT, SINK_STREAM_REASONING };

/* The notices a consumer is told, X(enumerator, name): the host's state
 * of a session ("unsaved" {"error"} after a failed save, "saved" once a
 * recovery save succeeded, "held" {"error"} when its queue stopped), and
 * a turn's "interaction" (an approval to ask for) and "tool_call"
 * {provider_id, name} (a tool call's arguments are streaming). Consumers
 * switch on the enum without a default: -Wswitch names a new notice a
 * consumer forgot. The name is for tests and traces only. */
#define SINK_NOTICES(X)                        \
	X(SINK_NOTICE_UNSAVED, "unsaved")         \
	X(SINK_NOTICE_SAVED, "saved")             \
	X(SINK_NOTICE_HELD, "held")               \
	X(SINK_NOTICE_INTERACTION, "interaction") \
	X(SINK_NOTICE_TOOL_CALL, "tool_call")

/* The completions a marker says: a turn's "turn_done" {turn, outcome,
 * error?, usage?, text?, input_id?} once it ended, and its "settled"
 * {ok, error?} once its full save's outcome is known. */
#define SINK_MARKERS(X)                        \
	X(SINK_MARKER_TURN_DONE, "turn_done")     \
	X(SINK_MARKER_SETTLED, "settled")

enum sink_notice {
#define SINK_ENUM(e, name) e,
	SINK_NOTICES(SINK_ENUM)
	SINK_NOTICE_UNKNOWN, /* not a notice of this build (sink_notice_of only) */
};

enum sink_marker {
	SINK_MARKERS(SINK_ENUM)
#undef SINK_ENUM
	SINK_MARKER_UNKNOWN, /* not a marker of this build (sink_marker_of only) */
};

/* The name of a notice or marker (static storage); NULL when unknown. */
const char *sink_notice_name(enum sink_notice n);
const char *sink_marker_name(enum sink_marker m);
/* The enumerator named name; _UNKNOWN when no entry has that name. */
enum sink_notice sink_notice_of(const char *name);
enum sink_marker sink_marker_of(const char *name);

/* An item as the consumer reads it: valid during the read callback only,
 * and read-only (copy what must outlive the call). */
struct sink_item {
	enum sink_kind kind;
	struct sink_op op;
	const char *turn;           /* NULL when outside a turn */
	/* SINK_EVENT */
	enum vocab_type vtype;
	uint64_t seq;               /* its log seq; 0 when not assigned yet */
	bool durable;               /* acknowledged by the FIFO */
	/* SINK_EVENT: its data; SINK_NOTICE, SINK_MARKER: the payload (NULL: none) */
	const cJSON *data;
	/* SINK_NOTICE: which notice; SINK_MARKER: which completion */
	enum sink_notice notice;
	enum sink_marker marker;
	/* SINK_TEXT */
	enum sink_stream stream;
	const char *text;           /* valid UTF-8, NUL-terminated */
	size_t len;
	size_t coalesced;           /* deltas merged into this one (1: none) */
};

struct sink_limits {
	size_t high;       /* queued bytes that pause the producer */
	size_t low;        /* queued bytes at or under which it goes on */
	size_t text_max;   /* a coalesced delta never grows past this */
	unsigned per_tick; /* items delivered per loop iteration at most */
};

/* 256 KiB / 64 KiB / 16 KiB / 256: a few screens of text in flight. */
extern const struct sink_limits SINK_LIMITS_DEFAULT;

typedef void (*sink_read_cb)(struct sink *s, const struct sink_item *it, void *ctx);
/* paused: stop producing (true) or go on (false); called on each change. */
typedef void (*sink_pressure_cb)(struct sink *s, bool paused, void *ctx);
typedef void (*sink_close_cb)(struct sink *s, void *ctx);

/* A new sink on loop (limits NULL: the defaults). The caller owns it and
 * ends it with sink_close. */
struct sink *sink_new(uv_loop_t *loop, const struct sink_limits *limits);
/* Deliver queued and future items to cb, in order, from the loop (never
 * from inside a sink_publish_* call), at most per_tick of them per loop
 * iteration so a backlog never starves the loop. cb may call sink_read_stop
 * and any sink_publish_*. */
void sink_read_start(struct sink *s, sink_read_cb cb, void *ctx);
/* Stop delivering; items stay queued in order. */
void sink_read_stop(struct sink *s);
/* The producer's pressure callback (NULL: none). */
void sink_set_pressure(struct sink *s, sink_pressure_cb cb, void *ctx);
/* Whether the producer is told to stop producing now. */
bool sink_paused(const struct sink *s);

/* Publish a session event; data is copied (NULL: none). */
void sink_publish_event(struct sink *s, const struct sink_op *op, enum vocab_type vtype,
			const char *turn, uint64_t seq, bool durable, const cJSON *data);
/* Publish a delta of text[0..len) (valid UTF-8 without NUL; copied). It
 * joins the last queued item when that is an undelivered delta of the same
 * operation, turn and stream with room under text_max. */
void sink_publish_text(struct sink *s, const struct sink_op *op, const char *turn,
		       enum sink_stream stream, const char *text, size_t len);
/* Publish notice n with an optional payload (copied). */
void sink_publish_notice(struct sink *s, const struct sink_op *op, enum sink_notice n,
			 const cJSON *data);
/* Publish the completion marker m of op (the payload, copied, may carry
 * its outcome). Never coalesced or dropped. */
void sink_publish_marker(struct sink *s, const struct sink_op *op, enum sink_marker m,
			 const cJSON *data);

/* Items queued and not delivered, and their accounted bytes. */
size_t sink_queued(const struct sink *s);
size_t sink_queued_bytes(const struct sink *s);
/* Does a marker's identity name the consumer's current operation? */
bool sink_op_same(const struct sink_op *a, const struct sink_op *b);
/* Fill op (session copied, truncated to SESSION_ID_MAX). */
void sink_op_set(struct sink_op *op, const char *session, uint64_t generation,
		 uint64_t operation);

/* Close like uv_close: delivery stops, queued items are freed undelivered,
 * publishing is no longer allowed; cb (may be NULL) runs on the loop once
 * the sink's handle is closed, and s is freed after it returns. */
void sink_close(struct sink *s, sink_close_cb cb, void *ctx);

#endif
