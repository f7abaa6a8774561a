/* test_vocab.c — the closed lists of the log's vocabulary (persist/vocab.h)
 * beside the event types: turn outcomes, tool statuses and the error
 * classes cairn writes. Each name reads back as its enumerator, the
 * names of a list are distinct, a name not in a list is refused, and the
 * log's check takes exactly the names of the closed lists. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "persist/vocab.h"

static const char *const not_names[] = {"", "Completed", "completed ", "ok\n", "not_started",
					"unknown", "io", NULL};

static void test_vocab_outcomes_round_trip(void **state)
{
	(void)state;
	size_t n = 0;
#define ROW(e, name)                                          \
	assert_string_equal(vocab_outcome_name(e), name);      \
	assert_int_equal(vocab_outcome_of(name), e);           \
	n++;
	VOCAB_OUTCOMES(ROW)
#undef ROW
	assert_int_equal(n, VO_UNKNOWN);
	assert_null(vocab_outcome_name(VO_UNKNOWN));
	for (size_t i = 0; i < sizeof not_names / sizeof *not_names; i++)
		assert_int_equal(vocab_outcome_of(not_names[i]), VO_UNKNOWN);
	assert_int_equal(vocab_outcome_of("ok"), VO_UNKNOWN); /* another list's name */
}

static void test_vocab_statuses_round_trip(void **state)
{
	(void)state;
	size_t n = 0;
#define ROW(e, name)                                         \
	assert_string_equal(vocab_status_name(e), name);      \
	assert_int_equal(vocab_status_of(name), e);           \
	n++;
	VOCAB_STATUSES(ROW)
#undef ROW
	assert_int_equal(n, VS_UNKNOWN);
	assert_null(vocab_status_name(VS_UNKNOWN));
	for (size_t i = 0; i < sizeof not_names / sizeof *not_names; i++)
		if (!not_names[i] || strcmp(not_names[i], "ok\n") != 0)
			assert_int_equal(vocab_status_of(not_names[i]), VS_UNKNOWN);
	assert_int_equal(vocab_status_of("completed"), VS_UNKNOWN);
}

static void test_vocab_error_classes_round_trip(void **state)
{
	(void)state;
	size_t n = 0;
#define ROW(e, name)                                        \
	assert_string_equal(vocab_error_name(e), name);      \
	assert_int_equal(vocab_error_of(name), e);           \
	n++;
	VOCAB_ERROR_CLASSES(ROW)
#undef ROW
	assert_int_equal(n, VE_OTHER);
	assert_null(vocab_error_name(VE_OTHER));
	for (size_t i = 0; i < sizeof not_names / sizeof *not_names; i++)
		assert_int_equal(vocab_error_of(not_names[i]), VE_OTHER);
}

/* turn/end and tool/result take the listed names and refuse the rest as
 * unsupported: the closed lists of the check are these lists. */
static void test_vocab_check_takes_the_lists(void **state)
{
	(void)state;
	const struct vocab_entry *end = vocab_find("turn/end");
	const struct vocab_entry *res = vocab_find("tool/result");
	assert_non_null(end);
	assert_non_null(res);
	struct cerr err;
	char js[128];
#define OUT_OK(e, name)                                                               \
	snprintf(js, sizeof js, "{\"outcome\":\"%s\"}", name);                         \
	{                                                                              \
		cJSON *d = cJSON_Parse(js);                                            \
		assert_int_equal(vocab_check(end, d, &err), 0);                        \
		cJSON_Delete(d);                                                       \
	}
	VOCAB_OUTCOMES(OUT_OK)
#undef OUT_OK
#define STATUS_OK(e, name)                                                            \
	snprintf(js, sizeof js, "{\"call_id\":\"c\",\"status\":\"%s\"}", name);        \
	{                                                                              \
		cJSON *d = cJSON_Parse(js);                                            \
		assert_int_equal(vocab_check(res, d, &err), 0);                        \
		cJSON_Delete(d);                                                       \
	}
	VOCAB_STATUSES(STATUS_OK)
#undef STATUS_OK
	cJSON *d = cJSON_Parse("{\"outcome\":\"not_started\"}");
	assert_int_equal(vocab_check(end, d, &err), -1);
	assert_int_equal(err.cls, CERR_UNSUPPORTED);
	cJSON_Delete(d);
	d = cJSON_Parse("{\"call_id\":\"c\",\"status\":\"completed\"}");
	assert_int_equal(vocab_check(res, d, &err), -1);
	assert_int_equal(err.cls, CERR_UNSUPPORTED);
	cJSON_Delete(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vocab_outcomes_round_trip),
		cmocka_unit_test(test_vocab_statuses_round_trip),
		cmocka_unit_test(test_vocab_error_classes_round_trip),
		cmocka_unit_test(test_vocab_check_takes_the_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
