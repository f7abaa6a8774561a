/* frame.c — zstd frame structure walk, decode and encode.
 *
 * The walk follows RFC 8878 §3.1.1: magic, frame header descriptor, optional
 * window descriptor, dictionary id and content size, then 3-byte block
 * headers until the last block, then the 4-byte content checksum. cairn's
 * frames must carry the content size and the checksum and no dictionary id. */
#include "persist/frame.h"
#include "base/xalloc.h"

#include <stdlib.h>
#include <string.h>

#include <zstd.h>

static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

enum frame_walk frame_walk(const uint8_t *p, size_t n, struct frame_info *fi)
{
	fi->frame_len = 0;
	fi->content_size = 0;
	fi->why = NULL;
	size_t m = n < 4 ? n : 4;
	if (memcmp(p, magic, m) != 0) {
		fi->why = "bad frame magic";
		return FRAME_INVALID;
	}
	if (n < 5)
		return FRAME_INCOMPLETE;
	uint8_t fhd = p[4];
	int fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, reserved = (fhd >> 3) & 1;
	int checksum = (fhd >> 2) & 1, dict_flag = fhd & 3;
	if (reserved) {
		fi->why = "reserved frame header bit set";
		return FRAME_INVALID;
	}
	if (!checksum) {
		fi->why = "frame without content checksum";
		return FRAME_INVALID;
	}
	if (dict_flag) {
		fi->why = "frame names a dictionary";
		return FRAME_INVALID;
	}
	static const int fcs_sizes[4] = {0, 2, 4, 8};
	int fcs_len = fcs_flag == 0 ? (single ? 1 : 0) : fcs_sizes[fcs_flag];
	if (fcs_len == 0) {
		fi->why = "frame without content size";
		return FRAME_INVALID;
	}
	size_t pos = 5 + (single ? 0 : 1);
	if (n < pos + (size_t)fcs_len)
		return FRAME_INCOMPLETE;
	uint64_t fcs = le(p + pos, fcs_len);
	if (fcs_len == 2)
		fcs += 256;
	fi->content_size = fcs;
	_Static_assert(FRAME_MAX_CONTENT == 16u * 1024u * 1024u, "the reasons below say 16 MiB");
	if (fcs > FRAME_MAX_CONTENT) {
		fi->why = "declared content larger than FRAME_MAX_CONTENT (16 MiB)";
		return FRAME_INVALID;
	}
	pos += (size_t)fcs_len;
	for (;;) {
		if (n < pos + 3)
			return FRAME_INCOMPLETE;
		uint32_t bh = (uint32_t)le(p + pos, 3);
		int last = bh & 1, type = (bh >> 1) & 3;
		uint32_t size = bh >> 3;
		pos += 3;
		if (type == 3) {
			fi->why = "reserved block type";
			return FRAME_INVALID;
		}
		if (size > FRAME_MAX_BLOCK) {
			fi->why = "block larger than 128 KiB";
			return FRAME_INVALID;
		}
		size_t data = type == 1 ? 1 : size; /* RLE stores one byte */
		if (n - pos < data)
			return FRAME_INCOMPLETE;
		pos += data;
		if (last)
			break;
	}
	if (n - pos < 4)
		return FRAME_INCOMPLETE;
	fi->frame_len = pos + 4;
	return FRAME_COMPLETE;
}

struct frame_codec {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
};

struct frame_codec *frame_codec_new(void)
{
	struct frame_codec *fc = xcalloc(1, sizeof *fc);
	fc->cctx = ZSTD_createCCtx();
	fc->dctx = ZSTD_createDCtx();
	if (!fc->cctx || !fc->dctx)
		abort();
	ZSTD_CCtx_setParameter(fc->cctx, ZSTD_c_compressionLevel, 3);
	ZSTD_CCtx_setParameter(fc->cctx, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(fc->cctx, ZSTD_c_contentSizeFlag, 1);
	ZSTD_CCtx_setParameter(fc->cctx, ZSTD_c_dictIDFlag, 0);
	return fc;
}

void frame_codec_free(struct frame_codec *fc)
{
	if (!fc)
		return;
	ZSTD_freeCCtx(fc->cctx);
	ZSTD_freeDCtx(fc->dctx);
	free(fc);
}

int frame_decode_into(struct frame_codec *fc, const uint8_t *p, const struct frame_info *fi,
		      char *out, const char **why)
{
	if (fi->content_size > FRAME_MAX_CONTENT) {
		*why = "frame content larger than the maximum";
		return -1;
	}
	size_t size = (size_t)fi->content_size;
	size_t r = ZSTD_decompressDCtx(fc->dctx, out, size, p, fi->frame_len);
	if (ZSTD_isError(r)) {
		*why = ZSTD_getErrorName(r);
		return -1;
	}
	if (r != size) {
		*why = "frame content size mismatch";
		return -1;
	}
	return 0;
}

char *frame_decode(struct frame_codec *fc, const uint8_t *p, const struct frame_info *fi,
		   const char **why)
{
	if (fi->content_size > FRAME_MAX_CONTENT) {
		*why = "frame content larger than FRAME_MAX_CONTENT (16 MiB)";
		return NULL;
	}
	size_t size = (size_t)fi->content_size;
	char *out = xmalloc(size + 1);
	if (frame_decode_into(fc, p, fi, out, why) < 0) {
		free(out);
		return NULL;
	}
	out[size] = '\0';
	return out;
}

int frame_encode(struct frame_codec *fc, const char *content, size_t n, struct buf *out)
{
	size_t bound = ZSTD_compressBound(n);
	buf_grow(out, bound);
	size_t r = ZSTD_compress2(fc->cctx, out->p + out->len, bound, content, n);
	if (ZSTD_isError(r))
		return -1;
	out->len += r;
	out->p[out->len] = '\0';
	return 0;
}
