/* test_strmap.c — base/strmap.h: thousands of keys found, absent ones
 * missed, deletion keeping the others findable. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

static void test_strmap_finds_each_of_5000_keys_and_misses_absent_ones(void **state)
{
	(void)state;
	enum { N = 5000 };
	static char keys[N][16];
	struct strmap m;
	strmap_init(&m);
	size_t v = 99;
	assert_false(strmap_get(&m, "nothing", &v));
	assert_int_equal(v, 99);
	for (size_t i = 0; i < N; i++) {
		snprintf(keys[i], sizeof keys[i], "key-%zu", i);
		strmap_put(&m, keys[i], i * 3);
	}
	assert_int_equal(m.count, N);
	for (size_t i = 0; i < N; i++) {
		assert_true(strmap_get(&m, keys[i], &v));
		assert_int_equal(v, i * 3);
	}
	/* Lookup is by content, not by pointer. */
	assert_true(strmap_get(&m, "key-4321", &v));
	assert_int_equal(v, 4321 * 3);
	for (size_t i = 0; i < N; i += 2)
		strmap_put(&m, keys[i], i + 1000000);
	assert_int_equal(m.count, N);
	for (size_t i = 0; i < N; i++) {
		assert_true(strmap_get(&m, keys[i], &v));
		assert_int_equal(v, i % 2 ? i * 3 : i + 1000000);
	}
	assert_false(strmap_get(&m, "key-5000", &v));
	assert_false(strmap_get(&m, "", &v));
	strmap_put(&m, "", 7);
	assert_true(strmap_get(&m, "", &v));
	assert_int_equal(v, 7);
	strmap_release(&m);
	assert_false(strmap_get(&m, "key-1", &v));
}

/* Removing keys leaves every other key findable: entries of a probe run
 * that passed a removed slot are moved back, also across the table's end
 * (5000 keys in 16384 slots wrap many runs). */
static void test_strmap_del_keeps_the_other_keys_findable(void **state)
{
	(void)state;
	enum { N = 5000 };
	static char keys[N][16];
	struct strmap m;
	strmap_init(&m);
	size_t v;
	assert_false(strmap_del(&m, "nothing"));
	for (size_t i = 0; i < N; i++) {
		snprintf(keys[i], sizeof keys[i], "k%zu", i);
		strmap_put(&m, keys[i], i);
	}
	for (size_t i = 0; i < N; i += 3)
		assert_true(strmap_del(&m, keys[i]));
	assert_false(strmap_del(&m, keys[0]));
	assert_int_equal(m.count, N - (N + 2) / 3);
	for (size_t i = 0; i < N; i++) {
		bool there = strmap_get(&m, keys[i], &v);
		assert_int_equal(there, i % 3 != 0);
		if (there)
			assert_int_equal(v, i);
	}
	for (size_t i = 0; i < N; i += 3)
		strmap_put(&m, keys[i], i + 7);
	for (size_t i = 0; i < N; i++) {
		assert_true(strmap_get(&m, keys[i], &v));
		assert_int_equal(v, i % 3 ? i : i + 7);
	}
	for (size_t i = 0; i < N; i++)
		assert_true(strmap_del(&m, keys[i]));
	assert_int_equal(m.count, 0);
	assert_false(strmap_get(&m, keys[1], &v));
	strmap_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strmap_finds_each_of_5000_keys_and_misses_absent_ones),
		cmocka_unit_test(test_strmap_del_keeps_the_other_keys_findable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
