/* fifo_move.c — the writer's delete, restore and purge items: a session's
 * directory moves to the trash, back, or away for good. Each ends the round
 * being prepared and runs on its own (fifo_writer.c). */
#include "persist/fifo_int.h"

#include <string.h>

/* Whether the catalog says the session is running. */
static bool row_running(struct fifo *f, const char *id)
{
	struct cat_session row;
	struct cerr e;
	if (catalog_get(f->cat, id, &row, &e) < 0)
		return false;
	bool running = row.status && strcmp(row.status, "running") == 0;
	cat_session_release(&row);
	return running;
}

/* A move that is done while the catalog could not record it. */
static void behind(struct fifo_item *it, const struct cerr *e)
{
	it->rcpt.catalog_behind = true;
	it->rcpt.catalog_err = *e;
}

/* This writer's own handle goes first (it holds the lock); a session
 * held or running here, or locked elsewhere (the store's lock_take), stays.
 * A row left running by a crash (no handle here, the lock free) is stale:
 * it does not keep the session. */
void fifo_move_run(struct fifo *f, struct fifo_item *it)
{
	struct fifo_sess *w = fifo_sess_get(f, it->session);
	struct cerr err = {0};
	if (it->kind != FIFO_RESTORE && w->held) {
		cerr_set(&err, CERR_LOCKED, 0, "session '%s' is open", w->id);
		goto fail;
	}
	if (it->kind != FIFO_RESTORE && w->lg && row_running(f, w->id)) {
		cerr_set(&err, CERR_LOCKED, 0, "session '%s' is running", w->id);
		goto fail;
	}
	fifo_sess_close_log(f, w);
	struct session_ref ref;
	struct cerr e;
	if (it->kind == FIFO_DELETE) {
		int64_t at = 0;
		if (store_resolve(f->st, it->session, &ref, &err) < 0 ||
		    strcmp(ref.id, it->session) != 0 || store_trash(f->st, &ref, &at, &err) < 0)
			goto fail;
		it->rcpt.deleted_at = at;
		/* Moved: done, even when the catalog is not told (its next
		 * sync sees where the session is). */
		if (catalog_set_deleted(f->cat, ref.id, at, &e) < 0 && e.cls != CERR_MISSING)
			behind(it, &e);
	} else if (it->kind == FIFO_RESTORE) {
		if (store_resolve_in(f->st, STORE_TRASH, it->session, &ref, &err) < 0 ||
		    store_restore(f->st, &ref, &err) < 0)
			goto fail;
		if (catalog_set_deleted(f->cat, ref.id, 0, &e) < 0 && e.cls != CERR_MISSING)
			behind(it, &e);
	} else {
		if (store_resolve_in(f->st, STORE_TRASH, it->session, &ref, &err) < 0 ||
		    store_purge(f->st, &ref, &err) < 0 || catalog_forget(f->cat, ref.id, &err) < 0 ||
		    catalog_drop_watermark(f->cat, ref.id, &err) < 0)
			goto fail;
	}
	return;
fail:
	fifo_fail_items(it, it, &err);
}
