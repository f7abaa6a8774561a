/* scan_int.h — the frame walk that scan and load share (persist/ only).
 *
 * scan_walk applies every rule of a scan (frame integrity first, then
 * lines; torn tail versus corruption; the durable watermark) and hands
 * what it accepts to a sink: scan keeps parsed events, load keeps an index
 * into the decoded frames. Both therefore classify a log the same way. */
#ifndef CAIRN_SCAN_INT_H
#define CAIRN_SCAN_INT_H

#include <sys/stat.h>

#include "persist/frame.h"
#include "persist/scan.h"

struct scan_sink {
	/* Validate line p[0..n) (at offset `at` of its frame's content)
	 * expecting seq `expect` (EVENT_ANY_SEQ: any) and keep it: 0 with
	 * *seq and *vt, or -1 with e set (CERR_CORRUPT or CERR_UNSUPPORTED). */
	int (*line)(void *ctx, const char *p, size_t n, size_t at, uint64_t expect, uint64_t *seq,
		    enum vocab_type *vt, struct cerr *e);
	/* Keep the header event of frame 0 (validated); takes over ev. */
	void (*header)(void *ctx, struct event *ev, size_t at);
	/* Forget the lines kept since there were `from` (their frame failed). */
	void (*drop)(void *ctx, size_t from);
	/* How many lines are kept. */
	size_t (*count)(void *ctx);
	/* Decode a COMPLETE frame (frame_decode's contract); the content
	 * stays the sink's. NULL with *why when it fails. */
	char *(*decode)(void *ctx, struct frame_codec *fc, const uint8_t *p,
			const struct frame_info *fi, const char **why);
	/* A frame whose lines were all kept. */
	void (*frame)(void *ctx, const struct scan_frame *fr, char *content);
};

/* Walk p[0..n), the bytes of a log from file offset base to its end, into
 * s (its status fields; s->head_known and s->head say which log it is, for
 * the watermark) and the sink. first_seq is the seq of the first line, or
 * EVENT_ANY_SEQ when a reader starts inside the log and takes it from the
 * line. */
void scan_walk(struct scan *s, const uint8_t *p, size_t n, uint64_t base, uint64_t first_seq,
	       const struct scan_opts *o, const struct scan_sink *k, void *ctx);

/* The whole file at fd: 0 with *bytes (the caller frees it), *len and
 * *st; -1 with CERR_IO. A file that shrank while read is what was got. */
int scan_read_all(int fd, uint8_t **bytes, size_t *len, struct stat *st, struct cerr *err);
/* Record the file's identity and ctime (st) in s. */
void scan_set_file(struct scan *s, const struct stat *st);

#endif
