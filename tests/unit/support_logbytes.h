/* support_logbytes.h — session log bytes made in memory for the load and
 * prepare tests: frames of event lines encoded as the store writes them,
 * and the check that a compact load read a log exactly as a scan did.
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_LOGBYTES_H
#define CAIRN_SUPPORT_LOGBYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct load;
struct scan;

#define LB_SID "01ARYZ6S41TSV4RRFFQ69G5FAV"

/* A log being written: bytes holds the committed frames, batch the lines
 * of the next one, seq the next seq; frame_at[k] is where frame k starts. */
struct logbytes {
	struct buf bytes, batch;
	uint64_t seq;
	size_t n_frames;
	size_t *frame_at;
};

/* Start a log with its header frame (format 1, id LB_SID). */
void lbytes_init(struct logbytes *l);
void lbytes_release(struct logbytes *l);
/* Add one event with the next seq: type, turn (NULL: none), data as JSON
 * text (NULL: {}). */
void lbytes_event(struct logbytes *l, const char *type, const char *turn, const char *data);
/* Add a line as is (it takes a seq, right or wrong). */
void lbytes_raw(struct logbytes *l, const char *line);
/* Commit the batch as one frame. */
void lbytes_commit(struct logbytes *l);

/* Fail the test unless ld read what sc read: status, error class, lengths,
 * revision, header fields, and every event (seq, type, turn, line). */
void assert_load_is_scan(const struct load *ld, const struct scan *sc, const char *what);
/* Fail unless events [from, from + n) of ld are events [sfrom, sfrom + n)
 * of sc (same seq, type, turn, line). */
void assert_same_events(const struct load *ld, size_t from, const struct scan *sc, size_t sfrom,
			size_t n, const char *what);

#endif
