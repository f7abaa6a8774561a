/* catalog_query.c — reading the catalog: listing, one session, full-text
 * search (one word index; text without spaces goes in as character bigrams) and submit
 * claims. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/buf.h"
#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>


#define SESSION_COLS                                                                               \
	"id, project_key, cwd, COALESCE(title, auto_title), last_prompt, provider, model,"          \
	" COALESCE(status_override, proj_status), error, forked_from, forked_turn, created_at,"     \
	" updated_at, COALESCE(deleted_at, 0), turns, pinned, title IS NOT NULL,"                  \
	" COALESCE((SELECT len FROM watermarks WHERE session = id), 0),"                           \
	" COALESCE((SELECT seq FROM watermarks WHERE session = id), 0), content_version,"          \
	" proj_status = 'idle'"

/* The session's strings, in the order of their columns (0 to 10). */
#define SESSION_NSTRS 11
#define SESSION_STRS(s)                                                                \
	{&(s)->id,          &(s)->project_key, &(s)->cwd,   &(s)->title,                 \
	 &(s)->last_prompt, &(s)->provider,    &(s)->model, &(s)->status,                \
	 &(s)->error,       &(s)->forked_from, &(s)->forked_turn}

/* The one decoder of a SESSION_COLS row: the session with its strings
 * borrowed from the statement (valid until the next step). */
static void view_session(sqlite3_stmt *st, struct cat_session *s)
{
	char **strs[SESSION_NSTRS] = SESSION_STRS(s);
	for (int i = 0; i < SESSION_NSTRS; i++)
		*strs[i] = (char *)sqlite3_column_text(st, i);
	s->created_at = sqlite3_column_int64(st, 11);
	s->updated_at = sqlite3_column_int64(st, 12);
	s->deleted_at = sqlite3_column_int64(st, 13);
	s->turns = sqlite3_column_int64(st, 14);
	s->pinned = sqlite3_column_int(st, 15) != 0;
	s->title_explicit = sqlite3_column_int(st, 16) != 0;
	s->durable_len = (uint64_t)sqlite3_column_int64(st, 17);
	s->durable_seq = (uint64_t)sqlite3_column_int64(st, 18);
	s->content_version = (uint64_t)sqlite3_column_int64(st, 19);
	s->log_idle = sqlite3_column_int(st, 20) != 0;
}

/* Make s own copies of the strings it borrows. */
static void own_strings(struct cat_session *s)
{
	char **strs[SESSION_NSTRS] = SESSION_STRS(s);
	for (int i = 0; i < SESSION_NSTRS; i++)
		*strs[i] = *strs[i] ? xstrdup(*strs[i]) : NULL;
}

/* A SESSION_COLS row as a session that owns its strings. */
static void read_session(sqlite3_stmt *st, struct cat_session *s)
{
	view_session(st, s);
	own_strings(s);
}

void cat_session_release(struct cat_session *s)
{
	if (!s)
		return;
	char **strs[SESSION_NSTRS] = SESSION_STRS(s);
	for (int i = 0; i < SESSION_NSTRS; i++)
		free(*strs[i]);
	memset(s, 0, sizeof *s);
}

void cat_sessions_free(struct cat_session *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cat_session_release(&s[i]);
	free(s);
}

int catalog_list_each(struct catalog *c, bool with_deleted, bool only_deleted, const char *project,
		      size_t limit, void (*fn)(const struct cat_session *s, void *ctx), void *ctx,
		      struct cerr *err)
{
	char *key = project ? pathkey_project(project) : NULL;
	sqlite3_stmt *st = cat_prepare(c,
		"SELECT " SESSION_COLS " FROM sessions"
		" WHERE (?1 OR deleted_at IS NULL) AND (NOT ?2 OR deleted_at IS NOT NULL)"
		" AND (?3 IS NULL OR cwd = ?3 OR project_key = ?4)"
		" ORDER BY pinned DESC, updated_at DESC, id DESC LIMIT ?5", err);
	if (!st) {
		free(key);
		return -1;
	}
	sqlite3_bind_int(st, 1, with_deleted || only_deleted);
	sqlite3_bind_int(st, 2, only_deleted);
	cat_bind_str(st, 3, project);
	cat_bind_str(st, 4, key);
	sqlite3_bind_int64(st, 5, limit ? (sqlite3_int64)limit : -1);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cat_session s;
		view_session(st, &s);
		s.status = (char *)cat_live_status(c, &s);
		fn(&s, ctx);
	}
	cat_done(c, st);
	free(key);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "list sessions");
}

