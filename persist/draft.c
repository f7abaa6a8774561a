/* draft.c — per-project drafts: staged, synced, renamed over, directory
 * synced (see draft.h). */
#include "persist/draft.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/pathkey.h"
#include "persist/replace.h"
#include "persist/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DRAFT_STAGING_SUFFIX "+staging"

/* Remove name under dfd if it is there; a directory or anything that
 * cannot go fails (it would shadow the draft's own name). */
static int remove_entry(int dfd, const char *name, struct cerr *err)
{
	if (fsops->unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno == EISDIR || errno == EPERM)
		return cerr_set(err, CERR_CORRUPT, 0, "'%s/%s' is not a regular file", DRAFT_DIR,
				name);
	return cerr_set(err, CERR_IO, errno, "cannot remove '%s/%s'", DRAFT_DIR, name);
}

/* 1 when name is a regular file of ours, 0 when it does not exist; a
 * symlink or anything else fails closed. */
static int check_target(int dfd, const char *name, struct cerr *err)
{
	struct stat sb;
	if (fsops->fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return cerr_set(err, CERR_IO, errno, "cannot stat '%s/%s'", DRAFT_DIR, name);
	}
	if (S_ISLNK(sb.st_mode))
		return cerr_set(err, CERR_CORRUPT, 0, "'%s/%s' is a symlink", DRAFT_DIR, name);
	if (!S_ISREG(sb.st_mode))
		return cerr_set(err, CERR_CORRUPT, 0, "'%s/%s' is not a regular file", DRAFT_DIR,
				name);
	if (sb.st_uid != geteuid())
		return cerr_set(err, CERR_CORRUPT, 0, "'%s/%s' is not owned by us", DRAFT_DIR, name);
	return 1;
}

int draft_save(struct store *st, const char *cwd, const char *text, struct cerr *err)
{
	size_t len = strlen(text);
	size_t bad;
	if (len > DRAFT_MAX)
		return cerr_set(err, CERR_USAGE, 0,
				"draft is %zu bytes; the limit is DRAFT_MAX, %u bytes (one event line)", len,
				(unsigned)DRAFT_MAX);
	if (!utf8_valid(text, len, &bad))
		return cerr_set(err, CERR_USAGE, 0, "draft is not valid UTF-8 (byte %zu)", bad);
	int dfd = safefs_opendir(store_root_fd(st), DRAFT_DIR, true, NULL, err);
	if (dfd < 0)
		return -1;
	char *key = pathkey_project(cwd);
	char *stage = xasprintf("%s%s", key, DRAFT_STAGING_SUFFIX);
	int r = -1;
	/* A staging file left by a crash goes first. */
	if (remove_entry(dfd, stage, err) < 0)
		goto out;
	int have = check_target(dfd, key, err);
	if (have < 0)
		goto out;
	if (len == 0) {
		if (have && fsops->unlinkat(dfd, key, 0) < 0) {
			cerr_set(err, CERR_IO, errno, "cannot remove '%s/%s'", DRAFT_DIR, key);
			goto out;
		}
	} else {
		/* On failure before the rename the old draft was never touched
		 * and the half-made staging file is gone (or the next save
		 * removes it). */
		struct replace rp = {.dirfd = dfd, .tmp = stage, .name = key, .data = text, .len = len};
		switch (replace_file(&rp, err)) {
		case REPLACE_DONE:
			r = 0;
			goto out;
		case REPLACE_OPEN:
			goto out; /* safefs's classified error */
		case REPLACE_WRITE:
			cerr_set(err, CERR_IO, rp.sys_errno, "cannot write '%s/%s'", DRAFT_DIR, stage);
			goto out;
		case REPLACE_SYNC:
			cerr_set(err, CERR_IO, rp.sys_errno, "cannot sync '%s/%s'", DRAFT_DIR, stage);
			goto out;
		case REPLACE_CLOSE:
			cerr_set(err, CERR_IO, rp.sys_errno, "cannot close '%s/%s'", DRAFT_DIR, stage);
			goto out;
		case REPLACE_DIRSYNC:
			cerr_set(err, CERR_IO, rp.sys_errno, "cannot sync directory '%s'", DRAFT_DIR);
			goto unknown;
		default: /* rename */
			cerr_set(err, CERR_IO, rp.sys_errno, "cannot replace '%s/%s'", DRAFT_DIR, key);
			goto out;
		}
	}
	if (have && safefs_fsync_dir(dfd, DRAFT_DIR, err) < 0)
		goto unknown;
	r = 0;
	goto out;
unknown:
	/* Renamed or removed, not durably: after a power loss the old
	 * draft or the new state may be there. */
	err->outcome_unknown = true;
out:
	free(stage);
	free(key);
	fs_close_quiet(dfd);
	return r;
}

int draft_read(struct store *st, const char *cwd, char **text, struct cerr *err)
{
	*text = NULL;
	struct cerr e = {0};
	int dfd = safefs_opendir(store_root_fd(st), DRAFT_DIR, false, NULL, &e);
	if (dfd < 0) {
		if (e.cls != CERR_MISSING) {
			*err = e;
			return -1;
		}
		*text = xstrdup("");
		return 0;
	}
	char *key = pathkey_project(cwd);
	int r = -1;
	char *buf = NULL;
	int fd = safefs_openfile(dfd, key, O_RDONLY, &e);
	if (fd < 0) {
		if (e.cls == CERR_MISSING) {
			*text = xstrdup("");
			r = 0;
		} else {
			*err = e;
		}
		goto out;
	}
	struct stat sb;
	if (fsops->fstat(fd, &sb) < 0) {
		cerr_set(err, CERR_IO, errno, "cannot stat '%s/%s'", DRAFT_DIR, key);
		goto close;
	}
	if (sb.st_size > (off_t)DRAFT_MAX) {
		cerr_set(err, CERR_CORRUPT, 0, "'%s/%s' is over the draft limit of %u bytes",
			 DRAFT_DIR, key, (unsigned)DRAFT_MAX);
		goto close;
	}
	size_t n = (size_t)sb.st_size;
	buf = xmalloc(n + 1);
	ssize_t got = fs_pread_all(fd, buf, n, 0);
	if (got < 0) {
		cerr_set(err, CERR_IO, errno, "cannot read '%s/%s'", DRAFT_DIR, key);
		goto close;
	}
	buf[got] = '\0';
	size_t bad;
	if (memchr(buf, '\0', (size_t)got) || !utf8_valid(buf, (size_t)got, &bad)) {
		cerr_set(err, CERR_CORRUPT, 0, "'%s/%s' is not UTF-8 text", DRAFT_DIR, key);
		goto close;
	}
	*text = buf;
	buf = NULL;
	r = 0;
close:
	fs_close_quiet(fd);
out:
	free(buf);
	free(key);
	fs_close_quiet(dfd);
	return r;
}
