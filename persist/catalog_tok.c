/* catalog_tok.c — the "cairn" FTS5 tokenizer: unicode61 (diacritics
 * folded) for text with spaces, and character bigrams for scripts written
 * without them (Chinese, Japanese, Korean, Thai, ...), where unicode61
 * would see a whole sentence as one token.
 *
 * In a document, character c_i of a run c1..cn of such characters has its
 * own position, holding c_i and (for i < n) the bigram c_i c_i+1. A query
 * run becomes its bigrams at consecutive positions, then its last character:
 * so every substring of a run is found as a phrase, and text mixing scripts
 * ("使用Python") keeps its positions: 用Python matches it, 使Python does
 * not. */
#include "persist/catalog_int.h"

#include <string.h>

#include <utf8proc.h>

/* Characters of scripts written without spaces between words. */
static bool cjk(utf8proc_int32_t cp)
{
	return (cp >= 0x0E00 && cp <= 0x0EFF) ||  /* Thai, Lao */
	       (cp >= 0x1000 && cp <= 0x109F) ||  /* Myanmar */
	       (cp >= 0x1780 && cp <= 0x17FF) ||  /* Khmer */
	       (cp >= 0x2E80 && cp <= 0x9FFF) ||  /* CJK, kana */
	       (cp >= 0xAC00 && cp <= 0xD7AF) ||  /* Hangul */
	       (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFF00 && cp <= 0xFFEF) ||
	       (cp >= 0x20000 && cp <= 0x3FFFF);
}

bool cat_has_cjk(const char *s, size_t n)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	utf8proc_ssize_t left = (utf8proc_ssize_t)n;
	while (left > 0) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t r = utf8proc_iterate(p, left, &cp);
		if (r <= 0)
			return false;
		if (cjk(cp))
			return true;
		p += r;
		left -= r;
	}
	return false;
}

struct tok {
	fts5_tokenizer base; /* unicode61's methods */
	Fts5Tokenizer *inner;
};

struct run_ctx {
	void *ctx;
	int flags;
	int (*emit)(void *, int, const char *, int, int, int);
	const char *text; /* the text being tokenized, for exact offsets */
	int text_len;
};

static int tok_create(void *api_ctx, const char **argv, int argc, Fts5Tokenizer **out)
{
	fts5_api *api = api_ctx;
	struct tok *t = sqlite3_malloc(sizeof *t);
	if (!t)
		return SQLITE_NOMEM;
	void *uctx = NULL;
	int rc = api->xFindTokenizer(api, "unicode61", &uctx, &t->base);
	static const char *args[] = {"remove_diacritics", "2"};
	if (rc == SQLITE_OK)
		rc = t->base.xCreate(uctx, args, 2, &t->inner);
	if (rc != SQLITE_OK) {
		sqlite3_free(t);
		return rc;
	}
	*out = (Fts5Tokenizer *)t;
	return SQLITE_OK;
}

static void tok_delete(Fts5Tokenizer *p)
{
	struct tok *t = (struct tok *)p;
	t->base.xDelete(t->inner);
	sqlite3_free(t);
}

/* Emit one run of n CJK characters: their byte starts in the token
 * (starts, the run ending at end) and their spans in the text (cs, ce), so
 * a snippet highlights exactly what matched. */
static int emit_run(struct run_ctx *rc, const char *tok, const int *starts, int n, int end,
		    const int *cs, const int *ce)
{
	bool query = rc->flags & FTS5_TOKENIZE_QUERY;
	int ret = SQLITE_OK;
	for (int i = 0; i < n && ret == SQLITE_OK; i++) {
		int next = i + 1 < n ? starts[i + 1] : end;
		int stop = i + 2 < n ? starts[i + 2] : end;
		if (query && i + 1 < n) {
			ret = rc->emit(rc->ctx, 0, tok + starts[i], stop - starts[i], cs[i], ce[i + 1]);
		} else if (query) {
			ret = rc->emit(rc->ctx, 0, tok + starts[i], next - starts[i], cs[i], ce[i]);
		} else {
			/* The character first: a highlight marks what the
			 * position's first token spans. */
			ret = rc->emit(rc->ctx, 0, tok + starts[i], next - starts[i], cs[i], ce[i]);
			if (ret == SQLITE_OK && i + 1 < n)
				ret = rc->emit(rc->ctx, FTS5_TOKEN_COLOCATED, tok + starts[i],
					       stop - starts[i], cs[i], ce[i]);
		}
	}
	return ret;
}

/* Split one unicode61 token into CJK runs and other runs. CJK characters
 * are not changed by unicode61's folding, so each is found in the text to
 * give its own offsets. */
static int on_token(void *vctx, int tflags, const char *tok, int n, int start, int end)
{
	struct run_ctx *rc = vctx;
	if (!cat_has_cjk(tok, (size_t)n))
		return rc->emit(rc->ctx, tflags, tok, n, start, end);
	enum { MAXRUN = 256 };
	int starts[MAXRUN], cs[MAXRUN], ce[MAXRUN];
	int nrun = 0, other = -1, other_at = start, i = 0, cur = start, ret = SQLITE_OK;
	while (i < n && ret == SQLITE_OK) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t r = utf8proc_iterate((const utf8proc_uint8_t *)tok + i, n - i, &cp);
		if (r <= 0)
			r = 1, cp = -1;
		if (cp >= 0 && cjk(cp)) {
			const char *hit = memmem(rc->text + cur, (size_t)(end - cur), tok + i, (size_t)r);
			int at = hit ? (int)(hit - rc->text) : cur;
			if (other >= 0) {
				ret = rc->emit(rc->ctx, 0, tok + other, i - other, other_at, at);
				other = -1;
			}
			if (nrun == MAXRUN) { /* a very long run: emit in pieces */
				ret = emit_run(rc, tok, starts, nrun, i, cs, ce);
				nrun = 0;
			}
			starts[nrun] = i;
			cs[nrun] = at;
			ce[nrun] = hit ? at + (int)r : end;
			cur = ce[nrun++];
		} else {
			if (nrun) {
				ret = emit_run(rc, tok, starts, nrun, i, cs, ce);
				nrun = 0;
			}
			if (other < 0) {
				other = i;
				other_at = cur;
			}
		}
		i += (int)r;
	}
	if (ret == SQLITE_OK && nrun)
		ret = emit_run(rc, tok, starts, nrun, n, cs, ce);
	if (ret == SQLITE_OK && other >= 0)
		ret = rc->emit(rc->ctx, 0, tok + other, n - other, other_at, end);
	return ret;
}

static int tok_tokenize(Fts5Tokenizer *p, void *ctx, int flags, const char *text, int n,
			int (*emit)(void *, int, const char *, int, int, int))
{
	struct tok *t = (struct tok *)p;
	struct run_ctx rc = {ctx, flags, emit, text, n};
	return t->base.xTokenize(t->inner, &rc, flags, text, n, on_token);
}

fts5_api *cat_fts5(sqlite3 *db)
{
	fts5_api *api = NULL;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
		sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return api;
}

int cat_register_tokenizer(sqlite3 *db, struct cerr *err)
{
	fts5_api *api = cat_fts5(db);
	if (!api)
		return cerr_set(err, CERR_IO, 0, "catalog: this SQLite has no FTS5");
	static fts5_tokenizer tokenizer = {tok_create, tok_delete, tok_tokenize};
	if (api->xCreateTokenizer(api, "cairn", api, &tokenizer, NULL) != SQLITE_OK)
		return cerr_set(err, CERR_IO, 0, "catalog: cannot register the tokenizer: %s",
				sqlite3_errmsg(db));
	return 0;
}
