/* test_termsafe.c — base/termsafe: every class of terminal control shown
 * inert (C0, DEL, C1 as UTF-8 and as raw bytes, ESC sequences, bidi
 * controls), well-formed UTF-8 kept, malformed bytes shown as \xNN, text cut
 * inside a character (streaming), long random input, the printf whose %s
 * arguments are made safe, and JSON text escaped so that it parses back to
 * the same strings. */
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
#include "base/termsafe.h"
#include "base/utf8.h"
#include "base/xalloc.h"

/* s[0..n) made safe with flags, as a malloc'd string. */
static char *safe(const char *s, size_t n, unsigned flags)
{
	struct buf b = BUF_INIT;
	assert_int_equal(termsafe_add(&b, s, n, flags), n);
	return buf_detach(&b, NULL);
}

static void expect(const char *in, size_t n, unsigned flags, const char *want)
{
	char *got = safe(in, n, flags);
	if (strcmp(got, want) != 0)
		fail_msg("got '%s', want '%s'", got, want);
	free(got);
}

#define EXPECT(lit, flags, want) expect(lit, sizeof lit - 1, flags, want)

/* True when out holds nothing a terminal acts on: no C0 (but newline and
 * tab when allowed), no DEL, well-formed UTF-8 without C1 or bidi controls. */
static void assert_inert(const char *out, size_t n, bool ws_allowed)
{
	assert_true(utf8_valid(out, n, NULL));
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)out[i];
		if (c < 0x20 || c == 0x7f)
			assert_true(ws_allowed && (c == '\n' || c == '\t'));
		if (c == 0xc2 && i + 1 < n)
			assert_false((unsigned char)out[i + 1] >= 0x80 && (unsigned char)out[i + 1] <= 0x9f);
		if (c == 0xe2 && i + 2 < n && (unsigned char)out[i + 1] == 0x80) {
			unsigned char d = (unsigned char)out[i + 2];
			assert_false(d == 0x8e || d == 0x8f || (d >= 0xaa && d <= 0xae));
		}
		if (c == 0xe2 && i + 2 < n && (unsigned char)out[i + 1] == 0x81) {
			unsigned char d = (unsigned char)out[i + 2];
			assert_false(d >= 0xa6 && d <= 0xa9);
		}
		if (c == 0xd8 && i + 1 < n)
			assert_false((unsigned char)out[i + 1] == 0x9c);
	}
}

static void test_c0_and_del_show_as_caret_notation(void **state)
{
	(void)state;
	for (int c = 0; c < 0x20; c++) {
		char in[3] = {'a', (char)c, 'b'}, want[5] = {'a', '^', (char)(c + 0x40), 'b', 0};
		expect(in, 3, TERMSAFE_LINE, want);
		if (c != '\n' && c != '\t')
			expect(in, 3, TERMSAFE_TEXT, want);
	}
	EXPECT("a\x7f" "b", TERMSAFE_LINE, "a^?b");
	EXPECT("a\x7f" "b", TERMSAFE_TEXT, "a^?b");
	/* Newline and tab: visible in a field, kept in text; CR never kept. */
	EXPECT("one\ntwo\tthree\r", TERMSAFE_LINE, "one^Jtwo^Ithree^M");
	EXPECT("one\ntwo\tthree\r", TERMSAFE_TEXT, "one\ntwo\tthree^M");
	EXPECT("plain text, 100% ASCII ~", TERMSAFE_LINE, "plain text, 100% ASCII ~");
}

static void test_escape_sequences_are_shown_never_sent(void **state)
{
	(void)state;
	/* OSC (set the title), CSI (colour, cursor), DCS with its ST. */
	EXPECT("\x1b]0;pwned\x07", TERMSAFE_LINE, "^[]0;pwned^G");
	EXPECT("\x1b]0;pwned\x1b\\", TERMSAFE_LINE, "^[]0;pwned^[\\");
	EXPECT("\x1b[31mred\x1b[0m\x1b[2J\x1b[H", TERMSAFE_TEXT, "^[[31mred^[[0m^[[2J^[[H");
	EXPECT("\x1bP+q544e\x1b\\", TERMSAFE_LINE, "^[P+q544e^[\\");
	/* The same introducers as C1 characters (CSI U+009B, OSC U+009D). */
	EXPECT("\xc2\x9b" "31m\xc2\x9d" "0;x\xc2\x9c", TERMSAFE_LINE, "\\u009b31m\\u009d0;x\\u009c");
	/* ... and as raw 8-bit bytes, which are not UTF-8. */
	EXPECT("\x9b" "31m\x9d" "0;x\x07", TERMSAFE_LINE, "\\x9b31m\\x9d0;x^G");
}

