/* test_catalog_budget.c — search on indexes of more than CAT_RANK_SAMPLE
 * (5000) rows, where relevance statistics are sampled and the work budget
 * can end a search: the order matches FTS5's own bm25() where the sample
 * is representative, open turns' hits sit on the same scale, an averages
 * record that does not parse is counted around (same order), and a search
 * that spends its budget says how far it got, the same way every time. */
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
#include "persist/catalog_int.h" /* the connection, to read bm25() and damage a record */
#include "persist/store.h"
#include "tests/unit/support_catalog.h"

static int setup(void **state)
{
	if (catfx_setup(state, "cairn-test-budget") < 0)
		return -1;
	cat(*state);
	return 0;
}

/* One session `id` of n ended turns t0..t<n-1>, turn i's user text made
 * by text(i), then synced: n documents of the word index, oldest first. */
static void corpus(struct fx *f, const char *id, size_t n, void (*text)(struct buf *, size_t))
{
	enum { PER_BATCH = 500 };
	size_t nb = (n + PER_BATCH - 1) / PER_BATCH;
	char **batches = calloc(nb + 1, sizeof *batches);
	struct buf t = BUF_INIT;
	for (size_t b = 0; b < nb; b++) {
		struct buf j = BUF_INIT;
		buf_adds(&j, "[");
		for (size_t i = b * PER_BATCH; i < n && i < (b + 1) * PER_BATCH; i++) {
			buf_reset(&t);
			text(&t, i);
			buf_printf(&j, "%s{'type':'turn/start','turn':'t%zu'},"
				       "{'type':'user/message','turn':'t%zu','data':{'text':'%s'}},"
				       "{'type':'turn/end','turn':'t%zu','data':{'outcome':'completed'}}",
				   i % PER_BATCH ? "," : "", i, i, t.p, i);
		}
		buf_adds(&j, "]");
		batches[b] = buf_detach(&j, NULL);
	}
	buf_release(&t);
	make(f, id, "/p", NULL, (const char *const *)batches);
	sync_ok(f);
	for (size_t b = 0; b < nb; b++)
		free(batches[b]);
	free(batches);
}

struct result {
	struct cat_hit *h;
	size_t n;
	struct cat_search_info info;
};

static struct result run(struct fx *f, const char *q, size_t limit)
{
	struct result r = {0};
	struct cerr err;
	if (catalog_search(f->cat, q, limit, false, &r.h, &r.n, &r.info, &err) < 0)
		fail_msg("search '%s': %s", q, err.msg);
	return r;
}

/* The hits as "session/turn ..." */
static char *turns_of(const struct result *r)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "");
	for (size_t i = 0; i < r->n; i++)
		buf_printf(&b, "%s%s/%s", i ? " " : "", r->h[i].session, r->h[i].turn);
	return buf_detach(&b, NULL);
}

/* ---- ranking with sampled statistics ---- */

#define RANK_DOCS 12000 /* over CAT_RANK_SAMPLE: the statistics are sampled */
#define RANK_LEN 20     /* every document's tokens: lengths do not order anything */

/* "apple" in one document of 10 (1-3 times), "berry" in one of 3 (1-2
 * times), padded to RANK_LEN tokens: the same mix everywhere, so the
 * newest 5000 rows are a faithful sample; six levels of relevance. */
static void rank_text(struct buf *b, size_t i)
{
	int a = i % 10 == 0 ? 1 + (int)(i / 10 % 3) : 0, be = i % 3 == 0 ? 1 + (int)(i / 3 % 2) : 0;
	for (int k = 0; k < RANK_LEN; k++)
		buf_adds(b, k ? " " : ""), buf_adds(b, k < a ? "apple" : k < a + be ? "berry" : "pad");
}

