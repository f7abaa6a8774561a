/* test_readfile.c — base/readfile.h, the one capped whole-file read: a
 * file read whole, one byte past the cap refused, a missing file told
 * apart from a directory, a FIFO refused at once (never waited on), an
 * open error, and an fd read to its end on top of what the buffer held. */
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
#include <unistd.h>

#include "base/readfile.h"
#include "support_fixture.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	char root[80];
	return tmp_root("readfile", dir, sizeof dir, root, sizeof root);
}

static int teardown(void **state)
{
	(void)state;
	chmod(path_in(dir, "locked"), 0600);
	rm_rf(dir);
	return 0;
}

static void put(const char *name, size_t n)
{
	char *p = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)('a' + i % 26);
	spit(path_in(dir, "%s", name), p, n, O_TRUNC);
	free(p);
}

static void test_readfile_path_reads_whole_up_to_the_cap(void **state)
{
	(void)state;
	put("f", 200000); /* several reads' worth */
	struct buf b = BUF_INIT;
	assert_int_equal(readfile_path(path_in(dir, "f"), 200000, &b), READFILE_OK);
	assert_int_equal(b.len, 200000);
	assert_int_equal(b.p[199999], (char)('a' + 199999 % 26));
	assert_int_equal(b.p[b.len], '\0');
	buf_reset(&b);
	assert_int_equal(readfile_path(path_in(dir, "f"), 199999, &b), READFILE_TOO_BIG);
	buf_reset(&b);
	put("empty", 0);
	assert_int_equal(readfile_path(path_in(dir, "empty"), 0, &b), READFILE_OK);
	assert_int_equal(b.len, 0);
	buf_release(&b);
}

static void test_readfile_path_tells_absent_not_regular_and_errors_apart(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	assert_int_equal(readfile_path(path_in(dir, "none"), 10, &b), READFILE_ABSENT);
	put("file", 3);
	/* a component that is a file: ENOTDIR counts as absent */
	assert_int_equal(readfile_path(path_in(dir, "file/x"), 10, &b), READFILE_ABSENT);
	assert_int_equal(mkdir(path_in(dir, "d"), 0700), 0);
	assert_int_equal(readfile_path(path_in(dir, "d"), 10, &b), READFILE_NOT_REGULAR);
	/* A FIFO with no writer: refused at once, not waited on. */
	assert_int_equal(mkfifo(path_in(dir, "fifo"), 0600), 0);
	assert_int_equal(readfile_path(path_in(dir, "fifo"), 10, &b), READFILE_NOT_REGULAR);
	if (geteuid() != 0) { /* root reads anything */
		put("locked", 3);
		assert_int_equal(chmod(path_in(dir, "locked"), 0), 0);
		errno = 0;
		assert_int_equal(readfile_path(path_in(dir, "locked"), 10, &b), READFILE_OPEN_ERROR);
		assert_int_equal(errno, EACCES);
	}
	assert_int_equal(b.len, 0);
	buf_release(&b);
}

static void test_readfile_fd_counts_what_the_buffer_held(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "hello", 5), 5);
	close(p[1]);
	struct buf b = BUF_INIT;
	buf_adds(&b, "say ");
	assert_int_equal(readfile_fd(p[0], 9, &b), READFILE_OK);
	assert_string_equal(b.p, "say hello");
	close(p[0]);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "hello", 5), 5);
	close(p[1]);
	buf_reset(&b);
	buf_adds(&b, "say ");
	assert_int_equal(readfile_fd(p[0], 8, &b), READFILE_TOO_BIG);
	close(p[0]);
	errno = 0;
	assert_int_equal(readfile_fd(-1, 8, &b), READFILE_READ_ERROR);
	assert_int_equal(errno, EBADF);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_readfile_path_reads_whole_up_to_the_cap, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_readfile_path_tells_absent_not_regular_and_errors_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readfile_fd_counts_what_the_buffer_held, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
