/* safefs.c — owner-only, no-follow file system helpers over fsops. */
#include "persist/safefs.h"
#include "persist/fsops.h"
#include "base/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int safefs_check_fd(int fd, bool want_dir, const char *what, struct cerr *err)
{
	return safefs_check_fd_mode(fd, want_dir, true, what, err);
}

/* unsafe: the class of a wrong type or owner (see safefs.h). */
static int check_fd(int fd, bool want_dir, bool fix_mode, const char *what,
		    enum cerr_class unsafe, struct cerr *err)
{
	struct stat st;
	if (fsops->fstat(fd, &st) < 0)
		return cerr_set(err, CERR_IO, errno, "cannot stat '%s'", what);
	if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		return cerr_set(err, unsafe, 0, "'%s' is not a %s", what,
				want_dir ? "directory" : "regular file");
	if (st.st_uid != geteuid())
		return cerr_set(err, unsafe, 0, "'%s' is owned by uid %u, not by us", what,
				(unsigned)st.st_uid);
	mode_t want = want_dir ? 0700 : 0600;
	if (fix_mode && (st.st_mode & 07777) != want && fsops->fchmod(fd, want) < 0)
		return cerr_set(err, CERR_IO, errno, "cannot set mode of '%s'", what);
	return 0;
}

int safefs_check_fd_mode(int fd, bool want_dir, bool fix_mode, const char *what, struct cerr *err)
{
	return check_fd(fd, want_dir, fix_mode, what, CERR_CORRUPT, err);
}

DIR *safefs_list(int dirfd)
{
	int dupfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dupfd < 0 ? NULL : fdopendir(dupfd);
	if (!d) {
		int e = errno;
		if (dupfd >= 0)
			close(dupfd);
		errno = e;
		return NULL;
	}
	rewinddir(d);
	return d;
}

int safefs_fsync_dir(int dirfd, const char *what, struct cerr *err)
{
	if (fsops->fsync(dirfd) < 0) {
		cerr_set(err, CERR_IO, errno, "cannot sync directory '%s'", what);
		return -1;
	}
	return 0;
}

int safefs_opendir(int dirfd, const char *name, bool create, bool *created, struct cerr *err)
{
	bool synced = false;
	if (created)
		*created = false;
	/* Each turn either opens the directory or makes it; a directory made
	 * and gone again before we open it was removed by a leftover cleanup
	 * (leftover.h), which only takes folders without a log: make it again,
	 * a bounded number of times. */
	for (int attempt = 0; attempt < 8; attempt++) {
		int fd = fsops->openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		if (fd >= 0) {
			/* An entry we did not sync ourselves may come from an attempt
			 * whose sync failed or from a creator that has not synced yet:
			 * make it durable before anything is built on it. */
			if (safefs_check_fd(fd, true, name, err) < 0 ||
			    (create && !synced && safefs_fsync_dir(dirfd, name, err) < 0)) {
				fs_close_quiet(fd);
				return -1;
			}
			return fd;
		}
		if (errno == ELOOP || errno == ENOTDIR)
			return cerr_set(err, CERR_CORRUPT, 0, "'%s' is a symlink or not a directory", name);
		if (errno != ENOENT)
			return cerr_set(err, CERR_IO, errno, "cannot open directory '%s'", name);
		if (!create)
			return cerr_set(err, CERR_MISSING, 0, "no directory '%s'", name);
		if (fsops->mkdirat(dirfd, name, 0700) < 0) {
			if (errno == EEXIST)
				continue; /* raced with another creator: open theirs */
			return cerr_set(err, CERR_IO, errno, "cannot create directory '%s'", name);
		}
		/* A restrictive umask may have cut the mode so far that we could
		 * not even open the new directory to fix it through its fd. */
		if (fchmodat(dirfd, name, 0700, 0) < 0) {
			if (errno == ENOENT)
				continue; /* a cleanup took it already: make it again */
			return cerr_set(err, CERR_IO, errno, "cannot set mode of '%s'", name);
		}
		if (safefs_fsync_dir(dirfd, name, err) < 0)
			return -1;
		synced = true;
		if (created)
			*created = true;
	}
	return cerr_set(err, CERR_IO, 0, "cannot open directory '%s'", name);
}

int safefs_openfile(int dirfd, const char *name, int flags, struct cerr *err)
{
	/* O_NONBLOCK: a FIFO opened read-only would otherwise wait for a
	 * writer before its type could be checked. */
	int fd = fsops->openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0) {
		if (errno == ELOOP)
			return cerr_set(err, CERR_CORRUPT, 0, "'%s' is a symlink", name);
		if (errno == EISDIR)
			return cerr_set(err, CERR_CORRUPT, 0, "'%s' is not a regular file", name);
		if (errno == ENOENT)
			return cerr_set(err, CERR_MISSING, 0, "no file '%s'", name);
		return cerr_set(err, CERR_IO, errno, "cannot open '%s'", name);
	}
	if (safefs_check_fd_mode(fd, false, (flags & O_ACCMODE) != O_RDONLY, name, err) < 0) {
		fs_close_quiet(fd);
		return -1;
	}
	if (!(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		cerr_set(err, CERR_IO, errno, "cannot open '%s'", name);
		fs_close_quiet(fd);
		return -1;
	}
	return fd;
}

int safefs_open_root(const char *path, bool create, struct cerr *err)
{
	if (!path || !*path)
		return cerr_set(err, CERR_USAGE, 0, "empty data directory");
	if (create) {
		/* mkdir -p, each new component 0700 and its parent synced. */
		char *p = xstrdup(path);
		for (char *s = p + 1; ; s++) {
			if (*s != '/' && *s != '\0')
				continue;
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0700) == 0) {
				/* A restrictive umask may have cut the mode. */
				if (chmod(p, 0700) < 0) {
					cerr_set(err, CERR_IO, errno, "cannot set mode of '%s'", p);
					free(p);
					return -1;
				}
				char *slash = strrchr(p, '/');
				char *parent = slash == p ? xstrdup("/") :
					slash ? xstrndup(p, (size_t)(slash - p)) : xstrdup(".");
				int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				int synced = pfd >= 0 && fsops->fsync(pfd) == 0;
				if (pfd >= 0)
					close(pfd);
				if (!synced) {
					cerr_set(err, CERR_IO, errno, "cannot sync '%s'", parent);
					free(parent);
					free(p);
					return -1;
				}
				free(parent);
			} else if (errno != EEXIST) {
				cerr_set(err, CERR_IO, errno, "cannot create '%s'", p);
				free(p);
				return -1;
			}
			*s = c;
			if (c == '\0')
				break;
		}
		free(p);
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return cerr_set(err, CERR_MISSING, 0, "no data directory '%s'", path);
		return cerr_set(err, CERR_IO, errno, "cannot open data directory '%s'", path);
	}
	/* The root is configuration, resolved normally: a wrong owner there
	 * is a setup error (io), not a damaged store. */
	if (check_fd(fd, true, true, path, CERR_IO, err) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}
