/* test_pool.c — base/pool.h: every job of a worker pool runs exactly once. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/pool.h"

struct pjob {
	struct pool_job job;
	atomic_int runs;
	pthread_t by;
	atomic_bool *gate; /* wait until it opens, if set */
};

static void pjob_run(void *arg)
{
	struct pjob *j = arg;
	while (j->gate && !atomic_load(j->gate))
		usleep(100);
	j->by = pthread_self();
	atomic_fetch_add(&j->runs, 1);
}

/* Every job runs exactly once, by a helper or by the waiter: with no
 * helpers all run in pool_wait; a job a helper is still running is waited
 * for (not run twice); many jobs over few helpers all complete. */
static void test_pool_runs_every_job_exactly_once(void **state)
{
	(void)state;
	struct cerr err;
	struct pool *p = pool_new(0, &err);
	assert_non_null(p);
	struct pjob a = {.job = {.fn = pjob_run}};
	a.job.arg = &a;
	pool_submit(p, &a.job);
	pool_wait(p, &a.job);
	assert_int_equal(atomic_load(&a.runs), 1);
	assert_true(pthread_equal(a.by, pthread_self()));
	pool_free(p);

	p = pool_new(2, &err);
	assert_non_null(p);
	atomic_bool gate = false;
	struct pjob slow = {.job = {.fn = pjob_run}, .gate = &gate};
	slow.job.arg = &slow;
	pool_submit(p, &slow.job);
	while (atomic_load(&slow.job.state) == 0) /* queued: wait for a helper to take it */
		usleep(100);
	atomic_store(&gate, true);
	pool_wait(p, &slow.job);
	assert_int_equal(atomic_load(&slow.runs), 1);
	assert_false(pthread_equal(slow.by, pthread_self()));

	enum { N = 200 };
	static struct pjob many[N];
	for (int i = 0; i < N; i++) {
		many[i] = (struct pjob){.job = {.fn = pjob_run}};
		many[i].job.arg = &many[i];
		pool_submit(p, &many[i].job);
	}
	for (int i = N - 1; i >= 0; i--) /* out of order: queued ones run here */
		pool_wait(p, &many[i].job);
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&many[i].runs), 1);
	pool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_runs_every_job_exactly_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
