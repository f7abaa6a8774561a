/* host.h — the application boundary: what headless mode and the chat
 * screen ask of a session, and where the promises of DESIGN §3, §5 and §6
 * are kept when things go wrong.
 *
 * The host owns the runtime of every session it has open (created here or
 * opened through the FIFO's open item: locked, repaired, prepared), starts
 * their turns on the runner, and publishes into the sink what its
 * consumer must know besides the turns' own items: the notices
 * SINK_NOTICE_UNSAVED, _SAVED and _HELD (sink.h lists them all). A turn's
 * runner adds _INTERACTION (an approval to ask for) and _TOOL_CALL
 * {provider_id, name} (the model began a tool call: its arguments are
 * streaming).
 *
 * Every command completes through its callback on the loop, never from
 * inside the call (a command refused at once returns -1 with err and its
 * callback never runs). Everything runs on the loop thread.
 *
 * A session has two state machines. Its runtime (host.c has the table):
 *   OPENING   --open item done, context built--> IDLE  (a new session: at once)
 *   OPENING   --failed, or a release asked for--> RELEASING (never held: forgotten)
 *   IDLE      --send: turn admitted------------> TURN
 *   TURN      --settled (saved or not)---------> IDLE  (an armed input may follow)
 *   IDLE      --release------------------------> RELEASING --released--> forgotten
 * and its durability, its journal's (engine/journal.h has the table):
 *   SAVED      --a turn's full save failed-------------> UNSAVED
 *   UNSAVED    --recovery save posted (save, or ahead
 *                of any next write)-------------------> RECOVERING
 *   RECOVERING --recovery save ok---------------------> SAVED
 *   RECOVERING --recovery save failed-----------------> UNSAVED
 * UNSAVED keeps the last durable head and the events the failed save
 * still has to write; the session is released by its turn, so explicit
 * input works; queued input is not dispatched; the consumer is told with a
 * notice "unsaved" {"error"}, and "saved" once a recovery save succeeded.
 *
 * Send, in a session's states:
 * - a client_submit_id already known (a turn/start of the log names it, or
 *   a queued input carries it as input_id): nothing is dispatched, the
 *   result names the existing turn or input (replayed) — also across a
 *   restart, since the lookup reads the opened log;
 * - IDLE: the turn starts (its BEFORE save records client_submit_id);
 * - TURN: the prompt becomes queued input, durable (input/queued) before
 *   the callback; it is dispatched on its own once the running turn
 *   completed and its full save succeeded, with its input/dequeued in the
 *   same BEFORE save as the turn/start it becomes (client_submit_id = its
 *   input_id), one at a time. After a canceled or failed turn, or a failed
 *   save, queued input waits for host_input_send (held); input found in
 *   the log when the session was opened is held too;
 * - UNSAVED: a recovery save is posted first, then the turn starts.
 * A turn's BEFORE save records first, as session/settings, the provider,
 * model and system prompt of its call (host_set_call) where they differ
 * from the session's settings in effect; they are in effect once the turn
 * started (a new session's first turn records all it has).
 *
 * Outcomes reach the consumer as sink markers (runner.h: "turn_done", then
 * "settled"); the consumer reports each marker it handled with
 * host_applied, which settles the turn (a stale marker settles nothing). */
#ifndef CAIRN_HOST_H
#define CAIRN_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "base/err.h"
#include "engine/approval.h"
#include "engine/call.h"
#include "engine/tool.h"
#include "persist/fifo.h"
#include "persist/pathkey.h"
#include "sink/sink.h"

struct host;

struct host_deps {
	uv_loop_t *loop;
	const char *root;  /* the data root (copied): sessions' blobs are read there */
	struct fifo *fifo; /* borrowed; outlives the host */
	struct http *http; /* borrowed; NULL: only the offline provider runs */
	struct sink *sink; /* borrowed; the host is its producer */
	/* The tools (0 / NULL: their defaults, tool.h). */
	size_t tool_result_max;     /* bytes of one result the model reads */
	size_t tool_output_max;     /* bytes of a tool's output kept for its blob */
	char *const *tool_env_strip; /* patterns of variables tools never see,
				      * NULL-terminated; borrowed, outlives the host */
};

