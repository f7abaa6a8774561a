/* catalog.h — <root>/index.db: the SQLite projection of every session log
 * that the browser, search and startup recovery read without opening logs.
 *
 * Everything in it is derived from the logs (title and pin come from
 * session/meta events), so `cairn doctor --reindex` can rebuild it. It also
 * holds each session's durable watermark (byte length and next seq last
 * acknowledged after an fsync), which lets a reader tell damage from a torn
 * tail where zstd alone cannot. WAL mode, synchronous=NORMAL: a power loss
 * may lose the last commits, which only makes the catalog lag the logs.
 * Errors follow base/err.h; SQLite busy beyond the timeout is CERR_LOCKED.
 *
 * Threads: one connection per thread. A struct catalog is used by one
 * thread at a time: it is opened without SQLite's mutex (NOMUTEX) and its
 * statement cache and transaction state have no lock. Each thread that
 * reads or writes opens its own: the FIFO's writer thread its write
 * connection, a CLI command its own, each lane of catalog_worker.h its read
 * connection (used by the one pool thread running that lane's request).
 * Processes and connections meet only through SQLite's file locks and WAL.
 * The one call from another thread is catalog_worker's sqlite3_interrupt,
 * which SQLite allows on a connection that stays open meanwhile. */
#ifndef CAIRN_CATALOG_H
#define CAIRN_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/title.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"

#define CATALOG_FILE "index.db"
#define CATALOG_SCHEMA 7     /* PRAGMA user_version; not the log format */
#define CATALOG_SCHEMA_STR "7"
#define CATALOG_TITLE_MAX TITLE_PROMPT_MAX /* characters of a title derived from a prompt */
#define CATALOG_EXPLICIT_TITLE_MAX TITLE_EXPLICIT_MAX /* characters of an explicit title shown on a terminal */
#define CATALOG_PREVIEW_MAX 200
#define CATALOG_SEARCH_LIMIT 50
#define CATALOG_SEARCH_WINDOW 2000 /* newest matching documents ranked by relevance */
/* A search's work budget: the index entries (one word in one message) it
 * may read, as estimated from a sample before it starts; a search that
 * spends it stops, partial (docs/catalog.md, "The work budget"). */
#define CATALOG_SEARCH_WORK 250000
/* The WAL file is cut back to this size when it starts again from its
 * beginning (journal_size_limit); a command's end truncates it to zero. */
#define CATALOG_WAL_LIMIT (4 << 20)
#define CATALOG_WAL_LIMIT_STR "4194304"
/* A search query's caps: its bytes, and its words once repeated terms are
 * dropped (a phrase counts each of its words, text without spaces each
 * character). Over either is CERR_USAGE. */
#define CATALOG_QUERY_MAX_BYTES 1024
#define CATALOG_QUERY_MAX_WORDS 16

struct catalog;

/* One session as listed. Strings are owned by the struct (cat_session_release). */
struct cat_session {
	char *id, *project_key, *cwd, *title, *last_prompt, *provider, *model;
	char *status;        /* idle | running | interrupted | unsaved | corrupt | unsupported */
	char *error;         /* why, for corrupt and unsupported; else NULL */
	char *forked_from, *forked_turn;
	int64_t created_at, updated_at, deleted_at; /* deleted_at 0: not deleted */
	int64_t turns;
	bool pinned, title_explicit;
	bool log_idle;       /* the log itself has no turn open (its projection is idle) */
	uint64_t durable_len, durable_seq, content_version;
};

struct cat_hit {
	char *session, *turn, *role, *snippet, *title;
	int64_t updated_at;
};

/* The durable watermark of one session's log: keyed by the session id and
 * the digest of the log's header frame (head), so it survives a copy of
 * the data root and no other log can take it (docs/catalog.md). rev.dev,
 * rev.ino and ctime_ns name the file the projection matches; they are not
 * part of the watermark. */
struct cat_watermark {
	bool known;
	struct revision rev; /* len and next_seq: the watermark; dev, ino: the file */
	uint8_t head[SHA256_LEN];
	int64_t ctime_ns; /* the file's ctime at that point, when known (else 0) */
};

/* Open (creating 0600, with -wal and -shm 0600) the catalog of st. Caller
 * closes it. A newer schema than this build's is CERR_UNSUPPORTED. */
int catalog_open(struct store *st, struct catalog **out, struct cerr *err);
/* Open the catalog of st for reading only, writing nothing anywhere: it
 * works on a full disk and on a read-only root. It sees the last commit
 * when SQLite can share or rebuild the WAL's index (the -shm, in memory if
 * need be), else only what was copied back into index.db (the catalog may
 * then lag further). No index.db is CERR_MISSING; another schema than
 * this build's is CERR_UNSUPPORTED. Caller closes it; writes fail. */
