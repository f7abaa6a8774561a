/* host_write.c — the host's own writes (queued input, settings, title and
 * pin) and releases (host.h).
 *
 * A session's history has one writer order: while a turn runs, the host's
 * events go through the runner into the turn's capture (runner_note); while
 * it settles, they wait for the settlement; otherwise they are appended to
 * the session's journal (which posts a recovery save ahead of them when
 * the session is unsaved). An op's
 * effect on the host's view (an input added or removed, settings changed)
 * is applied once its events are durable. */
#include "engine/host_int.h"
#include "persist/event_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"


/* ---- the queue in memory ---- */

ssize_t host_queue_find(const struct hsess *s, const char *input_id)
{
	for (size_t k = 0; k < s->nq; k++)
		if (strcmp(s->q[k].id, input_id) == 0)
			return (ssize_t)k;
	return -1;
}

void host_queue_add(struct hsess *s, const char *input_id, const char *text, bool armed,
		    bool front)
{
	if (host_queue_find(s, input_id) >= 0)
		return;
	if (s->nq == s->capq) {
		s->capq = s->capq ? 2 * s->capq : 8;
		s->q = xrealloc(s->q, s->capq * sizeof *s->q);
	}
	size_t k = front ? 0 : s->nq;
	memmove(&s->q[k + 1], &s->q[k], (s->nq - k) * sizeof *s->q);
	s->q[k] = (struct qin){xstrdup(input_id), xstrdup(text ? text : ""), armed};
	s->nq++;
}

void host_queue_del(struct hsess *s, size_t k)
{
	free(s->q[k].id);
	free(s->q[k].text);
	memmove(&s->q[k], &s->q[k + 1], (s->nq - k - 1) * sizeof *s->q);
	s->nq--;
}

size_t host_queued(struct host *h, const char *id, const struct host_input **out)
{
	struct hsess *s = host_find(h, id);
	*out = NULL;
	if (!s)
		return 0;
	free(s->view);
	s->view = xcalloc(s->nq ? s->nq : 1, sizeof *s->view);
	for (size_t k = 0; k < s->nq; k++)
		s->view[k] = (struct host_input){s->q[k].id, s->q[k].text, s->q[k].armed};
	*out = s->view;
	return s->nq;
}

/* ---- effects, once durable ---- */

static void set_field(char **slot, const cJSON *d, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(d, k);
	if (cJSON_IsString(v))
		host_set_str(slot, v->valuestring);
	else if (cJSON_IsNull(v))
		host_set_str(slot, NULL);
}

void host_apply_settings(struct hsess *s, const cJSON *settings)
{
	set_field(&s->set_provider, settings, "provider");
	set_field(&s->set_model, settings, "model");
	set_field(&s->set_approval, settings, "approval");
	set_field(&s->set_system, settings, "system_prompt");
	if (!s->policy_set && s->set_approval) {
		struct cerr pe;
		if (approval_policy_parse(s->set_approval, &s->policy, &pe) < 0)
			s->policy = APPROVAL_ASK;
	}
}

static void apply(struct hsess *s, struct op *op)
{
	ssize_t k;
	switch (op->kind) {
	case OP_QUEUE:
		/* Armed unless the turn it waited for failed meanwhile. */
		host_queue_add(s, op->input_id, op->text, op->armed && s->last_ok, false);
		host_dispatch_later(s);
		break;
	case OP_DEQUEUE:
		if ((k = host_queue_find(s, op->input_id)) >= 0)
			host_queue_del(s, (size_t)k);
		break;
	case OP_SETTINGS:
		host_apply_settings(s, op->settings);
		break;
	case OP_DONE:
	case OP_META:
	case OP_SAVE:
	case OP_RELEASE:
	case OP_DELETE:
		break;
	}
}

static void written(struct hsess *s, struct op *op, const struct cerr *err)
{
	if (!err)
		apply(s, op);
	host_fill_head(op);
	host_complete(op, err);
	host_check_close(s->h);
}

static void noted(void *ctx, const struct cerr *err)
{
	struct op *op = ctx;
	written(op->s, op, err);
}

