/* lock.c — non-blocking flock with identity re-checks. */
#include "persist/lock.h"
#include "persist/fsops.h"
#include "persist/safefs.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Is the exclusive lock refused only because of probes (lock_probe holds
 * a shared lock for the instant of one call)? Then no writer holds it. */
static bool only_probes(int dirfd)
{
	int fd = fsops->openat(dirfd, LOCK_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool shared = fsops->flock(fd, LOCK_SH | LOCK_NB) == 0;
	lock_release(fd);
	return shared;
}

/* How often a lock refused by probes alone is tried again, PROBE_WAIT_NS
 * apart: a probe holds it for two system calls, so the first retry almost
 * always wins; the bound only keeps a stream of probes from holding a
 * writer off for long (LOCK_PROBE_TRIES x PROBE_WAIT_NS = 20 ms at most). */
#define LOCK_PROBE_TRIES 200
#define PROBE_WAIT_NS 100000L

int lock_take(int parentfd, const char *name, int dirfd, struct cerr *err)
{
	int fd = safefs_openfile(dirfd, LOCK_FILE, O_RDWR | O_CREAT, err);
	if (fd < 0)
		return -1;
	int rc = fsops->flock(fd, LOCK_EX | LOCK_NB);
	int e = rc < 0 ? errno : 0;
	for (int i = 0; rc < 0 && e == EWOULDBLOCK && i < LOCK_PROBE_TRIES && only_probes(dirfd);
	     i++) {
		struct timespec ts = {0, PROBE_WAIT_NS};
		nanosleep(&ts, NULL);
		rc = fsops->flock(fd, LOCK_EX | LOCK_NB);
		e = rc < 0 ? errno : 0;
	}
	if (rc < 0) {
		fs_close_quiet(fd);
		if (e == EWOULDBLOCK)
			return cerr_set(err, CERR_LOCKED, 0,
					"session '%s' is open for writing in another process",
					name ? name : "");
		return cerr_set(err, CERR_IO, e, "cannot lock '%s'", LOCK_FILE);
	}
	struct stat held, at_path, dir, dir_at_path;
	if (fsops->fstat(fd, &held) < 0 ||
	    fsops->fstatat(dirfd, LOCK_FILE, &at_path, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !same_file(&held, &at_path))
		goto moved;
	if (parentfd >= 0) {
		if (fsops->fstat(dirfd, &dir) < 0 ||
		    fsops->fstatat(parentfd, name, &dir_at_path, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !same_file(&dir, &dir_at_path))
			goto moved;
	}
	return fd;
moved:
	lock_release(fd);
	return cerr_set(err, CERR_MISSING, 0, "session '%s' was moved or deleted while opening",
			name ? name : "");
}

int lock_probe(int dirfd, bool *held, struct cerr *err)
{
	*held = false;
	int fd = fsops->openat(dirfd, LOCK_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* never locked here */
		return cerr_set(err, CERR_IO, errno, "cannot open '%s'", LOCK_FILE);
	}
	/* Shared: two probes never fail each other. */
	if (fsops->flock(fd, LOCK_SH | LOCK_NB) < 0) {
		int e = errno;
		fs_close_quiet(fd);
		if (e == EWOULDBLOCK) {
			*held = true;
			return 0;
		}
		return cerr_set(err, CERR_IO, e, "cannot probe '%s'", LOCK_FILE);
	}
	lock_release(fd);
	return 0;
}

void lock_release(int lockfd)
{
	if (lockfd < 0)
		return;
	fsops->flock(lockfd, LOCK_UN);
	fs_close_quiet(lockfd);
}
