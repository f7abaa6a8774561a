/* test_store.c — the data root and session discovery (persist/store.h),
 * owner-only no-follow file helpers (persist/safefs.h), and the modes,
 * owners and file types the store insists on, with real files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "persist/log.h"
#include "persist/safefs.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

struct fx {
	char dir[64];
	char root[128];
	struct store *st;
	mode_t umask;
};

/* A path under the fixture dir, in one of a few rotating buffers. */
#define P(f, ...) path_in((f)->dir, __VA_ARGS__)

static char *saved_env[3];
static const char *const env_names[3] = {"CAIRN_HOME", "XDG_DATA_HOME", "HOME"};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	f->umask = umask(022);
	if (tmp_root("cairn-test-store", f->dir, sizeof f->dir, f->root, sizeof f->root) < 0)
		return -1;
	struct cerr err;
	if (store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(env_names[i]);
		saved_env[i] = v ? strdup(v) : NULL;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	umask(f->umask);
	for (int i = 0; i < 3; i++) {
		if (saved_env[i])
			setenv(env_names[i], saved_env[i], 1);
		else
			unsetenv(env_names[i]);
		free(saved_env[i]);
		saved_env[i] = NULL;
	}
	store_close(f->st);
	rm_rf(f->dir);
	free(f);
	return 0;
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
}

/* Permission bits; -1 when the path is missing. */
static int mode_of(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* A published session with one user/message; returns 0 or the class. */
static int mk(struct store *st, const char *id, const char *cwd)
{
	struct log *lg;
	struct cerr err;
	if (log_create(st, id, cwd, NULL, &lg, &err) < 0)
		return err.cls;
	cJSON *d = cJSON_Parse("{\"text\":\"x\"}");
	struct log_event ev = {.type = "user/message", .data = d};
	int r = log_append(lg, 1, &ev, 1, NULL, &err);
	cJSON_Delete(d);
	log_close(lg);
	return r < 0 ? (int)err.cls : 0;
}

static void mk_ok(struct store *st, const char *id, const char *cwd)
{
	assert_int_equal(mk(st, id, cwd), 0);
}

/* ---- the root ---- */

static void test_default_root_precedence(void **state)
{
	(void)state;
	setenv("CAIRN_HOME", "/c/home", 1);
	setenv("XDG_DATA_HOME", "/x/data", 1);
	setenv("HOME", "/h/me", 1);
	char *r = store_default_root();
	assert_string_equal(r, "/c/home");
	free(r);
	setenv("CAIRN_HOME", "", 1); /* empty counts as unset */
	r = store_default_root();
	assert_string_equal(r, "/x/data/cairn");
	free(r);
	unsetenv("CAIRN_HOME");
	r = store_default_root();
	assert_string_equal(r, "/x/data/cairn");
	free(r);
	unsetenv("XDG_DATA_HOME");
	r = store_default_root();
	assert_string_equal(r, "/h/me/.local/share/cairn");
	free(r);
	setenv("XDG_DATA_HOME", "", 1);
	r = store_default_root();
	assert_string_equal(r, "/h/me/.local/share/cairn");
	free(r);
	unsetenv("HOME");
	assert_null(store_default_root());
	setenv("CAIRN_HOME", "/only", 1);
	r = store_default_root();
	assert_string_equal(r, "/only");
	free(r);
}

static void test_store_open_makes_or_refuses_a_root_and_tightens_it(void **state)
{
	struct fx *f = *state;
	struct store *st = NULL;
	struct cerr err;
	assert_string_equal(store_root(f->st), f->root);
	struct stat a, b;
	assert_int_equal(fstat(store_root_fd(f->st), &a), 0);
	assert_int_equal(stat(f->root, &b), 0);
	assert_true(S_ISDIR(a.st_mode));
	assert_int_equal(a.st_ino, b.st_ino);
	FAILS(store_open(P(f, "nope"), false, &st, &err), CERR_MISSING);
	assert_false(exists(P(f, "nope")));
	FAILS(store_open("", true, &st, &err), CERR_USAGE);
	touch(P(f, "afile"));
	FAILS(store_open(P(f, "afile"), true, &st, &err), CERR_IO);
	FAILS(store_open(P(f, "afile/sub"), true, &st, &err), CERR_IO);
	assert_null(st);
	/* an existing root with loose permissions is tightened */
	assert_int_equal(mkdir(P(f, "loose"), 0755), 0);
	assert_int_equal(store_open(P(f, "loose"), false, &st, &err), 0);
	assert_int_equal(mode_of(P(f, "loose")), 0700);
	store_close(st);
	store_close(NULL);
}

/* ---- modes whatever the umask ---- */

static void check_modes(struct fx *f, mode_t mask)
{
	char base[64];
	snprintf(base, sizeof base, "u%03o", (unsigned)mask);
	umask(mask);
	struct store *st;
	struct cerr err;
	assert_int_equal(store_open(P(f, "%s/a/root", base), true, &st, &err), 0);
	mk_ok(st, "perm", "/p/q");
	struct session_ref ref;
	assert_int_equal(store_resolve(st, "perm", &ref, &err), 0);
	assert_int_equal(mode_of(P(f, "%s/a/root/sessions/-p-q/perm/session.jsonl.zst", base)), 0600);
	assert_int_equal(mode_of(P(f, "%s/a/root/sessions/-p-q/perm/session.lock", base)), 0600);
	assert_int_equal(store_trash(st, &ref, NULL, &err), 0);
	umask(022);
	static const char *const dirs[] = {
		"", "/a", "/a/root", "/a/root/sessions", "/a/root/sessions/-p-q",
		"/a/root/trash", "/a/root/trash/-p-q", "/a/root/trash/-p-q/perm"};
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
		const char *p = P(f, "%s%s", base, dirs[i]);
		if (mode_of(p) != 0700)
			fail_msg("umask %03o: %s has mode %03o", (unsigned)mask, p, mode_of(p));
	}
	assert_int_equal(mode_of(P(f, "%s/a/root/trash/-p-q/perm/session.jsonl.zst", base)), 0600);
	assert_int_equal(mode_of(P(f, "%s/a/root/trash/-p-q/perm/session.lock", base)), 0600);
	store_close(st);
}