static void item_done(void *ctx, const struct journal_receipt *r, const struct cerr *err)
{
	(void)r;
	struct op *op = ctx;
	written(op->s, op, err);
}

/* ---- releases ---- */

static void released(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		     const struct cerr *err)
{
	(void)it;
	(void)r;
	struct op *op = ctx;
	struct hsess *s = op->s;
	struct host *h = op->h;
	struct cerr e;
	if (op->kind == OP_DELETE && !err) {
		/* Released: now it can move to the trash. */
		op->kind = OP_RELEASE;
		if (journal_post_item(s->j, fifo_delete(s->id), released, op, &e) == 0)
			return;
		err = &e;
	}
	op->s = NULL;
	op->r.session = NULL;
	if (!op->failed)
		host_complete(op, err);
	else
		host_complete(op, &op->err); /* an open that failed after its open item */
	host_forget(s);
	host_check_close(h);
}

static void release(struct hsess *s, struct op *op)
{
	struct cerr err;
	if (!journal_created(s->j)) {
		/* Nothing on disk: nothing to let go. */
		op->s = NULL;
		host_forget(s);
		host_defer(op, op->failed ? &op->err : NULL);
		return;
	}
	/* Behind every write of the journal (a recovery save in flight). */
	if (journal_post_item(s->j, fifo_release(s->id), released, op, &err) < 0) {
		op->s = NULL;
		host_forget(s);
		host_defer(op, &err);
	}
}

/* ---- writing ---- */

static void post(struct hsess *s, struct op *op)
{
	struct journal_write w = {.provider = s->call.provider, .model = s->c_model};
	cJSON *evs = op->events;
	op->events = NULL;
	struct cerr err;
	if (journal_append(s->j, evs, &w, item_done, op, &err) < 0)
		host_defer(op, &err);
}

void host_write(struct hsess *s, struct op *op)
{
	if (op->kind == OP_RELEASE || op->kind == OP_DELETE) {
		release(s, op);
		return;
	}
	if (s->st == HOST_TURN) {
		struct cerr err;
		cJSON *evs = op->events;
		op->events = NULL;
		if (runner_note(s->h->run, s->id, cJSON_Duplicate(evs, 1), noted, op, &err) == 0) {
			cJSON_Delete(evs);
			return;
		}
		op->events = evs;
		if (err.cls == CERR_BUSY) { /* settling: right after it */
			struct op **p = &s->after_settle;
			while (*p)
				p = &(*p)->next;
			op->next = NULL;
			*p = op;
			return;
		}
		host_defer(op, &err);
		return;
	}
	post(s, op);
}

void host_write_after_settle(struct hsess *s)
{
	struct op *op = s->after_settle;
	s->after_settle = NULL;
	while (op) {
		struct op *next = op->next;
		op->next = NULL;
		post(s, op);
		op = next;
	}
}

/* ---- commands ---- */

static int write_cmd(struct host *h, const char *id, enum op_kind kind, cJSON *events, host_cb cb,
		     void *ctx, struct op **out, struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (host_refuse(h, s, id, err) < 0) {
		cJSON_Delete(events);
		return -1;
	}
	struct op *op = host_op(h, s, kind, cb, ctx);
	op->events = events;
	if (out)
		*out = op;
	return 0;
}

int host_input_take(struct host *h, const char *id, const char *input_id, host_cb cb,
		    void *ctx, struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (host_refuse(h, s, id, err) < 0)
		return -1;
	ssize_t k = host_queue_find(s, input_id);
	if (k < 0)
		return cerr_set(err, CERR_MISSING, 0, "no queued input '%s'", input_id);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "input_id", input_id);
	cJSON *evs = cJSON_CreateArray();
	cJSON_AddItemToArray(evs, event_batch_event(VT_INPUT_DEQUEUED, NULL, d));
	struct op *op;
	if (write_cmd(h, id, OP_DEQUEUE, evs, cb, ctx, &op, err) < 0)
		return -1;
	op->input_id = xstrdup(input_id);
	op->text = xstrdup(s->q[k].text);
	s->q[k].armed = false; /* never dispatched while it is being taken */
	host_write(s, op);
	return 0;
}

