/* readlog.c — one session's log read with its watermark (readlog.h). */
#include "persist/readlog.h"

#include <stdlib.h>
#include <string.h>

#include "persist/fsops.h"

int readlog_fd(int fd, const char *name, const char *want_id, const struct cat_watermark *wm,
	       struct scan **out, struct cerr *err)
{
	struct scan_opts o = catalog_scan_opts(wm);
	if (scan_fd_opts(fd, &o, out, err) < 0)
		return -1;
	struct scan *s = *out;
	/* The directory name is the session id: a log holding another
	 * session (or none) where this one belongs is damage, not this
	 * session; a log already damaged keeps its own reason. */
	if (want_id && (s->status == SCAN_OK || s->status == SCAN_TORN) &&
	    (!s->id || strcmp(s->id, want_id) != 0)) {
		s->status = SCAN_CORRUPT;
		cerr_set(&s->err, CERR_CORRUPT, 0, "'%s' holds session '%s', not '%s'", name,
			 s->id ? s->id : "?", want_id);
	}
	return 0;
}

int readlog_session(struct store *st, const struct session_ref *ref, bool *trash,
		    const struct cat_watermark *wm, struct scan **out, struct cerr *err)
{
	int fd = store_open_log_moved(st, ref, trash, err);
	if (fd < 0)
		return -1;
	char *name = store_log_path(st, ref, *trash);
	int ret = readlog_fd(fd, name, ref->id, wm, out, err);
	free(name);
	fs_close_quiet(fd);
	return ret;
}
