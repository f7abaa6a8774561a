/* test_utf8.c — base/utf8.h: UTF-8 validation rejects malformed sequences
 * naming the offset; the one encoder. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <utf8proc.h>

#include "base/utf8.h"

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

static void check_encode(uint32_t cp, const char *want)
{
	char out[4];
	size_t n = utf8_encode(cp, out);
	if (n != strlen(want) || memcmp(out, want, n) != 0)
		fail_msg("utf8_encode(U+%04X) gave %zu bytes", (unsigned)cp, n);
}

/* The one encoder: each length at its bounds, and a code point UTF-8
 * cannot carry (a surrogate, past U+10FFFF) becomes U+FFFD; every output
 * is valid UTF-8 and decodes (utf8proc) back to the code point. */
static void test_utf8_encode_at_each_length_and_replaces_the_unencodable(void **state)
{
	(void)state;
	char nul[4] = {1};
	assert_int_equal(utf8_encode(0, nul), 1);
	assert_int_equal(nul[0], 0);
	check_encode(0x41, "A");
	check_encode(0x7f, "\x7f");
	check_encode(0x80, "\xc2\x80");
	check_encode(0x7ff, "\xdf\xbf");
	check_encode(0x800, "\xe0\xa0\x80");
	check_encode(0xe9 + 0x2000, "\xe2\x83\xa9");
	check_encode(0xfffd, "\xef\xbf\xbd");
	check_encode(0xffff, "\xef\xbf\xbf");
	check_encode(0x10000, "\xf0\x90\x80\x80");
	check_encode(0x1f600, "\xf0\x9f\x98\x80");
	check_encode(0x10ffff, "\xf4\x8f\xbf\xbf");
	check_encode(0xd800, "\xef\xbf\xbd");
	check_encode(0xdfff, "\xef\xbf\xbd");
	check_encode(0x110000, "\xef\xbf\xbd");
	check_encode(0xffffffffu, "\xef\xbf\xbd");
	for (uint32_t cp = 1; cp <= 0x10ffff; cp += cp < 0x1000 ? 1 : 97) {
		char out[4];
		size_t n = utf8_encode(cp, out);
		bool sur = cp >= 0xd800 && cp <= 0xdfff;
		assert_true(utf8_valid(out, n, NULL));
		utf8proc_int32_t back = -1;
		assert_int_equal(utf8proc_iterate((const utf8proc_uint8_t *)out, (utf8proc_ssize_t)n,
						  &back),
				 (utf8proc_ssize_t)n);
		assert_int_equal((uint32_t)back, sur ? 0xfffd : cp);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_valid_rejects_malformed_and_names_the_offset),
		cmocka_unit_test(test_utf8_encode_at_each_length_and_replaces_the_unencodable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
