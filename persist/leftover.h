/* leftover.h — what an interrupted session creation leaves behind.
 *
 * A writer killed during a first publication (DESIGN §4.3) can leave a
 * staging file (.session.jsonl.zst.<hex>.tmp, up to a whole first batch)
 * and an <id>/ folder without a log (perhaps with the blobs/ of its first
 * events, which no event names then). Neither is a session: the store lists
 * only folders holding a log. leftover_list finds them; leftover_remove
 * takes them away without ever disturbing a creation in progress.
 *
 * Why removal is safe: only the holder of a session's writer lock creates
 * or renames a staging file, so one seen while we hold that lock is dead.
 * A folder without a log is removed under its lock too, lock file last and
 * rmdir (which fails on anything a creator added meanwhile) before the lock
 * is released; a creator that opened the folder or its lock file before
 * the removal finds it gone when it re-checks after locking (lock_take)
 * and starts over in a fresh folder (log.c, publish). A lock held by
 * anyone is left alone: CERR_LOCKED. No age bound is needed and none is
 * used: a leftover goes on the first try. */
#ifndef CAIRN_LEFTOVER_H
#define CAIRN_LEFTOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "persist/store.h"

struct leftover {
	struct session_ref ref;
	bool trash;             /* under trash/ */
	bool no_log;            /* the folder holds no log: not a session */
	bool foreign;           /* it holds other files too: the folder stays */
	size_t staging;         /* staging files in it */
	uint64_t staging_bytes; /* their size */
};

/* Is name a staging file name of a first publication? */
bool leftover_is_staging(const char *name);
/* Every folder of both areas with staging files or without a log. Caller
 * frees *out (NULL when *n is 0). */
int leftover_list(struct store *st, struct leftover **out, size_t *n, struct cerr *err);
/* Remove l's staging files and, when it has no log, its folder (see the
 * file comment). CERR_LOCKED: a writer holds it, nothing removed; gone
 * meanwhile: 0. *removed_dir (may be NULL) tells whether the folder went. */
int leftover_remove(struct store *st, const struct leftover *l, bool *removed_dir,
		    struct cerr *err);
/* Unlink every staging file in dirfd, whose session lock the caller holds;
 * how many were removed. */
size_t leftover_remove_staging(int dirfd);

#endif
