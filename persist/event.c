/* event.c — event line parsing and canonical formatting. */
#include "persist/event.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "persist/frame.h"

#include <stdlib.h>

#include <string.h>

/* What both readers take from a line's root before judging it. */
struct envelope {
	bool is_obj;            /* the root is an object */
	bool seq_ok, t_ok;      /* integers in [0, 2^53-1] */
	int64_t seq, t;
	const char *type;       /* decoded, when a string */
	bool has_turn, turn_ok; /* a non-empty string of at most TURN_ID_MAX bytes */
	bool has_ign, ign_ok, ign_true;
	bool data_obj;
};

/* The envelope rules in their order (the first failure decides the class
 * of the error): 0 with *ve (NULL for an unknown ignorable type), or -1. */
static int envelope_judge(const struct envelope *e, uint64_t expect_seq,
			  const struct vocab_entry **ve, struct cerr *err)
{
	const char *why = NULL;
	if (!e->is_obj)
		why = "not a JSON object";
	else if (!e->seq_ok)
		why = "missing or invalid \"seq\"";
	else if (!e->t_ok)
		why = "missing or invalid \"t\"";
	else if (!e->type || !vocab_valid_type_name(e->type))
		why = "missing or invalid \"type\"";
	else if (e->has_turn && !e->turn_ok)
		why = "invalid \"turn\"";
	else if (e->has_ign && !e->ign_ok)
		why = "invalid \"ignorable\"";
	else if (!e->data_obj)
		why = "missing or invalid \"data\"";
	if (why)
		return cerr_set(err, CERR_CORRUPT, 0, "event %llu: %s", (unsigned long long)expect_seq,
				why);
	if (expect_seq != EVENT_ANY_SEQ && (uint64_t)e->seq != expect_seq)
		return cerr_set(err, CERR_CORRUPT, 0, "seq %lld where %llu was expected",
				(long long)e->seq, (unsigned long long)expect_seq);
	*ve = vocab_find(e->type);
	if (!*ve && !e->ign_true)
		return cerr_set(err, CERR_UNSUPPORTED, 0, "event %llu has unknown type '%s'",
				(unsigned long long)e->seq, e->type);
	if (*ve && (*ve)->needs_turn && !e->has_turn)
		return cerr_set(err, CERR_CORRUPT, 0, "event %llu: '%s' without \"turn\"",
				(unsigned long long)e->seq, (*ve)->type);
	return 0;
}

int event_parse(const char *line, size_t n, uint64_t expect_seq, struct event *ev,
		struct cerr *err)
{
	const char *why = NULL;
	if (n > EVENT_MAX_LINE)
		return cerr_set(err, CERR_CORRUPT, 0,
				"event %llu: its line is %zu bytes; the limit is EVENT_MAX_LINE = %u",
				(unsigned long long)expect_seq, n, EVENT_MAX_LINE);
	cJSON *root = json_parse_strict(line, n, &why);
	if (!root)
		return cerr_set(err, CERR_CORRUPT, 0, "event %llu: %s", (unsigned long long)expect_seq,
				why);
	/* One pass over the envelope's keys (duplicates were rejected). */
	const cJSON *jseq = NULL, *jt = NULL, *jtype = NULL, *jturn = NULL, *jign = NULL;
	cJSON *jdata = NULL;
	for (cJSON *k = cJSON_IsObject(root) ? root->child : NULL; k; k = k->next) {
		const char *name = k->string;
		switch (name[0]) {
		case 's': if (strcmp(name, "seq") == 0) jseq = k; break;
		case 't':
			if (name[1] == '\0')
				jt = k;
			else if (strcmp(name, "type") == 0)
				jtype = k;
			else if (strcmp(name, "turn") == 0)
				jturn = k;
			break;
		case 'i': if (strcmp(name, "ignorable") == 0) jign = k; break;
		case 'd': if (strcmp(name, "data") == 0) jdata = k; break;
		}
	}
	struct envelope e = {
		.is_obj = cJSON_IsObject(root),
		.seq_ok = json_get_int(jseq, 0, JSON_MAX_SAFE_INT, &e.seq),
		.t_ok = json_get_int(jt, 0, JSON_MAX_SAFE_INT, &e.t),
		.type = cJSON_IsString(jtype) ? jtype->valuestring : NULL,
		.has_turn = jturn != NULL,
		.turn_ok = cJSON_IsString(jturn) && *jturn->valuestring &&
			   strlen(jturn->valuestring) <= TURN_ID_MAX,
		.has_ign = jign != NULL,
		.ign_ok = cJSON_IsBool(jign),
		.ign_true = cJSON_IsTrue(jign),
		.data_obj = cJSON_IsObject(jdata),
	};
	const struct vocab_entry *ve = NULL;
	if (envelope_judge(&e, expect_seq, &ve, err) < 0) {
		cJSON_Delete(root);
		return -1;
	}
	if (ve && vocab_check(ve, jdata, err) < 0) {
		cerr_prefix(err, "event %llu", (unsigned long long)e.seq);
		cJSON_Delete(root);
		return -1;
	}
	ev->seq = (uint64_t)e.seq;
	ev->t = e.t;
	ev->type = jtype->valuestring;
	ev->vtype = ve ? ve->id : VT_UNKNOWN;
	ev->turn = jturn ? jturn->valuestring : NULL;
	ev->ignorable = e.ign_true;
	ev->kind = ve;
	ev->root = root;
	ev->data = jdata;
	ev->line = line;
	ev->line_len = n;
	return 0;
}

