/* test_textfix.c — engine/textfix: what cJSON does with surrogate and NUL
 * escapes (the reason for the rewrite), the rewrite itself, a surrogate
 * pair and a character split across deltas, lone surrogates, NUL and
 * invalid bytes as U+FFFD, random deltas giving the one-shot result, and
 * pieces that fit a log line. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "engine/textfix.h"
#include "persist/event.h"

#define FFFD "\xef\xbf\xbd"

/* Feed the deltas (NULL-terminated) and finish; the joined output. */
static char *feed_all(const char *const *deltas)
{
	struct textfix tf = TEXTFIX_INIT;
	struct buf b = BUF_INIT;
	for (; *deltas; deltas++)
		textfix_feed(&tf, *deltas, strlen(*deltas), &b);
	textfix_finish(&tf, &b);
	return buf_detach(&b, NULL);
}

static void expect_feed(const char *const *deltas, const char *want)
{
	char *got = feed_all(deltas);
	if (strcmp(got, want) != 0)
		fail_msg("got '%s', want '%s'", got, want);
	free(got);
}

/* cJSON refuses a whole payload for one lone surrogate escape and cuts a
 * string at \u0000: the facts textfix_json_escapes exists for. */
static void test_cjson_refuses_lone_surrogates(void **state)
{
	assert_null(cJSON_Parse("{\"content\":\"a\\ud83d\"}"));
	assert_null(cJSON_Parse("{\"content\":\"\\ude00b\"}"));
	assert_null(cJSON_Parse("{\"content\":\"\\ud83d\\u0041\"}"));
	cJSON *j = cJSON_Parse("\"a\\u0000b\"");
	assert_string_equal(j->valuestring, "a"); /* the rest is lost */
	cJSON_Delete(j);
	j = cJSON_Parse("\"\\ud83d\\ude00\"");
	assert_string_equal(j->valuestring, "\xf0\x9f\x98\x80");
	cJSON_Delete(j);
}

static void test_json_escapes_fix_lone_surrogates_nul_and_raw_controls(void **state)
{
	struct buf b = BUF_INIT;
	assert_true(textfix_json_escapes("{\"c\":\"a\\ud83d\"}", 15, &b));
	assert_memory_equal(b.p, "{\"c\":\"a\xed\xa0\xbd\"}", 11);
	cJSON *j = cJSON_ParseWithLength(b.p, b.len);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "c")->valuestring, "a\xed\xa0\xbd");
	cJSON_Delete(j);

	/* A pair, an escaped backslash before "ud83d", other escapes: kept. */
	static const char keep[] = "{\"c\":\"\\ud83d\\ude00 \\\\ud83d \\n \\u00e9\"}";
	buf_reset(&b);
	assert_false(textfix_json_escapes(keep, sizeof keep - 1, &b));
	assert_string_equal(b.p, keep);

	/* \u0000 and a raw NUL inside a string become U+FFFD. */
	static const char nul[] = "{\"c\":\"a\\u0000b\0c\"}";
	buf_reset(&b);
	assert_true(textfix_json_escapes(nul, sizeof nul - 1, &b));
	j = cJSON_ParseWithLength(b.p, b.len);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "c")->valuestring, "a" FFFD "b" FFFD "c");
	cJSON_Delete(j);

	/* A lone low surrogate and a high one before a non-low escape. */
	static const char lows[] = "[\"\\udc00x\",\"\\ud800\\u0041\"]";
	buf_reset(&b);
	assert_true(textfix_json_escapes(lows, sizeof lows - 1, &b));
	j = cJSON_ParseWithLength(b.p, b.len);
	assert_non_null(j);
	char *a = textfix_string(j->child->valuestring, strlen(j->child->valuestring));
	char *c = textfix_string(j->child->next->valuestring, strlen(j->child->next->valuestring));
	assert_string_equal(a, FFFD "x");
	assert_string_equal(c, FFFD "A");
	free(a);
	free(c);
	cJSON_Delete(j);
	buf_release(&b);
}

/* A payload without NUL takes a quicker path that jumps from backslash to
 * backslash; one with a NUL walks every byte. Both must rewrite escapes
 * alike: the same payload with a raw NUL after it (outside any string,
 * which becomes a space) gives the same bytes plus that space. */
