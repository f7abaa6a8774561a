/* catalog_schema.c — the catalog's tables, and bringing an older index.db
 * to this build's schema: 3 to 6 migrate in place to 7, anything older
 * is dropped and created again (everything in it is derived from the logs
 * but the watermarks). */
#include "persist/catalog.h"
#include "persist/catalog_int.h"


/* The word index holds the segments of ended turns' text (and text
 * outside any turn); an open turn's text after its last cut waits in docs,
 * indexed = 0, and a search reads it there (catalog_query.c,
 * catalog_docs.c). */
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

/* A row is a segment of a role's text in a turn (part 0, 1, ...), or of
 * an open turn a piece of the text after its last cut (indexed = 0, tail
 * its bytes up to and including the piece), or text outside any turn
 * (part = the event's seq). */
#define DOCS_SQL \
	"CREATE TABLE docs (" \
	"  docid INTEGER PRIMARY KEY," \
	"  session TEXT NOT NULL," \
	"  turn TEXT NOT NULL," \
	"  role TEXT NOT NULL," \
	"  part INTEGER NOT NULL DEFAULT 0," \
	"  body TEXT NOT NULL," \
	"  indexed INTEGER NOT NULL DEFAULT 1," /* 0 while its turn is open */ \
	"  tail INTEGER NOT NULL DEFAULT 0," \
	"  UNIQUE(session, turn, role, part)" \
	");" \
	"CREATE INDEX docs_open ON docs(session) WHERE indexed = 0;"

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
	DOCS_SQL
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

/* Schema 6 to 7: documents are segments (part), an open turn's text the
 * pieces its batches brought (tail). The rows keep their docids, so the
 * word index stays as it is; an old document is one segment, cut when
 * text is next added to it. */
static const char migrate_6_sql[] =
	"DROP TRIGGER docs_ai; DROP TRIGGER docs_ad; DROP TRIGGER docs_au; DROP INDEX docs_open;"
	"ALTER TABLE docs RENAME TO docs_6;"
	DOCS_SQL
	"INSERT INTO docs (docid, session, turn, role, part, body, indexed, tail)"
	" SELECT docid, session, turn, role,"
	"  row_number() OVER (PARTITION BY session, turn, role ORDER BY docid) - 1, body, indexed,"
	"  CASE WHEN indexed THEN 0 ELSE length(CAST(body AS BLOB)) END FROM docs_6;"
	"DROP TABLE docs_6;"
	DOCS_TRIGGERS;

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

int cat_schema_upgrade(struct catalog *c, struct cerr *err)
{
	sqlite3_stmt *q = cat_prepare(c, "PRAGMA user_version", err);
	if (!q)
		return -1;
	int version = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
	cat_done(c, q);
	if (version > CATALOG_SCHEMA) {
		cerr_set(err, CERR_UNSUPPORTED, 0,
			 "catalog '%s' has schema %d, newer than this cairn's %d ('cairn doctor --reindex' rebuilds it)",
			 c->path, version, CATALOG_SCHEMA);
		return -1;
	}
	if (version < CATALOG_SCHEMA) {
		if (cat_exec(c, "BEGIN IMMEDIATE", err) < 0)
			return -1;
		q = cat_prepare(c, "PRAGMA user_version", err);
		version = q && sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
		cat_done(c, q);
		/* Schema 3 lacks an index, 4 the mark of open turns' text, 5
		 * the watermarks' own table, 6 the segments of documents. Older ones are dropped, not
		 * migrated: everything in them is derived from the logs, and
		 * the next sync projects them again (their watermarks are
		 * lost, which only makes them lag until a writer heals them). */
		int r = 0;
		if (version >= 3 && version <= 6)
			r = (version == 3 && cat_exec(c, migrate_3_sql, err) < 0) ||
					    (version <= 4 && cat_exec(c, migrate_4_sql, err) < 0) ||
					    (version <= 5 && (cat_exec(c, migrate_5_sql, err) < 0 ||
							      cat_migrate_5(c, err) < 0 ||
							      cat_exec(c, migrate_5_drop_sql, err) < 0)) ||
					    cat_exec(c, migrate_6_sql, err) < 0 ? -1 : 0;
		else if (version >= 0 && version < CATALOG_SCHEMA)
			r = (version > 0 && cat_exec(c, drop_sql, err) < 0) ||
					    cat_exec(c, schema_sql, err) < 0 ? -1 : 0;
		if (r == 0 && version >= 0 && version < CATALOG_SCHEMA)
			r = cat_exec(c, "PRAGMA user_version=" CATALOG_SCHEMA_STR, err);
		if (r < 0) {
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
			return -1;
		}
		if (cat_exec(c, "COMMIT", err) < 0)
			return -1;
	}
	return 0;
}
