/* event_batch.h — a batch of events as producers give it to the store.
 *
 * One shape from producer to disk: a JSON array of objects
 * {"type","turn"?,"ignorable"?,"data"?}, read with one strictness by
 * `cairn log append`, the persistence FIFO and repair. seq and t are the
 * store's to assign; a "turn" of null, a "data" that is not an object, an
 * unknown key or a wrong kind is refused (CERR_USAGE) before anything is
 * written. What is refused here is only the shape: the vocabulary and the
 * limits are checked when the batch is appended (log.h). */
#ifndef CAIRN_EVENT_BATCH_H
#define CAIRN_EVENT_BATCH_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "persist/log.h"
#include "persist/vocab.h"

struct event_batch {
	struct log_event *evs; /* owned array; each event borrows from its JSON */
	size_t n, cap;
};

#define EVENT_BATCH_INIT {NULL, 0, 0}

/* Read the batch in arr (a JSON array) into *b, which borrows from arr:
 * arr must outlive b. On failure err names the event ("event N: ...")
 * and b is left empty. Release b with event_batch_release either way. */
int event_batch_from_json(const cJSON *arr, struct event_batch *b, struct cerr *err);
/* Read one event object o and add it to b (which borrows from o); the
 * same strictness, for producers that read events one by one (`log
 * append` reads lines). On failure b is unchanged. */
int event_batch_add_json(struct event_batch *b, const cJSON *o, struct cerr *err);
/* Free b's array (not the JSON it borrows from) and empty it; NULL-safe. */
void event_batch_release(struct event_batch *b);
/* A new event object {"type", "turn"? (NULL: none), "data"} in the shape
 * the batches above take; data is taken over (NULL: {}). Caller owns it. */
cJSON *event_batch_event(enum vocab_type type, const char *turn, cJSON *data);

#endif
