/* store.c — data root, session discovery and deletion to trash. */
#include "persist/store.h"
#include "base/buf.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/fsops.h"
#include "persist/lock.h"
#include "persist/safefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct store {
	char *root;
	int rootfd;
};

/* $name when it is an absolute path, else NULL: XDG_DATA_HOME and HOME
 * name a place only so (the XDG base directory rule); a relative one would
 * put the data root under whatever directory cairn happens to run in. */
static const char *absolute_env(const char *name)
{
	const char *v = getenv(name);
	return v && v[0] == '/' ? v : NULL;
}

char *store_default_root(void)
{
	const char *v = getenv("CAIRN_HOME");
	if (v && *v)
		return xstrdup(v);
	if ((v = absolute_env("XDG_DATA_HOME")))
		return xasprintf("%s/cairn", v);
	if ((v = absolute_env("HOME")))
		return xasprintf("%s/.local/share/cairn", v);
	return NULL;
}

int store_open(const char *root, bool create, struct store **out, struct cerr *err)
{
	int fd = safefs_open_root(root, create, err);
	if (fd < 0)
		return -1;
	struct store *st = xcalloc(1, sizeof *st);
	st->root = xstrdup(root);
	st->rootfd = fd;
	*out = st;
	return 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	fs_close_quiet(st->rootfd);
	free(st->root);
	free(st);
}

const char *store_root(const struct store *st)
{
	return st->root;
}

int store_root_fd(const struct store *st)
{
	return st->rootfd;
}

/* A session directory holding a log file. A symlink in its place is found
 * too, so that opening it fails closed with a clear error instead of the
 * session seeming missing. */
