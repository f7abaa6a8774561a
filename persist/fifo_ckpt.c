/* fifo_ckpt.c — checkpoints of the FIFO's catalog, mostly on a helper.
 *
 * A checkpoint copies the WAL back into index.db: it syncs the WAL, writes
 * the pages and syncs index.db, some milliseconds for a WAL of 1000 pages.
 * Run by SQLite after a commit, it would stop the writer that long, and
 * with it every save. So the writer commits without automatic checkpoints
 * and a helper, on a connection of its own, copies back what the WAL holds
 * while the writer goes on. That copy can never finish the WAL: the writer
 * appended more meanwhile, and the WAL starts again from its beginning only
 * once every frame in it has been copied back. So the writer copies that
 * rest itself, a few pages, after its next commit: then the next
 * transaction writes the WAL from its start again, and the WAL stays near
 * CKPT_FRAMES pages.
 *
 *   CK_IDLE --(CKPT_FRAMES new frames)--> CK_COPYING --(helper done)-->
 *   CK_COPIED --(writer copies the rest)--> CK_IDLE
 *
 * A failed checkpoint changes nothing on disk that matters (the WAL keeps
 * the pages); the next one tries again. */
#include "persist/fifo_int.h"

#define CKPT_FRAMES 1000 /* WAL frames written before a checkpoint starts */
#define CKPT_BOUND 3000  /* frames written meanwhile before the writer waits */

/* The helper: copy back what the WAL holds now. */
static void fifo_ckpt_run(void *arg)
{
	struct fifo *f = arg;
	struct cerr err;
	if (catalog_checkpoint(f->ck_cat, &err) == 0)
		atomic_fetch_add(&f->ck_done, 1);
	atomic_store(&f->ck_state, CK_COPIED);
}

unsigned long fifo_helper_checkpoints(struct fifo *f)
{
	return atomic_load(&f->ck_done);
}

/* The transition after a commit of the writer (no transaction open). */
void fifo_ckpt_after_commit(struct fifo *f)
{
	int frames = catalog_wal_frames(f->cat);
	if (frames < f->ck_mark)
		f->ck_mark = 0; /* the WAL started again */
	switch ((enum ckpt_state)atomic_load(&f->ck_state)) {
	case CK_COPYING:
		if (frames - f->ck_mark < CKPT_BOUND)
			return;
		pool_wait(f->pool, &f->ck_job); /* helpers all busy: wait for it */
		/* fall through */
	case CK_COPIED: {
		pool_wait(f->pool, &f->ck_job);
		struct cerr err;
		catalog_checkpoint(f->cat, &err); /* the rest: a few pages */
		atomic_store(&f->ck_state, CK_IDLE);
		return;
	}
	case CK_IDLE:
		break;
	}
	if (frames - f->ck_mark < CKPT_FRAMES)
		return;
	struct cerr err;
	if (!f->ck_cat && f->helpers && catalog_open(f->st, &f->ck_cat, &err) < 0)
		f->ck_cat = NULL;
	if (!f->ck_cat) {
		catalog_checkpoint(f->cat, &err); /* no helper (or no connection): here, then */
		f->ck_mark = frames;
		return;
	}
	f->ck_mark = frames;
	atomic_store(&f->ck_state, CK_COPYING);
	f->ck_job = (struct pool_job){.fn = fifo_ckpt_run, .arg = f};
	pool_submit(f->pool, &f->ck_job);
}

/* The writer goes idle: copy the rest now if the helper is done. */
void fifo_ckpt_idle(struct fifo *f)
{
	if (atomic_load(&f->ck_state) == CK_COPIED)
		fifo_ckpt_after_commit(f);
}

void fifo_ckpt_stop(struct fifo *f)
{
	if (atomic_load(&f->ck_state) != CK_IDLE)
		pool_wait(f->pool, &f->ck_job);
	atomic_store(&f->ck_state, CK_IDLE);
	catalog_close(f->ck_cat);
	f->ck_cat = NULL;
}