struct collect {
	struct cat_session *v;
	size_t n, cap;
};

static void collect_copy(const struct cat_session *s, void *ctx)
{
	struct collect *k = ctx;
	if (k->n == k->cap)
		k->v = xreallocarray(k->v, k->cap = k->cap ? k->cap * 2 : 64, sizeof *k->v);
	struct cat_session *d = &k->v[k->n++];
	*d = *s;
	own_strings(d);
}

int catalog_list(struct catalog *c, bool with_deleted, bool only_deleted, const char *project,
		 size_t limit, struct cat_session **out, size_t *n, struct cerr *err)
{
	struct collect k = {0};
	int rc = catalog_list_each(c, with_deleted, only_deleted, project, limit, collect_copy, &k, err);
	if (rc < 0) {
		cat_sessions_free(k.v, k.n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	*out = k.v;
	*n = k.n;
	return 0;
}

int catalog_get(struct catalog *c, const char *id, struct cat_session *out, struct cerr *err)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *st = cat_prepare(c, "SELECT " SESSION_COLS " FROM sessions WHERE id = ?1", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		read_session(st, out);
	cat_done(c, st);
	if (rc == SQLITE_ROW) {
		const char *live = cat_live_status(c, out);
		if (live != out->status) {
			free(out->status);
			out->status = xstrdup(live);
		}
		return 0;
	}
	if (rc == SQLITE_DONE)
		return cerr_set(err, CERR_MISSING, 0, "catalog has no session '%s'", id);
	return cat_fail(c, err, rc, "read session");
}

int catalog_interrupted(struct catalog *c, char ***ids, size_t *n, struct cerr *err)
{
	*ids = NULL;
	*n = 0;
	sqlite3_stmt *st = cat_prepare(c,
				       "SELECT " SESSION_COLS " FROM sessions"
				       " WHERE status_override = 'running' AND deleted_at IS NULL",
				       err);
	if (!st)
		return -1;
	int rc;
	size_t cap = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cat_session s;
		memset(&s, 0, sizeof s);
		read_session(st, &s);
		const char *live = cat_live_status(c, &s);
		if (live && strcmp(live, "interrupted") == 0) {
			if (*n == cap) {
				cap = cap ? 2 * cap : 8;
				*ids = xrealloc(*ids, cap * sizeof **ids);
			}
			(*ids)[(*n)++] = xstrdup(s.id);
		}
		cat_session_release(&s);
	}
	cat_done(c, st);
	if (rc != SQLITE_DONE) {
		for (size_t i = 0; i < *n; i++)
			free((*ids)[i]);
		free(*ids);
		*ids = NULL;
		*n = 0;
		return cat_fail(c, err, rc, "list running sessions");
	}
	return 0;
}

void cat_hits_free(struct cat_hit *h, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(h[i].session), free(h[i].turn), free(h[i].role);
		free(h[i].snippet), free(h[i].title);
	}
	free(h);
}

/* ---- queries ---- */

/* One hit with what orders it. */
struct ranked {
	struct cat_hit h;
	double rank;
	int64_t docid;
};

struct hits {
	struct ranked *v;
	size_t n, cap;
	char *stats; /* cat_rank_stats of the word index when it had hits, or NULL */
};

static bool before(const struct ranked *a, const struct ranked *b)
{
	if (a->rank != b->rank)
		return a->rank < b->rank;
	if (a->h.updated_at != b->h.updated_at)
		return a->h.updated_at > b->h.updated_at;
	return a->docid > b->docid;
}

/* Step a hit query (columns: session, turn, role, snippet, title,
 * updated_at, rank, docid), adding its rows to *out, and finish it. */
