/* catalog_rank.c — relevance: FTS5's bm25 (k1 = 1.2, b = 0.75) with
 * statistics computed once per query, for the word index and for the text
 * of open turns alike.
 *
 * bm25 weighs each phrase by how many rows hold it, and FTS5's own bm25()
 * counts them by running every phrase over the whole index: 25 ms for a
 * word in half of 700,000 documents, 126 ms for a phrase of two such
 * words, seconds for a query of many. cat_rank_stats counts them among
 * the newest CAT_RANK_SAMPLE rows only (a rowid range FTS5 seeks to) and
 * scales the count to the index; the row and token totals come from the
 * index's own record of them (or, when that does not parse, a count and
 * the sample). The same sample estimates what reading a row of the index
 * costs the query (the search's work budget). Both indexes are then
 * ranked with
 *
 *   cairn_rank(fts, S)   bm25 of the current row with the statistics S
 *                        ("rows tokens n1 n2 ..."), lower ranks first, as
 *                        a column: of the word index's matches as a span
 *                        is read, and of the small in-memory index of open
 *                        turns (see docs/catalog.md), so both kinds of hit
 *                        are on one scale.
 *
 * An index of at most CAT_RANK_SAMPLE rows is counted whole: the ranks are
 * then exactly bm25()'s. */
#include "persist/catalog_int.h"
#include "base/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANK_K1 1.2
#define RANK_B 0.75
#define RANK_MAX_PHRASES (CATALOG_QUERY_MAX_WORDS + 1)
#define CAT_RANK_SAMPLE 5000

/* An SQLite varint (FTS5 records use them) at p[*i..n) into *v; false
 * when the bytes end inside it. */
static bool get_varint(const unsigned char *p, int n, int *i, uint64_t *v)
{
	*v = 0;
	for (int k = 0; k < 9; k++) {
		if (*i >= n)
			return false;
		unsigned char c = p[(*i)++];
		if (k == 8) {
			*v = (*v << 8) | c;
			return true;
		}
		*v = (*v << 7) | (c & 0x7f);
		if (!(c & 0x80))
			return true;
	}
	return true;
}

/* The word index's row and token totals as FTS5 keeps them in its
 * averages record (id 1 of the %_data table: the row count, then the
 * tokens of each column, as varints; what its xRowCount reads). That is
 * FTS5's on-disk format, not an interface: a record that does not read as
 * exactly two varints, or whose row count the rowids cannot hold, leaves
 * *ok false and the caller counts instead. */
static int index_totals(struct catalog *c, int64_t span, int64_t *rows, int64_t *tokens, bool *ok,
			struct cerr *err)
{
	*rows = *tokens = 0;
	*ok = false;
	sqlite3_stmt *st = cat_prepare(c, "SELECT block FROM fts_words_data WHERE id = 1", err);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_BLOB) {
		const unsigned char *p = sqlite3_column_blob(st, 0);
		int n = sqlite3_column_bytes(st, 0), i = 0;
		uint64_t v[2];
		bool whole = p && get_varint(p, n, &i, &v[0]) && get_varint(p, n, &i, &v[1]);
		*ok = whole && i == n && v[0] >= 1 && v[0] <= (uint64_t)span && v[1] <= (uint64_t)INT64_MAX;
		if (*ok) {
			*rows = (int64_t)v[0];
			*tokens = (int64_t)v[1];
		}
	}
	cat_done(c, st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "search");
}

/* The first column of sql's first row; arg is bound to ?1 (ignored
 * without one). */
static int one_int(struct catalog *c, const char *sql, int64_t arg, int64_t *out, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, sql, err);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, arg);
	int rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	cat_done(c, st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "search");
}

/* Rows of the word index above rowid `above` holding the phrase lit. */
static int count_above(struct catalog *c, const char *lit, int64_t above, int64_t *n,
		       struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, "SELECT count(*) FROM fts_words"
					  " WHERE fts_words MATCH ?1 AND rowid > ?2", err);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, lit, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, above);
	int rc = sqlite3_step(st);
	*n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	cat_done(c, st);
	return rc == SQLITE_ROW ? 0 : cat_fail(c, err, rc, "search");
}

