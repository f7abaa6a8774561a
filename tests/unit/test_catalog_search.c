/* test_catalog_search.c — catalog_search on a real catalog: plain words,
 * AND, quoted phrases, case and diacritics, ranking (relevance, then
 * recency), limits, the trash, hostile input that must never be FTS5
 * syntax, Chinese and Japanese without spaces, snippets, and which texts
 * are indexed (user, assistant chunks joined, tool output strings and JSON). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "persist/catalog.h"
#include "persist/store.h"
#include "tests/unit/support_catalog.h"

static int setup(void **state)
{
	if (catfx_setup(state, "cairn-test-search") < 0)
		return -1;
	cat(*state); /* opened before each test: the tests use f->cat */
	return 0;
}

/* A session in /p from batches (see make), then synced into the catalog. */
static void make_synced(struct fx *f, const char *id, const char *const *batches)
{
	make(f, id, "/p", NULL, batches);
	sync_ok(f);
}

#undef USER /* here a user message has a turn */
#define USER(turn, text) "{'type':'user/message','turn':'" turn "','data':{'text':'" text "'}}"
#define ASSIST(turn, text) "{'type':'assistant/text','turn':'" turn "','data':{'text':'" text "'}}"

/* The hits of a search that must succeed. */
struct hits {
	struct cat_hit *h;
	size_t n;
};

static struct hits search(struct fx *f, const char *q, size_t limit, bool with_deleted)
{
	struct hits r = {NULL, 99};
	struct cerr err;
	if (catalog_search(f->cat, q, limit, with_deleted, &r.h, &r.n, NULL, &err) < 0)
		fail_msg("search '%s': %s (class %d)", q, err.msg, err.cls);
	for (size_t i = 0; i < r.n; i++) {
		assert_non_null(r.h[i].session);
		assert_non_null(r.h[i].turn);
		assert_non_null(r.h[i].role);
		assert_non_null(r.h[i].snippet);
	}
	return r;
}

/* The hits as "session/turn/role ...", in order. */
static void expect(struct fx *f, const char *q, const char *want)
{
	struct hits r = search(f, q, 0, false);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < r.n; i++)
		buf_printf(&b, "%s%s/%s/%s", i ? " " : "", r.h[i].session, r.h[i].turn, r.h[i].role);
	if (strcmp(b.p ? b.p : "", want) != 0)
		fail_msg("search '%s': got '%s', want '%s'", q, b.p ? b.p : "", want);
	buf_release(&b);
	cat_hits_free(r.h, r.n);
}

/* The first hit's snippet contains want. */
static void expect_snippet(struct fx *f, const char *q, const char *want)
{
	struct hits r = search(f, q, 0, false);
	assert_true(r.n > 0);
	if (!strstr(r.h[0].snippet, want))
		fail_msg("search '%s': snippet '%s' lacks '%s'", q, r.h[0].snippet, want);
	cat_hits_free(r.h, r.n);
}

static void words_fixture(struct fx *f)
{
	make_synced(f, "s1", B("[" USER("t1", "The quick brown fox jumps") "," ASSIST("t1", "Lazy dogs sleep all day") "]"));
	make_synced(f, "s2", B("[" USER("t1", "A brown bear and a quick rabbit") "]",
			       "[" USER("t2", "Caf\\u00e9 au lait, na\\u00efve R\\u00e9sum\\u00e9") "]"));
}

