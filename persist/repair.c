/* repair.c — torn-tail cut and interrupted-turn closers. */
#include "persist/repair.h"
#include "persist/closer_text.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "base/strmap.h"
#include "persist/event_batch.h"
#include "persist/load.h"
#include "persist/vocab.h"

#include <stdlib.h>
#include <string.h>

/* The closers of open turns open[0..n_open) given the log's calls. */
static cJSON *closers_of(const char *const *open, size_t n_open, const struct scan_call *calls,
			 size_t n_calls)
{
	cJSON *out = cJSON_CreateArray();
	for (size_t t = 0; t < n_open; t++) {
		const char *turn = open[t];
		for (size_t i = 0; i < n_calls; i++) {
			const struct scan_call *c = &calls[i];
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

cJSON *repair_closers(const struct scan *s)
{
	return closers_of(s->open_turns, s->n_open_turns, s->calls, s->n_calls);
}

/* ---- the same summary from a compact load (scan.c's summarize) ---- */

struct lsum {
	const char **open; /* borrowed from the load */
	size_t n_open;
	struct scan_call *calls; /* call_id and pending owned (strings below) */
	size_t n_calls;
	char **strings;
	size_t n_strings;
	struct strmap ids; /* call_id -> index into calls */
};

static const char *lsum_keep(struct lsum *m, const char *s)
{
	m->strings = xreallocarray(m->strings, m->n_strings + 1, sizeof *m->strings);
	return m->strings[m->n_strings++] = xstrdup(s);
}

static void lsum_remove_open(struct lsum *m, const char *turn)
{
	for (size_t i = m->n_open; i-- > 0;)
		if (strcmp(m->open[i], turn) == 0) {
			memmove(&m->open[i], &m->open[i + 1], (m->n_open - i - 1) * sizeof *m->open);
			m->n_open--;
			return;
		}
}

static const char *str_of(const cJSON *d, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The tool calls of the log, as scan.c's summarize finds them (every
 * tool and interaction event parsed, and any other line that names a
 * request_id). Only needed when a turn is open. */
static void lsum_calls(struct lsum *m, const struct load *l)
{
	strmap_init(&m->ids);
	for (size_t i = 0; i < load_count(l); i++) {
		const struct load_event *ev = load_event(l, i);
		enum vocab_type t = (enum vocab_type)ev->type;
		size_t len, k;
		const char *line = load_line(l, i, &len);
		switch (t) {
		case VT_TOOL_CALL:
		case VT_TOOL_STARTED:
		case VT_TOOL_RESULT:
		case VT_INTERACTION_ANSWER:
			break;
		case VT_UNKNOWN:
		case VT_STEP_END:
		case VT_BRANCH_REWIND:
		case VT_INPUT_QUEUED:
		case VT_INPUT_DEQUEUED:
		case VT_TURN_START:
		case VT_TURN_END:
			continue;
		default:
			if (!memmem(line, len, "request_id", 10) && !memmem(line, len, "\\u", 2))
				continue;
			break;
		}
		cJSON *root = load_json(l, i);
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "data");
		const char *id = str_of(d, "call_id"), *r = str_of(d, "request_id");
		if (t == VT_TOOL_CALL && id) {
			m->calls = xreallocarray(m->calls, m->n_calls + 1, sizeof *m->calls);
			id = lsum_keep(m, id);
			m->calls[m->n_calls] = (struct scan_call){id, load_turn(l, i), ev->seq, false, false,
								  NULL};
			strmap_put(&m->ids, id, m->n_calls++);
		} else if (t == VT_TOOL_STARTED && id && strmap_get(&m->ids, id, &k)) {
			m->calls[k].started = true;
		} else if (t == VT_TOOL_RESULT && id && strmap_get(&m->ids, id, &k)) {
			m->calls[k].resulted = true;
		} else if (t == VT_INTERACTION_ANSWER) {
			for (size_t j = m->n_calls; r && j-- > 0;)
				if (m->calls[j].pending && strcmp(m->calls[j].pending, r) == 0) {
					m->calls[j].pending = NULL;
					break;
				}
		} else if (t != VT_TOOL_STARTED && t != VT_TOOL_RESULT && id && r &&
			   strmap_get(&m->ids, id, &k)) {
			m->calls[k].pending = lsum_keep(m, r);
		}
		cJSON_Delete(root);
	}
	strmap_release(&m->ids);
}

/* repair_closers for a compact load: the open turns from its index alone;
 * the events are parsed only when a turn is open. */
static cJSON *closers_of_load(const struct load *l)
{
	struct lsum m = {0};
	size_t cap = 0;
	for (size_t i = 0; i < load_count(l); i++) {
		enum vocab_type t = (enum vocab_type)load_event(l, i)->type;
		const char *turn = load_turn(l, i);
		if ((t != VT_TURN_START && t != VT_TURN_END) || !turn)
			continue;
		lsum_remove_open(&m, turn); /* a restarted id counts once */
		if (t == VT_TURN_END)
			continue;
		if (m.n_open == cap) {
			cap = cap ? cap * 2 : 4;
			m.open = xreallocarray(m.open, cap, sizeof *m.open);
		}
		m.open[m.n_open++] = turn;
	}
	if (m.n_open)
		lsum_calls(&m, l);
	cJSON *out = closers_of(m.open, m.n_open, m.calls, m.n_calls);
	free(m.open);
	free(m.calls);
	for (size_t k = 0; k < m.n_strings; k++)
		free(m.strings[k]);
	free(m.strings);
	return out;
}

int repair_log(struct log *lg, struct repair_report *rep, struct cerr *err)
{
	memset(rep, 0, sizeof *rep);
	const struct scan *s = log_scan(lg);
	/* Closers come from the read (a scan, or a compact handle's load):
	 * it must include what this handle has
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
	const struct load *l = log_load(lg); /* a compact handle's read */
	if (dirfd < 0 || (l ? blob_sweep_load(dirfd, l, &rep->blobs_removed, err)
			    : blob_sweep(dirfd, s, &rep->blobs_removed, err)) < 0)
		return -1;
	cJSON *closers = l ? closers_of_load(l) : repair_closers(s);
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