/* What a session's turns are sent with: the provider's name and the call
 * (model, endpoint, key, system prompt, tools, pace, timeouts, retry), as
 * the application resolved them from its configuration. Strings copied. */
struct host_call {
	const char *provider;
	struct call_spec call; /* msgs, n and prompt are the runner's; params.tools
				* (the schemas, tool_schemas) offers the tools */
	unsigned max_steps;    /* model calls per turn (0: 50) */
};

enum host_state {
	HOST_OPENING,
	HOST_IDLE,
	HOST_TURN, /* a turn runs or settles */
	HOST_RELEASING,
	HOST_STATE_COUNT,
};
/* True when host.c's table has an arrow from `from` to `to`. */
bool host_state_allows(enum host_state from, enum host_state to);
/* The state's name in lowercase ("releasing"); a static string. */
const char *host_state_name(enum host_state st);

enum host_save {
	HOST_SAVED,
	HOST_UNSAVED,   /* a full save failed: the last durable head is kept */
	HOST_RECOVERING /* a recovery save is in flight */
};

/* A queued input, as host_queued lists it. */
struct host_input {
	const char *input_id, *text; /* owned by the host; valid until its next command */
	bool armed;                  /* dispatched on its own after a saved success */
};

/* What a command completes with; valid during the callback only. */
struct host_result {
	const char *session;
	const char *turn;     /* send: the turn started, or the existing one (replayed) */
	const char *input_id; /* send: the queued input; input_*: the input */
	const char *text;     /* input_take: its text */
	bool queued;          /* send: the prompt became queued input */
	bool replayed;        /* send: the client_submit_id was known: nothing dispatched */
	struct sink_op op;    /* send: the started turn's identity */
	uint64_t next_seq, version; /* the session's durable head after the command */
};

typedef void (*host_cb)(void *ctx, const struct host_result *r, const struct cerr *err);

/* A host on deps; free with host_free once host_close reported HOST_CLOSED. */
struct host *host_new(const struct host_deps *deps);
void host_free(struct host *h);

/* A new session, in memory until its first turn's BEFORE save creates its
 * log (header with cwd, provider and model). *id_out gets its id. */
int host_create(struct host *h, const char *cwd, const struct host_call *call,
		char id_out[SESSION_ID_MAX + 1], host_cb cb, void *ctx, struct cerr *err);
/* Open session id for writing (fifo_open: locked, repaired whatever the
 * catalog says, prepared). Its settings in effect are readable with
 * host_settings once cb ran; call host_set_call before its first send. */
int host_open(struct host *h, const char *id, host_cb cb, void *ctx, struct cerr *err);
/* One event of an opened session's log as it was loaded (data borrowed for
 * the call): what a screen shows of a resumed session without reading the
 * log itself. */
typedef void (*host_history_fn)(void *ctx, enum vocab_type type, const char *turn, uint64_t seq,
				int64_t t_ms, const cJSON *data);
/* host_open, and history is called with hctx for every event of the log
 * as repaired, in order, before cb runs — on the worker thread that builds
 * the context: hctx must be the caller's alone until cb runs. */
int host_open_history(struct host *h, const char *id, host_history_fn history, void *hctx,
		      host_cb cb, void *ctx, struct cerr *err);
/* Reading a session's log for a screen (host_page.c): its end at open,
 * a page of earlier turns, or what a session that cannot be opened holds
 * (another process has it, or it is damaged). Read-only, without the
 * writer lock, whether or not this host has the session open. The log is
 * read and handed to map on a libuv worker, so neither the read nor what
 * the caller makes of it costs the loop; cb gets what map made, on the
 * loop. */
enum host_page_kind {
	HOST_PAGE_END,     /* its last min_events events, only when undamaged:
			    * any damage is CERR_CORRUPT (nothing worth showing) */
	HOST_PAGE_EARLIER, /* its last min_events events (more than held: the
			    * page back); damage in them is CERR_CORRUPT (or
			    * CERR_UNSUPPORTED), a torn end is read as far as valid */
	HOST_PAGE_VALID,   /* as far as valid, however damaged: its last
			    * min_events events, or (0) all of it */
};
struct host_page;     /* the events read, seen by map on the worker */
struct host_page_req; /* a read in flight; valid until its callback returns */
/* One event of a page; data points into the tree host_page_event returns. */
struct host_page_event {
	enum vocab_type type; /* VT_UNKNOWN: an ignorable type this build does not know */
	const char *turn;     /* NULL: none; owned by the page */
	uint64_t seq;
	int64_t t_ms;
	const cJSON *data;    /* NULL: none */
};
/* Events in p, and whether they are the log's end only (earlier events
 * exist before the first, or may). */
