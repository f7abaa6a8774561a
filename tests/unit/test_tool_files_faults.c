/* test_tool_files_faults.c — write_file and edit_file under the fault
 * table and the power-loss model of support_faultfs.h: their atomic
 * replace (persist/replace.c) makes every system call through fsops, so
 * each one can fail. At every failing call (EIO, ENOSPC, a short write)
 * the tool ends with an error that names what failed, and the file, both
 * as it is and as a power loss at that moment would leave it, holds the
 * old bytes or the new ones, whole. A success is durable; one whose
 * directory sync is skipped is not (the model catches a missing sync). */
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
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/xalloc.h"
#include "engine/tool_int.h"
#include "support_faultfs.h"
#include "support_fixture.h"

#define OLD "the old contents\nof the file\n"
#define NEW "the new contents, longer than the old ones,\nof the file\n"

static char dir[64];
static char work[128];
static int crashes;

static int setup(void **state)
{
	(void)state;
	char root[80];
	if (tmp_root("toolfaults", dir, sizeof dir, root, sizeof root) < 0)
		return -1;
	snprintf(work, sizeof work, "%s/work", dir);
	return mkdir(work, 0700);
}

static int teardown(void **state)
{
	(void)state;
	faultfs_uninstall();
	rm_rf(dir);
	return 0;
}

struct done {
	int calls;
	struct tool_result r;
};

static void on_done(void *ctx, struct tool_run *run, struct tool_result *r)
{
	struct done *d = ctx;
	(void)run;
	d->calls++;
	d->r = *r; /* the receiver takes the fields */
}

/* Run tool name with args in work on a fresh loop; the caller releases. */
static struct done run(const char *name, const char *args)
{
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	struct tool_ctx ctx = {.loop = &loop, .cwd = work};
	cJSON *a = cJSON_Parse(args);
	assert_non_null(a);
	struct done d = {0};
	struct cerr err;
	struct tool_run *tr = tool_files_start(&ctx, name, a, on_done, &d, &err);
	assert_non_null(tr);
	cJSON_Delete(a);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(d.calls, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
	assert_non_null(d.r.output);
	return d;
}

static const char *write_args(void)
{
	return "{\"path\":\"f.txt\",\"content\":\"" "the new contents, longer than the old ones,\\nof "
	       "the file\\n" "\"}";
}

static const char *edit_args(void)
{
	return "{\"path\":\"f.txt\",\"old_string\":\"the old contents\\n\",\"new_string\":\""
	       "the new contents, longer than the old ones,\\n\"}";
}

/* The file at path holds OLD or NEW, whole; which (true: NEW). */
static bool old_or_new(const char *path)
{
	size_t n = 0;
	uint8_t *b = slurp(path, &n);
	bool isnew = n == strlen(NEW) && memcmp(b, NEW, n) == 0;
	bool isold = n == strlen(OLD) && memcmp(b, OLD, n) == 0;
	if (!isnew && !isold)
		fail_msg("'%s' is torn: %zu bytes '%.*s'", path, n, (int)n, (const char *)b);
	free(b);
	return isnew;
}

/* A power loss now: the crash copy of work holds OLD or NEW; which. */
static bool crash_old_or_new(void)
{
	const char *copy = path_in(dir, "crash%d", crashes++);
	assert_int_equal(faultfs_crash_copy(work, copy), 0);
	bool isnew = old_or_new(path_in(copy, "f.txt"));
	rm_rf(copy);
	return isnew;
}

/* Put OLD back at f.txt, durably, and leave no temporary file. */
static void reset(void)
{
	faultfs_uninstall();
	rm_rf(work);
	assert_int_equal(mkdir(work, 0700), 0);
	spit(path_in(work, "f.txt"), OLD, strlen(OLD), O_TRUNC);
}

/* Entries in work but f.txt: temporary files left behind. */
static int strays(void)
{
	int n = 0;
	DIR *d = opendir(work);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "f.txt"))
			n++;
	closedir(d);
	return n;
}