static void test_store_files_get_their_modes_under_any_umask(void **state)
{
	check_modes(*state, 0);
	check_modes(*state, 077);
	check_modes(*state, 0777);
}

/* The same as an ordinary user (root bypasses permission checks, which
 * hides a directory created unreadable by the umask). */
static void test_modes_any_umask_unprivileged(void **state)
{
	struct fx *f = *state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(chown(f->dir, 12345, 12345), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(12345) < 0 || setuid(12345) < 0)
			_exit(100);
		static const mode_t masks[] = {0, 077, 0777};
		for (int i = 0; i < 3; i++) {
			struct store *st;
			struct cerr err;
			char root[256];
			snprintf(root, sizeof root, "%s/n%d/a/root", f->dir, i);
			umask(masks[i]);
			if (store_open(root, true, &st, &err) < 0) {
				fprintf(stderr, "umask %03o: %s\n", (unsigned)masks[i], err.msg);
				_exit(10 + i);
			}
			int r = mk(st, "perm", "/p");
			if (r) {
				fprintf(stderr, "umask %03o: append failed with class %d\n",
					(unsigned)masks[i], r);
				_exit(20 + i);
			}
			store_close(st);
		}
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mode_of(P(f, "n%d", i)), 0700);
		assert_int_equal(mode_of(P(f, "n%d/a/root/sessions/-p/perm", i)), 0700);
		assert_int_equal(mode_of(P(f, "n%d/a/root/sessions/-p/perm/session.jsonl.zst", i)), 0600);
	}
}

/* ---- owners and file types ---- */

static void expect_refused(struct fx *f, const char *id)
{
	struct log *lg = NULL;
	struct cerr err;
	FAILS(log_open(f->st, id, &lg, &err), CERR_CORRUPT);
	assert_null(lg);
}

static void expect_opens(struct fx *f, const char *id)
{
	struct log *lg;
	struct cerr err;
	if (log_open(f->st, id, &lg, &err) < 0)
		fail_msg("log_open '%s': %s", id, err.msg);
	log_close(lg);
}

