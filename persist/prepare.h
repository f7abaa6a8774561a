/* prepare.h — a loaded session plus what the turn runner needs from it
 * (DESIGN §4.4): its turns with their parents, the active path, the open
 * turn, tool calls without a result, queued inputs not yet dequeued, the
 * settings in effect, the durable next seq and the content version.
 *
 * prepare reads only (load.h): it never repairs, never takes the writer
 * lock and may run on any thread, so the FIFO's open item prepares the
 * load its repair worked from (prepare_load; prepare_fd on the descriptor
 * it holds when the repair changed the file) and a viewer calls it on a
 * worker (load_async.h). One pass over the load's index; only the events
 * it needs (turn, tool, input and settings events) are parsed, one at a
 * time.
 *
 * Rules: a turn starts at turn/start and ends at turn/end of the same turn
 * id; a turn id started again is a new turn (the later one is found by
 * id). Parents and the active leaf are the turn tree's (tree.h: an absent
 * parent_turn is the previous turn/start, null a root, a name its latest
 * turn started before; the active leaf is the last turn/start's, or a
 * later branch/rewind's to_turn); the active path runs from the root to
 * that leaf. The open turn is the latest started turn without an end. A tool call is
 * unmatched while no tool/result names its call_id. input/queued adds a
 * pending input; input/dequeued removes the one with its input_id (without
 * one: the oldest). Settings start from the header's provider and model and
 * each session/settings event replaces the fields it names (null clears);
 * session/meta does the same for the title and the pin. A system_prompt
 * that went to a blob is its inline head and tail, with the blob naming
 * the whole (the event's "blob" belongs to its system_prompt). */
#ifndef CAIRN_PREPARE_H
#define CAIRN_PREPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "persist/blob.h"
#include "persist/load.h"
#include "persist/load_async.h"
#include "persist/scan.h"

struct prepared;

struct prepared_turn {
	const char *id;      /* owned by the prepared session */
	uint64_t seq;        /* its turn/start's seq */
	const char *parent;  /* its parent's id, resolved (tree.h); NULL: a root */
	size_t parent_index; /* its parent (index for prepared_turn); PREPARED_NONE: a root */
	size_t start;        /* load index of its turn/start */
	size_t end;          /* load index of its turn/end; PREPARED_OPEN when none */
	const char *outcome; /* turn/end's outcome; NULL while open */
};

#define PREPARED_OPEN SIZE_MAX
#define PREPARED_NONE SIZE_MAX

struct prepared_call {
	const char *call_id; /* owned by the prepared session */
	const char *name;    /* the tool's name */
	const char *turn;    /* the turn it belongs to */
	size_t event;        /* load index of the tool/call */
	uint64_t seq;
	bool started;        /* a tool/started names it: it may have run */
};

struct prepared_input {
	const char *input_id; /* owned by the prepared session; NULL when none */
	const char *text;     /* NULL when none */
	size_t event;         /* load index of the input/queued */
	uint64_t seq;
};

struct prepared_settings {
	const char *provider, *model, *approval; /* owned; NULL when unset */
	const char *system_prompt;               /* the prompt turns were sent; NULL when unset */
	bool system_prompt_in_blob;              /* it is a head and tail: the whole is ... */
	struct blob_ref system_prompt_blob;      /* ... this blob */
	const char *title;                       /* session/meta; NULL when unset */
	bool pinned;
};

/* Prepare the log open at fd (load_fd with o, then prepare_load). 0 with
 * *out for every log however damaged (prepared_scan says how; a corrupt
 * or unsupported log yields the valid prefix's structures), -1 with
 * CERR_IO when it cannot be read. Caller frees with prepared_free. */
int prepare_fd(int fd, const struct scan_opts *o, struct prepared **out, struct cerr *err);
/* prepare_fd on a worker of loop for session id of root, like load_async
 * (load_async.h): cb runs on the loop exactly once. */
int prepare_async(uv_loop_t *loop, const char *root, const char *id, const struct scan_opts *o,
		  prepare_async_fn cb, void *ctx, struct load_req **req, struct cerr *err);
/* Prepare a full load (not a tail), taking it over. Caller frees the
 * result with prepared_free. */
struct prepared *prepare_load(struct load *l);
void prepared_free(struct prepared *p);

/* The load it was built from (its events, lines and trees on demand);
 * owned by p. */
const struct load *prepared_load(const struct prepared *p);
/* Status, error, revision and header fields; owned by p. */
const struct scan *prepared_scan(const struct prepared *p);
/* Turns in log order; turn k < prepared_n_turns, owned by p. */
size_t prepared_n_turns(const struct prepared *p);
const struct prepared_turn *prepared_turn(const struct prepared *p, size_t k);
/* The latest turn with this id, or NULL; owned by p. */
const struct prepared_turn *prepared_find_turn(const struct prepared *p, const char *id);
/* The active path, root first: its length and its k-th turn (index for
 * prepared_turn); empty before the first turn. */
size_t prepared_path_len(const struct prepared *p);
size_t prepared_path(const struct prepared *p, size_t k);
/* The active leaf (the path's last turn), or NULL; owned by p. */
const struct prepared_turn *prepared_active_leaf(const struct prepared *p);
/* N such that t<N+1> names no turn of the log, whatever its branch: the
 * number of turns, or the highest k of an id t<k> when higher. */
size_t prepared_turn_number(const struct prepared *p);
/* The open turn (the latest started without an end), or NULL; owned by p. */
const struct prepared_turn *prepared_open_turn(const struct prepared *p);
/* Tool calls without a tool/result, in log order; owned by p. */
size_t prepared_n_unmatched(const struct prepared *p);
const struct prepared_call *prepared_unmatched(const struct prepared *p, size_t k);
/* Inputs queued and not dequeued, oldest first; owned by p. */
size_t prepared_n_queued(const struct prepared *p);
const struct prepared_input *prepared_queued(const struct prepared *p, size_t k);
/* The settings in effect after the last event; owned by p. */
const struct prepared_settings *prepared_settings(const struct prepared *p);
/* The data of the session/settings event that makes settings s (NULL: a
 * new session, nothing in effect) say provider, model and system_prompt
 * (each NULL: not recorded), naming only the fields that differ; NULL
 * when none does. A prompt kept in a blob is compared by its digest.
 * Caller frees with cJSON_Delete. */
cJSON *prepared_settings_change(const struct prepared_settings *s, const char *provider,
				const char *model, const char *system_prompt);
/* The seq the next appended event gets (the durable next seq read). */
uint64_t prepared_next_seq(const struct prepared *p);
/* The catalog's content version for this log, when the caller knows it
 * (the FIFO does after its open): false while unknown. */
bool prepared_content_version(const struct prepared *p, int64_t *version);
void prepared_set_content_version(struct prepared *p, int64_t version);

#endif
