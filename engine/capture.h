/* capture.h — a turn's history captured into durable batches while it
 * runs (DESIGN §3, step 3).
 *
 * The runner hands its capture every observation of a turn: structural
 * events (request/prepared, tool/call, tool/started, tool/result,
 * step/end, ...) and streamed text. The capture builds batches and appends
 * them to the session's journal (engine/journal.h), which posts them as
 * history items in order and publishes each once durable:
 * - consecutive text of one stream (answer or reasoning) becomes one
 *   assistant/text or assistant/reasoning event, split at batch_max bytes
 *   (on a character boundary) so no event nears the log's line limit;
 * - a batch goes flush_ms after its first event, or at once when it holds
 *   batch_max bytes of text; and before a structural event that would take
 *   its JSON past bytes_max (a step of many large tool calls is saved in
 *   several items, never refused as one batch over the log's limit);
 * - capture_commit posts what is pending and calls back once everything
 *   posted so far is acknowledged. The runner commits before each provider
 *   request (request/prepared the last event) and before each tool body.
 * A failed item poisons the capture: it posts nothing more, and every
 * commit, waiting or later, fails with class capture_failed, so the runner
 * makes no further request (effects already performed stay). It still
 * keeps what it observes: what is pending when the turn ends is taken for
 * the full save (capture_take), never posted as a history item; the
 * journal keeps the failed items' events and writes them first in that
 * full save, from the last durable seq, which recovers the session when
 * the disk lets it.
 *
 * Everything runs on the loop thread. States, with their transitions:
 *   OPEN   --item failed-->   FAILED
 *   OPEN   --capture_take-->  TAKEN
 *   FAILED --capture_take-->  TAKEN   (the caller sees capture_failed)
 *   any    --capture_close--> CLOSING --last item completed, timer closed--> freed
 */
#ifndef CAIRN_CAPTURE_H
#define CAIRN_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/err.h"
#include "engine/journal.h"
#include "persist/vocab.h"

struct capture;

enum capture_state { CAPTURE_OPEN, CAPTURE_FAILED, CAPTURE_TAKEN, CAPTURE_CLOSING };

enum capture_stream { CAPTURE_TEXT, CAPTURE_REASONING };

struct capture_opts {
	uint64_t flush_ms; /* a batch goes this long after its first event (100) */
	size_t batch_max;  /* ... or once it holds this many bytes of text (16 KiB) */
	size_t bytes_max;  /* ... or before an event would take it past this many
			    * bytes of JSON (0: CAPTURE_BYTES_MAX) */
};

/* Far below the log's limit of a batch (16 MiB), whatever the writer
 * adds around each event's data. */
#define CAPTURE_BYTES_MAX (4u * 1024u * 1024u)

/* Called once per commit on the loop: err NULL when every item posted
 * before the commit is durable; else CERR_IO with class capture_failed in
 * its message's subject (the item's own error said after it). */
typedef void (*capture_commit_cb)(struct capture *c, void *ctx, const struct cerr *err);
/* A capture appending to journal j (borrowed; it outlives the capture),
 * its batches published with identity op (copied); opts NULL: the
 * defaults. The caller ends it with capture_close. */
struct capture *capture_new(uv_loop_t *loop, struct journal *j, const struct sink_op *op,
			    const struct capture_opts *opts);

/* Text posted and not acknowledged yet at which a capture asks its
 * producer to stop (paused true), and down to which it lets it go on: what
 * a stream faster than the disk brings waits in the network, not in
 * memory, and what a cancel has to save is bounded. */
#define CAPTURE_INFLIGHT_HIGH (2u << 20)
#define CAPTURE_INFLIGHT_LOW (1u << 20)
typedef void (*capture_pressure_cb)(struct capture *c, void *ctx, bool paused);
/* Be told when the text in flight crosses those marks (NULL: no). */
void capture_on_pressure(struct capture *c, capture_pressure_cb cb, void *ctx);

/* Capture a structural event of turn (data copied; NULL: {}). Ignored
 * unless OPEN or FAILED. */
void capture_event(struct capture *c, enum vocab_type type, const char *turn,
		   const cJSON *data);
/* Capture text[0..len) of a stream (valid UTF-8; copied). Ignored unless
 * OPEN or FAILED. */
void capture_text(struct capture *c, enum capture_stream s, const char *turn, const char *text,
		  size_t len);
/* Post what is pending, then call cb once every item posted so far has
 * completed. A FAILED capture calls cb with the error from the loop (never
 * from inside this call). Once taken it posts nothing and only waits (what
 * a full save needs: every item completed). Returns -1 (cb never runs)
 * once closing. */
int capture_commit(struct capture *c, capture_commit_cb cb, void *ctx);

/* End capturing: the events still pending as a new JSON array the caller
 * owns (for the full save, journal_full_save). Returns the state before
 * the call: OPEN, or FAILED (then the turn's history has a gap: nothing
 * may be appended after it until a full save recovers the session). */
enum capture_state capture_take(struct capture *c, cJSON **events);

enum capture_state capture_state(const struct capture *c);
/* The failure that poisoned the capture (class CERR_OK when none). */
const struct cerr *capture_error(const struct capture *c);
/* Items posted and not completed yet. */
size_t capture_outstanding(const struct capture *c);

/* Close like uv_close: nothing more is captured or posted; the capture is
 * freed once its last item completed and its timer closed (commit
 * callbacks still waiting run first, with their outcome). */
void capture_close(struct capture *c);

#endif
