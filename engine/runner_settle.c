/* runner_settle.c — settlement (runner.h step 5): the marker's identity
 * checked, the rest of the turn taken from the capture and saved by the
 * journal's full save (after the turn's items in flight, and what failed
 * of them), the owner told, the marker "settled" published and the turn
 * freed. */
#include "engine/runner_int.h"

#include <stdlib.h>

/* The turn is settled (err NULL) or its full save failed: tell the owner,
 * say so, then release the session. */
static void settled(struct turn *t, uint64_t next_seq, uint64_t version, const struct cerr *err)
{
	struct runner *r = t->r;
	if (r->d.settled) {
		struct runner_settlement st = {
			.session = t->session, .turn = t->id, .op = t->op, .outcome = t->outcome,
			.ok = !err, .next_seq = next_seq, .version = version, .err = err,
		};
		r->d.settled(r->d.ud, &st);
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
static void full_save_done(void *ctx, const struct journal_receipt *rc, const struct cerr *err)
{
	struct turn *t = ctx;
	settled(t, err ? 0 : rc->next_seq, err ? 0 : rc->version, err);
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
		settled(t, journal_next_seq(t->j), journal_version(t->j), NULL);
		return 0;
	}
	cJSON *rest;
	capture_take(t->cap, &rest);
	/* Posted once the turn's items in flight completed (journal.h). */
	struct cerr perr;
	if (journal_full_save(t->j, rest, &t->op, full_save_done, t, &perr) < 0)
		settled(t, 0, 0, &perr);
	return 0;
}
