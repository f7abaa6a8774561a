/* support_faultfs.c — counting, fault-injecting fsops table with a
 * conservative power-loss model (see support_faultfs.h). Underneath it calls
 * fsops_real; the model reads back through plain system calls. */
#include "tests/unit/support_faultfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>

#include "base/xalloc.h"

/* ---- counters and faults ---- */

#define MAX_ARMED 8

struct armed {
	bool on;
	enum faultfs_op op;
	unsigned long at; /* fire when count[op] reaches this */
	int errnum;
	bool shorten;     /* pwrite: write half, then fail the next one */
};

static unsigned long counts[FF_NOPS];
static unsigned long totals[FF_NOPS]; /* never reset: faults count on these */
static struct armed armed[MAX_ARMED];
static unsigned fired;
static bool enospc_next_pwrite;
static unsigned long skip_dir_at; /* dir fsync number to lie about; 0: none */
static unsigned long dir_syncs;
static unsigned skipped;
static faultfs_sync_cb sync_cb;
static void *sync_ctx;
static faultfs_mkdir_cb mkdir_cb;
static void *mkdir_ctx;

static const char *const op_names[FF_NOPS] = {
	[FF_OPENAT] = "openat",	      [FF_CREATE] = "openat(O_CREAT)", [FF_CLOSE] = "close",
	[FF_PREAD] = "pread",	      [FF_PWRITE] = "pwrite",	       [FF_FSYNC] = "fsync",
	[FF_FDATASYNC] = "fdatasync", [FF_FTRUNCATE] = "ftruncate",    [FF_RENAME] = "rename_noreplace",
	[FF_MKDIRAT] = "mkdirat",     [FF_UNLINKAT] = "unlinkat",      [FF_FSTAT] = "fstat",
	[FF_FSTATAT] = "fstatat",     [FF_FCHMOD] = "fchmod",	       [FF_FLOCK] = "flock",
};

const char *faultfs_op_name(enum faultfs_op op)
{
	return op < FF_NOPS ? op_names[op] : "?";
}

unsigned long faultfs_count(enum faultfs_op op)
{
	return counts[op];
}

void faultfs_reset_counts(void)
{
	memset(counts, 0, sizeof counts);
}

unsigned faultfs_fired(void)
{
	return fired;
}

unsigned faultfs_skipped(void)
{
	return skipped;
}

unsigned long faultfs_dir_syncs(void)
{
	return dir_syncs;
}

void faultfs_disarm(void)
{
	memset(armed, 0, sizeof armed);
	enospc_next_pwrite = false;
	skip_dir_at = 0;
}

static void arm(enum faultfs_op op, unsigned long nth, int errnum, bool shorten)
{
	for (int i = 0; i < MAX_ARMED; i++) {
		if (armed[i].on)
			continue;
		armed[i] = (struct armed){true, op, totals[op] + nth, errnum, shorten};
		return;
	}
	fprintf(stderr, "faultfs: more than %d faults armed\n", MAX_ARMED);
	abort();
}

void faultfs_fail(enum faultfs_op op, unsigned long nth, int errnum)
{
	arm(op, nth, errnum, false);
}

void faultfs_short_write(unsigned long nth)
{
	arm(FF_PWRITE, nth, ENOSPC, true);
}

void faultfs_skip_dir_sync(unsigned long nth)
{
	skip_dir_at = dir_syncs + nth;
}

void faultfs_set_sync_hook(faultfs_sync_cb cb, void *ctx)
{
	sync_cb = cb;
	sync_ctx = ctx;
}

void faultfs_set_mkdir_hook(faultfs_mkdir_cb cb, void *ctx)
{
	mkdir_cb = cb;
	mkdir_ctx = ctx;
}

/* Count a call; return the fault armed for it, or NULL. */
static struct armed *tick(enum faultfs_op op)
{
	counts[op]++;
	totals[op]++;
	for (int i = 0; i < MAX_ARMED; i++) {
		if (armed[i].on && armed[i].op == op && armed[i].at == totals[op]) {
			armed[i].on = false;
			fired++;
			return &armed[i];
		}
	}
	return NULL;
}

/* ---- the power-loss model ---- */

struct node;
struct entry {
	char *name;
	struct node *node;
};

/* One file system object as the model knows it. A node outlives its inode
 * number: when the number is reused by a new creation the old node becomes
 * stale but stays reachable from the directory snapshots that named it. */
struct node {
	dev_t dev;
	ino_t ino;
	bool is_dir, is_reg;
	bool stale;
	char *data;            /* regular file: durable content */
	size_t len;
	struct entry *ents;    /* directory: durable entries */
	size_t n_ents;
	struct node *next;
};

