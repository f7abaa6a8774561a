/* runner_note.c — the host's events written into a running turn's history
 * in order with the turn's own (runner_note, runner.h). */
#include "engine/runner_int.h"

#include <stdlib.h>

#include "base/xalloc.h"

void runner_note_fail(struct turn *t, const struct cerr *err)
{
	while (t->notes) {
		struct note *n = t->notes;
		t->notes = n->next;
		n->cb(n->ctx, err);
		cJSON_Delete(n->events);
		free(n);
	}
}

static void note_committed(struct capture *c, void *ctx, const struct cerr *err)
{
	(void)c;
	struct note *n = ctx;
	n->cb(n->ctx, err);
	free(n);
}

/* Capture n's events and commit them; n is freed by its commit. */
static void note_capture(struct turn *t, struct note *n)
{
	for (const cJSON *e = n->events->child; e; e = e->next) {
		const cJSON *type = cJSON_GetObjectItem(e, "type");
		const cJSON *turn = cJSON_GetObjectItem(e, "turn");
		capture_event(t->cap, vocab_type_of(type->valuestring),
			      cJSON_IsString(turn) ? turn->valuestring : NULL,
			      cJSON_GetObjectItem(e, "data"));
	}
	cJSON_Delete(n->events);
	n->events = NULL;
	if (capture_commit(t->cap, note_committed, n) < 0) {
		struct cerr err;
		cerr_set(&err, CERR_IO, 0, "the turn's capture is closing");
		n->cb(n->ctx, &err);
		free(n);
	}
}

void runner_note_flush(struct turn *t)
{
	struct note *n = t->notes;
	t->notes = NULL;
	while (n) {
		struct note *next = n->next;
		n->next = NULL;
		note_capture(t, n);
		n = next;
	}
}

int runner_note(struct runner *r, const char *session, cJSON *events, runner_note_fn cb,
		void *ctx, struct cerr *err)
{
	struct turn *t = runner_find(r, session);
	int rc = 0;
	if (!t)
		rc = cerr_set(err, CERR_MISSING, 0, "session '%s' runs no turn", session);
	else if (t->st >= TURN_SETTLING || (!t->cap && t->st != TURN_BEFORE))
		rc = cerr_set(err, CERR_BUSY, 0, "session '%s' is settling its turn", session);
	else if (t->cap && capture_state(t->cap) != CAPTURE_OPEN)
		rc = cerr_set(err, CERR_IO, 0, "%s", capture_error(t->cap)->msg);
	if (rc < 0) {
		cJSON_Delete(events);
		return -1;
	}
	struct note *n = xcalloc(1, sizeof *n);
	n->events = events;
	n->cb = cb;
	n->ctx = ctx;
	if (!t->cap) { /* the BEFORE save is in flight: right after it */
		struct note **p = &t->notes;
		while (*p)
			p = &(*p)->next;
		*p = n;
		return 0;
	}
	note_capture(t, n);
	return 0;
}