static void test_files_of_another_owner_are_refused(void **state)
{
	struct fx *f = *state;
	if (geteuid() != 0)
		skip();
	mk_ok(f->st, "own", NULL);
	static const char *const parts[] = {
		"root/sessions/_no-cwd/own/session.jsonl.zst", "root/sessions/_no-cwd/own/session.lock",
		"root/sessions/_no-cwd/own", "root/sessions/_no-cwd", "root/sessions"};
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
		const char *p = P(f, "%s", parts[i]);
		int mode = mode_of(p);
		assert_int_equal(chown(p, 12345, 12345), 0);
		struct log *lg;
		struct cerr err;
		assert_int_equal(log_open(f->st, "own", &lg, &err), -1);
		/* One class wherever a session file should be: corrupt. */
		if (err.cls != CERR_CORRUPT || !strstr(err.msg, "12345"))
			fail_msg("%s owned by 12345: class %d, %s", parts[i], err.cls, err.msg);
		struct stat st;
		assert_int_equal(lstat(p, &st), 0);
		assert_int_equal(st.st_uid, 12345);
		assert_int_equal(st.st_mode & 07777, mode);
		if (i == 0) {
			FAILS(log_open_path(p, &lg, &err), CERR_CORRUPT);
		}
		assert_int_equal(chown(p, 0, 0), 0);
		expect_opens(f, "own");
	}
	/* the data root itself: configuration, an io error */
	assert_int_equal(chown(f->root, 12345, 12345), 0);
	struct store *st;
	struct cerr err;
	FAILS(store_open(f->root, false, &st, &err), CERR_IO);
}

static void test_symlinks_in_a_session_are_refused(void **state)
{
	struct fx *f = *state;
	mk_ok(f->st, "real", NULL);
	size_t n;
	uint8_t *before = slurp(P(f, "root/sessions/_no-cwd/real/session.jsonl.zst"), &n);
	struct log *lg = NULL;
	struct cerr err;
	/* the log file is a symlink */
	const char *link = P(f, "root/sessions/_no-cwd/linkfile/session.jsonl.zst");
	assert_int_equal(mkdir(P(f, "root/sessions/_no-cwd/linkfile"), 0700), 0);
	assert_int_equal(symlink(P(f, "root/sessions/_no-cwd/real/session.jsonl.zst"), link), 0);
	FAILS(log_open(f->st, "linkfile", &lg, &err), CERR_CORRUPT);
	FAILS(log_open_path(link, &lg, &err), CERR_CORRUPT);
	/* the session directory is a symlink: refused before taking its lock */
	assert_int_equal(rename(P(f, "root/sessions/_no-cwd/real"), P(f, "realdir")), 0);
	assert_int_equal(unlink(P(f, "realdir/session.lock")), 0);
	assert_int_equal(symlink(P(f, "realdir"), P(f, "root/sessions/_no-cwd/real")), 0);
	FAILS(log_open(f->st, "real", &lg, &err), CERR_CORRUPT);
	assert_false(exists(P(f, "realdir/session.lock")));
	/* the project key directory is a symlink: not even found */
	assert_int_equal(mkdir(P(f, "keydir"), 0700), 0);
	assert_int_equal(rename(P(f, "realdir"), P(f, "keydir/real2")), 0);
	assert_int_equal(symlink(P(f, "keydir"), P(f, "root/sessions/-k")), 0);
	FAILS(log_open(f->st, "real2", &lg, &err), CERR_MISSING);
	assert_null(lg);
	size_t m;
	uint8_t *after = slurp(P(f, "keydir/real2/session.jsonl.zst"), &m);
	assert_int_equal(m, n);
	assert_memory_equal(after, before, n);
	free(after);
	free(before);
}

static void test_a_fifo_in_place_of_a_log_is_refused(void **state)
{
	struct fx *f = *state;
	alarm(20); /* a FIFO opened the wrong way would hang */
	const char *log = P(f, "root/sessions/_no-cwd/ff/session.jsonl.zst");
	mk_ok(f->st, "ff", NULL);
	assert_int_equal(unlink(log), 0);
	assert_int_equal(mkfifo(log, 0600), 0);
	expect_refused(f, "ff");
	struct log *lg;
	struct cerr err;
	FAILS(log_open_path(log, &lg, &err), CERR_CORRUPT);
	assert_int_equal(unlink(log), 0);
	assert_int_equal(mkdir(log, 0700), 0);
	expect_refused(f, "ff");
	FAILS(log_open_path(log, &lg, &err), CERR_CORRUPT);
	assert_true(exists(P(f, "root/sessions/_no-cwd/ff/session.jsonl.zst/.")));
	/* where the lock belongs */
	mk_ok(f->st, "fl", NULL);
	const char *lock = P(f, "root/sessions/_no-cwd/fl/session.lock");
	assert_int_equal(unlink(lock), 0);
	assert_int_equal(mkfifo(lock, 0600), 0);
	expect_refused(f, "fl");
	assert_int_equal(unlink(lock), 0);
	assert_int_equal(mkdir(lock, 0700), 0);
	expect_refused(f, "fl");
	assert_int_equal(rmdir(lock), 0);
	expect_opens(f, "fl");
	/* a file where the session directory belongs: not a session */
	touch(P(f, "root/sessions/_no-cwd/plain"));
	FAILS(log_open(f->st, "plain", &lg, &err), CERR_MISSING);
	alarm(0);
}