static void test_every_word_is_required_and_phrases_keep_order(void **state)
{
	struct fx *f = *state;
	words_fixture(f);
	expect(f, "fox", "s1/t1/user");
	expect(f, "lazy", "s1/t1/assistant");
	expect(f, "quick fox", "s1/t1/user");           /* every word required */
	expect(f, "fox bear", "");
	expect(f, "\"quick brown\"", "s1/t1/user");     /* a phrase: order matters */
	expect(f, "\"brown quick\"", "");
	expect(f, "\"brown bear\" rabbit", "s2/t1/user");
	expect(f, "\"  quick   brown  \"", "s1/t1/user");
	expect(f, "\"fox brown\"", "");
	expect(f, "FOX", "s1/t1/user");                 /* case-insensitive */
	expect(f, "Lazy DOGS", "s1/t1/assistant");
	expect(f, "\"QUICK Brown\"", "s1/t1/user");
	expect(f, "cafe", "s2/t2/user");                /* diacritics folded */
	expect(f, "R\xC3\x89SUM\xC3\x89 naive", "s2/t2/user");
	expect(f, "foxes", "");                         /* words, not prefixes */
	expect(f, "fo", "");
	struct hits r = search(f, "brown", 0, false);
	assert_int_equal(r.n, 2);
	for (size_t i = 0; i < r.n; i++) {
		assert_string_equal(r.h[i].role, "user");
		assert_string_equal(r.h[i].turn, "t1");
		assert_non_null(strstr(r.h[i].snippet, "[brown]"));
		assert_string_equal(r.h[i].title, strcmp(r.h[i].session, "s1") == 0 ?
			"The quick brown fox jumps" : "A brown bear and a quick rabbit");
	}
	cat_hits_free(r.h, r.n);
	expect_snippet(f, "FOX", "[fox]");
	expect_snippet(f, "\"quick brown\"", "[quick brown]");
	expect_snippet(f, "cafe", "[Caf\xC3\xA9]");
}

static void test_more_hits_rank_first_then_the_newest(void **state)
{
	struct fx *f = *state;
	/* Same length; more occurrences first even though older. */
	make_synced(f, "many", B("[" USER("t", "apple apple apple pie") "]"));
	make_synced(f, "one", B("[" USER("t", "apple tart with cream") "]"));
	expect(f, "apple", "many/t/user one/t/user");
	/* Equal relevance: the most recent session first, whatever the ids. */
	make_synced(f, "zOld", B("[{'type':'user/message','turn':'t','data':{'text':'banana split'},'t':1000}]"));
	make_synced(f, "aNew", B("[{'type':'user/message','turn':'t','data':{'text':'banana split'},'t':3000}]"));
	make_synced(f, "mMid", B("[{'type':'user/message','turn':'t','data':{'text':'banana split'},'t':2000}]"));
	expect(f, "banana", "aNew/t/user mMid/t/user zOld/t/user");
	struct hits r = search(f, "\"banana split\"", 0, false);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.h[0].updated_at, catfx_t0 + 3000);
	assert_int_equal(r.h[2].updated_at, catfx_t0 + 1000);
	cat_hits_free(r.h, r.n);
}

static void test_search_returns_at_most_the_limit_asked(void **state)
{
	struct fx *f = *state;
	struct buf b = BUF_INIT;
	buf_adds(&b, "[");
	for (int i = 0; i < 60; i++)
		buf_printf(&b, "%s{'type':'user/message','turn':'t%02d','data':{'text':'needle number %d'}}",
			   i ? "," : "", i, i);
	buf_adds(&b, "]");
	make_synced(f, "big", B(b.p));
	buf_release(&b);
	static const size_t limits[][2] = {{0, CATALOG_SEARCH_LIMIT}, {5, 5}, {1, 1}, {60, 60}, {100, 60}};
	for (size_t k = 0; k < 5; k++) {
		struct hits r = search(f, "needle", limits[k][0], false);
		assert_int_equal(r.n, limits[k][1]);
		for (size_t i = 0; i < r.n; i++) /* distinct turns */
			for (size_t j = 0; j < i; j++)
				assert_string_not_equal(r.h[i].turn, r.h[j].turn);
		cat_hits_free(r.h, r.n);
	}
	assert_int_equal(CATALOG_SEARCH_LIMIT, 50);
	expect(f, "\"number 42\"", "big/t42/user");
}

