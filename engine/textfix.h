/* textfix.h — model text made valid before it is captured.
 *
 * Providers send text as JSON string deltas. cJSON refuses a whole payload
 * for one lone surrogate escape ("\ud83d" with its pair in the next chunk)
 * and cuts a string at "\u0000", so textfix_json_escapes rewrites those
 * escapes first: a lone surrogate becomes its 3-byte generalized UTF-8
 * form, NUL becomes U+FFFD. A struct textfix then turns the decoded deltas
 * into well-formed UTF-8: a high surrogate (or an incomplete sequence) at
 * the end of a delta waits for the next delta; a pair split across deltas
 * is joined; lone surrogates, NUL and invalid bytes become U+FFFD.
 * textfix_piece cuts a text into pieces that fit one log line. */
#ifndef CAIRN_TEXTFIX_H
#define CAIRN_TEXTFIX_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "persist/limits.h"

/* The largest JSON-escaped size of one captured text: a log line less
 * room for the envelope (seq, t, type, a turn id of at most 128 bytes) and
 * the other fields of the event. */
#define TEXTFIX_PIECE_MAX ((size_t)EVENT_MAX_LINE - 4096)

struct textfix {
	unsigned char held[8]; /* private: bytes waiting for the next delta */
	size_t nheld;          /* private */
};

#define TEXTFIX_INIT {{0}, 0}

/* Append the valid UTF-8 of delta s[0..n) to out; bytes that may continue
 * in the next delta are held back. */
void textfix_feed(struct textfix *tf, const char *s, size_t n, struct buf *out);
/* The stream ended: what is held is appended as U+FFFD; tf is reset. */
void textfix_finish(struct textfix *tf, struct buf *out);
/* s[0..n) as one whole text made valid; caller frees. */
char *textfix_string(const char *s, size_t n);
/* Copy the JSON text s[0..n) to out with every lone surrogate escape
 * replaced by its generalized UTF-8 bytes and every "\u0000" (and raw NUL)
 * by U+FFFD, so cJSON parses it. Returns true when something changed. */
bool textfix_json_escapes(const char *s, size_t n, struct buf *out);
/* The length of the longest prefix of the valid UTF-8 text s[0..n) that
 * ends on a character boundary and takes at most max bytes once
 * JSON-escaped; at least one character when n > 0 and max >= 6. */
size_t textfix_piece(const char *s, size_t n, size_t max);

#endif
