/* tool_write.c — write_file and the atomic replace that edit_file shares
 * (tool_files_int.h): a reader of the file sees the old bytes or the new
 * ones, whole, and after a crash the file is one or the other.
 *
 * Everything here runs on a libuv worker (tool_files.c queues the job),
 * never on the loop thread: the writes and fsyncs below may wait on the
 * disk as long as they need. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "engine/tool_files_int.h"
#include "persist/fsops.h"
#include "persist/replace.h"

/* Symlinks followed at most, as the kernel's own limit. */
#define LINK_HOPS 40

/* path with every symlink in its last component followed, even a link to
 * a file that does not exist yet (caller frees); NULL after a message. */
static char *follow_links(struct tool_job *j, const char *path, bool *followed)
{
	char *p = xstrdup(path);
	for (int hops = 0; hops < LINK_HOPS; hops++) {
		struct stat st;
		if (lstat(p, &st) < 0 || !S_ISLNK(st.st_mode))
			return p;
		char t[PATH_MAX];
		ssize_t n = readlink(p, t, sizeof t - 1);
		if (n < 0) {
			tool_files_fail(j, "cannot read the symlink '%s': %s", p, strerror(errno));
			free(p);
			return NULL;
		}
		t[n] = '\0';
		char *slash = strrchr(p, '/');
		char *next = t[0] == '/' || !slash ? xstrdup(t)
						    : xasprintf("%.*s/%s", (int)(slash - p), p, t);
		free(p);
		p = next;
		*followed = true;
	}
	tool_files_fail(j, "cannot write '%s': too many levels of symbolic links", j->shown);
	free(p);
	return NULL;
}

/* The directory part of path ("." when it has none); caller frees. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

/* Create dir and its missing parents, naming each one made in *made. */
static int make_dirs(struct tool_job *j, const char *dir, struct buf *made)
{
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		tool_files_fail(j, "cannot write '%s': '%s' is not a directory", j->shown, dir);
		return -1;
	}
	char *p = xstrdup(dir);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		bool end = *s == '\0';
		if (!end && *s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0777) == 0) {
			if (made) {
				if (made->len)
					buf_adds(made, ", ");
				buf_adds(made, p);
			}
		} else if (errno != EEXIST) {
			tool_files_fail(j, "cannot create the directory '%s': %s", p, strerror(errno));
			rc = -1;
			break;
		}
		if (end)
			break;
		*s = '/';
	}
	free(p);
	return rc;
}

/* A temporary name next to base, with a new tag each call (caller frees). */
static char *temp_name(const char *base)
{
	static _Atomic unsigned counter;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned tag = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16) ^ counter++;
	return xasprintf(".%s.tmp-%08x", base, tag);
}

/* The directory dir opened for the replace: readable when it may be (its
 * fsync makes the rename durable), else by path only, so that the file is
 * still written and the missing sync reported after (replace.h). */
static int open_dir(const char *dir, int *unreadable)
{
	*unreadable = 0;
	int fd = fsops->openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0 && errno == EACCES) {
		*unreadable = errno; /* why its sync will fail */
		fd = fsops->openat(AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	}
	return fd;
}

/* Runs on the worker (file comment): it blocks on the disk by design. */
int tool_write_atomic(struct tool_job *j, const char *path, const char *data, size_t n,
		      bool *created, char **target, struct buf *made)
{
	bool followed = false;
	char *to = follow_links(j, path, &followed);
	if (!to)
		return -1;
	char *dir = dir_of(to), *tmp = NULL;
	const char *base = strrchr(to, '/') ? strrchr(to, '/') + 1 : to;
	int dfd = -1, rc = -1;
	struct stat st;
	bool exists = stat(to, &st) == 0;
	if (exists && S_ISDIR(st.st_mode)) {
		tool_files_fail(j, "cannot write '%s': it is a directory", j->shown);
		goto out;
	}
	if (exists && !S_ISREG(st.st_mode)) {
		tool_files_fail(j, "cannot write '%s': not a regular file", j->shown);
		goto out;
	}
	if (!*base) {
		tool_files_fail(j, "cannot write '%s': the path names a directory", j->shown);
		goto out;
	}
	if (make_dirs(j, dir, made) < 0)
		goto out;
	int unreadable;
	dfd = open_dir(dir, &unreadable);
	if (dfd < 0) {
		tool_files_fail(j, "cannot create a temporary file in '%s': %s", dir, strerror(errno));
		goto out;
	}
	/* On a libuv worker (tool_files.c queues every file job), never the
	 * loop thread: the writes and fsyncs may wait on the disk. */
	struct replace r = {.dirfd = dfd,
			    .name = base,
			    .data = data,
			    .len = n,
			    .user_file = true,
			    .like = exists ? &st : NULL,
			    /* The last moment a cancel can still leave the file as it was. */
			    .cancel = &j->canceled};
	enum replace_step step = REPLACE_OPEN;
	for (int tries = 0; tries < 100 && step == REPLACE_OPEN; tries++) {
		free(tmp);
		tmp = temp_name(base);
		r.tmp = tmp;
		step = replace_file(&r, NULL);
		if (step == REPLACE_OPEN && r.sys_errno != EEXIST)
			break;
	}
	switch (step) {
	case REPLACE_DONE:
	case REPLACE_DIRSYNC:
		break;
	case REPLACE_OPEN:
		tool_files_fail(j, "cannot create a temporary file in '%s': %s", dir,
				strerror(r.sys_errno));
		goto out;
	case REPLACE_MODE:
		tool_files_fail(j, "cannot keep the mode of '%s': %s", j->shown, strerror(r.sys_errno));
		goto out;
	case REPLACE_CANCELED:
		goto out;
	case REPLACE_RENAME:
		tool_files_fail(j, "cannot replace '%s': %s", j->shown, strerror(r.sys_errno));
		goto out;
	default: /* write, sync, close */
		tool_files_fail(j, "cannot write '%s': %s", j->shown, strerror(r.sys_errno));
		goto out;
	}
	j->wrote = true;
	if (step == REPLACE_DIRSYNC) {
		/* The rename is durable only once the directory is synced. */
		tool_files_fail(j, "wrote '%s', but cannot sync its directory: %s (the file may not "
				   "survive a power loss)", j->shown,
				strerror(unreadable ? unreadable : r.sys_errno));
		goto out;
	}
	*created = !exists;
	*target = followed ? xstrdup(to) : NULL;
	rc = 0;
out:
	if (dfd >= 0)
		fsops->close(dfd);
	free(tmp);
	free(dir);
	free(to);
	return rc;
}

void tool_write_file(struct tool_job *j)
{
	size_t n = strlen(j->text1);
	bool created = false;
	char *target = NULL;
	struct buf made = BUF_INIT;
	if (tool_write_atomic(j, j->path, j->text1, n, &created, &target, &made) == 0) {
		buf_printf(&j->out, "wrote %zu bytes to %s (%s", n, j->shown,
			   created ? "created" : "replaced");
		if (target)
			buf_printf(&j->out, "; through the symlink to %s", target);
		if (made.len)
			buf_printf(&j->out, "; created the directories %s", made.p);
		buf_adds(&j->out, ")\n");
	}
	free(target);
	buf_release(&made);
}
