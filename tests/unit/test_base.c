/* test_base.c — base/ utilities and persist/pathkey: ULIDs, ids and project
 * keys, buffers, the string map, UTF-8 validation, strict JSON and the
 * error convention. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <unistd.h>

#include <stdatomic.h>

#include <pthread.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/pool.h"
#include "base/strmap.h"
#include "base/ulid.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "persist/pathkey.h"

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* ---- ulid ---- */

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

/* ---- pathkey ---- */

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

/* ---- buf ---- */

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

/* ---- strmap ---- */

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

/* ---- utf8 ---- */

static void check_utf8(const char *s, size_t n, bool ok, size_t bad)
{
	size_t at = (size_t)-1;
	bool r = utf8_valid(s, n, &at);
	if (r != ok)
		fail_msg("utf8_valid of %zu bytes gave %d", n, r);
	if (!ok && at != bad)
		fail_msg("bad_at %zu, expected %zu", at, bad);
}

static void test_utf8_valid_rejects_malformed_and_names_the_offset(void **state)
{
	(void)state;
	check_utf8("", 0, true, 0);
	check_utf8("plain ascii", 11, true, 0);
	check_utf8("caf\xC3\xA9", 5, true, 0);             /* U+00E9 */
	check_utf8("\xE2\x82\xAC", 3, true, 0);             /* U+20AC */
	check_utf8("\xF0\x9D\x84\x9E", 4, true, 0);         /* U+1D11E */
	check_utf8("\xF4\x8F\xBF\xBF", 4, true, 0);         /* U+10FFFF */
	check_utf8("\xED\x9F\xBF", 3, true, 0);             /* U+D7FF */
	check_utf8("\xEE\x80\x80", 3, true, 0);             /* U+E000 */
	check_utf8("a\0b", 3, true, 0);                      /* NUL is UTF-8 */

	check_utf8("ab\xC0\xAF", 4, false, 2);              /* overlong '/' */
	check_utf8("\xC1\xBF", 2, false, 0);                /* overlong */
	check_utf8("x\xE0\x80\xAF", 4, false, 1);           /* overlong 3-byte */
	check_utf8("\xF0\x80\x80\xAF", 4, false, 0);        /* overlong 4-byte */
	check_utf8("ok\xED\xA0\x80", 5, false, 2);          /* U+D800 */
	check_utf8("\xED\xBF\xBF", 3, false, 0);            /* U+DFFF */
	check_utf8("\xF4\x90\x80\x80", 4, false, 0);        /* > U+10FFFF */
	check_utf8("ab\xE2\x82", 4, false, 2);              /* truncated */
	check_utf8("\xF0\x9D\x84", 3, false, 0);            /* truncated */
	check_utf8("\xC3", 1, false, 0);                    /* truncated */
	check_utf8("abc\xFF", 4, false, 3);
	check_utf8("\xFE", 1, false, 0);
	check_utf8("a\x80", 2, false, 1);                   /* lone continuation */
	check_utf8("\xC3\x28", 2, false, 0);                /* bad continuation */
	/* The length bounds the check: a valid prefix of a bad buffer. */
	check_utf8("ab\xFF", 2, true, 0);
	assert_false(utf8_valid("\xFF", 1, NULL));
}

/* ---- strict JSON ---- */

static cJSON *parse(const char *s)
{
	const char *why = NULL;
	cJSON *v = json_parse_strict(s, strlen(s), &why);
	if (!v)
		assert_non_null(why);
	return v;
}

static void expect_reject(const char *s, size_t n)
{
	const char *why = NULL;
	cJSON *v = json_parse_strict(s, n, &why);
	if (v) {
		char shown[128];
		size_t k = 0;
		for (size_t i = 0; i < n && k + 5 < sizeof shown; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c < 0x20)
				k += (size_t)snprintf(shown + k, sizeof shown - k, "<%02x>", c);
			else
				shown[k++] = (char)c;
		}
		shown[k] = '\0';
		cJSON_Delete(v);
		fail_msg("accepted: %s", shown);
	}
	assert_non_null(why);
}

