/* test_ulid.c — base/ulid.h (ULIDs: the spec's time vectors, order by time,
 * the current time stamped). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/ulid.h"
#include "persist/pathkey.h"

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static void assert_ulid_shape(const char *u)
{
	assert_int_equal(strlen(u), ULID_LEN);
	for (size_t i = 0; i < ULID_LEN; i++)
		assert_non_null(strchr(crockford, u[i]));
	/* 128 bits in 26 digits: the first digit carries only 3 bits. */
	assert_true(u[0] >= '0' && u[0] <= '7');
}

static void test_ulid_time_prefix_matches_the_spec_vectors(void **state)
{
	(void)state;
	char u[ULID_LEN + 1];
	ulid_make(u, 1469918176385LL);
	assert_ulid_shape(u);
	assert_memory_equal(u, "01ARYZ6S41", 10);

	ulid_make(u, 0);
	assert_ulid_shape(u);
	assert_memory_equal(u, "0000000000", 10);

	ulid_make(u, (1LL << 48) - 1); /* the largest 48-bit time */
	assert_ulid_shape(u);
	assert_memory_equal(u, "7ZZZZZZZZZ", 10);
}

static void test_ulid_sorts_by_time(void **state)
{
	(void)state;
	static const int64_t ms[] = {0, 1, 31, 32, 1023, 1024, 1469918176385LL,
				     1469918176386LL, 1700000000000LL, 1700000000001LL,
				     4102444800000LL, (1LL << 48) - 1};
	char prev[ULID_LEN + 1], cur[ULID_LEN + 1];
	ulid_make(prev, ms[0]);
	for (size_t i = 1; i < sizeof ms / sizeof ms[0]; i++) {
		ulid_make(cur, ms[i]);
		assert_ulid_shape(cur);
		assert_true(memcmp(prev, cur, 10) < 0);
		assert_true(strcmp(prev, cur) < 0); /* the whole id sorts too */
		memcpy(prev, cur, sizeof cur);
	}
	/* Same millisecond: same time prefix, different random part. */
	char a[ULID_LEN + 1], b[ULID_LEN + 1];
	ulid_make(a, 1700000000000LL);
	ulid_make(b, 1700000000000LL);
	assert_memory_equal(a, b, 10);
	assert_string_not_equal(a, b);
}

static void test_ulid_new_stamps_the_current_time(void **state)
{
	(void)state;
	char lo[ULID_LEN + 1], hi[ULID_LEN + 1], u[ULID_LEN + 1];
	ulid_make(lo, clock_unix_ms());
	ulid_new(u);
	ulid_make(hi, clock_unix_ms());
	assert_ulid_shape(u);
	assert_true(memcmp(lo, u, 10) <= 0);
	assert_true(memcmp(u, hi, 10) <= 0);
	assert_true(pathkey_valid_id(u));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ulid_time_prefix_matches_the_spec_vectors),
		cmocka_unit_test(test_ulid_sorts_by_time),
		cmocka_unit_test(test_ulid_new_stamps_the_current_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
