/* test_parts_prompt.c — app/parts.c reads the system prompt's files (the
 * AGENTS.md files) on a libuv worker, never on the loop: with the only
 * worker held, parts_load_prompt returns having read nothing, an
 * AGENTS.md written after it returned is what the read finds, and the
 * call cannot be chosen before a read ended. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/parts.h"
#include "support_fixture.h"

/* The command table lives in app/main.c, which a test does not link; the
 * parts never look a command up. */
const struct command cli_commands[] = {{0}};

static char dir[64];

static int setup(void **state)
{
	(void)state;
	char root[80];
	if (tmp_root("partsprompt", dir, sizeof dir, root, sizeof root) < 0)
		return -1;
	mkdir(path_in(dir, "cfg"), 0700);
	mkdir(path_in(dir, "work"), 0700);
	setenv("HOME", dir, 1);
	setenv("XDG_CONFIG_HOME", path_in(dir, "cfg"), 1);
	return chdir(path_in(dir, "work"));
}

static int teardown(void **state)
{
	(void)state;
	if (chdir("/") < 0)
		return -1;
	rm_rf(dir);
	return 0;
}

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int held, open_gate;

/* Holds the pool's only thread until the gate opens. */
static void hold_work(uv_work_t *w)
{
	(void)w;
	pthread_mutex_lock(&gate);
	held = 1;
	pthread_cond_broadcast(&gate_cv);
	while (!open_gate)
		pthread_cond_wait(&gate_cv, &gate);
	pthread_mutex_unlock(&gate);
}

static void hold_after(uv_work_t *w, int status)
{
	(void)w, (void)status;
}

static void read_cb(void *ctx)
{
	(*(int *)ctx)++;
}

static void test_agents_md_is_read_on_a_worker_after_the_ask(void **state)
{
	(void)state;
	spit(path_in(dir, "work/AGENTS.md"), "rules before\n", 13, O_TRUNC);
	struct cli c = {.data_dir = path_in(dir, "root")};
	struct parts p;
	struct cerr err;
	if (parts_open(&p, &c, NULL, false, &err) < 0)
		fail_msg("parts_open: %s", err.msg);
	/* No read ended yet: the call cannot be chosen. */
	assert_int_equal(parts_select_call(&p, "01JNOSESSION00000000000000", NULL, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "not read yet"));
	uv_work_t hold;
	assert_int_equal(uv_queue_work(&p.loop, &hold, hold_work, hold_after), 0);
	pthread_mutex_lock(&gate);
	while (!held)
		pthread_cond_wait(&gate_cv, &gate);
	pthread_mutex_unlock(&gate);
	int calls = 0;
	parts_load_prompt(&p, read_cb, &calls);
	/* Nothing was read on this thread: no prompt, no call back. */
	assert_false(p.sp_built);
	assert_int_equal(calls, 0);
	spit(path_in(dir, "work/AGENTS.md"), "rules after the ask\n", 20, O_TRUNC);
	pthread_mutex_lock(&gate);
	open_gate = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate);
	while (calls == 0)
		uv_run(&p.loop, UV_RUN_ONCE);
	assert_int_equal(calls, 1);
	assert_true(p.sp_built);
	assert_non_null(strstr(p.sp.text, "rules after the ask"));
	assert_null(strstr(p.sp.text, "rules before"));
	parts_close(&p, 5000, NULL, NULL);
	uv_run(&p.loop, UV_RUN_DEFAULT);
	parts_release(&p);
}

int main(void)
{
	/* One worker, so that holding it holds every read. */
	setenv("UV_THREADPOOL_SIZE", "1", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_agents_md_is_read_on_a_worker_after_the_ask, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
