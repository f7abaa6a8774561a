/* readfile.h — the one capped whole-file read: a regular file (or an open
 * descriptor) read to its end into a buffer, refused past a byte cap.
 * A path is opened non-blocking so that a FIFO or a device there is
 * refused at once instead of waiting for a writer; it blocks on the disk,
 * so callers run it off the loop thread. */
#ifndef CAIRN_READFILE_H
#define CAIRN_READFILE_H

#include <stddef.h>

#include "base/buf.h"

enum readfile_rc {
	READFILE_OK = 0,
	READFILE_ABSENT,      /* no such file (ENOENT, or ENOTDIR on the way) */
	READFILE_OPEN_ERROR,  /* could not open it; errno says why */
	READFILE_NOT_REGULAR, /* a directory, FIFO, device (or fstat failed) */
	READFILE_READ_ERROR,  /* errno says why */
	READFILE_TOO_BIG,     /* more than max bytes */
};

/* Append the whole regular file at path to b, at most max bytes in all
 * (b's bytes before included). On any result but READFILE_OK b may hold a
 * part of the file (the caller releases it); errno is set for the two
 * errors. */
enum readfile_rc readfile_path(const char *path, size_t max, struct buf *b);
/* Append what fd holds to its end to b, at most max bytes in all (b's
 * bytes before included); fd stays open. READFILE_OK, READFILE_READ_ERROR
 * with errno, or READFILE_TOO_BIG. */
enum readfile_rc readfile_fd(int fd, size_t max, struct buf *b);

#endif