static void test_c1_controls_show_as_u_escapes(void **state)
{
	(void)state;
	for (unsigned cp = 0x80; cp <= 0x9f; cp++) {
		char in[2] = {(char)(0xc0 | cp >> 6), (char)(0x80 | (cp & 0x3f))}, want[8];
		snprintf(want, sizeof want, "\\u%04x", cp);
		expect(in, 2, TERMSAFE_LINE, want);
		expect(in, 2, TERMSAFE_TEXT, want);
	}
	/* U+00A0 and up are printable: kept. */
	EXPECT("\xc2\xa0\xc3\xa9", TERMSAFE_LINE, "\xc2\xa0\xc3\xa9");
}

static void test_bidi_controls_show_as_u_escapes(void **state)
{
	(void)state;
	static const unsigned bidi[] = {0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c,
					0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069};
	for (size_t i = 0; i < sizeof bidi / sizeof bidi[0]; i++) {
		unsigned cp = bidi[i];
		char in[4], want[8];
		size_t n;
		if (cp < 0x800)
			in[0] = (char)(0xc0 | cp >> 6), in[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
		else
			in[0] = (char)(0xe0 | cp >> 12), in[1] = (char)(0x80 | (cp >> 6 & 0x3f)),
			in[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
		snprintf(want, sizeof want, "\\u%04x", cp);
		expect(in, n, TERMSAFE_LINE, want);
	}
	/* Their neighbours are ordinary characters (U+061B, U+200D, U+202F,
	 * U+2065, U+206A). */
	EXPECT("\xd8\x9b\xe2\x80\x8d\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", TERMSAFE_LINE,
	       "\xd8\x9b\xe2\x80\x8d\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa");
	/* The classic: a file name that reads "exe.txt" reversed. */
	EXPECT("invoice\xe2\x80\xaetxt.exe", TERMSAFE_LINE, "invoice\\u202etxt.exe");
}

static void test_utf8_kept_and_invalid_shown(void **state)
{
	(void)state;
	EXPECT("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", TERMSAFE_LINE,
	       "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf");
	/* Overlongs, surrogates, past U+10FFFF, bytes never in UTF-8, a stray
	 * continuation byte: each byte shown, and what follows read afresh. */
	EXPECT("\xc0\x80", TERMSAFE_LINE, "\\xc0\\x80");
	EXPECT("\xc1\xbf", TERMSAFE_LINE, "\\xc1\\xbf");
	EXPECT("\xe0\x80\x80", TERMSAFE_LINE, "\\xe0\\x80\\x80");
	EXPECT("\xed\xa0\x80", TERMSAFE_LINE, "\\xed\\xa0\\x80");
	EXPECT("\xf0\x80\x80\x80", TERMSAFE_LINE, "\\xf0\\x80\\x80\\x80");
	EXPECT("\xf4\x90\x80\x80", TERMSAFE_LINE, "\\xf4\\x90\\x80\\x80");
	EXPECT("\xf5\xfe\xff", TERMSAFE_LINE, "\\xf5\\xfe\\xff");
	EXPECT("a\x80" "b", TERMSAFE_LINE, "a\\x80b");
	/* A sequence cut short by the next character, or by the end. */
	EXPECT("\xe2\x80" "A\xc3\xa9", TERMSAFE_LINE, "\\xe2\\x80A\xc3\xa9");
	EXPECT("\xe2\x80\x1b", TERMSAFE_LINE, "\\xe2\\x80^[");
	EXPECT("end\xf0\x9f\x98", TERMSAFE_LINE, "end\\xf0\\x9f\\x98");
	/* NUL is data like any other byte. */
	expect("a\0b", 3, TERMSAFE_LINE, "a^@b");
}

static void test_partial_piece_holds_back_an_unfinished_character(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	/* A piece ending inside U+202E: the unfinished bytes are kept back. */
	const char *p1 = "abc\xe2\x80";
	assert_int_equal(termsafe_add(&b, p1, 5, TERMSAFE_TEXT | TERMSAFE_PARTIAL), 3);
	assert_string_equal(b.p, "abc");
	const char p2[] = "\xe2\x80\xae" "d";
	assert_int_equal(termsafe_add(&b, p2, 4, TERMSAFE_TEXT | TERMSAFE_PARTIAL), 4);
	assert_string_equal(b.p, "abc\\u202ed");
	/* Kept back only while more bytes could complete it. */
	buf_reset(&b);
	assert_int_equal(termsafe_add(&b, "x\xe2\x28", 3, TERMSAFE_PARTIAL), 3);
	assert_string_equal(b.p, "x\\xe2(");
	buf_reset(&b);
	assert_int_equal(termsafe_add(&b, "x\xff", 2, TERMSAFE_PARTIAL), 2);
	assert_string_equal(b.p, "x\\xff");
	buf_reset(&b);
	assert_int_equal(termsafe_add(&b, "\xf0\x9f\x98", 3, TERMSAFE_PARTIAL), 0);
	assert_int_equal(b.len, 0);
	buf_release(&b);

	/* Any split of a text fed as a stream shows the same as all at once. */
	static const char text[] = "a\xc3\xa9\xe2\x80\xae\xf0\x9f\x98\x80\x1b[1m\xc2\x85z\n\xe4\xb8\xad";
	size_t n = sizeof text - 1;
	char *whole = safe(text, n, TERMSAFE_TEXT);
	for (size_t cut1 = 0; cut1 <= n; cut1++) {
		for (size_t cut2 = cut1; cut2 <= n; cut2++) {
			struct buf s = BUF_INIT, pend = BUF_INIT;
			size_t bounds[3] = {cut1, cut2, n}, at = 0;
			for (int k = 0; k < 3; k++) {
				buf_add(&pend, text + at, bounds[k] - at);
				at = bounds[k];
				unsigned fl = TERMSAFE_TEXT | (k < 2 ? TERMSAFE_PARTIAL : 0);
				size_t used = termsafe_add(&s, pend.p, pend.len, fl);
				struct buf rest = BUF_INIT;
				buf_add(&rest, pend.p + used, pend.len - used);
				buf_release(&pend);
				pend = rest;
			}
			assert_int_equal(pend.len, 0);
			assert_string_equal(s.p, whole);
			buf_release(&s);
			buf_release(&pend);
		}
	}
	free(whole);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void test_random_input_never_yields_a_raw_control(void **state)
{
	(void)state;
	/* 4 MiB mixing random bytes with the dangerous sequences. */
	static const char *const nasty[] = {"\x1b]0;x\x07", "\xc2\x9b", "\xe2\x80\xae", "\xe2\x81\xa6",
					    "\x9b", "\xd8\x9c", "\xe2\x80\x8f", "\x7f", "\n", "\t", "\r"};
	struct buf in = BUF_INIT;
	while (in.len < (4u << 20)) {
		uint32_t r = next_rand();
		if (r % 4 == 0)
			buf_adds(&in, nasty[(r >> 8) % (sizeof nasty / sizeof nasty[0])]);
		else
			buf_addc(&in, (char)(r >> 8));
	}
	for (unsigned fl = 0; fl < 2; fl++) {
		struct buf out = BUF_INIT;
		assert_int_equal(termsafe_add(&out, in.p, in.len, fl), in.len);
		assert_true(out.len >= in.len);
		assert_int_equal(strlen(out.p), out.len); /* no NUL survives either */
		assert_inert(out.p, out.len, fl == TERMSAFE_TEXT);
		buf_release(&out);
	}
	/* Valid UTF-8 without controls comes out byte-identical. */
	struct buf plain = BUF_INIT;
	while (plain.len < (1u << 20))
		buf_adds(&plain, "plain \xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x8c\xb2 ");
	char *same = safe(plain.p, plain.len, TERMSAFE_LINE);
	assert_memory_equal(same, plain.p, plain.len);
	assert_int_equal(strlen(same), plain.len);
	free(same);
	buf_release(&plain);
	buf_release(&in);
}

static void test_termsafe_str_takes_null_and_escapes_controls(void **state)
{
	(void)state;
	char *s = termsafe_str(NULL, TERMSAFE_LINE);
	assert_string_equal(s, "");
	free(s);
	s = termsafe_str("t\x1b[2J\nx", TERMSAFE_LINE);
	assert_string_equal(s, "t^[[2J^Jx");
	free(s);
	s = termsafe_str("t\x1b[2J\nx", TERMSAFE_TEXT);
	assert_string_equal(s, "t^[[2J\nx");
	free(s);
}

static void test_printf_trusts_the_format_not_its_arguments(void **state)
{
	(void)state;
	struct buf b = BUF_INIT;
	/* The format is trusted (its newline stays), the arguments are not. */
	termsafe_printf(&b, "%s: '%s'\n", "error", "\x1b]0;pwned\x07\n");
	assert_string_equal(b.p, "error: '^[]0;pwned^G^J'\n");
	buf_reset(&b);
	termsafe_printf(&b, "[%-6s|%6s|%.3s|%.*s|%*s|%-*s]", "ab", "\x1b", "abcdef", 2, "\x07xyz", 4, "q",
			3, "r");
	assert_string_equal(b.p, "[ab    |    ^[|abc|^Gx|   q|r  ]");
	buf_reset(&b);
	termsafe_printf(&b,
			"%d %5d %-4d| %03u %zu %zd %llu %lld %ld %lu %x %X %#o %hhd %hu %jd %td %c%c %%", -7,
			42, 3, 9u, (size_t)123456789012ull, (ssize_t)-5, 18446744073709551615ull,
			-9223372036854775807ll, -1l, 7ul, 255u, 255u, 8u, (signed char)-3, (unsigned short)65535,
			(intmax_t)-2, (ptrdiff_t)-1, 'A', '\x1b');
	assert_string_equal(b.p, "-7    42 3   | 009 123456789012 -5 18446744073709551615 "
				 "-9223372036854775807 -1 7 ff FF 010 -3 65535 -2 -1 A^[ %");
	buf_reset(&b);
	const char *volatile none = NULL; /* not known to be NULL at compile time */
	termsafe_printf(&b, "%.2f %5.1f %g %e %Lg|%s|%4s|", 3.14159, 2.25, 0.5, 1e10, (long double)1.5,
			none, "\xe2\x80\xae");
	assert_string_equal(b.p, "3.14   2.2 0.5 1.000000e+10 1.5|(null)|\\u202e|");
	buf_reset(&b);
	/* Long arguments are not cut. */
	char big[3000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	termsafe_printf(&b, "<%s>", big);
	assert_int_equal(b.len, sizeof big + 1);
	buf_release(&b);
}

/* JSON text of a string holding raw s[0..n), through cJSON's printer. */
static char *json_of(const char *s)
{
	cJSON *v = cJSON_CreateString(s);
	char *t = json_print(v);
	cJSON_Delete(v);
	return t;
}

/* termsafe_json of the JSON text t: nothing raw, and valid JSON (returned
 * parsed; the caller frees). */
static cJSON *escaped_parses(const char *t, size_t n)
{
	struct buf out = BUF_INIT;
	termsafe_json(&out, t, n);
	assert_inert(out.p, out.len, false);
	const char *why;
	cJSON *back = json_parse_strict(out.p, out.len, &why);
	assert_non_null(back);
	buf_release(&out);
	return back;
}

/* termsafe_json_string of s: nothing raw, and a JSON string equal to s. */
static void string_parses(const char *s)
{
	struct buf out = BUF_INIT;
	termsafe_json_string(&out, s);
	assert_inert(out.p, out.len, false);
	const char *why;
	cJSON *back = json_parse_strict(out.p, out.len, &why);
	assert_non_null(back);
	assert_string_equal(back->valuestring, s);
	cJSON_Delete(back);
	buf_release(&out);
}

static void test_termsafe_json_escapes_controls_and_parses_back(void **state)
{
	(void)state;
	static const char *const strs[] = {
		"plain",
		"osc \x1b]0;pwned\x07 end",
		"c1 \xc2\x85\xc2\x9b\xc2\x9f",
		"bidi \xe2\x80\xae\xe2\x81\xa6\xe2\x81\xa9\xd8\x9c\xe2\x80\x8e",
		"del \x7f",
		"quote \" and backslash \\ \xc2\x85\"",
		"\\u0085 literally",
		"caf\xc3\xa9 \xf0\x9f\x98\x80",
		"\n\t\r\b\f",
		"",
	};
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
		char *t = json_of(strs[i]);
		cJSON *back = escaped_parses(t, strlen(t));
		assert_true(cJSON_IsString(back));
		assert_string_equal(back->valuestring, strs[i]);
		cJSON_Delete(back);
		free(t);
		string_parses(strs[i]);
	}
	/* The escapes themselves. */
	struct buf out = BUF_INIT;
	static const char obj[] = "{\"a\":\"\xc2\x85\xe2\x80\xae\x7f\",\"b\":[1,\"\\\"\xe2\x81\xa6\"]}\n";
	termsafe_json(&out, obj, sizeof obj - 1);
	assert_string_equal(out.p, "{\"a\":\"\\u0085\\u202e\\u007f\",\"b\":[1,\"\\\"\\u2066\"]}\n");
	/* Raw controls a lax producer left in a string become escapes;
	 * whitespace between values stays. */
	buf_reset(&out);
	static const char lax[] = "[\"\x1b]0;x\x07\",\n\t\"a\rb\"]";
	termsafe_json(&out, lax, sizeof lax - 1);
	assert_string_equal(out.p, "[\"\\u001b]0;x\\u0007\",\n\t\"a\\rb\"]");
	const char *why;
	cJSON *v = json_parse_strict(out.p, out.len, &why);
	assert_non_null(v);
	assert_string_equal(cJSON_GetArrayItem(v, 0)->valuestring, "\x1b]0;x\x07");
	assert_string_equal(cJSON_GetArrayItem(v, 1)->valuestring, "a\rb");
	cJSON_Delete(v);
	/* Bytes that are not UTF-8 (a path from the command line) become
	 * U+FFFD: the output is still valid JSON. */
	buf_reset(&out);
	static const char bad[] = "{\"path\":\"/tmp/a\x9b" "b\xe2\x80\"}";
	termsafe_json(&out, bad, sizeof bad - 1);
	assert_string_equal(out.p, "{\"path\":\"/tmp/a\\ufffdb\\ufffd\\ufffd\"}");
	v = json_parse_strict(out.p, out.len, &why);
	assert_non_null(v);
	cJSON_Delete(v);
	/* One string literal, built piece by piece: the same escapes. */
	buf_reset(&out);
	termsafe_json_string(&out, "a\"\\\n\x1b\x7f\xc2\x85\xe2\x80\xae\x9b\xc3\xa9");
	assert_string_equal(out.p, "\"a\\\"\\\\\\n\\u001b\\u007f\\u0085\\u202e\\ufffd\xc3\xa9\"");
	buf_release(&out);
}

/* Append code point cp as UTF-8. */
static void add_cp(struct buf *b, uint32_t cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80)
		u[0] = (char)cp, n = 1;
	else if (cp < 0x800)
		u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
	else if (cp < 0x10000)
		u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3f)),
		u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
	else
		u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3f)),
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
	buf_add(b, u, n);
}

