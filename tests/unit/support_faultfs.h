/* support_faultfs.h — a fault-injecting, power-loss-modelling fsops table
 * for tests (SQLite test6.c style). Every call goes to the real system call
 * (fsops_real) unless a fault is armed for it.
 *
 * Calling sequence:
 *   faultfs_install()                   counters reset, fsops = &faultfs_ops
 *   faultfs_fail(FF_PWRITE, 2, EIO) ... arm faults (relative to now)
 *   ... drive the store ...
 *   faultfs_fired(), faultfs_count(...)  what happened
 *   faultfs_uninstall()                 fsops = &fsops_real, model freed
 *
 * Power-loss model (faultfs_track, then faultfs_crash_copy). Conservative
 * assumptions, i.e. a power loss keeps as little as POSIX promises:
 * - Everything below the tracked root when faultfs_track() is called is
 *   durable: every directory's entries and every file's content.
 * - A regular file's durable content is exactly what it held at its last
 *   successful fsync or fdatasync through this table (snapshot read back
 *   through the real fd); a file never synced since it was created is empty.
 *   Writes, truncations and extensions after that sync are all lost, so a
 *   truncation not followed by a sync is undone.
 * - A directory's durable entries (name -> inode) are exactly those it held
 *   at its last successful fsync through this table; a directory created and
 *   never synced is empty. Creations, renames and unlinks not followed by an
 *   fsync of the directory concerned are lost. A rename between two
 *   directories is judged per directory, so a crash between the two syncs
 *   can leave the object in both places (or in neither): tests must accept
 *   what the syncs made durable, nothing more.
 * - File data and directory entries are independent: a file's content
 *   follows its inode wherever a durable entry points to it.
 * - A sync failed by an armed fault records nothing, and the next successful
 *   sync of the object records all it holds then. (A real kernel may drop
 *   the pages of a failed writeback, so data read back after a failed sync
 *   may never reach the disk; the model does not show that loss.)
 * - Only regular files and directories are modelled; symlinks, devices and
 *   sockets are dropped from the crash copy. Modes become 0600/0700.
 * - Operations made outside this table (plain open/mkdir/write) are invisible
 *   until a later synced snapshot happens to see their result.
 * Real file systems usually keep more (ext4 data=ordered flushes file data
 * before a rename commits), so a store that passes under this model may rely
 * on nothing but fsync. */
#ifndef CAIRN_SUPPORT_FAULTFS_H
#define CAIRN_SUPPORT_FAULTFS_H

#include <stdbool.h>
#include <stddef.h>

#include "persist/fsops.h"

/* Operation kinds, counted separately. FF_CREATE is an openat with O_CREAT;
 * FF_OPENAT is every other openat. */
enum faultfs_op {
	FF_OPENAT,
	FF_CREATE,
	FF_CLOSE,
	FF_PREAD,
	FF_PWRITE,
	FF_FSYNC,
	FF_FDATASYNC,
	FF_FTRUNCATE,
	FF_RENAME,
	FF_MKDIRAT,
	FF_UNLINKAT,
	FF_FSTAT,
	FF_FSTATAT,
	FF_FCHMOD,
	FF_FLOCK,
	FF_NOPS
};

/* The injecting table; installed by faultfs_install. */
extern const struct fsops faultfs_ops;

/* Reset counters, faults and the model, and point fsops at faultfs_ops. */
void faultfs_install(void);
/* Point fsops back at fsops_real and free the model. */
void faultfs_uninstall(void);
/* Reset counters only (faults stay armed relative to their own start). */
void faultfs_reset_counts(void);
/* Calls of kind op since install or the last faultfs_reset_counts. */
unsigned long faultfs_count(enum faultfs_op op);
/* Short lowercase name ("pwrite", "rename_noreplace", ...); static storage. */
const char *faultfs_op_name(enum faultfs_op op);

/* Fail the nth call of kind op from now (1 = the next one) with errnum,
 * without performing it. Up to 8 faults may be armed at once. */
void faultfs_fail(enum faultfs_op op, unsigned long nth, int errnum);
/* Make the nth pwrite from now a short write: it writes the first half of its
 * bytes and returns that count, and the pwrite after it fails with ENOSPC (a
 * one-byte pwrite fails with ENOSPC at once). */
void faultfs_short_write(unsigned long nth);
/* Disarm every fault. */
void faultfs_disarm(void);
/* How many armed faults have fired since install (a short write counts once,
 * when its part is written). */
unsigned faultfs_fired(void);

/* Start the power-loss model with root's present tree as durable. Returns 0,
 * or -1 with errno when root cannot be walked. Needs faultfs_install. */
int faultfs_track(const char *root);
/* Materialize at dest (created 0700; must not exist) the tree under the
 * tracked root as a power loss at this instant would leave it (see above).
 * Uses plain system calls, never fsops. Returns 0 or -1 with errno. */
int faultfs_crash_copy(const char *root, const char *dest);
/* Make the nth directory fsync from now a lie: it returns 0 without syncing
 * or recording anything (to prove that a test catches a missing fsync). */
void faultfs_skip_dir_sync(unsigned long nth);
/* Directory syncs skipped so far. */
unsigned faultfs_skipped(void);
/* Directory fsyncs since install, skipped ones included and ones failed by
 * an armed fault not. */
unsigned long faultfs_dir_syncs(void);

/* Called around every fsync and fdatasync: before the call (after false)
 * and after a successful one, once the model recorded it (after true). The
 * hook runs with fsops still pointing at faultfs_ops. NULL removes it. */
typedef void (*faultfs_sync_cb)(void *ctx, enum faultfs_op op, bool after);
void faultfs_set_sync_hook(faultfs_sync_cb cb, void *ctx);
/* Called right after every successful mkdirat, with its arguments, inside
 * the fault table's lock (use plain system calls there, as another process
 * would). NULL removes it. */
typedef void (*faultfs_mkdir_cb)(void *ctx, int dirfd, const char *path);
void faultfs_set_mkdir_hook(faultfs_mkdir_cb cb, void *ctx);

#endif