static void expect_accept(const char *s)
{
	cJSON *v = parse(s);
	if (!v)
		fail_msg("rejected: %s", s);
	cJSON_Delete(v);
}

/* Reject text s with a reason that names path (NULL: any reason). */
static void expect_reject_at(const char *s, const char *path)
{
	const char *why = NULL;
	cJSON *v = json_parse_strict(s, strlen(s), &why);
	if (v) {
		cJSON_Delete(v);
		fail_msg("accepted: %.80s", s);
	}
	assert_non_null(why);
	if (path && strncmp(why, path, strlen(path)) != 0)
		fail_msg("reason '%s' does not start with '%s'", why, path);
}

/* A number a double cannot hold would be stored as something else (1e400
 * as null, 1e-400 as 0): refused, with the path of the number. Numbers a
 * double does hold, subnormal ones and exact zeros included, pass. */
static void test_json_unstorable_numbers(void **state)
{
	(void)state;
	expect_reject_at("{\"data\":{\"x\":1e400,\"y\":-1e400,\"z\":1e-400}}", "data.x: number out of range");
	expect_reject_at("{\"data\":{\"x\":1,\"y\":-1e400}}", "data.y: number out of range");
	expect_reject_at("{\"data\":{\"z\":1e-400}}", "data.z: number too small");
	expect_reject_at("{\"data\":{\"z\":-2.4e-324}}", "data.z: number too small");
	expect_reject_at("{\"a\":[0,{\"b c\":[1,1.8e308]}]}", "a[1][\"b c\"][1]: number out of range");
	expect_reject_at("[1,2,1E+309]", "[2]: number out of range");
	expect_reject_at("1e400", "number out of range");
	/* Long literals without an exponent. */
	char big[420], tiny[420];
	big[0] = '[', big[1] = '1';
	memset(big + 2, '0', 310);
	strcpy(big + 312, "]");
	expect_reject_at(big, "[0]: number out of range");
	strcpy(tiny, "{\"t\":0.");
	memset(tiny + 7, '0', 400);
	strcpy(tiny + 407, "1}");
	expect_reject_at(tiny, "t: number too small");
	/* The first unstorable number is named, whatever else follows. */
	expect_reject_at("{\"a\":1e-999,\"b\":1e999}", "a: number too small");
	/* Only when the text is JSON at all: a syntax error still wins. */
	expect_reject_at("{\"a\":1e999,}", "invalid JSON");

	expect_accept("[5e-324,4.9e-324,1e-320,2.2250738585072014e-308,1.7976931348623157e308,"
		      "-1.7976931348623157e308,1e308,0e-999,-0.0e-400,0.000e999,0,-0,1e-300]");
	memset(big + 2, '0', 300);
	strcpy(big + 302, "]");
	expect_accept(big); /* 1e300 written out */

	/* Built in memory: an infinity or NaN is found with its path. */
	cJSON *v = parse("{\"a\":[1,{\"b\":2}],\"c\":3}");
	assert_non_null(v);
	assert_null(json_nonfinite_path(v, "data"));
	cJSON_GetArrayItem(cJSON_GetObjectItem(v, "a"), 1)->child->valuedouble = 1.0 / 0.0;
	char *path = json_nonfinite_path(v, "data");
	assert_string_equal(path, "data.a[1].b");
	free(path);
	cJSON_GetObjectItem(v, "c")->valuedouble = 0.0 / 0.0;
	cJSON_GetArrayItem(cJSON_GetObjectItem(v, "a"), 1)->child->valuedouble = 2;
	path = json_nonfinite_path(v, "");
	assert_string_equal(path, "c");
	free(path);
	cJSON_Delete(v);
}

