/* test_catalog_segments.c — the catalog's search documents cost what a
 * batch holds, not what the session holds (persist/catalog_docs.c): a
 * one-event append touches as many SQLite pages on a session of 8 MB as
 * on a small one (an open turn's growing answer, text outside any turn,
 * ended turns), counted with catalog_work, not timed; and a long answer
 * streamed in many batches is found by its words and by phrases across
 * batch and segment boundaries, one hit per turn, while its turn is open
 * and once it ended, and its documents equal what a rebuild from the log
 * makes. The fixture is support_catalog.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "base/buf.h"
#include "persist/catalog.h"
#include "persist/log.h"
#include "persist/store.h"
#include "tests/unit/support_catalog.h"

static int setup(void **state)
{
	return catfx_setup(state, "cairn-test-catalog-seg");
}

/* Words that are all different: w followed by a number, from `from`,
 * until b holds at least n more bytes. Returns the next number. */
static unsigned words(struct buf *b, unsigned from, size_t n)
{
	size_t end = b->len + n;
	while (b->len < end)
		buf_printf(&b[0], "w%u ", from++);
	return from;
}

/* Append json to session id's log and project it as the write path does
 * (catalog_project_batch with the new watermark). */
static void append_projected(struct fx *f, const char *id, const char *json)
{
	struct log *lg;
	struct batch b;
	struct cerr err;
	uint64_t next, ver = 0;
	if (log_open(f->st, id, &lg, &err) < 0)
		fail_msg("log_open %s: %s", id, err.msg);
	uint64_t first = log_next_seq(lg);
	batch_parse(&b, json);
	if (log_append(lg, first, b.evs, b.n, &next, &err) < 0)
		fail_msg("append: %s", err.msg);
	struct cat_watermark wm = wm_of(log_durable(lg));
	if (catalog_project_batch(cat(f), id, first, 0, b.evs, b.n, &wm, &ver, &err) < 0)
		fail_msg("project batch at %llu: %s", (unsigned long long)first, err.msg);
	assert_int_equal(ver, next);
	batch_free(&b);
	log_close(lg);
}

/* Pages one projected append of json touches (looked up plus written). */
static uint64_t cost(struct fx *f, const char *id, const char *json)
{
	catalog_work(cat(f));
	append_projected(f, id, json);
	struct cat_work w = catalog_work(cat(f));
	return w.pages_looked_up + w.pages_written;
}

/* Writes into e the batch number i of a shape, holding text. */
typedef void batch_fn(struct buf *e, unsigned i, const char *text);

static void open_turn_batch(struct buf *e, unsigned i, const char *text)
{
	buf_printf(e, "[{'type':'assistant/text','turn':'t1','data':{'text':'%u %s'}}]", i, text);
}

static void no_turn_batch(struct buf *e, unsigned i, const char *text)
{
	buf_printf(e, "[{'type':'user/message','data':{'text':'%u %s'}}]", i, text);
}

static void ended_turn_batch(struct buf *e, unsigned i, const char *text)
{
	buf_printf(e, "[{'type':'turn/start','turn':'t%u'},"
		      " {'type':'assistant/text','turn':'t%u','data':{'text':'%s'}},"
		      " {'type':'turn/end','turn':'t%u','data':{'outcome':'completed'}}]", i, i, text, i);
}

/* Session id made of the batch `first`, then `batches` batches of the
 * shape fn with `bytes` bytes of words each, written to its log. */
static void make_big(struct fx *f, const char *id, const char *first, batch_fn *fn,
		     size_t batches, size_t bytes)
{
	char **v = calloc(batches + 2, sizeof *v);
	unsigned w = 0;
	v[0] = strdup(first);
	for (size_t i = 0; i < batches; i++) {
		struct buf t = BUF_INIT, e = BUF_INIT;
		w = words(&t, w, bytes);
		fn(&e, (unsigned)i, t.p);
		v[i + 1] = buf_detach(&e, NULL);
		buf_release(&t);
	}
	make(f, id, "/p", NULL, (const char *const *)v);
	for (size_t i = 0; i <= batches; i++)
		free(v[i]);
	free(v);
}

