/* cli_catalog.c — how commands that touch logs keep the catalog in step:
 * they read with the durable watermark it recorded, and after a durable
 * write they record the new one (after the log's fsync, never before). */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/fsops.h"
#include "persist/log.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cli_watermark(struct store *st, const char *id, struct cat_watermark *o)
{
	memset(o, 0, sizeof *o);
	if (!st || !id)
		return;
	struct catalog *cat;
	struct cerr err;
	/* Read only: before a log append, nothing may take the space the
	 * append needs (an open for writing would copy the WAL back when
	 * it closes). */
	int r = catalog_open_ro(st, &cat, &err);
	if (r == 0) {
		r = catalog_get_watermark(cat, id, o, &err);
		catalog_close(cat);
	}
	/* No catalog holds no watermark; one that cannot be read (its WAL
	 * without the -shm on a read-only root, another schema, locked) may:
	 * never lose it without a word. */
	if (r < 0 && err.cls != CERR_MISSING)
		cli_printf(stderr, "cairn: warning: the durable watermark could not be read (%s): "
				   "damage at the end of the log cannot be told from a torn tail\n",
			   err.msg);
}

bool cli_heal(struct log *lg, const char *sid)
{
	const struct scan *s = log_scan(lg);
	struct cerr err;
	return sid && s && s->status == SCAN_OK && scan_wm_lags(s) && log_settle(lg, &err) == 0;
}

void cli_warn_behind(const char *why)
{
	cli_printf(stderr, "cairn: warning: saved; the catalog is behind (%s)\n", why);
}

/* Reconcile the whole catalog with the directories and record the
 * watermark; false with err when the catalog could not be updated. */
static bool reconcile(struct catalog *cat, struct store *st, const char *id,
		      const struct cat_watermark *wm, struct cerr *err)
{
	return catalog_sync(cat, st, NULL, err) == 0 &&
	       (!wm->known || catalog_set_watermark(cat, id, wm, err) == 0);
}

bool cli_note_durable(struct store *st, const char *id, struct log_mark dur)
{
	return cli_note_append(st, id, 0, 0, NULL, 0, dur);
}

bool cli_note_append(struct store *st, const char *id, uint64_t first_seq, int64_t batch_t,
		     const struct log_event *evs, size_t n, struct log_mark dur)
{
	if (!st || !id)
		return false;
	struct catalog *cat = NULL;
	struct cerr err;
	struct cat_watermark wm = catalog_watermark_of(dur);
	bool ok = catalog_open(st, &cat, &err) == 0;
	/* The batch onto the row as it was: one short transaction, the log
	 * not read again. A row that does not match (none yet, lagging,
	 * another writer's) is reconciled from the logs instead. */
	bool done = ok && n > 0 && wm.known &&
		    catalog_project_batch(cat, id, first_seq, batch_t, evs, n, &wm, NULL, &err) == 0;
	if (ok && !done)
		ok = reconcile(cat, st, id, &wm, &err);
	if (!ok)
		cli_warn_behind(err.msg);
	catalog_close(cat);
	return !ok;
}