int catalog_open_ro(struct store *st, struct catalog **out, struct cerr *err);
/* A catalog in memory only, of this build's schema, filled from the logs
 * of st by catalog_sync (no watermarks): for reading where index.db cannot
 * be read (none on a read-only root, another schema, damaged). Nothing is
 * written to disk; writes to it are lost when it closes. Holds every
 * session's text in memory. Caller closes it. */
int catalog_open_memory(struct store *st, struct catalog **out, struct cerr *err);
/* Was c opened by catalog_open_memory? */
bool catalog_in_memory(const struct catalog *c);
/* Was c opened by catalog_open_ro? */
bool catalog_readonly(const struct catalog *c);
/* Close, NULL-safe. A connection that may write first copies the WAL back
 * and truncates it when nobody else is in the way and the file system has
 * room for what index.db must grow by (catalog_wal.c). */
void catalog_close(struct catalog *c);

/* Explicit write transactions (BEGIN IMMEDIATE); the project/set functions
 * below run in the current one, or in their own when none is open. */
/* Checkpoints managed by the caller: no automatic checkpoint after this
 * connection's commits; catalog_wal_frames tells the WAL's length in
 * frames after the last of them. */
void catalog_manual_checkpoints(struct catalog *c);
int catalog_wal_frames(const struct catalog *c);
/* A passive checkpoint: copies back into index.db what no reader still
 * needs, waiting for no one (any thread holding this connection). Without
 * room on the file system for index.db to take the WAL's pages it does
 * nothing (CERR_IO): a checkpoint that cannot finish would only take the
 * space a log append needs. */
int catalog_checkpoint(struct catalog *c, struct cerr *err);

int catalog_begin(struct catalog *c, struct cerr *err);
int catalog_commit(struct catalog *c, struct cerr *err);
void catalog_rollback(struct catalog *c);
/* A savepoint inside the current transaction, to undo one item's changes
 * alone: catalog_savepoint, then _rollback (undo) or _release (keep). */
int catalog_savepoint(struct catalog *c, struct cerr *err);
void catalog_savepoint_rollback(struct catalog *c);
void catalog_savepoint_release(struct catalog *c);

/* Replace everything known about one session by the projection of a full
 * scan of its log (any status: corrupt and unsupported logs are listed with
 * that status). deleted_at 0: live, else when it went to the trash. wm (may
 * be NULL) is a watermark the caller vouches for, recorded when the scan is
 * ok or torn. */
int catalog_project_scan(struct catalog *c, const struct session_ref *ref, const struct scan *s,
			 int64_t deleted_at, const struct cat_watermark *wm, struct cerr *err);
/* Project a batch just appended (seqs first_seq.., t of events without
 * one: batch_t) onto the session's row, and record the new watermark. The
 * row must be at content_version == first_seq (else CERR_CONFLICT); a
 * session without a row is projected from its header first by the caller
 * (catalog_project_scan). On success *version is the new content version.
 * wm NULL: the batch is written but not yet synced; the row is marked as
 * not matching a durable file (a catalog_sync re-reads the log) until
 * catalog_set_durable records the watermark. */
int catalog_project_batch(struct catalog *c, const char *id, uint64_t first_seq, int64_t batch_t,
			  const struct log_event *evs, size_t n, const struct cat_watermark *wm,
			  uint64_t *version, struct cerr *err);
/* Record a newer durable watermark (never moves it backwards on one log;
 * a log with another head replaces it). */
int catalog_set_watermark(struct catalog *c, const char *id, const struct cat_watermark *wm,
			  struct cerr *err);
/* After the log's sync: record the durable file (identity, length) the
 * projection at content version `version` matches, and the watermark
 * wm. A row that moved on to another version is left alone (*applied
 * false, may be NULL). */
int catalog_set_durable(struct catalog *c, const char *id, uint64_t version,
			const struct cat_watermark *wm, bool *applied, struct cerr *err);
/* content_version of id; *found false when the catalog has no row. */
int catalog_get_version(struct catalog *c, const char *id, uint64_t *version, bool *found,
			struct cerr *err);
/* Whether id's row is the projection of the log file `file` names
 * (identity, length, next_seq) with ctime ctime_ns: live, under project
 * ref->key, at content version file->next_seq, recorded for that file by
 * catalog_set_durable — what catalog_sync takes for unchanged (any write
 * changes the ctime). *current false when unsure. */
int catalog_row_current(struct catalog *c, const struct session_ref *ref,
			const struct revision *file, int64_t ctime_ns, bool *current,
			struct cerr *err);
/* The scan options that read a log with watermark wm (none: NULL or
 * unknown). */
struct scan_opts catalog_scan_opts(const struct cat_watermark *wm);
/* The watermark a log acknowledged as durable (log_durable; unknown when
 * it acknowledged nothing). */
struct cat_watermark catalog_watermark_of(struct log_mark d);
/* The recorded watermark of id (wm->known false when none). */
int catalog_get_watermark(struct catalog *c, const char *id, struct cat_watermark *wm,
			  struct cerr *err);
