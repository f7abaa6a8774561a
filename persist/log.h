/* log.h — a session log open for writing (DESIGN §4.3).
 *
 * Calling sequence:
 *   log_create (new session; nothing on disk until the first append) or
 *   log_open / log_open_path (existing log; takes the writer lock, reads it),
 *   log_append ... (each call one durable batch = one zstd frame),
 *   log_close.
 * While a struct log is open its process holds session.lock. Appends are
 * all-or-nothing and compare-and-swap on the expected next seq; they cost
 * O(batch) through an append cursor and re-read the file in full when it no
 * longer matches the cursor. Errors follow base/err.h. */
#ifndef CAIRN_LOG_H
#define CAIRN_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/err.h"
#include "persist/revision.h"
#include "persist/scan.h"
#include "persist/store.h"

struct load;

struct log;

/* One event to append; the store assigns seq. */
struct log_event {
	const char *type;   /* vocabulary name, or any name with ignorable */
	const char *turn;   /* envelope turn id, or NULL */
	bool ignorable;
	const cJSON *data;  /* borrowed; NULL means {} */
	int64_t t;          /* unix ms; 0 means now */
};

/* What a handle acknowledged as durable: the revision it synced, the
 * file's ctime then (0: unknown) and the digest of frame 0 (the key the
 * catalog's watermark is stored under). */
struct log_mark {
	struct revision rev;
	int64_t ctime_ns;
	uint8_t head[SHA256_LEN];
};

/* Start a new session under st (id NULL: a new ULID). extra (borrowed, may
 * be NULL) adds header fields. Nothing is written until the first append,
 * which publishes header + batch atomically. Caller closes *out. */
int log_create(struct store *st, const char *id, const char *cwd, const cJSON *extra,
	       struct log **out, struct cerr *err);
/* Open session `id` (exact id) under st for writing: lock, then read. A
 * corrupt or unsupported log fails with that class; a torn one opens (see
 * log_scan). Caller closes *out. */
int log_open(struct store *st, const char *id, struct log **out, struct cerr *err);
/* The log file's descriptor (borrowed, valid until log_close): for a
 * reader of the whole file under the handle's lock; never written. */
int log_fd(const struct log *lg);
/* Same for a log file anywhere; locks session.lock in its directory. */
int log_open_path(const char *path, struct log **out, struct cerr *err);
/* Both with the durable watermark the catalog recorded (NULL: none): every
 * read of this handle then classifies damage below it as corruption and
 * garbage above it as a torn tail. */
int log_open_opts(struct store *st, const char *id, const struct scan_opts *wm, struct log **out,
		  struct cerr *err);
int log_open_path_opts(const char *path, const struct scan_opts *wm, struct log **out,
		       struct cerr *err);
/* log_open_opts whose reads are compact (load.h: frames and a 32-byte
 * index entry per event, no JSON tree kept): log_scan holds the status,
 * revision and header fields only (no events, no summary), and log_load
 * the read itself until log_take_load takes it. Checks, classification
 * and failing closed are those of log_open_opts. The FIFO's writer opens
 * its handles so: the open of a session repairs from this read and hands
 * it on (fifo_hold.c), the one read of an open. */
int log_open_load(struct store *st, const char *id, const struct scan_opts *wm, struct log **out,
		  struct cerr *err);
/* log_open_opts for an append that need not read the whole log: when the
 * file is exactly what the watermark says (its length, its frame 0) and
 * its last frame is intact (checksum, lines, seqs ending at the
 * watermark's), the handle starts at its end having read only frame 0 and
 * that frame (log_scan stays NULL until a re-read); otherwise it reads it
 * in full as log_open_opts does, failing closed on damage. */
int log_open_end(struct store *st, const char *id, const struct scan_opts *wm, struct log **out,
		 struct cerr *err);
/* After a read that found every frame complete and valid (status ok) and
 * with nothing written since: fdatasync the file, so that log_durable
 * covers all of it (a complete, valid frame that has been synced is
 * committed whether or not its append was acknowledged). The watermark
 * raised from it heals one that a failed catalog update left behind.
 * Does nothing for any other state. The caller holds the writer lock (any
 * open log does). */
int log_settle(struct log *lg, struct cerr *err);

/* Append evs[0..n) as one frame if the log's next seq is expected_next_seq
 * (else CERR_CONFLICT). A torn tail left by a crashed writer is cut first.
 * On success *next_seq (may be NULL) is the new next seq. On CERR_IO with
 * err->outcome_unknown the batch may or may not be durable: re-read. An
 * invalid event is CERR_USAGE and nothing is written. n == 0: no-op. */
int log_append(struct log *lg, uint64_t expected_next_seq, const struct log_event *evs, size_t n,
	       uint64_t *next_seq, struct cerr *err);
