/* catalog.c — the SQLite catalog: schema, projection of log events into
 * session rows and full-text documents, watermarks, and reconciliation with
 * the session directories. Listing and search queries live in
 * catalog_query.c. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* The word index holds the text of ended turns (and text outside any
 * turn); an open turn's text waits in docs, indexed = 0, and a search
 * reads it there (catalog_query.c). */
#define DOCS_TRIGGERS \
	"CREATE TRIGGER docs_ai AFTER INSERT ON docs WHEN new.indexed BEGIN" \
	"  INSERT INTO fts_words(rowid, body) VALUES (new.docid, new.body);" \
	"END;" \
	"CREATE TRIGGER docs_ad AFTER DELETE ON docs WHEN old.indexed BEGIN" \
	"  INSERT INTO fts_words(fts_words, rowid, body) VALUES ('delete', old.docid, old.body);" \
	"END;" \
	"CREATE TRIGGER docs_au AFTER UPDATE OF body, indexed ON docs BEGIN" \
	"  INSERT INTO fts_words(fts_words, rowid, body) SELECT 'delete', old.docid, old.body" \
	"   WHERE old.indexed;" \
	"  INSERT INTO fts_words(rowid, body) SELECT new.docid, new.body WHERE new.indexed;" \
	"END;"

/* Durable watermarks are not derived from the logs: they live apart from
 * the projection, which a reindex clears and rebuilds, and are keyed by
 * the session id and the digest of its log's header frame (head). */
#define WATERMARKS_SQL \
	"CREATE TABLE watermarks (" \
	"  session TEXT PRIMARY KEY," \
	"  len INTEGER NOT NULL," \
	"  seq INTEGER NOT NULL," \
	"  head BLOB NOT NULL" \
	");"

static const char schema_sql[] =
	"CREATE TABLE sessions ("
	"  id TEXT PRIMARY KEY,"
	"  project_key TEXT NOT NULL,"
	"  cwd TEXT,"
	"  auto_title TEXT,"          /* derived from the first prompt */
	"  title TEXT,"               /* explicit (session/meta), or NULL */
	"  created_at INTEGER NOT NULL DEFAULT 0,"
	"  updated_at INTEGER NOT NULL DEFAULT 0,"
	"  turns INTEGER NOT NULL DEFAULT 0,"
	"  last_prompt TEXT,"
	"  provider TEXT,"
	"  model TEXT,"
	"  pinned INTEGER NOT NULL DEFAULT 0,"
	"  deleted_at INTEGER,"
	"  proj_status TEXT NOT NULL DEFAULT 'idle'," /* what the log says */
	"  status_override TEXT,"     /* running / unsaved, set by a writer */
	"  error TEXT,"
	"  open_turns TEXT NOT NULL DEFAULT '[]',"
	"  forked_from TEXT,"
	"  forked_turn TEXT,"
	"  content_version INTEGER NOT NULL DEFAULT 0," /* = projected next seq */
	"  proj_dev INTEGER, proj_ino INTEGER, proj_len INTEGER, proj_ctime INTEGER"
	");"
	"CREATE INDEX sessions_order ON sessions(pinned DESC, updated_at DESC, id DESC);"
	"CREATE TABLE docs ("
	"  docid INTEGER PRIMARY KEY,"
	"  session TEXT NOT NULL,"
	"  turn TEXT NOT NULL,"
	"  role TEXT NOT NULL,"
	"  body TEXT NOT NULL,"
	"  indexed INTEGER NOT NULL DEFAULT 1," /* 0 while its turn is open */
	"  UNIQUE(session, turn, role)"
	");"
	"CREATE INDEX docs_open ON docs(session) WHERE indexed = 0;"
	"CREATE VIRTUAL TABLE fts_words USING fts5(body, content='docs', content_rowid='docid',"
	"  tokenize='cairn');"
	DOCS_TRIGGERS
	"CREATE TABLE claims ("
	"  client_submit_id TEXT PRIMARY KEY,"
	"  session TEXT NOT NULL,"
	"  turn TEXT NOT NULL,"
	"  state TEXT NOT NULL"
	");"
	"CREATE INDEX claims_session ON claims(session, turn);"
	WATERMARKS_SQL;

/* Schema 3 to 4: the listing's order index also holds the tie-break, so a
 * listing walks it without sorting. Nothing else changed. */
static const char migrate_3_sql[] =
	"DROP INDEX IF EXISTS sessions_order;"
	"CREATE INDEX sessions_order ON sessions(pinned DESC, updated_at DESC, id DESC);";

/* Schema 4 to 5: an open turn's text stays out of the word index until
 * the turn ends. Text already indexed stays so. */
