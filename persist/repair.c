/* repair.c — torn-tail cut and interrupted-turn closers. */
#include "persist/repair.h"
#include "persist/closer_text.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/event_batch.h"
#include "persist/vocab.h"

#include <stdlib.h>
#include <string.h>

cJSON *repair_closers(const struct scan *s)
{
	cJSON *out = cJSON_CreateArray();
	for (size_t t = 0; t < s->n_open_turns; t++) {
		const char *turn = s->open_turns[t];
		for (size_t i = 0; i < s->n_calls; i++) {
			const struct scan_call *c = &s->calls[i];
			if (c->resulted || !c->turn || strcmp(c->turn, turn) != 0)
				continue;
			if (c->pending) {
				/* A question nobody can answer any more. */
				cJSON *a = cJSON_CreateObject();
				cJSON_AddStringToObject(a, "request_id", c->pending);
				cJSON_AddStringToObject(a, "decision", "canceled");
				cJSON_AddStringToObject(a, "by", "repair");
				cJSON_AddItemToArray(out, event_batch_event(VT_INTERACTION_ANSWER, turn, a));
			}
			cJSON *d = cJSON_CreateObject();
			cJSON_AddStringToObject(d, "call_id", c->call_id);
			enum closer_kind k = c->started ? CLOSER_OUTCOME_UNKNOWN : CLOSER_NOT_EXECUTED;
			char *text = closer_text(k, c->started ? NULL : "the session stopped before it ran");
			cJSON_AddStringToObject(d, "status", vocab_status_name(closer_status(k)));
			cJSON_AddStringToObject(d, "output", text);
			free(text);
			cJSON_AddBoolToObject(d, "synthetic", 1);
			cJSON *seqs = cJSON_AddArrayToObject(d, "source_seqs");
			cJSON_AddItemToArray(seqs, cJSON_CreateNumber((double)c->seq));
			cJSON_AddItemToArray(out, event_batch_event(VT_TOOL_RESULT, turn, d));
		}
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "outcome", vocab_outcome_name(VO_INTERRUPTED));
		cJSON_AddBoolToObject(d, "synthetic", 1);
		cJSON *e = cJSON_AddObjectToObject(d, "error");
		cJSON_AddStringToObject(e, "class", vocab_error_name(VE_INTERRUPTED));
		cJSON_AddStringToObject(e, "message", "the session stopped before this turn ended");
		cJSON_AddItemToArray(out, event_batch_event(VT_TURN_END, turn, d));
	}
	return out;
}

int repair_log(struct log *lg, struct repair_report *rep, struct cerr *err)
{
	memset(rep, 0, sizeof *rep);
	const struct scan *s = log_scan(lg);
	/* Closers come from the scan: it must include what this handle has
	 * appended (or published) since its last read, or a turn it already
	 * ended would be closed twice. */
	if (log_refresh(lg, err) < 0)
		return -1;
	s = log_scan(lg);
	struct revision rev = log_revision_of(lg);
	if (log_cut_torn_tail(lg, &rev, &rep->cut_bytes, err) < 0)
		return -1;
	/* The log is settled: s holds every durable event, and no writer but
	 * us (we hold the lock) is between a blob and its event. */
	int dirfd = log_dir(lg, err);
	if (dirfd < 0 || blob_sweep(dirfd, s, &rep->blobs_removed, err) < 0)
		return -1;
	cJSON *closers = repair_closers(s);
	struct event_batch b;
	/* The closers take the path every appended event takes: the same
	 * reader as `log append` and the FIFO, then the store's checks. */
	int ret = event_batch_from_json(closers, &b, err);
	size_t n = b.n;
	rep->first_seq = log_next_seq(lg);
	if (ret == 0)
		ret = log_append(lg, rep->first_seq, b.evs, b.n, &rep->next_seq, err);
	event_batch_release(&b);
	if (ret < 0) {
		cJSON_Delete(closers);
		return -1;
	}
	rep->appended = n;
	/* Report the closers with the seqs they got. */
	uint64_t seq = rep->first_seq;
	for (cJSON *c = closers->child; c; c = c->next)
		cJSON_AddNumberToObject(c, "seq", (double)seq++);
	rep->closers = closers;
	return 0;
}