static int step_hits(struct catalog *c, sqlite3_stmt *st, struct hits *out, struct cerr *err)
{
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (out->n == out->cap) {
			out->cap = out->cap ? out->cap * 2 : 16;
			out->v = xreallocarray(out->v, out->cap, sizeof *out->v);
		}
		struct ranked *r = &out->v[out->n++];
		r->h.session = cat_col_str(st, 0);
		r->h.turn = cat_col_str(st, 1);
		r->h.role = cat_col_str(st, 2);
		r->h.snippet = cat_col_str(st, 3);
		r->h.title = cat_col_str(st, 4);
		r->h.updated_at = sqlite3_column_int64(st, 5);
		r->rank = sqlite3_column_double(st, 6);
		r->docid = sqlite3_column_int64(st, 7);
	}
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "search");
}

static void hit_release(struct cat_hit *x)
{
	free(x->session), free(x->turn), free(x->role), free(x->snippet), free(x->title);
}

static int by_rank(const void *a, const void *b)
{
	return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* Keep the first of the hits of each (session, turn, role) in v, in
 * order: a role's text in a turn is one hit however many of its segments
 * (or its open tail) matched. */
static void one_per_turn(struct hits *h)
{
	struct strmap seen;
	strmap_init(&seen);
	char **keys = xcalloc(h->n + 1, sizeof *keys); /* the map borrows them */
	size_t k = 0;
	for (size_t i = 0; i < h->n; i++) {
		struct ranked *r = &h->v[i];
		char *key = xasprintf("%s\x1f%s\x1f%s", r->h.session, r->h.turn, r->h.role);
		size_t at;
		if (strmap_get(&seen, key, &at)) {
			hit_release(&r->h);
			free(key);
			continue;
		}
		keys[k] = key;
		strmap_put(&seen, key, k);
		h->v[k++] = *r;
	}
	h->n = k;
	strmap_release(&seen);
	for (size_t i = 0; i < k; i++)
		free(keys[i]);
	free(keys);
}

static int newest_first(const void *a, const void *b)
{
	int64_t x = ((const struct ranked *)a)->docid, y = ((const struct ranked *)b)->docid;
	return x > y ? -1 : x < y;
}

/* Run a hit query (?3 the rank function or its statistics) and add its
 * rows to *out. */
static int run_hits(struct catalog *c, const char *sql, const struct buf *match, size_t limit,
		    const char *rank, struct hits *out, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare_once(c, sql, err); /* built per query: not cached */
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, match->p, (int)match->len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
	if (rank)
		sqlite3_bind_text(st, 3, rank, -1, SQLITE_STATIC);
	return step_hits(c, st, out, err);
}

/* The hits among open turns' text (docs.indexed = 0): it goes into an
 * index of its own, in memory, and is ranked on the word index's scale
 * when the word index had hits (catalog_rank.c). */
static int open_hits(struct catalog *c, const struct buf *match, size_t limit, bool with_deleted,
		     struct hits *out, struct cerr *err)
{
	const char *deleted = with_deleted ? "" : " AND s.deleted_at IS NULL";
	/* A tail is the pieces of one role's text in an open turn: one
	 * document, known by its first piece's docid. */
	char *fill = xasprintf("DELETE FROM temp.open_words;"
			       "INSERT INTO temp.open_words(rowid, body) SELECT d.docid,"
			       " (SELECT group_concat(body, '') FROM (SELECT body FROM docs x"
			       "  WHERE x.session = d.session AND x.turn = d.turn AND x.role = d.role"
			       "  AND x.indexed = 0 ORDER BY x.part))"
			       " FROM docs d JOIN sessions s ON s.id = d.session"
			       " WHERE d.indexed = 0 AND NOT EXISTS (SELECT 1 FROM docs y"
			       "  WHERE y.session = d.session AND y.turn = d.turn AND y.role = d.role"
			       "  AND y.indexed = 0 AND y.part < d.part)%s", deleted);
	int ret = cat_exec(c, "CREATE VIRTUAL TABLE IF NOT EXISTS temp.open_words USING"
			      " fts5(body, tokenize='cairn')", err);
	if (ret == 0)
		ret = cat_exec(c, fill, err);
	free(fill);
	if (ret < 0)
		return -1;
	char *sql = xasprintf(
		"SELECT d.session, d.turn, d.role, snippet(open_words, 0, '[', ']', '\xE2\x80\xA6', 12),"
		" COALESCE(s.title, s.auto_title), s.updated_at, %s, d.docid"
		" FROM open_words JOIN docs d ON d.docid = open_words.rowid"
		" JOIN sessions s ON s.id = d.session"
		" WHERE open_words MATCH ?1 ORDER BY 7, s.updated_at DESC, d.docid DESC LIMIT ?2",
		out->stats ? "cairn_rank(open_words, ?3)" : "rank");
	char *stats = out->stats;
	ret = run_hits(c, sql, match, limit, stats, out, err);
	free(sql);
	struct cerr e;
	cat_exec(c, "DELETE FROM temp.open_words", &e); /* memory back */
	return ret;
}

#define SEARCH_SPAN 8192 /* rowids of the first span word_hits reads */

/* The snippets of the hits shown (v[0..n)), made in one more read of the
 * rows between the oldest and the newest of them, for those rows only:
 * making one costs more than finding and ranking a match (a common word's
 * 2000 ranked matches took 110 ms with theirs, 28 ms without). */
static int add_snippets(struct catalog *c, const struct buf *match, struct ranked *v, size_t n,
			struct cerr *err)
{
	int64_t lo = v[0].docid, hi = v[0].docid;
	struct buf in = BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		lo = v[i].docid < lo ? v[i].docid : lo;
		hi = v[i].docid > hi ? v[i].docid : hi;
		buf_printf(&in, "%s%lld", i ? "," : "", (long long)v[i].docid);
	}
	/* +rowid: a filter on the rows read, not a lookup per value. */
	char *sql = xasprintf("SELECT rowid, snippet(fts_words, 0, '[', ']', '\xE2\x80\xA6', 12)"
			      " FROM fts_words WHERE fts_words MATCH ?1 AND rowid >= ?2 AND rowid <= ?3"
			      " AND +rowid IN (%s)", in.p);
	buf_release(&in);
	sqlite3_stmt *st = cat_prepare_once(c, sql, err);
	free(sql);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, match->p, (int)match->len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, hi);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		for (size_t i = 0; i < n; i++)
			if (v[i].docid == id && !v[i].h.snippet)
				v[i].h.snippet = cat_col_str(st, 1);
	}
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "search");
}

