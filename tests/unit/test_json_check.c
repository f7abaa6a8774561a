/* test_json_check.c — json_check (no tree) accepts exactly what
 * json_parse_strict (cJSON plus the strict rules) accepts: on hand-picked
 * edge cases and on many generated texts and their byte mutations; and it
 * keeps the root's and its "data" member's members. */
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
#include "base/json_check.h"
#include "base/utf8.h"

static struct json_check jc;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

/* Both checkers agree on s[0..n) (valid UTF-8 only: callers check it
 * first); returns the verdict. */
static bool agree(const char *s, size_t n)
{
	const char *why1 = NULL, *why2 = NULL;
	cJSON *t = json_parse_strict(s, n, &why1);
	struct json_span root;
	bool ok = json_check(&jc, s, n, &root, &why2);
	if ((t != NULL) != ok) {
		fprintf(stderr, "disagree on [%.*s]: strict %s (%s), check %s (%s)\n", (int)n, s,
			t ? "accepts" : "rejects", why1 ? why1 : "", ok ? "accepts" : "rejects",
			why2 ? why2 : "");
		fail();
	}
	cJSON_Delete(t);
	return ok;
}

static bool agree_s(const char *s)
{
	return agree(s, strlen(s));
}

static void test_json_check_agrees_with_strict_parse_on_edge_cases(void **state)
{
	(void)state;
	static const char *const yes[] = {
		"{}", " { } ", "[]", "0", "-0", "1.5e3", "\"\"", "null", "true", "false",
		"{\"a\":1,\"b\":[1,2,{\"c\":null}]}", "\"\\u00e9\\ud83d\\ude00\"", "\"\\/\\b\\f\\n\\r\\t\"",
		"{\"a\":1,\"\\u0062\":2}", "1e-300", "[1.0,-2E+2]", "{\"x\":\"\\u0041\"}\r\n",
		"1234567890123456789012345678901234567890123456789012345678901234567890",
		"[1234567890123456789012345678901234567890123456789012345678901234]",
	};
	static const char *const no[] = {
		"", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "+1", ".5", "-",
		"{\"a\":1,\"a\":2}", "{\"a\":1,\"\\u0061\":2}", "\"\\u0000\"", "\"\\uzzzz\"", "\"\\u12\"",
		"\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\u0041\"", "\"\\x\"", "\"a\tb\"", "nul", "tru",
		"nullx", "[1 2]", "1e999", "1e-999", "{} {}", "\"abc", "[\"\\\"]", "\x01",
		"{\"a\":{\"b\":1,\"b\":2}}", "[{\"k\":1,\"k\":1}]",
	};
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
		assert_true(agree_s(yes[i]));
	for (size_t i = 0; i < sizeof no / sizeof *no; i++)
		assert_false(agree_s(no[i]));
	/* Duplicates among many keys (the sorted path). */
	struct buf b = BUF_INIT;
	buf_adds(&b, "{");
	for (int i = 0; i < 40; i++)
		buf_printf(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
	buf_adds(&b, "}");
	assert_true(agree(b.p, b.len));
	b.len--;
	buf_adds(&b, ",\"k\\u00317\":0}");
	assert_false(agree(b.p, b.len));
	buf_release(&b);
	/* cJSON's nesting limit. */
	for (int depth = 998; depth <= 1002; depth++) {
		struct buf d = BUF_INIT;
		for (int i = 0; i < depth; i++)
			buf_addc(&d, '[');
		for (int i = 0; i < depth; i++)
			buf_addc(&d, ']');
		agree(d.p, d.len);
		buf_release(&d);
	}
}

static const char *const atoms[] = {
	"0", "-1", "12", "3.25", "1e5", "-0.0", "9007199254740993", "1E-2", "true", "false",
	"null", "\"\"", "\"a\"", "\"x\\n\"", "\"\\u00e9\"", "\"\\ud83d\\ude00\"", "\"\xc3\xa9\"",
	"\"\\\"q\"", "\"k\"",
};
static const char *const keys[] = {"a", "b", "k", "data", "seq", "\\u0061", "\\u006b", "", "\xc3\xa9"};

static void gen(struct buf *b, int depth)
{
	int r = (int)(rnd() % 10);
	if (depth > 3 || r < 5) {
		buf_adds(b, atoms[rnd() % (sizeof atoms / sizeof *atoms)]);
		return;
	}
	bool obj = r < 8;
	buf_addc(b, obj ? '{' : '[');
	int n = (int)(rnd() % 4);
	for (int i = 0; i < n; i++) {
		if (i)
			buf_adds(b, rnd() % 4 ? "," : " , ");
		if (obj)
			buf_printf(b, "\"%s\":", keys[rnd() % (sizeof keys / sizeof *keys)]);
		gen(b, depth + 1);
	}
	buf_addc(b, obj ? '}' : ']');
}

static void test_generated_texts_and_mutations_agree(void **state)
{
	(void)state;
	static const char bytes[] = "{}[]\",:\\u0 1-.eE\tntf\x01\xc3\xa9";
	size_t accepted = 0, rejected = 0;
	for (int round = 0; round < 20000; round++) {
		struct buf b = BUF_INIT;
		gen(&b, 0);
		agree(b.p, b.len) ? accepted++ : rejected++;
		for (int m = 0; m < 4; m++) {
			struct buf c = BUF_INIT;
			buf_add(&c, b.p, b.len);
			size_t at = c.len ? rnd() % c.len : 0;
			int op = (int)(rnd() % 3);
			char x = bytes[rnd() % (sizeof bytes - 1)];
			if (op == 0 && c.len)
				c.p[at] = x;
			else if (op == 1 && c.len)
				memmove(c.p + at, c.p + at + 1, c.len-- - at - 1);
			else {
				buf_addc(&c, 0);
				memmove(c.p + at + 1, c.p + at, c.len - at - 1);
				c.p[at] = x;
			}
			if (utf8_valid(c.p, c.len, NULL))
				agree(c.p, c.len) ? accepted++ : rejected++;
			buf_release(&c);
		}
		buf_release(&b);
	}
	/* Both sides of the boundary were exercised. */
	assert_true(accepted > 10000);
	assert_true(rejected > 10000);
}

static void test_json_check_keeps_top_level_members_and_their_keys(void **state)
{
	(void)state;
	const char *s = "{\"seq\":3,\"t\\u0079pe\":\"x\",\"data\":{\"a\":[1,{\"b\":2}],\"c\":\"d\\n\"},\"z\":null}";
	struct json_span root;
	const char *why;
	assert_true(json_check(&jc, s, strlen(s), &root, &why));
	assert_int_equal(root.kind, '{');
	assert_int_equal(jc.n_top, 4);
	assert_true(json_check_is(&jc.top[1].key, "type"));
	int64_t v;
	assert_true(json_check_int(&jc.top[0].val, 0, 10, &v));
	assert_int_equal(v, 3);
	assert_true(jc.has_inner);
	assert_int_equal(jc.n_inner, 2);
	assert_int_equal(jc.inner[0].val.kind, '[');
	assert_int_equal(jc.inner[0].val.n, strlen("[1,{\"b\":2}]"));
	char out[8];
	assert_int_equal(json_check_unescape(&jc.inner[1].val, out), 2);
	assert_string_equal(out, "d\n");
	/* An integer the way cJSON reads it: 1.0 and 1e1 are integers. */
	assert_true(json_check(&jc, "{\"data\":{},\"a\":1e1,\"b\":2.5,\"c\":-4.0}", 36, &root, &why));
	assert_true(json_check_int(&jc.top[1].val, 0, 100, &v) && v == 10);
	assert_false(json_check_int(&jc.top[2].val, 0, 100, &v));
	assert_false(json_check_int(&jc.top[3].val, 0, 100, &v));
}

static void test_invalid_u_escape_is_rejected(void **state)
{
	(void)state;
	/* cJSON alone reads "\uzzzz" as U+0000 and cuts the string there. */
	const char *why;
	const char *s = "{\"a\":\"x\\uzzzzy\"}";
	cJSON *t = json_parse_strict(s, strlen(s), &why);
	assert_null(t);
	cJSON_Delete(t);
}

/* An object that closes before any key was seen anywhere (the key table
 * still empty) is checked without arithmetic on the empty table (UBSan:
 * found by fuzz_log on "{}"). */
static void test_empty_objects_before_any_key(void **state)
{
	(void)state;
	static const char *const texts[] = {"{}", "{\"a\":{}}", "[{},{}]", "{\"data\":{},\"b\":[{}]}"};
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		struct json_check fresh; /* its key table not grown yet */
		json_check_init(&fresh, "data");
		struct json_span root;
		const char *why;
		assert_true(json_check(&fresh, texts[i], strlen(texts[i]), &root, &why));
		json_check_release(&fresh);
		assert_true(agree_s(texts[i]));
	}
}

int main(void)
{
	json_check_init(&jc, "data");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_check_agrees_with_strict_parse_on_edge_cases),
		cmocka_unit_test(test_generated_texts_and_mutations_agree),
		cmocka_unit_test(test_json_check_keeps_top_level_members_and_their_keys),
		cmocka_unit_test(test_invalid_u_escape_is_rejected),
		cmocka_unit_test(test_empty_objects_before_any_key),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	json_check_release(&jc);
	return r;
}