static void test_trashed_sessions_are_found_only_when_asked(void **state)
{
	struct fx *f = *state;
	make_synced(f, "live", B("[" USER("t", "shared secret word") "]"));
	make_synced(f, "gone", B("[" USER("t", "shared words, deleted") "]"));
	struct session_ref ref = {"gone", "-p"};
	struct cerr err;
	assert_int_equal(store_trash(f->st, &ref, NULL, &err), 0);
	assert_int_equal(catalog_sync(f->cat, f->st, NULL, &err), 0);
	expect(f, "shared", "live/t/user");
	expect(f, "deleted", "");
	struct hits r = search(f, "shared", 0, true);
	assert_int_equal(r.n, 2);
	cat_hits_free(r.h, r.n);
	r = search(f, "deleted", 0, true);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.h[0].session, "gone");
	cat_hits_free(r.h, r.n);
}

static void test_blank_query_is_a_usage_error(void **state)
{
	struct fx *f = *state;
	words_fixture(f);
	/* Quotes around nothing leave no term either. */
	static const char *const blank[] = {"", " ", "   \t\n\r ", "\"\"", "\" \"", "\"", "\"\"\"", "\"\" \" \""};
	for (size_t i = 0; i < sizeof blank / sizeof blank[0]; i++) {
		struct cat_hit *h = (struct cat_hit *)1;
		size_t n = 7;
		struct cerr err;
		assert_int_equal(catalog_search(f->cat, blank[i], 0, false, &h, &n, NULL, &err), -1);
		assert_int_equal(err.cls, CERR_USAGE);
		assert_null(h);
		assert_int_equal(n, 0);
	}
}

/* The hits of q as one string: session/turn/role[snippet] each, in order. */
static char *hits_of(struct fx *f, const char *q)
{
	struct hits r = search(f, q, 0, false);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < r.n; i++)
		buf_printf(&b, "%s/%s/%s[%s] ", r.h[i].session, r.h[i].turn, r.h[i].role,
			   r.h[i].snippet);
	cat_hits_free(r.h, r.n);
	return buf_detach(&b, NULL);
}

/* A search refused as a usage error whose message names what. */
static void expect_refused(struct fx *f, const char *q, const char *what)
{
	struct cat_hit *h = NULL;
	size_t n = 0;
	struct cerr err = {0};
	if (catalog_search(f->cat, q, 0, false, &h, &n, NULL, &err) == 0) {
		cat_hits_free(h, n);
		fail_msg("search of %zu bytes accepted; want a usage error naming '%s'", strlen(q), what);
	}
	assert_int_equal(err.cls, CERR_USAGE);
	if (!strstr(err.msg, what))
		fail_msg("'%s' does not name '%s'", err.msg, what);
}

/* A term repeated (as typed, in another case or with other diacritics,
 * or as a repeated phrase) finds what it finds once, in the same order:
 * repeats are dropped, so they count neither against the caps nor in
 * relevance. */
static void test_repeated_terms_count_once(void **state)
{
	struct fx *f = *state;
	words_fixture(f);
	make_synced(f, "s3", B("[" USER("t1", "quick quick quick, the quickest brown fox") "]"));
	struct buf q = BUF_INIT;
	char *once = hits_of(f, "quick");
	assert_true(strstr(once, "s1/") && strstr(once, "s2/") && strstr(once, "s3/"));
	for (int i = 0; i < 150; i++) /* 950 bytes */
		buf_adds(&q, i % 3 == 0 ? "quick " : i % 3 == 1 ? "QUICK " : "Qu\xC3\xAD" "ck ");
	char *many = hits_of(f, q.p);
	assert_string_equal(many, once);
	free(many);
	free(once);
	buf_reset(&q);
	once = hits_of(f, "\"brown fox\" quick");
	for (int i = 0; i < 50; i++)
		buf_adds(&q, "\"brown fox\" quick ");
	many = hits_of(f, q.p);
	assert_string_equal(many, once);
	free(many);
	free(once);
	buf_release(&q);
}

