/* title.h — a session's title as text is shown: whitespace collapsed,
 * controls and invisible formatting dropped (joiners kept), bounded in
 * grapheme clusters with an ellipsis at a cut. Used by the catalog (the
 * title a first prompt gives), the session list and the chat screen's
 * status line, so all three name a session alike. */
#ifndef CAIRN_BASE_TITLE_H
#define CAIRN_BASE_TITLE_H

#include <stddef.h>

#define TITLE_PROMPT_MAX 80    /* characters of a title derived from a prompt */
#define TITLE_EXPLICIT_MAX 200 /* characters of an explicit title shown on a terminal */

/* The title of a text, at most max characters (an ellipsis marks a cut).
 * Caller frees. */
char *title_of(const char *text, size_t max);

#endif
