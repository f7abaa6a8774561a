/* test_frame.c — persist/frame: encode/walk/decode round trips, the
 * structural walk on every prefix, and rejection of frames cairn never
 * writes or that are damaged. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "base/buf.h"
#include "persist/frame.h"

static struct frame_codec *fc;

static int setup(void **state)
{
	(void)state;
	fc = frame_codec_new();
	return fc ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	frame_codec_free(fc);
	fc = NULL;
	return 0;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char *random_bytes(size_t n)
{
	char *p = malloc(n ? n : 1);
	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(rnd() >> 24);
	return p;
}

static char *compressible(size_t n)
{
	char *p = malloc(n + 64);
	assert_non_null(p);
	size_t k = 0;
	for (unsigned i = 0; k < n; i++) {
		char line[64];
		int m = snprintf(line, sizeof line, "{\"seq\":%u,\"type\":\"assistant/text\"}\n", i);
		memcpy(p + k, line, (size_t)m);
		k += (size_t)m;
	}
	return p;
}

static void encode(const char *c, size_t n, struct buf *out)
{
	buf_reset(out);
	assert_int_equal(frame_encode(fc, c, n, out), 0);
	assert_true(out->len > 0);
}

/* Offset of the first block header, read from the frame header. */
static size_t first_block(const uint8_t *p)
{
	uint8_t fhd = p[4];
	int fcs_flag = fhd >> 6, single = (fhd >> 5) & 1;
	static const size_t fcs[4] = {0, 2, 4, 8};
	size_t fcs_len = fcs_flag ? fcs[fcs_flag] : (size_t)single;
	return 5 + (single ? 0 : 1) + fcs_len;
}

/* Offsets of every block header of a valid frame. */
static size_t block_headers(const uint8_t *p, size_t *at, size_t max)
{
	size_t pos = first_block(p), n = 0;
	for (;;) {
		uint32_t bh = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16;
		assert_true(n < max);
		at[n++] = pos;
		uint32_t type = (bh >> 1) & 3, size = bh >> 3;
		pos += 3 + (type == 1 ? 1 : size);
		if (bh & 1)
			return n;
	}
}

static void put_block_header(uint8_t *p, uint32_t size, uint32_t type, uint32_t last)
{
	uint32_t bh = size << 3 | type << 1 | last;
	p[0] = (uint8_t)bh;
	p[1] = (uint8_t)(bh >> 8);
	p[2] = (uint8_t)(bh >> 16);
}

static void expect_invalid(const uint8_t *p, size_t n)
{
	struct frame_info fi;
	enum frame_walk w = frame_walk(p, n, &fi);
	if (w != FRAME_INVALID)
		fail_msg("walk gave %d, not FRAME_INVALID", (int)w);
	assert_non_null(fi.why);
}

/* Encode, walk every prefix and the whole, decode; returns the blocks. */
static size_t roundtrip(const char *c, size_t n)
{
	struct buf f = BUF_INIT;
	encode(c, n, &f);
	const uint8_t *p = (const uint8_t *)f.p;
	struct frame_info fi;
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
	assert_int_equal(fi.frame_len, f.len);
	assert_int_equal(fi.content_size, n);
	assert_null(fi.why);

	const char *why = NULL;
	char *d = frame_decode(fc, p, &fi, &why);
	assert_non_null(d);
	assert_memory_equal(d, c, n);
	assert_int_equal(d[n], '\0');
	free(d);

	for (size_t k = 0; k < f.len; k++) {
		struct frame_info pi;
		enum frame_walk w = frame_walk(p, k, &pi);
		if (w != FRAME_INCOMPLETE)
			fail_msg("prefix %zu of %zu: walk gave %d", k, f.len, (int)w);
	}

	/* Bytes after the frame are not part of it. */
	size_t len = f.len;
	buf_add(&f, "\x28\xB5\x2F\xFD garbage", 12);
	p = (const uint8_t *)f.p;
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
	assert_int_equal(fi.frame_len, len);

	size_t at[64];
	size_t blocks = block_headers(p, at, 64);
	buf_release(&f);
	return blocks;
}

static void test_small_and_random_content_round_trips(void **state)
{
	(void)state;
	assert_int_equal(roundtrip("x", 1), 1);
	assert_int_equal(roundtrip("", 0), 1);
	char *r = random_bytes(1024);
	assert_int_equal(roundtrip(r, 1024), 1);
	free(r);
	char *c = compressible(1024);
	assert_int_equal(roundtrip(c, 1024), 1);
	free(c);
}