static void test_loose_modes_are_tightened_on_open(void **state)
{
	struct fx *f = *state;
	mk_ok(f->st, "lm", NULL);
	const char *d = P(f, "root/sessions/_no-cwd/lm");
	const char *log = P(f, "root/sessions/_no-cwd/lm/session.jsonl.zst");
	const char *lock = P(f, "root/sessions/_no-cwd/lm/session.lock");
	assert_int_equal(chmod(d, 0755), 0);
	assert_int_equal(chmod(log, 0644), 0);
	assert_int_equal(chmod(lock, 0666), 0);
	expect_opens(f, "lm");
	assert_int_equal(mode_of(d), 0700);
	assert_int_equal(mode_of(log), 0600);
	assert_int_equal(mode_of(lock), 0600);
}

/* ---- safefs ---- */

static void test_safefs_refuses_links_and_wrong_types(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	umask(0);
	int root = store_root_fd(f->st);
	bool created = true;
	FAILS(safefs_opendir(root, "d", false, &created, &err), CERR_MISSING);
	assert_false(created);
	int d = safefs_opendir(root, "d", true, &created, &err);
	assert_true(d >= 0);
	assert_true(created);
	assert_int_equal(mode_of(P(f, "root/d")), 0700);
	int d2 = safefs_opendir(root, "d", true, &created, &err);
	assert_true(d2 >= 0);
	assert_false(created);
	close(d2);
	assert_int_equal(symlink(P(f, "root/d"), P(f, "root/ld")), 0);
	FAILS(safefs_opendir(root, "ld", true, NULL, &err), CERR_CORRUPT);

	FAILS(safefs_openfile(d, "f", O_RDWR, &err), CERR_MISSING);
	int fd = safefs_openfile(d, "f", O_RDWR | O_CREAT, &err);
	assert_true(fd >= 0);
	assert_int_equal(mode_of(P(f, "root/d/f")), 0600);
	close(fd);
	FAILS(safefs_opendir(d, "f", true, NULL, &err), CERR_CORRUPT);
	assert_int_equal(symlink("f", P(f, "root/d/lf")), 0);
	FAILS(safefs_openfile(d, "lf", O_RDONLY, &err), CERR_CORRUPT);
	FAILS(safefs_openfile(d, "lf", O_RDWR | O_CREAT, &err), CERR_CORRUPT);
	assert_int_equal(mkfifo(P(f, "root/d/fifo"), 0600), 0);
	FAILS(safefs_openfile(d, "fifo", O_RDWR, &err), CERR_CORRUPT);
	/* read-only, as inspect opens: must fail, not wait for a writer */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(3);
		_exit(safefs_openfile(d, "fifo", O_RDONLY, &err) < 0 ? (int)err.cls : 0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status)); /* killed by SIGALRM: open() blocked */
	assert_int_equal(WEXITSTATUS(status), CERR_CORRUPT);
	/* a read-only open verifies and changes nothing; a write open tightens */
	assert_int_equal(chmod(P(f, "root/d/f"), 0644), 0);
	fd = safefs_openfile(d, "f", O_RDONLY, &err);
	assert_true(fd >= 0);
	assert_int_equal(mode_of(P(f, "root/d/f")), 0644);
	assert_int_equal(safefs_check_fd_mode(fd, false, false, "f", &err), 0);
	assert_int_equal(mode_of(P(f, "root/d/f")), 0644);
	FAILS(safefs_check_fd(fd, true, "f", &err), CERR_CORRUPT);
	assert_non_null(strstr(err.msg, "'f'"));
	close(fd);
	fd = safefs_openfile(d, "f", O_RDWR, &err);
	assert_true(fd >= 0);
	assert_int_equal(mode_of(P(f, "root/d/f")), 0600);
	close(fd);
	assert_int_equal(chmod(P(f, "root/d"), 0750), 0);
	assert_int_equal(safefs_check_fd_mode(d, true, false, "d", &err), 0);
	assert_int_equal(mode_of(P(f, "root/d")), 0750);
	FAILS(safefs_check_fd(d, false, "d", &err), CERR_CORRUPT);
	assert_int_equal(safefs_check_fd(d, true, "d", &err), 0);
	assert_int_equal(mode_of(P(f, "root/d")), 0700);
	assert_int_equal(safefs_fsync_dir(d, "d", &err), 0);
	FAILS(safefs_fsync_dir(-1, "bad", &err), CERR_IO);
	assert_int_equal(err.sys_errno, EBADF);
	close(d);

	int r = safefs_open_root(P(f, "x/y/z"), true, &err);
	assert_true(r >= 0);
	close(r);
	assert_int_equal(mode_of(P(f, "x")), 0700);
	assert_int_equal(mode_of(P(f, "x/y")), 0700);
	assert_int_equal(mode_of(P(f, "x/y/z")), 0700);
	FAILS(safefs_open_root(P(f, "x/q"), false, &err), CERR_MISSING);
	FAILS(safefs_open_root(NULL, true, &err), CERR_USAGE);
}