/* The caps: CATALOG_QUERY_MAX_BYTES bytes and CATALOG_QUERY_MAX_WORDS
 * words work; one more of either is a usage error naming the cap. Words
 * are counted after tokenizing: each word of a phrase, and each character
 * of text without spaces. */
static void test_query_over_its_byte_or_word_cap_is_a_usage_error(void **state)
{
	struct fx *f = *state;
	words_fixture(f);
	char q[CATALOG_QUERY_MAX_BYTES + 2];
	memset(q, ' ', sizeof q);
	memcpy(q, "fox", 3);
	q[CATALOG_QUERY_MAX_BYTES] = '\0';
	expect(f, q, "s1/t1/user");
	q[CATALOG_QUERY_MAX_BYTES] = ' ';
	q[CATALOG_QUERY_MAX_BYTES + 1] = '\0';
	expect_refused(f, q, "limit of 1024 bytes");

	struct buf b = BUF_INIT;
	buf_adds(&b, "fox");
	for (int i = 1; i < CATALOG_QUERY_MAX_WORDS; i++)
		buf_printf(&b, " w%d", i);
	expect(f, b.p, ""); /* 16 words: searched (no document has them all) */
	buf_adds(&b, " one-more");
	expect_refused(f, b.p, "limit of 16 words");

	/* A phrase counts its words. */
	buf_reset(&b);
	buf_adds(&b, "\"brown fox");
	for (int i = 2; i < CATALOG_QUERY_MAX_WORDS; i++)
		buf_printf(&b, " p%d", i);
	buf_adds(&b, "\"");
	expect(f, b.p, "");
	buf_reset(&b);
	buf_adds(&b, "\"brown fox");
	for (int i = 2; i <= CATALOG_QUERY_MAX_WORDS; i++)
		buf_printf(&b, " p%d", i);
	buf_adds(&b, "\"");
	expect_refused(f, b.p, "limit of 16 words");

	/* Text without spaces counts each character (the tokenizer expands
	 * it into character pairs). */
	make_synced(f, "c1", B("[" USER("t", "\\u6570\\u636e\\u5e93") "]"));
	buf_reset(&b);
	buf_adds(&b, "\xE6\x95\xB0\xE6\x8D\xAE"); /* 数据 */
	for (int i = 2; i < CATALOG_QUERY_MAX_WORDS; i++)
		buf_adds(&b, "\xE5\xBA\x93"); /* 库 */
	expect(f, b.p, "");
	expect(f, "\xE6\x95\xB0\xE6\x8D\xAE\xE5\xBA\x93", "c1/t/user");
	buf_adds(&b, "\xE5\xBA\x93");
	expect_refused(f, b.p, "limit of 16 words");
	buf_release(&b);
}

