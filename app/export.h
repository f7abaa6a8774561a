/* export.h — a session's log rendered for `cairn export`: JSON Lines
 * that carry it whole (the events, then its blobs, then a trailer), or
 * Markdown of its active path for reading. Both read a scan (the valid
 * prefix of the log, read without the lock) and the session's directory
 * for its blobs; both append to a buffer and write nothing themselves. */
#ifndef CAIRN_EXPORT_H
#define CAIRN_EXPORT_H

#include <stdbool.h>

#include "base/buf.h"
#include "base/err.h"
#include "persist/scan.h"

/* Largest blob slice in one JSON line (its base64 stays well under the
 * log's 1 MiB line limit). */
#define EXPORT_CHUNK ((size_t)512 * 1024)

struct export_md_opts {
	bool reasoning;   /* include assistant/reasoning */
	bool tool_output; /* include tool results' output */
};

/* Append the JSON Lines export of s (its valid events, header first)
 * with the blobs they name, read from dirfd, and the trailer. A named
 * blob missing or not matching: CERR_CORRUPT. 0 or -1. */
int export_json(const struct scan *s, int dirfd, struct buf *out, struct cerr *err);
/* Append the Markdown of s's active path. Blobs are read whole from
 * dirfd (missing or damaged: CERR_CORRUPT). 0 or -1. */
int export_md(const struct scan *s, int dirfd, const struct export_md_opts *o, struct buf *out,
	      struct cerr *err);
/* Read the blob the event data names into out (cleared first): 1 when
 * there is one, 0 when data names none, -1 (CERR_CORRUPT) when it is
 * missing or damaged. */
int export_blob(int dirfd, const cJSON *data, uint64_t seq, struct buf *out, struct cerr *err);

#endif