/* ---- names ---- */

/* The candidate list of an ambiguity message: "...: a, b, c". */
static int candidates(const char *msg)
{
	const char *p = strstr(msg, ": ");
	assert_non_null(p);
	int n = 1;
	for (; *p; p++)
		n += *p == ',';
	return n;
}

static bool is_candidate(const char *msg, const char *id)
{
	const char *p = strstr(msg, ": ");
	assert_non_null(p);
	size_t len = strlen(id);
	for (p += 2; p; p = strstr(p, ", ") ? strstr(p, ", ") + 2 : NULL)
		if (strncmp(p, id, len) == 0 && (p[len] == ',' || p[len] == '\0'))
			return true;
	return false;
}

static void test_resolve_takes_an_exact_id_or_a_unique_prefix(void **state)
{
	struct fx *f = *state;
	mk_ok(f->st, "01AB", "/a");
	mk_ok(f->st, "01ABC", "/b");
	mk_ok(f->st, "01ABD", "/a");
	mk_ok(f->st, "01XYZ", NULL);
	struct session_ref ref;
	struct cerr err;
	assert_int_equal(store_resolve(f->st, "01AB", &ref, &err), 0); /* exact wins */
	assert_string_equal(ref.id, "01AB");
	assert_string_equal(ref.key, "-a");
	assert_int_equal(store_resolve(f->st, "01ABC", &ref, &err), 0);
	assert_string_equal(ref.id, "01ABC");
	assert_string_equal(ref.key, "-b");
	assert_int_equal(store_resolve(f->st, "01X", &ref, &err), 0); /* unique prefix */
	assert_string_equal(ref.id, "01XYZ");
	assert_string_equal(ref.key, "_no-cwd");
	FAILS(store_resolve(f->st, "01A", &ref, &err), CERR_USAGE);
	assert_int_equal(candidates(err.msg), 3);
	assert_true(is_candidate(err.msg, "01AB"));
	assert_true(is_candidate(err.msg, "01ABC"));
	assert_true(is_candidate(err.msg, "01ABD"));
	assert_false(is_candidate(err.msg, "01XYZ"));
	FAILS(store_resolve(f->st, "q", &ref, &err), CERR_MISSING);
	FAILS(store_resolve(f->st, "01ABCD", &ref, &err), CERR_MISSING);
	assert_int_equal(store_resolve(f->st, "01ab", &ref, &err), -1); /* case matters */
	assert_int_equal(err.cls, CERR_MISSING);
	/* one id under two project folders (a copied folder): fails closed
	 * naming both, by the exact id or a prefix, and does not hide the
	 * other candidates of an ambiguous prefix */
	assert_int_equal(mkdir(P(f, "root/sessions/-c"), 0700), 0);
	assert_int_equal(mkdir(P(f, "root/sessions/-c/01XYZ"), 0700), 0);
	size_t n;
	uint8_t *copy = slurp(P(f, "root/sessions/_no-cwd/01XYZ/session.jsonl.zst"), &n);
	spit(P(f, "root/sessions/-c/01XYZ/session.jsonl.zst"), copy, n, O_EXCL);
	free(copy);
	FAILS(store_resolve(f->st, "01XYZ", &ref, &err), CERR_CORRUPT);
	assert_non_null(strstr(err.msg, "sessions/-c/01XYZ, sessions/_no-cwd/01XYZ"));
	FAILS(store_resolve(f->st, "01X", &ref, &err), CERR_CORRUPT);
	assert_non_null(strstr(err.msg, "sessions/-c/01XYZ, sessions/_no-cwd/01XYZ"));
	FAILS(store_resolve(f->st, "01", &ref, &err), CERR_USAGE);
	assert_int_equal(candidates(err.msg), 4); /* each id once */
	struct log *lg;
	FAILS(log_open(f->st, "01XYZ", &lg, &err), CERR_CORRUPT);
	FAILS(log_create(f->st, "01XYZ", "/d", NULL, &lg, &err), CERR_CONFLICT); /* no third copy */
	/* a directory without a log is not a session */
	assert_int_equal(mkdir(P(f, "root/sessions/-a/01QQ"), 0700), 0);
	FAILS(store_resolve(f->st, "01Q", &ref, &err), CERR_MISSING);
	/* ids that look like paths never reach the file system */
	char longid[80];
	memset(longid, 'a', 65);
	longid[65] = '\0';
	static const char *const bad[] = {"..", ".", "a/b", "../01AB", "", "-rf", "a b", "01AB/"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		FAILS(store_resolve(f->st, bad[i], &ref, &err), CERR_USAGE);
		assert_int_equal(mk(f->st, bad[i], NULL), CERR_USAGE);
	}
	FAILS(store_resolve(f->st, longid, &ref, &err), CERR_USAGE);
	longid[64] = '\0';
	mk_ok(f->st, longid, NULL);
	assert_int_equal(store_resolve(f->st, longid, &ref, &err), 0);
	assert_string_equal(ref.id, longid);
}

