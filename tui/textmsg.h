/* textmsg.h — one message of the transcript as display lines, built while
 * its text streams in.
 *
 * The caller appends text as it arrives and reads lines at any time. A
 * markdown message keeps the lines of its closed top-level blocks and
 * re-parses and re-renders only the open (last) one, so an append costs
 * the same in a 20,000-word answer as in a short one; the lines are the
 * same whatever the pieces the text came in. A plain message (a prompt,
 * tool output) is wrapped and sanitised without markdown, line by line.
 *
 * Calling sequence:
 *	m = textmsg_new(TEXTMSG_MARKDOWN, TS_NORMAL, cols);
 *	textmsg_append(m, piece, n); ...
 *	for (i = 0; i < textmsg_count(m); i++) draw(textmsg_line(m, i));
 *	textmsg_set_width(m, new_cols);    (on SIGWINCH)
 *	textmsg_free(m); */
#ifndef CAIRN_TEXTMSG_H
#define CAIRN_TEXTMSG_H

#include <stddef.h>

#include "tui/textlines.h"

enum textmsg_kind {
	TEXTMSG_MARKDOWN,
	TEXTMSG_PLAIN, /* word-wrapped, every source line its own paragraph */
};

struct textmsg;

/* An empty message, width cells wide; style is ORed into every span of a
 * plain message (TS_DIM for reasoning, say). The caller frees it with
 * textmsg_free, which accepts NULL. */
struct textmsg *textmsg_new(enum textmsg_kind kind, unsigned style, int width);
void textmsg_free(struct textmsg *m);

/* Appends s[0..n) (copied; any bytes, a character may be cut between two
 * appends) and brings the lines up to date. */
void textmsg_append(struct textmsg *m, const char *s, size_t n);
/* Lays every line out again for a new width. */
void textmsg_set_width(struct textmsg *m, int width);

size_t textmsg_count(const struct textmsg *m);
/* Line i (i < count), borrowed from m until its next append or width
 * change. */
struct tline textmsg_line(const struct textmsg *m, size_t i);
/* The text appended so far, n bytes; borrowed from m until its next
 * append (what a copy to the clipboard takes). */
const char *textmsg_source(const struct textmsg *m, size_t *n);

#endif