static void test_fts_syntax_in_a_query_is_plain_text(void **state)
{
	struct fx *f = *state;
	words_fixture(f);
	make_synced(f, "c1", B("[" USER("t", "\\u6211\\u4eec\\u4eca\\u5929\\u8ba8\\u8bba\\u6570\\u636e\\u5e93") "]"));
	static const char *const q[] = {
		"AND", "OR", "NOT", "fox AND", "AND fox", "fox OR bear", "NOT fox", "fox NOT bear",
		"*", "**", "fox*", "*fox", "^fox", "^", ":", "body:fox", "col:", "fox:", "(", ")",
		"(fox)", "((fox", "fox))", "NEAR(", "NEAR(fox bear)", "NEAR(fox, 2)", "\"fox", "fox\"",
		"\"fox\" \"", "\"a\"\"b\"", "fo\"x", "\\", "\\\"", "fox\\", "%", "_", "%%",
		"%fox%", "f_x", "a_b", "'", "';DROP TABLE docs;--", "fox -bear", "+fox", "-", "{fox}",
		"[fox]", "fox,", "fox.", "#", "@", "$1", "?", "?1", "NULL", "fox\t\tbear\n",
		"\xE6\x95\xB0\xE6\x8D\xAE\xE5\xBA\x93*", "\"\xE6\x95\xB0\xE6\x8D\xAE", "%\xE6\x95\xB0%",
		"\xE6\x95\xB0_", "\xE6\x95\xB0\\", "\xE6\x95\xB0\xE6\x8D\xAE\xE5\xBA\x93 AND OR",
		"\xFF\xFE", "fox \xC3", ("\xE2\x80\xAE" "fox"), "NEAR", "fox NEAR bear", "{", "}",
	};
	for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
		struct hits r = search(f, q[i], 0, false); /* fails the test on any error */
		cat_hits_free(r.h, r.n);
	}
	/* Quotes and words up to the byte cap (their repeats dropped). */
	char big[CATALOG_QUERY_MAX_BYTES + 1];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	for (size_t i = 0; i < sizeof big - 1; i += 7)
		big[i] = i % 3 ? ' ' : '"';
	struct hits r = search(f, big, 0, false);
	cat_hits_free(r.h, r.n);
	/* Syntax is text: these find what the words in them say. */
	expect(f, "fox*", "s1/t1/user");
	expect(f, "(fox)", "s1/t1/user");
	expect(f, "^fox", "s1/t1/user");
	expect(f, "\"fox", "s1/t1/user");
	expect(f, "fox\"", "s1/t1/user");
	expect(f, "fox OR lazy", "");   /* OR is a word to find, not an operator */
	expect(f, "fox NOT jumps", "");
	expect(f, "bear AND rabbit", "s2/t1/user");
	expect(f, "(brown bear)", "s2/t1/user");
	expect(f, "NEAR(brown bear)", ""); /* the phrase "near brown" */
	/* Punctuation next to CJK text is not searched, as with "(fox)":
	 * no wildcard ever widens a term. */
	expect(f, "\xE6\x8D\xAE\xE5\xBA\x93", "c1/t/user");  /* 据库 */
	expect(f, "_\xE5\xBA\x93", "c1/t/user");              /* _库 */
	expect(f, "%\xE5\xBA\x93", "c1/t/user");              /* %库 */
	expect(f, "\xE5\xBA\x93_", "c1/t/user");              /* 库_ */
	/* Nothing was damaged. */
	bool ok = false;
	char *msg = NULL;
	struct cerr err;
	assert_int_equal(catalog_integrity(f->cat, &ok, &msg, &err), 0);
	assert_true(ok);
	free(msg);
	expect(f, "quick", "s1/t1/user s2/t1/user"); /* the shorter text first */
}

#define DB "\xE6\x95\xB0\xE6\x8D\xAE\xE5\xBA\x93"  /* 数据库 */
#define IDX "\xE7\xB4\xA2\xE5\xBC\x95"             /* 索引 */
#define TOKYO "\xE6\x9D\xB1\xE4\xBA\xAC"           /* 東京 */
#define TOWER "\xE3\x82\xBF\xE3\x83\xAF\xE3\x83\xBC" /* タワー */