static bool has_log(int keyfd, const char *id)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", id, LOG_FILE);
	return fsops->fstatat(keyfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Call fn for each <key>/<id> directory in area that holds a log file. */
static int each_session(struct store *st, const char *area, bool check_log,
			int (*fn)(void *ctx, int keyfd, const char *key, const char *id), void *ctx,
			struct cerr *err)
{
	int areafd = safefs_opendir(st->rootfd, area, false, NULL, err);
	if (areafd < 0)
		return err->cls == CERR_MISSING ? (cerr_clear(err), 0) : -1;
	DIR *d = fdopendir(areafd);
	if (!d) {
		fs_close_quiet(areafd);
		return cerr_set(err, CERR_IO, errno, "cannot list '%s'", area);
	}
	int ret = 0;
	struct dirent *de;
	while (ret == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.' || !pathkey_valid_key(de->d_name))
			continue;
		int keyfd = fsops->openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		if (keyfd < 0)
			continue; /* not a directory (or vanished): not a project */
		DIR *kd = fdopendir(keyfd);
		if (!kd) {
			fs_close_quiet(keyfd);
			continue;
		}
		struct dirent *se;
		while (ret == 0 && (se = readdir(kd))) {
			if (!pathkey_valid_id(se->d_name) ||
			    (check_log && !has_log(dirfd(kd), se->d_name)))
				continue;
			ret = fn(ctx, dirfd(kd), de->d_name, se->d_name);
		}
		closedir(kd);
	}
	closedir(d);
	return ret;
}

int store_each_dir(struct store *st, const char *area,
		   int (*fn)(void *ctx, int keyfd, const char *key, const char *id), void *ctx,
		   struct cerr *err)
{
	return each_session(st, area, false, fn, ctx, err);
}

int store_open_dir(struct store *st, const struct session_ref *ref, bool trash, struct cerr *err)
{
	const char *area = trash ? STORE_TRASH : STORE_SESSIONS;
	if (!pathkey_valid_id(ref->id) || !pathkey_valid_key(ref->key))
		return cerr_set(err, CERR_USAGE, 0, "invalid session location '%s/%s'", ref->key,
				ref->id);
	/* Every level opened without following symlinks. */
	int areafd = safefs_opendir(st->rootfd, area, false, NULL, err);
	int keyfd = areafd < 0 ? -1 : safefs_opendir(areafd, ref->key, false, NULL, err);
	int dirfd = keyfd < 0 ? -1 : safefs_opendir(keyfd, ref->id, false, NULL, err);
	fs_close_quiet(keyfd);
	fs_close_quiet(areafd);
	if (dirfd < 0 && err->cls == CERR_MISSING)
		cerr_set(err, CERR_MISSING, 0, "no session '%s' in %s/%s", ref->id, area, ref->key);
	return dirfd;
}

int store_open_log(struct store *st, const struct session_ref *ref, bool trash, struct cerr *err)
{
	int dirfd = store_open_dir(st, ref, trash, err);
	int fd = dirfd < 0 ? -1 : safefs_openfile(dirfd, LOG_FILE, O_RDONLY, err);
	fs_close_quiet(dirfd);
	if (dirfd >= 0 && fd < 0 && err->cls == CERR_MISSING)
		cerr_set(err, CERR_MISSING, 0, "no session '%s' in %s/%s", ref->id,
			 trash ? STORE_TRASH : STORE_SESSIONS, ref->key);
	return fd;
}

int store_open_log_moved(struct store *st, const struct session_ref *ref, bool *trash,
			 struct cerr *err)
{
	/* A rename is atomic: at every instant the folder is in one of the
	 * two areas, and each move is a whole process (rm, restore), so a
	 * few alternations find it unless it is gone for good (purged). */
	for (int attempt = 0; attempt < 8; attempt++) {
		int fd = store_open_log(st, ref, *trash, err);
		if (fd >= 0 || err->cls != CERR_MISSING)
			return fd;
		*trash = !*trash;
	}
	return cerr_set(err, CERR_MISSING, 0, "session '%s' was removed meanwhile", ref->id);
}

struct list_ctx {
	struct session_ref *refs;
	size_t n, cap;
	const char *prefix; /* resolve: filter */
};

static int collect(void *vctx, int keyfd, const char *key, const char *id)
{
	struct list_ctx *c = vctx;
	if (c->prefix && strncmp(id, c->prefix, strlen(c->prefix)) != 0)
		return 0;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->refs = xreallocarray(c->refs, c->cap, sizeof *c->refs);
	}
	struct session_ref *r = &c->refs[c->n++];
	snprintf(r->id, sizeof r->id, "%s", id);
	snprintf(r->key, sizeof r->key, "%s", key);
	return 0;
}

int store_list(struct store *st, const char *area, struct session_ref **refs, size_t *n,
	       struct cerr *err)
{
	struct list_ctx c = {0};
	if (each_session(st, area, true, collect, &c, err) < 0) {
		free(c.refs);
		return -1;
	}
	*refs = c.refs;
	*n = c.n;
	return 0;
}

int store_resolve(struct store *st, const char *q, struct session_ref *ref, struct cerr *err)
{
	return store_resolve_in(st, STORE_SESSIONS, q, ref, err);
}

static int resolve_in(struct store *st, const char *area, const char *q, bool exact_only,
		      struct session_ref *ref, struct cerr *err);

static int cmp_ref(const void *pa, const void *pb)
{
	const struct session_ref *a = pa, *b = pb;
	int c = strcmp(a->id, b->id);
	return c ? c : strcmp(a->key, b->key);
}

/* Every project folder of area holding <id>/ with a log for this exact id:
 * one probe per project folder, never a listing of the sessions, so that
 * a command resolving each of n sessions stays linear in n. Project
 * folders are taken as each_session takes them (a symlink is not one). */
