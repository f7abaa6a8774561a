/* test_safefs.c — the owner-only, no-follow file helpers
 * (persist/safefs.h) with real files (the fixture: support_store.h): links
 * and files of the wrong type refused, roots opened or made. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "persist/safefs.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_store.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		STOREFX_TEST(test_safefs_refuses_links_and_wrong_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
