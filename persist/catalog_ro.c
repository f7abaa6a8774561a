/* catalog_ro.c — opening the catalog to read it where nothing can be
 * written: a full disk, a read-only data root.
 *
 * A WAL database is read through its -wal and the -shm index of it. Three
 * ways, the first that works:
 *   1. mode=ro: the -shm shared with other connections, as any reader.
 *      The first connection sizes it again: not tried without room for
 *      it (a full disk), where it would take the space an append needs.
 *   2. mode=ro&readonly_shm=1: the -shm only read; when nobody keeps it
 *      up to date SQLite reads the WAL into memory instead. Needs the -wal
 *      and -shm files to exist (a read-only root cannot create them).
 *   3. immutable=1: index.db alone, no -wal, -shm or locks. Only when the
 *      WAL holds no frames: then index.db holds every commit (a clean close
 *      copied them back), and nobody can be writing on such a root.
 *
 * Where index.db cannot be read at all (none on a read-only root, another
 * schema, damage), a catalog in memory is filled from the logs themselves
 * by the same reconciliation (catalog_sync) that keeps index.db: the same
 * queries then list and search them, and nothing reaches the disk. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/buf.h"
#include "base/xalloc.h"
#include "persist/fsops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WAL_HEADER 32 /* a WAL of this size or less holds no frame */

/* file:<path>?<query> with the path percent-encoded. Caller frees. */
static char *uri_of(const char *path, const char *query)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("/-._~", *p)) {
			buf_addc(&b, (char)*p);
		} else {
			char hex[4];
			snprintf(hex, sizeof hex, "%%%02X", *p);
			buf_adds(&b, hex);
		}
	}
	buf_addc(&b, '?');
	buf_adds(&b, query);
	return buf_detach(&b, NULL);
}

/* Open one way and read the schema version (the first read is what needs
 * the -wal and -shm). */
static int try_open(struct catalog *c, const char *query, struct cerr *err)
{
	char *uri = uri_of(c->path, query);
	int rc = sqlite3_open_v2(uri, &c->db,
				 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
					 SQLITE_OPEN_NOFOLLOW,
				 NULL);
	free(uri);
	if (rc != SQLITE_OK)
		return cat_fail(c, err, rc, "open");
	/* Never a checkpoint from here, not even by the last one out. */
	sqlite3_db_config(c->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	if (cat_setup_connection(c, err) < 0)
		return -1;
	sqlite3_stmt *q = cat_prepare(c, "PRAGMA user_version", err);
	if (!q)
		return -1;
	rc = sqlite3_step(q);
	int version = rc == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
	cat_done(c, q);
	if (rc != SQLITE_ROW)
		return cat_fail(c, err, rc, "read");
	if (version > CATALOG_SCHEMA)
		return cerr_set(err, CERR_UNSUPPORTED, 0,
				"catalog '%s' has schema %d, newer than this cairn's %d", c->path, version,
				CATALOG_SCHEMA);
	if (version != CATALOG_SCHEMA)
		return cerr_set(err, CERR_UNSUPPORTED, 0,
				"catalog '%s' has schema %d, not this cairn's %d (a command that writes "
				"updates it)", c->path, version, CATALOG_SCHEMA);
	return 0;
}

static void drop_connection(struct catalog *c)
{
	for (size_t i = 0; i < c->n_cache; i++)
		sqlite3_finalize(c->cache[i].st);
	c->n_cache = 0;
	sqlite3_close_v2(c->db);
	c->db = NULL;
}

/* Does the WAL hold no frame (or not exist)? */
static bool wal_empty(int rootfd)
{
	struct stat sb;
	if (fsops->fstatat(rootfd, CATALOG_FILE "-wal", &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	return S_ISREG(sb.st_mode) && sb.st_size <= WAL_HEADER;
}

int catalog_open_ro(struct store *st, struct catalog **out, struct cerr *err)
{
	static const char *const ways[] = {"mode=ro", "mode=ro&readonly_shm=1", "immutable=1"};
	struct stat sb;
	if (fsops->fstatat(store_root_fd(st), CATALOG_FILE, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return cerr_set(err, errno == ENOENT ? CERR_MISSING : CERR_IO, errno,
				"cannot open catalog '%s/%s'", store_root(st), CATALOG_FILE);
	if (!S_ISREG(sb.st_mode))
		return cerr_set(err, CERR_IO, 0, "catalog '%s/%s' is not a regular file",
				store_root(st), CATALOG_FILE);
	struct catalog *c = xcalloc(1, sizeof *c);
	c->rootfd = store_root_fd(st);
	c->path = xasprintf("%s/%s", store_root(st), CATALOG_FILE);
	c->readonly = true;
	struct cerr first = {0};
	for (size_t i = 0; i < sizeof ways / sizeof *ways; i++) {
		if (i == 0 && !cat_shm_room(c->rootfd))
			continue;
		if (i == 2 && !wal_empty(c->rootfd))
			break; /* index.db alone would miss commits, or half of one */
		struct cerr e;
		if (try_open(c, ways[i], &e) == 0) {
			*out = c;
			return 0;
		}
		if (e.cls == CERR_UNSUPPORTED) {
			first = e;
			break; /* read as it is: another way reads the same */
		}
		if (first.cls == CERR_OK)
			first = e;
		drop_connection(c);
	}
	*err = first;
	catalog_close(c);
	return -1;
}

int catalog_open_memory(struct store *st, struct catalog **out, struct cerr *err)
{
	struct catalog *c = xcalloc(1, sizeof *c);
	c->rootfd = store_root_fd(st);
	c->path = xstrdup(":memory:");
	c->memory = true;
	int rc = sqlite3_open_v2(":memory:", &c->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		cat_fail(c, err, rc, "open in memory");
	/* No watermark is known here: each log is read by its structure
	 * alone, as any reader without the catalog reads it. */
	if (rc != SQLITE_OK || cat_setup_connection(c, err) < 0 || cat_create_schema(c, err) < 0 ||
	    catalog_sync(c, st, NULL, err) < 0) {
		catalog_close(c);
		return -1;
	}
	*out = c;
	return 0;
}

bool catalog_in_memory(const struct catalog *c)
{
	return c->memory;
}

bool catalog_readonly(const struct catalog *c)
{
	return c->readonly;
}