static void test_roundtrip_random_multiblock(void **state)
{
	(void)state;
	size_t n = 200 * 1024;
	char *r = random_bytes(n);
	size_t blocks = roundtrip(r, n);
	assert_true(blocks >= 2);
	free(r);
}

static void test_roundtrip_compressible_1mib(void **state)
{
	(void)state;
	size_t n = 1024 * 1024;
	char *c = compressible(n);
	size_t blocks = roundtrip(c, n);
	assert_true(blocks >= 8); /* 1 MiB in blocks of at most 128 KiB */
	struct buf f = BUF_INIT;
	encode(c, n, &f);
	assert_true(f.len < n / 4);
	buf_release(&f);
	free(c);
}

static void test_max_content_frame_round_trips(void **state)
{
	(void)state;
	size_t n = FRAME_MAX_CONTENT;
	char *c = compressible(n);
	struct buf f = BUF_INIT;
	encode(c, n, &f);
	struct frame_info fi;
	assert_int_equal(frame_walk((const uint8_t *)f.p, f.len, &fi), FRAME_COMPLETE);
	assert_int_equal(fi.content_size, n);
	const char *why = NULL;
	char *d = frame_decode(fc, (const uint8_t *)f.p, &fi, &why);
	assert_non_null(d);
	assert_memory_equal(d, c, n);
	free(d);
	buf_release(&f);
	free(c);
}

static void test_walk_rejects_foreign_frames(void **state)
{
	(void)state;
	struct buf f = BUF_INIT;
	encode("hello\n", 6, &f);
	uint8_t *p = (uint8_t *)f.p;

	/* bad magic, at every magic byte, even before the rest arrives */
	for (int i = 0; i < 4; i++) {
		p[i] ^= 0x01;
		expect_invalid(p, f.len);
		expect_invalid(p, (size_t)i + 1);
		p[i] ^= 0x01;
	}
	/* skippable frames (magic 0x184D2A5?) are not cairn frames */
	static const uint8_t skip0[] = {0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 'a', 'b', 'c', 'd'};
	static const uint8_t skipf[] = {0x5F, 0x2A, 0x4D, 0x18, 0, 0, 0, 0};
	expect_invalid(skip0, sizeof skip0);
	expect_invalid(skipf, sizeof skipf);
	/* legacy / other magic numbers */
	static const uint8_t zeros[8] = {0};
	expect_invalid(zeros, sizeof zeros);

	/* reserved frame header bit */
	p[4] |= 0x08;
	expect_invalid(p, f.len);
	expect_invalid(p, 5);
	p[4] &= (uint8_t)~0x08;
	/* a dictionary id */
	p[4] |= 0x01;
	expect_invalid(p, f.len);
	p[4] &= (uint8_t)~0x01;

	struct frame_info fi;
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
	assert_int_equal(frame_walk(p, 0, &fi), FRAME_INCOMPLETE);
	buf_release(&f);
}