static void test_cjk_text_is_found_by_any_run_of_characters(void **state)
{
	struct fx *f = *state;
	/* 我们今天讨论数据库的索引设计 / 東京タワーに行きました / 데이터베이스를
	 * 설계했다 / 使用SQLite的FTS5 */
	make_synced(f, "zh", B("[" USER("t1", "\xE6\x88\x91\xE4\xBB\xAC\xE4\xBB\x8A\xE5\xA4\xA9\xE8\xAE\xA8\xE8\xAE\xBA"
					   "\xE6\x95\xB0\xE6\x8D\xAE\xE5\xBA\x93\xE7\x9A\x84\xE7\xB4\xA2\xE5\xBC\x95"
					   "\xE8\xAE\xBE\xE8\xAE\xA1") "]"));
	make_synced(f, "ja", B("[" ASSIST("t1", "\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x82\xBF\xE3\x83\xAF\xE3\x83\xBC"
					   "\xE3\x81\xAB\xE8\xA1\x8C\xE3\x81\x8D\xE3\x81\xBE\xE3\x81\x97\xE3\x81\x9F") "]"));
	make_synced(f, "ko", B("[" USER("t1", "\xEB\x8D\xB0\xEC\x9D\xB4\xED\x84\xB0\xEB\xB2\xA0\xEC\x9D\xB4\xEC\x8A\xA4"
					   "\xEB\xA5\xBC \xEC\x84\xA4\xEA\xB3\x84\xED\x96\x88\xEB\x8B\xA4") "]"));
	make_synced(f, "mix", B("[" USER("t2", "\xE4\xBD\xBF\xE7\x94\xA8SQLite\xE7\x9A\x84" "FTS5") "]"));
	expect(f, DB, "zh/t1/user");
	expect(f, IDX, "zh/t1/user");                  /* two characters */
	expect(f, DB " " IDX, "zh/t1/user");
	expect(f, "\xE8\xAE\xA8\xE8\xAE\xBA" DB "\xE7\x9A\x84" IDX, "zh/t1/user"); /* 讨论数据库的索引 */
	expect(f, "\"" DB "\xE7\x9A\x84" IDX "\"", "zh/t1/user");
	expect(f, "\xE5\xBA\x93\xE7\x9A\x84\xE7\xB4\xA2", "zh/t1/user"); /* 库的索: mid-word */
	expect(f, IDX DB, "");                          /* 索引数据库: not in the text */
	expect(f, "\xE6\x95\xB0", "zh/t1/user");       /* 数: one character */
	expect(f, TOWER, "ja/t1/assistant");
	expect(f, TOKYO, "ja/t1/assistant");
	expect(f, TOWER " " TOKYO, "ja/t1/assistant");
	expect(f, TOKYO " " DB, "");
	expect(f, "\xE3\x81\xAB\xE8\xA1\x8C", "ja/t1/assistant"); /* に行 */
	expect(f, "\xEB\x8D\xB0\xEC\x9D\xB4\xED\x84\xB0", "ko/t1/user"); /* 데이터 */
	expect(f, "\xEC\x84\xA4\xEA\xB3\x84", "ko/t1/user");             /* 설계 */
	expect(f, "\xE4\xBD\xBF\xE7\x94\xA8 sqlite", "mix/t2/user");     /* 使用 + a word */
	expect(f, "SQLite\xE7\x9A\x84", "mix/t2/user");
	/* A word inside text without spaces is a word of its own. */
	expect(f, "sqlite", "mix/t2/user");
	expect(f, "fts5", "mix/t2/user");
	expect(f, "\xE7\x94\xA8SQLite", "mix/t2/user");                 /* 用SQLite */
	expect(f, "\xE4\xBD\xBFSQLite", "");                             /* 使SQLite: not adjacent */
	expect_snippet(f, DB, "[" DB "]");
	expect_snippet(f, IDX, "[" IDX "]");
	expect_snippet(f, TOKYO, "[" TOKYO "]");
	expect_snippet(f, TOWER, "[" TOWER "]");
}

/* Input methods put U+3000 IDEOGRAPHIC SPACE between words: it separates
 * terms like a space does. */
static void test_ideographic_space_separates_terms(void **state)
{
	struct fx *f = *state;
	make_synced(f, "ja", B("[" ASSIST("t1", TOKYO TOWER "\xE3\x81\xAB\xE8\xA1\x8C\xE3\x81\x8D\xE3\x81\xBE\xE3\x81\x97\xE3\x81\x9F") "]"));
	expect(f, TOKYO " " TOWER, "ja/t1/assistant");
	expect(f, TOWER "\xE3\x80\x80" TOKYO, "ja/t1/assistant");
	expect(f, "\xE3\x80\x80" TOKYO "\xE3\x80\x80", "ja/t1/assistant");
}

/* An open turn's text stays out of the word index until the turn ends,
 * and a search finds it all the same: ranked on the word index's scale
 * (the order is the one it has once the turn ended), with a snippet, in
 * phrases, not in the trash unless asked. */
