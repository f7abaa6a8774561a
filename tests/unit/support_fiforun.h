/* support_fiforun.h — scripted runs of FIFO items for the fault tests: the
 * items of two sessions (run_ids) are posted keeping what each appends,
 * every completion is recorded, and once settled each item is judged: it
 * completed exactly once, in post order, on the loop thread, with a
 * receipt or an error that the session's state and the fault injected
 * (R.flt) explain. Logs are read back with plain system calls. Helpers
 * that check fail the running cmocka test.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_FIFORUN_H
#define CAIRN_SUPPORT_FIFORUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/err.h"
#include "persist/fifo.h"
#include "tests/unit/support_faultfs.h"

struct scan;

#define RUN_MAX_ITEMS 32

/* The sessions of a run: item k of run_put and the like is run_ids[k]'s. */
extern const char *const run_ids[2];

/* op fails with errnum at its Nth call (or the Nth pwrite is short); with
 * pre, pre fails at its Nth call instead and op at its first call after. */
struct fault {
	enum faultfs_op op;
	int errnum;
	bool shortw;
	enum faultfs_op pre; /* FF_NOPS: none */
	bool pre_short;
};

/* One posted item and its completion. */
struct titem {
	int calls, order;
	bool on_loop, ok, both_or_none;
	struct fifo_receipt r;
	struct cerr err;
	int sess;
	enum fifo_kind kind;
	int recovery; /* 0, or the attempt of a recovery save */
	cJSON *evs; /* the events it appends ({type, data}); NULL for delete */
};

/* A session as the completions judged so far leave it. */
struct sstate {
	bool failed, acked, deleted, delete_unknown;
	struct cerr why;
	uint64_t next, version;
};

struct run {
	char what[128];
	const struct fault *flt;
	char dir[64];
	char root[128];
	uv_loop_t loop;
	struct fifo *f;
	struct titem it[RUN_MAX_ITEMS];
	size_t n, judged, n_failed;
	struct sstate s[2];
	int order;
	bool nojudge; /* the catalog tests check their items themselves */
};

/* The run in progress (one at a time); the test fills what, flt, dir,
 * root and f, and frees every item's evs when done. */
extern struct run R;

/* True for the sync calls (fsync, fdatasync). */
bool run_is_sync(enum faultfs_op op);
/* uv_loop_init R.loop, which completions must come on: this thread's. */
void run_loop_init(void);
/* Post item for session k on R.f; evs (what it appends, or NULL) passes to R. */
void run_put(int k, struct fifo_item *item, cJSON *evs, int recovery);
/* Post a history item of n user messages at seq (with the create flag when create). */
void run_hist(int k, uint64_t seq, int n, bool create);
/* Post a full save of n assistant texts at seq and version (a recovery attempt: with create). */
void run_fsave(int k, uint64_t seq, uint64_t version, int n, int recovery);
/* Post a meta item with the JSON object json. */
void run_meta(int k, const char *json);
/* Flush, run the loop until every item posted so far completed, then
 * judge each (only check its completion when R.nojudge). */
void run_settle(void);
/* The log of session k under root's area, read with plain system calls
 * (never through fsops, which the writer thread uses) and scanned in
 * memory; NULL when there is none, else the caller frees it (scan_free). */
struct scan *run_read_log(const char *root, const char *area, int k);

#endif