static void test_cwd_key_never_escapes_the_sessions_directory(void **state)
{
	struct fx *f = *state;
	mk_ok(f->st, "esc1", "/../../../../etc");
	mk_ok(f->st, "esc2", "../..");
	mk_ok(f->st, "esc3", "/tmp/a b/%2F");
	char longcwd[2048];
	memset(longcwd, '/', sizeof longcwd - 1);
	longcwd[sizeof longcwd - 1] = '\0';
	mk_ok(f->st, "esc4", longcwd);
	struct session_ref *refs;
	size_t n;
	struct cerr err;
	assert_int_equal(store_list(f->st, STORE_SESSIONS, &refs, &n, &err), 0);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++) {
		assert_null(strchr(refs[i].key, '/'));
		assert_true(strlen(refs[i].key) <= PATHKEY_MAX);
		assert_string_not_equal(refs[i].key, "..");
		assert_true(exists(P(f, "root/sessions/%s/%s/session.jsonl.zst", refs[i].key,
				     refs[i].id)));
	}
	free(refs);
	/* nothing appeared outside the root */
	DIR *d = opendir(f->dir);
	int entries = 0;
	for (struct dirent *de; (de = readdir(d));)
		entries += de->d_name[0] != '.';
	closedir(d);
	assert_int_equal(entries, 1);
}