size_t host_page_count(const struct host_page *p);
bool host_page_is_tail(const struct host_page *p);
/* Event i < host_page_count into *ev; returns its line as a tree (the
 * caller's: cJSON_Delete) that ev->data points into, NULL when the line
 * cannot be parsed (ev->data NULL then). */
cJSON *host_page_event(const struct host_page *p, size_t i, struct host_page_event *ev);
/* On the worker: what the caller makes of page p of session id (the
 * caller's to own, or NULL); ctx is host_page_read's. */
typedef void *(*host_page_map_fn)(void *ctx, const char *id, const struct host_page *p);
/* On the loop, exactly once: what map made, or NULL with err (CERR_MISSING,
 * CERR_IO, CERR_USAGE for an ambiguous prefix, CERR_CORRUPT or
 * CERR_UNSUPPORTED for damage as kind says) or with canceled. */
typedef void (*host_page_cb)(void *ctx, void *made, const struct cerr *err, bool canceled);
/* Read session id (an id or unique prefix; copied) as kind says. *req
 * (may be NULL) gets the request, for host_page_cancel. 0, or -1 with err
 * when the read cannot be queued or the host closes (CERR_USAGE); then cb
 * never runs. */
int host_page_read(struct host *h, const char *id, enum host_page_kind kind, size_t min_events,
		   host_page_map_fn map, host_page_cb cb, void *ctx, struct host_page_req **req,
		   struct cerr *err);
/* Cancel r if no worker has started it: true, and its callback runs with
 * canceled set. False when it already runs or ran. */
bool host_page_cancel(struct host_page_req *r);
/* The HTTP engine for turns from now on (borrowed; see runner_set_http). */
void host_set_http(struct host *h, struct http *http);
/* Set what id's next turns are sent with (copied). */
int host_set_call(struct host *h, const char *id, const struct host_call *call,
		  struct cerr *err);

struct host_send {
	const char *text;             /* the prompt (valid UTF-8) */
	const char *client_submit_id; /* NULL: one is made up */
};
/* Send a prompt (above); it continues from the active path's last turn.
 * cb: the turn started (r->turn, r->op), queued
 * (r->queued, r->input_id, durable), or replayed. */
int host_send(struct host *h, const char *id, const struct host_send *s, host_cb cb, void *ctx,
	      struct cerr *err);
/* Cancel id's turn: before its BEFORE save is acknowledged nothing is
 * dispatched and its marker gives the prompt back; in flight the transfer
 * is aborted and the partial answer kept. A send waiting for a recovery
 * save is dropped (its callback gets CERR_CONFLICT "canceled"). Queued
 * input stays queued, held. No turn: no-op. */
void host_cancel(struct host *h, const char *id);
/* The consumer handled marker m (every item before it applied): a
 * "turn_done" is settled (runner_settle); others need nothing. A stale
 * turn_done: CERR_CONFLICT, nothing is saved. */
int host_applied(struct host *h, const struct sink_item *m, struct cerr *err);
/* An explicit recovery save of an UNSAVED session; in any other state
 * it completes at once with the durable head. */
int host_save(struct host *h, const char *id, host_cb cb, void *ctx, struct cerr *err);

/* Queued input of id, oldest first: *out (owned by the host) gets n items. */
size_t host_queued(struct host *h, const char *id, const struct host_input **out);
/* Take input_id out of the queue (to edit it, or to drop it: the same
 * event): its input/dequeued is durable, then cb gets the text it had
 * (r->text, valid during cb). Not queued: CERR_MISSING. */
int host_input_take(struct host *h, const char *id, const char *input_id, host_cb cb,
		    void *ctx, struct cerr *err);
/* Send a held queued input: at once when IDLE (it becomes the turn), else
 * armed to go after the running turn. */
