/* host_turn.c — sending, turns and their settlement, queued input's
 * dispatch, cancel, and durability (host.h). The durability state and its
 * transitions are the session journal's (journal.h): the host says them
 * as notices and asks for a recovery save (host_save). */
#include "engine/host_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ulid.h"
#include "base/xalloc.h"
#include "persist/prepare.h"
#include "persist/event_batch.h"

/* ---- client_submit_id ---- */

void host_submit_add(struct hsess *s, const char *submit_id, const char *turn)
{
	size_t k;
	if (strmap_get(&s->submits, submit_id, &k)) {
		host_set_str(&s->submit_turns[k], turn);
		return;
	}
	if (s->n_submits == s->cap_submits) {
		s->cap_submits = s->cap_submits ? 2 * s->cap_submits : 16;
		s->submit_keys = xrealloc(s->submit_keys, s->cap_submits * sizeof *s->submit_keys);
		s->submit_turns = xrealloc(s->submit_turns, s->cap_submits * sizeof *s->submit_turns);
	}
	s->submit_keys[s->n_submits] = xstrdup(submit_id);
	s->submit_turns[s->n_submits] = xstrdup(turn);
	strmap_put(&s->submits, s->submit_keys[s->n_submits], s->n_submits);
	s->n_submits++;
}

const char *host_submit_find(const struct hsess *s, const char *submit_id)
{
	size_t k;
	return strmap_get(&s->submits, submit_id, &k) ? s->submit_turns[k] : NULL;
}

/* A turn that never started is not in the log: forget its submit id
 * (the last one added, naming it). */
static void submit_drop(struct hsess *s, const char *turn)
{
	size_t k = s->n_submits - 1;
	if (s->n_submits == 0 || strcmp(s->submit_turns[k], turn) != 0)
		return;
	strmap_del(&s->submits, s->submit_keys[k]);
	s->n_submits--;
	free(s->submit_keys[k]);
	free(s->submit_turns[k]);
}

/* ---- turns ---- */

int host_turn_start(struct hsess *s, const char *submit_id, const char *text,
		    const char *dequeued, struct op *op, struct cerr *err)
{
	struct host *h = s->h;
	if (!s->have_call)
		return cerr_set(err, CERR_USAGE, 0, "no provider is set for session '%s'", s->id);
	if (host_may(s, HOST_TURN, err) < 0)
		return -1;
	char turn[32];
	snprintf(turn, sizeof turn, "t%zu", s->n_turns + 1);
	struct runner_turn t = {
		.session = s->id,
		.journal = s->j, /* a recovery save goes ahead of the BEFORE save */
		.generation = s->generation,
		.ctx = s->ctx,
		.turn = turn,
		.parent_turn = s->leaf,
		.client_submit_id = submit_id,
		.dequeued_input = dequeued,
		.text = text,
		.provider = s->call.provider,
		.call = s->call.call,
		.tools = s->c_tools ? &s->tctx : NULL,
		.approval = s->policy,
		.grants = s->grants,
		.max_steps = s->call.max_steps,
	};
	s->tctx.cwd = s->cwd ? s->cwd : "/";
	/* What the turn is sent with, where it differs from the session's
	 * settings: its BEFORE save records it (history of who answered and
	 * what they were told). */
	struct prepared_settings in_effect = {
		.provider = s->set_provider, .model = s->set_model, .system_prompt = s->set_system};
	cJSON *settings = prepared_settings_change(&in_effect, s->call.provider,
						   s->call.call.params.model,
						   s->call.call.params.system);
	t.settings = settings;
	if (runner_start(h->run, &t, &s->op, err) < 0) {
		cJSON_Delete(settings);
		return -1;
	}
	cJSON_Delete(s->turn_settings);
	s->turn_settings = settings;
	s->n_turns++;
	host_to(s, HOST_TURN, NULL); /* allowed: host_may above */
	host_set_str(&s->turn, turn);
	host_set_str(&s->turn_input, dequeued);
	host_set_str(&s->turn_text, text);
	host_set_str(&s->prev_leaf, s->leaf);
	host_set_str(&s->leaf, turn);
	host_submit_add(s, submit_id, turn);
	if (op) {
		op->turn = xstrdup(turn);
		op->r.op = s->op;
		host_fill_head(op);
		host_defer(op, NULL);
	}
	return 0;
}

/* Dispatch the oldest armed input, if the session may: idle, saved, after
 * a turn that completed, not closing. */
static void dispatch(struct hsess *s)
{
	struct host *h = s->h;
	if (h->closing || s->st != HOST_IDLE || journal_state(s->j) != JOURNAL_SAVED || !s->last_ok)
		return;
	for (size_t k = 0; k < s->nq; k++) {
		if (!s->q[k].armed)
			continue;
		char *id = xstrdup(s->q[k].id), *text = xstrdup(s->q[k].text);
		struct cerr err;
		host_queue_del(s, k);
		if (host_turn_start(s, id, text, id, NULL, &err) < 0) {
			host_queue_add(s, id, text, false, true); /* held where it was */
			host_notice(s, SINK_NOTICE_HELD, &err);
		}
		free(id);
		free(text);
		return;
	}
}

/* Dispatching waits for the loop, so the "settled" marker of the turn
 * before is published first. */
struct later {
	struct host *h;
	char id[SESSION_ID_MAX + 1];
};

static void later_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	(void)err;
	struct later *l = ctx;
	struct hsess *s = host_find(l->h, l->id);
	if (s)
		dispatch(s);
	free(l);
}

void host_dispatch_later(struct hsess *s)
{
	struct later *l = xcalloc(1, sizeof *l);
	l->h = s->h;
	snprintf(l->id, sizeof l->id, "%s", s->id);
	host_defer(host_op(s->h, NULL, OP_DONE, later_cb, l), NULL);
}