int cat_rank_stats(struct catalog *c, const struct cat_query *q, struct cat_rank_est *est,
		   struct cerr *err)
{
	memset(est, 0, sizeof *est);
	int64_t rows, tokens, lo, hi;
	bool ok;
	if (one_int(c, "SELECT min(rowid) FROM fts_words_docsize", 0, &lo, err) < 0 ||
	    one_int(c, "SELECT max(rowid) FROM fts_words_docsize", 0, &hi, err) < 0 ||
	    index_totals(c, hi - lo + 1, &rows, &tokens, &ok, err) < 0)
		return -1;
	if (!ok) { /* count the rows; the tokens are sampled below */
		if (one_int(c, "SELECT count(*) FROM fts_words_docsize", 0, &rows, err) < 0)
			return -1;
	}
	/* The sample: the newest CAT_RANK_SAMPLE rows' share of the rowid
	 * range (docids grow with time; gaps are assumed even). */
	int64_t cut = 0;
	double share = 1.0;
	if (rows > CAT_RANK_SAMPLE && hi > lo) {
		double span = (double)(hi - lo + 1);
		cut = hi - (int64_t)(span * CAT_RANK_SAMPLE / (double)rows);
		share = (double)(hi - cut) / span;
	}
	if (!ok) {
		/* (an auxiliary function cannot feed an aggregate: summed here) */
		sqlite3_stmt *st = cat_prepare(c, "SELECT cairn_len(fts_words) FROM fts_words"
						  " WHERE rowid > ?1", err);
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, cut);
		int64_t in = 0, len = 0;
		int rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			in++, len += sqlite3_column_int64(st, 0);
		cat_done(c, st);
		if (rc != SQLITE_DONE)
			return cat_fail(c, err, rc, "search");
		tokens = in ? (int64_t)((double)len / (double)in * (double)rows) : 0;
	}
	double sample = (double)rows * share; /* rows in the sample */
	double *word = xcalloc(q->nwords ? q->nwords : 1, sizeof *word);
	for (size_t w = 0; w < q->nwords; w++)
		word[w] = -1; /* not counted yet */
	struct buf b = BUF_INIT;
	buf_printf(&b, "%lld %lld", (long long)rows, (long long)tokens);
	int ret = 0;
	for (size_t i = 0; i < q->n && ret == 0; i++) {
		int64_t k;
		ret = count_above(c, q->phrases[i], cut, &k, err);
		double n = (double)k / share;
		buf_printf(&b, " %.0f", n < (double)rows ? n : (double)rows);
		if (q->ntok[i] == 1)
			word[q->toks[q->first[i]]] = (double)k;
	}
	/* The cost of a row of a span. A phrase of several tokens steps
	 * through the entries of all of them together, checking positions:
	 * about its rarest token's share of rows for each token. The
	 * one-word terms are an AND that seeks each word to the next row of
	 * the rarest: that share for each word. A word in no sampled row
	 * still costs a little. */
	double cost = 0, floor = 1.0 / CAT_RANK_SAMPLE, single = 1.0;
	size_t singles = 0;
	for (size_t i = 0; i < q->n && ret == 0; i++) {
		double rarest = 1.0;
		for (size_t t = 0; t < q->ntok[i] && ret == 0; t++) {
			size_t w = q->toks[q->first[i] + t];
			int64_t k;
			if (word[w] < 0 && (ret = count_above(c, q->words[w], cut, &k, err)) == 0)
				word[w] = (double)k;
			double d = sample > 0 ? word[w] / sample : 1.0;
			rarest = d < rarest ? d : rarest;
		}
		if (q->ntok[i] == 1) {
			singles++;
			single = rarest < single ? rarest : single;
		} else {
			cost += (double)q->ntok[i] * (rarest > floor ? rarest : floor);
		}
	}
	cost += (double)singles * (single > floor ? single : floor);
	free(word);
	if (ret == 0) {
		est->stats = buf_detach(&b, NULL);
		est->rows = rows;
		est->row_cost = cost;
	}
	buf_release(&b);
	return ret;
}

static void rank_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
		    int nval, sqlite3_value **vals)
{
	const char *stats = nval == 1 ? (const char *)sqlite3_value_text(vals[0]) : NULL;
	int nph = api->xPhraseCount(fts);
	if (!stats || nph > RANK_MAX_PHRASES) {
		sqlite3_result_error(ctx, "cairn_rank: wants the statistics of cat_rank_stats", -1);
		return;
	}
	char *end;
	double rows = strtod(stats, &end);
	double tokens = strtod(end, &end);
	double hits[RANK_MAX_PHRASES];
	for (int i = 0; i < nph; i++)
		hits[i] = strtod(end, &end);
	double freq[RANK_MAX_PHRASES] = {0};
	int ninst = 0;
	int rc = api->xInstCount(fts, &ninst);
	for (int i = 0; rc == SQLITE_OK && i < ninst; i++) {
		int phrase, col, off;
		rc = api->xInst(fts, i, &phrase, &col, &off);
		if (rc == SQLITE_OK && phrase >= 0 && phrase < nph)
			freq[phrase] += 1.0;
	}
	int ntok = 0;
	if (rc == SQLITE_OK)
		rc = api->xColumnSize(fts, -1, &ntok);
	if (rc != SQLITE_OK) {
		sqlite3_result_error_code(ctx, rc);
		return;
	}
	double avgdl = rows > 0 && tokens > 0 ? tokens / rows : 1.0;
	double score = 0;
	for (int i = 0; i < nph; i++) {
		double idf = log((rows - hits[i] + 0.5) / (hits[i] + 0.5));
		if (idf <= 0.0)
			idf = 1e-6; /* as FTS5's bm25 */
		score += idf * (freq[i] * (RANK_K1 + 1.0)) /
			 (freq[i] + RANK_K1 * (1.0 - RANK_B + RANK_B * (double)ntok / avgdl));
	}
	sqlite3_result_double(ctx, -score);
}

/* cairn_len(fts): the tokens of the current row (the sampled token total
 * when the averages record cannot be read). */
static void len_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nval,
		   sqlite3_value **vals)
{
	(void)nval, (void)vals;
	int ntok = 0;
	int rc = api->xColumnSize(fts, -1, &ntok);
	if (rc != SQLITE_OK)
		sqlite3_result_error_code(ctx, rc);
	else
		sqlite3_result_int(ctx, ntok);
}

int cat_register_rank(sqlite3 *db, struct cerr *err)
{
	fts5_api *api = cat_fts5(db);
	if (!api)
		return cerr_set(err, CERR_IO, 0, "catalog: this SQLite has no FTS5");
	if (api->xCreateFunction(api, "cairn_rank", NULL, rank_fn, NULL) != SQLITE_OK ||
	    api->xCreateFunction(api, "cairn_len", NULL, len_fn, NULL) != SQLITE_OK)
		return cerr_set(err, CERR_IO, 0, "catalog: cannot register the ranking function: %s",
				sqlite3_errmsg(db));
	return 0;
}