int host_input_send(struct host *h, const char *id, const char *input_id, host_cb cb,
		    void *ctx, struct cerr *err);

struct host_settings {
	const char *provider, *model, *approval, *system_prompt; /* NULL: unchanged */
};
/* The settings in effect (strings owned by the host): the last recorded
 * of each; system_prompt whole, read from its blob when it went to one. */
int host_settings(struct host *h, const char *id, struct host_settings *out, struct cerr *err);
/* Answer an interaction request of id's running turn (a notice
 * "interaction" {request_id, call_id, tool, summary, allowed_by} asked for
 * it; allowed_by: "read-only" when that policy would have allowed the call,
 * else "all"):
 * decision allow_once | allow_session | deny | canceled, note (may be
 * NULL) is shown to the model with a denial. Not pending: CERR_MISSING. */
int host_respond(struct host *h, const char *id, const char *request_id, const char *decision,
		 const char *note, host_cb cb, void *ctx, struct cerr *err);
/* The approval policy of id's turns from now on, for this process only
 * (headless --approve); host_update_settings records one in the session. */
int host_set_approval(struct host *h, const char *id, enum approval_policy p, struct cerr *err);
/* Record changed settings (session/settings) — only while no turn runs
 * (else CERR_BUSY: it cannot wait behind a turn). */
int host_update_settings(struct host *h, const char *id, const struct host_settings *s,
			 host_cb cb, void *ctx, struct cerr *err);
/* Replace the composer's draft of project cwd (NULL: none) with text
 * (empty: remove it) through the FIFO (persist/draft.h), so it survives a
 * restart. cb (may be NULL) runs once it is durable or failed. Allowed
 * while the host closes, so a quitting screen can save its draft. */
int host_save_draft(struct host *h, const char *cwd, const char *text, host_cb cb, void *ctx,
		    struct cerr *err);
/* Title (NULL: none) and pin: session/meta. */
int host_rename(struct host *h, const char *id, const char *title, host_cb cb, void *ctx,
		struct cerr *err);
int host_pin(struct host *h, const char *id, bool pinned, host_cb cb, void *ctx,
	     struct cerr *err);
/* Release id (CERR_BUSY while a turn runs): the FIFO lets its lock go and
 * the host forgets it. Released while it is still opening, the open is
 * canceled (its callback gets CERR_CONFLICT), then released. An unsaved session is released as it is: its log
 * holds the last durable head, and the next open repairs it. */
int host_release(struct host *h, const char *id, host_cb cb, void *ctx, struct cerr *err);
/* Delete id (moved to the trash, restorable): released first. */
int host_delete(struct host *h, const char *id, host_cb cb, void *ctx, struct cerr *err);

/* What a session is doing now (HOST_RELEASING when unknown), and whether
 * its history is saved. */
enum host_state host_state(const struct host *h, const char *id);
enum host_save host_save_state(const struct host *h, const char *id);

/* Start-up recovery: ask the catalog (never the logs) for sessions a
 * dead process left running, and open each whose lock is free (the open
 * repairs a torn tail and closes the interrupted turn), then release it.
 * Queued input they hold stays queued. cb gets how many were recovered and
 * how many could not be (locked meanwhile, corrupt); err only when the
 * catalog could not be asked. A root without a catalog has none. */
typedef void (*host_recover_cb)(void *ctx, size_t recovered, size_t failed,
				const struct cerr *err);
int host_recover_interrupted(struct host *h, host_recover_cb cb, void *ctx, struct cerr *err);

enum host_close_status {
	HOST_CLOSED,    /* every turn ended and settled, every session released */
	HOST_TIMED_OUT, /* the deadline passed first: still the caller's, nothing closed */
};
typedef void (*host_close_cb)(struct host *h, void *ctx, enum host_close_status st);
/* Close: new commands are refused at once (CERR_USAGE "closing"), running
 * turns are canceled, then cb runs once every turn settled and every
 * session is released — or, past deadline_ms (clock_mono_ns()/1e6), with
 * HOST_TIMED_OUT: nothing it depends on was closed, and host_close may be
 * called again. The consumer must keep reading the sink meanwhile (the
 * markers settle the turns). */
int host_close(struct host *h, uint64_t deadline_ms, host_close_cb cb, void *ctx);

#endif
