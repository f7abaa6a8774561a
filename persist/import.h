/* import.h — a session exported as JSON Lines (docs/format.md, "Export
 * file"), checked whole and then published as a new log.
 *
 * Calling sequence: import_parse (in memory, writes nothing: every line's
 * event, contiguous seqs, a format-1 header, every named blob whole with
 * its size and digest, the trailer's counts), then import_publish (blobs,
 * then the log under one no-overwrite rename), then import_free. Errors
 * follow base/err.h: a bad file is CERR_CORRUPT naming its line, a header
 * of another format CERR_UNSUPPORTED, an id already live or in the trash
 * CERR_CONFLICT. Blocks on the disk: a command-line path only. */
#ifndef CAIRN_IMPORT_H
#define CAIRN_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "persist/log.h"
#include "persist/store.h"

struct import;

/* Check the export file p[0..n) and build the log it becomes. new_id
 * non-NULL: the session gets that id, its header records imported_from
 * {id} and turn/start drops client_submit_id. Caller frees *out with
 * import_free. */
int import_parse(const char *p, size_t n, const char *new_id, struct import **out,
		 struct cerr *err);
/* Publish it under st: its blobs, then its log in one no-overwrite rename.
 * *dur gets what the log's publication made durable (for the catalog). */
int import_publish(struct store *st, struct import *im, struct log_mark *dur, struct cerr *err);
/* The session id (owned by im). */
const char *import_id(const struct import *im);
/* The title of its last session/meta that sets one (owned by im; NULL: none). */
const char *import_title(const struct import *im);
/* Events (header included) and distinct blobs. */
size_t import_events(const struct import *im);
size_t import_blobs(const struct import *im);
void import_free(struct import *im);

#endif
