/* catalog_wal.c — when the catalog's WAL is copied back into index.db, and
 * how big it may stay.
 *
 * A checkpoint writes the WAL's pages into index.db, growing it by every
 * page the WAL added; only once all of them are in can the WAL start again
 * from its beginning (and be truncated). On a full disk a checkpoint that
 * cannot finish still grows index.db as far as the free space goes, and
 * the next attempt again: it takes every byte freed before a log append
 * can, and gives back nothing. So a checkpoint starts only when the file
 * system has room for all the growth it needs; until then the WAL keeps
 * the pages (nothing is lost: the catalog only lags the logs), and no
 * reconciliation (catalog_sync) starts either: what it added to the WAL,
 * even failing, could only be given back by that copy.
 *
 * The WAL's size is bounded twice: journal_size_limit cuts the file back
 * to CATALOG_WAL_LIMIT when it starts again, and a connection closing
 * (the end of every command) copies everything back and truncates it to
 * zero bytes when no other connection is in the way. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "persist/fsops.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define AUTO_CKPT_FRAMES 1000 /* SQLite's own default for wal_autocheckpoint */
#define SHM_CHUNK 32768	      /* SQLite sizes the -shm in steps of this */

/* Bytes index.db must grow by to take every page the WAL holds; -1 when
 * that cannot be told. */
static int64_t ckpt_growth(struct catalog *c)
{
	struct cerr err;
	int64_t pages = -1, page_size = -1;
	sqlite3_stmt *st = cat_prepare(c, "SELECT page_count, page_size FROM pragma_page_count(),"
					  " pragma_page_size()", &err);
	if (st && sqlite3_step(st) == SQLITE_ROW) {
		pages = sqlite3_column_int64(st, 0);
		page_size = sqlite3_column_int64(st, 1);
	}
	cat_done(c, st);
	struct stat sb;
	if (pages < 0 || page_size <= 0 || fsops->fstatat(c->rootfd, CATALOG_FILE, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	int64_t need = pages * page_size - (int64_t)sb.st_size;
	return need > 0 ? need : 0;
}

bool cat_ckpt_room(struct catalog *c)
{
	if (c->memory)
		return true; /* nothing is copied to disk */
	int64_t need = ckpt_growth(c);
	if (need <= 0)
		return true; /* no growth, or unknown: let SQLite try */
	struct statvfs vs;
	if (fstatvfs(c->rootfd, &vs) < 0)
		return true;
	return (uint64_t)vs.f_bavail * vs.f_frsize >= (uint64_t)need;
}

bool cat_shm_room(int rootfd)
{
	struct stat wal, shm;
	if (fsops->fstatat(rootfd, CATALOG_FILE "-wal", &wal, AT_SYMLINK_NOFOLLOW) < 0)
		wal.st_size = 0;
	if (fsops->fstatat(rootfd, CATALOG_FILE "-shm", &shm, AT_SYMLINK_NOFOLLOW) < 0)
		shm.st_size = shm.st_blocks = 0;
	/* 32 KiB of index per 4096 frames of (about) 4 KiB pages. */
	uint64_t need = SHM_CHUNK * (1 + (uint64_t)wal.st_size / (4096 * (24 + 4096)));
	if ((uint64_t)shm.st_size >= need)
		return true; /* sized already (by a live connection, or one before) */
	struct statvfs vs;
	if (fstatvfs(rootfd, &vs) < 0)
		return true;
	/* The first connection cuts it to nothing and sizes it again. */
	return (uint64_t)vs.f_bavail * vs.f_frsize + (uint64_t)shm.st_blocks * 512 >= need;
}

static int on_wal(void *ctx, sqlite3 *db, const char *name, int frames)
{
	(void)db, (void)name;
	((struct catalog *)ctx)->wal_frames = frames;
	return SQLITE_OK;
}

void cat_wal_init(struct catalog *c)
{
	/* Replaces SQLite's automatic checkpoint (cat_wal_after_commit does
	 * it, when there is room). */
	sqlite3_wal_hook(c->db, on_wal, c);
}

void cat_wal_after_commit(struct catalog *c)
{
	if (c->manual_ckpt || c->wal_frames < AUTO_CKPT_FRAMES || !cat_ckpt_room(c))
		return;
	if (sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) == SQLITE_OK)
		c->wal_frames = 0;
}

void cat_wal_close(struct catalog *c)
{
	if (c->memory)
		return;
	if (c->readonly || !cat_ckpt_room(c)) {
		/* Nor may sqlite3_close try it (the last connection out
		 * copies the WAL back and deletes it). */
		sqlite3_db_config(c->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
		return;
	}
	/* Without waiting: another connection in the way makes it a passive
	 * checkpoint, and the WAL stays for whoever closes last. */
	sqlite3_busy_timeout(c->db, 0);
	sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
}

void catalog_manual_checkpoints(struct catalog *c)
{
	c->manual_ckpt = true;
}

int catalog_wal_frames(const struct catalog *c)
{
	return c->wal_frames;
}

int catalog_checkpoint(struct catalog *c, struct cerr *err)
{
	if (!cat_ckpt_room(c))
		return cerr_set(err, CERR_IO, 0, "catalog: checkpoint: no room to grow '%s'",
				CATALOG_FILE);
	int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	return rc == SQLITE_OK ? 0 : cat_fail(c, err, rc, "checkpoint");
}