static void test_open_turn_is_found_before_it_is_indexed(void **state)
{
	struct fx *f = *state;
	/* Sessions without the word, so that it is rare enough to count. */
	for (int i = 0; i < 6; i++) {
		char id[8];
		snprintf(id, sizeof id, "pad%d", i);
		make_synced(f, id, B("[" START("t1") "," USER("t1", "nothing to see in this one") ","
				     END("t1", "completed") "]"));
	}
	make_synced(f, "done", B("[" START("t1") "," USER("t1", "orchid garden plan") ","
				 ASSIST("t1", "Plant the orchid near a window and water it weekly, less in"
						" winter, more in summer") ","
				 END("t1", "completed") "]"));
	make_synced(f, "live", B("[" START("t1") "," USER("t1", "orchid orchid orchid") "]"));
	raw_expect(f->root, "SELECT group_concat(session || '/' || role) FROM docs WHERE NOT indexed",
		   "live/user");
	raw_expect(f->root, "SELECT count(*) FROM fts_words_docsize", "8");
	expect(f, "orchid", "live/t1/user done/t1/user done/t1/assistant");
	expect(f, "\"orchid orchid\"", "live/t1/user");
	expect(f, "orchid garden", "done/t1/user");
	expect_snippet(f, "orchid", "[orchid]");
	/* A streamed answer grows the open document, still outside the index. */
	append_sync(f, "live", "[" ASSIST("t1", "An orchid likes bright light but no direct sun, a") "]");
	append_sync(f, "live", "[" ASSIST("t1", " humid room, a pot that drains well, bark rather than"
						" soil, and rain water when you have it") "]");
	raw_expect(f->root, "SELECT count(*) FROM docs WHERE NOT indexed", "2");
	raw_expect(f->root, "SELECT count(*) FROM fts_words_docsize", "8");
	static const char order[] = "live/t1/user done/t1/user done/t1/assistant live/t1/assistant";
	expect(f, "orchid", order);
	expect(f, "\"rather than soil\"", "live/t1/assistant");
	expect(f, "orchid window", "done/t1/assistant");
	expect(f, "rain", "live/t1/assistant");
	/* The open documents count among the messages searched. */
	struct cat_search_info info;
	struct cat_hit *ih;
	size_t in;
	struct cerr ierr;
	assert_int_equal(catalog_search(f->cat, "orchid", 0, false, &ih, &in, &info, &ierr), 0);
	cat_hits_free(ih, in);
	assert_false(info.partial);
	assert_int_equal(info.messages, 10);
	assert_int_equal(info.searched, 10);
	struct hits r = search(f, "orchid", 2, false); /* the limit spans both */
	assert_int_equal(r.n, 2);
	assert_string_equal(r.h[0].session, "live");
	assert_string_equal(r.h[1].session, "done");
	cat_hits_free(r.h, r.n);
	/* The turn ends: its text moves into the word index, once, and the
	 * hits keep their order. */
	append_sync(f, "live", "[" END("t1", "completed") "]");
	raw_expect(f->root, "SELECT count(*) FROM docs WHERE NOT indexed", "0");
	raw_expect(f->root, "SELECT count(*) FROM fts_words_docsize", "10");
	expect(f, "orchid", order);
	expect(f, "\"rather than soil\"", "live/t1/assistant");
	/* A new open turn in the trash is found only with it. */
	append_sync(f, "live", "[" START("t2") "," USER("t2", "repot the orchid") "]");
	expect(f, "repot", "live/t2/user");
	struct session_ref ref = {"live", "-p"};
	struct cerr err;
	assert_int_equal(store_trash(f->st, &ref, NULL, &err), 0);
	assert_int_equal(catalog_sync(f->cat, f->st, NULL, &err), 0);
	expect(f, "repot", "");
	r = search(f, "repot", 0, true);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.h[0].turn, "t2");
	cat_hits_free(r.h, r.n);
}

