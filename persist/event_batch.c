/* event_batch.c — reading a producer's batch of events (event_batch.h). */
#include "persist/event_batch.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

/* The one reader of an event object: every key is known and of its kind. */
static int read_event(const cJSON *o, struct log_event *ev, struct cerr *err)
{
	*ev = (struct log_event){0};
	if (!cJSON_IsObject(o))
		return cerr_set(err, CERR_USAGE, 0, "not a JSON object");
	for (const cJSON *f = o->child; f; f = f->next) {
		const char *k = f->string;
		if (strcmp(k, "type") == 0 && cJSON_IsString(f))
			ev->type = f->valuestring;
		else if (strcmp(k, "turn") == 0 && cJSON_IsString(f))
			ev->turn = f->valuestring;
		else if (strcmp(k, "ignorable") == 0 && cJSON_IsBool(f))
			ev->ignorable = cJSON_IsTrue(f);
		else if (strcmp(k, "data") == 0 && cJSON_IsObject(f))
			ev->data = f;
		else if (strcmp(k, "seq") == 0 || strcmp(k, "t") == 0)
			return cerr_set(err, CERR_USAGE, 0, "\"%s\" is assigned by the store", k);
		else if (strcmp(k, "turn") == 0 && cJSON_IsNull(f))
			return cerr_set(err, CERR_USAGE, 0,
					"\"turn\" is null (leave it out for an event outside a turn)");
		else
			return cerr_set(err, CERR_USAGE, 0, "unexpected or invalid \"%s\"", k);
	}
	if (!ev->type)
		return cerr_set(err, CERR_USAGE, 0, "missing \"type\"");
	return 0;
}

int event_batch_add_json(struct event_batch *b, const cJSON *o, struct cerr *err)
{
	struct log_event ev;
	if (read_event(o, &ev, err) < 0)
		return -1;
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->evs = xreallocarray(b->evs, b->cap, sizeof *b->evs);
	}
	b->evs[b->n++] = ev;
	return 0;
}

int event_batch_from_json(const cJSON *arr, struct event_batch *b, struct cerr *err)
{
	*b = (struct event_batch)EVENT_BATCH_INIT;
	if (!cJSON_IsArray(arr))
		return cerr_set(err, CERR_USAGE, 0, "a batch is a JSON array of events");
	size_t i = 0;
	for (const cJSON *e = arr->child; e; e = e->next) {
		if (event_batch_add_json(b, e, err) < 0) {
			cerr_prefix(err, "event %zu", i + 1);
			event_batch_release(b);
			return -1;
		}
		i++;
	}
	return 0;
}

void event_batch_release(struct event_batch *b)
{
	if (!b)
		return;
	free(b->evs);
	*b = (struct event_batch)EVENT_BATCH_INIT;
}

cJSON *event_batch_event(enum vocab_type type, const char *turn, cJSON *data)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", vocab_type_name(type));
	if (turn)
		cJSON_AddStringToObject(e, "turn", turn);
	cJSON_AddItemToObject(e, "data", data ? data : cJSON_CreateObject());
	return e;
}