/* The same in two steps, so a caller can do other work while the disk
 * syncs: log_write writes the frame without syncing it (a first
 * publication is durable at once), log_sync makes every frame written
 * since the last sync durable. Several log_write calls may queue up before
 * one log_sync; if the sync fails they are all rolled back together (the
 * outcome is unknown, as for log_append). Between the two, the handle may
 * be given to another thread for log_sync, but nothing else may use it
 * (or see log_sync_begin below). */
int log_write(struct log *lg, uint64_t expected_next_seq, const struct log_event *evs, size_t n,
	      uint64_t *next_seq, struct cerr *err);
int log_sync(struct log *lg, struct cerr *err);
/* First publication of frames built elsewhere (an import): frames[0..
 * head_len) is the header frame, the rest hold seqs 1..next_seq-1, every
 * one already checked by the reader's rules. Written to a staging file,
 * synced and renamed into place without overwriting, as log_write's first
 * publication; lg comes from log_create and has published nothing. */
int log_publish_frames(struct log *lg, const struct buf *frames, size_t head_len,
		       uint64_t next_seq, struct cerr *err);
/* Does lg hold frames written but not yet synced? */
bool log_pending(const struct log *lg);
/* log_sync in three steps, so the owner can write the next frames while
 * the disk syncs these. log_sync_begin takes every frame written so far
 * (false: none; nothing to end); log_sync_fd, on any thread, fdatasyncs the
 * file (0 or the errno), covering every frame written before it starts;
 * log_sync_end, on the owner's thread, settles the outcome (errnum) of a
 * sync that started after every frame begin took was written. Between begin and end
 * the owner may call log_write, log_sync_fd and nothing else on lg. If the
 * sync failed, log_sync_end rolls back the frames it took and every frame
 * written after them, as log_sync does. */
bool log_sync_begin(struct log *lg);
int log_sync_fd(struct log *lg);
int log_sync_end(struct log *lg, int errnum, struct cerr *err);
/* Cut the torn tail seen at open, fenced by rev (anything changed:
 * CERR_CONFLICT). *cut gets the bytes removed (0 when there was none). */
int log_cut_torn_tail(struct log *lg, const struct revision *rev, uint64_t *cut,
		      struct cerr *err);

/* Re-read the log in full now, failing closed as log_open does; afterwards
 * log_scan holds every event, this handle's own appends included. A log not
 * yet published: CERR_MISSING. */
int log_reread(struct log *lg, struct cerr *err);
/* log_reread as a strict scan keeping every event (log_scan), also for a
 * handle opened with log_open_load: what projecting the log needs. */
int log_reread_full(struct log *lg, struct cerr *err);
/* Re-read only when this handle made its last read stale: it was poisoned
 * by a failed sync, or it appended since (log_scan would miss its own
 * events). Changes by others are left for revision fences to detect. */
int log_refresh(struct log *lg, struct cerr *err);

/* The next seq the log expects (1 for a log not yet published). */
uint64_t log_next_seq(const struct log *lg);
/* The session id; owned by lg. */
const char *log_id(const struct log *lg);
/* The log file path for messages; owned by lg. */
const char *log_path(const struct log *lg);
/* The session's directory, for the files beside its log (blobs/, see
 * blob.h); owned by lg. A session not yet published gets its folder made
 * and its writer lock taken first, so a blob can precede the first
 * append. -1 with err when that fails. */
int log_dir(struct log *lg, struct cerr *err);
/* The result of the last full read (NULL until the log is first read: a
 * handle that published the log itself has none until log_refresh);
 * owned by lg and replaced by a later re-read. */
const struct scan *log_scan(const struct log *lg);
/* Free the last read's result, and a compact one's load (log_scan becomes NULL, as for a
 * handle opened at its end): a held session's writer keeps no parsed copy
 * of its log, only its cursor. The next log_refresh reads it again. */
void log_drop_scan(struct log *lg);
/* A compact handle's last read (log_open_load), NULL when it has none
 * (not read yet, taken, or the last read was a full one); owned by lg. */
const struct load *log_load(const struct log *lg);
/* Take the compact read, if it is of the file as it is now: complete and
 * valid, nothing cut, appended or left unsynced since. NULL otherwise (a
 * load that is no longer current is freed). The caller frees it with
 * load_free; the next log_refresh reads the log again. */
struct load *log_take_load(struct log *lg);
/* The revision of the last full read (zero before any). */
struct revision log_revision_of(const struct log *lg);
/* What this handle last acknowledged as durable: the durable watermark
 * to record in the catalog. rev.len 0 when it acknowledged nothing yet. */
struct log_mark log_durable(const struct log *lg);
/* The t the last successful append gave its events that had none. */
int64_t log_batch_time(const struct log *lg);
/* Bytes of torn tail this handle has cut so far. */
uint64_t log_cut_bytes(const struct log *lg);
/* Release the lock and free; NULL-safe. */
void log_close(struct log *lg);

#endif
