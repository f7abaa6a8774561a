/* frame.h — one zstd frame = one durable batch of JSON lines.
 *
 * frame_walk checks a frame's structure (RFC 8878 header and block headers)
 * without decoding, so a reader can tell an incomplete final frame (a torn
 * write) from damage before it allocates anything. frame_decode then
 * decompresses one complete frame and verifies its content checksum. */
#ifndef CAIRN_FRAME_H
#define CAIRN_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "persist/limits.h" /* EVENT_MAX_LINE, FRAME_MAX_CONTENT */

#define FRAME_MAX_BLOCK (128u * 1024u)       /* zstd's block maximum */

enum frame_walk {
	FRAME_COMPLETE,   /* a structurally whole frame of *frame_len bytes */
	FRAME_INCOMPLETE, /* the bytes are a strict prefix of a possible frame */
	FRAME_INVALID,    /* no valid frame starts here */
};

struct frame_info {
	size_t frame_len;      /* bytes of the whole frame (COMPLETE only) */
	uint64_t content_size; /* declared decompressed size (once known) */
	const char *why;       /* static reason for INVALID */
};

/* Walk the frame starting at p[0..n). Never reads past p + n. */
enum frame_walk frame_walk(const uint8_t *p, size_t n, struct frame_info *fi);

struct frame_codec; /* zstd contexts, reused across frames */

/* Contexts for encoding and decoding; free with frame_codec_free. */
struct frame_codec *frame_codec_new(void);
void frame_codec_free(struct frame_codec *fc);

/* Decode a COMPLETE frame. Returns a malloc'd buffer of exactly
 * fi->content_size bytes (plus a NUL) that the caller frees, or NULL with a
 * static reason in *why (oversize, zstd error, checksum, size mismatch). */
char *frame_decode(struct frame_codec *fc, const uint8_t *p, const struct frame_info *fi,
		   const char **why);
/* The same into out, which has room for fi->content_size bytes (no NUL
 * is added): 0, or -1 with a static reason in *why. */
int frame_decode_into(struct frame_codec *fc, const uint8_t *p, const struct frame_info *fi,
		      char *out, const char **why);
/* Compress content[0..n) as one frame with content size and checksum,
 * appending it to out. Returns 0, or -1 when zstd fails (never for valid
 * sizes). */
int frame_encode(struct frame_codec *fc, const char *content, size_t n, struct buf *out);

#endif