static const char migrate_4_sql[] =
	"ALTER TABLE docs ADD COLUMN indexed INTEGER NOT NULL DEFAULT 1;"
	"CREATE INDEX docs_open ON docs(session) WHERE indexed = 0;"
	"DROP TRIGGER docs_ai; DROP TRIGGER docs_ad; DROP TRIGGER docs_au;"
	DOCS_TRIGGERS;

/* Schema 5 to 6: watermarks move to their own table (cat_migrate_5
 * copies those still true of their file, keyed by head), out of the rows
 * a reindex clears. */
static const char migrate_5_sql[] =
	WATERMARKS_SQL;
static const char migrate_5_drop_sql[] =
	"ALTER TABLE sessions DROP COLUMN wm_len; ALTER TABLE sessions DROP COLUMN wm_seq;"
	"ALTER TABLE sessions DROP COLUMN wm_dev; ALTER TABLE sessions DROP COLUMN wm_ino;";

static const char drop_sql[] =
	"DROP TRIGGER IF EXISTS docs_ai; DROP TRIGGER IF EXISTS docs_ad; DROP TRIGGER IF EXISTS docs_au;"
	"DROP TABLE IF EXISTS fts_words; DROP TABLE IF EXISTS fts_tri; DROP TABLE IF EXISTS docs;"
	"DROP TABLE IF EXISTS claims; DROP TABLE IF EXISTS sessions;"
	"DROP TABLE IF EXISTS watermarks;";

int cat_create_schema(struct catalog *c, struct cerr *err)
{
	return cat_exec(c, schema_sql, err) < 0 ? -1 :
	       cat_exec(c, "PRAGMA user_version=" CATALOG_SCHEMA_STR, err);
}

int cat_fail(struct catalog *c, struct cerr *err, int rc, const char *what)
{
	enum cerr_class cls = CERR_IO;
	if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		cls = CERR_LOCKED;
	return cerr_set(err, cls, 0, "catalog: %s: %s", what, c && c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
}

int cat_exec(struct catalog *c, const char *sql, struct cerr *err)
{
	char *msg = NULL;
	int rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		enum cerr_class cls = rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? CERR_LOCKED : CERR_IO;
		cerr_set(err, cls, 0, "catalog: %s", msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

sqlite3_stmt *cat_prepare_once(struct catalog *c, const char *sql, struct cerr *err)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		cat_fail(c, err, rc, "prepare");
		return NULL;
	}
	return st;
}

sqlite3_stmt *cat_prepare(struct catalog *c, const char *sql, struct cerr *err)
{
	for (size_t i = 0; i < c->n_cache; i++) {
		if (strcmp(c->cache[i].sql, sql) != 0)
			continue;
		if (sqlite3_stmt_busy(c->cache[i].st))
			return cat_prepare_once(c, sql, err); /* in use further up */
		return c->cache[i].st;
	}
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
	if (rc != SQLITE_OK) {
		cat_fail(c, err, rc, "prepare");
		return NULL;
	}
	if (c->n_cache < CAT_CACHE) {
		c->cache[c->n_cache].sql = sql;
		c->cache[c->n_cache++].st = st;
	}
	return st;
}

void cat_done(struct catalog *c, sqlite3_stmt *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < c->n_cache; i++)
		if (c->cache[i].st == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return;
		}
	sqlite3_finalize(st);
}

char *cat_col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? xstrdup((const char *)t) : NULL;
}

