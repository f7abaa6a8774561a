/* fsops.h — every system call the store makes on session files, behind one
 * function table, so tests can inject short writes, EIO, ENOSPC and
 * simulated power loss at each step (SQLite test6.c style).
 *
 * All calls follow the POSIX convention (-1 and errno). The store always goes
 * through `fsops`; tests point it at their own table and back. */
#ifndef CAIRN_FSOPS_H
#define CAIRN_FSOPS_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct fsops {
	int (*openat)(int dirfd, const char *path, int flags, mode_t mode);
	int (*close)(int fd);
	ssize_t (*pread)(int fd, void *buf, size_t n, off_t off);
	ssize_t (*pwrite)(int fd, const void *buf, size_t n, off_t off);
	int (*fsync)(int fd);     /* files and directories */
	int (*fdatasync)(int fd); /* appends to an existing file */
	int (*ftruncate)(int fd, off_t len);
	/* Rename that fails with EEXIST instead of replacing the target. */
	int (*rename_noreplace)(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
	/* Rename that atomically replaces the target (renameat). */
	int (*rename)(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
	int (*mkdirat)(int dirfd, const char *path, mode_t mode);
	int (*unlinkat)(int dirfd, const char *path, int flags);
	int (*fstat)(int fd, struct stat *st);
	int (*fstatat)(int dirfd, const char *path, struct stat *st, int flags);
	int (*fchmod)(int fd, mode_t mode);
	int (*flock)(int fd, int op);
};

/* The table in force; never NULL. Tests swap it and restore fsops_real. */
extern const struct fsops *fsops;
extern const struct fsops fsops_real;

/* Write all n bytes at off, retrying short writes and EINTR. -1 and errno
 * on failure (errno EIO when a write returned 0). */
int fs_pwrite_all(int fd, const void *buf, size_t n, off_t off);
/* Read exactly n bytes at off unless EOF comes first; returns bytes read or
 * -1 and errno. */
ssize_t fs_pread_all(int fd, void *buf, size_t n, off_t off);
/* close() through the table, keeping errno of an earlier failure intact. */
void fs_close_quiet(int fd);

#endif
