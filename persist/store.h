/* store.h — the data root and where sessions live in it.
 *
 *   <root>/sessions/<project-key>/<id>/session.jsonl.zst
 *   <root>/sessions/<project-key>/<id>/session.lock
 *   <root>/sessions/<project-key>/<id>/blobs/<sha256>  (persist/blob.h)
 *   <root>/trash/<project-key>/<id>/...        deleted, restorable
 *
 * Sessions are found by id at sessions/<any key>/<id>/; the key is opaque
 * and never recomputed for an existing session. A directory without a log
 * file is not a session. */
#ifndef CAIRN_STORE_H
#define CAIRN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "persist/pathkey.h"

#define LOG_FILE "session.jsonl.zst"
#define STORE_SESSIONS "sessions"
#define STORE_TRASH "trash"

struct store;

struct session_ref {
	char id[SESSION_ID_MAX + 1];
	char key[PATHKEY_MAX + 1];
};

/* The default root: $CAIRN_HOME, else $XDG_DATA_HOME/cairn, else
 * ~/.local/share/cairn; XDG_DATA_HOME and HOME count only as absolute
 * paths (a relative one is skipped like an unset one). Caller frees; NULL
 * when none applies. */
char *store_default_root(void);
/* Open the root (creating it 0700 with create). Caller frees with
 * store_close. */
int store_open(const char *root, bool create, struct store **out, struct cerr *err);
void store_close(struct store *st);
/* The root path as given; owned by st. */
const char *store_root(const struct store *st);
/* The root directory fd; owned by st. */
int store_root_fd(const struct store *st);

/* Resolve an id or a unique id prefix to a session (exact id wins).
 * No match: CERR_MISSING. Several ids: CERR_USAGE listing the candidates.
 * One id under several project folders: CERR_CORRUPT naming every folder
 * (fail closed: the store does not pick one), with *ref the first. */
int store_resolve(struct store *st, const char *id_or_prefix, struct session_ref *ref,
		  struct cerr *err);
/* The same among the sessions of one area (STORE_SESSIONS or STORE_TRASH). */
int store_resolve_in(struct store *st, const char *area, const char *id_or_prefix,
		     struct session_ref *ref, struct cerr *err);
/* store_resolve_in for a whole id only (no prefix): a few probes per
 * project folder, never a listing of the sessions; not there: CERR_MISSING.
 * For callers that hold an id, not a user's query. */
int store_find_in(struct store *st, const char *area, const char *id, struct session_ref *ref,
		  struct cerr *err);
/* Every session with a log file in area STORE_SESSIONS or STORE_TRASH.
 * *refs is a new array the caller frees (may be NULL when *n is 0). */
int store_list(struct store *st, const char *area, struct session_ref **refs, size_t *n,
	       struct cerr *err);
/* A session found on disk, with its log file's identity and size. */
struct store_entry {
	struct session_ref ref;
	bool trash;          /* found under trash/ */
	dev_t dev;
	ino_t ino;
	uint64_t size;
	int64_t ctime_ns;     /* the log file's ctime */
	int64_t dir_ctime_ms; /* the session directory's ctime (when trashed) */
};

/* Every session of both areas with its log's stat. Caller frees *out. */
int store_list_entries(struct store *st, struct store_entry **out, size_t *n, struct cerr *err);

/* Call fn for every <key>/<id> folder of area (STORE_SESSIONS or
 * STORE_TRASH), with or without a log; fn returns 0 to go on, else that
 * value stops the walk and is returned. keyfd is the project folder,
 * borrowed for the call. */
int store_each_dir(struct store *st, const char *area,
		   int (*fn)(void *ctx, int keyfd, const char *key, const char *id), void *ctx,
		   struct cerr *err);
/* Open the log of ref in one area read-only, never through a symlink.
 * Returns a fd the caller closes, or -1 (a symlink, a foreign owner or a
 * wrong file type at any level: CERR_CORRUPT; not there: CERR_MISSING). */
int store_open_log(struct store *st, const struct session_ref *ref, bool trash, struct cerr *err);
/* The folder of ref in one area, read-only, by the same rules: a fd the
 * caller closes, or -1 (not there: CERR_MISSING). */
int store_open_dir(struct store *st, const struct session_ref *ref, bool trash, struct cerr *err);
/* The same for a session listed earlier (store_list_entries) that may have
 * moved since (deleted to the trash, restored): it is looked for again in
 * both areas. *trash is where it was listed on entry and where it was
 * opened on success. Gone from both (purged): CERR_MISSING. */
int store_open_log_moved(struct store *st, const struct session_ref *ref, bool *trash,
			 struct cerr *err);

/* The path of ref's log in one area, for messages and for callers that
 * open by path; caller frees. */
char *store_log_path(const struct store *st, const struct session_ref *ref, bool trash);
/* The session id of a log path inside st's sessions/ area (symlinks
 * resolved), or NULL for any other path; caller frees. */
char *store_session_of_path(const struct store *st, const char *path);

/* Open sessions/<key>/ and sessions/<key>/<id>/ (creating both 0700 with
 * create). The caller closes *keyfd and *dirfd. */
int store_open_session_dir(struct store *st, const struct session_ref *ref, bool create,
			   int *keyfd, int *dirfd, struct cerr *err);
/* Move a whole session directory to trash/<key>/<id> under its writer lock,
 * syncing both parent directories. A lock held elsewhere: CERR_LOCKED.
 * *deleted_at_ms (may be NULL) gets the moved directory's ctime, which a
 * rebuild of the catalog reads back as the deletion time. */
int store_trash(struct store *st, const struct session_ref *ref, int64_t *deleted_at_ms,
		struct cerr *err);

/* Put a trashed session back at sessions/<key>/<id> (never over a live
 * one: CERR_CONFLICT), under its lock, syncing both directories. */
int store_restore(struct store *st, const struct session_ref *ref, struct cerr *err);
/* Remove a trashed session's directory for good, lock file included,
 * under its lock (held elsewhere: CERR_LOCKED); the parent is synced. */
int store_purge(struct store *st, const struct session_ref *ref, struct cerr *err);

#endif
