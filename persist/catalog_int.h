/* catalog_int.h — what the catalog_*.c files share; not for other modules. */
#ifndef CAIRN_CATALOG_INT_H
#define CAIRN_CATALOG_INT_H

#include <sqlite3.h>

#include "base/buf.h"
#include "base/strmap.h"
#include "persist/catalog.h"
#include "persist/vocab.h"

#define CAT_CACHE 48 /* prepared statements kept per connection */

struct catalog {
	sqlite3 *db;
	char *path;
	int rootfd;   /* borrowed from the store */
	bool in_tx;
	bool readonly;    /* catalog_open_ro */
	bool memory;      /* catalog_open_memory: no file at all */
	bool manual_ckpt; /* catalog_manual_checkpoints */
	int wal_frames;   /* the WAL's length after this connection's last commit */
	struct {
		const char *sql; /* the static SQL text it was prepared from */
		sqlite3_stmt *st;
	} cache[CAT_CACHE];
	size_t n_cache;
};

/* A document being built: the text of one role in one turn that a batch
 * (or a whole log) brings, or of one event outside any turn. */
struct doc {
	char *turn;
	uint64_t seq;     /* outside any turn: the event's */
	const char *role; /* static: user, assistant, tool */
	char *key;        /* "turn US role": its key in row.doc_at */
	struct buf text;
};

struct claim {
	char *id, *turn, *state;
};

/* The projection state of one session row. */
struct row {
	char id[SESSION_ID_MAX + 1];
	char key[PATHKEY_MAX + 1];
	char *cwd, *auto_title, *title, *last_prompt, *provider, *model;
	char *forked_from, *forked_turn, *error, *proj_status;
	bool pinned;
	int64_t created_at, updated_at, turns, deleted_at;
	cJSON *open_turns;
	uint64_t next_seq, len;
	dev_t dev;
	ino_t ino;
	int64_t ctime_ns;
	struct doc *docs;
	size_t n_docs;
	struct strmap doc_at; /* doc key -> index in docs: a long session's
			       * projection stays linear (a search per event was
			       * quadratic in its turns) */
	struct claim *claims, *ends;
	size_t n_claims, n_ends;
};

/* Search documents (catalog_docs.c): a role's text in a turn cut into
 * segments of at most CAT_SEG_MAX bytes, each starting up to
 * CAT_SEG_OVERLAP bytes before the previous one ends; an open turn's text
 * after the last cut waits outside the word index. */
#define CAT_SEG_MAX (64 * 1024)
#define CAT_SEG_OVERLAP 1024
#define CAT_SEG_WINDOW 512 /* a cut looks for a space in the segment's last bytes */
/* Add text[0..n) to the document of (session, turn, role), or outside any
 * turn (turn "") a document of its own for the event seq; open: the turn
 * is open (its tail waits outside the word index). */
int cat_doc_add(struct catalog *c, const char *session, const char *turn, const char *role,
		int64_t seq, const char *text, size_t n, bool open, struct cerr *err);
/* The turn ended: its tails go into the word index. */
int cat_doc_close(struct catalog *c, const char *session, const char *turn, struct cerr *err);

int cat_fail(struct catalog *c, struct cerr *err, int rc, const char *what);
/* Run fn inside the caller's transaction, or in one of its own. */
int cat_in_tx(struct catalog *c, struct cerr *err, int (*fn)(struct catalog *, void *, struct cerr *),
	      void *arg);
/* Record a durable watermark (catalog_durable.c); never moves it backwards
 * on one file. wm NULL or unknown: nothing. */
int cat_write_watermark(struct catalog *c, const char *id, const struct cat_watermark *wm,
			struct cerr *err);
int cat_exec(struct catalog *c, const char *sql, struct cerr *err);
/* Create every table of this build's schema in an empty database and set
 * its version (catalog_schema.c). */
int cat_create_schema(struct catalog *c, struct cerr *err);
/* Bring a writable connection's index.db to this build's schema, in a
 * transaction of its own (catalog_schema.c); a newer schema is
 * CERR_UNSUPPORTED. */
int cat_schema_upgrade(struct catalog *c, struct cerr *err);
/* The WAL policy (catalog_wal.c). cat_wal_init on a new connection;
 * cat_wal_after_commit after each of its commits (an automatic checkpoint
 * when due and there is room); cat_wal_close before it closes. */
void cat_wal_init(struct catalog *c);
void cat_wal_after_commit(struct catalog *c);
void cat_wal_close(struct catalog *c);
/* Has the file system room for index.db to take every page in the WAL?
 * (true when that cannot be told) */