static int find_exact(struct store *st, const char *area, const char *id, struct list_ctx *c,
		      struct cerr *err)
{
	int areafd = safefs_opendir(st->rootfd, area, false, NULL, err);
	if (areafd < 0)
		return err->cls == CERR_MISSING ? (cerr_clear(err), 0) : -1;
	DIR *d = fdopendir(areafd);
	if (!d) {
		fs_close_quiet(areafd);
		return cerr_set(err, CERR_IO, errno, "cannot list '%s'", area);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !pathkey_valid_key(de->d_name))
			continue;
		if (de->d_type == DT_DIR) {
			char path[512];
			struct stat sb;
			snprintf(path, sizeof path, "%s/%s/%s", de->d_name, id, LOG_FILE);
			if (fsops->fstatat(dirfd(d), path, &sb, AT_SYMLINK_NOFOLLOW) == 0)
				collect(c, -1, de->d_name, id);
			continue;
		}
		if (de->d_type != DT_UNKNOWN)
			continue; /* a file or a symlink: not a project */
		int keyfd = fsops->openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
		if (keyfd < 0)
			continue;
		if (has_log(keyfd, id))
			collect(c, keyfd, de->d_name, id);
		fs_close_quiet(keyfd);
	}
	closedir(d);
	return 0;
}

int store_find_in(struct store *st, const char *area, const char *id, struct session_ref *ref,
		  struct cerr *err)
{
	if (!*id || strlen(id) > SESSION_ID_MAX || !pathkey_valid_id(id))
		return cerr_set(err, CERR_USAGE, 0, "'%s' is not a session id", id);
	return resolve_in(st, area, id, true, ref, err);
}

int store_resolve_in(struct store *st, const char *area, const char *q, struct session_ref *ref,
		     struct cerr *err)
{
	if (!*q || strlen(q) > SESSION_ID_MAX || !pathkey_valid_id(q))
		return cerr_set(err, CERR_USAGE, 0, "'%s' is not a session id", q);
	return resolve_in(st, area, q, false, ref, err);
}

static int resolve_in(struct store *st, const char *area, const char *q, bool exact_only,
		      struct session_ref *ref, struct cerr *err)
{
	/* An exact id wins over every id it is a prefix of, so when it is
	 * there no listing is needed. */
	struct list_ctx c = {.prefix = q};
	if (find_exact(st, area, q, &c, err) < 0 ||
	    (c.n == 0 && !exact_only && each_session(st, area, true, collect, &c, err) < 0)) {
		free(c.refs);
		return -1;
	}
	/* Sorted by id then key: an exact match sorts first, and copies of
	 * one id under several project folders are neighbours. */
	if (c.n > 1)
		qsort(c.refs, c.n, sizeof *c.refs, cmp_ref);
	size_t distinct = 0, first_n = 0; /* ids; how many refs the first has */
	for (size_t i = 0; i < c.n; i++) {
		bool next_id = i == 0 || strcmp(c.refs[i].id, c.refs[i - 1].id) != 0;
		distinct += next_id;
		first_n += distinct == 1;
	}
	bool exact = c.n && strcmp(c.refs[0].id, q) == 0;
	int ret = 0;
	struct buf b = BUF_INIT;
	if (c.n == 0) {
		ret = cerr_set(err, CERR_MISSING, 0, "no session '%s'", q);
	} else if ((exact || distinct == 1) && first_n == 1) {
		*ref = c.refs[0];
	} else if (exact || distinct == 1) {
		/* One id under two project folders is not a choice for the
		 * user but a damaged store (a copied folder): fail closed. */
		*ref = c.refs[0];
		for (size_t i = 0; i < first_n; i++)
			buf_printf(&b, "%s%s/%s/%s", i ? ", " : "", area, c.refs[i].key, c.refs[i].id);
		ret = cerr_set(err, CERR_CORRUPT, 0,
			       "session '%s' is in %zu project folders: %s ('cairn doctor' tells "
			       "which to keep)", c.refs[0].id, first_n, b.p);
	} else {
		size_t k = 0;
		for (size_t i = 0; i < c.n && k < 10; i++)
			if (i == 0 || strcmp(c.refs[i].id, c.refs[i - 1].id) != 0)
				buf_printf(&b, "%s%s", k++ ? ", " : "", c.refs[i].id);
		if (distinct > 10)
			buf_printf(&b, ", ... (%zu in all)", distinct);
		ret = cerr_set(err, CERR_USAGE, 0, "'%s' is ambiguous: %s", q, b.p);
	}
	buf_release(&b);
	free(c.refs);
	return ret;
}