static void test_json_escapes_same_with_and_without_nul(void **state)
{
	static const struct {
		const char *json;
		bool changed;
	} in[] = {
		{"{\"c\":\"plain text, no escape\"}", false},
		{"{\"c\":\"a\\ud83d\"}", true},
		{"{\"c\":\"\\ud83d\\ude00 \\\\ud83d \\n \\u00e9\"}", false},
		{"{\"c\":\"\\\\\\u0000\\\\\"}", true},
		{"{\"c\":\"\\udc00\\ud800\\u0041\\\"q\\\\\"}", true},
		{"[\"\\ud83d\",\"\\ude00\",\"\\u0000\\u0000\"]", true},
	};
	for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
		size_t n = strlen(in[i].json);
		struct buf fast = BUF_INIT, slow = BUF_INIT, with_nul = BUF_INIT;
		buf_add(&with_nul, in[i].json, n);
		buf_addc(&with_nul, '\0');
		assert_int_equal(textfix_json_escapes(in[i].json, n, &fast), in[i].changed);
		assert_true(textfix_json_escapes(with_nul.p, n + 1, &slow));
		buf_addc(&fast, ' ');
		if (fast.len != slow.len || memcmp(fast.p, slow.p, fast.len) != 0)
			fail_msg("payload %zu: '%s' without NUL, '%s' with", i, fast.p, slow.p);
		buf_release(&fast);
		buf_release(&slow);
		buf_release(&with_nul);
	}
	/* A payload cut after a backslash or inside an escape: copied as is. */
	struct buf b = BUF_INIT;
	assert_false(textfix_json_escapes("{\"c\":\"cut \\", 11, &b));
	assert_string_equal(b.p, "{\"c\":\"cut \\");
	buf_reset(&b);
	assert_false(textfix_json_escapes("{\"c\":\"cut \\ud83", 15, &b));
	assert_string_equal(b.p, "{\"c\":\"cut \\ud83");
	buf_release(&b);
}

static void test_pair_split_across_deltas(void **state)
{
	/* The halves of U+1F600 as cJSON hands them over after the rewrite. */
	expect_feed((const char *const[]){"smile \xed\xa0\xbd", "\xed\xb8\x80!", NULL},
		    "smile \xf0\x9f\x98\x80!");
	/* Split inside the low half too. */
	expect_feed((const char *const[]){"\xed\xa0\xbd", "\xed", "\xb8", "\x80", NULL},
		    "\xf0\x9f\x98\x80");
	/* A UTF-8 character split across deltas (servers that cut bytes). */
	expect_feed((const char *const[]){"1 \xe2\x82", "\xac", NULL}, "1 \xe2\x82\xac");
	expect_feed((const char *const[]){"\xf0", "\x9f\x98", "\x80", NULL}, "\xf0\x9f\x98\x80");
	/* A CESU-8 pair in one delta is joined as well. */
	expect_feed((const char *const[]){"\xed\xa0\xbd\xed\xb8\x80", NULL}, "\xf0\x9f\x98\x80");
}

static void test_invalid_utf8_and_lone_surrogates_become_fffd(void **state)
{
	/* A high surrogate whose next delta is not a low one. */
	expect_feed((const char *const[]){"a\xed\xa0\xbd", "b", NULL}, "a" FFFD "b");
	/* A high surrogate at the very end of the stream. */
	expect_feed((const char *const[]){"a\xed\xa0\xbd", NULL}, "a" FFFD);
	/* A lone low surrogate; two highs in a row. */
	expect_feed((const char *const[]){"\xed\xb8\x80z", NULL}, FFFD "z");
	expect_feed((const char *const[]){"\xed\xa0\xbd\xed\xa0\xbd\xed\xb8\x80", NULL},
		    FFFD "\xf0\x9f\x98\x80");
	/* NUL, stray continuation, overlong, out-of-range, truncated at end. */
	static const char nul[] = "x\0y";
	struct textfix tf = TEXTFIX_INIT;
	struct buf b = BUF_INIT;
	textfix_feed(&tf, nul, 3, &b);
	textfix_finish(&tf, &b);
	assert_string_equal(b.p, "x" FFFD "y");
	buf_release(&b);
	expect_feed((const char *const[]){"\x80" "a\xc0\xaf" "b\xf5\x80" "c\xff", NULL},
		    FFFD "a" FFFD FFFD "b" FFFD FFFD "c" FFFD);
	expect_feed((const char *const[]){"end \xe2\x82", NULL}, "end " FFFD);
	expect_feed((const char *const[]){"\xe2\x82x", NULL}, FFFD "x");
}

