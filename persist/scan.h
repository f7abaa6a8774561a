/* scan.h — read a whole session log and classify it (DESIGN §4.4).
 *
 * A scan checks every frame's integrity before it interprets its lines:
 * - ok: every byte belongs to a complete, valid frame;
 * - torn: the only problem is an incomplete final frame (a crash left a
 *   prefix of the last write); the events before it are valid;
 * - corrupt: a complete frame fails its checksum, decompression, UTF-8,
 *   JSON, shape or seq continuity, frame 0 is incomplete, or the
 *   supposedly torn region holds a complete valid frame;
 * - unsupported: header format other than 1 or an unknown required type.
 * The scan result is read-only for callers and freed with scan_free. */
#ifndef CAIRN_SCAN_H
#define CAIRN_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/sha256.h"
#include "persist/event.h"
#include "persist/revision.h"

enum scan_status { SCAN_OK, SCAN_TORN, SCAN_CORRUPT, SCAN_UNSUPPORTED };

struct scan_frame {
	uint64_t offset, len;  /* bytes in the file */
	size_t first_event;    /* index into events[] */
	size_t n_events;       /* events of this frame kept in events[] */
	uint64_t first_seq, end_seq; /* seq range [first, end) incl. ignorable */
};

struct scan_call {
	const char *call_id;   /* borrowed from the event */
	const char *turn;      /* borrowed; NULL when the event has none */
	uint64_t seq;          /* seq of the tool/call */
	bool started, resulted;
	const char *pending;   /* request_id of an interaction/request naming it
				* that has no answer yet (borrowed); NULL: none */
};

struct scan {
	enum scan_status status;
	struct cerr err;        /* why, for corrupt and unsupported */
	struct revision rev;    /* the file read, its whole length, and the
				 * seq after the last valid event */
	uint64_t good_len;      /* end of the last complete valid frame */
	uint64_t damage_at;     /* offset of the first damage (corrupt) */
	int64_t ctime_ns;       /* its ctime when read: any rewrite changes it */
	/* The log's own identity: the digest of its header frame (frame 0),
	 * written once when the log was created and copied with it. */
	bool head_known;        /* frame 0 is structurally complete */
	uint8_t head[SHA256_LEN];
	bool wm_applied;        /* a watermark was given and is this log's: */
	uint64_t wm_len;        /* its length */

	struct scan_frame *frames; /* the valid prefix, in order */
	size_t n_frames;
	struct event *events;   /* valid events, header first; unknown ignorable
				 * ones are kept with kind NULL for copying, and
				 * readers skip them */
	size_t n_events;
	size_t n_skipped;       /* how many of events[] are unknown ignorable */

	/* From the header (frame 0), when it was valid. */
	char *id;
	char *cwd;              /* NULL for a null cwd */
	int64_t created_at;
	int64_t format;

	/* Turn summary over the valid events. */
	size_t turns;           /* count of turn/start */
	const char **open_turns; /* turns started and not ended, oldest first */
	size_t n_open_turns;
	struct scan_call *calls; /* every tool/call, in log order */
	size_t n_calls;

	char **contents;        /* private: decoded frame contents */
	size_t n_contents;
};

/* A durable watermark (from the catalog): the byte length and next seq
 * last acknowledged for this log. Damage below it is always corruption;
 * above it the first invalid point starts a torn tail, even when a power
 * loss left zeros or garbage there. It applies only to the log whose
 * header frame has the digest `head`: a copy of that log (new inode, same
 * bytes) keeps it, any other log (another session, a salvaged copy, a new
 * log created under the same id) is read by the structural rules alone. */
struct scan_opts {
	bool watermark;
	uint64_t wm_len;
	uint64_t wm_seq;
	uint8_t head[SHA256_LEN]; /* the digest of the log's frame 0 */
};

/* Scan the file open at fd. Returns 0 with *out set for every log, however
 * damaged (see status); -1 with CERR_IO only when the file cannot be read.
 * The caller frees *out with scan_free. */
int scan_fd(int fd, struct scan **out, struct cerr *err);
/* The same with options (NULL: none); a watermark for another log (its
 * head differs) is ignored. */
int scan_fd_opts(int fd, const struct scan_opts *o, struct scan **out, struct cerr *err);
/* Scan bytes in memory (fuzzing, tests). Never fails; free with scan_free. */
struct scan *scan_buffer(const uint8_t *p, size_t n);
struct scan *scan_buffer_opts(const uint8_t *p, size_t n, const struct scan_opts *o);
void scan_free(struct scan *s);
/* Does the durable watermark lag what s read: none applied (none known,
 * or another log's), or below the end of its complete valid frames? */
bool scan_wm_lags(const struct scan *s);
/* The head digest of p[0..n) (frame 0's bytes); false when frame 0 is not
 * structurally complete there. */
bool scan_head(const uint8_t *p, size_t n, uint8_t head[SHA256_LEN]);
/* The same for the log open at fd, reading only its first frame: 0 with
 * *found, or -1 with CERR_IO when it cannot be read. */
int scan_head_fd(int fd, uint8_t head[SHA256_LEN], bool *found, struct cerr *err);
/* The bytes of frame 0 of the log open at fd: 0 with *bytes (the caller
 * frees it) and *len, *bytes NULL when frame 0 is not structurally
 * complete; -1 with CERR_IO when it cannot be read. */
int scan_head_read(int fd, uint8_t **bytes, size_t *len, struct cerr *err);
/* The most recently started turn that is still open, or NULL. */
const char *scan_open_turn(const struct scan *s);
/* The class of a status: CERR_OK for ok and torn. */
enum cerr_class scan_class(const struct scan *s);
/* Lowercase status name: "ok", "torn", "corrupt", "unsupported". */
const char *scan_status_name(enum scan_status st);

#endif