/* How far the word index was read. */
struct reach {
	bool partial;   /* the budget ended the search above the oldest row */
	int64_t cut;    /* when partial: rows above this were read */
};

/* The word index's hits, ranked: those among its newest
 * CATALOG_SEARCH_WINDOW matches (ranked by relevance, then recency). They
 * are looked for in the newest rows first, then in older spans further
 * down (sized from the matches seen so far), each span read once, with
 * its hits' ranks and snippets; a span that brings the matches to `limit`
 * ends the search there, and all of them are ranked. No search reads more
 * than max_span rows (the work budget, CATALOG_SEARCH_WORK, over the
 * query's estimated cost of a row): one that gets there with fewer
 * matches stops, partial. Reading the whole index for the newest 2000
 * matches of 64 common words took 400 ms (they match 1% of the rows), and
 * proving that 32 phrases of two common words match nothing took a
 * second. A span is read upward from its start: inside an AND, FTS5 reads
 * on past the end of a rowid range to the next match, and upward that is
 * at most into the span read before. */
static int word_hits(struct catalog *c, const struct buf *match, size_t limit, int64_t max_span,
		     const char *stats, bool with_deleted, struct hits *out, struct reach *r,
		     struct cerr *err)
{
	memset(r, 0, sizeof *r);
	sqlite3_stmt *st = cat_prepare(c, "SELECT (SELECT min(rowid) FROM fts_words_docsize),"
					  " (SELECT max(rowid) FROM fts_words_docsize)", err);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	int64_t lo = sqlite3_column_int64(st, 0), hi = sqlite3_column_int64(st, 1);
	cat_done(c, st);
	if (rc != SQLITE_ROW)
		return cat_fail(c, err, rc, "search");
	if (max_span < 1)
		max_span = 1;
	char *sql = xasprintf(
		"SELECT d.session, d.turn, d.role, NULL,"
		" COALESCE(s.title, s.auto_title), s.updated_at, cairn_rank(fts_words, ?4), d.docid"
		" FROM fts_words JOIN docs d ON d.docid = fts_words.rowid"
		" JOIN sessions s ON s.id = d.session"
		" WHERE fts_words MATCH ?1 AND fts_words.rowid > ?2 AND fts_words.rowid <= ?3%s"
		" ORDER BY fts_words.rowid",
		with_deleted ? "" : " AND s.deleted_at IS NULL");
	int ret = 0;
	int64_t top = hi; /* rows above top were read */
	for (int64_t depth = SEARCH_SPAN < max_span ? SEARCH_SPAN : max_span;;) {
		int64_t cut = hi - depth;
		st = cat_prepare_once(c, sql, err);
		if (!st) {
			ret = -1;
			break;
		}
		sqlite3_bind_text(st, 1, match->p, (int)match->len, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, cut);
		sqlite3_bind_int64(st, 3, top);
		sqlite3_bind_text(st, 4, stats, -1, SQLITE_STATIC);
		if ((ret = step_hits(c, st, out, err)) < 0)
			break;
		top = cut;
		if (out->n >= CATALOG_SEARCH_WINDOW || cut < lo || out->n >= limit)
			break;
		if (depth >= max_span) {
			r->partial = true;
			r->cut = cut;
			break;
		}
		/* Next, down to where `limit` matches should be at the density
		 * seen (half again as many, at least four times as deep); none
		 * seen yet: they are rare, read as far as the budget goes. */
		double need = (double)depth * (double)limit / (double)(out->n ? out->n : 1) * 1.5;
		depth = !out->n ? max_span : need > (double)(depth * 4) ? (int64_t)need : depth * 4;
		if (depth > max_span)
			depth = max_span;
	}
	free(sql);
	if (ret == 0 && out->n > CATALOG_SEARCH_WINDOW) { /* the newest matches only */
		qsort(out->v, out->n, sizeof *out->v, newest_first);
		for (size_t i = CATALOG_SEARCH_WINDOW; i < out->n; i++)
			hit_release(&out->v[i].h);
		out->n = CATALOG_SEARCH_WINDOW;
	}
	if (ret == 0) {
		qsort(out->v, out->n, sizeof *out->v, by_rank);
		one_per_turn(out);
	}
	if (ret == 0 && out->n)
		ret = add_snippets(c, match, out->v, out->n < limit ? out->n : limit, err);
	return ret;
}

