/* repair.h — close what a crash left open (DESIGN §4.5).
 *
 * Repair truncates a torn tail (fenced by the revision it read) and then
 * appends, never rewrites: for each open turn, a synthetic tool/result for
 * every tool/call without one (not_executed without tool/started,
 * outcome_unknown with it; source_seqs = [seq of the call]) and a turn/end
 * with outcome "interrupted". Once the tail is cut, the blobs no durable
 * event names (a crash between a blob and its event) are removed
 * (blob_sweep; blob_sweep_load for a handle that read the log compactly,
 * log_open_load). A corrupt or unsupported log is never touched. */
#ifndef CAIRN_REPAIR_H
#define CAIRN_REPAIR_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "persist/log.h"
#include "persist/scan.h"

struct repair_report {
	uint64_t cut_bytes;   /* torn tail removed */
	uint64_t first_seq;   /* seq of the first appended closer */
	size_t appended;      /* closers appended */
	size_t blobs_removed; /* orphan blobs and temporary files removed */
	uint64_t next_seq;    /* after repair */
	cJSON *closers;       /* array of the appended events (caller frees) */
};

/* The closer events the scan's open turns need, as a JSON array of
 * {"type","turn","data"} objects in append order. Caller frees. */
cJSON *repair_closers(const struct scan *s);
/* Repair the log open in lg (held under its writer lock). On success fills
 * rep (free rep->closers with cJSON_Delete). A second repair appends
 * nothing. */
int repair_log(struct log *lg, struct repair_report *rep, struct cerr *err);

#endif
