/* revision.h — one revision of a session log: which file, how long, and
 * the seq its next event gets.
 *
 * A scan reports the revision it read, the log handle keeps the one it
 * appends after, and repair fences its cut with one; all use this struct,
 * so none converts another's fields by hand. */
#ifndef CAIRN_REVISION_H
#define CAIRN_REVISION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct revision {
	dev_t dev;         /* identity of the file (0 for a buffer) */
	ino_t ino;
	uint64_t len;      /* its byte length */
	uint64_t next_seq; /* seq after its last valid event */
};

/* Whether a and b name the same file at the same length and next seq. */
static inline bool revision_same(const struct revision *a, const struct revision *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->len == b->len &&
	       a->next_seq == b->next_seq;
}

#endif
