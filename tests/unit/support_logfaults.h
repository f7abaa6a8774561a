/* support_logfaults.h — the fixture of the log writer's fault tests: a
 * store root tracked by the power-loss model (support_faultfs.h) holding
 * one session, batches of events built in memory, and the log read back
 * through the real file table and checked against what was acknowledged,
 * now and after a simulated power loss. Helpers that check fail the running
 * cmocka test.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_LOGFAULTS_H
#define CAIRN_SUPPORT_LOGFAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"

/* The one session's id. */
#define SID "S"

struct fx {
	char dir[64], root[128];
	char *path; /* the session's log */
	struct store *st;
};

/* A batch of up to 8 events and the data they own. */
struct batch {
	struct log_event ev[8];
	cJSON *data[8];
	size_t n;
};

/* The events of a log as read back. */
struct snap {
	bool exists;
	enum scan_status status;
	size_t n;
	char **lines, **types;
	uint64_t next_seq;
	size_t open_turns;
};

/* A fresh store root, tracked by the power-loss model from its creation;
 * fsops is the fault table, disarmed. */
void lf_open(struct fx *f);
/* Put back the real table, close the store, remove the directory. */
void lf_close(struct fx *f);
/* b = n user messages "<tag> i". */
void lf_msgs(struct batch *b, const char *tag, size_t n);
/* b = one message of len bytes that zstd cannot shrink much. */
void lf_big(struct batch *b, size_t len);
/* b = a turn left open: two calls, the first one started. */
void lf_open_turn(struct batch *b);
/* Free the data b owns; b is empty again. */
void lf_batch_free(struct batch *b);
/* Read path through fsops_real, whatever table is in force; s is released with lf_snap_free. */
void lf_snap_read(const char *path, struct snap *s);
/* Free what s holds (not s). */
void lf_snap_free(struct snap *s);
/* got holds exactly acked, or (only when the outcome is unknown) acked plus
 * the n_extra events of the failed batch. Returns got's next seq. */
uint64_t lf_check_holds(const struct snap *got, const struct snap *acked, size_t n_extra,
			bool unknown, const char *what);
/* The tree as a power loss now would leave it holds exactly `want`. */
void lf_check_survives(const struct fx *x, const struct snap *want, const char *what);
/* Append the first half of a valid frame to path with plain calls: what a
 * writer killed mid-write leaves. The content does not compress, so the
 * torn tail is longer than the small frames appended after it. */
void lf_tear(const char *path);

#endif