int store_open_session_dir(struct store *st, const struct session_ref *ref, bool create,
			   int *keyfd, int *dirfd, struct cerr *err)
{
	*keyfd = *dirfd = -1;
	if (!pathkey_valid_id(ref->id) || !pathkey_valid_key(ref->key))
		return cerr_set(err, CERR_USAGE, 0, "invalid session location '%s/%s'", ref->key,
				ref->id);
	int areafd = safefs_opendir(st->rootfd, STORE_SESSIONS, create, NULL, err);
	if (areafd < 0)
		return err->cls == CERR_MISSING ? cerr_set(err, CERR_MISSING, 0, "no session '%s'", ref->id) : -1;
	*keyfd = safefs_opendir(areafd, ref->key, create, NULL, err);
	fs_close_quiet(areafd);
	if (*keyfd < 0)
		goto missing;
	*dirfd = safefs_opendir(*keyfd, ref->id, create, NULL, err);
	if (*dirfd < 0) {
		fs_close_quiet(*keyfd);
		*keyfd = -1;
		goto missing;
	}
	return 0;
missing:
	if (err->cls == CERR_MISSING)
		cerr_set(err, CERR_MISSING, 0, "no session '%s'", ref->id);
	return -1;
}

int store_trash(struct store *st, const struct session_ref *ref, int64_t *deleted_at_ms,
		struct cerr *err)
{
	int keyfd = -1, dirfd = -1, lockfd = -1, trashfd = -1, tkeyfd = -1, ret = -1;
	if (store_open_session_dir(st, ref, false, &keyfd, &dirfd, err) < 0)
		return -1;
	lockfd = lock_take(keyfd, ref->id, dirfd, err);
	if (lockfd < 0)
		goto out;
	trashfd = safefs_opendir(st->rootfd, STORE_TRASH, true, NULL, err);
	if (trashfd < 0)
		goto out;
	tkeyfd = safefs_opendir(trashfd, ref->key, true, NULL, err);
	if (tkeyfd < 0)
		goto out;
	if (fsops->rename_noreplace(keyfd, ref->id, tkeyfd, ref->id) < 0) {
		if (errno == EEXIST)
			cerr_set(err, CERR_CONFLICT, 0, "session '%s' is already in the trash", ref->id);
		else
			cerr_set(err, CERR_IO, errno, "cannot move session '%s' to the trash", ref->id);
		goto out;
	}
	struct stat moved;
	if (deleted_at_ms && fsops->fstat(dirfd, &moved) == 0)
		*deleted_at_ms = (int64_t)moved.st_ctim.tv_sec * 1000 + moved.st_ctim.tv_nsec / 1000000;
	if (safefs_fsync_dir(tkeyfd, "trash", err) < 0 || safefs_fsync_dir(keyfd, ref->key, err) < 0) {
		err->outcome_unknown = true; /* moved, but maybe not durably */
		goto out;
	}
	ret = 0;
out:
	lock_release(lockfd);
	fs_close_quiet(tkeyfd);
	fs_close_quiet(trashfd);
	fs_close_quiet(dirfd);
	fs_close_quiet(keyfd);
	return ret;
}

struct entries_ctx {
	struct store_entry *v;
	size_t n, cap;
	bool trash;
};

