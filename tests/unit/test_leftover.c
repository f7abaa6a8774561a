/* test_leftover.c — what interrupted creations leave (persist/leftover.h):
 * a writer SIGKILLed in its first publication leaves a staging file and a
 * folder without a log, which are found and removed; and a cleanup that
 * runs in the middle of a creation never makes that creation fail. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "persist/fsops.h"
#include "persist/leftover.h"
#include "persist/lock.h"
#include "persist/log.h"
#include "persist/safefs.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

struct fx {
	char dir[64];
	char root[128];
	struct store *st;
};

#define P(f, ...) path_in((f)->dir, __VA_ARGS__)
#define ID "01LEFTOVERTEST000000000000"

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct cerr err;
	if (tmp_root("cairn-test-leftover", f->dir, sizeof f->dir, f->root, sizeof f->root) < 0 ||
	    store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	faultfs_set_sync_hook(NULL, NULL);
	faultfs_uninstall();
	store_close(f->st);
	rm_rf(f->dir);
	free(f);
	return 0;
}

static size_t count_glob(const char *pattern)
{
	glob_t g;
	size_t n = glob(pattern, GLOB_PERIOD, NULL, &g) == 0 ? g.gl_pathc : 0;
	globfree(&g);
	return n;
}

/* One event appended to a new session `id` under st. */
static int create(struct store *st, const char *id, struct cerr *err)
{
	cJSON *data = cJSON_Parse("{\"text\":\"hello\"}");
	struct log_event ev = {.type = "user/message", .turn = "t1", .data = data};
	struct log *lg;
	int r = log_create(st, id, NULL, NULL, &lg, err);
	if (r == 0) {
		r = log_append(lg, 1, &ev, 1, NULL, err);
		log_close(lg);
	}
	cJSON_Delete(data);
	return r;
}

static const char *kill_pattern;

/* Before any sync once the staging file exists: die as kill -9 would. */
static void kill_at_staging_sync(void *ctx, enum faultfs_op op, bool after)
{
	(void)ctx, (void)op;
	if (!after && count_glob(kill_pattern) > 0)
		kill(getpid(), SIGKILL);
}