static void test_every_role_is_found_across_chunks_with_snippet(void **state)
{
	struct fx *f = *state;
	make_synced(f, "r", B("[{'type':'turn/start','turn':'t1'}," USER("t1", "please list the files") ","
			      ASSIST("t1", "Running ls now. The repository con") "]",
			      "[" ASSIST("t1", "tains two source fi") "," ASSIST("t1", "les and a Makefile.") ","
			      "{'type':'tool/call','turn':'t1','data':{'call_id':'k1','name':'sh','args':{'cmd':'ls'}}}]",
			      "[{'type':'tool/result','turn':'t1','data':{'call_id':'k1','status':'ok',"
			      "  'output':'README.md\\nMakefile\\nzebra_notes.txt'}},"
			      " {'type':'tool/call','turn':'t1','data':{'call_id':'k2','name':'stat','args':{}}},"
			      " {'type':'tool/result','turn':'t1','data':{'call_id':'k2','status':'ok',"
			      "  'output':{'files':['alpha.c','omega.h'],'count':2}}},"
			      " {'type':'turn/end','turn':'t1','data':{'outcome':'completed'}}]",
			      "[{'type':'turn/start','turn':'t2'}," USER("t2", "and the hidden files?") "]"));
	expect(f, "\"repository contains two source files\"", "r/t1/assistant"); /* across chunks */
	expect(f, "contains", "r/t1/assistant");
	expect(f, "zebra_notes", "r/t1/tool");    /* tool output string */
	expect(f, "omega", "r/t1/tool");          /* tool output JSON */
	expect(f, "\"alpha c\"", "r/t1/tool");
	expect(f, "hidden", "r/t2/user");
	expect_snippet(f, "omega", "[omega]");
	expect_snippet(f, "zebra_notes", "[zebra_notes]");
	/* "files" is in every role's text of t1 and in t2's prompt. */
	struct hits r = search(f, "files", 0, false);
	assert_int_equal(r.n, 4);
	int roles = 0;
	for (size_t i = 0; i < r.n; i++) {
		assert_string_equal(r.h[i].session, "r");
		assert_string_equal(r.h[i].title, "please list the files");
		roles |= strcmp(r.h[i].turn, "t2") == 0 ? 8 :
			 strcmp(r.h[i].role, "user") == 0 ? 1 : strcmp(r.h[i].role, "assistant") == 0 ? 2 :
			 strcmp(r.h[i].role, "tool") == 0 ? 4 : 16;
	}
	assert_int_equal(roles, 15);
	cat_hits_free(r.h, r.n);
	/* A long text: the snippet is cut around the match. */
	struct buf b = BUF_INIT;
	buf_adds(&b, "[{'type':'user/message','turn':'t3','data':{'text':'");
	for (int i = 0; i < 200; i++)
		buf_adds(&b, i == 150 ? "needle " : "filler ");
	buf_adds(&b, "'}}]");
	make_synced(f, "long", B(b.p));
	buf_release(&b);
	r = search(f, "needle", 0, false);
	assert_int_equal(r.n, 1);
	assert_non_null(strstr(r.h[0].snippet, "[needle]"));
	assert_true(strlen(r.h[0].snippet) < 200);
	cat_hits_free(r.h, r.n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, catfx_teardown)
		T(test_open_turn_is_found_before_it_is_indexed),
		T(test_every_word_is_required_and_phrases_keep_order),
		T(test_more_hits_rank_first_then_the_newest),
		T(test_search_returns_at_most_the_limit_asked),
		T(test_trashed_sessions_are_found_only_when_asked),
		T(test_blank_query_is_a_usage_error),
		T(test_fts_syntax_in_a_query_is_plain_text),
		T(test_repeated_terms_count_once),
		T(test_query_over_its_byte_or_word_cap_is_a_usage_error),
		T(test_cjk_text_is_found_by_any_run_of_characters),
		T(test_ideographic_space_separates_terms),
		T(test_every_role_is_found_across_chunks_with_snippet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
