/* catalog_docs.c — a role's text in a turn stored as search documents of
 * bounded size, so that what a batch costs depends on the batch, not on
 * how much text the turn or the session already holds.
 *
 * The text of (session, turn, role) is cut into segments of at most
 * CAT_SEG_MAX bytes (docs.part 0, 1, ...), each a document of the word
 * index (indexed = 1). A cut falls after the last space in the final
 * CAT_SEG_WINDOW bytes of a segment (else between two characters), and
 * the next segment starts again up to CAT_SEG_OVERLAP bytes before it, at
 * a word: a phrase that spans a cut is whole in the next segment. Where
 * the cuts fall depends only on the text, never on the batches it came
 * in, so a rebuild from the log cuts where the live projection did.
 *
 * While its turn is open, the text after the last cut (the tail) is not
 * in the word index: it is stored as the pieces each batch brought
 * (indexed = 0; docs.tail is the tail's bytes up to and including the
 * piece), so a batch adds a row and rewrites nothing. When the tail grows
 * past CAT_SEG_MAX, or its turn ends, it is read back (at most
 * CAT_SEG_MAX plus the batch), cut and indexed. Text outside any turn is
 * a document per event (part = its seq). */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/buf.h"

#include <string.h>

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r';
}

/* Where the segment s[0..len) (len > CAT_SEG_MAX) ends: it depends on
 * s[0..CAT_SEG_MAX] only. */
static size_t seg_cut(const char *s)
{
	for (size_t p = CAT_SEG_MAX; p > CAT_SEG_MAX - CAT_SEG_WINDOW; p--)
		if (is_space(s[p - 1]))
			return p;
	size_t p = CAT_SEG_MAX;
	while (p > 1 && ((unsigned char)s[p] & 0xC0) == 0x80)
		p--; /* between two characters */
	return p;
}

/* Where the segment after a cut at c starts: up to CAT_SEG_OVERLAP bytes
 * before c, at the start of a word when there is one. */
static size_t seg_next(const char *s, size_t c)
{
	size_t p = c - CAT_SEG_OVERLAP;
	for (size_t q = p; q < c; q++)
		if (is_space(s[q])) {
			for (; q < c && is_space(s[q]); q++)
				;
			return q < c ? q : p;
		}
	while (p < c && ((unsigned char)s[p] & 0xC0) == 0x80)
		p++;
	return p;
}

static int put(struct catalog *c, const char *session, const char *turn, const char *role,
	       int64_t part, const char *body, size_t n, bool indexed, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c,
		"INSERT INTO docs (session, turn, role, part, body, indexed, tail)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, session);
	cat_bind_str(st, 2, turn);
	cat_bind_str(st, 3, role);
	sqlite3_bind_int64(st, 4, part);
	sqlite3_bind_text(st, 5, body, (int)n, SQLITE_STATIC);
	sqlite3_bind_int(st, 6, indexed);
	sqlite3_bind_int64(st, 7, indexed ? 0 : (sqlite3_int64)n);
	int rc = sqlite3_step(st);
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "store text");
}

/* Store b (the text from the last cut on) from segment `part`: cut and
 * indexed while longer than a segment; the rest indexed unless open. */
static int seal(struct catalog *c, const char *session, const char *turn, const char *role,
		int64_t part, const struct buf *b, bool open, struct cerr *err)
{
	size_t p = 0;
	while (b->len - p > CAT_SEG_MAX) {
		size_t cut = seg_cut(b->p + p);
		if (put(c, session, turn, role, part++, b->p + p, cut, true, err) < 0)
			return -1;
		p += seg_next(b->p + p, cut);
	}
	return put(c, session, turn, role, part, b->p + p, b->len - p, !open, err);
}

/* Move the tail of (session, turn, role) into b (appended) and delete its
 * rows; *first is its first part. */
static int take_tail(struct catalog *c, const char *session, const char *turn, const char *role,
		     struct buf *b, int64_t *first, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, "SELECT part, body FROM docs WHERE session = ?1"
					  " AND turn = ?2 AND role = ?3 AND indexed = 0 ORDER BY part",
				       err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, session);
	cat_bind_str(st, 2, turn);
	cat_bind_str(st, 3, role);
	int rc;
	bool any = false;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!any)
			*first = sqlite3_column_int64(st, 0);
		any = true;
		buf_add(b, sqlite3_column_text(st, 1), (size_t)sqlite3_column_bytes(st, 1));
	}
	cat_done(c, st);
	if (rc != SQLITE_DONE)
		return cat_fail(c, err, rc, "read text");
	st = cat_prepare(c, "DELETE FROM docs WHERE session = ?1 AND turn = ?2 AND role = ?3"
			    " AND indexed = 0", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, session);
	cat_bind_str(st, 2, turn);
	cat_bind_str(st, 3, role);
	rc = sqlite3_step(st);
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "read text");
}