static void test_json_parse_rejects_duplicate_keys_at_any_depth(void **state)
{
	(void)state;
	static const char *const dup[] = {
		"{\"a\":1,\"a\":2}",
		"{\"a\":1,\"b\":2,\"a\":1}",
		"{\"x\":{\"b\":1,\"b\":2}}",
		"[{\"k\":1},{\"k\":1,\"k\":2}]",
		"{\"x\":[1,[{\"y\":{\"z\":{\"q\":0,\"q\":0}}}]]}",
		/* more than 8 keys (the sorted path) */
		"{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,"
		"\"k8\":8,\"k9\":9,\"k3\":3}",
		"{\"a\":{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,"
		"\"k7\":7,\"k8\":8,\"k9\":9,\"k10\":10,\"k11\":11,\"k0\":0}}",
		"{\"k9\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,"
		"\"k9\":9}",
		/* the same key spelled with an escape */
		"{\"ab\":1,\"a\\u0062\":2}",
	};
	for (size_t i = 0; i < sizeof dup / sizeof dup[0]; i++)
		expect_reject(dup[i], strlen(dup[i]));

	expect_accept("{\"a\":1,\"A\":2}");
	expect_accept("[{\"k\":1},{\"k\":2}]");
	expect_accept("{\"k\":{\"k\":{\"k\":1}}}");
	expect_accept("{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,"
		      "\"k7\":7,\"k8\":8,\"k9\":9,\"k10\":10,\"k11\":11}");
}

static void test_json_parse_rejects_escaped_nul_in_keys_and_values(void **state)
{
	(void)state;
	const char *nul = "{\"a\":\"x\\u0000y\"}";
	expect_reject(nul, strlen(nul));
	const char *nul2 = "{\"a\\u0000\":1}";
	expect_reject(nul2, strlen(nul2));
	const char *nul3 = "{\"a\":\"\\\\\\u0000\"}"; /* \\ then \u0000 */
	expect_reject(nul3, strlen(nul3));

	/* An escaped backslash followed by "u0000" is six ordinary characters. */
	cJSON *v = parse("{\"a\":\"\\\\u0000\"}");
	assert_non_null(v);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(v, "a")->valuestring, "\\u0000");
	cJSON_Delete(v);
	v = parse("{\"a\":\"\\u0001\\u00e9\"}");
	assert_non_null(v);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(v, "a")->valuestring,
			    "\x01\xC3\xA9");
	cJSON_Delete(v);

	/* Surrogates: a pair is one character, a lone half is an error. */
	v = parse("\"\\ud83d\\ude00\"");
	assert_non_null(v);
	assert_string_equal(v->valuestring, "\xF0\x9F\x98\x80");
	cJSON_Delete(v);
	static const char *const lone[] = {"\"\\ud800\"", "\"\\udc00\"", "\"\\ud800x\"",
					   "\"\\ud800\\u0041\"", "\"a\\udfff\"",
					   "\"\\ude00\\ud83d\""};
	for (size_t i = 0; i < sizeof lone / sizeof lone[0]; i++)
		expect_reject(lone[i], strlen(lone[i]));

	/* Raw control characters are not allowed inside strings (RFC 8259 §7);
	 * a raw NUL would silently cut the string short like "\u0000". */
	static const char rawnul[] = "{\"a\":\"x\0y\"}";
	expect_reject(rawnul, sizeof rawnul - 1);
	static const char rawctl[] = "{\"a\":\"x\001y\"}";
	expect_reject(rawctl, sizeof rawctl - 1);
	static const char rawnl[] = "{\"a\":\"x\ny\"}";
	expect_reject(rawnl, sizeof rawnl - 1);
}

