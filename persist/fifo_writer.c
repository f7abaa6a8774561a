/* fifo_writer.c — how the FIFO's writer thread executes a batch: it walks
 * the items in post order and hands each to what runs it. Appends
 * (history, full save, meta) go into the current round (fifo_round.c);
 * adjacent history items of one session are merged into one append first.
 * Delete, restore and purge end the round and run on their own
 * (fifo_move.c), as do open and release (fifo_hold.c). A draft touches no log (fifo_draft.c). A barrier does
 * nothing here: batches are delivered in order, so it completes after
 * every item posted before it, those of the round in flight included. */
#include "persist/fifo_int.h"

#include <stdlib.h>
#include <string.h>

#define MERGE_MAX_EVENTS 4096 /* events in one merged history append */

/* May `b` be merged into the history group ending at `a`? */
static bool mergeable(const struct fifo_item *a, const struct fifo_item *b, size_t n)
{
	return b && a->kind == FIFO_HISTORY && b->kind == FIFO_HISTORY &&
	       strcmp(a->session, b->session) == 0 && !b->create &&
	       b->expected_seq == a->expected_seq + (uint64_t)cJSON_GetArraySize(a->events) &&
	       n + (size_t)cJSON_GetArraySize(b->events) <= MERGE_MAX_EVENTS;
}

void fifo_writer_process(struct fifo *f, struct fifo_item *batch)
{
	struct round *r = fifo_round_new(f, batch);
	for (struct fifo_item *it = batch; it;) {
		struct fifo_item *last = it;
		size_t n = (size_t)cJSON_GetArraySize(it->events);
		while (mergeable(last, last->next, n)) {
			n += (size_t)cJSON_GetArraySize(last->next->events);
			last = last->next;
		}
		struct fifo_item *next = last->next;
		if (f->n_reading && it->kind != FIFO_BARRIER && it->kind != FIFO_DRAFT)
			fifo_hold_wait(f, it->session); /* nothing written while an open reads */
		if (it->kind == FIFO_BARRIER) {
			/* Nothing to do: it completes with its batch, which is
			 * delivered after every earlier batch, the round in flight
			 * included (fifo_round_commit settles it). */
		} else if (it->kind == FIFO_DRAFT) {
			next = fifo_draft_run(f, it)->next; /* no log: nothing to commit first */
		} else if (it->kind == FIFO_DELETE || it->kind == FIFO_RESTORE || it->kind == FIFO_PURGE) {
			fifo_round_commit(r, false);
			fifo_move_run(f, it);
		} else if (it->kind == FIFO_OPEN || it->kind == FIFO_RELEASE) {
			fifo_round_commit(r, false); /* what it wrote is settled first */
			if (it->kind == FIFO_OPEN)
				fifo_hold_open(f, it);
			else
				fifo_hold_release(f, it);
		} else {
			fifo_round_prepare(r, it, last);
		}
		it = next;
	}
	fifo_hold_wait(f, NULL); /* the opens complete with their batch */
	fifo_round_end(r);
}

void fifo_writer_idle(struct fifo *f)
{
	struct cerr err;
	if (f->n_durable && catalog_begin(f->cat, &err) == 0) {
		if (!fifo_sess_durable_record(f, false))
			catalog_rollback(f->cat); /* kept for the next transaction */
		else if (catalog_commit(f->cat, &err) == 0)
			f->n_durable = 0;
	}
	fifo_sess_sweep(f);
	fifo_ckpt_idle(f);
}

void fifo_writer_free(struct fifo *f)
{
	fifo_ckpt_stop(f);
	fifo_sess_free_all(f);
	free(f->reading);
	f->reading = NULL;
}
