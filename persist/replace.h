/* replace.h — the one atomic replace: a new file under a temporary name in
 * the target's directory, written whole, fsynced, renamed onto its name
 * and the directory fsynced, every system call through fsops (so the fault
 * tables and the power-loss model of the tests see each step). A reader
 * sees the old file or the new one, whole; after a crash the name holds
 * one or the other, never a torn file.
 *
 * Used by the log's first publication, blobs, drafts and the write_file
 * and edit_file tools. It blocks on the disk: call it from a worker or a
 * command-line path, never from the loop thread. */
#ifndef CAIRN_REPLACE_H
#define CAIRN_REPLACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "base/err.h"

/* Where a replace stopped. Before REPLACE_RENAME fails nothing changed and
 * the temporary file is gone; a failed REPLACE_DIRSYNC means the new file
 * is in place but may not survive a power loss. */
enum replace_step {
	REPLACE_DONE = 0,
	REPLACE_OPEN,     /* creating the temporary file */
	REPLACE_MODE,     /* giving it the mode of `like` */
	REPLACE_WRITE,
	REPLACE_SYNC,     /* fsync of the file */
	REPLACE_CLOSE,
	REPLACE_CANCELED, /* *cancel was set before the rename */
	REPLACE_RENAME,   /* errno EEXIST with noreplace: the name is taken */
	REPLACE_DIRSYNC,
};

struct replace {
	/* In. */
	int dirfd;            /* the directory of both names */
	const char *tmp;      /* the temporary name, created O_EXCL */
	const char *name;     /* the final name */
	const void *data;
	size_t len;
	bool noreplace;       /* fail with EEXIST rather than replace name */
	bool keep_fd;         /* leave the file open in fd once renamed */
	/* false: a store file, owner-only 0600 through safefs_openfile (its
	 * cerr classes). true: a user's file, 0666 less the umask, or the
	 * mode (and, when permitted, the owner) of *like. */
	bool user_file;
	const struct stat *like;
	const atomic_bool *cancel; /* may be NULL */
	/* Out. */
	int fd;               /* keep_fd and renamed: the caller closes it; else -1 */
	int sys_errno;        /* the failing call's errno (0 when none) */
};

/* Run the replace r describes. Returns REPLACE_DONE or the step that failed,
 * with r->sys_errno and errno set; for a store file's REPLACE_OPEN err holds
 * safefs's classified error, for every other step err is left alone and the
 * caller words the message from the step. err may be NULL for a user file. */
enum replace_step replace_file(struct replace *r, struct cerr *err);

#endif
