/* test_fifo_move.c — the FIFO's moves of a whole session (persist/fifo.h;
 * the fixture: support_fifo.h): delete to the trash, restore, purge, the
 * catalog following each; delete refused while the session runs here or
 * another process holds its lock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/fifo.h"
#include "persist/lock.h"
#include "persist/log.h"
#include "persist/pathkey.h"
#include "persist/store.h"
#include "tests/unit/support_fifo.h"
#include "tests/unit/support_fixture.h"

/* Delete moves the whole directory to the trash, restore brings it back
 * (and appends work again), purge removes it, lock file included, and the
 * catalog forgets it. */
static void test_delete_restore_purge_move_the_whole_directory(void **state)
{
	struct fx *x = *state;
	struct rec c;
	const char *cwd = "/tmp/cairn-fifo-proj";
	step(x, create("A", cwd, "a", 2), &c);
	char *key = pathkey_project(cwd);
	char *live = xasprintf("%s/%s/%s/A", x->root, STORE_SESSIONS, key);
	char *trash = xasprintf("%s/%s/%s/A", x->root, STORE_TRASH, key);
	char *tlock = xasprintf("%s/%s", trash, LOCK_FILE);
	char *tlog = xasprintf("%s/%s", trash, LOG_FILE);
	assert_true(exists(live));

	step_ok(x, fifo_delete("A"), &c, "delete");
	assert_true(c.r.deleted_at > 0);
	assert_false(exists(live));
	assert_true(exists(tlog));
	assert_true(exists(tlock));
	struct cat_session row = row_of(x, "A");
	assert_int_equal(row.deleted_at, c.r.deleted_at);
	cat_session_release(&row);

	step_ok(x, fifo_restore("A"), &c, "restore");
	assert_true(exists(live));
	assert_false(exists(trash));
	row = row_of(x, "A");
	assert_int_equal(row.deleted_at, 0);
	cat_session_release(&row);
	step_ok(x, hist("A", 3, "restored", 1), &c, "history after restore");
	assert_int_equal(c.r.next_seq, 4);

	step(x, fifo_purge("A"), &c); /* not in the trash */
	want_err(&c, CERR_MISSING, "purge of a live session");
	assert_true(exists(live));
	step_ok(x, fifo_delete("A"), &c, "delete again");
	step_ok(x, fifo_purge("A"), &c, "purge");
	assert_false(exists(tlock));
	assert_false(exists(trash));
	assert_false(exists(live));
	struct cerr err;
	assert_int_equal(catalog_get(x->cat, "A", &row, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	struct cat_watermark wm;
	assert_int_equal(catalog_get_watermark(x->cat, "A", &wm, &err), 0);
	assert_false(wm.known); /* its log is gone: so is its watermark */
	step_err(x, fifo_restore("A"), &c, CERR_MISSING, "restore after purge");
	step_err(x, fifo_delete("nobody"), &c, CERR_MISSING, "delete of an unknown session");
	free(key), free(live), free(trash), free(tlock), free(tlog);
}

/* Delete is refused while the session runs or another process holds its
 * lock; nothing moves; it goes through once released. */
static void test_delete_is_refused_while_running_or_locked(void **state)
{
	struct fx *x = *state;
	struct rec c;
	struct cerr err;
	struct log *lg;
	step_ok(x, create("L", NULL, "l", 1), &c, "create");
	step_ok(x, fifo_delete("L"), &c, "delete"); /* the FIFO lets go of its lock */
	step_ok(x, fifo_restore("L"), &c, "restore");
	int ready[2], go[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork(); /* the child only locks the log and waits */
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store *st;
		char b = 'n';
		if (store_open(x->root, false, &st, &err) == 0 && log_open(st, "L", &lg, &err) == 0)
			b = 'y';
		if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) < 0)
			_exit(2);
		_exit(0);
	}
	char b = 0;
	assert_int_equal(read(ready[0], &b, 1), 1);
	assert_int_equal(b, 'y');
	char *live = file_of(x, STORE_SESSIONS, NULL, "L");
	step_err(x, fifo_delete("L"), &c, CERR_LOCKED, "delete of a session locked elsewhere");
	assert_true(exists(live));
	assert_int_equal(write(go[1], "x", 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);

	step(x, create("R", NULL, "r", 1), &c);
	assert_int_equal(catalog_set_status(x->cat, "R", "running", &err), 0);
	step_err(x, fifo_delete("R"), &c, CERR_LOCKED, "delete of a running session");
	assert_int_equal(next_seq_of(x, "R"), 2);
	assert_int_equal(catalog_set_status(x->cat, "R", NULL, &err), 0);
	step_ok(x, fifo_delete("R"), &c, "delete once stopped");
	step_ok(x, fifo_delete("L"), &c, "delete once unlocked");
	assert_false(exists(live));
	free(live);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FIFOFX_TEST(test_delete_restore_purge_move_the_whole_directory),
		FIFOFX_TEST(test_delete_is_refused_while_running_or_locked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