static void test_kill_during_creation_leaves_a_tmp_not_a_session(void **state)
{
	struct fx *f = *state;
	kill_pattern = P(f, "root/sessions/*/" ID "/.session.jsonl.zst.*.tmp");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cerr err;
		faultfs_install();
		faultfs_set_sync_hook(kill_at_staging_sync, NULL);
		create(f->st, ID, &err);
		_exit(0); /* not killed: the test fails below */
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(count_glob(kill_pattern), 1);

	/* Not a session. */
	struct session_ref *refs;
	size_t n;
	struct cerr err;
	assert_int_equal(store_list(f->st, STORE_SESSIONS, &refs, &n, &err), 0);
	assert_int_equal(n, 0);
	free(refs);
	struct store_entry *ents;
	assert_int_equal(store_list_entries(f->st, &ents, &n, &err), 0);
	assert_int_equal(n, 0);
	free(ents);
	FAILS(store_resolve(f->st, ID, &(struct session_ref){0}, &err), CERR_MISSING);

	/* A leftover: a folder without a log, with one staging file. */
	struct leftover *v;
	assert_int_equal(leftover_list(f->st, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].ref.id, ID);
	assert_true(v[0].no_log);
	assert_false(v[0].trash || v[0].foreign);
	assert_int_equal(v[0].staging, 1);
	assert_true(v[0].staging_bytes > 0);
	bool gone = false;
	assert_int_equal(leftover_remove(f->st, &v[0], &gone, &err), 0);
	assert_true(gone);
	free(v);
	assert_int_equal(count_glob(P(f, "root/sessions/*/" ID)), 0);
	assert_int_equal(leftover_list(f->st, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	free(v);
	/* And the id can be created afresh. */
	assert_int_equal(create(f->st, ID, &err), 0);
}

/* A cleanup run from inside a creator's directory sync: the creator has
 * just made the session folder, or opened a leftover folder of the same
 * id, and holds no lock yet. */
static struct {
	struct store *st;
	int syncs, first_sync; /* act from the first_sync-th sync on */
	int runs, max_runs, removed;
	bool busy, hold;       /* hold: take the lock for a moment instead */
	pthread_t holder;
	int held_fd;
} cleaner;

static void *release_later(void *arg)
{
	(void)arg;
	usleep(30 * 1000);
	lock_release(cleaner.held_fd);
	return NULL;
}

static void clean_during_sync(void *ctx, enum faultfs_op op, bool after)
{
	(void)ctx, (void)op;
	if (after || cleaner.busy || ++cleaner.syncs < cleaner.first_sync ||
	    cleaner.runs >= cleaner.max_runs)
		return;
	cleaner.busy = true;
	/* The hook runs inside the fault table's lock: the cleanup goes to
	 * the system directly, as another process's would. */
	fsops = &fsops_real;
	struct leftover *v;
	size_t n;
	struct cerr err;
	if (leftover_list(cleaner.st, &v, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++) {
			if (strcmp(v[i].ref.id, ID) != 0)
				continue;
			cleaner.runs++;
			if (cleaner.hold) {
				int kfd = -1, dfd = -1;
				if (store_open_session_dir(cleaner.st, &v[i].ref, false, &kfd, &dfd,
							   &err) == 0) {
					cleaner.held_fd = lock_take(kfd, ID, dfd, &err);
					if (cleaner.held_fd >= 0 &&
					    pthread_create(&cleaner.holder, NULL, release_later, NULL) == 0)
						cleaner.removed++;
				}
				close(kfd);
				close(dfd);
				continue;
			}
			bool gone = false;
			if (leftover_remove(cleaner.st, &v[i], &gone, &err) == 0 && gone)
				cleaner.removed++;
		}
		free(v);
	}
	fsops = &faultfs_ops;
	cleaner.busy = false;
}

/* The creation raced a cleanup and still made the session whole. */
static void creation_won(struct fx *f, int r, struct cerr *err)
{
	if (r < 0)
		fail_msg("creation failed while a cleanup ran: %s", err->msg);
	struct log *lg;
	assert_int_equal(log_open(f->st, ID, &lg, err), 0);
	assert_int_equal(log_next_seq(lg), 2);
	log_close(lg);
}

static void creation_survives(struct fx *f, bool leftover_first, bool hold, int max_runs)
{
	/* With a leftover folder there, the creator syncs the root, sessions/
	 * and then the project folder right after opening the id folder: act
	 * there, when it holds the folder and no lock. */
	int first_sync = leftover_first ? 3 : 1;
	struct cerr err;
	if (leftover_first) {
		/* A folder of the same id left by an earlier crash. */
		char *d = session_path(f->root, STORE_SESSIONS, NULL, ID, NULL);
		assert_int_equal(mkdir(P(f, "root/sessions"), 0700), 0);
		assert_int_equal(mkdir(P(f, "root/sessions/_no-cwd"), 0700), 0);
		assert_int_equal(mkdir(d, 0700), 0);
		free(d);
	}
	memset(&cleaner, 0, sizeof cleaner);
	cleaner.st = f->st;
	cleaner.max_runs = max_runs;
	cleaner.first_sync = first_sync;
	cleaner.hold = hold;
	faultfs_install();
	faultfs_set_sync_hook(clean_during_sync, NULL);
	int r = create(f->st, ID, &err);
	faultfs_set_sync_hook(NULL, NULL);
	faultfs_uninstall();
	if (hold && cleaner.removed)
		pthread_join(cleaner.holder, NULL);
	/* The race really happened, and the creation won anyway. */
	assert_true(cleaner.removed >= 1);
	creation_won(f, r, &err);
	struct leftover *v;
	size_t n;
	assert_int_equal(leftover_list(f->st, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	free(v);
}

/* The folder the creator just made is removed before it is opened, three
 * times in a row. */
static void test_cleanup_removes_a_fresh_folder(void **state)
{
	creation_survives(*state, false, false, 3);
}

/* The creator opened a leftover folder of its id; it is removed before the
 * creator locks it. */
static void test_cleanup_removes_an_opened_folder(void **state)
{
	creation_survives(*state, true, false, 1);
}

/* The cleanup holds the lock of the folder the creator is about to lock. */
static void test_cleanup_holds_the_lock_a_moment(void **state)
{
	creation_survives(*state, true, true, 1);
}

/* A cleanup removes the id folder right after the creator made it, before
 * the creator set its mode (a cleanup sees an empty folder there): the
 * creator makes it again. */
static int removed_after_mkdir;

static void remove_after_mkdir(void *ctx, int dirfd, const char *path)
{
	(void)ctx;
	if (strcmp(path, ID) == 0 && removed_after_mkdir < 3 &&
	    unlinkat(dirfd, path, AT_REMOVEDIR) == 0)
		removed_after_mkdir++;
}

static void test_cleanup_removes_the_folder_just_made(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	removed_after_mkdir = 0;
	faultfs_install();
	faultfs_set_mkdir_hook(remove_after_mkdir, NULL);
	int r = create(f->st, ID, &err);
	faultfs_uninstall();
	assert_int_equal(removed_after_mkdir, 3);
	creation_won(f, r, &err);
}

/* A leftover whose lock a live writer holds is left whole. */
static void test_held_leftover_left_alone(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	char *d = session_path(f->root, STORE_SESSIONS, NULL, ID, NULL);
	assert_int_equal(mkdir(P(f, "root/sessions"), 0700), 0);
	assert_int_equal(mkdir(P(f, "root/sessions/_no-cwd"), 0700), 0);
	assert_int_equal(mkdir(d, 0700), 0);
	spit(path_in(d, ".session.jsonl.zst.0123456789ab.tmp"), "x", 1, 0);
	int kfd = -1, dfd = -1;
	struct session_ref ref = {ID, "_no-cwd"};
	assert_int_equal(store_open_session_dir(f->st, &ref, false, &kfd, &dfd, &err), 0);
	int lockfd = lock_take(kfd, ID, dfd, &err);
	assert_true(lockfd >= 0);
	struct leftover *v;
	size_t n;
	assert_int_equal(leftover_list(f->st, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	bool gone = true;
	FAILS(leftover_remove(f->st, &v[0], &gone, &err), CERR_LOCKED);
	assert_false(gone);
	assert_true(exists(path_in(d, ".session.jsonl.zst.0123456789ab.tmp")));
	lock_release(lockfd);
	assert_int_equal(leftover_remove(f->st, &v[0], &gone, &err), 0);
	assert_true(gone);
	assert_false(exists(d));
	free(v);
	close(kfd);
	close(dfd);
	free(d);
}

/* A staging file beside a published log goes, and nothing else does: the
 * folder, its log and its lock file stay (the listing that removed the
 * staging file once left the folder reading as empty, so the lock file
 * of the live session was removed with it). */
static void test_staging_cleanup_keeps_a_live_sessions_lock_file(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	assert_int_equal(create(f->st, ID, &err), 0);
	char *d = session_path(f->root, STORE_SESSIONS, NULL, ID, NULL);
	assert_true(exists(path_in(d, "%s", LOCK_FILE)));
	spit(path_in(d, ".session.jsonl.zst.0123456789ab.tmp"), "x", 1, 0);
	struct leftover *v;
	size_t n;
	assert_int_equal(leftover_list(f->st, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_false(v[0].no_log);
	bool gone = true;
	assert_int_equal(leftover_remove(f->st, &v[0], &gone, &err), 0);
	assert_false(gone);
	assert_false(exists(path_in(d, ".session.jsonl.zst.0123456789ab.tmp")));
	assert_true(exists(path_in(d, "%s", LOG_FILE)));
	assert_true(exists(path_in(d, "%s", LOCK_FILE)));
	free(v);
	free(d);
}

int main(void)
{
#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_kill_during_creation_leaves_a_tmp_not_a_session),
		T(test_cleanup_removes_a_fresh_folder),
		T(test_cleanup_removes_an_opened_folder),
		T(test_cleanup_holds_the_lock_a_moment),
		T(test_cleanup_removes_the_folder_just_made),
		T(test_held_leftover_left_alone),
		T(test_staging_cleanup_keeps_a_live_sessions_lock_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
