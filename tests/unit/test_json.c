/* test_json.c — base/json.h, strict JSON: numbers JSON cannot carry,
 * duplicate keys, escaped NUL, trailing bytes and lax lexemes refused; exact
 * integers read; compact printing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_parse_rejects_duplicate_keys_at_any_depth),
		cmocka_unit_test(test_json_unstorable_numbers),
		cmocka_unit_test(test_json_parse_rejects_escaped_nul_in_keys_and_values),
		cmocka_unit_test(test_json_parse_rejects_trailing_bytes_and_lax_lexemes),
		cmocka_unit_test(test_json_get_int_takes_only_exact_integers_in_range),
		cmocka_unit_test(test_json_print_is_compact_and_keeps_53_bit_integers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