void host_turn_settled(void *ud, struct runner_settlement *st)
{
	struct host *h = ud;
	struct hsess *s = host_find(h, st->session);
	if (!s)
		return;
	bool started = strcmp(st->outcome, "not_started") != 0;
	if (started && s->turn_settings) /* its BEFORE save wrote them */
		host_apply_settings(s, s->turn_settings);
	cJSON_Delete(s->turn_settings);
	s->turn_settings = NULL;
	if (!started) {
		/* Not in the log: its id, its number and its place go back. */
		submit_drop(s, st->turn);
		s->n_turns--;
		host_set_str(&s->leaf, s->prev_leaf);
		if (s->turn_input) /* a queued input that did not start: held where it was */
			host_queue_add(s, s->turn_input, s->turn_text, false, true);
	}
	/* A failed full save: the journal is UNSAVED (and said so), keeping
	 * the turn's events for its recovery save. */
	s->last_ok = st->ok && vocab_outcome_of(st->outcome) == VO_COMPLETED;
	if (!s->last_ok)
		for (size_t k = 0; k < s->nq; k++)
			s->q[k].armed = false; /* wait for an explicit send */
	host_to(s, HOST_IDLE, NULL);
	free(s->turn);
	s->turn = NULL;
	free(s->turn_input);
	s->turn_input = NULL;
	free(s->turn_text);
	s->turn_text = NULL;
	host_write_after_settle(s);
	host_dispatch_later(s);
}

/* ---- durability ---- */

void host_journal_state(void *ud, enum journal_state st, const struct cerr *err)
{
	struct hsess *s = ud;
	if (st == JOURNAL_UNSAVED)
		host_notice(s, SINK_NOTICE_UNSAVED, err);
	else if (st == JOURNAL_SAVED)
		host_notice(s, SINK_NOTICE_SAVED, NULL);
}

static void recovered(void *ctx, const struct journal_receipt *r, const struct cerr *err)
{
	(void)r;
	struct op *op = ctx;
	struct host *h = op->h;
	host_fill_head(op);
	host_complete(op, err);
	host_check_close(h);
}

int host_save(struct host *h, const char *id, host_cb cb, void *ctx, struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (host_refuse(h, s, id, err) < 0)
		return -1;
	struct op *op = host_op(h, s, OP_SAVE, cb, ctx);
	int rc = journal_recover(s->j, recovered, op, err);
	if (rc == 1) { /* saved: nothing to recover */
		host_fill_head(op);
		host_defer(op, NULL);
		return 0;
	}
	if (rc < 0) /* refused: the journal said "unsaved" again */
		host_defer(op, err);
	return 0;
}

/* ---- send, cancel, applied ---- */

int host_send(struct host *h, const char *id, const struct host_send *req, host_cb cb, void *ctx,
	      struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (host_refuse(h, s, id, err) < 0)
		return -1;
	if (!req->text || !*req->text)
		return cerr_set(err, CERR_USAGE, 0, "the prompt is empty");
	char made[ULID_LEN + 3];
	const char *sid = req->client_submit_id;
	if (!sid) {
		char u[ULID_LEN + 1];
		ulid_new(u);
		snprintf(made, sizeof made, "s-%s", u);
		sid = made;
	}
	struct op *op = host_op(h, s, OP_DONE, cb, ctx);
	const char *known = host_submit_find(s, sid);
	ssize_t qk = host_queue_find(s, sid);
	if (known || qk >= 0) {
		op->r.replayed = true;
		if (known)
			op->turn = xstrdup(known);
		else {
			op->r.queued = true;
			op->input_id = xstrdup(sid);
		}
		host_fill_head(op);
		host_defer(op, NULL);
		return 0;
	}
	if (s->st == HOST_TURN) {
		/* Queued input, durable before the callback. */
		op->kind = OP_QUEUE;
		op->r.queued = true;
		op->input_id = xstrdup(sid);
		op->text = xstrdup(req->text);
		op->armed = true;
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "input_id", sid);
		cJSON_AddStringToObject(d, "text", req->text);
		op->events = cJSON_CreateArray();
		cJSON_AddItemToArray(op->events, event_batch_event(VT_INPUT_QUEUED, NULL, d));
		host_write(s, op);
		return 0;
	}
	if (host_turn_start(s, sid, req->text, NULL, op, err) < 0) {
		op->cb = NULL;
		host_complete(op, NULL);
		return -1;
	}
	return 0;
}

void host_cancel(struct host *h, const char *id)
{
	struct hsess *s = host_find(h, id);
	if (!s || s->st != HOST_TURN)
		return;
	for (size_t k = 0; k < s->nq; k++)
		s->q[k].armed = false; /* queued input stays, held */
	runner_cancel(h->run, id);
}

int host_respond(struct host *h, const char *id, const char *request_id, const char *decision,
		 const char *note, host_cb cb, void *ctx, struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (host_refuse(h, s, id, err) < 0)
		return -1;
	if (s->st != HOST_TURN)
		return cerr_set(err, CERR_MISSING, 0, "session '%s' waits for no answer", id);
	if (runner_answer(h->run, id, request_id, decision, note, err) < 0)
		return -1;
	struct op *op = host_op(h, s, OP_DONE, cb, ctx);
	host_fill_head(op);
	host_defer(op, NULL);
	return 0;
}

int host_applied(struct host *h, const struct sink_item *m, struct cerr *err)
{
	if (m->kind != SINK_MARKER || m->marker != SINK_MARKER_TURN_DONE)
		return 0;
	return runner_settle(h->run, &m->op, err);
}
