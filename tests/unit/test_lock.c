/* test_lock.c — the session writer lock (persist/lock.h) against real files
 * (the fixture: support_log.h): exclusive within one process and across
 * processes without waiting, refused for a directory renamed away or a lock
 * file replaced under it, a probe's shared lock waited out but never a
 * writer's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "persist/fsops.h"
#include "persist/lock.h"
#include "persist/log.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_log.h"

/* ---- the writer lock ---- */

static int open_dir(const char *p)
{
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

static void test_lock_is_exclusive_within_one_process(void **state)
{
	struct fx *f = *state;
	assert_int_equal(mkdir(P(f, "s"), 0700), 0);
	int key = open_dir(f->dir), dir = open_dir(P(f, "s"));
	struct cerr err;
	int a = lock_take(key, "s", dir, &err);
	assert_true(a >= 0);
	struct stat st;
	assert_int_equal(lstat(P(f, "s/session.lock"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	uint64_t t0 = clock_mono_ns();
	FAILS(lock_take(key, "s", dir, &err), CERR_LOCKED);
	assert_non_null(strstr(err.msg, "'s'"));
	FAILS(lock_take(-1, NULL, dir, &err), CERR_LOCKED);
	assert_true(clock_mono_ns() - t0 < 500000000u); /* never waits */
	lock_release(a);
	lock_release(-1);
	int b = lock_take(key, "s", dir, &err);
	assert_true(b >= 0);
	lock_release(b);
	close(dir);
	close(key);
}

/* Run lock_take on path in a child process; returns its error class. */
static int child_lock_class(const char *path)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cerr err = {0};
		int d = open(path, O_RDONLY | O_DIRECTORY);
		int fd = lock_take(-1, "c", d, &err);
		_exit(fd >= 0 ? 0 : (int)err.cls);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_lock_held_by_another_process_is_locked(void **state)
{
	struct fx *f = *state;
	make_session(f, "held", 1);
	const char *sdir = P(f, "root/sessions/_no-cwd/held");
	assert_int_equal(child_lock_class(sdir), 0);
	struct log *lg = open_ok(f, "held");
	struct cerr err;
	uint64_t t0 = clock_mono_ns();
	assert_int_equal(child_lock_class(sdir), CERR_LOCKED);
	assert_true(clock_mono_ns() - t0 < 2000000000u);
	log_close(lg);
	assert_int_equal(child_lock_class(sdir), 0);

	/* a child holds it: log_open here is refused at once, then works */
	int go[2], done[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct log *cl;
		struct cerr ce;
		close(go[0]);
		close(done[1]); /* EOF on done when the parent exits, even failing */
		char c = log_open(f->st, "held", &cl, &ce) == 0 ? 'y' : 'n';
		if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(go[1]);
	close(done[0]);
	char c;
	assert_int_equal(read(go[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	t0 = clock_mono_ns();
	FAILS(log_open(f->st, "held", &lg, &err), CERR_LOCKED);
	assert_true(clock_mono_ns() - t0 < 2000000000u);
	assert_int_equal(write(done[1], "x", 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(log_open(f->st, "held", &lg, &err), 0);
	log_close(lg);
	close(go[0]), close(done[1]);
}

static const char *swap_lock_path;
static int swapping_flock(int fd, int op)
{
	if (swap_lock_path && (op & LOCK_EX)) {
		/* another process replaced session.lock between open and flock */
		char tmp[1100];
		snprintf(tmp, sizeof tmp, "%s.new", swap_lock_path);
		int t = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
		close(t);
		rename(tmp, swap_lock_path);
		swap_lock_path = NULL;
	}
	return fsops_real.flock(fd, op);
}

static void test_lock_refuses_a_directory_renamed_away(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	assert_int_equal(mkdir(P(f, "s"), 0700), 0);
	int key = open_dir(f->dir), dir = open_dir(P(f, "s"));
	/* renamed away after we opened it */
	assert_int_equal(rename(P(f, "s"), P(f, "gone")), 0);
	FAILS(lock_take(key, "s", dir, &err), CERR_MISSING);
	/* and a new directory of the same name appeared */
	assert_int_equal(mkdir(P(f, "s"), 0700), 0);
	FAILS(lock_take(key, "s", dir, &err), CERR_MISSING);
	/* the lock is not left held by the failed attempts */
	int lk = lock_take(-1, "gone", dir, &err);
	assert_true(lk >= 0);
	lock_release(lk);
	/* the lock file itself was replaced between open and flock */
	static struct fsops swap_ops;
	swap_ops = fsops_real;
	swap_ops.flock = swapping_flock;
	swap_lock_path = P(f, "gone/session.lock");
	fsops = &swap_ops;
	assert_int_equal(lock_take(-1, "gone", dir, &err), -1);
	fsops = &fsops_real;
	assert_int_equal(err.cls, CERR_MISSING);
	lk = lock_take(-1, "gone", dir, &err);
	assert_true(lk >= 0);
	lock_release(lk);
	close(dir);
	close(key);
}

/* A probe (lock_probe: a shared lock for the instant of one call) that
 * holds the lock just when a writer takes it: the flock below takes such
 * a shared lock right before the writer's first exclusive attempt and
 * drops it at the next call, as a probe on another thread would. */
static const char *probe_lock_path;
static int probe_fd = -1;
static int probing_flock(int fd, int op)
{
	if (probe_fd >= 0) {
		close(probe_fd); /* the probe is over */
		probe_fd = -1;
	} else if (probe_lock_path && (op & LOCK_EX)) {
		probe_fd = open(probe_lock_path, O_RDONLY | O_CLOEXEC);
		assert_int_equal(flock(probe_fd, LOCK_SH | LOCK_NB), 0);
		probe_lock_path = NULL;
	}
	return fsops_real.flock(fd, op);
}

/* A writer taking the lock while a listing probes it is not refused: the
 * probe's shared lock is told from a writer's and waited out; a writer's
 * exclusive lock still refuses at once. */
static void test_lock_waits_out_a_probe_but_not_a_writer(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	assert_int_equal(mkdir(P(f, "s"), 0700), 0);
	int dir = open_dir(P(f, "s"));
	int lk = lock_take(-1, "s", dir, &err); /* the lock file exists */
	assert_true(lk >= 0);
	lock_release(lk);
	static struct fsops probe_ops;
	probe_ops = fsops_real;
	probe_ops.flock = probing_flock;
	probe_lock_path = P(f, "s/session.lock");
	fsops = &probe_ops;
	lk = lock_take(-1, "s", dir, &err);
	fsops = &fsops_real;
	if (lk < 0)
		fail_msg("refused while only a probe held the lock: %s", err.msg);
	assert_null(probe_lock_path); /* the probe did happen */
	/* held by a writer: the next one is refused */
	FAILS(lock_take(-1, "s", dir, &err), CERR_LOCKED);
	bool held = false;
	assert_int_equal(lock_probe(dir, &held, &err), 0);
	assert_true(held);
	lock_release(lk);
	assert_int_equal(lock_probe(dir, &held, &err), 0);
	assert_false(held);
	close(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		LOGFX_TEST(test_lock_is_exclusive_within_one_process),
		LOGFX_TEST(test_lock_held_by_another_process_is_locked),
		LOGFX_TEST(test_lock_refuses_a_directory_renamed_away),
		LOGFX_TEST(test_lock_waits_out_a_probe_but_not_a_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
