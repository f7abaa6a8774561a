/* catalog_live.c — what a row's status means at the moment it is read.
 *
 * `running` is set by the writer that holds the session's lock (its
 * process runs a turn) and cleared by its full save. A process that dies
 * mid-turn leaves the row `running` while the kernel drops its lock: such
 * a row is stale, and readers see it as what opening the session will
 * find (DESIGN §4.5): `interrupted` when its log has a turn open, `idle`
 * when it has none (the process died after its full save reached the
 * log, before the catalog recorded it; a listing has brought the row up
 * to the log since) — so the browser shows it truthfully and delete and
 * purge are not refused because of it. The row itself is left alone: the
 * next writer of the session rewrites it. */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "persist/fsops.h"
#include "persist/lock.h"

#include <fcntl.h>
#include <string.h>

/* Is the lock of <area>/<key>/<id> free? false when it is held or that
 * cannot be told (a row stays `running` unless we know better). */
static bool lock_free(struct catalog *c, const char *area, const char *key, const char *id)
{
	if (!key || !id)
		return false;
	const char *path[] = {area, key, id};
	int fd = c->rootfd;
	for (size_t i = 0; i < 3; i++) {
		int next = fsops->openat(fd, path[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		if (fd != c->rootfd)
			fs_close_quiet(fd);
		if (next < 0)
			return false; /* gone meanwhile: the next sync says so */
		fd = next;
	}
	bool held = true;
	struct cerr e;
	int rc = lock_probe(fd, &held, &e);
	fs_close_quiet(fd);
	return rc == 0 && !held;
}

const char *cat_live_status(struct catalog *c, const struct cat_session *s)
{
	if (!s->status || strcmp(s->status, "running") != 0)
		return s->status;
	if (!lock_free(c, s->deleted_at ? STORE_TRASH : STORE_SESSIONS, s->project_key, s->id))
		return s->status;
	return s->log_idle ? "idle" : "interrupted";
}
