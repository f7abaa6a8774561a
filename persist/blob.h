/* blob.h — content-addressed blobs beside a session's log.
 *
 *   <session dir>/blobs/<sha256 hex>     0600, named by the digest of its bytes
 *
 * A blob holds content too big for an event (persist/limits.h); the event
 * names it in its data as "blob": {"sha256": hex, "size": n} and keeps a
 * bounded head and tail inline. Calling sequence for a producer, holding
 * the session's writer lock (log_dir gives the directory):
 *   blob_write(dirfd, bytes, n, &ref)   durable when it returns 0
 *   blob_ref_to_data(data, &ref)        (or blob_spill for a long text)
 *   log_append(... that event ...)
 * A crash between the two leaves a blob no durable event names: repair
 * removes it (blob_sweep). A blob a durable event names goes only with its
 * session (trash and restore move the whole directory; purge removes it).
 *
 * Every function is safe on any thread: no state but its arguments, and
 * temporary names are random. All file calls go through fsops. Errors
 * follow base/err.h; messages name the blob by its digest. */
#ifndef CAIRN_BLOB_H
#define CAIRN_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/sha256.h"
#include "persist/limits.h"

struct scan;
struct load;

#define BLOB_DIR "blobs"
#define BLOB_SIZE_ANY UINT64_MAX /* blob_ref.size when only the digest is known */

struct blob_ref {
	char sha256[SHA256_HEX_LEN + 1]; /* lowercase hex */
	uint64_t size;
};

/* ---- Files ---- */

/* Write p[0..n) as blobs/<digest> under the session directory dirfd
 * (blobs/ made 0700 when missing) and fill *ref. Durable on success: the
 * file is written under a temporary name, fsynced, renamed into place and
 * blobs/ fsynced. A blob already there with the right bytes is kept (and
 * synced again); one with other bytes is replaced. n over BLOB_MAX:
 * CERR_USAGE. On failure no file of that name exists, unless it is
 * complete (CERR_IO with outcome_unknown: the rename was not synced). */
int blob_write(int dirfd, const void *p, size_t n, struct blob_ref *ref, struct cerr *err);
/* Check that the blob ref names is under dirfd with its size (unless
 * BLOB_SIZE_ANY) and digest. Missing: CERR_MISSING; other bytes, or not a
 * regular file: CERR_CORRUPT. */
int blob_verify(int dirfd, const struct blob_ref *ref, struct cerr *err);
/* Read the blob whole, verified as blob_verify, appending it to out. */
int blob_read(int dirfd, const struct blob_ref *ref, struct buf *out, struct cerr *err);
/* Verify the blob, then copy it to outfd, hashing it again on the way:
 * bytes changed meanwhile end in CERR_CORRUPT after the copy. A failed
 * write to outfd: CERR_IO. */
int blob_copy_to_fd(int dirfd, const struct blob_ref *ref, int outfd, struct cerr *err);

/* ---- References in events ---- */

/* Is s exactly 64 lowercase hex digits? */
bool blob_valid_hex(const char *s);
/* The "blob" field of an event's data: 1 with *ref filled, 0 when data
 * has none, -1 with CERR_CORRUPT when it is malformed. */
int blob_ref_from_data(const cJSON *data, struct blob_ref *ref, struct cerr *err);
/* The same for the field's value b: {"sha256": hex, "size": n} (other
 * keys ignored, as everywhere in data). 0, or -1 with CERR_CORRUPT. */
int blob_ref_from_json(const cJSON *b, struct blob_ref *ref, struct cerr *err);
/* Set data's "blob" field to ref (data is an object; replaces one there). */
void blob_ref_to_data(cJSON *data, const struct blob_ref *ref);
/* For a text field of an event: text[0..n) (valid UTF-8) longer than
 * BLOB_INLINE_MAX is written as a blob (*ref filled) and *inline_text gets
 * a new string, the caller's, to keep in the event instead: its first
 * BLOB_INLINE_HEAD and last BLOB_INLINE_TAIL bytes, cut at character
 * boundaries, around a line naming the blob. Returns 1 then, 0 for a text
 * that fits (*inline_text NULL: keep it as it is), -1 as blob_write. */
int blob_spill(int dirfd, const char *text, size_t n, struct blob_ref *ref, char **inline_text,
	       struct cerr *err);

/* ---- A session's blobs as a whole ---- */

/* Verify every blob named by an event of s (its valid prefix: the durable
 * events) under dirfd; *named (may be NULL) counts the references. Each
 * missing or mismatched blob is CERR_CORRUPT (committed content is lost),
 * its message naming session, event and digest, and is passed to report
 * with the event's seq (ref and err borrowed for the call). Returns how
 * many there were. */
size_t blob_check_scan(int dirfd, const struct scan *s, size_t *named,
		       void (*report)(void *ctx, const struct blob_ref *ref, uint64_t seq,
				      const struct cerr *err),
		       void *ctx);
/* Remove from dirfd's blobs/ every blob no event of s names, and the
 * temporary files of interrupted writes; *removed (may be NULL) counts
 * them. The caller holds the writer lock and s is the log as settled
 * (torn tail cut): a blob s names is never removed. */
int blob_sweep(int dirfd, const struct scan *s, size_t *removed, struct cerr *err);
/* blob_sweep for the log as a compact load l (load.h): the same blobs go,
 * and when blobs/ holds nothing no event is looked at. */
int blob_sweep_load(int dirfd, const struct load *l, size_t *removed, struct cerr *err);
/* Remove blobs/ and everything in it (a purge); missing is fine. */
int blob_remove_all(int dirfd, struct cerr *err);

#endif