bool cat_ckpt_room(struct catalog *c);
/* Can the -shm (the WAL's index, shared between connections) be sized?
 * It is when it already is, or the file system has room for it. Opening
 * a connection that has to size it on a full disk would only take the
 * space a log append needs, and then fail. */
bool cat_shm_room(int rootfd);
/* Register the tokenizer and ranking functions and set the pragmas every
 * connection needs, read-only ones too (catalog.c). */
int cat_setup_connection(struct catalog *c, struct cerr *err);
/* The watermark in columns col (len), col + 1 (seq), col + 2 (head) of a
 * row; wm->known false when they are NULL. */
void cat_read_watermark(sqlite3_stmt *st, int col, struct cat_watermark *wm);
/* Schema 5 to 6 (catalog_durable.c): copy each watermark still true of
 * its log file (same device and inode) into the watermarks table, keyed
 * by the digest of that log's header frame. In the migration's
 * transaction. */
int cat_migrate_5(struct catalog *c, struct cerr *err);
/* A statement for static SQL text, from the connection's cache (compiled
 * once: full-text triggers make compiling costly). Give it back with
 * cat_done. */
sqlite3_stmt *cat_prepare(struct catalog *c, const char *sql, struct cerr *err);
/* A statement for SQL built at run time; cat_done finalizes it. */
sqlite3_stmt *cat_prepare_once(struct catalog *c, const char *sql, struct cerr *err);
/* Reset a cached statement, or finalize any other. */
void cat_done(struct catalog *c, sqlite3_stmt *st);
/* Column i as a new string (NULL for SQL NULL); caller frees. */
char *cat_col_str(sqlite3_stmt *st, int i);
/* Bind a string (copied) or NULL. */
void cat_bind_str(sqlite3_stmt *st, int i, const char *s);

/* The connection's FTS5 API (owned by SQLite), or NULL without FTS5. */
fts5_api *cat_fts5(sqlite3 *db);
/* Register the "cairn" FTS5 tokenizer on a connection (catalog_tok.c). */
int cat_register_tokenizer(sqlite3 *db, struct cerr *err);
/* Register the ranking function cairn_rank (catalog_rank.c). */
int cat_register_rank(sqlite3 *db, struct cerr *err);
/* A search query for FTS5 (catalog_terms.c): every distinct term a phrase
 * literal, all required. */
struct cat_query {
	struct buf match; /* the MATCH expression; empty when no term holds a letter or digit */
	char **phrases;   /* each literal alone, in the order of match */
	size_t n;
	/* The distinct tokens of all phrases, each as a literal of its own,
	 * and which of them make phrase i: toks[first[i] .. first[i] + ntok[i]). */
	char **words;
	size_t nwords;
	size_t *toks, *first, *ntok;
};
/* Parse query into *q (release with cat_query_release). An empty query, or
 * one over CATALOG_QUERY_MAX_BYTES or CATALOG_QUERY_MAX_WORDS, is
 * CERR_USAGE. */
int cat_query_parse(struct catalog *c, const char *query, struct cat_query *q, struct cerr *err);
void cat_query_release(struct cat_query *q);
/* What cat_rank_stats learns of the word index for a query. */
struct cat_rank_est {
	char *stats;       /* cairn_rank's statistics "rows tokens n1 ... nk" (owned; free) */
	int64_t rows;      /* the index's rows */
	double row_cost;   /* the doclist entries a search reads per row of a rowid span */
};
/* The statistics of the word index for q (catalog_rank.c): the rows
 * holding each phrase, counted among the newest CAT_RANK_SAMPLE rows and
 * scaled to the index (exact when it has no more rows than that), and the
 * cost of reading one row of a span (index entries), from the same
 * sample. The caller frees est->stats. */
int cat_rank_stats(struct catalog *c, const struct cat_query *q, struct cat_rank_est *est,
		   struct cerr *err);
/* Does s[0..n) hold a character of a script written without spaces? */
bool cat_has_cjk(const char *s, size_t n);

/* A listed row's status as it stands now (catalog_live.c): `running`
 * whose writer lock is free is what its log says, "interrupted" or "idle"
 * (static); any other is s->status itself. Probes the lock of a running
 * row only. */
const char *cat_live_status(struct catalog *c, const struct cat_session *s);

/* The projection's rows (catalog_project.c). */
void row_apply(struct row *r, uint64_t seq, int64_t t, enum vocab_type type, const char *turn,
	       const cJSON *data);
int row_load(struct catalog *c, const char *id, struct row *r, bool *found, struct cerr *err);
void row_release(struct row *r);
void row_release_claims(struct row *r);

#endif
