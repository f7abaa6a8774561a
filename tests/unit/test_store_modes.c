/* test_store_modes.c — the modes, owners and file types the store insists
 * on (persist/store.h; the fixture: support_store.h): owner-only modes
 * whatever the umask (also for an unprivileged user), files of another
 * owner, symlinks and a FIFO in place of a log refused, loose modes
 * tightened on open. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "persist/log.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_store.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		STOREFX_TEST(test_store_files_get_their_modes_under_any_umask),
		STOREFX_TEST(test_modes_any_umask_unprivileged),
		STOREFX_TEST(test_files_of_another_owner_are_refused),
		STOREFX_TEST(test_symlinks_in_a_session_are_refused),
		STOREFX_TEST(test_a_fifo_in_place_of_a_log_is_refused),
		STOREFX_TEST(test_loose_modes_are_tightened_on_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