static void test_walk_requires_checksum_and_size(void **state)
{
	(void)state;
	const char *src = "{\"seq\":0}\n{\"seq\":1}\n";
	size_t n = strlen(src);
	size_t cap = ZSTD_compressBound(n) + 64;
	uint8_t *dst = malloc(cap);
	char back[64];
	ZSTD_CCtx *c = ZSTD_createCCtx();
	assert_non_null(c);

	/* no content checksum: a valid zstd frame, still not a cairn frame */
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
	size_t r = ZSTD_compress2(c, dst, cap, src, n);
	assert_false(ZSTD_isError(r));
	assert_int_equal(ZSTD_decompress(back, sizeof back, dst, r), n);
	expect_invalid(dst, r);

	/* no content size (flag off) */
	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
	r = ZSTD_compress2(c, dst, cap, src, n);
	assert_false(ZSTD_isError(r));
	assert_true(ZSTD_getFrameContentSize(dst, r) == ZSTD_CONTENTSIZE_UNKNOWN);
	expect_invalid(dst, r);

	/* no content size: streaming, the size is unknown when the header is
	 * written */
	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
	ZSTD_outBuffer out = {dst, cap, 0};
	ZSTD_inBuffer in = {src, n, 0};
	r = ZSTD_compressStream2(c, &out, &in, ZSTD_e_continue);
	assert_false(ZSTD_isError(r));
	ZSTD_inBuffer none = {NULL, 0, 0};
	do {
		r = ZSTD_compressStream2(c, &out, &none, ZSTD_e_end);
		assert_false(ZSTD_isError(r));
	} while (r != 0);
	assert_true(ZSTD_getFrameContentSize(dst, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
	assert_int_equal(ZSTD_decompress(back, sizeof back, dst, out.pos), n);
	expect_invalid(dst, out.pos);

	/* the same with default flags and a streamed input of unknown size */
	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	out.pos = 0;
	in.pos = 0;
	r = ZSTD_compressStream2(c, &out, &in, ZSTD_e_continue);
	assert_false(ZSTD_isError(r));
	do {
		r = ZSTD_compressStream2(c, &out, &none, ZSTD_e_end);
		assert_false(ZSTD_isError(r));
	} while (r != 0);
	assert_true(ZSTD_getFrameContentSize(dst, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
	expect_invalid(dst, out.pos);

	ZSTD_freeCCtx(c);
	free(dst);
}

static void test_walk_judges_block_headers_before_their_data(void **state)
{
	(void)state;
	struct buf f = BUF_INIT;
	encode("x", 1, &f);
	uint8_t *p = (uint8_t *)f.p;
	size_t b = first_block(p);
	uint8_t saved[3];
	memcpy(saved, p + b, 3);

	/* a block declaring more than 128 KiB: invalid before its data */
	put_block_header(p + b, FRAME_MAX_BLOCK + 1, 0, 1);
	expect_invalid(p, f.len);
	expect_invalid(p, b + 3);
	put_block_header(p + b, (1u << 21) - 1, 2, 0);
	expect_invalid(p, f.len);
	/* exactly 128 KiB is allowed: the data is simply not there yet */
	put_block_header(p + b, FRAME_MAX_BLOCK, 0, 1);
	struct frame_info fi;
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_INCOMPLETE);
	/* reserved block type */
	for (uint32_t last = 0; last < 2; last++) {
		put_block_header(p + b, 1, 3, last);
		expect_invalid(p, f.len);
		expect_invalid(p, b + 3);
	}
	memcpy(p + b, saved, 3);
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
	buf_release(&f);

	/* a later block of a multi-block frame */
	size_t n = 300 * 1024;
	char *r = random_bytes(n);
	encode(r, n, &f);
	p = (uint8_t *)f.p;
	size_t at[16];
	size_t blocks = block_headers(p, at, 16);
	assert_true(blocks >= 3);
	memcpy(saved, p + at[1], 3);
	put_block_header(p + at[1], FRAME_MAX_BLOCK + 1, 0, 0);
	expect_invalid(p, f.len);
	put_block_header(p + at[1], 7, 3, 0);
	expect_invalid(p, f.len);
	memcpy(p + at[1], saved, 3);
	/* a non-final block marked last ends the walk early: the walk sees a
	 * shorter frame whose "checksum" is block data; decoding must fail */
	uint32_t bh = (uint32_t)p[at[0]] | (uint32_t)p[at[0] + 1] << 8 |
		      (uint32_t)p[at[0] + 2] << 16;
	put_block_header(p + at[0], bh >> 3, (bh >> 1) & 3, 1);
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
	assert_true(fi.frame_len < f.len);
	const char *why = NULL;
	assert_null(frame_decode(fc, p, &fi, &why));
	assert_non_null(why);
	free(r);
	buf_release(&f);
}

static void test_decode_rejects_oversize_before_allocating(void **state)
{
	(void)state;
	struct buf f = BUF_INIT;
	encode("abc\n", 4, &f);
	const uint8_t *p = (const uint8_t *)f.p;
	struct frame_info fi;
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);

	const char *why = NULL;
	struct frame_info big = fi;
	big.content_size = (uint64_t)FRAME_MAX_CONTENT + 1;
	assert_null(frame_decode(fc, p, &big, &why));
	assert_non_null(why);
	/* An allocation of this size would abort the process. */
	why = NULL;
	big.content_size = (uint64_t)SIZE_MAX - 1;
	assert_null(frame_decode(fc, p, &big, &why));
	assert_non_null(why);
	buf_release(&f);

	/* A real frame whose header declares 4 GiB: refused from the declared
	 * size, by the walk or else by the decoder. */
	size_t n = 1024 * 1024;
	char *c = compressible(n);
	encode(c, n, &f);
	uint8_t *q = (uint8_t *)f.p;
	assert_int_equal(q[4] >> 6, 2); /* 4-byte content size field */
	size_t fcs_at = 5 + (((q[4] >> 5) & 1) ? 0 : 1);
	memset(q + fcs_at, 0xFF, 4);
	enum frame_walk w = frame_walk(q, f.len, &fi);
	assert_int_not_equal(w, FRAME_INCOMPLETE);
	if (w == FRAME_INVALID) {
		assert_non_null(fi.why);
	} else {
		assert_int_equal(fi.content_size, 0xFFFFFFFFull);
		why = NULL;
		assert_null(frame_decode(fc, q, &fi, &why));
		assert_non_null(why);
	}
	/* One byte over the maximum, declared in an 8-byte field. */
	buf_reset(&f);
	encode("x", 1, &f);
	assert_int_equal(frame_walk((const uint8_t *)f.p, f.len, &fi), FRAME_COMPLETE);
	why = NULL;
	fi.content_size = (uint64_t)FRAME_MAX_CONTENT + 1;
	assert_null(frame_decode(fc, (const uint8_t *)f.p, &fi, &why));
	assert_non_null(why);
	free(c);
	buf_release(&f);
}

static void test_decode_rejects_damaged_checksum_content_or_size(void **state)
{
	(void)state;
	char *r = random_bytes(1024);
	struct buf f = BUF_INIT;
	encode(r, 1024, &f);
	uint8_t *p = (uint8_t *)f.p;
	struct frame_info fi;
	const char *why;

	/* each checksum byte */
	for (size_t i = f.len - 4; i < f.len; i++) {
		p[i] ^= 0x40;
		assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
		why = NULL;
		assert_null(frame_decode(fc, p, &fi, &why));
		assert_non_null(why);
		p[i] ^= 0x40;
	}
	/* a content byte of a raw block: only the checksum can tell */
	assert_int_equal((p[first_block(p)] >> 1) & 3, 0);
	p[first_block(p) + 3 + 100] ^= 0x01;
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
	why = NULL;
	assert_null(frame_decode(fc, p, &fi, &why));
	assert_non_null(why);
	p[first_block(p) + 3 + 100] ^= 0x01;

	/* declared content size one more or one less than the content */
	assert_int_equal(p[4] >> 6, 1); /* 2-byte field, value - 256 */
	size_t fcs_at = 5 + (((p[4] >> 5) & 1) ? 0 : 1);
	for (int d = -1; d <= 1; d += 2) {
		unsigned v = (unsigned)(p[fcs_at] | p[fcs_at + 1] << 8);
		unsigned w = (unsigned)((int)v + d);
		p[fcs_at] = (uint8_t)w;
		p[fcs_at + 1] = (uint8_t)(w >> 8);
		assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
		assert_int_equal(fi.content_size, (uint64_t)(1024 + d));
		why = NULL;
		assert_null(frame_decode(fc, p, &fi, &why));
		assert_non_null(why);
		p[fcs_at] = (uint8_t)v;
		p[fcs_at + 1] = (uint8_t)(v >> 8);
	}
	/* a caller-side size that disagrees with the frame */
	assert_int_equal(frame_walk(p, f.len, &fi), FRAME_COMPLETE);
	for (int d = -1; d <= 1; d += 2) {
		struct frame_info bad = fi;
		bad.content_size = (uint64_t)((int64_t)fi.content_size + d);
		why = NULL;
		assert_null(frame_decode(fc, p, &bad, &why));
		assert_non_null(why);
	}
	/* the codec still works after all those errors */
	why = NULL;
	char *d = frame_decode(fc, p, &fi, &why);
	assert_non_null(d);
	assert_memory_equal(d, r, 1024);
	free(d);
	free(r);

	/* damage inside compressed data */
	size_t n = 64 * 1024;
	char *c = compressible(n);
	encode(c, n, &f);
	p = (uint8_t *)f.p;
	size_t mid = first_block(p) + 3 + (f.len - first_block(p) - 7) / 2;
	p[mid] ^= 0xFF;
	enum frame_walk w = frame_walk(p, f.len, &fi);
	if (w == FRAME_COMPLETE) {
		why = NULL;
		assert_null(frame_decode(fc, p, &fi, &why));
		assert_non_null(why);
	}
	free(c);
	buf_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_and_random_content_round_trips),
		cmocka_unit_test(test_roundtrip_random_multiblock),
		cmocka_unit_test(test_roundtrip_compressible_1mib),
		cmocka_unit_test(test_max_content_frame_round_trips),
		cmocka_unit_test(test_walk_rejects_foreign_frames),
		cmocka_unit_test(test_walk_requires_checksum_and_size),
		cmocka_unit_test(test_walk_judges_block_headers_before_their_data),
		cmocka_unit_test(test_decode_rejects_oversize_before_allocating),
		cmocka_unit_test(test_decode_rejects_damaged_checksum_content_or_size),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
