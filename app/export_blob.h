/* export_blob.h — the whole content a blob holds for an event being
 * exported (persist/blob.h): read and verified, a blob that is missing or
 * damaged classified as corrupt (content a durable event names is lost,
 * docs/format.md §12). */
#ifndef CAIRN_EXPORT_BLOB_H
#define CAIRN_EXPORT_BLOB_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/err.h"

/* Read the blob event data names (the event at seq, for messages) from
 * the session directory dirfd into out (cleared first; the caller's):
 * 1 when there is one, 0 when data names none, -1 (CERR_CORRUPT) when it
 * is missing or damaged. */
int export_blob(int dirfd, const cJSON *data, uint64_t seq, struct buf *out, struct cerr *err);

#endif
