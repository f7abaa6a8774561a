/* readfile.c — the one capped whole-file read (readfile.h). */
#include "base/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

enum readfile_rc readfile_fd(int fd, size_t max, struct buf *b)
{
	char chunk[65536];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return READFILE_READ_ERROR;
		if (r == 0)
			return READFILE_OK;
		if (b->len + (size_t)r > max)
			return READFILE_TOO_BIG;
		buf_add(b, chunk, (size_t)r);
	}
}

enum readfile_rc readfile_path(const char *path, size_t max, struct buf *b)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? READFILE_ABSENT : READFILE_OPEN_ERROR;
	enum readfile_rc rc = READFILE_NOT_REGULAR;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	/* A regular file: reads block as usual from here. */
	int fl = fcntl(fd, F_GETFL);
	rc = READFILE_READ_ERROR;
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		goto out;
	rc = readfile_fd(fd, max, b);
out:;
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}
