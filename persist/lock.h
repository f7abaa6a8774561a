/* lock.h — the cross-process writer lock of a session (session.lock, flock).
 *
 * Calling sequence: open the session directory, lock_take, work, lock_release.
 * Taking never waits for a writer: a lock held elsewhere is CERR_LOCKED
 * at once (a probe's instant of shared lock is waited out, 20 ms at most). After taking it
 * the lock file is checked to still be the one at its path and, when a
 * parent is given, the directory to still be the session's (a concurrent
 * delete moves the whole directory, lock included). */
#ifndef CAIRN_LOCK_H
#define CAIRN_LOCK_H

#include <stdbool.h>

#include "base/err.h"

#define LOCK_FILE "session.lock"

/* Lock `dirfd`'s session.lock (created 0600 if missing). When parentfd >= 0,
 * also verify that parentfd/name is still dirfd. Returns the lock fd (the
 * caller releases it with lock_release) or -1 with CERR_LOCKED,
 * CERR_MISSING (moved away meanwhile) or CERR_IO. */
int lock_take(int parentfd, const char *name, int dirfd, struct cerr *err);
/* Is dirfd's session.lock held, by another process or by another
 * descriptor of this one? *held false when there is no lock file. Creates
 * nothing (works on a read-only root). It takes and drops a shared lock
 * for the instant of one flock call, which a lock_take in that instant
 * tells from a writer's and waits out. CERR_IO when it cannot tell. */
int lock_probe(int dirfd, bool *held, struct cerr *err);
/* Release and close a lock fd; -1 is ignored. */
void lock_release(int lockfd);

#endif
