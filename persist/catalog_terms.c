/* catalog_terms.c — a search query as an FTS5 MATCH expression: split into
 * words and "quoted phrases", each tokenized as the index tokenizes text,
 * repeats dropped, and bounded.
 *
 * FTS5 evaluates every phrase of a query on its own (bm25 counts the rows
 * holding each one over the whole index), so a query repeating a common
 * word 2,000 times took 55 s. A term that tokenizes to the same tokens as
 * an earlier one adds nothing to what matches (all terms are required) and
 * only skews relevance, so it is dropped; the caps bound what is left:
 * CATALOG_QUERY_MAX_BYTES of query and CATALOG_QUERY_MAX_WORDS tokens, the
 * unit of FTS5's work (a word; a character of text written without spaces,
 * which the tokenizer expands into character pairs). */
#include "persist/catalog_int.h"
#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

struct terms {
	char **v;
	size_t n;
};

/* Bytes of the space character at p (ASCII or any Unicode space, such as
 * U+3000 that CJK input methods type), or 0. */
static size_t space_at(const char *p, const char *end)
{
	if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		return 1;
	if ((unsigned char)*p < 0x80)
		return 0;
	utf8proc_int32_t cp;
	utf8proc_ssize_t r = utf8proc_iterate((const utf8proc_uint8_t *)p, end - p, &cp);
	if (r <= 0)
		return 0;
	utf8proc_category_t cat = utf8proc_category(cp);
	return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP
		       ? (size_t)r
		       : 0;
}

/* Split a query into plain words and "quoted phrases" (an unclosed quote
 * runs to the end). */
static void split_terms(const char *q, struct terms *t)
{
	t->v = NULL;
	t->n = 0;
	const char *p = q, *end = q + strlen(q);
	size_t sp;
	while (p < end) {
		while (p < end && (sp = space_at(p, end)))
			p += sp;
		if (p >= end)
			break;
		const char *start, *stop;
		if (*p == '"') {
			start = ++p;
			stop = strchr(p, '"');
			if (!stop)
				stop = end;
			p = stop < end ? stop + 1 : end;
		} else {
			start = p;
			while (p < end && *p != '"' && !space_at(p, end))
				p++;
			stop = p;
		}
		/* trim inside quotes */
		while (start < stop && (sp = space_at(start, stop)))
			start += sp;
		while (stop > start && (stop[-1] == ' ' || stop[-1] == '\t'))
			stop--;
		if (stop > start) {
			t->v = xreallocarray(t->v, t->n + 1, sizeof *t->v);
			t->v[t->n++] = xstrndup(start, (size_t)(stop - start));
		}
	}
}

static void terms_free(struct terms *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
}

/* Does the term hold a letter or digit (a token for the word index)? */
static bool has_word_char(const char *s)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	utf8proc_ssize_t left = (utf8proc_ssize_t)strlen(s);
	while (left > 0) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t r = utf8proc_iterate(p, left, &cp);
		if (r <= 0)
			return false;
		utf8proc_category_t cat = utf8proc_category(cp);
		if ((cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
		    (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO))
			return true;
		p += r;
		left -= r;
	}
	return false;
}

/* An FTS5 string literal: the term in double quotes, quotes doubled. Every
 * term is a literal, so no user input is ever FTS5 syntax. */
static void add_fts_literal(struct buf *b, const char *term)
{
	buf_addc(b, '"');
	for (const char *p = term; *p; p++) {
		if (*p == '"')
			buf_addc(b, '"');
		buf_addc(b, *p);
	}
	buf_addc(b, '"');
}

/* The tokens of one term, as the index's tokenizer makes them for a query. */
struct term_toks {
	struct buf key; /* each token as "<length>:<bytes>" */
	size_t n;
};

static int on_query_token(void *ctx, int tflags, const char *tok, int n, int start, int end)
{
	(void)start, (void)end;
	struct term_toks *t = ctx;
	if (tflags & FTS5_TOKEN_COLOCATED)
		return SQLITE_OK; /* a document-only synonym; not in queries */
	buf_printf(&t->key, "%d:", n);
	buf_add(&t->key, tok, (size_t)n);
	t->n++;
	return SQLITE_OK;
}

/* Record the tokens of phrase q->n (key as term_toks makes it), each
 * distinct token once in q->words as a literal of its own. */
