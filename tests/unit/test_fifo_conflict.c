/* test_fifo_conflict.c — persist/fifo.h (the fixture: support_fifo.h)
 * when an item fails: a wrong expected seq or a stale version conflicts
 * and writes nothing, the session's later items fail fast naming the first
 * failure while other sessions go on, a full save at the right seq and
 * version recovers it; an empty full save still checks its seq; an invalid
 * event fails its own item only, and events the log cannot store are
 * refused naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "persist/catalog.h"
#include "persist/fifo.h"
#include "persist/scan.h"
#include "tests/unit/support_fifo.h"

/* A wrong expected seq is a conflict that writes nothing; the session's
 * later history and meta items fail fast (naming the first failure) and
 * write nothing while another session goes on; a full save with a stale
 * version conflicts too and shows it unsaved; one with the right seq and
 * version recovers it (idle again), and history works again. */
static void test_conflict_fail_fast_recovery(void **state)
{
	struct fx *x = *state;
	struct rec c[4];
	step(x, create("A", NULL, "a", 2), &c[0]);
	step(x, create("B", NULL, "b", 1), &c[1]);
	size_t n;
	uint8_t *before = log_bytes(x, "A", &n);

	step_err(x, hist("A", 99, "wrong", 1), &c[0], CERR_CONFLICT, "history at a wrong seq");
	assert_false(c[0].err.outcome_unknown);
	assert_same_bytes(x, "A", before, n);
	struct cerr first = c[0].err;

	post(x, hist("A", 3, "after", 1), &c[0]);
	post(x, meta("{\"title\":\"never\"}"), &c[1]);
	post(x, hist("B", 2, "b2", 1), &c[2]);
	wait_all(x, c, 3);
	for (int i = 0; i < 2; i++) {
		assert_false(c[i].ok);
		if (!strstr(c[i].err.msg, first.msg))
			fail_msg("a fail-fast error does not name the first failure: %s",
				 c[i].err.msg);
	}
	want_ok(&c[2], "another session");
	assert_int_equal(c[2].r.next_seq, 3);
	assert_same_bytes(x, "A", before, n);

	step_err(x, full("A", 3, 1, "stale", 1), &c[0], CERR_CONFLICT, "full save with a stale version");
	assert_same_bytes(x, "A", before, n);
	struct cat_session row = row_of(x, "A");
	assert_int_equal(row.content_version, 3);
	/* A failed full save shows unsaved (DESIGN §3), as one at a stale seq does. */
	bool unsaved = row.status && strcmp(row.status, "unsaved") == 0;
	cat_session_release(&row);
	step(x, hist("A", 3, "still", 1), &c[0]);
	assert_false(c[0].ok);
	assert_same_bytes(x, "A", before, n);

	step(x, full("A", 3, 3, "recover", 2), &c[0]);
	check_receipt(x, "A", &c[0], 5);
	row = row_of(x, "A");
	assert_string_equal(row.status, "idle");
	assert_true(row.title == NULL || strcmp(row.title, "never") != 0); /* the meta never landed */
	cat_session_release(&row);
	step(x, hist("A", 5, "again", 1), &c[0]);
	check_receipt(x, "A", &c[0], 6);
	struct scan *s = scan_of(x, "A");
	assert_string_equal(text_at(s, 3), "recover 0");
	assert_string_equal(text_at(s, 5), "again 0");
	scan_free(s);
	free(before);
	if (!unsaved)
		fail_msg("a full save failed at a stale version did not show the session unsaved");
}

/* A full save with nothing to append still checks its expected seq: its
 * receipt may never claim a seq the log is not at, and it does not recover
 * a failed session at a wrong seq. */
static void test_empty_full_save_checks_seq(void **state)
{
	struct fx *x = *state;
	struct rec c;
	step(x, create("A", NULL, "a", 2), &c);
	step(x, fifo_full_save("A", 10, 3, NULL), &c);
	if (c.ok)
		fail_msg("an empty full save at seq 10 succeeded with next seq %llu; the log is at 3",
			 (unsigned long long)c.r.next_seq);
	assert_int_equal(c.err.cls, CERR_CONFLICT);
	step(x, fifo_full_save("A", 3, 3, NULL), &c);
	check_receipt(x, "A", &c, 3);
}

/* An invalid event fails its own item only: the history item merged with
 * it is not failed on its account. */
static void test_merge_keeps_items_apart(void **state)
{
	struct fx *x = *state;
	struct rec c[2];
	step(x, create("A", NULL, "a", 2), &c[0]);
	fifo_pause(x->f, true);
	post(x, hist("A", 3, "good", 1), &c[0]);
	post(x, fifo_history("A", 4, msgs_typed("Not A Type!", "bad", 1)), &c[1]);
	fifo_pause(x->f, false);
	wait_all(x, c, 2);
	want_err(&c[1], CERR_USAGE, "an invalid event");
	if (!c[0].ok)
		fail_msg("a valid history item failed because of the item merged after it: %s",
			 c[0].err.msg);
	check_receipt(x, "A", &c[0], 4);
	step(x, hist("A", 4, "next", 1), &c[0]);
	check_receipt(x, "A", &c[0], 5);
}

/* Events the log cannot store as given fail their item with a usage
 * error naming the field, and nothing is written: a number JSON cannot
 * carry (it used to be written as null), a null turn (it used to be
 * dropped) and a data that is not an object. */
static void test_unstorable_events_refused(void **state)
{
	struct fx *x = *state;
	struct rec c;
	step_ok(x, create("A", NULL, "a", 2), &c, "create");
	size_t n;
	uint8_t *before = log_bytes(x, "A", &n);
	static const double nums[] = {INFINITY, NAN};
	for (size_t i = 0; i < 2; i++) {
		cJSON *evs = msgs_typed("user/message", "num", 1);
		cJSON_AddNumberToObject(cJSON_GetObjectItem(evs->child, "data"), "x", nums[i]);
		step_err(x, fifo_history("A", 3, evs), &c, CERR_USAGE, "an infinite number");
		if (!strstr(c.err.msg, "data.x"))
			fail_msg("the field is not named: %s", c.err.msg);
	}
	cJSON *evs = msgs_typed("user/message", "null turn", 1);
	cJSON_AddNullToObject(evs->child, "turn");
	step_err(x, fifo_history("A", 3, evs), &c, CERR_USAGE, "a null turn");
	if (!strstr(c.err.msg, "\"turn\""))
		fail_msg("the field is not named: %s", c.err.msg);
	/* A data that is not an object is refused, not turned into {}. */
	const char *const not_obj[] = {"\"x\"", "[]", "1", "null", "true"};
	for (size_t i = 0; i < sizeof not_obj / sizeof not_obj[0]; i++) {
		evs = msgs_typed("session/meta", "bad data", 1);
		cJSON_ReplaceItemInObject(evs->child, "data", cJSON_Parse(not_obj[i]));
		step_err(x, fifo_history("A", 3, evs), &c, CERR_USAGE, "a data that is not an object");
		if (!strstr(c.err.msg, "\"data\""))
			fail_msg("the field is not named: %s", c.err.msg);
	}
	assert_same_bytes(x, "A", before, n);
	free(before);
	step_ok(x, hist("A", 3, "fine", 1), &c, "a valid item after them");
	check_receipt(x, "A", &c, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FIFOFX_TEST(test_conflict_fail_fast_recovery),
		FIFOFX_TEST(test_empty_full_save_checks_seq),
		FIFOFX_TEST(test_unstorable_events_refused),
		FIFOFX_TEST(test_merge_keeps_items_apart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
