/* test_chat_phase.c — tui/chat_phase.h: the chat screen's phases change
 * only along the diagram of chat_phase.c. Every pair of phases is checked
 * against the arrows written here, and chat_to() aborts on a change the
 * table has no arrow for (in a child process) while it makes every one it
 * has. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tui/chat_int.h"
#include "tui/chat_phase.h"

/* The arrows of the diagram, written out again. */
static const struct {
	enum chat_phase from, to;
} arrows[] = {
	{CHAT_OPENING, CHAT_PREVIEW},   {CHAT_OPENING, CHAT_READY},   {CHAT_OPENING, CHAT_VIEW_ONLY},
	{CHAT_OPENING, CHAT_FAILED},    {CHAT_OPENING, CHAT_CLOSING}, {CHAT_PREVIEW, CHAT_READY},
	{CHAT_PREVIEW, CHAT_VIEW_ONLY}, {CHAT_PREVIEW, CHAT_FAILED},  {CHAT_PREVIEW, CHAT_CLOSING},
	{CHAT_READY, CHAT_READY},       {CHAT_READY, CHAT_FAILED},    {CHAT_READY, CHAT_CLOSING},
	{CHAT_VIEW_ONLY, CHAT_CLOSING}, {CHAT_FAILED, CHAT_CLOSING},
};

static bool arrow(enum chat_phase from, enum chat_phase to)
{
	for (size_t i = 0; i < sizeof arrows / sizeof *arrows; i++)
		if (arrows[i].from == from && arrows[i].to == to)
			return true;
	return false;
}

static void test_table_is_the_diagram(void **state)
{
	(void)state;
	for (int f = 0; f < CHAT_PHASE_COUNT; f++)
		for (int t = 0; t < CHAT_PHASE_COUNT; t++)
			if (chat_phase_allows(f, t) != arrow(f, t))
				fail_msg("%s -> %s: the table says %s, the diagram %s", chat_phase_name(f),
					 chat_phase_name(t), chat_phase_allows(f, t) ? "yes" : "no",
					 arrow(f, t) ? "yes" : "no");
	/* Out of range is never a phase. */
	assert_false(chat_phase_allows(CHAT_PHASE_COUNT, CHAT_READY));
	assert_false(chat_phase_allows(CHAT_READY, CHAT_PHASE_COUNT));
}

static void test_closing_is_the_end_and_every_phase_reaches_it(void **state)
{
	(void)state;
	for (int t = 0; t < CHAT_PHASE_COUNT; t++)
		assert_false(chat_phase_allows(CHAT_CLOSING, t));
	for (int f = 0; f < CHAT_CLOSING; f++)
		assert_true(chat_phase_allows(f, CHAT_CLOSING));
	/* Nothing goes back to opening, and a preview is only ever first. */
	for (int f = 0; f < CHAT_PHASE_COUNT; f++) {
		assert_false(chat_phase_allows(f, CHAT_OPENING));
		if (f != CHAT_OPENING)
			assert_false(chat_phase_allows(f, CHAT_PREVIEW));
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(chat_phase_name(CHAT_VIEW_ONLY), "view-only");
	assert_string_equal(chat_phase_name(CHAT_OPENING), "opening");
	assert_string_equal(chat_phase_name(CHAT_PHASE_COUNT), "?");
}

/* chat_to from `from` to `to` in a child: its exit status (SIGABRT: the
 * assert caught it). closed_in is what the child's chat says after. */
static int change_in_child(enum chat_phase from, enum chat_phase to)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		struct chat c;
		memset(&c, 0, sizeof c);
		c.phase = from;
		/* no stderr noise from the expected assert */
		freopen("/dev/null", "w", stderr);
		chat_to(&c, to);
		if (c.phase != to || (to == CHAT_CLOSING && c.closed_in != from))
			_exit(3);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void test_chat_to_checks_the_table(void **state)
{
	(void)state;
	for (int f = 0; f < CHAT_PHASE_COUNT; f++)
		for (int t = 0; t < CHAT_PHASE_COUNT; t++) {
			int st = change_in_child(f, t);
			if (arrow(f, t)) {
				if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
					fail_msg("%s -> %s refused (status %#x)", chat_phase_name(f),
						 chat_phase_name(t), st);
			} else if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
				fail_msg("%s -> %s not caught (status %#x)", chat_phase_name(f),
					 chat_phase_name(t), st);
			}
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_the_diagram),
		cmocka_unit_test(test_closing_is_the_end_and_every_phase_reaches_it),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_chat_to_checks_the_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
