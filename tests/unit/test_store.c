/* test_store.c — the data root and session discovery (persist/store.h)
 * with real files (the fixture: support_store.h): the default root and
 * opening one, ids resolved exactly or by a unique prefix, project keys
 * that never escape, listing, session directories, the log path a session
 * owns, and moving a session to the trash. The modes, owners and file
 * types the store insists on: test_store_modes.c; persist/safefs.h:
 * test_safefs.c. */
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
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_store.h"

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
	/* A relative XDG_DATA_HOME or HOME is skipped like an unset one. */
	setenv("XDG_DATA_HOME", "x/data", 1);
	r = store_default_root();
	assert_string_equal(r, "/h/me/.local/share/cairn");
	free(r);
	setenv("HOME", "h/me", 1);
	assert_null(store_default_root());
	unsetenv("XDG_DATA_HOME");
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
		STOREFX_TEST(test_default_root_precedence),
		STOREFX_TEST(test_store_open_makes_or_refuses_a_root_and_tightens_it),
		STOREFX_TEST(test_resolve_takes_an_exact_id_or_a_unique_prefix),
		STOREFX_TEST(test_cwd_key_never_escapes_the_sessions_directory),
		STOREFX_TEST(test_list_returns_sessions_and_skips_what_is_not_one),
		STOREFX_TEST(test_open_session_dir_refuses_missing_or_bad_refs),
		STOREFX_TEST(test_log_path_and_session_of_path_round_trip),
		STOREFX_TEST(test_trash_moves_the_whole_session_and_never_over_a_trashed_one),
		STOREFX_TEST(test_trash_refused_while_locked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