static void test_list_returns_sessions_and_skips_what_is_not_one(void **state)
{
	struct fx *f = *state;
	struct session_ref *refs = (void *)1;
	size_t n = 99;
	struct cerr err;
	assert_int_equal(store_list(f->st, STORE_SESSIONS, &refs, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_list(f->st, STORE_TRASH, &refs, &n, &err), 0);
	assert_int_equal(n, 0);
	mk_ok(f->st, "s1", "/a");
	mk_ok(f->st, "s2", "/b");
	mk_ok(f->st, "s3", NULL);
	mk_ok(f->st, "s4", "/a");
	/* things that are not sessions */
	assert_int_equal(mkdir(P(f, "root/sessions/-a/nolog"), 0700), 0);
	touch(P(f, "root/sessions/-a/stray.txt"));
	touch(P(f, "root/sessions/strayfile"));
	assert_int_equal(mkdir(P(f, "root/sessions/-a/bad.id"), 0700), 0);
	touch(P(f, "root/sessions/-a/bad.id/session.jsonl.zst"));
	assert_int_equal(mkdir(P(f, "root/sessions/.hidden"), 0700), 0);
	assert_int_equal(mkdir(P(f, "root/sessions/.hidden/h1"), 0700), 0);
	touch(P(f, "root/sessions/.hidden/h1/session.jsonl.zst"));
	assert_int_equal(store_list(f->st, STORE_SESSIONS, &refs, &n, &err), 0);
	assert_int_equal(n, 4);
	static const char *const want[][2] = {{"s1", "-a"}, {"s2", "-b"}, {"s3", "_no-cwd"}, {"s4", "-a"}};
	for (size_t w = 0; w < 4; w++) {
		size_t hits = 0;
		for (size_t i = 0; i < n; i++)
			hits += strcmp(refs[i].id, want[w][0]) == 0 && strcmp(refs[i].key, want[w][1]) == 0;
		if (hits != 1)
			fail_msg("%s/%s listed %zu times", want[w][1], want[w][0], hits);
	}
	free(refs);
	assert_int_equal(store_list(f->st, STORE_TRASH, &refs, &n, &err), 0);
	assert_int_equal(n, 0);
}

static void test_open_session_dir_refuses_missing_or_bad_refs(void **state)
{
	struct fx *f = *state;
	struct session_ref ref = {"sid", "-k"};
	int keyfd = 5, dirfd = 5;
	struct cerr err;
	FAILS(store_open_session_dir(f->st, &ref, false, &keyfd, &dirfd, &err), CERR_MISSING);
	assert_int_equal(keyfd, -1);
	assert_int_equal(dirfd, -1);
	assert_false(exists(P(f, "root/sessions")));
	umask(0);
	assert_int_equal(store_open_session_dir(f->st, &ref, true, &keyfd, &dirfd, &err), 0);
	assert_int_equal(mode_of(P(f, "root/sessions")), 0700);
	assert_int_equal(mode_of(P(f, "root/sessions/-k")), 0700);
	assert_int_equal(mode_of(P(f, "root/sessions/-k/sid")), 0700);
	struct stat a, b;
	assert_int_equal(fstat(dirfd, &a), 0);
	assert_int_equal(stat(P(f, "root/sessions/-k/sid"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(fstat(keyfd, &a), 0);
	assert_int_equal(stat(P(f, "root/sessions/-k"), &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	close(keyfd);
	close(dirfd);
	assert_int_equal(store_open_session_dir(f->st, &ref, false, &keyfd, &dirfd, &err), 0);
	close(keyfd);
	close(dirfd);
	static const struct session_ref bad[] = {
		{"..", "-k"}, {"sid", ".."}, {"sid", "."}, {"a", "x/../.."}, {"", "-k"}, {"sid", ""}};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		FAILS(store_open_session_dir(f->st, &bad[i], true, &keyfd, &dirfd, &err), CERR_USAGE);
	}
}

/* ---- the layout, owned by the store ---- */

/* A log's path comes from the store, and the session of a path back from
 * it: only <root>/sessions/<key>/<id>/<file>, reached by any spelling
 * (a symlinked root, "..") — never a trashed log, a file outside the
 * root, a deeper one, or a folder name that is not a session id. */
static void test_log_path_and_session_of_path_round_trip(void **state)
{
	struct fx *f = *state;
	mk_ok(f->st, "s1", "/w");
	struct session_ref ref;
	struct cerr err;
	assert_int_equal(store_resolve(f->st, "s1", &ref, &err), 0);
	char *live = store_log_path(f->st, &ref, false);
	assert_string_equal(live, P(f, "root/sessions/-w/s1/session.jsonl.zst"));
	char *sid = store_session_of_path(f->st, live);
	assert_non_null(sid);
	assert_string_equal(sid, "s1");
	free(sid);
	assert_int_equal(symlink(f->root, P(f, "alias")), 0);
	sid = store_session_of_path(f->st, P(f, "alias/sessions/-w/../-w/s1/session.jsonl.zst"));
	assert_non_null(sid);
	assert_string_equal(sid, "s1");
	free(sid);
	char *trashed = store_log_path(f->st, &ref, true);
	assert_string_equal(trashed, P(f, "root/trash/-w/s1/session.jsonl.zst"));
	assert_int_equal(store_trash(f->st, &ref, NULL, &err), 0);
	assert_null(store_session_of_path(f->st, trashed));
	assert_null(store_session_of_path(f->st, live)); /* gone: nothing to resolve */
	mk_ok(f->st, "s2", "/w");
	assert_int_equal(mkdir(P(f, "root/sessions/-w/s2/deeper"), 0700), 0);
	touch(P(f, "root/sessions/-w/s2/deeper/x"));
	assert_null(store_session_of_path(f->st, P(f, "root/sessions/-w/s2/deeper/x")));
	assert_int_equal(mkdir(P(f, "root/sessions/-w/bad.id"), 0700), 0);
	touch(P(f, "root/sessions/-w/bad.id/session.jsonl.zst"));
	assert_null(store_session_of_path(f->st, P(f, "root/sessions/-w/bad.id/session.jsonl.zst")));
	touch(P(f, "elsewhere"));
	assert_null(store_session_of_path(f->st, P(f, "elsewhere")));
	touch(P(f, "root/sessionsX"));
	assert_null(store_session_of_path(f->st, P(f, "root/sessionsX")));
	free(live);
	free(trashed);
}

/* ---- trash ---- */

static void test_trash_moves_the_whole_session_and_never_over_a_trashed_one(void **state)
{
	struct fx *f = *state;
	mk_ok(f->st, "gone", "/w");
	mk_ok(f->st, "kept", "/w");
	const char *log = P(f, "root/sessions/-w/gone/session.jsonl.zst");
	size_t n;
	uint8_t *before = slurp(log, &n);
	struct session_ref ref;
	struct cerr err;
	assert_int_equal(store_resolve(f->st, "gone", &ref, &err), 0);
	assert_int_equal(store_trash(f->st, &ref, NULL, &err), 0);
	assert_false(exists(P(f, "root/sessions/-w/gone")));
	assert_true(exists(P(f, "root/sessions/-w/kept/session.jsonl.zst")));
	assert_true(exists(P(f, "root/trash/-w/gone/session.lock")));
	size_t m;
	uint8_t *after = slurp(P(f, "root/trash/-w/gone/session.jsonl.zst"), &m);
	assert_int_equal(m, n);
	assert_memory_equal(after, before, n);
	free(after);
	free(before);
	FAILS(store_resolve(f->st, "gone", &ref, &err), CERR_MISSING);
	FAILS(store_resolve(f->st, "g", &ref, &err), CERR_MISSING);
	struct log *lg;
	FAILS(log_open(f->st, "gone", &lg, &err), CERR_MISSING);
	struct session_ref *refs;
	assert_int_equal(store_list(f->st, STORE_TRASH, &refs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(refs[0].id, "gone");
	assert_string_equal(refs[0].key, "-w");
	free(refs);
	assert_int_equal(store_list(f->st, STORE_SESSIONS, &refs, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(refs[0].id, "kept");
	free(refs);
	/* again: no such session any more */
	FAILS(store_trash(f->st, &ref, NULL, &err), CERR_MISSING);
	/* a new session with the same id can't overwrite the trashed one */
	mk_ok(f->st, "gone", "/w");
	FAILS(store_trash(f->st, &ref, NULL, &err), CERR_CONFLICT);
	assert_true(exists(P(f, "root/sessions/-w/gone/session.jsonl.zst")));
	assert_int_equal(store_resolve(f->st, "gone", &ref, &err), 0);
}

static void test_trash_refused_while_locked(void **state)
{
	struct fx *f = *state;
	mk_ok(f->st, "busy", NULL);
	struct session_ref ref;
	struct cerr err;
	assert_int_equal(store_resolve(f->st, "busy", &ref, &err), 0);
	int go[2], done[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct log *lg;
		struct cerr ce;
		close(go[0]);
		close(done[1]); /* EOF on done when the parent exits, even failing */
		char c = log_open(f->st, "busy", &lg, &ce) == 0 ? 'y' : 'n';
		if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(go[1]);
	close(done[0]);
	char c;
	assert_int_equal(read(go[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	FAILS(store_trash(f->st, &ref, NULL, &err), CERR_LOCKED);
	assert_true(exists(P(f, "root/sessions/_no-cwd/busy/session.jsonl.zst")));
	assert_false(exists(P(f, "root/trash/_no-cwd/busy")));
	assert_int_equal(write(done[1], "x", 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	close(go[0]), close(done[1]);
	/* held by this process through a log handle: refused too */
	struct log *lg;
	assert_int_equal(log_open(f->st, "busy", &lg, &err), 0);
	FAILS(store_trash(f->st, &ref, NULL, &err), CERR_LOCKED);
	log_close(lg);
	assert_int_equal(store_trash(f->st, &ref, NULL, &err), 0);
	assert_true(exists(P(f, "root/trash/_no-cwd/busy/session.jsonl.zst")));
	FAILS(store_resolve(f->st, "busy", &ref, &err), CERR_MISSING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_default_root_precedence),
		T(test_store_open_makes_or_refuses_a_root_and_tightens_it),
		T(test_store_files_get_their_modes_under_any_umask),
		T(test_modes_any_umask_unprivileged),
		T(test_files_of_another_owner_are_refused),
		T(test_symlinks_in_a_session_are_refused),
		T(test_a_fifo_in_place_of_a_log_is_refused),
		T(test_loose_modes_are_tightened_on_open),
		T(test_safefs_refuses_links_and_wrong_types),
		T(test_resolve_takes_an_exact_id_or_a_unique_prefix),
		T(test_cwd_key_never_escapes_the_sessions_directory),
		T(test_list_returns_sessions_and_skips_what_is_not_one),
		T(test_open_session_dir_refuses_missing_or_bad_refs),
		T(test_log_path_and_session_of_path_round_trip),
		T(test_trash_moves_the_whole_session_and_never_over_a_trashed_one),
		T(test_trash_refused_while_locked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
