/* export_json.h — the JSON Lines export of a session (docs/format.md
 * §14.1): its valid events as `log cat` prints them, then the blobs they
 * name in base64 chunks, then a trailer with the counts. */
#ifndef CAIRN_EXPORT_JSON_H
#define CAIRN_EXPORT_JSON_H

#include "base/buf.h"
#include "base/err.h"
#include "persist/scan.h"

/* Largest blob slice in one line: its base64 stays well under the log's
 * 1 MiB line limit. */
#define EXPORT_JSON_CHUNK ((size_t)512 * 1024)

/* Append to out (the caller's) the export of s (its valid prefix) with
 * the blobs its events name, read from the session directory dirfd. A
 * named blob missing or not matching: CERR_CORRUPT. 0 or -1. */
int export_json(const struct scan *s, int dirfd, struct buf *out, struct cerr *err);

#endif