void cat_bind_str(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* The -wal and -shm files take the database file's mode in SQLite's unix
 * VFS; check them anyway, as they may predate us. */
static int tighten_sidecars(struct catalog *c, struct cerr *err)
{
	static const char *const side[] = {CATALOG_FILE "-wal", CATALOG_FILE "-shm"};
	/* Never open them: closing any fd of a file drops every POSIX lock
	 * this process holds on it, SQLite's -shm locks included. */
	for (size_t i = 0; i < 2; i++) {
		struct stat st;
		if (fsops->fstatat(c->rootfd, side[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return cerr_set(err, CERR_IO, errno, "cannot stat '%s'", side[i]);
		}
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
			return cerr_set(err, CERR_IO, 0, "'%s' is not a regular file of ours", side[i]);
		if ((st.st_mode & 07777) != 0600 && fchmodat(c->rootfd, side[i], 0600, 0) < 0)
			return cerr_set(err, CERR_IO, errno, "cannot set mode of '%s'", side[i]);
	}
	return 0;
}

int cat_setup_connection(struct catalog *c, struct cerr *err)
{
	sqlite3_busy_timeout(c->db, 5000);
	if (cat_register_tokenizer(c->db, err) < 0 || cat_register_rank(c->db, err) < 0)
		return -1;
	sqlite3_extended_result_codes(c->db, 0);
	/* Sorting in memory: a full disk often means a full /tmp too. */
	return cat_exec(c, "PRAGMA temp_store=MEMORY", err);
}

int catalog_open(struct store *st, struct catalog **out, struct cerr *err)
{
	if (!cat_shm_room(store_root_fd(st)))
		return cerr_set(err, CERR_IO, ENOSPC, "cannot open catalog '%s/%s'", store_root(st),
				CATALOG_FILE);
	int fd = safefs_openfile(store_root_fd(st), CATALOG_FILE, O_RDWR | O_CREAT, err);
	if (fd < 0)
		return -1;
	fs_close_quiet(fd);
	struct catalog *c = xcalloc(1, sizeof *c);
	c->rootfd = store_root_fd(st);
	c->path = xasprintf("%s/%s", store_root(st), CATALOG_FILE);
	int rc = sqlite3_open_v2(c->path, &c->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		cat_fail(c, err, rc, "open");
		goto fail;
	}
	if (cat_setup_connection(c, err) < 0)
		goto fail;
	/* WAL so readers never block the writer; NORMAL because the catalog is
	 * a projection of fsynced logs: losing its last commits to a power loss
	 * only makes it lag (watermarks included), never lead. Switching a
	 * new database to WAL takes an exclusive lock, and SQLite gives up at
	 * once (no busy handler) while another opener holds a shared one:
	 * retry for as long as the busy timeout. */
	for (int i = 0; i < 500 && sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) ==
					   SQLITE_BUSY; i++)
		sqlite3_sleep(10);
	if (cat_exec(c, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			"PRAGMA journal_size_limit=" CATALOG_WAL_LIMIT_STR "; PRAGMA foreign_keys=OFF;",
		     err) < 0)
		goto fail;
	cat_wal_init(c);
	sqlite3_stmt *q = cat_prepare(c, "PRAGMA user_version", err);
	if (!q)
		goto fail;
	int version = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
	cat_done(c, q);
	if (version > CATALOG_SCHEMA) {
		cerr_set(err, CERR_UNSUPPORTED, 0,
			 "catalog '%s' has schema %d, newer than this cairn's %d ('cairn doctor --reindex' rebuilds it)",
			 c->path, version, CATALOG_SCHEMA);
		goto fail;
	}
	if (version < CATALOG_SCHEMA) {
		if (cat_exec(c, "BEGIN IMMEDIATE", err) < 0)
			goto fail;
		q = cat_prepare(c, "PRAGMA user_version", err);
		version = q && sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
		cat_done(c, q);
		/* Schema 3 lacks an index, 4 the mark of open turns' text, 5
		 * the watermarks' own table. Older ones are dropped, not
		 * migrated: everything in them is derived from the logs, and
		 * the next sync projects them again (their watermarks are
		 * lost, which only makes them lag until a writer heals them). */
		int r = 0;
		if (version >= 3 && version <= 5)
			r = (version == 3 && cat_exec(c, migrate_3_sql, err) < 0) ||
					    (version <= 4 && cat_exec(c, migrate_4_sql, err) < 0) ||
					    cat_exec(c, migrate_5_sql, err) < 0 ||
					    cat_migrate_5(c, err) < 0 ||
					    cat_exec(c, migrate_5_drop_sql, err) < 0 ? -1 : 0;
		else if (version >= 0 && version < CATALOG_SCHEMA)
			r = (version > 0 && cat_exec(c, drop_sql, err) < 0) ||
					    cat_exec(c, schema_sql, err) < 0 ? -1 : 0;
		if (r == 0 && version >= 0 && version < CATALOG_SCHEMA)
			r = cat_exec(c, "PRAGMA user_version=" CATALOG_SCHEMA_STR, err);
		if (r < 0) {
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
			goto fail;
		}
		if (cat_exec(c, "COMMIT", err) < 0)
			goto fail;
	}
	if (tighten_sidecars(c, err) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	catalog_close(c);
	return -1;
}

void catalog_close(struct catalog *c)
{
	if (!c)
		return;
	if (c->db)
		cat_wal_close(c); /* may use the cache */
	for (size_t i = 0; i < c->n_cache; i++)
		sqlite3_finalize(c->cache[i].st);
	c->n_cache = 0;
	if (c->db)
		sqlite3_close_v2(c->db);
	free(c->path);
	free(c);
}

int catalog_begin(struct catalog *c, struct cerr *err)
{
	if (cat_exec(c, "BEGIN IMMEDIATE", err) < 0)
		return -1;
	c->in_tx = true;
	return 0;
}

int catalog_commit(struct catalog *c, struct cerr *err)
{
	c->in_tx = false;
	if (cat_exec(c, "COMMIT", err) < 0) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	cat_wal_after_commit(c);
	return 0;
}

void catalog_rollback(struct catalog *c)
{
	c->in_tx = false;
	sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

int catalog_savepoint(struct catalog *c, struct cerr *err)
{
	return cat_exec(c, "SAVEPOINT item", err);
}

void catalog_savepoint_rollback(struct catalog *c)
{
	sqlite3_exec(c->db, "ROLLBACK TO item; RELEASE item", NULL, NULL, NULL);
}

void catalog_savepoint_release(struct catalog *c)
{
	sqlite3_exec(c->db, "RELEASE item", NULL, NULL, NULL);
}

int cat_in_tx(struct catalog *c, struct cerr *err, int (*fn)(struct catalog *, void *, struct cerr *),
	      void *arg)
{
	if (c->in_tx)
		return fn(c, arg, err);
	if (catalog_begin(c, err) < 0)
		return -1;
	if (fn(c, arg, err) < 0) {
		catalog_rollback(c);
		return -1;
	}
	return catalog_commit(c, err);
}

/* ---- the projection ---- */

void row_release(struct row *r)
{
	free(r->cwd), free(r->auto_title), free(r->title), free(r->last_prompt);
	free(r->provider), free(r->model), free(r->forked_from), free(r->forked_turn);
	free(r->error), free(r->proj_status);
	cJSON_Delete(r->open_turns);
	for (size_t i = 0; i < r->n_docs; i++) {
		free(r->docs[i].turn);
		buf_release(&r->docs[i].text);
	}
	free(r->docs);
	memset(r, 0, sizeof *r);
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

static const char *str_field(const cJSON *data, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

#define DOC_MAX (64 * 1024) /* text indexed per event */

static void add_doc(struct row *r, const char *turn, const char *role, const char *text)
{
	if (!text || !*text)
		return; /* nothing to index, and no separator: a batch never stores one */
	struct doc *d = NULL;
	for (size_t i = r->n_docs; i-- > 0;)
		if (strcmp(r->docs[i].turn, turn) == 0 && strcmp(r->docs[i].role, role) == 0) {
			d = &r->docs[i];
			break;
		}
	if (!d) {
		r->docs = xreallocarray(r->docs, r->n_docs + 1, sizeof *r->docs);
		d = &r->docs[r->n_docs++];
		d->turn = xstrdup(turn);
		d->role = role;
		buf_init(&d->text);
	}
	size_t n = strlen(text);
	if (n > DOC_MAX) {
		n = DOC_MAX;
		while (n && ((unsigned char)text[n] & 0xC0) == 0x80)
			n--; /* whole characters only */
	}
	/* Streamed assistant chunks join as they came; other texts are
	 * separate messages. */
	if (d->text.len && strcmp(role, "assistant") != 0)
		buf_addc(&d->text, '\n');
	buf_add(&d->text, text, n);
}

static void open_turn_remove(struct row *r, const char *turn)
{
	int i = 0;
	for (cJSON *t = r->open_turns->child; t; t = t->next, i++)
		if (cJSON_IsString(t) && strcmp(t->valuestring, turn) == 0) {
			cJSON_DeleteItemFromArray(r->open_turns, i);
			return;
		}
}

static bool turn_open(const struct row *r, const char *turn)
{
	for (const cJSON *t = r->open_turns->child; t; t = t->next)
		if (cJSON_IsString(t) && strcmp(t->valuestring, turn) == 0)
			return true;
	return false;
}

/* Apply one event to the row (and collect its text and claims). */
void row_apply(struct row *r, uint64_t seq, int64_t t, enum vocab_type type, const char *turn,
	       const cJSON *data)
{
	r->next_seq = seq + 1;
	if (t > r->updated_at)
		r->updated_at = t;
	const char *tk = turn ? turn : "";
	switch (type) {
	case VT_UNKNOWN: /* an unknown ignorable event counts, but says nothing */
	case VT_REQUEST_PREPARED: /* these change nothing the catalog keeps */
	case VT_ASSISTANT_REASONING:
	case VT_TOOL_CALL:
	case VT_INTERACTION_REQUEST:
	case VT_INTERACTION_ANSWER:
	case VT_TOOL_STARTED:
	case VT_STEP_END:
	case VT_BRANCH_REWIND:
	case VT_INPUT_QUEUED:
	case VT_INPUT_DEQUEUED:
		break;
	case VT_SESSION_HEADER: {
		set_str(&r->cwd, str_field(data, "cwd"));
		set_str(&r->provider, str_field(data, "provider"));
		set_str(&r->model, str_field(data, "model"));
		int64_t created = 0;
		json_get_int(cJSON_GetObjectItemCaseSensitive(data, "created_at"), -JSON_MAX_SAFE_INT,
			     JSON_MAX_SAFE_INT, &created);
		r->created_at = created;
		const cJSON *fork = cJSON_GetObjectItemCaseSensitive(data, "forked_from");
		set_str(&r->forked_from, str_field(fork, "session"));
		set_str(&r->forked_turn, str_field(fork, "turn"));
		break;
	}
	case VT_SESSION_META: {
		const cJSON *title = cJSON_GetObjectItemCaseSensitive(data, "title");
		if (cJSON_IsString(title)) {
			char *norm = catalog_title_of(title->valuestring, 200);
			set_str(&r->title, *norm ? norm : NULL);
			free(norm);
		} else if (cJSON_IsNull(title)) {
			set_str(&r->title, NULL);
		}
		const cJSON *pin = cJSON_GetObjectItemCaseSensitive(data, "pinned");
		if (cJSON_IsBool(pin))
			r->pinned = cJSON_IsTrue(pin);
		break;
	}
	case VT_SESSION_SETTINGS:
		if (cJSON_GetObjectItemCaseSensitive(data, "provider"))
			set_str(&r->provider, str_field(data, "provider"));
		if (cJSON_GetObjectItemCaseSensitive(data, "model"))
			set_str(&r->model, str_field(data, "model"));
		break;
	case VT_TURN_START: {
		r->turns++;
		open_turn_remove(r, tk);
		cJSON_AddItemToArray(r->open_turns, cJSON_CreateString(tk));
		const char *claim = str_field(data, "client_submit_id");
		if (claim) {
			r->claims = xreallocarray(r->claims, r->n_claims + 1, sizeof *r->claims);
			r->claims[r->n_claims++] = (struct claim){xstrdup(claim), xstrdup(tk), NULL};
		}
		break;
	}
	case VT_TURN_END: {
		open_turn_remove(r, tk);
		const char *outcome = str_field(data, "outcome");
		r->ends = xreallocarray(r->ends, r->n_ends + 1, sizeof *r->ends);
		r->ends[r->n_ends++] = (struct claim){NULL, xstrdup(tk), xstrdup(outcome ? outcome : "")};
		break;
	}
	case VT_USER_MESSAGE: {
		const char *text = str_field(data, "text");
		char *prompt = catalog_title_of(text, CATALOG_PREVIEW_MAX);
		if (!r->auto_title && *prompt) {
			char *title = catalog_title_of(text, CATALOG_TITLE_MAX);
			set_str(&r->auto_title, title);
			free(title);
		}
		set_str(&r->last_prompt, prompt);
		free(prompt);
		add_doc(r, tk, "user", text);
		break;
	}
	case VT_ASSISTANT_TEXT:
		add_doc(r, tk, "assistant", str_field(data, "text"));
		break;
	case VT_TOOL_RESULT: {
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(data, "output");
		if (cJSON_IsString(out)) {
			add_doc(r, tk, "tool", out->valuestring);
		} else if (out && !cJSON_IsNull(out)) {
			char *s = json_print(out);
			add_doc(r, tk, "tool", s);
			free(s);
		}
		break;
	}
	}
}

void row_release_claims(struct row *r)
{
	for (size_t i = 0; i < r->n_claims; i++)
		free(r->claims[i].id), free(r->claims[i].turn);
	for (size_t i = 0; i < r->n_ends; i++)
		free(r->ends[i].turn), free(r->ends[i].state);
	free(r->claims), free(r->ends);
	r->claims = r->ends = NULL;
	r->n_claims = r->n_ends = 0;
}

/* Run a cached statement with up to three string parameters (NULL: no
 * more parameters). */
static int run_strs(struct catalog *c, const char *sql, const char *p1, const char *p2,
		    const char *p3, const char *what, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, sql, err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, p1);
	if (p2)
		cat_bind_str(st, 2, p2);
	if (p2 && p3)
		cat_bind_str(st, 3, p3);
	int rc = sqlite3_step(st);
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, what);
}

/* Write the row, its new text and claims. replace: the docs and claims of
 * the session are replaced rather than extended. */
static int row_store(struct catalog *c, const struct row *r, bool replace, struct cerr *err)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (replace &&
	    (run_strs(c, "DELETE FROM docs WHERE session = ?1", r->id, NULL, NULL, "clear documents",
		      err) < 0 ||
	     run_strs(c, "DELETE FROM claims WHERE session = ?1", r->id, NULL, NULL, "clear claims",
		      err) < 0))
		return -1;
	char *open = json_print(r->open_turns);
	const char *proj_status = r->proj_status ? r->proj_status :
				  cJSON_GetArraySize(r->open_turns) ? "interrupted" : "idle";
	st = cat_prepare(c,
		"INSERT INTO sessions (id, project_key, cwd, auto_title, title, created_at, updated_at,"
		" turns, last_prompt, provider, model, pinned, deleted_at, proj_status, error,"
		" open_turns, forked_from, forked_turn, content_version, proj_dev, proj_ino, proj_len,"
		" proj_ctime)"
		" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,"
		" ?23)"
		" ON CONFLICT(id) DO UPDATE SET project_key=?2, cwd=?3, auto_title=?4, title=?5,"
		" created_at=?6, updated_at=?7, turns=?8, last_prompt=?9, provider=?10, model=?11,"
		" pinned=?12, deleted_at=?13, proj_status=?14, error=?15, open_turns=?16,"
		" forked_from=?17, forked_turn=?18, content_version=?19, proj_dev=?20, proj_ino=?21,"
		" proj_len=?22, proj_ctime=?23", err);
	if (!st) {
		free(open);
		return -1;
	}
	cat_bind_str(st, 1, r->id);
	cat_bind_str(st, 2, r->key);
	cat_bind_str(st, 3, r->cwd);
	cat_bind_str(st, 4, r->auto_title);
	cat_bind_str(st, 5, r->title);
	sqlite3_bind_int64(st, 6, r->created_at);
	sqlite3_bind_int64(st, 7, r->updated_at);
	sqlite3_bind_int64(st, 8, r->turns);
	cat_bind_str(st, 9, r->last_prompt);
	cat_bind_str(st, 10, r->provider);
	cat_bind_str(st, 11, r->model);
	sqlite3_bind_int(st, 12, r->pinned);
	if (r->deleted_at)
		sqlite3_bind_int64(st, 13, r->deleted_at);
	else
		sqlite3_bind_null(st, 13);
	cat_bind_str(st, 14, proj_status);
	cat_bind_str(st, 15, r->error);
	cat_bind_str(st, 16, open);
	cat_bind_str(st, 17, r->forked_from);
	cat_bind_str(st, 18, r->forked_turn);
	sqlite3_bind_int64(st, 19, (sqlite3_int64)r->next_seq);
	sqlite3_bind_int64(st, 20, (sqlite3_int64)r->dev);
	sqlite3_bind_int64(st, 21, (sqlite3_int64)r->ino);
	sqlite3_bind_int64(st, 22, (sqlite3_int64)r->len);
	sqlite3_bind_int64(st, 23, r->ctime_ns);
	rc = sqlite3_step(st);
	cat_done(c, st);
	free(open);
	if (rc != SQLITE_DONE)
		return cat_fail(c, err, rc, "store session");
	/* An open turn's text waits outside the word index: appending to a
	 * document there would index it whole again at every save. */
	for (size_t i = 0; i < r->n_docs; i++) {
		const struct doc *d = &r->docs[i];
		if (!d->text.len)
			continue;
		const char *sep = strcmp(d->role, "assistant") == 0 ? "" : "\n";
		st = cat_prepare(c,
			"INSERT INTO docs (session, turn, role, body, indexed) VALUES (?1, ?2, ?3, ?4, ?6)"
			" ON CONFLICT(session, turn, role) DO UPDATE SET body = body || ?5 || ?4,"
			" indexed = ?6", err);
		if (!st)
			return -1;
		cat_bind_str(st, 1, r->id);
		cat_bind_str(st, 2, d->turn);
		cat_bind_str(st, 3, d->role);
		sqlite3_bind_text(st, 4, d->text.p, (int)d->text.len, SQLITE_STATIC);
		cat_bind_str(st, 5, sep);
		sqlite3_bind_int(st, 6, !turn_open(r, d->turn));
		rc = sqlite3_step(st);
		cat_done(c, st);
		if (rc != SQLITE_DONE)
			return cat_fail(c, err, rc, "store text");
	}
	for (size_t i = 0; i < r->n_claims; i++)
		if (run_strs(c, "INSERT OR REPLACE INTO claims (client_submit_id, session, turn, state)"
				" VALUES (?1, ?2, ?3, 'open')", r->claims[i].id, r->id, r->claims[i].turn,
			     "store claim", err) < 0)
			return -1;
	/* An ended turn's text goes into the word index (unless the turn
	 * started again since), and its claim settles. */
	for (size_t i = 0; i < r->n_ends; i++) {
		const struct claim *e = &r->ends[i];
		if (!turn_open(r, e->turn) &&
		    run_strs(c, "UPDATE docs SET indexed = 1 WHERE session = ?1 AND turn = ?2"
				" AND indexed = 0", r->id, e->turn, NULL, "index text", err) < 0)
			return -1;
		if (run_strs(c, "UPDATE claims SET state = ?3 WHERE session = ?1 AND turn = ?2", r->id,
			     e->turn, e->state, "settle claim", err) < 0)
			return -1;
	}
	return 0;
}

struct project_scan_args {
	const struct session_ref *ref;
	const struct scan *s;
	int64_t deleted_at;
	const struct cat_watermark *wm;
};

static int do_project_scan(struct catalog *c, void *arg, struct cerr *err)
{
	struct project_scan_args *a = arg;
	const struct scan *s = a->s;
	struct row r = {0};
	snprintf(r.id, sizeof r.id, "%s", a->ref->id);
	snprintf(r.key, sizeof r.key, "%s", a->ref->key);
	r.open_turns = cJSON_CreateArray();
	r.deleted_at = a->deleted_at;
	r.dev = s->rev.dev;
	r.ino = s->rev.ino;
	r.len = s->rev.len;
	r.ctime_ns = s->ctime_ns;
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		row_apply(&r, ev->seq, ev->t, ev->vtype, ev->turn, ev->data);
	}
	if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED) {
		set_str(&r.proj_status, scan_status_name(s->status));
		set_str(&r.error, s->err.msg);
	}
	r.next_seq = s->rev.next_seq;
	int ret = row_store(c, &r, true, err);
	if (ret == 0 && (s->status == SCAN_OK || s->status == SCAN_TORN)) {
		/* What was read whole and valid up to good_len is durable on
		 * disk now or was acknowledged earlier; the caller passes the
		 * watermark it can vouch for. */
		ret = cat_write_watermark(c, r.id, a->wm, err);
	}
	row_release_claims(&r);
	row_release(&r);
	return ret;
}

int catalog_project_scan(struct catalog *c, const struct session_ref *ref, const struct scan *s,
			 int64_t deleted_at, const struct cat_watermark *wm, struct cerr *err)
{
	struct project_scan_args a = {ref, s, deleted_at, wm};
	return cat_in_tx(c, err, do_project_scan, &a);
}

/* Load the projection state of a row for incremental updates. */
int row_load(struct catalog *c, const char *id, struct row *r, bool *found, struct cerr *err)
{
	memset(r, 0, sizeof *r);
	*found = false;
	sqlite3_stmt *st = cat_prepare(c,
		"SELECT project_key, cwd, auto_title, title, created_at, updated_at, turns, last_prompt,"
		" provider, model, pinned, deleted_at, proj_status, error, open_turns, forked_from,"
		" forked_turn, content_version, proj_dev, proj_ino, proj_len, proj_ctime FROM sessions"
		" WHERE id = ?1",
		err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = true;
		snprintf(r->id, sizeof r->id, "%s", id);
		snprintf(r->key, sizeof r->key, "%s", (const char *)sqlite3_column_text(st, 0));
		r->cwd = cat_col_str(st, 1);
		r->auto_title = cat_col_str(st, 2);
		r->title = cat_col_str(st, 3);
		r->created_at = sqlite3_column_int64(st, 4);
		r->updated_at = sqlite3_column_int64(st, 5);
		r->turns = sqlite3_column_int64(st, 6);
		r->last_prompt = cat_col_str(st, 7);
		r->provider = cat_col_str(st, 8);
		r->model = cat_col_str(st, 9);
		r->pinned = sqlite3_column_int(st, 10) != 0;
		r->deleted_at = sqlite3_column_int64(st, 11);
		char *ps = cat_col_str(st, 12);
		if (ps && (strcmp(ps, "corrupt") == 0 || strcmp(ps, "unsupported") == 0))
			r->proj_status = ps;
		else
			free(ps);
		r->error = cat_col_str(st, 13);
		const char *open = (const char *)sqlite3_column_text(st, 14);
		r->open_turns = open ? cJSON_Parse(open) : NULL;
		if (!cJSON_IsArray(r->open_turns)) {
			cJSON_Delete(r->open_turns);
			r->open_turns = cJSON_CreateArray();
		}
		r->forked_from = cat_col_str(st, 15);
		r->forked_turn = cat_col_str(st, 16);
		r->next_seq = (uint64_t)sqlite3_column_int64(st, 17);
		r->dev = (dev_t)sqlite3_column_int64(st, 18);
		r->ino = (ino_t)sqlite3_column_int64(st, 19);
		r->len = (uint64_t)sqlite3_column_int64(st, 20);
		r->ctime_ns = sqlite3_column_int64(st, 21);
		rc = SQLITE_DONE;
	}
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "load session");
}