static bool tracking;
static struct node *nodes;
static struct node *root_node;

static void node_clear_ents(struct node *n)
{
	for (size_t i = 0; i < n->n_ents; i++)
		free(n->ents[i].name);
	free(n->ents);
	n->ents = NULL;
	n->n_ents = 0;
}

static void model_free(void)
{
	while (nodes) {
		struct node *n = nodes;
		nodes = n->next;
		node_clear_ents(n);
		free(n->data);
		free(n);
	}
	root_node = NULL;
	tracking = false;
}

static struct node *node_new(const struct stat *st)
{
	struct node *n = xcalloc(1, sizeof *n);
	n->dev = st->st_dev;
	n->ino = st->st_ino;
	n->is_dir = S_ISDIR(st->st_mode);
	n->is_reg = S_ISREG(st->st_mode);
	n->next = nodes;
	nodes = n;
	return n;
}

static struct node *node_find(const struct stat *st)
{
	for (struct node *n = nodes; n; n = n->next)
		if (!n->stale && n->dev == st->st_dev && n->ino == st->st_ino)
			return n;
	return NULL;
}

/* The node of st; an object first seen now was never synced, so it gets no
 * content and no entries. */
static struct node *node_get(const struct stat *st)
{
	struct node *n = node_find(st);
	return n ? n : node_new(st);
}

/* A new object was created at this inode: any node using the number before
 * is a different, older object. */
static void node_created(const struct stat *st)
{
	struct node *old = node_find(st);
	if (old)
		old->stale = true;
	node_new(st);
}