static void add_phrase_tokens(struct cat_query *q, const struct buf *key, size_t ntok)
{
	q->first = xreallocarray(q->first, q->n + 1, sizeof *q->first);
	q->ntok = xreallocarray(q->ntok, q->n + 1, sizeof *q->ntok);
	size_t at = q->n ? q->first[q->n - 1] + q->ntok[q->n - 1] : 0;
	q->first[q->n] = at;
	q->ntok[q->n] = ntok;
	q->toks = xreallocarray(q->toks, at + ntok, sizeof *q->toks);
	const char *p = key->p, *end = key->p + key->len;
	for (size_t t = 0; t < ntok && p < end; t++) {
		char *colon;
		size_t len = (size_t)strtoul(p, &colon, 10);
		const char *tok = colon + 1;
		p = tok + len;
		struct buf lit = BUF_INIT;
		char *raw = xstrndup(tok, len);
		add_fts_literal(&lit, raw);
		free(raw);
		size_t w = 0;
		while (w < q->nwords && strcmp(q->words[w], lit.p) != 0)
			w++;
		if (w == q->nwords) {
			q->words = xreallocarray(q->words, q->nwords + 1, sizeof *q->words);
			q->words[q->nwords++] = buf_detach(&lit, NULL);
		}
		buf_release(&lit);
		q->toks[at + t] = w;
	}
}

void cat_query_release(struct cat_query *q)
{
	buf_release(&q->match);
	for (size_t i = 0; i < q->n; i++)
		free(q->phrases[i]);
	free(q->phrases);
	for (size_t i = 0; i < q->nwords; i++)
		free(q->words[i]);
	free(q->words), free(q->toks), free(q->first), free(q->ntok);
	memset(q, 0, sizeof *q);
}

int cat_query_parse(struct catalog *c, const char *query, struct cat_query *q, struct cerr *err)
{
	memset(q, 0, sizeof *q);
	if (strlen(query) > CATALOG_QUERY_MAX_BYTES)
		return cerr_set(err, CERR_USAGE, 0, "search query is over the limit of %d bytes",
				CATALOG_QUERY_MAX_BYTES);
	struct terms t;
	split_terms(query, &t);
	if (t.n == 0) {
		terms_free(&t);
		return cerr_set(err, CERR_USAGE, 0, "empty search query");
	}
	fts5_api *api = cat_fts5(c->db);
	void *uctx = NULL;
	fts5_tokenizer tk;
	Fts5Tokenizer *inst = NULL;
	if (!api || api->xFindTokenizer(api, "cairn", &uctx, &tk) != SQLITE_OK ||
	    tk.xCreate(uctx, NULL, 0, &inst) != SQLITE_OK) {
		terms_free(&t);
		return cerr_set(err, CERR_IO, 0, "catalog: the search tokenizer is missing");
	}
	struct term_toks *seen = xcalloc(t.n, sizeof *seen);
	size_t n_seen = 0, words = 0;
	int ret = 0;
	/* Every term a phrase literal, all required. */
	for (size_t i = 0; i < t.n && ret == 0; i++) {
		if (!has_word_char(t.v[i]))
			continue; /* no letter or digit: nothing to look for */
		struct term_toks *k = &seen[n_seen];
		buf_init(&k->key);
		k->n = 0;
		if (tk.xTokenize(inst, k, FTS5_TOKENIZE_QUERY, t.v[i], (int)strlen(t.v[i]),
				 on_query_token) != SQLITE_OK) {
			ret = cerr_set(err, CERR_IO, 0, "catalog: cannot tokenize the search query");
			buf_release(&k->key);
			break;
		}
		bool repeat = k->n == 0;
		for (size_t j = 0; j < n_seen && !repeat; j++)
			repeat = seen[j].key.len == k->key.len &&
				 memcmp(seen[j].key.p, k->key.p, k->key.len) == 0;
		if (repeat) {
			buf_release(&k->key);
			continue;
		}
		n_seen++;
		words += k->n;
		if (words > CATALOG_QUERY_MAX_WORDS) {
			ret = cerr_set(err, CERR_USAGE, 0,
				       "search query is over the limit of %d words (each word of a "
				       "phrase counts, and each character of text without spaces)",
				       CATALOG_QUERY_MAX_WORDS);
			break;
		}
		struct buf lit = BUF_INIT;
		add_fts_literal(&lit, t.v[i]);
		if (q->match.len)
			buf_adds(&q->match, " AND ");
		buf_add(&q->match, lit.p, lit.len);
		q->phrases = xreallocarray(q->phrases, q->n + 1, sizeof *q->phrases);
		q->phrases[q->n] = buf_detach(&lit, NULL);
		add_phrase_tokens(q, &k->key, k->n);
		q->n++;
	}
	for (size_t j = 0; j < n_seen; j++)
		buf_release(&seen[j].key);
	free(seen);
	tk.xDelete(inst);
	terms_free(&t);
	return ret;
}