/* One shape of session at two sizes: a one-event append to the 8 MB one
 * touches at most 1.5 times the pages of one to the small one. */
static void same_cost(struct fx *f, const char *what, const char *first, batch_fn *fn,
		      size_t per_batch, const char *event)
{
	char small[16], big[16];
	snprintf(small, sizeof small, "s%sS", what);
	snprintf(big, sizeof big, "s%sB", what);
	make_big(f, small, first, fn, 2, 200);
	make_big(f, big, first, fn, (8u << 20) / per_batch, per_batch);
	sync_ok(f);
	/* Once untimed each (the statements prepared, the row's pages
	 * cached alike), then counted. */
	cost(f, small, event), cost(f, big, event);
	uint64_t s = cost(f, small, event), b = cost(f, big, event);
	print_message("%s: one-event append touches %llu pages on a small session, %llu on 8 MB"
		      " (%.2f x)\n", what, (unsigned long long)s, (unsigned long long)b,
		      (double)b / (double)s);
	if ((double)b > 1.5 * (double)s)
		fail_msg("%s: %llu pages on 8 MB against %llu on a small session", what,
			 (unsigned long long)b, (unsigned long long)s);
}

static void test_append_to_an_open_turn_costs_what_the_batch_holds(void **state)
{
	same_cost(*state, "O", "[" START("t1") "," USER("go") "]",
		  open_turn_batch, 16384,
		  "[{'type':'assistant/text','turn':'t1','data':{'text':'one more piece'}}]");
}

static void test_append_outside_any_turn_costs_what_the_batch_holds(void **state)
{
	same_cost(*state, "N", "[" USER("go") "]",
		  no_turn_batch, 60000,
		  "[" USER("one more message") "]");
}

static void test_append_after_ended_turns_costs_what_the_batch_holds(void **state)
{
	same_cost(*state, "E", "[" USER("go") "]",
		  ended_turn_batch, 16384,
		  "[{'type':'turn/start','turn':'tx'}," "{'type':'user/message','turn':'tx',"
		  "'data':{'text':'a new turn'}}]");
}

/* The hits of query: "session/turn/role" each, space separated. */
static char *hits_of(struct fx *f, const char *query)
{
	struct cat_hit *h;
	size_t n;
	struct cerr err;
	if (catalog_search(cat(f), query, 50, false, &h, &n, NULL, &err) < 0)
		fail_msg("search %s: %s", query, err.msg);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s%s/%s/%s", i ? " " : "", h[i].session, h[i].turn, h[i].role);
	cat_hits_free(h, n);
	return b.p ? buf_detach(&b, NULL) : strdup("");
}

static void expect_hits(struct fx *f, const char *query, const char *want)
{
	char *got = hits_of(f, query);
	if (strcmp(got, want) != 0)
		fail_msg("search %s: got '%s', want '%s'", query, got, want);
	free(got);
}

/* Every phrase of two words across each boundary between the stored
 * segments of the answer (the last word of one and the word after it)
 * finds the turn once. */
static void phrases_across_segments(struct fx *f, size_t *segments)
{
	sqlite3 *db = raw_open(f->root);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT body FROM docs WHERE session = 'sL'"
					    " AND role = 'assistant' ORDER BY part", -1, &q, NULL),
			 SQLITE_OK);
	*segments = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *body = (const char *)sqlite3_column_text(q, 0);
		size_t n = strlen(body);
		(*segments)++;
		while (n && body[n - 1] == ' ')
			n--;
		const char *last = body + n;
		while (last > body && last[-1] != ' ')
			last--;
		unsigned k;
		if (sscanf(last, "w%u", &k) != 1)
			continue; /* the end of the answer */
		char phrase[64];
		snprintf(phrase, sizeof phrase, "\"w%u w%u\"", k, k + 1);
		expect_hits(f, phrase, "sL/t1/assistant");
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
}

