/* limits.h — the sizes every producer of session content must respect, in
 * one place, so a refusal can name the limit it enforces ("event line is
 * 1048700 bytes; the limit is EVENT_MAX_LINE = 1048576").
 *
 * EVENT_MAX_LINE and FRAME_MAX_CONTENT are part of log format 1: readers
 * treat a larger line or frame as corruption, so they never grow. Content
 * that would not fit goes to a blob (persist/blob.h), and the event keeps
 * a bounded head and tail of it inline. */
#ifndef CAIRN_LIMITS_H
#define CAIRN_LIMITS_H

#include <stdint.h>

/* One event line, LF excluded. */
#define EVENT_MAX_LINE (1u * 1024u * 1024u)
/* The decompressed content of one frame, i.e. one appended batch. */
#define FRAME_MAX_CONTENT (16u * 1024u * 1024u)
/* A text longer than this goes to a blob instead of the event. */
#define BLOB_INLINE_MAX (256u * 1024u)
/* What an event keeps inline of a text sent to a blob: its first
 * BLOB_INLINE_HEAD and last BLOB_INLINE_TAIL bytes (cut at UTF-8
 * boundaries) around a note naming the blob. */
#define BLOB_INLINE_HEAD (16u * 1024u)
#define BLOB_INLINE_TAIL (16u * 1024u)
/* One blob. */
#define BLOB_MAX ((uint64_t)1 << 30)

#endif