static void test_termsafe_json_of_random_strings_parses_back(void **state)
{
	(void)state;
	/* Objects of random strings drawn mostly from the dangerous ranges:
	 * after termsafe_json, nothing raw, and every string parses back. */
	static const uint32_t ranges[][2] = {{0x01, 0x7f}, {0x80, 0x9f}, {0xa0, 0x7ff}, {0x061c, 0x061c},
					     {0x200b, 0x206f}, {0xe000, 0xfffd}, {0x10000, 0x10ffff}};
	for (int round = 0; round < 2000; round++) {
		cJSON *o = cJSON_CreateObject();
		struct buf keys[4] = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
		struct buf vals[4] = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
		for (int k = 0; k < 4; k++) {
			buf_printf(&keys[k], "k%d", k);
			add_cp(&keys[k], 0x80 + next_rand() % 0x20); /* keys are strings too */
			buf_add(&vals[k], "", 0);
			for (uint32_t len = next_rand() % 40; len; len--) {
				const uint32_t *r = ranges[next_rand() % 7];
				add_cp(&vals[k], r[0] + next_rand() % (r[1] - r[0] + 1));
			}
			cJSON_AddStringToObject(o, keys[k].p, vals[k].p);
		}
		char *t = json_print(o);
		cJSON *back = escaped_parses(t, strlen(t));
		for (int k = 0; k < 4; k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(back, keys[k].p);
			assert_non_null(v);
			assert_string_equal(v->valuestring, vals[k].p);
			string_parses(vals[k].p);
			buf_release(&keys[k]);
			buf_release(&vals[k]);
		}
		cJSON_Delete(back);
		cJSON_Delete(o);
		free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_c0_and_del_show_as_caret_notation),
		cmocka_unit_test(test_escape_sequences_are_shown_never_sent),
		cmocka_unit_test(test_c1_controls_show_as_u_escapes),
		cmocka_unit_test(test_bidi_controls_show_as_u_escapes),
		cmocka_unit_test(test_utf8_kept_and_invalid_shown),
		cmocka_unit_test(test_partial_piece_holds_back_an_unfinished_character),
		cmocka_unit_test(test_random_input_never_yields_a_raw_control),
		cmocka_unit_test(test_termsafe_str_takes_null_and_escapes_controls),
		cmocka_unit_test(test_printf_trusts_the_format_not_its_arguments),
		cmocka_unit_test(test_termsafe_json_escapes_controls_and_parses_back),
		cmocka_unit_test(test_termsafe_json_of_random_strings_parses_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
