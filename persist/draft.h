/* draft.h — the composer's unsent text, one file per project, kept apart
 * from every session log so it survives a restart.
 *
 *   <root>/drafts/<project-key>            the draft (0600; dir 0700)
 *   <root>/drafts/<project-key>+staging    a replacement being written
 *
 * A save writes the staging file, fsyncs it, renames it over the draft and
 * fsyncs the directory: a crash leaves the old draft or the new one, whole.
 * '+' never occurs in a project key (pathkey.h escapes it), so a staging
 * name cannot be another project's draft. A staging file a crash left is
 * removed by the next save of its project. Symlinks and foreign files fail
 * closed as in safefs.h. Writes go through the persistence FIFO
 * (fifo_draft); reads are plain calls. */
#ifndef CAIRN_DRAFT_H
#define CAIRN_DRAFT_H

#include <stddef.h>

#include "base/err.h"
#include "persist/frame.h"
#include "persist/store.h"

#define DRAFT_DIR "drafts"
/* The largest draft, in bytes: one event line, so a draft can always be
 * sent as one message event. */
#define DRAFT_MAX EVENT_MAX_LINE

/* Replace the draft of project cwd (NULL: no cwd) with the string text;
 * an empty text removes it. Text over DRAFT_MAX bytes or not valid UTF-8
 * is a usage error. On failure the previous draft is still there, whole,
 * unless err->outcome_unknown: the directory sync failed after the rename
 * (or removal), so either state may survive a power loss. */
int draft_save(struct store *st, const char *cwd, const char *text, struct cerr *err);
/* The draft of project cwd in *text, a string the caller frees. No draft:
 * an empty string, not an error. A draft file over DRAFT_MAX or not UTF-8
 * is corrupt. */
int draft_read(struct store *st, const char *cwd, char **text, struct cerr *err);

#endif