/* FTS5's own order: bm25() counted over the whole index, then newest. */
static char *bm25_order(struct fx *f, const char *match)
{
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(f->cat->db,
					    "SELECT d.session, d.turn FROM fts_words"
					    " JOIN docs d ON d.docid = fts_words.rowid"
					    " WHERE fts_words MATCH ?1 ORDER BY bm25(fts_words), d.docid DESC",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
	struct buf b = BUF_INIT;
	buf_adds(&b, "");
	int n = 0;
	while (sqlite3_step(st) == SQLITE_ROW)
		buf_printf(&b, "%s%s/%s", n++ ? " " : "", sqlite3_column_text(st, 0),
			   sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	return buf_detach(&b, NULL);
}

static void expect_bm25_order(struct fx *f)
{
	struct result r = run(f, "apple berry", 2000);
	assert_int_equal(r.n, RANK_DOCS / 30);
	assert_false(r.info.partial);
	char *got = turns_of(&r), *want = bm25_order(f, "\"apple\" AND \"berry\"");
	if (strcmp(got, want) != 0)
		fail_msg("sampled ranking differs from bm25():\n got  %.300s\n want %.300s", got, want);
	free(got), free(want);
	cat_hits_free(r.h, r.n);
}

/* On an index of more than 5000 rows the rows holding each word are
 * counted among the newest 5000 and scaled; where those are
 * representative, hits come in bm25()'s order. */
static void test_sampled_ranking_is_bm25(void **state)
{
	struct fx *f = *state;
	corpus(f, "big", RANK_DOCS, rank_text);
	expect_bm25_order(f);
}

static void open_text(struct buf *b, int a, int be)
{
	for (int k = 0; k < RANK_LEN; k++)
		buf_adds(b, k ? " " : ""), buf_adds(b, k < a ? "apple" : k < a + be ? "berry" : "pad");
}

/* An open turn's text is ranked with the word index's sampled statistics:
 * one as relevant as the best indexed documents ranks with them (first:
 * it is the newest), one as weak as the weakest ranks first among those,
 * after every stronger indexed hit. */
static void test_open_turn_text_ranks_with_the_indexed_statistics(void **state)
{
	struct fx *f = *state;
	corpus(f, "big", RANK_DOCS, rank_text);
	struct buf strong = BUF_INIT, weak = BUF_INIT, j = BUF_INIT;
	open_text(&strong, 3, 2);
	open_text(&weak, 1, 1);
	buf_printf(&j, "[{'type':'turn/start','turn':'s'},"
		       "{'type':'user/message','turn':'s','data':{'text':'%s'}}]", strong.p);
	make(f, "open1", "/p", NULL, (const char *const[]){j.p, NULL});
	buf_reset(&j);
	buf_printf(&j, "[{'type':'turn/start','turn':'w'},"
		       "{'type':'user/message','turn':'w','data':{'text':'%s'}}]", weak.p);
	make(f, "open2", "/p", NULL, (const char *const[]){j.p, NULL});
	sync_ok(f);
	struct result r = run(f, "apple berry", 2000);
	assert_int_equal(r.n, RANK_DOCS / 30 + 2);
	assert_string_equal(r.h[0].session, "open1");
	/* the indexed documents weaker than every other: apple once, berry once */
	size_t stronger = 0;
	for (size_t i = 0; i < RANK_DOCS; i += 30)
		stronger += !(i / 10 % 3 == 0 && i / 3 % 2 == 0);
	assert_string_equal(r.h[1 + stronger].session, "open2");
	for (size_t i = 0; i < r.n; i++)
		if (i != 0 && i != 1 + stronger)
			assert_string_equal(r.h[i].session, "big");
	cat_hits_free(r.h, r.n);
	buf_release(&strong), buf_release(&weak), buf_release(&j);
}

/* The averages record (rows and tokens) is FTS5's on-disk format: one
 * that does not read as two varints, or holds more rows than the rowids
 * can, is counted around, and the order stays bm25()'s. */
static void test_unreadable_averages_counted(void **state)
{
	struct fx *f = *state;
	corpus(f, "big", RANK_DOCS, rank_text);
	const char *damage[] = {
		"UPDATE fts_words_data SET block = x'ffffffffffffffffff' WHERE id = 1",
		"UPDATE fts_words_data SET block = x'8080' WHERE id = 1",
		"UPDATE fts_words_data SET block = x'81ffff7f05' WHERE id = 1",
		"UPDATE fts_words_data SET block = 'text' WHERE id = 1",
		"DELETE FROM fts_words_data WHERE id = 1",
	};
	char *want = bm25_order(f, "\"apple\" AND \"berry\""); /* with the record intact */
	for (size_t i = 0; i < sizeof damage / sizeof *damage; i++) {
		assert_int_equal(sqlite3_exec(f->cat->db, damage[i], NULL, NULL, NULL), SQLITE_OK);
		struct result r = run(f, "apple berry", 2000);
		char *got = turns_of(&r);
		if (strcmp(got, want) != 0)
			fail_msg("after %s:\n got  %.300s\n want %.300s", damage[i], got, want);
		assert_int_equal(r.info.messages, RANK_DOCS);
		free(got);
		cat_hits_free(r.h, r.n);
	}
	free(want);
}

/* ---- the work budget ---- */

#define BUDGET_DOCS 21000
static const char *const words16[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
				      "golf", "hotel", "india", "juliet", "kilo", "lima",
				      "mike", "november", "oscar", "papa"};

/* Each of 16 words in 15 documents of 16 (document i lacks word i % 16),
 * so reading a row costs about 15 entries while all 16 are in none;
 * document 0 holds all 16 and "zanzibar", the last one all 16. */
static void budget_text(struct buf *b, size_t i)
{
	for (size_t k = 0; k < 16; k++)
		if (i == 0 || i == BUDGET_DOCS - 1 || k != i % 16)
			buf_printf(b, "%s%s", b->len ? " " : "", words16[k]);
	if (i == 0)
		buf_adds(b, " zanzibar");
}

/* A query whose rows cost much (16 words each in nearly every document,
 * all 16 in two) spends its budget before the oldest document: it returns
 * the newest match, marked partial with how many of the newest messages
 * it read, and does exactly that again. With a rare word it is cheap
 * enough to read everything, and then it finds the oldest. */
static void test_costly_query_stops_at_its_budget_marked_partial(void **state)
{
	struct fx *f = *state;
	corpus(f, "big", BUDGET_DOCS, budget_text);
	struct buf q = BUF_INIT;
	for (size_t k = 0; k < 16; k++)
		buf_printf(&q, "%s%s", k ? " " : "", words16[k]);
	struct result a = run(f, q.p, 0), b = run(f, q.p, 0);
	char *ta = turns_of(&a), *tb = turns_of(&b);
	assert_string_equal(ta, "big/t20999"); /* the newest; not t0 */
	assert_true(a.info.partial);
	assert_int_equal(a.info.messages, BUDGET_DOCS);
	/* about CATALOG_SEARCH_WORK / 15 of the newest messages */
	assert_true(a.info.searched > CATALOG_SEARCH_WORK / 16);
	assert_true(a.info.searched < CATALOG_SEARCH_WORK / 14);
	/* deterministic: a count of work, not a clock */
	assert_string_equal(ta, tb);
	assert_true(b.info.partial);
	assert_int_equal(a.info.searched, b.info.searched);
	free(ta), free(tb);
	cat_hits_free(a.h, a.n), cat_hits_free(b.h, b.n);

	buf_reset(&q); /* 15 of the words and the rare one */
	for (size_t k = 0; k < 15; k++)
		buf_printf(&q, "%s ", words16[k]);
	buf_adds(&q, "zanzibar");
	struct result c = run(f, q.p, 0);
	char *tc = turns_of(&c);
	assert_string_equal(tc, "big/t0");
	assert_false(c.info.partial);
	assert_int_equal(c.info.searched, BUDGET_DOCS);
	free(tc);
	cat_hits_free(c.h, c.n);

	/* a word the whole index holds, alone: cheap per row, no budget stop */
	struct result d = run(f, "alpha", 0);
	assert_int_equal(d.n, CATALOG_SEARCH_LIMIT);
	assert_false(d.info.partial);
	cat_hits_free(d.h, d.n);
	buf_release(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, catfx_teardown)
		T(test_sampled_ranking_is_bm25),
		T(test_open_turn_text_ranks_with_the_indexed_statistics),
		T(test_unreadable_averages_counted),
		T(test_costly_query_stops_at_its_budget_marked_partial),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
