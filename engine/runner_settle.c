/* runner_settle.c — settlement (runner.h step 5): the marker's identity
 * checked, the rest of the turn taken from the capture and saved by a full
 * save once its items in flight completed, the receipt adopted, the owner
 * told, the marker "settled" published and the turn freed. */
#include "engine/runner_int.h"

#include <stdlib.h>

/* The turn is settled (err NULL) or its full save failed: tell the owner,
 * say so, then release the session. */
static void settled(struct turn *t, uint64_t next_seq, uint64_t version, const struct cerr *err)
{
	struct runner *r = t->r;
	if (!err && t->saving)
		runner_add_to_context(t, t->saving);
	if (r->d.settled) {
		struct runner_settlement st = {
			.session = t->session, .turn = t->id, .op = t->op, .outcome = t->outcome,
			.ok = !err, .next_seq = next_seq, .version = version, .err = err,
		};
		if (err) {
			st.unsaved = t->saving ? t->saving : cJSON_CreateArray();
			t->saving = NULL;
			st.unsaved_seq = t->saving_seq;
			st.unsaved_version = t->cap ? capture_version(t->cap) : t->version;
		}
		r->d.settled(r->d.ud, &st);
		cJSON_Delete(st.unsaved);
	}
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "turn", t->id);
	if (err) {
		cJSON_AddBoolToObject(m, "ok", 0);
		cJSON *e = cJSON_AddObjectToObject(m, "error");
		cJSON_AddStringToObject(e, "class", cerr_class_name(err->cls));
		cJSON_AddStringToObject(e, "message", err->msg);
	} else {
		cJSON_AddBoolToObject(m, "ok", 1);
		cJSON_AddNumberToObject(m, "next_seq", (double)next_seq);
		cJSON_AddNumberToObject(m, "version", (double)version);
	}
	sink_publish_marker(r->d.sink, &t->op, SINK_MARKER_SETTLED, m);
	cJSON_Delete(m);
	runner_unlink(r, t);
	runner_turn_free(t);
}

/* The full save's receipt is adopted as it is: never a re-read. */
static void full_save_done(struct fifo_item *it, void *ctx, const struct fifo_receipt *rc,
			   const struct cerr *err)
{
	(void)it;
	struct turn *t = ctx;
	if (!err)
		runner_publish_durable(t, t->saving, t->saving_seq);
	settled(t, err ? 0 : rc->next_seq, err ? 0 : rc->content_version, err);
}

static void save_when_drained(struct capture *c, void *ctx, const struct cerr *drain_err)
{
	(void)drain_err; /* a failed item: the full save writes its events again */
	struct turn *t = ctx;
	uint64_t lost_seq;
	cJSON *lost = capture_take_lost(c, &lost_seq);
	if (cJSON_GetArraySize(lost) > 0) {
		for (cJSON *e; (e = cJSON_DetachItemFromArray(t->saving, 0));)
			cJSON_AddItemToArray(lost, e);
		cJSON_Delete(t->saving);
		t->saving = lost;
		t->saving_seq = lost_seq;
	} else {
		cJSON_Delete(lost);
	}
	struct fifo_item *it = fifo_full_save(t->session, t->saving_seq, capture_version(c),
					      cJSON_Duplicate(t->saving, 1));
	struct cerr err;
	if (fifo_post(t->r->d.fifo, it, full_save_done, t, &err) < 0)
		settled(t, 0, 0, &err);
}

int runner_settle(struct runner *r, const struct sink_op *op, struct cerr *err)
{
	struct turn *t = runner_find(r, op->session);
	if (!t || !sink_op_same(&t->op, op) || t->st != TURN_ENDED)
		return cerr_set(err, CERR_CONFLICT, 0,
				"no turn of session '%s' waits to be settled as %llu/%llu", op->session,
				(unsigned long long)op->generation, (unsigned long long)op->operation);
	t->st = TURN_SETTLING;
	if (!t->cap) {
		/* Never started: nothing of the turn is in the log. */
		settled(t, t->next_seq, t->version, NULL);
		return 0;
	}
	cJSON *rest;
	capture_take(t->cap, &rest, &t->saving_seq);
	t->saving = rest;
	/* The full save expects the version after every history item of the
	 * turn: wait for those still in flight first. */
	if (capture_commit(t->cap, save_when_drained, t) < 0) {
		t->st = TURN_ENDED;
		return cerr_set(err, CERR_USAGE, 0, "the turn's capture is closing");
	}
	return 0;
}
