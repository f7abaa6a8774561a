/* event.c — event line parsing and canonical formatting. */
#include "persist/event.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "persist/frame.h"

#include <stdlib.h>

#include <string.h>

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
	int64_t seq, t;
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
	if (!cJSON_IsObject(root))
		why = "not a JSON object";
	else if (!json_get_int(jseq, 0, JSON_MAX_SAFE_INT, &seq))
		why = "missing or invalid \"seq\"";
	else if (!json_get_int(jt, 0, JSON_MAX_SAFE_INT, &t))
		why = "missing or invalid \"t\"";
	else if (!cJSON_IsString(jtype) || !vocab_valid_type_name(jtype->valuestring))
		why = "missing or invalid \"type\"";
	else if (jturn && (!cJSON_IsString(jturn) || !*jturn->valuestring ||
			   strlen(jturn->valuestring) > TURN_ID_MAX))
		why = "invalid \"turn\"";
	else if (jign && !cJSON_IsBool(jign))
		why = "invalid \"ignorable\"";
	else if (!cJSON_IsObject(jdata))
		why = "missing or invalid \"data\"";
	if (why) {
		cJSON_Delete(root);
		return cerr_set(err, CERR_CORRUPT, 0, "event %llu: %s", (unsigned long long)expect_seq,
				why);
	}
	if ((uint64_t)seq != expect_seq) {
		cJSON_Delete(root);
		return cerr_set(err, CERR_CORRUPT, 0, "seq %lld where %llu was expected", (long long)seq,
				(unsigned long long)expect_seq);
	}
	const struct vocab_entry *ve = vocab_find(jtype->valuestring);
	bool ignorable = jign && cJSON_IsTrue(jign);
	if (!ve && !ignorable) {
		cerr_set(err, CERR_UNSUPPORTED, 0, "event %llu has unknown type '%s'",
			 (unsigned long long)seq, jtype->valuestring);
		cJSON_Delete(root);
		return -1;
	}
	if (ve) {
		if (ve->needs_turn && !jturn) {
			cJSON_Delete(root);
			return cerr_set(err, CERR_CORRUPT, 0, "event %llu: '%s' without \"turn\"",
					(unsigned long long)seq, ve->type);
		}
		if (vocab_check(ve, jdata, err) < 0) {
			cerr_prefix(err, "event %llu", (unsigned long long)seq);
			cJSON_Delete(root);
			return -1;
		}
	}
	ev->seq = (uint64_t)seq;
	ev->t = t;
	ev->type = jtype->valuestring;
	ev->vtype = ve ? ve->id : VT_UNKNOWN;
	ev->turn = jturn ? jturn->valuestring : NULL;
	ev->ignorable = ignorable;
	ev->kind = ve;
	ev->root = root;
	ev->data = jdata;
	ev->line = line;
	ev->line_len = n;
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
