/* test_bgprio.c — background threads run below the loop thread
 * (base/bgprio.h): a thread that enters the background level is BGPRIO_NICE
 * steps nicer than the process, once however often it asks, and the
 * thread that did not ask (the loop's) keeps its priority. Linux only: a
 * nice value is per thread there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/bgprio.h"
#include "base/pool.h"

static int my_nice(void)
{
	errno = 0;
	int n = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	assert_false(n == -1 && errno != 0);
	return n;
}

static int seen[2];

static void *background(void *arg)
{
	(void)arg;
	bgprio_enter();
	seen[0] = my_nice();
	bgprio_enter(); /* once per thread: no further step */
	seen[1] = my_nice();
	return NULL;
}

static void test_background_thread_is_nicer_than_the_loop(void **state)
{
	(void)state;
	int base = my_nice();
	if (base + BGPRIO_NICE > 19)
		skip(); /* already as nice as a thread can be */
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, background, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(seen[0], base + BGPRIO_NICE);
	assert_int_equal(seen[1], base + BGPRIO_NICE);
	assert_int_equal(my_nice(), base);
}

static int helper_nice = -100;
static atomic_int ran;

static void job_fn(void *arg)
{
	(void)arg;
	helper_nice = my_nice();
	atomic_store(&ran, 1);
}

/* The persistence writer's helper threads (base/pool.c) start there. */
static void test_pool_helpers_run_in_the_background(void **state)
{
	(void)state;
	int base = my_nice();
	if (base + BGPRIO_NICE > 19)
		skip();
	struct cerr err;
	struct pool *p = pool_new(1, &err);
	assert_non_null(p);
	struct pool_job job = {.fn = job_fn};
	pool_submit(p, &job);
	/* Let the helper take it (pool_wait would run it here otherwise). */
	for (int i = 0; i < 10000 && !atomic_load(&ran); i++)
		usleep(1000);
	assert_true(atomic_load(&ran));
	pool_wait(p, &job);
	pool_free(p);
	assert_int_equal(helper_nice, base + BGPRIO_NICE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_background_thread_is_nicer_than_the_loop),
		cmocka_unit_test(test_pool_helpers_run_in_the_background),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
