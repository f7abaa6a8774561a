/* load.h — a session log read into a compact form (DESIGN §4.4).
 *
 * A load keeps the decoded frames back to back in one buffer and a 32-byte
 * index entry per event (seq, time, type, turn, where its line is); an
 * event's JSON tree is built only when asked for (load_json). Every event
 * is still validated as a scan validates it (event_check applies
 * event_parse's rules without keeping a tree) and the log is classified by
 * the same frame walk (scan_int.h), watermark rules included, so a load
 * and a scan of one file agree on the status and the events.
 *
 * A load only reads: it never repairs and never takes the writer lock, so
 * it serves viewers and a session that another process holds open. It can
 * run on any thread; load_async (load_async.h) runs one on a worker.
 *
 * Reading from the end. load_tail reads only the last frames. zstd frames
 * carry no back pointers, so it reads a window at the end of the file and
 * finds frame starts in it by their magic number (28 B5 2F FD): every
 * candidate is walked forward frame by frame (frame_walk: headers and block
 * headers, no decoding); true frame starts all chain to the same end (the
 * end of the file, or where a torn tail starts), and the earliest candidate
 * that reaches the end most candidates reach starts the tail. The tail is
 * then decoded and checked by the same walk as a full load (checksums,
 * lines, contiguous seqs from the first line's seq, the watermark above the
 * tail's start). JSON text never holds the magic (FD is not UTF-8), so a
 * false start can only sit inside compressed data and would also have to
 * decode and pass its content checksum; if the first frame fails, the next
 * candidate is tried. The window doubles until it holds the events asked
 * for (a window with no valid frame start in it may start inside a frame
 * longer than itself: it doubles too); one that reaches frame 0 becomes a
 * full load. Frame 0 is read and
 * validated on its own for the header. The cost is that of the window, not
 * of the file (bench_load: the last 100 events of a 1,000,000-event log). */
#ifndef CAIRN_LOAD_H
#define CAIRN_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "persist/scan.h"
#include "persist/vocab.h"

/* One event of a load: 32 bytes. */
struct load_event {
	uint64_t seq;
	int64_t t;
	uint32_t frame;         /* index of its frame (load_frame) */
	uint32_t off;           /* its line's offset in the frame's content */
	uint32_t len : 21;      /* the line's length without LF (<= EVENT_MAX_LINE) */
	uint32_t type : 8;      /* enum vocab_type (VT_UNKNOWN: unknown ignorable) */
	uint32_t ignorable : 1;
	uint32_t turn;          /* 1 + index into the load's turns; 0: none */
};

/* One frame of a load. */
struct load_frame {
	uint64_t offset;       /* in the file */
	uint64_t content;      /* where its content starts in the load's buffer */
	uint32_t len;          /* bytes in the file */
	uint32_t content_len;  /* decoded bytes */
	size_t first_event;    /* its events are [first_event, first_event + n_events) */
	size_t n_events;
};

struct load;

/* Load the log open at fd with scan options o (NULL: none). Returns 0 with
 * *out for every log however damaged (see load_scan), -1 with CERR_IO when
 * the file cannot be read. The caller frees *out with load_free. */
int load_fd(int fd, const struct scan_opts *o, struct load **out, struct cerr *err);
/* The same for bytes in memory; never fails. Caller frees with load_free. */
struct load *load_buffer(const uint8_t *p, size_t n, const struct scan_opts *o);
/* Only the end of the log open at fd: whole frames holding at least the
 * last min_events events (all of them when the log has fewer), and the
 * header fields from frame 0. The status describes what was read: the
 * header frame and the tail (a torn or damaged end as a full load would
 * see it; damage before the tail is not looked for). 0 with *out (caller
 * frees with load_free), -1 with CERR_IO. */
int load_tail(int fd, size_t min_events, const struct scan_opts *o, struct load **out,
	      struct cerr *err);
/* load_tail for the last frame alone, as an append checks the end it
 * builds on: the window starts at 4 KiB and doubles until it holds that
 * frame's start, so it costs frame 0 and about the last frame. */
int load_last(int fd, const struct scan_opts *o, struct load **out, struct cerr *err);
void load_free(struct load *l);

/* The classification, revision and header fields, as scan_fd reports them
 * (its events, frames and summary arrays are empty). Owned by l. */
const struct scan *load_scan(const struct load *l);
/* A copy of load_scan that the caller owns (frees with scan_free), for a
 * holder of the status fields that outlives the load. */
struct scan *load_scan_copy(const struct load *l);
/* Events held (for a tail, those of the tail only). */
size_t load_count(const struct load *l);
/* Event i < load_count; owned by l. */
const struct load_event *load_event(const struct load *l, size_t i);
/* Event i's line (no LF, not NUL terminated) in l's buffer; *len its length. */
const char *load_line(const struct load *l, size_t i, size_t *len);
/* Event i parsed (the line as a JSON tree); the caller frees it with
 * cJSON_Delete. The line was validated, so it is NULL only if memory is
 * short. */
cJSON *load_json(const struct load *l, size_t i);
/* Event i's turn id (NUL terminated, owned by l), NULL when it has none. */
const char *load_turn(const struct load *l, size_t i);
/* Distinct turn ids seen, and id k (1-based, as in load_event.turn). */
size_t load_n_turns(const struct load *l);
const char *load_turn_name(const struct load *l, uint32_t k);
/* The frames held, in file order; frame k < load_n_frames, owned by l. */
size_t load_n_frames(const struct load *l);
const struct load_frame *load_frame(const struct load *l, size_t k);
/* True for a load_tail that did not read the whole log. */
bool load_is_tail(const struct load *l);
/* Bytes of memory l holds, by its own count of what it allocated. */
size_t load_memory(const struct load *l);

#endif
