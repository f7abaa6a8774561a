/* test_buf.c — base/buf.h: a buffer grown byte by byte stays NUL-terminated,
 * integers printed as printf does, JSON strings escaped. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"

static void test_buf_grows_to_100k_bytes_kept_nul_terminated(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	for (int i = 0; i < 100000; i++)
		buf_addc(&b, (char)('a' + i % 26));
	assert_int_equal(b.len, 100000);
	assert_true(b.cap > b.len);
	assert_int_equal(b.p[b.len], '\0');
	for (int i = 0; i < 100000; i++)
		assert_int_equal(b.p[i], 'a' + i % 26);

	buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.p, "");
	buf_printf(&b, "%d-%s-%05d", 42, "x", 7);
	buf_adds(&b, "|");
	buf_add(&b, "abc\0def", 7); /* binary-safe */
	assert_int_equal(b.len, 18);
	assert_memory_equal(b.p, "42-x-00007|abc\0def", 19);

	char big[5000];
	memset(big, 'Z', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	buf_printf(&b, "%s!", big);
	assert_int_equal(b.len, 18 + 5000);
	assert_int_equal(b.p[b.len - 1], '!');
	assert_int_equal(b.p[b.len], '\0');

	size_t len = 0;
	char *p = buf_detach(&b, &len);
	assert_int_equal(len, 5018);
	assert_null(b.p);
	assert_int_equal(b.len, 0);
	free(p);

	struct buf e;
	buf_init(&e);
	p = buf_detach(&e, &len); /* empty buffer: an empty string */
	assert_int_equal(len, 0);
	assert_string_equal(p, "");
	free(p);
	buf_release(&e);
}

static void test_buf_add_int_prints_like_printf_up_to_int64_limits(void **state)
{
	(void)state;
	static const int64_t v[] = {0, 7, -7, 10, 1234567890123, INT64_MAX, INT64_MIN, -1};
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char want[32];
		snprintf(want, sizeof want, "%lld", (long long)v[i]);
		buf_reset(&b);
		buf_add_int(&b, v[i]);
		assert_int_equal(b.len, strlen(want));
		assert_memory_equal(b.p, want, b.len);
	}
	buf_release(&b);
}

static void test_buf_json_string_escapes_controls_and_round_trips(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	buf_add_json_string(&b, "a\"b\\c/\n\r\t\b\f\x01\x1f\x7f" "caf\xC3\xA9");
	assert_string_equal(b.p, "\"a\\\"b\\\\c/\\n\\r\\t\\b\\f\\u0001\\u001f\x7f"
				 "caf\xC3\xA9\"");
	buf_reset(&b);
	buf_add_json_string(&b, "");
	assert_string_equal(b.p, "\"\"");

	/* Every control character round-trips through the strict parser. */
	char all[40];
	for (int i = 1; i < 32; i++)
		all[i - 1] = (char)i;
	memcpy(all + 31, "\"\\ok", 5);
	buf_reset(&b);
	buf_add_json_string(&b, all);
	for (size_t i = 0; i < b.len; i++)
		assert_true((unsigned char)b.p[i] >= 0x20);
	const char *why = NULL;
	cJSON *v = json_parse_strict(b.p, b.len, &why);
	assert_non_null(v);
	assert_true(cJSON_IsString(v));
	assert_string_equal(v->valuestring, all);
	cJSON_Delete(v);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_grows_to_100k_bytes_kept_nul_terminated),
		cmocka_unit_test(test_buf_json_string_escapes_controls_and_round_trips),
		cmocka_unit_test(test_buf_add_int_prints_like_printf_up_to_int64_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
