/* catalog_rank.c — ranking the text of open turns on the word index's
 * scale.
 *
 * The text of a turn still open is not in the word index yet (it goes in
 * when the turn ends, see docs/catalog.md); a search matches it in a
 * small in-memory index of its own. Two FTS5 auxiliary functions put both
 * kinds of hit on one scale, FTS5's own bm25 (k1 = 1.2, b = 0.75):
 *
 *   cairn_stats(fts_words)       on a hit of the word index: its row count,
 *                                its token count and, per phrase of the
 *                                query, the rows holding it, as text
 *                                "rows tokens n1 n2 ...";
 *   cairn_rank(open_words, S)    on a hit of the small index: bm25 of that
 *                                row computed with the statistics S, so the
 *                                same number bm25() would give it in the
 *                                word index (lower ranks first). */
#include "persist/catalog_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define RANK_K1 1.2
#define RANK_B 0.75
#define RANK_MAX_PHRASES 64

static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ctx)
{
	(void)api, (void)fts;
	(*(sqlite3_int64 *)ctx)++;
	return SQLITE_OK;
}

/* The statistics of the query, computed once per query (FTS5 keeps them
 * as the query's auxiliary data). */
static void stats_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
		     int nval, sqlite3_value **vals)
{
	(void)nval, (void)vals;
	char *text = api->xGetAuxdata(fts, 0);
	if (!text) {
		sqlite3_int64 rows = 0, tokens = 0;
		int rc = api->xRowCount(fts, &rows);
		if (rc == SQLITE_OK)
			rc = api->xColumnTotalSize(fts, -1, &tokens);
		int nph = api->xPhraseCount(fts);
		if (rc == SQLITE_OK && nph > RANK_MAX_PHRASES)
			rc = SQLITE_ERROR;
		struct buf b = BUF_INIT;
		buf_printf(&b, "%lld %lld", (long long)rows, (long long)tokens);
		for (int i = 0; rc == SQLITE_OK && i < nph; i++) {
			sqlite3_int64 hits = 0;
			rc = api->xQueryPhrase(fts, i, &hits, count_row);
			buf_printf(&b, " %lld", (long long)hits);
		}
		if (rc == SQLITE_OK) {
			text = sqlite3_mprintf("%s", b.p);
			rc = text ? api->xSetAuxdata(fts, text, sqlite3_free) : SQLITE_NOMEM;
		}
		buf_release(&b);
		if (rc != SQLITE_OK) {
			sqlite3_result_error_code(ctx, rc);
			return;
		}
	}
	sqlite3_result_text(ctx, text, -1, SQLITE_TRANSIENT);
}

static void rank_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
		    int nval, sqlite3_value **vals)
{
	const char *stats = nval == 1 ? (const char *)sqlite3_value_text(vals[0]) : NULL;
	int nph = api->xPhraseCount(fts);
	if (!stats || nph > RANK_MAX_PHRASES) {
		sqlite3_result_error(ctx, "cairn_rank: wants the statistics of cairn_stats", -1);
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

int cat_register_rank(sqlite3 *db, struct cerr *err)
{
	fts5_api *api = cat_fts5(db);
	if (!api)
		return cerr_set(err, CERR_IO, 0, "catalog: this SQLite has no FTS5");
	if (api->xCreateFunction(api, "cairn_stats", NULL, stats_fn, NULL) != SQLITE_OK ||
	    api->xCreateFunction(api, "cairn_rank", NULL, rank_fn, NULL) != SQLITE_OK)
		return cerr_set(err, CERR_IO, 0, "catalog: cannot register the ranking functions: %s",
				sqlite3_errmsg(db));
	return 0;
}