struct batch_args {
	const char *id;
	uint64_t first_seq;
	int64_t batch_t;
	const struct log_event *evs;
	size_t n;
	const struct cat_watermark *wm;
	uint64_t version;
};

static int do_project_batch(struct catalog *c, void *arg, struct cerr *err)
{
	struct batch_args *a = arg;
	struct row r;
	bool found;
	if (row_load(c, a->id, &r, &found, err) < 0)
		return -1;
	int ret = -1;
	if (!found) {
		cerr_set(err, CERR_MISSING, 0, "catalog has no session '%s'", a->id);
		goto out;
	}
	if (r.next_seq != a->first_seq) {
		cerr_set(err, CERR_CONFLICT, 0, "catalog has session '%s' at version %llu, not %llu",
			 a->id, (unsigned long long)r.next_seq, (unsigned long long)a->first_seq);
		goto out;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct log_event *e = &a->evs[i];
		cJSON *empty = NULL;
		const cJSON *data = e->data ? e->data : (empty = cJSON_CreateObject());
		row_apply(&r, a->first_seq + i, e->t ? e->t : a->batch_t, vocab_type_of(e->type),
			  e->turn, data);
		cJSON_Delete(empty);
	}
	if (a->wm && a->wm->known) {
		r.dev = a->wm->rev.dev;
		r.ino = a->wm->rev.ino;
		r.len = a->wm->rev.len;
		r.ctime_ns = a->wm->ctime_ns;
	} else {
		/* Not durable yet: until catalog_set_durable, any sync reads
		 * the log again rather than trust this projection. */
		r.len = (uint64_t)-1;
	}
	ret = row_store(c, &r, false, err);
	if (ret == 0)
		ret = cat_write_watermark(c, a->id, a->wm, err);
	a->version = r.next_seq;
out:
	row_release_claims(&r);
	row_release(&r);
	return ret;
}