static uint32_t rng = 12345;
static uint32_t next_rand(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

/* Random bytes (biased to the lead and continuation bytes that matter)
 * cut at random places repair to the same text as in one piece, and the
 * result is always valid UTF-8. */
static void test_random_splits_repair_like_one_piece(void **state)
{
	static const unsigned char alphabet[] = {'a', 0, 0x80, 0xbf, 0xc3, 0xa9, 0xe2, 0x82, 0xac,
						 0xed, 0xa0, 0xb8, 0xbd, 0xf0, 0x9f, 0x98, 0xff};
	for (int round = 0; round < 2000; round++) {
		size_t n = next_rand() % 40;
		char s[40];
		for (size_t i = 0; i < n; i++)
			s[i] = (char)alphabet[next_rand() % sizeof alphabet];
		char *whole = textfix_string(s, n);
		assert_true(utf8_valid(whole, strlen(whole), NULL));
		struct textfix tf = TEXTFIX_INIT;
		struct buf b = BUF_INIT;
		for (size_t i = 0; i < n;) {
			size_t k = 1 + next_rand() % 5;
			if (k > n - i)
				k = n - i;
			textfix_feed(&tf, s + i, k, &b);
			assert_true(utf8_valid(b.p ? b.p : "", b.len, NULL));
			i += k;
		}
		textfix_finish(&tf, &b);
		assert_string_equal(b.p ? b.p : "", whole);
		buf_release(&b);
		free(whole);
	}
}

/* Pieces of a text full of characters that escape long fit one log line
 * each, end on character boundaries, and join back to the text. */
static void test_pieces_fit_a_line_and_end_on_characters(void **state)
{
	size_t n = 3 * 1024 * 1024;
	char *text = xmalloc(n + 1);
	for (size_t i = 0; i < n;) {
		static const char *const bits[] = {"\"", "\x01", "\xe2\x82\xac", "\\", "x", "\n"};
		const char *bit = bits[next_rand() % 6];
		size_t k = strlen(bit);
		if (i + k > n)
			break;
		memcpy(text + i, bit, k);
		i += k;
		n = n > i ? n : i;
		text[i] = '\0';
	}
	n = strlen(text);
	char turn[129];
	memset(turn, 't', 128);
	turn[128] = '\0';
	struct buf joined = BUF_INIT, line = BUF_INIT;
	size_t pieces = 0;
	for (size_t at = 0; at < n; pieces++) {
		size_t k = textfix_piece(text + at, n - at, TEXTFIX_PIECE_MAX);
		assert_true(k > 0);
		char *piece = xstrndup(text + at, k);
		assert_true(utf8_valid(piece, k, NULL));
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "text", piece);
		buf_reset(&line);
		event_format(&line, 9007199254740991ull, 9007199254740991ll, "assistant/reasoning",
			     turn, true, data);
		assert_true(line.len - 1 <= EVENT_MAX_LINE);
		cJSON_Delete(data);
		buf_add(&joined, piece, k);
		free(piece);
		at += k;
	}
	assert_true(pieces >= 4);
	assert_int_equal(joined.len, n);
	assert_memory_equal(joined.p, text, n);
	/* The cut is on the escaped size: 1000 quotes take 2000 bytes. */
	memset(text, '"', 1000);
	assert_int_equal(textfix_piece(text, 1000, 1001), 500);
	/* Never inside a character. */
	assert_int_equal(textfix_piece("\xe2\x82\xac\xe2\x82\xac", 6, 5), 3);
	buf_release(&joined);
	buf_release(&line);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cjson_refuses_lone_surrogates),
		cmocka_unit_test(test_json_escapes_fix_lone_surrogates_nul_and_raw_controls),
		cmocka_unit_test(test_json_escapes_same_with_and_without_nul),
		cmocka_unit_test(test_pair_split_across_deltas),
		cmocka_unit_test(test_invalid_utf8_and_lone_surrogates_become_fffd),
		cmocka_unit_test(test_random_splits_repair_like_one_piece),
		cmocka_unit_test(test_pieces_fit_a_line_and_end_on_characters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
