/* test_draft.c — per-project drafts on real files: save, replace, read and
 * remove; the old draft survives a failed write, sync or rename and a power
 * loss before the rename; a symlink at the draft path or in place of
 * drafts/ is refused; modes are 0600/0700 whatever the umask; a staging
 * file left by a crash goes with the next save; limits are usage errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "persist/draft.h"
#include "persist/pathkey.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

#define CWD "/home/a b/proj"

struct dx {
	char dir[64];
	char root[128];
	char *key;
	struct store *st;
};

static int setup(void **state)
{
	struct dx *x = xcalloc(1, sizeof *x);
	struct cerr err = {0};
	assert_int_equal(tmp_root("cairn-draft", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	if (store_open(x->root, true, &x->st, &err) < 0)
		fail_msg("store_open: %s", err.msg);
	x->key = pathkey_project(CWD);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct dx *x = *state;
	faultfs_uninstall();
	store_close(x->st);
	rm_rf(x->dir);
	free(x->key);
	free(x);
	return 0;
}

static const char *draft_path(const struct dx *x, const char *suffix)
{
	return path_in(x->root, "drafts/%s%s", x->key, suffix);
}

/* The draft of CWD read back equals want. */
static void assert_draft(struct dx *x, const char *want)
{
	struct cerr err = {0};
	char *text = NULL;
	if (draft_read(x->st, CWD, &text, &err) < 0)
		fail_msg("draft_read: %s", err.msg);
	assert_string_equal(text, want);
	free(text);
}

static void save(struct dx *x, const char *cwd, const char *text)
{
	struct cerr err = {0};
	if (draft_save(x->st, cwd, text, &err) < 0)
		fail_msg("draft_save: %s", err.msg);
}

static void test_save_replace_read_remove(void **state)
{
	struct dx *x = *state;
	assert_draft(x, ""); /* no drafts/ yet: empty, not an error */
	save(x, CWD, "first line\nsecond");
	assert_draft(x, "first line\nsecond");
	size_t n;
	uint8_t *b = slurp(draft_path(x, ""), &n);
	assert_int_equal(n, strlen("first line\nsecond"));
	assert_memory_equal(b, "first line\nsecond", n);
	free(b);
	save(x, CWD, "r\xc3\xa9sum\xc3\xa9");
	assert_draft(x, "r\xc3\xa9sum\xc3\xa9");
	save(x, NULL, "no cwd");
	save(x, CWD, "");
	assert_false(exists(draft_path(x, "")));
	assert_draft(x, "");
	save(x, CWD, ""); /* removing what is not there is fine */
	char *t = NULL;
	struct cerr err = {0};
	assert_int_equal(draft_read(x->st, NULL, &t, &err), 0);
	assert_string_equal(t, "no cwd"); /* another project kept its own */
	free(t);
	assert_false(exists(draft_path(x, "+staging")));
}

static void test_modes_are_owner_only_whatever_the_umask(void **state)
{
	struct dx *x = *state;
	const mode_t masks[] = {0, 0777};
	for (size_t i = 0; i < 2; i++) {
		rm_rf(path_in(x->root, "drafts"));
		mode_t old = umask(masks[i]);
		save(x, CWD, "text");
		umask(old);
		struct stat sb;
		assert_int_equal(lstat(path_in(x->root, "drafts"), &sb), 0);
		assert_int_equal(sb.st_mode & 07777, 0700);
		assert_int_equal(lstat(draft_path(x, ""), &sb), 0);
		assert_int_equal(sb.st_mode & 07777, 0600);
		assert_draft(x, "text");
	}
}

/* A failure at step op (nth call) of a replacement: a classified io error
 * with errnum, the old draft whole, no staging file left. */
static void fail_replacement(struct dx *x, enum faultfs_op op, int errnum)
{
	struct cerr err = {0};
	save(x, CWD, "old draft");
	faultfs_install();
	faultfs_fail(op, 1, errnum);
	FAILS(draft_save(x->st, CWD, "new draft", &err), CERR_IO);
	assert_int_equal(err.sys_errno, errnum);
	assert_int_equal(faultfs_fired(), 1);
	faultfs_uninstall();
	assert_draft(x, "old draft");
	assert_false(exists(draft_path(x, "+staging")));
}

static void test_failed_write_keeps_the_old_draft(void **state)
{
	struct dx *x = *state;
	fail_replacement(x, FF_PWRITE, ENOSPC);
	fail_replacement(x, FF_PWRITE, EIO);
	fail_replacement(x, FF_FSYNC, EIO);
	fail_replacement(x, FF_RENAME, EIO);
	/* The directory sync after the rename: the outcome is unknown. */
	struct cerr e2 = {0};
	faultfs_install();
	save(x, CWD, "old draft");
	unsigned long syncs = faultfs_count(FF_FSYNC); /* drafts/ is the last */
	faultfs_reset_counts();
	faultfs_fail(FF_FSYNC, syncs, EIO);
	assert_int_equal(draft_save(x->st, CWD, "maybe", &e2), -1);
	assert_int_equal(e2.cls, CERR_IO);
	assert_non_null(strstr(e2.msg, "directory"));
	assert_true(e2.outcome_unknown);
	faultfs_uninstall();
	assert_draft(x, "maybe");
	save(x, CWD, "old draft");
	/* A short write then ENOSPC. */
	struct cerr err = {0};
	faultfs_install();
	faultfs_short_write(1);
	FAILS(draft_save(x->st, CWD, "a longer new draft", &err), CERR_IO);
	assert_int_equal(err.sys_errno, ENOSPC);
	faultfs_uninstall();
	assert_draft(x, "old draft");
}