/* A decoded string span in out (size cap) when it fits, else NULL. */
static const char *span_str(const struct json_span *v, char *out, size_t cap)
{
	if (v->kind != '"' || v->n >= cap)
		return NULL;
	json_check_unescape(v, out);
	return out;
}

int event_check(struct json_check *jc, const char *line, size_t n, uint64_t expect_seq,
		struct event_ref *ev, struct cerr *err)
{
	const char *why = NULL;
	if (n > EVENT_MAX_LINE)
		return cerr_set(err, CERR_CORRUPT, 0, "event %llu is longer than the maximum",
				(unsigned long long)expect_seq);
	struct json_span root;
	if (!json_check(jc, line, n, &root, &why))
		return cerr_set(err, CERR_CORRUPT, 0, "event %llu: %s", (unsigned long long)expect_seq,
				why);
	const struct json_span *jseq = NULL, *jt = NULL, *jtype = NULL, *jturn = NULL,
			       *jign = NULL, *jdata = NULL;
	for (size_t i = 0; i < jc->n_top; i++) {
		const struct json_span *k = &jc->top[i].key, *v = &jc->top[i].val;
		if (k->esc) { /* rare: compare decoded */
			if (json_check_is(k, "seq"))
				jseq = v;
			else if (json_check_is(k, "t"))
				jt = v;
			else if (json_check_is(k, "type"))
				jtype = v;
			else if (json_check_is(k, "turn"))
				jturn = v;
			else if (json_check_is(k, "ignorable"))
				jign = v;
			else if (json_check_is(k, "data"))
				jdata = v;
			continue;
		}
		const char *q = k->p;
		switch (k->n) {
		case 1: if (q[0] == 't') jt = v; break;
		case 3: if (memcmp(q, "seq", 3) == 0) jseq = v; break;
		case 4:
			if (memcmp(q, "type", 4) == 0)
				jtype = v;
			else if (memcmp(q, "turn", 4) == 0)
				jturn = v;
			else if (memcmp(q, "data", 4) == 0)
				jdata = v;
			break;
		case 9: if (memcmp(q, "ignorable", 9) == 0) jign = v; break;
		}
	}
	/* A type name is at most 64 bytes; escaped, at most 6 times that. */
	char type[6 * 64 + 1], turn[6 * TURN_ID_MAX + 1];
	const char *tname = jtype ? span_str(jtype, type, sizeof type) : NULL;
	const char *tturn = jturn ? span_str(jturn, turn, sizeof turn) : NULL;
	struct envelope e = {
		.is_obj = root.kind == '{',
		.seq_ok = jseq && json_check_int(jseq, 0, JSON_MAX_SAFE_INT, &e.seq),
		.t_ok = jt && json_check_int(jt, 0, JSON_MAX_SAFE_INT, &e.t),
		/* Too long to decode here: surely not a valid name, but a
		 * string all the same (the judge says "invalid type"). */
		.type = tname ? tname : jtype && jtype->kind == '"' ? "" : NULL,
		.has_turn = jturn != NULL,
		.turn_ok = tturn && *tturn && strlen(tturn) <= TURN_ID_MAX,
		.has_ign = jign != NULL,
		.ign_ok = jign && (jign->kind == 't' || jign->kind == 'f'),
		.ign_true = jign && jign->kind == 't',
		.data_obj = jdata && jdata->kind == '{',
	};
	const struct vocab_entry *ve = NULL;
	if (envelope_judge(&e, expect_seq, &ve, err) < 0)
		return -1;
	if (ve && vocab_check_members(ve, jc->inner, jc->n_inner, err) < 0) {
		cerr_prefix(err, "event %llu", (unsigned long long)e.seq);
		return -1;
	}
	ev->seq = (uint64_t)e.seq;
	ev->t = e.t;
	ev->vtype = ve ? ve->id : VT_UNKNOWN;
	ev->kind = ve;
	ev->ignorable = e.ign_true;
	ev->turn = jturn ? *jturn : (struct json_span){0};
	ev->data = *jdata;
	return 0;
}

void event_release(struct event *ev)
{
	if (!ev)
		return;
	cJSON_Delete(ev->root);
	ev->root = ev->data = NULL;
}

void event_format(struct buf *out, uint64_t seq, int64_t t, const char *type, const char *turn,
		  bool ignorable, const cJSON *data)
{
	buf_printf(out, "{\"seq\":%llu,\"t\":%lld,\"type\":", (unsigned long long)seq, (long long)t);
	buf_add_json_string(out, type);
	if (turn) {
		buf_adds(out, ",\"turn\":");
		buf_add_json_string(out, turn);
	}
	if (ignorable)
		buf_adds(out, ",\"ignorable\":true");
	buf_adds(out, ",\"data\":");
	if (data) {
		char *s = json_print(data);
		buf_adds(out, s);
		free(s);
	} else {
		buf_adds(out, "{}");
	}
	buf_adds(out, "}\n");
}
