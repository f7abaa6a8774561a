/* test_pathkey.c — persist/pathkey.h: session ids, and the project key of a
 * cwd (its encoding, and a bounded distinct key for a long one). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist/pathkey.h"

static void test_pathkey_valid_id_takes_1_to_64_safe_characters(void **state)
{
	(void)state;
	char id[SESSION_ID_MAX + 2];
	memset(id, 'a', SESSION_ID_MAX);
	id[SESSION_ID_MAX] = '\0';
	assert_true(pathkey_valid_id(id));          /* 64 characters */
	id[SESSION_ID_MAX] = 'b';
	id[SESSION_ID_MAX + 1] = '\0';
	assert_false(pathkey_valid_id(id));         /* 65 */

	assert_true(pathkey_valid_id("a"));
	assert_true(pathkey_valid_id("01ARYZ6S41TSV4RRFFQ69G5FAV"));
	assert_true(pathkey_valid_id("_x-Y_9"));
	assert_true(pathkey_valid_id("a-"));
	assert_true(pathkey_valid_id("_"));

	static const char *const bad[] = {
		"", "-", "-abc", "a/b", "/", ".", "..", "a.b", "../x", "a b", "a\tb",
		"a\\b", "a:b", "caf\xC3\xA9", "a~", "%2e", "x\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (pathkey_valid_id(bad[i]))
			fail_msg("id '%s' accepted", bad[i]);
	}
	/* An id is a C string: bytes after a NUL are not part of it. */
	assert_true(pathkey_valid_id("ab\0/../../x"));
}

static void assert_key_safe(const char *cwd, const char *key)
{
	if (!pathkey_valid_key(key))
		fail_msg("key '%s' of cwd '%s' is not a valid key", key, cwd ? cwd : "(null)");
	assert_null(strchr(key, '/'));
	assert_string_not_equal(key, ".");
	assert_string_not_equal(key, "..");
	assert_true(strlen(key) >= 1 && strlen(key) <= PATHKEY_MAX);
}

static void test_pathkey_project_encoding(void **state)
{
	(void)state;
	static const struct {
		const char *cwd, *key;
	} cases[] = {
		{"/home/a b", "-home-a%20b"},
		{"/", "-"},
		{"/home/user/src/cairn", "-home-user-src-cairn"},
		{"/a-b", "-a%2Db"},
		{"/a%b", "-a%25b"},
		{"/x/..", "-x-.."},
		{"/~", "-%7E"},
		{"/caf\xC3\xA9", "-caf%C3%A9"},
		{"/a_b.c", "-a_b.c"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *k = pathkey_project(cases[i].cwd);
		assert_string_equal(k, cases[i].key);
		assert_key_safe(cases[i].cwd, k);
		free(k);
	}
	/* '-' and '/' must not collide: "/a-b" vs "/a/b". */
	char *k1 = pathkey_project("/a-b"), *k2 = pathkey_project("/a/b");
	assert_string_not_equal(k1, k2);
	free(k1);
	free(k2);

	char *k = pathkey_project(NULL);
	assert_string_equal(k, PATHKEY_NO_CWD);
	assert_string_equal(k, "_no-cwd");
	free(k);
	k = pathkey_project("");
	assert_string_equal(k, "_no-cwd");
	free(k);

	/* Hostile inputs never produce '/', "." or "..". */
	static const char *const hostile[] = {".", "..", "/.", "/..", "../..", "./x", "x/../..",
					      "a", "-", "..%2F", "\x01\x7F\xFF"};
	for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		k = pathkey_project(hostile[i]);
		assert_key_safe(hostile[i], k);
		free(k);
	}

	assert_false(pathkey_valid_key("."));
	assert_false(pathkey_valid_key(".."));
	assert_false(pathkey_valid_key(""));
	assert_false(pathkey_valid_key("a/b"));
	assert_true(pathkey_valid_key("_no-cwd"));
	char longkey[PATHKEY_MAX + 2];
	memset(longkey, 'k', PATHKEY_MAX + 1);
	longkey[PATHKEY_MAX + 1] = '\0';
	assert_false(pathkey_valid_key(longkey));
	longkey[PATHKEY_MAX] = '\0';
	assert_true(pathkey_valid_key(longkey));
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A bounded key ends in "~" + 16 hex digits and never holds half an
 * escape before it. */
static void assert_bounded_key(const char *cwd, const char *key)
{
	assert_key_safe(cwd, key);
	size_t n = strlen(key);
	assert_true(n >= 17);
	assert_int_equal(key[n - 17], '~');
	for (size_t i = n - 16; i < n; i++)
		assert_true(is_lower_hex(key[i]));
	for (size_t i = 0; i < n - 17; i++) {
		if (key[i] == '%') {
			assert_true(i + 2 < n - 17);
			assert_non_null(strchr("0123456789ABCDEF", key[i + 1]));
			assert_non_null(strchr("0123456789ABCDEF", key[i + 2]));
		}
	}
}

static void test_pathkey_long_cwd_gets_a_bounded_distinct_key(void **state)
{
	(void)state;
	char a[1200], b[1200];
	a[0] = b[0] = '/';
	memset(a + 1, 'x', sizeof a - 2);
	memset(b + 1, 'x', sizeof b - 2);
	a[sizeof a - 1] = b[sizeof b - 1] = '\0';
	b[sizeof b - 2] = 'y'; /* differ only in the very last byte */
	char *ka = pathkey_project(a), *kb = pathkey_project(b);
	assert_bounded_key(a, ka);
	assert_bounded_key(b, kb);
	assert_true(strlen(ka) <= PATHKEY_MAX);
	assert_string_not_equal(ka, kb);
	/* Deterministic: the key is a function of the cwd. */
	char *ka2 = pathkey_project(a);
	assert_string_equal(ka, ka2);
	free(ka);
	free(kb);
	free(ka2);

	/* Escapes around the cut: spaces (3 bytes each) at every phase. */
	for (int lead = 0; lead < 3; lead++) {
		char c[400];
		size_t n = 0;
		c[n++] = '/';
		for (int i = 0; i < lead; i++)
			c[n++] = 'z';
		while (n < sizeof c - 1)
			c[n++] = ' ';
		c[n] = '\0';
		char *k = pathkey_project(c);
		assert_bounded_key(c, k);
		free(k);
	}

	/* Exactly PATHKEY_MAX bytes of key stays unhashed; one more is hashed. */
	char e[PATHKEY_MAX + 2];
	e[0] = '/';
	memset(e + 1, 'q', PATHKEY_MAX - 1);
	e[PATHKEY_MAX] = '\0';
	char *k = pathkey_project(e);
	assert_int_equal(strlen(k), PATHKEY_MAX);
	assert_null(strchr(k, '~'));
	free(k);
	e[PATHKEY_MAX] = 'q';
	e[PATHKEY_MAX + 1] = '\0';
	k = pathkey_project(e);
	assert_bounded_key(e, k);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pathkey_valid_id_takes_1_to_64_safe_characters),
		cmocka_unit_test(test_pathkey_project_encoding),
		cmocka_unit_test(test_pathkey_long_cwd_gets_a_bounded_distinct_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