static int collect_entry(void *vctx, int keyfd, const char *key, const char *id)
{
	struct entries_ctx *c = vctx;
	char path[512];
	struct stat fst, dst;
	snprintf(path, sizeof path, "%s/%s", id, LOG_FILE);
	if (fsops->fstatat(keyfd, path, &fst, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* vanished meanwhile */
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->v = xreallocarray(c->v, c->cap, sizeof *c->v);
	}
	struct store_entry *e = &c->v[c->n++];
	memset(e, 0, sizeof *e);
	snprintf(e->ref.id, sizeof e->ref.id, "%s", id);
	snprintf(e->ref.key, sizeof e->ref.key, "%s", key);
	e->trash = c->trash;
	e->dev = fst.st_dev;
	e->ino = fst.st_ino;
	e->size = (uint64_t)fst.st_size;
	e->ctime_ns = (int64_t)fst.st_ctim.tv_sec * 1000000000 + fst.st_ctim.tv_nsec;
	if (c->trash && fsops->fstatat(keyfd, id, &dst, AT_SYMLINK_NOFOLLOW) == 0)
		e->dir_ctime_ms = (int64_t)dst.st_ctim.tv_sec * 1000 + dst.st_ctim.tv_nsec / 1000000;
	return 0;
}

int store_list_entries(struct store *st, struct store_entry **out, size_t *n, struct cerr *err)
{
	struct entries_ctx c = {0};
	if (each_session(st, STORE_SESSIONS, false, collect_entry, &c, err) < 0)
		goto fail;
	c.trash = true;
	if (each_session(st, STORE_TRASH, false, collect_entry, &c, err) < 0)
		goto fail;
	*out = c.v;
	*n = c.n;
	return 0;
fail:
	free(c.v);
	return -1;
}

int store_restore(struct store *st, const struct session_ref *ref, struct cerr *err)
{
	int trashfd = -1, tkeyfd = -1, dirfd = -1, lockfd = -1, areafd = -1, keyfd = -1, ret = -1;
	if (!pathkey_valid_id(ref->id) || !pathkey_valid_key(ref->key))
		return cerr_set(err, CERR_USAGE, 0, "invalid session '%s'", ref->id);
	trashfd = safefs_opendir(st->rootfd, STORE_TRASH, false, NULL, err);
	if (trashfd < 0)
		goto missing;
	tkeyfd = safefs_opendir(trashfd, ref->key, false, NULL, err);
	if (tkeyfd < 0)
		goto missing;
	dirfd = safefs_opendir(tkeyfd, ref->id, false, NULL, err);
	if (dirfd < 0)
		goto missing;
	lockfd = lock_take(tkeyfd, ref->id, dirfd, err);
	if (lockfd < 0)
		goto out;
	areafd = safefs_opendir(st->rootfd, STORE_SESSIONS, true, NULL, err);
	if (areafd < 0)
		goto out;
	keyfd = safefs_opendir(areafd, ref->key, true, NULL, err);
	if (keyfd < 0)
		goto out;
	if (fsops->rename_noreplace(tkeyfd, ref->id, keyfd, ref->id) < 0) {
		if (errno == EEXIST)
			cerr_set(err, CERR_CONFLICT, 0, "a live session '%s' already exists", ref->id);
		else
			cerr_set(err, CERR_IO, errno, "cannot restore session '%s'", ref->id);
		goto out;
	}
	if (safefs_fsync_dir(keyfd, ref->key, err) < 0 || safefs_fsync_dir(tkeyfd, "trash", err) < 0) {
		err->outcome_unknown = true;
		goto out;
	}
	ret = 0;
	goto out;
missing:
	if (err->cls == CERR_MISSING)
		cerr_set(err, CERR_MISSING, 0, "no session '%s' in the trash", ref->id);
out:
	lock_release(lockfd);
	fs_close_quiet(keyfd);
	fs_close_quiet(areafd);
	fs_close_quiet(dirfd);
	fs_close_quiet(tkeyfd);
	fs_close_quiet(trashfd);
	return ret;
}

int store_purge(struct store *st, const struct session_ref *ref, struct cerr *err)
{
	int trashfd = -1, tkeyfd = -1, dirfd = -1, lockfd = -1, ret = -1;
	DIR *d = NULL;
	if (!pathkey_valid_id(ref->id) || !pathkey_valid_key(ref->key))
		return cerr_set(err, CERR_USAGE, 0, "invalid session '%s'", ref->id);
	trashfd = safefs_opendir(st->rootfd, STORE_TRASH, false, NULL, err);
	tkeyfd = trashfd < 0 ? -1 : safefs_opendir(trashfd, ref->key, false, NULL, err);
	dirfd = tkeyfd < 0 ? -1 : safefs_opendir(tkeyfd, ref->id, false, NULL, err);
	if (dirfd < 0) {
		if (err->cls == CERR_MISSING)
			cerr_set(err, CERR_MISSING, 0, "no session '%s' in the trash", ref->id);
		goto out;
	}
	lockfd = lock_take(tkeyfd, ref->id, dirfd, err);
	if (lockfd < 0)
		goto out;
	/* blobs/ is the one folder inside a session's. */
	if (blob_remove_all(dirfd, err) < 0) {
		cerr_prefix(err, "session '%s'", ref->id);
		goto out;
	}
	/* Everything in the directory goes, the lock file last: a process
	 * that opens the lock meanwhile finds the directory gone when it
	 * re-checks (lock_take). */
	d = safefs_list(dirfd);
	if (!d) {
		cerr_set(err, CERR_IO, errno, "cannot list session '%s'", ref->id);
		goto out;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, LOCK_FILE) == 0)
			continue;
		if (fsops->unlinkat(dirfd, de->d_name, 0) < 0 && errno != ENOENT) {
			cerr_set(err, CERR_IO, errno, "cannot remove '%s' of session '%s'", de->d_name,
				 ref->id);
			goto out;
		}
	}
	if (fsops->unlinkat(dirfd, LOCK_FILE, 0) < 0 && errno != ENOENT) {
		cerr_set(err, CERR_IO, errno, "cannot remove the lock of session '%s'", ref->id);
		goto out;
	}
	if (fsops->unlinkat(tkeyfd, ref->id, AT_REMOVEDIR) < 0) {
		cerr_set(err, CERR_IO, errno, "cannot remove session '%s'", ref->id);
		goto out;
	}
	if (safefs_fsync_dir(tkeyfd, "trash", err) < 0) {
		err->outcome_unknown = true;
		goto out;
	}
	fsops->unlinkat(trashfd, ref->key, AT_REMOVEDIR); /* an empty project: fine if not */
	ret = 0;
