/* replace.c — the one atomic replace (replace.h) over fsops. */
#include "persist/replace.h"
#include "persist/fsops.h"
#include "persist/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static int open_temp(struct replace *r, struct cerr *err)
{
	if (!r->user_file)
		return safefs_openfile(r->dirfd, r->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, err);
	return fsops->openat(r->dirfd, r->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			     0666);
}

static int give_mode(struct replace *r, int fd)
{
	if (!r->user_file || !r->like)
		return 0;
	/* The owner first: chown clears the set-id bits that fchmod sets. */
	if (r->like->st_uid != geteuid() || r->like->st_gid != getegid())
		(void)!fchown(fd, r->like->st_uid, r->like->st_gid); /* only root may; best effort */
	return fsops->fchmod(fd, r->like->st_mode & 07777);
}

enum replace_step replace_file(struct replace *r, struct cerr *err)
{
	enum replace_step step = REPLACE_OPEN;
	r->fd = -1;
	r->sys_errno = 0;
	int fd = open_temp(r, err);
	if (fd < 0) {
		r->sys_errno = errno;
		/* safefs's checks may fail after the file was made. */
		if (!r->user_file)
			goto unlink;
		return step;
	}
	step = REPLACE_MODE;
	if (give_mode(r, fd) < 0)
		goto fail;
	step = REPLACE_WRITE;
	if (fs_pwrite_all(fd, r->data, r->len, 0) < 0)
		goto fail;
	step = REPLACE_SYNC;
	if (fsops->fsync(fd) < 0)
		goto fail;
	if (!r->keep_fd) {
		step = REPLACE_CLOSE;
		int c = fsops->close(fd);
		fd = -1;
		if (c < 0)
			goto fail;
	}
	step = REPLACE_CANCELED;
	if (r->cancel && atomic_load(r->cancel)) {
		errno = ECANCELED;
		goto fail;
	}
	step = REPLACE_RENAME;
	if ((r->noreplace ? fsops->rename_noreplace : fsops->rename)(r->dirfd, r->tmp, r->dirfd,
								     r->name) < 0)
		goto fail;
	r->fd = fd;
	if (fsops->fsync(r->dirfd) < 0) {
		r->sys_errno = errno;
		return REPLACE_DIRSYNC;
	}
	return REPLACE_DONE;
fail:
	r->sys_errno = errno;
	if (fd >= 0)
		fsops->close(fd);
unlink:
	/* Best effort: a temporary file left behind is the caller's repair's. */
	fsops->unlinkat(r->dirfd, r->tmp, 0);
	errno = r->sys_errno;
	return step;
}
