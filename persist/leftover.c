/* leftover.c — finding and removing what interrupted creations left. */
#include "persist/leftover.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/fsops.h"
#include "persist/lock.h"
#include "persist/safefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool leftover_is_staging(const char *name)
{
	static const char prefix[] = "." LOG_FILE ".";
	size_t n = strlen(name);
	return n > sizeof prefix + 3 && strncmp(name, prefix, sizeof prefix - 1) == 0 &&
	       strcmp(name + n - 4, ".tmp") == 0;
}

/* What one session folder holds. */
struct contents {
	bool log, foreign;
	bool blobs; /* a blobs/ folder: without a log, no event names them */
	size_t staging;
	uint64_t staging_bytes;
};

/* Read dirfd's entries (from the start: safefs_list; an earlier listing
 * left dirfd's position at the end, where the folder read as empty). */
static int read_contents(int dirfd, struct contents *c)
{
	memset(c, 0, sizeof *c);
	DIR *d = safefs_list(dirfd);
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, LOCK_FILE) == 0)
			continue;
		if (strcmp(de->d_name, LOG_FILE) == 0) {
			c->log = true;
		} else if (strcmp(de->d_name, BLOB_DIR) == 0) {
			c->blobs = true;
		} else if (leftover_is_staging(de->d_name)) {
			c->staging++;
			if (fsops->fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				c->staging_bytes += (uint64_t)st.st_size;
		} else {
			c->foreign = true;
		}
	}
	closedir(d);
	return 0;
}

size_t leftover_remove_staging(int dirfd)
{
	DIR *d = safefs_list(dirfd);
	size_t n = 0;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (leftover_is_staging(de->d_name) && fsops->unlinkat(dirfd, de->d_name, 0) == 0)
			n++;
	closedir(d);
	return n;
}

struct list_ctx {
	struct leftover *v;
	size_t n, cap;
	bool trash;
};

static int collect(void *vctx, int keyfd, const char *key, const char *id)
{
	struct list_ctx *lc = vctx;
	int dirfd = fsops->openat(keyfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (dirfd < 0)
		return 0; /* vanished, or not a folder: not a creation's leftover */
	struct contents c;
	int r = read_contents(dirfd, &c);
	fs_close_quiet(dirfd);
	if (r < 0 || (c.log && !c.staging))
		return 0;
	if (lc->n == lc->cap)
		lc->v = xreallocarray(lc->v, lc->cap = lc->cap ? lc->cap * 2 : 16, sizeof *lc->v);
	struct leftover *l = &lc->v[lc->n++];
	memset(l, 0, sizeof *l);
	snprintf(l->ref.id, sizeof l->ref.id, "%s", id);
	snprintf(l->ref.key, sizeof l->ref.key, "%s", key);
	l->trash = lc->trash;
	l->no_log = !c.log;
	l->foreign = c.foreign;
	l->staging = c.staging;
	l->staging_bytes = c.staging_bytes;
	return 0;
}

int leftover_list(struct store *st, struct leftover **out, size_t *n, struct cerr *err)
{
	struct list_ctx lc = {0};
	if (store_each_dir(st, STORE_SESSIONS, collect, &lc, err) < 0)
		goto fail;
	lc.trash = true;
	if (store_each_dir(st, STORE_TRASH, collect, &lc, err) < 0)
		goto fail;
	*out = lc.v;
	*n = lc.n;
	return 0;
fail:
	free(lc.v);
	return -1;
}

int leftover_remove(struct store *st, const struct leftover *l, bool *removed_dir,
		    struct cerr *err)
{
	int areafd = -1, keyfd = -1, dirfd = -1, lockfd = -1, ret = -1;
	if (removed_dir)
		*removed_dir = false;
	areafd = safefs_opendir(store_root_fd(st), l->trash ? STORE_TRASH : STORE_SESSIONS, false,
				NULL, err);
	keyfd = areafd < 0 ? -1 : safefs_opendir(areafd, l->ref.key, false, NULL, err);
	dirfd = keyfd < 0 ? -1 : safefs_opendir(keyfd, l->ref.id, false, NULL, err);
	if (dirfd >= 0)
		lockfd = lock_take(keyfd, l->ref.id, dirfd, err);
	if (lockfd < 0) {
		if (err->cls == CERR_MISSING)
			ret = 0; /* gone meanwhile: nothing left to remove */
		else if (err->cls == CERR_LOCKED)
			cerr_set(err, CERR_LOCKED, 0,
				 "'%s/%s/%s' is in use by a writer: left alone",
				 l->trash ? STORE_TRASH : STORE_SESSIONS, l->ref.key, l->ref.id);
		goto out;
	}
	/* We hold the lock: no one publishes here now (see leftover.h). */
	leftover_remove_staging(dirfd);
	struct contents c;
	if (read_contents(dirfd, &c) < 0) {
		cerr_set(err, CERR_IO, errno, "cannot list '%s'", l->ref.id);
		goto out;
	}
	if (!c.log && !c.staging && !c.foreign) {
		/* Blobs of a creation that never published its log: only a
		 * lock holder writes blobs (blob.h), and no event names them. */
		if (c.blobs && blob_remove_all(dirfd, err) < 0)
			goto out;
		/* The lock file last, the folder before the lock is released.
		 * Nothing here needs a sync: a crash only brings the garbage
		 * back, and the next run removes it again. */
		if (fsops->unlinkat(dirfd, LOCK_FILE, 0) < 0 && errno != ENOENT) {
			cerr_set(err, CERR_IO, errno, "cannot remove the lock of '%s'", l->ref.id);
			goto out;
		}
		if (fsops->unlinkat(keyfd, l->ref.id, AT_REMOVEDIR) == 0) {
			if (removed_dir)
				*removed_dir = true;
		} else if (errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT) {
			cerr_set(err, CERR_IO, errno, "cannot remove folder '%s'", l->ref.id);
			goto out;
		} /* else a creator came in meanwhile: the folder is theirs now */
	}
	ret = 0;
out:
	lock_release(lockfd);
	fs_close_quiet(dirfd);
	fs_close_quiet(keyfd);
	fs_close_quiet(areafd);
	return ret;
}