static int search_in_tx(struct catalog *c, const struct cat_query *q, size_t limit,
			bool with_deleted, struct hits *out, struct cat_search_info *info,
			struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, "SELECT 1 FROM docs WHERE indexed = 0 LIMIT 1", err);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	cat_done(c, st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cat_fail(c, err, rc, "search");
	bool open = rc == SQLITE_ROW;
	struct cat_rank_est est;
	struct reach r;
	if (cat_rank_stats(c, q, &est, err) < 0)
		return -1;
	double span = CATALOG_SEARCH_WORK / (est.row_cost > 0 ? est.row_cost : 1e-9);
	int ret = word_hits(c, &q->match, limit, span < (double)(INT64_MAX / 2) ? (int64_t)span : INT64_MAX / 2,
			    est.stats, with_deleted, out, &r, err);
	info->messages = est.rows;
	info->searched = est.rows;
	info->partial = r.partial;
	if (ret == 0 && r.partial) {
		sqlite3_stmt *cnt = cat_prepare(c, "SELECT count(*) FROM fts_words_docsize"
						   " WHERE rowid > ?1", err);
		if (!cnt) {
			free(est.stats);
			return -1;
		}
		sqlite3_bind_int64(cnt, 1, r.cut);
		rc = sqlite3_step(cnt);
		info->searched = sqlite3_column_int64(cnt, 0);
		cat_done(c, cnt);
		if (rc != SQLITE_ROW)
			ret = cat_fail(c, err, rc, "search");
	}
	if (ret == 0 && out->n)
		out->stats = est.stats; /* open hits are ranked on the same scale */
	else
		free(est.stats);
	if (ret == 0 && open) {
		/* Open turns' text is always searched whole: count it in both. */
		sqlite3_stmt *cnt = cat_prepare(c, "SELECT count(*) FROM (SELECT 1 FROM docs"
						   " WHERE indexed = 0 GROUP BY session, turn, role)", err);
		if (!cnt)
			ret = -1;
		else if ((rc = sqlite3_step(cnt)) == SQLITE_ROW) {
			info->messages += sqlite3_column_int64(cnt, 0);
			info->searched += sqlite3_column_int64(cnt, 0);
		}
		if (cnt)
			cat_done(c, cnt);
		if (cnt && rc != SQLITE_ROW)
			ret = cat_fail(c, err, rc, "search");
	}
	if (ret == 0 && open) {
		size_t indexed = out->n;
		ret = open_hits(c, &q->match, limit, with_deleted, out, err);
		if (ret == 0 && indexed && out->n > indexed) {
			/* Both lists are in order: merge them. */
			struct ranked *m = xcalloc(out->n, sizeof *m);
			size_t i = 0, j = indexed, k = 0;
			while (i < indexed || j < out->n)
				m[k++] = j == out->n || (i < indexed && !before(&out->v[j], &out->v[i]))
						 ? out->v[i++]
						 : out->v[j++];
			free(out->v);
			out->v = m;
			out->cap = out->n;
		}
		if (ret == 0)
			one_per_turn(out);
	}
	return ret;
}

