/* fifo_hold.c — sessions held open for the FIFO's owner (DESIGN §4.5).
 *
 * An open makes the writer's handle of the session the one its host runs
 * on: it takes the writer lock (on the writer's own descriptor, so it
 * stays taken while the host runs), reads the log once, compactly (load.h:
 * no JSON tree per event), cuts a torn tail, sweeps orphan blobs and
 * closes an interrupted turn (repair.c) from that read, whatever the
 * catalog says, since only the lock holder can tell that a turn marked
 * running is over. The session's row is then rebuilt from the log when it
 * is not current, and the item completes with the session prepared from
 * the same read (prepare.h) on a helper while the writer goes on with the
 * batch's other sessions; an item of the session, and the batch's
 * delivery, wait for it (fifo_hold_wait). Only a repair that changed the
 * file, or a handle that was already open, reads it again. While held, the handle cache (fifo_sess.c) never
 * closes it; a release closes it, which releases the lock. */
#include "persist/fifo_int.h"
#include "base/xalloc.h"
#include "persist/prepare.h"
#include "persist/repair.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

/* The session as the host gets it, prepared (prepare.h), owned by the
 * caller: from l, the compact read the writer's handle made when it
 * opened the log and repaired from (taken over), the one read of an open;
 * when the handle has none of the file as it is now (a repair cut a torn
 * tail or appended closers, the handle was already open, the catalog row
 * was rebuilt), the log read again from the writer's descriptor. */
static int hold_read(const struct log *lg, struct load *l, struct prepared **out,
		     struct cerr *err)
{
	if (l) {
		*out = prepare_load(l);
		return 0;
	}
	return prepare_fd(log_fd(lg), NULL, out, err);
}

/* The helper: prepare the session for the open that is out. */
static void hold_read_job(void *arg)
{
	struct fifo_sess *w = arg;
	struct load *l = w->read_load;
	w->read_load = NULL;
	w->read_rc = hold_read(w->lg, l, &w->read_item->rcpt.prepared, &w->read_item->err);
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
	/* The read repair worked from, if it is still the file: what the
	 * host gets, prepared below. */
	struct load *read = log_take_load(w->lg);
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
	/* Repaired and projected: the handle keeps no read while it is held
	 * (the host gets the open's read, below; a row rebuilt above parsed
	 * every event, many times the log's size). */
	log_drop_scan(w->lg);
	xalloc_trim();
	w->acked = true;
	w->acked_version = w->version = v;
	it->rcpt.next_seq = it->rcpt.content_version = v;
	w->held = true;
	/* The read runs on a helper while the writer goes on with other
	 * sessions; it completes before this batch is delivered. */
	w->read_item = it;
	w->read_load = read;
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