static void test_json_parse_rejects_trailing_bytes_and_lax_lexemes(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{\"a\":1} x", "{\"a\":1}{}", "{\"a\":1},", "1 2", "{\"a\":1}}", "", "   ",
		"{\"a\":1", "{'a':1}", "{\"a\":1,}", "[1,]", "nul",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_reject(bad[i], strlen(bad[i]));
	static const char withnul[] = "{\"a\":1}\0";
	expect_reject(withnul, sizeof withnul - 1);

	/* RFC 8259 lexical rules cJSON alone does not enforce. */
	static const char *const lex[] = {
		"{\"a\":01}", "{\"a\":1.}", "{\"a\":+1}", "{\"a\":.5}", "{\"a\":-}",
		"{\"a\":1e}", "{\"a\":1e+}", "{\"a\":-01}", "{\"a\":0x10}", "[1 2]",
		"\xEF\xBB\xBF{}", "{\"a\":1}\xC3\xA9", "{\"a\":\x01 1}",
	};
	for (size_t i = 0; i < sizeof lex / sizeof lex[0]; i++)
		expect_reject(lex[i], strlen(lex[i]));
	static const char rawnul_out[] = "{\"a\":\0 1}";
	expect_reject(rawnul_out, sizeof rawnul_out - 1);
	expect_accept("[0,-0,1e3,1E+3,-1.5e-2,0.25,10]");
	expect_accept("{\"caf\xC3\xA9\":\"\xE2\x82\xAC\"}");

	expect_accept("  {\"a\":1} \t\r\n");
	expect_accept("[]");
	expect_accept("null");
	/* Only n bytes are parsed: what follows does not count. */
	const char *s = "{\"a\":1}garbage";
	const char *why = NULL;
	cJSON *v = json_parse_strict(s, 7, &why);
	assert_non_null(v);
	cJSON_Delete(v);
	expect_reject(s, 6);
}

static void test_json_get_int_takes_only_exact_integers_in_range(void **state)
{
	(void)state;
	cJSON *v = parse("[5,11,-1,1.5,9007199254740991,9007199254740992,-9007199254740991,"
			 "-9007199254740992,\"5\",true,null,1e300,0,-0,1e3]");
	assert_non_null(v);
	int64_t out = 77;
	const cJSON *e[15];
	for (int i = 0; i < 15; i++)
		e[i] = cJSON_GetArrayItem(v, i);

	assert_true(json_get_int(e[0], 0, 10, &out));
	assert_int_equal(out, 5);
	out = 77;
	assert_false(json_get_int(e[1], 0, 10, &out));  /* above max */
	assert_false(json_get_int(e[2], 0, 10, &out));  /* below min */
	assert_false(json_get_int(e[3], 0, 10, &out));  /* not an integer */
	assert_int_equal(out, 77);
	assert_true(json_get_int(e[4], 0, JSON_MAX_SAFE_INT, &out));
	assert_int_equal(out, JSON_MAX_SAFE_INT);
	assert_false(json_get_int(e[5], 0, INT64_MAX, &out)); /* 2^53: not exact */
	assert_true(json_get_int(e[6], -JSON_MAX_SAFE_INT, 0, &out));
	assert_int_equal(out, -JSON_MAX_SAFE_INT);
	assert_false(json_get_int(e[7], INT64_MIN + 1, 0, &out));
	assert_false(json_get_int(e[8], 0, 10, &out));  /* a string */
	assert_false(json_get_int(e[9], 0, 10, &out));  /* a bool */
	assert_false(json_get_int(e[10], 0, 10, &out)); /* null */
	assert_false(json_get_int(e[11], INT64_MIN + 1, INT64_MAX, &out));
	assert_true(json_get_int(e[12], 0, 0, &out));
	assert_int_equal(out, 0);
	assert_true(json_get_int(e[13], 0, 0, &out));
	assert_int_equal(out, 0);
	assert_true(json_get_int(e[14], 1000, 1000, &out));
	assert_false(json_get_int(NULL, 0, 10, &out));
	cJSON_Delete(v);
}

static void test_json_print_is_compact_and_keeps_53_bit_integers(void **state)
{
	(void)state;
	cJSON *v = parse("{ \"a\" : [ 1 , \"x\\n\" ] , \"b\" : null , \"c\" : 9007199254740991 }");
	assert_non_null(v);
	char *s = json_print(v);
	assert_string_equal(s, "{\"a\":[1,\"x\\n\"],\"b\":null,\"c\":9007199254740991}");
	free(s);
	cJSON_Delete(v);
}

/* ---- err ---- */

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

/* ---- pool ---- */

struct pjob {
	struct pool_job job;
	atomic_int runs;
	pthread_t by;
	atomic_bool *gate; /* wait until it opens, if set */
};

static void pjob_run(void *arg)
{
	struct pjob *j = arg;
	while (j->gate && !atomic_load(j->gate))
		usleep(100);
	j->by = pthread_self();
	atomic_fetch_add(&j->runs, 1);
}

/* Every job runs exactly once, by a helper or by the waiter: with no
 * helpers all run in pool_wait; a job a helper is still running is waited
 * for (not run twice); many jobs over few helpers all complete. */
static void test_pool_runs_every_job_exactly_once(void **state)
{
	(void)state;
	struct cerr err;
	struct pool *p = pool_new(0, &err);
	assert_non_null(p);
	struct pjob a = {.job = {.fn = pjob_run}};
	a.job.arg = &a;
	pool_submit(p, &a.job);
	pool_wait(p, &a.job);
	assert_int_equal(atomic_load(&a.runs), 1);
	assert_true(pthread_equal(a.by, pthread_self()));
	pool_free(p);

	p = pool_new(2, &err);
	assert_non_null(p);
	atomic_bool gate = false;
	struct pjob slow = {.job = {.fn = pjob_run}, .gate = &gate};
	slow.job.arg = &slow;
	pool_submit(p, &slow.job);
	while (atomic_load(&slow.job.state) == 0) /* queued: wait for a helper to take it */
		usleep(100);
	atomic_store(&gate, true);
	pool_wait(p, &slow.job);
	assert_int_equal(atomic_load(&slow.runs), 1);
	assert_false(pthread_equal(slow.by, pthread_self()));

	enum { N = 200 };
	static struct pjob many[N];
	for (int i = 0; i < N; i++) {
		many[i] = (struct pjob){.job = {.fn = pjob_run}};
		many[i].job.arg = &many[i];
		pool_submit(p, &many[i].job);
	}
	for (int i = N - 1; i >= 0; i--) /* out of order: queued ones run here */
		pool_wait(p, &many[i].job);
	for (int i = 0; i < N; i++)
		assert_int_equal(atomic_load(&many[i].runs), 1);
	pool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ulid_time_prefix_matches_the_spec_vectors),
		cmocka_unit_test(test_ulid_sorts_by_time),
		cmocka_unit_test(test_ulid_new_stamps_the_current_time),
		cmocka_unit_test(test_pathkey_valid_id_takes_1_to_64_safe_characters),
		cmocka_unit_test(test_pathkey_project_encoding),
		cmocka_unit_test(test_pathkey_long_cwd_gets_a_bounded_distinct_key),
		cmocka_unit_test(test_buf_grows_to_100k_bytes_kept_nul_terminated),
		cmocka_unit_test(test_buf_json_string_escapes_controls_and_round_trips),
		cmocka_unit_test(test_buf_add_int_prints_like_printf_up_to_int64_limits),
		cmocka_unit_test(test_strmap_finds_each_of_5000_keys_and_misses_absent_ones),
		cmocka_unit_test(test_strmap_del_keeps_the_other_keys_findable),
		cmocka_unit_test(test_utf8_valid_rejects_malformed_and_names_the_offset),
		cmocka_unit_test(test_json_parse_rejects_duplicate_keys_at_any_depth),
		cmocka_unit_test(test_json_unstorable_numbers),
		cmocka_unit_test(test_json_parse_rejects_escaped_nul_in_keys_and_values),
		cmocka_unit_test(test_json_parse_rejects_trailing_bytes_and_lax_lexemes),
		cmocka_unit_test(test_json_get_int_takes_only_exact_integers_in_range),
		cmocka_unit_test(test_json_print_is_compact_and_keeps_53_bit_integers),
		cmocka_unit_test(test_cerr_keeps_class_errno_message_and_context_prefix),
		cmocka_unit_test(test_pool_runs_every_job_exactly_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