out:
	if (d)
		closedir(d);
	lock_release(lockfd);
	fs_close_quiet(dirfd);
	fs_close_quiet(tkeyfd);
	fs_close_quiet(trashfd);
	return ret;
}

char *store_log_path(const struct store *st, const struct session_ref *ref, bool trash)
{
	return xasprintf("%s/%s/%s/%s/%s", store_root(st), trash ? STORE_TRASH : STORE_SESSIONS,
			 ref->key, ref->id, LOG_FILE);
}

char *store_session_of_path(const struct store *st, const char *path)
{
	char root[PATH_MAX], file[PATH_MAX];
	if (!st || !realpath(store_root(st), root) || !realpath(path, file))
		return NULL;
	/* <root>/sessions/<key>/<id>/<file>, nothing deeper */
	static const char area[] = "/" STORE_SESSIONS "/";
	size_t n = strlen(root);
	if (strncmp(file, root, n) != 0 || strncmp(file + n, area, sizeof area - 1) != 0)
		return NULL;
	const char *key = file + n + sizeof area - 1;
	const char *id = strchr(key, '/');
	const char *name = id ? strchr(id + 1, '/') : NULL;
	if (!id || id == key || !name || strchr(name + 1, '/'))
		return NULL;
	char *sid = xstrndup(id + 1, (size_t)(name - id - 1));
	if (!pathkey_valid_id(sid)) {
		free(sid);
		return NULL;
	}
	return sid;
}