int catalog_project_batch(struct catalog *c, const char *id, uint64_t first_seq, int64_t batch_t,
			  const struct log_event *evs, size_t n, const struct cat_watermark *wm,
			  uint64_t *version, struct cerr *err)
{
	struct batch_args a = {id, first_seq, batch_t, evs, n, wm, 0};
	if (cat_in_tx(c, err, do_project_batch, &a) < 0)
		return -1;
	if (version)
		*version = a.version;
	return 0;
}

/* One-statement updates keyed by session id. */
static int update_one(struct catalog *c, const char *sql, const char *id, const char *text,
		      int64_t num, bool use_num, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, sql, err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	if (use_num) {
		if (num)
			sqlite3_bind_int64(st, 2, num);
		else
			sqlite3_bind_null(st, 2);
	} else {
		cat_bind_str(st, 2, text);
	}
	int rc = sqlite3_step(st);
	cat_done(c, st);
	if (rc != SQLITE_DONE)
		return cat_fail(c, err, rc, "update session");
	if (sqlite3_changes(c->db) == 0)
		return cerr_set(err, CERR_MISSING, 0, "catalog has no session '%s'", id);
	return 0;
}

int catalog_set_status(struct catalog *c, const char *id, const char *status, struct cerr *err)
{
	return update_one(c, "UPDATE sessions SET status_override = ?2 WHERE id = ?1", id, status, 0,
			  false, err);
}

