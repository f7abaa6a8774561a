/* test_host_state.c — engine/host.c: a session's runtime state (enum
 * host_state) changes only along the table drawn at the top of host.c.
 * Every pair of states is checked against the arrows written here;
 * host_to() aborts on a change the table has no arrow for (in a child
 * process) and makes every one it has; and a real session, driven through
 * the host's API (support_host.h), goes through each arrow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/host_int.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_host.h"

/* The arrows of the table, written out again. */
static const struct {
	enum host_state from, to;
} arrows[] = {
	{HOST_OPENING, HOST_IDLE}, {HOST_OPENING, HOST_RELEASING}, {HOST_IDLE, HOST_TURN},
	{HOST_TURN, HOST_IDLE},	   {HOST_IDLE, HOST_RELEASING},
};

static bool arrow(enum host_state from, enum host_state to)
{
	for (size_t i = 0; i < sizeof arrows / sizeof *arrows; i++)
		if (arrows[i].from == from && arrows[i].to == to)
			return true;
	return false;
}

static void test_table_is_the_diagram(void **state)
{
	(void)state;
	for (int f = 0; f < HOST_STATE_COUNT; f++)
		for (int t = 0; t < HOST_STATE_COUNT; t++)
			if (host_state_allows(f, t) != arrow(f, t))
				fail_msg("%s -> %s: the table says %s, the diagram %s", host_state_name(f),
					 host_state_name(t), host_state_allows(f, t) ? "yes" : "no",
					 arrow(f, t) ? "yes" : "no");
	assert_false(host_state_allows(HOST_STATE_COUNT, HOST_IDLE));
	assert_false(host_state_allows(HOST_IDLE, HOST_STATE_COUNT));
	/* RELEASING is the end; nothing goes back to OPENING. */
	for (int t = 0; t < HOST_STATE_COUNT; t++)
		assert_false(host_state_allows(HOST_RELEASING, t));
	for (int f = 0; f < HOST_STATE_COUNT; f++)
		assert_false(host_state_allows(f, HOST_OPENING));
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(host_state_name(HOST_OPENING), "opening");
	assert_string_equal(host_state_name(HOST_IDLE), "idle");
	assert_string_equal(host_state_name(HOST_TURN), "turn");
	assert_string_equal(host_state_name(HOST_RELEASING), "releasing");
	assert_string_equal(host_state_name(HOST_STATE_COUNT), "?");
}

/* host_to from `from` to `to` in a child: its exit status (SIGABRT: the
 * assert caught it; 3: allowed but the state not changed). */
static int change_in_child(enum host_state from, enum host_state to)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		struct hsess s;
		memset(&s, 0, sizeof s);
		snprintf(s.id, sizeof s.id, "S");
		s.st = from;
		/* no stderr noise from the expected assert */
		if (!freopen("/dev/null", "w", stderr))
			_exit(4);
		struct cerr err;
		if (host_to(&s, to, &err) < 0)
			_exit(5); /* refused without the assert: only where assertions are off */
		_exit(s.st == to ? 0 : 3);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void test_host_to_checks_the_table(void **state)
{
	(void)state;
	for (int f = 0; f < HOST_STATE_COUNT; f++)
		for (int t = 0; t < HOST_STATE_COUNT; t++) {
			int st = change_in_child(f, t);
			if (arrow(f, t)) {
				if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
					fail_msg("%s -> %s refused (status %#x)", host_state_name(f),
						 host_state_name(t), st);
			} else if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
				fail_msg("%s -> %s not caught (status %#x)", host_state_name(f),
					 host_state_name(t), st);
			}
		}
}

static void open_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	struct cerr *e = ctx;
	*e = err ? *err : (struct cerr){.cls = CERR_OK, .msg = "done"};
}

/* One session through every arrow: created (OPENING -> IDLE), a turn
 * (IDLE -> TURN -> IDLE), released (IDLE -> RELEASING), opened again
 * (OPENING -> IDLE), released while opening (OPENING -> RELEASING). The
 * state read after each command returned and after each completion. */
static void test_a_session_goes_through_every_arrow(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	assert_int_equal(host_state(x->h, x->id), HOST_IDLE);
	x->hold = true;
	hx_send(x, "hello", NULL);
	assert_int_equal(host_state(x->h, x->id), HOST_TURN);
	WAIT(x, x->have_held);
	assert_int_equal(host_state(x->h, x->id), HOST_TURN); /* settling waits for the marker */
	struct cerr err;
	FAILS(host_release(x->h, x->id, hx_done_cb, x, &err), CERR_BUSY);
	x->hold = false;
	assert_int_equal(host_applied(x->h, &x->held, &err), 0);
	WAIT(x, x->settled == 1);
	assert_int_equal(host_state(x->h, x->id), HOST_IDLE);
	int before = x->calls;
	assert_int_equal(host_release(x->h, x->id, hx_done_cb, x, &err), 0);
	assert_int_equal(host_state(x->h, x->id), HOST_RELEASING);
	FAILS(host_send(x->h, x->id, &(struct host_send){.text = "late"}, hx_done_cb, x, &err),
	      CERR_BUSY);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_null(host_find(x->h, x->id)); /* forgotten */

	struct cerr opened = {.msg = ""};
	assert_int_equal(host_open(x->h, x->id, open_cb, &opened, &err), 0);
	assert_int_equal(host_state(x->h, x->id), HOST_OPENING);
	FAILS(host_send(x->h, x->id, &(struct host_send){.text = "early"}, hx_done_cb, x, &err),
	      CERR_BUSY);
	WAIT(x, opened.msg[0] != '\0');
	assert_int_equal(opened.cls, CERR_OK);
	assert_int_equal(host_state(x->h, x->id), HOST_IDLE);
	before = x->calls;
	assert_int_equal(host_release(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);

	opened = (struct cerr){.msg = ""};
	assert_int_equal(host_open(x->h, x->id, open_cb, &opened, &err), 0);
	before = x->calls;
	assert_int_equal(host_release(x->h, x->id, hx_done_cb, x, &err), 0);
	assert_int_equal(host_state(x->h, x->id), HOST_OPENING); /* until the open item is done */
	WAIT(x, opened.msg[0] != '\0' && x->calls > before);
	assert_int_equal(opened.cls, CERR_CONFLICT);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_null(host_find(x->h, x->id));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_the_diagram),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_host_to_checks_the_table),
		cmocka_unit_test_setup_teardown(test_a_session_goes_through_every_arrow, hx_setup,
						hx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
