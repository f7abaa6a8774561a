/* readlog.h — reading one session's log the way the store does: never
 * through a symlink or into another owner's file (store.h), with the
 * durable watermark the catalog recorded (scan.h), and a log holding
 * another session's id where this one belongs classified as corrupt.
 * The one read path of the CLI's readers, doctor and the catalog's
 * reconciliation; read-only: it never repairs and takes no lock. */
#ifndef CAIRN_READLOG_H
#define CAIRN_READLOG_H

#include <stdbool.h>

#include "base/err.h"
#include "persist/catalog.h"
#include "persist/scan.h"
#include "persist/store.h"

/* Read session ref's log, wherever it is now: *trash says where it was
 * listed and, on success, where it was read (it may have been deleted or
 * restored since). wm (NULL or not known: none) is its watermark. Returns
 * 0 with *out (caller frees with scan_free) however damaged the log, or -1
 * when it cannot be opened or read (gone from both areas: CERR_MISSING). */
int readlog_session(struct store *st, const struct session_ref *ref, bool *trash,
		    const struct cat_watermark *wm, struct scan **out, struct cerr *err);
/* The same for a log already open at fd (the caller keeps it), expected
 * to hold session want_id (NULL: any); name is the file for messages. */
int readlog_fd(int fd, const char *name, const char *want_id, const struct cat_watermark *wm,
	       struct scan **out, struct cerr *err);

#endif