/* Read the whole file open at fd (plain pread; /proc for write-only fds). */
static int read_back(int fd, const struct stat *st, char **out, size_t *len)
{
	size_t cap = (size_t)st->st_size, got = 0;
	char *p = xmalloc(cap + 1);
	int rfd = fd;
	for (;;) {
		if (got == cap) {
			cap = cap * 2 + 4096;
			p = xrealloc(p, cap + 1);
		}
		ssize_t r = pread(rfd, p + got, cap - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EBADF && rfd == fd) {
			char proc[64];
			snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
			rfd = open(proc, O_RDONLY | O_CLOEXEC);
			if (rfd >= 0)
				continue;
			rfd = fd;
		}
		if (r < 0) {
			int e = errno;
			free(p);
			if (rfd != fd)
				close(rfd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (rfd != fd)
		close(rfd);
	*out = p;
	*len = got;
	return 0;
}

/* Record the present entries of the directory open at dirfd as durable. */
static int snapshot_dir(struct node *n, int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	node_clear_ents(n);
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (n->n_ents == cap) {
			cap = cap ? cap * 2 : 16;
			n->ents = xreallocarray(n->ents, cap, sizeof *n->ents);
		}
		n->ents[n->n_ents++] = (struct entry){xstrdup(de->d_name), node_get(&st)};
	}
	closedir(d);
	return 0;
}

static int snapshot_file(struct node *n, int fd, const struct stat *st)
{
	char *p;
	size_t len;
	if (read_back(fd, st, &p, &len) < 0)
		return -1;
	free(n->data);
	n->data = p;
	n->len = len;
	return 0;
}

/* A sync of fd succeeded: make what it covers durable in the model. */
static void record_sync(int fd)
{
	struct stat st;
	if (!tracking || fstat(fd, &st) < 0)
		return;
	struct node *n = node_get(&st);
	int r = n->is_dir ? snapshot_dir(n, fd) : n->is_reg ? snapshot_file(n, fd, &st) : 0;
	if (r < 0) {
		perror("faultfs: cannot snapshot a synced object");
		abort();
	}
}

/* Take everything under the directory open at fd as durable. */
static int walk_initial(int fd, int depth)
{
	struct stat st;
	if (depth > 64 || fstat(fd, &st) < 0)
		return -1;
	struct node *n = node_get(&st);
	if (snapshot_dir(n, fd) < 0)
		return -1;
	for (size_t i = 0; i < n->n_ents; i++) {
		struct node *c = n->ents[i].node;
		if (!c->is_dir && !c->is_reg)
			continue;
		int cfd = openat(fd, n->ents[i].name,
				 (c->is_dir ? O_DIRECTORY : 0) | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			return -1;
		struct stat cst;
		int r = fstat(cfd, &cst);
		if (r == 0)
			r = c->is_dir ? walk_initial(cfd, depth + 1) : snapshot_file(c, cfd, &cst);
		close(cfd);
		if (r < 0)
			return -1;
	}
	return 0;
}

int faultfs_track(const char *root)
{
	model_free();
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	int r = fstat(fd, &st);
	if (r == 0)
		r = walk_initial(fd, 0);
	close(fd);
	if (r < 0) {
		model_free();
		return -1;
	}
	root_node = node_find(&st);
	tracking = true;
	return 0;
}

static int write_file(const char *path, const char *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	return close(fd);
}

static int materialize(const struct node *n, const char *path, int depth)
{
	if (depth > 64) {
		errno = ELOOP;
		return -1;
	}
	if (mkdir(path, 0700) < 0 || chmod(path, 0700) < 0)
		return -1;
	for (size_t i = 0; i < n->n_ents; i++) {
		const struct node *c = n->ents[i].node;
		char *sub = xasprintf("%s/%s", path, n->ents[i].name);
		int r = 0;
		if (c->is_dir)
			r = materialize(c, sub, depth + 1);
		else if (c->is_reg)
			r = write_file(sub, c->data ? c->data : "", c->len);
		free(sub);
		if (r < 0)
			return -1;
	}
	return 0;
}

int faultfs_crash_copy(const char *root, const char *dest)
{
	struct stat st;
	if (!tracking || stat(root, &st) < 0) {
		errno = tracking ? errno : EINVAL;
		return -1;
	}
	const struct node *n = node_find(&st);
	if (!n || n != root_node) {
		errno = EINVAL;
		return -1;
	}
	return materialize(n, dest, 0);
}

/* ---- the table ---- */

static int ff_openat_(int dirfd, const char *path, int flags, mode_t mode)
{
	bool creat = (flags & O_CREAT) != 0;
	struct armed *a = tick(creat ? FF_CREATE : FF_OPENAT);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	struct stat before;
	bool existed = !creat || fstatat(dirfd, path, &before, AT_SYMLINK_NOFOLLOW) == 0;
	int fd = fsops_real.openat(dirfd, path, flags, mode);
	struct stat st;
	if (fd >= 0 && tracking && !existed && fstat(fd, &st) == 0)
		node_created(&st);
	return fd;
}

static int ff_close_(int fd)
{
	struct armed *a = tick(FF_CLOSE);
	if (a) {
		/* close(2) releases the fd even when it reports an error. */
		fsops_real.close(fd);
		errno = a->errnum;
		return -1;
	}
	return fsops_real.close(fd);
}

static ssize_t ff_pread_(int fd, void *buf, size_t n, off_t off)
{
	struct armed *a = tick(FF_PREAD);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.pread(fd, buf, n, off);
}

static ssize_t ff_pwrite_(int fd, const void *buf, size_t n, off_t off)
{
	struct armed *a = tick(FF_PWRITE);
	if (enospc_next_pwrite) {
		enospc_next_pwrite = false;
		errno = ENOSPC;
		return -1;
	}
	if (a && a->shorten && n > 1) {
		enospc_next_pwrite = true;
		return fsops_real.pwrite(fd, buf, n / 2, off);
	}
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.pwrite(fd, buf, n, off);
}

static bool is_dir_fd(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

static int ff_sync(enum faultfs_op op, int fd)
{
	struct armed *a = tick(op);
	if (sync_cb)
		sync_cb(sync_ctx, op, false);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	if (is_dir_fd(fd) && ++dir_syncs == skip_dir_at) {
		skipped++;
		return 0;
	}
	int r = op == FF_FSYNC ? fsops_real.fsync(fd) : fsops_real.fdatasync(fd);
	if (r == 0) {
		record_sync(fd);
		if (sync_cb)
			sync_cb(sync_ctx, op, true);
	}
	return r;
}

static int ff_fsync_(int fd)
{
	return ff_sync(FF_FSYNC, fd);
}

static int ff_fdatasync_(int fd)
{
	return ff_sync(FF_FDATASYNC, fd);
}

static int ff_ftruncate_(int fd, off_t len)
{
	struct armed *a = tick(FF_FTRUNCATE);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.ftruncate(fd, len);
}

static int ff_rename_noreplace_(int od, const char *op, int nd, const char *np)
{
	struct armed *a = tick(FF_RENAME);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.rename_noreplace(od, op, nd, np);
}

/* Counted with rename_noreplace (FF_RENAME): a fault armed for the next
 * rename fails whichever of the two comes. */
static int ff_rename_(int od, const char *op, int nd, const char *np)
{
	struct armed *a = tick(FF_RENAME);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.rename(od, op, nd, np);
}

static int ff_mkdirat_(int dirfd, const char *path, mode_t mode)
{
	struct armed *a = tick(FF_MKDIRAT);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	int r = fsops_real.mkdirat(dirfd, path, mode);
	struct stat st;
	if (r == 0 && tracking && fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		node_created(&st);
	if (r == 0 && mkdir_cb)
		mkdir_cb(mkdir_ctx, dirfd, path);
	return r;
}

static int ff_unlinkat_(int dirfd, const char *path, int flags)
{
	struct armed *a = tick(FF_UNLINKAT);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.unlinkat(dirfd, path, flags);
}

static int ff_fstat_(int fd, struct stat *st)
{
	struct armed *a = tick(FF_FSTAT);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.fstat(fd, st);
}

static int ff_fstatat_(int dirfd, const char *path, struct stat *st, int flags)
{
	struct armed *a = tick(FF_FSTATAT);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.fstatat(dirfd, path, st, flags);
}

static int ff_fchmod_(int fd, mode_t mode)
{
	struct armed *a = tick(FF_FCHMOD);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.fchmod(fd, mode);
}

static int ff_flock_(int fd, int op)
{
	struct armed *a = tick(FF_FLOCK);
	if (a) {
		errno = a->errnum;
		return -1;
	}
	return fsops_real.flock(fd, op);
}

/* Threads (the FIFO's helpers) may call in at once: every call and the
 * model behind it go through one lock, and so run one at a time. */
static pthread_mutex_t ff_mu = PTHREAD_MUTEX_INITIALIZER;

/* ff_NAME: ff_NAME_ (ARGS) under the lock, errno kept. */
#define LOCKED(type, name, args, ...)                 \
	static type ff_##name(__VA_ARGS__)            \
	{                                             \
		pthread_mutex_lock(&ff_mu);           \
		type r = ff_##name##_ args;           \
		int e = errno;                        \
		pthread_mutex_unlock(&ff_mu);         \
		errno = e;                            \
		return r;                             \
	}

LOCKED(int, openat, (dirfd, path, flags, mode), int dirfd, const char *path, int flags, mode_t mode)
LOCKED(int, close, (fd), int fd)
LOCKED(ssize_t, pread, (fd, buf, n, off), int fd, void *buf, size_t n, off_t off)
LOCKED(ssize_t, pwrite, (fd, buf, n, off), int fd, const void *buf, size_t n, off_t off)
LOCKED(int, fsync, (fd), int fd)
LOCKED(int, fdatasync, (fd), int fd)
LOCKED(int, ftruncate, (fd, len), int fd, off_t len)
LOCKED(int, rename_noreplace, (od, op, nd, np), int od, const char *op, int nd, const char *np)
LOCKED(int, rename, (od, op, nd, np), int od, const char *op, int nd, const char *np)
LOCKED(int, mkdirat, (dirfd, path, mode), int dirfd, const char *path, mode_t mode)
LOCKED(int, unlinkat, (dirfd, path, flags), int dirfd, const char *path, int flags)
LOCKED(int, fstat, (fd, st), int fd, struct stat *st)
LOCKED(int, fstatat, (dirfd, path, st, flags), int dirfd, const char *path, struct stat *st, int flags)
LOCKED(int, fchmod, (fd, mode), int fd, mode_t mode)
LOCKED(int, flock, (fd, op), int fd, int op)

const struct fsops faultfs_ops = {
	.openat = ff_openat,
	.close = ff_close,
	.pread = ff_pread,
	.pwrite = ff_pwrite,
	.fsync = ff_fsync,
	.fdatasync = ff_fdatasync,
	.ftruncate = ff_ftruncate,
	.rename_noreplace = ff_rename_noreplace,
	.rename = ff_rename,
	.mkdirat = ff_mkdirat,
	.unlinkat = ff_unlinkat,
	.fstat = ff_fstat,
	.fstatat = ff_fstatat,
	.fchmod = ff_fchmod,
	.flock = ff_flock,
};

void faultfs_install(void)
{
	model_free();
	faultfs_reset_counts();
	faultfs_disarm();
	memset(totals, 0, sizeof totals);
	fired = 0;
	skipped = 0;
	dir_syncs = 0;
	sync_cb = NULL;
	sync_ctx = NULL;
	mkdir_cb = NULL;
	mkdir_ctx = NULL;
	fsops = &faultfs_ops;
}

void faultfs_uninstall(void)
{
	fsops = &fsops_real;
	faultfs_disarm();
	sync_cb = NULL;
	sync_ctx = NULL;
	mkdir_cb = NULL;
	mkdir_ctx = NULL;
	model_free();
}