/* The calls of each kind one clean run of the tool makes. */
static void clean_counts(const char *tool, const char *args, unsigned long counts[FF_NOPS])
{
	reset();
	faultfs_install();
	assert_int_equal(faultfs_track(work), 0);
	struct done d = run(tool, args);
	assert_int_equal(d.r.status, TOOL_OK);
	for (int op = 0; op < FF_NOPS; op++)
		counts[op] = faultfs_count(op);
	/* A success is durable: the rename and its directory went through
	 * the table, and were synced. */
	assert_true(old_or_new(path_in(work, "f.txt")));
	assert_true(crash_old_or_new());
	tool_result_release(&d.r);
}

/* Check one faulted run: an error naming what failed (or, for a call
 * whose failure does not matter, a durable success), the file and its
 * crash copy old or new, no temporary file left. */
static void check_faulted(const char *tool, const char *args, const char *what)
{
	struct done d = run(tool, args);
	assert_int_equal(faultfs_fired(), 1);
	bool now = old_or_new(path_in(work, "f.txt"));
	bool after_crash = crash_old_or_new();
	if (d.r.status == TOOL_OK) {
		/* Only the closing of the directory may fail unseen. */
		assert_true(now);
		assert_true(after_crash);
	} else {
		assert_int_equal(d.r.status, TOOL_ERROR);
		if (!strstr(d.r.output, "cannot "))
			fail_msg("%s: unclassified error '%s'", what, d.r.output);
		/* An error either left the old file, or says it wrote. */
		if (now && !strstr(d.r.output, "wrote 'f.txt', but cannot sync its directory"))
			fail_msg("%s: replaced, but the error says '%s'", what, d.r.output);
		if (after_crash)
			assert_true(now);
	}
	assert_int_equal(strays(), 0);
	tool_result_release(&d.r);
}

static void fault_loop(const char *tool, const char *args)
{
	unsigned long counts[FF_NOPS];
	clean_counts(tool, args, counts);
	/* The replace itself went through the table: a temporary file made,
	 * written, synced, renamed, its directory synced. */
	assert_true(counts[FF_CREATE] >= 1);
	assert_true(counts[FF_PWRITE] >= 1);
	assert_true(counts[FF_FSYNC] >= 2);
	assert_true(counts[FF_RENAME] >= 1);
	static const int errs[] = {EIO, ENOSPC};
	int runs = 0;
	for (int op = 0; op < FF_NOPS; op++)
		for (unsigned long nth = 1; nth <= counts[op]; nth++)
			for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++) {
				reset();
				faultfs_install();
				assert_int_equal(faultfs_track(work), 0);
				faultfs_fail(op, nth, errs[e]);
				char what[96];
				snprintf(what, sizeof what, "%s: %s #%lu errno %d", tool,
					 faultfs_op_name(op), nth, errs[e]);
				check_faulted(tool, args, what);
				runs++;
			}
	for (unsigned long nth = 1; nth <= counts[FF_PWRITE]; nth++) {
		reset();
		faultfs_install();
		assert_int_equal(faultfs_track(work), 0);
		faultfs_short_write(nth);
		check_faulted(tool, args, "short write");
		runs++;
	}
	assert_true(runs >= 10);
	faultfs_uninstall();
}

static void test_write_file_at_every_failing_call_keeps_old_or_new(void **state)
{
	(void)state;
	fault_loop("write_file", write_args());
}

static void test_edit_file_at_every_failing_call_keeps_old_or_new(void **state)
{
	(void)state;
	fault_loop("edit_file", edit_args());
}

/* Without its directory sync a replaced file is lost to a power loss: the
 * model sees that, so the durability asserted above is not luck. */
static void test_a_skipped_directory_sync_loses_the_write(void **state)
{
	(void)state;
	reset();
	faultfs_install();
	assert_int_equal(faultfs_track(work), 0);
	faultfs_skip_dir_sync(1);
	struct done d = run("write_file", write_args());
	assert_int_equal(d.r.status, TOOL_OK);
	assert_int_equal(faultfs_skipped(), 1);
	assert_true(old_or_new(path_in(work, "f.txt")));
	assert_false(crash_old_or_new());
	tool_result_release(&d.r);
	faultfs_uninstall();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_file_at_every_failing_call_keeps_old_or_new,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_edit_file_at_every_failing_call_keeps_old_or_new,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_skipped_directory_sync_loses_the_write, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