int catalog_set_deleted(struct catalog *c, const char *id, int64_t deleted_at, struct cerr *err)
{
	return update_one(c, "UPDATE sessions SET deleted_at = ?2 WHERE id = ?1", id, NULL, deleted_at,
			  true, err);
}

static int do_forget(struct catalog *c, void *arg, struct cerr *err)
{
	static const char *const sql[] = {"DELETE FROM docs WHERE session = ?1",
					  "DELETE FROM claims WHERE session = ?1",
					  "DELETE FROM sessions WHERE id = ?1"};
	for (size_t i = 0; i < 3; i++) {
		sqlite3_stmt *st = cat_prepare(c, sql[i], err);
		if (!st)
			return -1;
		cat_bind_str(st, 1, arg);
		int rc = sqlite3_step(st);
		cat_done(c, st);
		if (rc != SQLITE_DONE)
			return cat_fail(c, err, rc, "forget session");
	}
	return 0;
}

int catalog_forget(struct catalog *c, const char *id, struct cerr *err)
{
	return cat_in_tx(c, err, do_forget, (void *)id);
}

static int do_clear(struct catalog *c, void *arg, struct cerr *err)
{
	/* Not the watermarks: they are not in the logs. */
	return cat_exec(c, "DELETE FROM docs; DELETE FROM claims; DELETE FROM sessions;", err);
}

int catalog_clear(struct catalog *c, struct cerr *err)
{
	return cat_in_tx(c, err, do_clear, NULL);
}

int catalog_integrity(struct catalog *c, bool *ok, char **msg, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, "PRAGMA integrity_check", err);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		cat_done(c, st);
		return cat_fail(c, err, rc, "integrity check");
	}
	*msg = cat_col_str(st, 0);
	*ok = *msg && strcmp(*msg, "ok") == 0;
	cat_done(c, st);
	if (*ok && c->readonly) {
		/* FTS5 checks itself only through an INSERT. */
		free(*msg);
		*msg = xstrdup("ok (full-text index not checked: read only)");
	} else if (*ok) {
		/* The full-text index must agree with the documents too. */
		char *e = NULL;
		if (sqlite3_exec(c->db, "INSERT INTO fts_words(fts_words) VALUES('integrity-check')", NULL,
				 NULL, &e) != SQLITE_OK) {
			free(*msg);
			*msg = xasprintf("full-text index: %s", e ? e : "integrity check failed");
			*ok = false;
		}
		sqlite3_free(e);
	}
	return 0;
}