/* A power loss between the staging file and the rename keeps the old draft
 * whole; one after a save has the new draft (the directory was synced). */
static void test_power_loss_before_rename_keeps_the_old_draft(void **state)
{
	struct dx *x = *state;
	struct cerr err = {0};
	save(x, CWD, "old draft");
	faultfs_install();
	assert_int_equal(faultfs_track(x->root), 0);
	faultfs_fail(FF_RENAME, 1, EIO); /* the crash comes where the rename was */
	FAILS(draft_save(x->st, CWD, "new draft", &err), CERR_IO);
	const char *copy = path_in(x->dir, "crash1");
	assert_int_equal(faultfs_crash_copy(x->root, copy), 0);
	size_t n;
	uint8_t *b = slurp(path_in(copy, "drafts/%s", x->key), &n);
	assert_int_equal(n, strlen("old draft"));
	assert_memory_equal(b, "old draft", n);
	free(b);
	save(x, CWD, "new draft");
	const char *copy2 = path_in(x->dir, "crash2");
	assert_int_equal(faultfs_crash_copy(x->root, copy2), 0);
	b = slurp(path_in(copy2, "drafts/%s", x->key), &n);
	assert_int_equal(n, strlen("new draft"));
	assert_memory_equal(b, "new draft", n);
	free(b);
}

static void test_symlink_at_draft_path_is_refused(void **state)
{
	struct dx *x = *state;
	struct cerr err = {0};
	save(x, CWD, "x");
	const char *target = path_in(x->dir, "target");
	spit(target, "outside", 7, O_TRUNC);
	assert_int_equal(unlink(draft_path(x, "")), 0);
	assert_int_equal(symlink(target, draft_path(x, "")), 0);
	FAILS(draft_save(x->st, CWD, "new", &err), CERR_CORRUPT);
	assert_non_null(strstr(err.msg, "symlink"));
	char *t = NULL;
	err = (struct cerr){0};
	FAILS(draft_read(x->st, CWD, &t, &err), CERR_CORRUPT);
	assert_null(t);
	err = (struct cerr){0};
	FAILS(draft_save(x->st, CWD, "", &err), CERR_CORRUPT); /* not removed either */
	struct stat sb;
	assert_int_equal(lstat(draft_path(x, ""), &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	size_t n;
	uint8_t *b = slurp(target, &n);
	assert_memory_equal(b, "outside", 7);
	free(b);
	/* drafts/ itself a symlink. */
	rm_rf(path_in(x->root, "drafts"));
	assert_int_equal(mkdir(path_in(x->dir, "elsewhere"), 0700), 0);
	assert_int_equal(symlink(path_in(x->dir, "elsewhere"), path_in(x->root, "drafts")), 0);
	err = (struct cerr){0};
	FAILS(draft_save(x->st, CWD, "new", &err), CERR_CORRUPT);
	assert_false(exists(path_in(x->dir, "elsewhere/%s", x->key)));
}

static void test_next_save_removes_a_leftover_staging_file(void **state)
{
	struct dx *x = *state;
	save(x, CWD, "old");
	spit(draft_path(x, "+staging"), "half", 4, O_TRUNC);
	save(x, CWD, "new");
	assert_false(exists(draft_path(x, "+staging")));
	assert_draft(x, "new");
	/* Removing the draft cleans it too. */
	spit(draft_path(x, "+staging"), "half", 4, O_TRUNC);
	save(x, CWD, "");
	assert_false(exists(draft_path(x, "+staging")));
}

static void test_limits_are_usage_errors(void **state)
{
	struct dx *x = *state;
	struct cerr err = {0};
	save(x, CWD, "kept");
	char *big = xmalloc(DRAFT_MAX + 2);
	memset(big, 'a', DRAFT_MAX + 1);
	big[DRAFT_MAX + 1] = '\0';
	FAILS(draft_save(x->st, CWD, big, &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "DRAFT_MAX"));
	big[DRAFT_MAX] = '\0'; /* exactly the limit is fine */
	save(x, CWD, big);
	free(big);
	err = (struct cerr){0};
	FAILS(draft_save(x->st, CWD, "bad \xff byte", &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "UTF-8"));
	/* A draft file that is not UTF-8 is corrupt on read. */
	spit(draft_path(x, ""), "\xc3(", 2, O_TRUNC);
	char *t = NULL;
	err = (struct cerr){0};
	FAILS(draft_read(x->st, CWD, &t, &err), CERR_CORRUPT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_save_replace_read_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modes_are_owner_only_whatever_the_umask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_write_keeps_the_old_draft, setup, teardown),
		cmocka_unit_test_setup_teardown(test_power_loss_before_rename_keeps_the_old_draft, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_at_draft_path_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_next_save_removes_a_leftover_staging_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits_are_usage_errors, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