int cat_doc_add(struct catalog *c, const char *session, const char *turn, const char *role,
		int64_t seq, const char *text, size_t n, bool open, struct cerr *err)
{
	if (!*turn) /* outside any turn: a document of its own */
		return put(c, session, turn, role, (int64_t)seq, text, n, true, err);
	sqlite3_stmt *st = cat_prepare(c,
		"SELECT docid, part, indexed, tail, body FROM docs WHERE session = ?1 AND turn = ?2"
		" AND role = ?3 ORDER BY part DESC LIMIT 1", err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, session);
	cat_bind_str(st, 2, turn);
	cat_bind_str(st, 3, role);
	int rc = sqlite3_step(st);
	bool found = rc == SQLITE_ROW, indexed = false;
	int64_t docid = 0, part = 0, tail = 0;
	struct buf b = BUF_INIT;
	if (found) {
		docid = sqlite3_column_int64(st, 0);
		part = sqlite3_column_int64(st, 1);
		indexed = sqlite3_column_int(st, 2) != 0;
		tail = sqlite3_column_int64(st, 3);
		if (indexed) /* the last segment, its turn ended: cut again with the text */
			buf_add(&b, sqlite3_column_text(st, 4), (size_t)sqlite3_column_bytes(st, 4));
		rc = SQLITE_DONE;
	}
	cat_done(c, st);
	if (rc != SQLITE_DONE)
		return cat_fail(c, err, rc, "read text");
	/* Streamed assistant pieces join as they came; other texts are
	 * separate messages. */
	const char *sep = found && strcmp(role, "assistant") != 0 ? "\n" : "";
	size_t sn = strlen(sep);
	int ret = 0;
	if (found && !indexed && open && (size_t)tail + sn + n <= CAT_SEG_MAX) {
		/* The common case: one more piece of an open tail. */
		buf_adds(&b, sep);
		buf_add(&b, text, n);
		st = cat_prepare(c, "INSERT INTO docs (session, turn, role, part, body, indexed, tail)"
				    " VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)", err);
		if (!st) {
			buf_release(&b);
			return -1;
		}
		cat_bind_str(st, 1, session);
		cat_bind_str(st, 2, turn);
		cat_bind_str(st, 3, role);
		sqlite3_bind_int64(st, 4, part + 1);
		sqlite3_bind_text(st, 5, b.p, (int)b.len, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, tail + (sqlite3_int64)b.len);
		rc = sqlite3_step(st);
		cat_done(c, st);
		buf_release(&b);
		return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "store text");
	}
	if (found && indexed) {
		st = cat_prepare(c, "DELETE FROM docs WHERE docid = ?1", err);
		if (!st) {
			buf_release(&b);
			return -1;
		}
		sqlite3_bind_int64(st, 1, docid);
		rc = sqlite3_step(st);
		cat_done(c, st);
		if (rc != SQLITE_DONE)
			ret = cat_fail(c, err, rc, "store text");
	} else if (found) {
		ret = take_tail(c, session, turn, role, &b, &part, err);
	}
	if (ret == 0) {
		buf_adds(&b, sep);
		buf_add(&b, text, n);
		if (!b.p)
			buf_adds(&b, "");
		ret = seal(c, session, turn, role, part, &b, open, err);
	}
	buf_release(&b);
	return ret;
}

int cat_doc_close(struct catalog *c, const char *session, const char *turn, struct cerr *err)
{
	static const char *const roles[] = {"user", "assistant", "tool"};
	for (size_t i = 0; i < sizeof roles / sizeof *roles; i++) {
		struct buf b = BUF_INIT;
		int64_t first = -1;
		int ret = take_tail(c, session, turn, roles[i], &b, &first, err);
		if (ret == 0 && first >= 0)
			ret = seal(c, session, turn, roles[i], first, &b, false, err);
		buf_release(&b);
		if (ret < 0)
			return -1;
	}
	return 0;
}