/* The documents, as text: every column but docid, in key order. */
static char *dump_docs(const char *root)
{
	sqlite3 *db = raw_open(root);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT session, turn, role, part, indexed, body"
					    " FROM docs ORDER BY session, turn, role, part", -1, &q,
					    NULL), SQLITE_OK);
	struct buf b = BUF_INIT;
	while (sqlite3_step(q) == SQLITE_ROW)
		buf_printf(&b, "%s|%s|%s|%d|%d|%s\n", sqlite3_column_text(q, 0),
			   sqlite3_column_text(q, 1), sqlite3_column_text(q, 2),
			   sqlite3_column_int(q, 3), sqlite3_column_int(q, 4), sqlite3_column_text(q, 5));
	sqlite3_finalize(q);
	sqlite3_close(db);
	return buf_detach(&b, NULL);
}

static void test_long_answer_in_many_batches_is_found_and_equals_a_rebuild(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	make(f, "sL", "/p", NULL, B("[" START("t1") ",{'type':'user/message','turn':'t1',"
				    "'data':{'text':'write a long answer'}}]"));
	assert_int_equal(sync_ok(f), 1);
	/* 300 batches of 500 to 2000 bytes, each cut inside a word. */
	struct buf all = BUF_INIT;
	words(&all, 0, 400000);
	size_t at = 0, cuts[300];
	srand(7);
	for (size_t i = 0; i < 300 && at < all.len; i++) {
		size_t n = 500 + (size_t)rand() % 1500;
		if (n > all.len - at)
			n = all.len - at;
		struct buf e = BUF_INIT;
		buf_printf(&e, "[{'type':'assistant/text','turn':'t1','data':{'text':'%.*s'}}]", (int)n,
			   all.p + at);
		append_projected(f, "sL", e.p);
		buf_release(&e);
		at += n;
		cuts[i] = at;
	}
	/* Open: the words, a phrase across a batch cut (inside a word
	 * there), and across each segment. */
	expect_hits(f, "w17", "sL/t1/assistant");
	for (size_t i = 10; i < 300 && cuts[i] < at; i += 29) {
		const char *p = all.p + cuts[i];
		while (p > all.p && p[-1] != ' ')
			p--; /* the word the cut is in or after */
		unsigned k;
		assert_int_equal(sscanf(p, "w%u", &k), 1);
		char phrase[64];
		snprintf(phrase, sizeof phrase, "\"w%u w%u\"", k, k + 1);
		expect_hits(f, phrase, "sL/t1/assistant");
	}
	size_t segs;
	phrases_across_segments(f, &segs);
	assert_true(segs > 4);
	append_projected(f, "sL", "[" END("t1", "completed") "]");
	/* Ended: the same in the word index, one hit for the turn. */
	expect_hits(f, "w17", "sL/t1/assistant");
	expect_hits(f, "write long", "sL/t1/user");
	phrases_across_segments(f, &segs);
	raw_expect(f->root, "SELECT count(*) FROM docs WHERE NOT indexed", "0");
	/* Each stored segment is bounded, whatever the batches were. */
	raw_expect(f->root, "SELECT max(length(CAST(body AS BLOB))) <= 65536 FROM docs", "1");
	/* The rebuild from the log makes the same documents. */
	char *inc = dump_docs(f->root);
	assert_int_equal(catalog_clear(cat(f), &err), 0);
	assert_int_equal(sync_ok(f), 1);
	char *re = dump_docs(f->root);
	assert_string_equal(inc, re);
	expect_hits(f, "w17", "sL/t1/assistant");
	bool ok = false;
	char *msg = NULL;
	assert_int_equal(catalog_integrity(cat(f), &ok, &msg, &err), 0);
	if (!ok)
		fail_msg("integrity: %s", msg);
	free(msg);
	free(inc);
	free(re);
	buf_release(&all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, catfx_teardown)
		T(test_append_to_an_open_turn_costs_what_the_batch_holds),
		T(test_append_outside_any_turn_costs_what_the_batch_holds),
		T(test_append_after_ended_turns_costs_what_the_batch_holds),
		T(test_long_answer_in_many_batches_is_found_and_equals_a_rebuild),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
