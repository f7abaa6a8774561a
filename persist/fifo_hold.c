/* fifo_hold.c — sessions held open for the FIFO's owner (DESIGN §4.5).
 *
 * An open makes the writer's handle of the session the one its host runs
 * on: it takes the writer lock (on the writer's own descriptor, so it
 * stays taken while the host runs), reads the log, cuts a torn tail and
 * closes an interrupted turn (repair.c), whatever the catalog says, since
 * only the lock holder can tell that a turn marked running is over. The
 * session's row is then rebuilt from the log, and the item completes with
 * the session as read: read and parsed on a helper while the writer goes
 * on with the batch's other sessions; an item of the session, and the
 * batch's delivery, wait for it (fifo_hold_wait). While held, the handle cache (fifo_sess.c) never
 * closes it; a release closes it, which releases the lock. */
#include "persist/fifo_int.h"
#include "base/xalloc.h"
#include "persist/prepare.h"
#include "persist/repair.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

/* The session as the host gets it: the log read from the writer's
 * descriptor and prepared (prepare.h), owned by the caller. The one read
 * and parse of an open. */
static int hold_read(const struct log *lg, struct prepared **out, struct cerr *err)
{
	return prepare_fd(log_fd(lg), NULL, out, err);
}

/* The helper: read the session for the open that is out. */
static void hold_read_job(void *arg)
{
	struct fifo_sess *w = arg;
	w->read_rc = hold_read(w->lg, &w->read_item->rcpt.prepared, &w->read_item->err);
}

/* Wait for w's read and complete its open (writer thread). */
static void read_end(struct fifo *f, struct fifo_sess *w)
{
	pool_wait(f->pool, &w->read_job);
	struct fifo_item *it = w->read_item;
	w->read_item = NULL;
	if (w->read_rc < 0) {
		it->failed = true; /* it->err set by the read */
		w->held = false;
		fifo_sess_close_log(f, w);
	}
}

void fifo_hold_wait(struct fifo *f, const char *session)
{
	size_t i = 0;
	while (i < f->n_reading) {
		struct fifo_sess *w = f->reading[i];
		if (session && strcmp(w->id, session) != 0) {
			i++;
			continue;
		}
		read_end(f, w);
		f->reading[i] = f->reading[--f->n_reading];
	}
}

void fifo_hold_open(struct fifo *f, struct fifo_item *it)
{
	struct fifo_sess *w = fifo_sess_get(f, it->session);
	struct cerr err = {0};
	if (w->held) {
		/* Its repair would close the turn its host is running. */
		cerr_set(&err, CERR_USAGE, 0, "session '%s' is already open", w->id);
		goto fail;
	}
	if (fifo_sess_ensure_log(f, w, it, &err) < 0)
		goto fail;
	fifo_lane_quiesce(f, w); /* the log is read and appended to here */
	struct repair_report rep;
	if (repair_log(w->lg, &rep, &err) < 0)
		goto fail;
	cJSON_Delete(rep.closers);
	it->rcpt.cut_bytes = rep.cut_bytes;
	it->rcpt.closers = rep.appended;
	uint64_t v = log_next_seq(w->lg);
	struct cerr e;
	/* Repaired and held by us: no turn runs, whatever the row said (a
	 * dead process's `running`, or `unsaved`). */
	if (fifo_sess_refresh(f, w, &e) == 0 && catalog_set_status(f->cat, w->id, NULL, &e) == 0) {
		w->failed = false; /* the row is the log's again: nothing to recover */
		w->behind = false;
	} else {
		/* Durable and open: the row lags until a write rebuilds it. */
		w->behind = true;
		it->rcpt.catalog_behind = true;
		it->rcpt.catalog_err = e;
	}
	/* Repaired and projected: its parsed events are no longer needed
	 * while it is held (the host gets its own read below), and for a long
	 * log they are many times its size. */
	log_drop_scan(w->lg);
	xalloc_trim();
	w->acked = true;
	w->acked_version = w->version = v;
	it->rcpt.next_seq = it->rcpt.content_version = v;
	w->held = true;
	/* The read runs on a helper while the writer goes on with other
	 * sessions; it completes before this batch is delivered. */
	w->read_item = it;
	w->read_job = (struct pool_job){.fn = hold_read_job, .arg = w};
	pool_submit(f->pool, &w->read_job);
	f->reading = xreallocarray(f->reading, f->n_reading + 1, sizeof *f->reading);
	f->reading[f->n_reading++] = w;
	return;
fail:
	fifo_fail_items(it, it, &err);
}

void fifo_hold_release(struct fifo *f, struct fifo_item *it)
{
	struct fifo_sess *w = fifo_sess_get(f, it->session);
	w->held = false;
	fifo_sess_close_log(f, w);
}
