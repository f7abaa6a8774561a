/* fsops.c — the real system call table and short-write-safe helpers. */
#include "persist/fsops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>
#ifdef __APPLE__
#include <sys/syscall.h>
#endif

static int real_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd;
	do
		fd = openat(dirfd, path, flags | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR);
	return fd;
}

static int real_rename_noreplace(int od, const char *op, int nd, const char *np)
{
#ifdef __APPLE__
	return renameatx_np(od, op, nd, np, RENAME_EXCL);
#else
	return renameat2(od, op, nd, np, RENAME_NOREPLACE);
#endif
}

static int real_fdatasync(int fd)
{
#ifdef __APPLE__
	return fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd);
#else
	return fdatasync(fd);
#endif
}

static int real_fsync(int fd)
{
#ifdef __APPLE__
	return fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd);
#else
	return fsync(fd);
#endif
}

static int real_flock(int fd, int op)
{
	int r;
	do
		r = flock(fd, op);
	while (r < 0 && errno == EINTR);
	return r;
}

const struct fsops fsops_real = {
	.openat = real_openat,
	.close = close,
	.pread = pread,
	.pwrite = pwrite,
	.fsync = real_fsync,
	.fdatasync = real_fdatasync,
	.ftruncate = ftruncate,
	.rename_noreplace = real_rename_noreplace,
	.rename = renameat,
	.mkdirat = mkdirat,
	.unlinkat = unlinkat,
	.fstat = fstat,
	.fstatat = fstatat,
	.fchmod = fchmod,
	.flock = real_flock,
};

const struct fsops *fsops = &fsops_real;

int fs_pwrite_all(int fd, const void *buf, size_t n, off_t off)
{
	const char *p = buf;
	while (n) {
		ssize_t w = fsops->pwrite(fd, p, n, off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

ssize_t fs_pread_all(int fd, void *buf, size_t n, off_t off)
{
	char *p = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = fsops->pread(fd, p + got, n - got, off + (off_t)got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

void fs_close_quiet(int fd)
{
	if (fd < 0)
		return;
	int saved = errno;
	fsops->close(fd);
	errno = saved;
}