int catalog_search(struct catalog *c, const char *query, size_t limit, bool with_deleted,
		   struct cat_hit **out, size_t *n, struct cat_search_info *info, struct cerr *err)
{
	*out = NULL;
	*n = 0;
	struct cat_search_info scratch;
	if (!info)
		info = &scratch;
	memset(info, 0, sizeof *info);
	struct cat_query q;
	if (cat_query_parse(c, query, &q, err) < 0) {
		cat_query_release(&q);
		return -1;
	}
	if (!q.n) {
		cat_query_release(&q);
		return 0; /* only punctuation: no word can match it */
	}
	if (!limit)
		limit = CATALOG_SEARCH_LIMIT;
	/* One snapshot for both indexes: a turn that ends meanwhile moves its
	 * text from one to the other. */
	bool tx = !c->in_tx;
	struct hits h = {0};
	int ret = -1;
	if (!tx || cat_exec(c, "BEGIN", err) == 0) {
		ret = search_in_tx(c, &q, limit, with_deleted, &h, info, err);
		if (tx)
			cat_exec(c, ret == 0 ? "COMMIT" : "ROLLBACK", &(struct cerr){0});
	}
	cat_query_release(&q);
	free(h.stats);
	size_t keep = ret == 0 ? (h.n < limit ? h.n : limit) : 0;
	for (size_t i = keep; i < h.n; i++)
		hit_release(&h.v[i].h);
	if (keep) {
		*out = xcalloc(keep, sizeof **out);
		for (size_t i = 0; i < keep; i++)
			(*out)[i] = h.v[i].h;
		*n = keep;
	}
	free(h.v);
	return ret;
}

int catalog_claim(struct catalog *c, const char *client_submit_id, bool *found, char **session,
		  char **turn, char **state, struct cerr *err)
{
	*found = false;
	*session = *turn = *state = NULL;
	sqlite3_stmt *st = cat_prepare(c, "SELECT session, turn, state FROM claims"
					  " WHERE client_submit_id = ?1", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, client_submit_id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = true;
		*session = cat_col_str(st, 0);
		*turn = cat_col_str(st, 1);
		*state = cat_col_str(st, 2);
		rc = SQLITE_DONE;
	}
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "read claim");
}