/* Set a status the logs cannot tell (running, unsaved) or clear it back to
 * what the projection says (status NULL). */
int catalog_set_status(struct catalog *c, const char *id, const char *status, struct cerr *err);
/* Mark deleted (deleted_at != 0) or restored (0). */
int catalog_set_deleted(struct catalog *c, const char *id, int64_t deleted_at, struct cerr *err);
/* Forget a session's projection (purge, or its directory vanished). Its
 * watermark stays: a session that only seemed gone (moved meanwhile) keeps
 * it. */
int catalog_forget(struct catalog *c, const char *id, struct cerr *err);
/* Drop a session's watermark (purge: its log is gone for good). */
int catalog_drop_watermark(struct catalog *c, const char *id, struct cerr *err);
/* Remove every row (reindex); the watermarks stay, in their own table,
 * so a rebuild killed at any instant loses none. */
int catalog_clear(struct catalog *c, struct cerr *err);
/* Every recorded watermark with its session id (ids[i] for wms[i]);
 * caller frees each id, the arrays, with free(). */
int catalog_watermarks(struct catalog *c, char ***ids, struct cat_watermark **wms, size_t *n,
		       struct cerr *err);

/* Bring the catalog in line with the session directories: project what is
 * new or changed on disk (by file identity and length), mark trashed ones,
 * forget vanished ones. *changed (may be NULL) counts re-projected sessions.
 * Without room on the file system to copy the WAL back (catalog_wal.c) it
 * writes nothing (CERR_IO). */
int catalog_sync(struct catalog *c, struct store *st, size_t *changed, struct cerr *err);

/* Sessions for listing: pinned first, then by last activity, newest first.
 * project NULL: every project, else those whose cwd or key matches. limit
 * 0: no limit. Caller frees *out with cat_sessions_free. */
int catalog_list(struct catalog *c, bool with_deleted, bool only_deleted, const char *project,
		 size_t limit, struct cat_session **out, size_t *n, struct cerr *err);
/* The same, one session at a time: fn gets a session whose strings are
 * borrowed and valid only during the call (no copies: a listing of ten
 * thousand sessions can stream). */
int catalog_list_each(struct catalog *c, bool with_deleted, bool only_deleted, const char *project,
		      size_t limit, void (*fn)(const struct cat_session *s, void *ctx), void *ctx,
		      struct cerr *err);
int catalog_get(struct catalog *c, const char *id, struct cat_session *out, struct cerr *err);
/* The live sessions a dead process left `running` (their lock is free):
 * what start-up recovery opens, found without reading any log. Caller
 * frees each of *ids and the array. */
int catalog_interrupted(struct catalog *c, char ***ids, size_t *n, struct cerr *err);
void cat_session_release(struct cat_session *s);
void cat_sessions_free(struct cat_session *s, size_t n);

/* Full-text search of message text: plain words and "quoted phrases", all
 * required; ranked by relevance then recency, among the newest
 * CATALOG_SEARCH_WINDOW matching documents. Text without spaces (Chinese,
 * Japanese) is matched through character bigrams (catalog_tok.c). limit 0: the default.
 * A term repeating an earlier one is dropped. An empty query, or one over
 * the caps above, is CERR_USAGE. Caller frees with cat_hits_free. A
 * search whose work budget ends before the oldest message and before it
 * found `limit` matches returns those it found, *info (may be NULL) saying
 * how far it got; the same index and query always get as far. */
struct cat_search_info {
	bool partial;     /* the work budget stopped it: older messages were not searched */
	int64_t searched; /* the newest messages searched (all of them when not partial) */
	int64_t messages; /* the messages of the word index */
};
int catalog_search(struct catalog *c, const char *query, size_t limit, bool with_deleted,
		   struct cat_hit **out, size_t *n, struct cat_search_info *info, struct cerr *err);
void cat_hits_free(struct cat_hit *h, size_t n);

/* Submit claims: which turn a client_submit_id became, and its state
 * (open, completed, canceled, failed, interrupted). *found false if none. */
int catalog_claim(struct catalog *c, const char *client_submit_id, bool *found, char **session,
		  char **turn, char **state, struct cerr *err);

/* The SQLite work of c's connection since the last call (or its opening):
 * pages looked up (in its cache or read) and pages written to the WAL
 * (SQLITE_DBSTATUS_CACHE_HIT, _MISS, _WRITE); for tests and benches that
 * count work rather than time it. Returns values. */
struct cat_work {
	uint64_t pages_looked_up, pages_read, pages_written;
};
struct cat_work catalog_work(struct catalog *c);

/* PRAGMA integrity_check: *ok and a message ("ok" or the first problem);
 * caller frees *msg. */
int catalog_integrity(struct catalog *c, bool *ok, char **msg, struct cerr *err);

#endif
