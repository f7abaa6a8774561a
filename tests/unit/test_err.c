/* test_err.c — base/err.h, the error convention: a class, an errno, a
 * message and a context prefix kept. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"

static void test_cerr_keeps_class_errno_message_and_context_prefix(void **state)
{
	(void)state;
	struct cerr e;
	cerr_clear(&e);
	assert_int_equal(e.cls, CERR_OK);
	assert_string_equal(e.msg, "");

	assert_int_equal(cerr_set(&e, CERR_CORRUPT, 0, "frame at offset %d: %s", 12, "bad"), -1);
	assert_int_equal(e.cls, CERR_CORRUPT);
	assert_int_equal(e.sys_errno, 0);
	assert_false(e.outcome_unknown);
	assert_string_equal(e.msg, "frame at offset 12: bad");
	cerr_prefix(&e, "cannot read '%s'", "x");
	assert_string_equal(e.msg, "cannot read 'x': frame at offset 12: bad");
	assert_int_equal(e.cls, CERR_CORRUPT);

	assert_int_equal(cerr_set(&e, CERR_IO, ENOSPC, "cannot write '%s'", "f"), -1);
	assert_int_equal(e.sys_errno, ENOSPC);
	char want[600];
	snprintf(want, sizeof want, "cannot write 'f': %s", strerror(ENOSPC));
	assert_string_equal(e.msg, want);
	cerr_prefix(&e, "append");
	assert_int_equal(e.cls, CERR_IO);
	assert_int_equal(e.sys_errno, ENOSPC);
	assert_memory_equal(e.msg, "append: cannot write 'f': ", 26);

	/* Long messages and prefixes are cut, never overflowed. */
	char longs[2000];
	memset(longs, 'm', sizeof longs - 1);
	longs[sizeof longs - 1] = '\0';
	cerr_set(&e, CERR_USAGE, 0, "%s", longs);
	assert_int_equal(strlen(e.msg), sizeof e.msg - 1);
	cerr_prefix(&e, "%s", longs);
	assert_true(strlen(e.msg) < sizeof e.msg);
	cerr_set(&e, CERR_USAGE, 0, "tail");
	cerr_prefix(&e, "%s", longs);
	assert_true(strlen(e.msg) < sizeof e.msg);
	assert_memory_equal(e.msg, "mmmm", 4);

	assert_int_equal(cerr_set(NULL, CERR_IO, EIO, "x"), -1);
	cerr_prefix(NULL, "x");
	cerr_clear(NULL);

	static const char *const names[] = {"ok", "io", "usage", "missing", "corrupt",
					    "unsupported", "conflict", "locked"};
	for (int c = CERR_OK; c <= CERR_LOCKED; c++) {
		assert_string_equal(cerr_class_name((enum cerr_class)c), names[c]);
		assert_int_equal(cerr_exit_code((enum cerr_class)c), c);
	}
	/* Each name reads back as its class; another name is refused. */
	for (int c = CERR_OK; c <= CERR_BUSY; c++) {
		enum cerr_class got = CERR_OK;
		assert_true(cerr_class_of(cerr_class_name((enum cerr_class)c), &got));
		assert_int_equal(got, c);
	}
	enum cerr_class none = CERR_IO;
	assert_false(cerr_class_of("provider", &none));
	assert_false(cerr_class_of("IO", &none));
	assert_false(cerr_class_of("", &none));
	assert_false(cerr_class_of(NULL, &none));
	assert_int_equal(none, CERR_IO);
	assert_int_equal(cerr_exit_code(CERR_OK), 0);
	assert_int_equal(cerr_exit_code(CERR_IO), 1);
	assert_int_equal(cerr_exit_code(CERR_USAGE), 2);
	assert_int_equal(cerr_exit_code(CERR_MISSING), 3);
	assert_int_equal(cerr_exit_code(CERR_CORRUPT), 4);
	assert_int_equal(cerr_exit_code(CERR_UNSUPPORTED), 5);
	assert_int_equal(cerr_exit_code(CERR_CONFLICT), 6);
	assert_int_equal(cerr_exit_code(CERR_LOCKED), 7);
	/* Damage outranks everything else; ok ranks lowest. */
	for (int c = CERR_OK; c <= CERR_LOCKED; c++) {
		if (c != CERR_CORRUPT)
			assert_true(cerr_severity(CERR_CORRUPT) > cerr_severity((enum cerr_class)c));
		if (c != CERR_OK)
			assert_true(cerr_severity(CERR_OK) < cerr_severity((enum cerr_class)c));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cerr_keeps_class_errno_message_and_context_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