int host_input_send(struct host *h, const char *id, const char *input_id, host_cb cb,
		    void *ctx, struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (host_refuse(h, s, id, err) < 0)
		return -1;
	ssize_t k = host_queue_find(s, input_id);
	if (k < 0)
		return cerr_set(err, CERR_MISSING, 0, "no queued input '%s'", input_id);
	struct op *op = host_op(h, s, OP_DONE, cb, ctx);
	op->input_id = xstrdup(input_id);
	if (s->st == HOST_TURN) {
		s->q[k].armed = true; /* after the running turn, if it succeeds */
		op->r.queued = true;
		host_fill_head(op);
		host_defer(op, NULL);
		return 0;
	}
	char *text = xstrdup(s->q[k].text);
	host_queue_del(s, (size_t)k);
	int rc = host_turn_start(s, input_id, text, input_id, op, err);
	if (rc < 0) {
		host_queue_add(s, input_id, text, false, true);
		op->cb = NULL;
		host_complete(op, NULL);
	}
	free(text);
	return rc;
}

int host_update_settings(struct host *h, const char *id, const struct host_settings *set,
			 host_cb cb, void *ctx, struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (host_refuse(h, s, id, err) < 0)
		return -1;
	if (s->st == HOST_TURN)
		return cerr_set(err, CERR_BUSY, 0, "session '%s' is running a turn", id);
	cJSON *d = cJSON_CreateObject();
	const struct {
		const char *k, *v;
	} f[] = {{"provider", set->provider},
		 {"model", set->model},
		 {"approval", set->approval},
		 {"system_prompt", set->system_prompt}};
	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		if (f[i].v)
			cJSON_AddStringToObject(d, f[i].k, f[i].v);
	struct op *op;
	cJSON *evs = cJSON_CreateArray();
	cJSON_AddItemToArray(evs, event_batch_event(VT_SESSION_SETTINGS, NULL, cJSON_Duplicate(d, 1)));
	if (write_cmd(h, id, OP_SETTINGS, evs, cb, ctx, &op, err) < 0) {
		cJSON_Delete(d);
		return -1;
	}
	op->settings = d;
	host_write(s, op);
	return 0;
}

static int meta(struct host *h, const char *id, cJSON *d, host_cb cb, void *ctx,
		struct cerr *err)
{
	cJSON *evs = cJSON_CreateArray();
	cJSON_AddItemToArray(evs, event_batch_event(VT_SESSION_META, NULL, d));
	struct op *op;
	if (write_cmd(h, id, OP_META, evs, cb, ctx, &op, err) < 0)
		return -1;
	host_write(op->s, op);
	return 0;
}

int host_rename(struct host *h, const char *id, const char *title, host_cb cb, void *ctx,
		struct cerr *err)
{
	cJSON *d = cJSON_CreateObject();
	if (title)
		cJSON_AddStringToObject(d, "title", title);
	else
		cJSON_AddNullToObject(d, "title");
	return meta(h, id, d, cb, ctx, err);
}

int host_pin(struct host *h, const char *id, bool pinned, host_cb cb, void *ctx,
	     struct cerr *err)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddBoolToObject(d, "pinned", pinned);
	return meta(h, id, d, cb, ctx, err);
}

/* ---- the composer's draft ---- */

struct draft_wait {
	host_cb cb;
	void *ctx;
};

static void draft_saved(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
			const struct cerr *err)
{
	(void)it;
	(void)r;
	struct draft_wait *w = ctx;
	if (w->cb)
		w->cb(w->ctx, NULL, err);
	free(w);
}

int host_save_draft(struct host *h, const char *cwd, const char *text, host_cb cb, void *ctx,
		    struct cerr *err)
{
	struct draft_wait *w = xcalloc(1, sizeof *w);
	*w = (struct draft_wait){cb, ctx};
	if (fifo_post(h->d.fifo, fifo_draft(cwd, text ? text : ""), draft_saved, w, err) < 0) {
		free(w);
		return -1;
	}
	return 0;
}
