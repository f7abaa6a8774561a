/* safefs.h — owner-only files and directories that are never followed
 * through symlinks.
 *
 * Everything below the data root is opened relative to a directory fd with
 * O_NOFOLLOW; a symlink, a wrong owner or a wrong file type fails closed
 * with CERR_CORRUPT: the store is not as cairn made it, retrying cannot
 * help and a human must look (DESIGN §4.1, §4.7). Only the data root, which
 * is configuration resolved normally, fails with CERR_IO.
 * Directories are 0700 and files 0600 whatever the umask: modes are set with
 * fchmod on the opened handle, never by changing the process umask. */
#ifndef CAIRN_SAFEFS_H
#define CAIRN_SAFEFS_H

#include <dirent.h>
#include <stdbool.h>

#include "base/err.h"

/* Open (and with create, make) the data root, creating missing parents
 * 0700. Returns a directory fd the caller closes, or -1 with err. */
int safefs_open_root(const char *path, bool create, struct cerr *err);
/* Open directory `name` under dirfd; with create, make it 0700 if missing
 * and fsync dirfd so the new entry is durable. *created (may be NULL) tells.
 * Missing without create -> CERR_MISSING. Returns a fd the caller closes. */
int safefs_opendir(int dirfd, const char *name, bool create, bool *created, struct cerr *err);
/* Open regular file `name` under dirfd. flags are open(2) flags; with
 * O_CREAT the file is made 0600; a read-only open never changes the mode. Returns a fd the caller closes. */
int safefs_openfile(int dirfd, const char *name, int flags, struct cerr *err);
/* Check an open fd: right type (dir or regular), owned by us, mode tightened
 * to 0700/0600. `what` names it in messages. */
int safefs_check_fd(int fd, bool want_dir, const char *what, struct cerr *err);
/* The same; fix_mode false only verifies (read-only opens change nothing). */
int safefs_check_fd_mode(int fd, bool want_dir, bool fix_mode, const char *what, struct cerr *err);
/* A stream listing directory dirfd from its start, over a duplicate of
 * it: dirfd stays open and usable after closedir. (A duplicate shares
 * dirfd's position, which an earlier listing left at the end, so the
 * stream is rewound.) The caller closedirs it; NULL with errno. */
DIR *safefs_list(int dirfd);
/* fsync a directory fd; `what` names it in messages. */
int safefs_fsync_dir(int dirfd, const char *what, struct cerr *err);

#endif
