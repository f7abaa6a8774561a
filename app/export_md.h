/* export_md.h — the Markdown export of a session's active path, for
 * reading (docs/format.md §14.2). Deterministic: the same log gives the
 * same bytes. */
#ifndef CAIRN_EXPORT_MD_H
#define CAIRN_EXPORT_MD_H

#include <stdbool.h>

#include "base/buf.h"
#include "base/err.h"
#include "persist/scan.h"

struct export_md_opts {
	bool reasoning;   /* include assistant/reasoning */
	bool tool_output; /* include tool results' output */
};

/* Append to out (the caller's) the Markdown of s's active path; blobs are
 * read whole from the session directory dirfd (missing or damaged:
 * CERR_CORRUPT, and nothing is appended). 0 or -1. */
int export_md(const struct scan *s, int dirfd, const struct export_md_opts *o, struct buf *out,
	      struct cerr *err);

#endif
