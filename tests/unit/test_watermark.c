/* test_watermark.c — reading a log with its durable watermark (scan.h
 * struct scan_opts): damage below it is corruption, even where zstd alone
 * cannot tell it from a torn write; above it the first invalid point starts
 * a torn tail, zeros and garbage included; a watermark that does not fit the
 * file is corruption; one for another file is ignored. Then log_open_opts
 * and repair with a watermark, and catalog_sync using the recorded one. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "persist/catalog.h"
#include "persist/log.h"
#include "persist/repair.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

struct fx {
	char dir[64], root[128], path[256];
	struct store *st;
	uint8_t *p;              /* the log as written */
	size_t n;
	struct scan_opts wm[4];  /* after each of the 3 batches (1..3); wm[0] unused */
	size_t off[8], nfr;      /* frame offsets; off[nfr] == n */
	uint64_t seq_at[8];      /* next seq at each frame start */
};

/* Rewrite the file in place (same inode): it must exist. */
static void rewrite(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static void add(struct log *lg, const char *json)
{
	char *d = strdup(json);
	for (char *q = d; *q; q++)
		if (*q == '\'')
			*q = '"';
	cJSON *arr = cJSON_Parse(d);
	assert_non_null(arr);
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
	struct log_event *evs = calloc(n, sizeof *evs);
	for (const cJSON *c = arr->child; c; c = c->next, i++) {
		const cJSON *t = cJSON_GetObjectItem(c, "turn");
		evs[i].type = cJSON_GetObjectItem(c, "type")->valuestring;
		evs[i].turn = t ? t->valuestring : NULL;
		evs[i].data = cJSON_GetObjectItem(c, "data");
	}
	struct cerr err;
	if (log_append(lg, log_next_seq(lg), evs, n, NULL, &err) < 0)
		fail_msg("append: %s", err.msg);
	free(evs);
	cJSON_Delete(arr);
	free(d);
}

/* Session s1: header + 3 batches; turn t2 stays open with call c1. */
static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct cerr err;
	struct log *lg;
	if (tmp_root("cairn-test-wm", f->dir, sizeof f->dir, f->root, sizeof f->root) < 0)
		return -1;
	snprintf(f->path, sizeof f->path, "%s/sessions/-p/s1/%s", f->root, LOG_FILE);
	if (store_open(f->root, true, &f->st, &err) < 0 || log_create(f->st, "s1", "/p", NULL, &lg, &err) < 0)
		return -1;
	static const char *const batches[] = {
		"[{'type':'turn/start','turn':'t1'},{'type':'user/message','turn':'t1','data':{'text':'hello there'}}]",
		"[{'type':'assistant/text','turn':'t1','data':{'text':'general kenobi, a longer answer to fill a block'}},"
		" {'type':'turn/end','turn':'t1','data':{'outcome':'completed'}}]",
		"[{'type':'turn/start','turn':'t2'},{'type':'user/message','turn':'t2','data':{'text':'list files'}},"
		" {'type':'tool/call','turn':'t2','data':{'call_id':'c1','name':'sh','args':{'cmd':'ls -la /tmp'}}}]"};
	for (int i = 0; i < 3; i++) {
		add(lg, batches[i]);
		struct log_mark d = log_durable(lg);
		f->wm[i + 1] = (struct scan_opts){true, d.rev.len, d.rev.next_seq, {0}};
		memcpy(f->wm[i + 1].head, d.head, SHA256_LEN);
	}
	log_close(lg);
	f->p = slurp(f->path, &f->n);
	struct scan *s = scan_buffer(f->p, f->n);
	if (s->status != SCAN_OK || s->n_frames != 4 || f->wm[3].wm_len != f->n)
		return -1;
	for (size_t i = 0; i < s->n_frames; i++)
		f->off[i] = s->frames[i].offset, f->seq_at[i] = s->frames[i].first_seq;
	f->nfr = s->n_frames;
	f->off[f->nfr] = f->n;
	f->seq_at[f->nfr] = s->rev.next_seq;
	scan_free(s);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	store_close(f->st);
	free(f->p);
	rm_rf(f->dir);
	free(f);
	return 0;
}

static const char *ctx = "";

/* Scan p[0..n) with o; check the status and, when want_msg, the message. */
static struct scan *expect_scan(const uint8_t *p, size_t n, const struct scan_opts *o,
				enum scan_status want, const char *want_msg)
{
	struct scan *s = scan_buffer_opts(p, n, o);
	if (s->status != want)
		fail_msg("%s: with%s watermark: %s (%s), expected %s", ctx, o ? "" : "out",
			 scan_status_name(s->status), s->err.msg, scan_status_name(want));
	if (want_msg && !strstr(s->err.msg, want_msg))
		fail_msg("%s: message '%s' lacks '%s'", ctx, s->err.msg, want_msg);
	return s;
}

/* Check the status with the watermark o and without one. */
static void both(const uint8_t *p, size_t n, const struct scan_opts *o, enum scan_status with,
		 enum scan_status without)
{
	scan_free(expect_scan(p, n, o, with, NULL));
	scan_free(expect_scan(p, n, NULL, without, NULL));
}

/* The first block header of the frame at p: increase its size field by
 * add bytes (it then claims more bytes than the frame has). */
static void bump_block_size(uint8_t *p, uint32_t add)
{
	uint8_t fhd = p[4];
	int single = (fhd >> 5) & 1, fcs_flag = fhd >> 6;
	static const int fcs_sizes[4] = {0, 2, 4, 8};
	int fcs_len = fcs_flag == 0 ? (single ? 1 : 0) : fcs_sizes[fcs_flag];
	uint8_t *bh = p + 5 + (single ? 0 : 1) + fcs_len;
	uint32_t v = (uint32_t)bh[0] | (uint32_t)bh[1] << 8 | (uint32_t)bh[2] << 16;
	v += add << 3;
	bh[0] = (uint8_t)v, bh[1] = (uint8_t)(v >> 8), bh[2] = (uint8_t)(v >> 16);
}

static void test_clean_log_scans_ok_at_every_watermark(void **state)
{
	struct fx *f = *state;
	ctx = "clean";
	for (int k = 1; k <= 3; k++) {
		struct scan *s = expect_scan(f->p, f->n, &f->wm[k], SCAN_OK, NULL);
		assert_int_equal(s->good_len, f->n);
		assert_int_equal(s->rev.next_seq, f->wm[3].wm_seq);
		assert_int_equal(s->n_open_turns, 1);
		scan_free(s);
	}
	/* The watermarks sit on frame boundaries, with their seqs. */
	for (int k = 1; k <= 3; k++) {
		assert_int_equal(f->wm[k].wm_len, f->off[k + 1]);
		assert_int_equal(f->wm[k].wm_seq, f->seq_at[k + 1]);
	}
}

/* A bit flip anywhere below the watermark is corruption, never a torn
 * tail; the final frame included, where without a watermark some flips
 * read as a torn write. (A flip of a bit zstd ignores leaves the content
 * and its checksum intact: that log is fine either way.) */
static void test_bit_flip_below_the_watermark_is_corrupt(void **state)
{
	struct fx *f = *state;
	uint8_t *b = malloc(f->n);
	size_t torn_without = 0, corrupt = 0, flips = 0;
	for (size_t fr = 1; fr < f->nfr; fr++) {
		for (size_t i = f->off[fr]; i < f->off[fr + 1]; i++) {
			for (int bit = 0; bit < 8; bit += 3) {
				char c[64];
				snprintf(c, sizeof c, "frame %zu byte %zu bit %d", fr, i - f->off[fr], bit);
				ctx = c;
				memcpy(b, f->p, f->n);
				b[i] ^= (uint8_t)(1u << bit);
				flips++;
				struct scan *s = scan_buffer_opts(b, f->n, &f->wm[3]);
				struct scan *plain = scan_buffer(b, f->n);
				if (s->status == SCAN_OK) {
					assert_int_equal(plain->status, SCAN_OK);
					assert_int_equal(s->rev.next_seq, f->wm[3].wm_seq);
				} else {
					scan_free(expect_scan(b, f->n, &f->wm[3], SCAN_CORRUPT, NULL));
					assert_int_equal(s->damage_at, f->off[fr]);
					assert_int_equal(s->good_len, f->off[fr]);
					assert_int_equal(s->rev.next_seq, f->seq_at[fr]);
					assert_true(plain->status == SCAN_CORRUPT ||
						    (plain->status == SCAN_TORN && fr == f->nfr - 1));
					corrupt++;
					torn_without += plain->status == SCAN_TORN;
				}
				scan_free(s);
				scan_free(plain);
			}
		}
	}
	assert_true(corrupt > flips * 9 / 10);
	assert_true(torn_without > 0); /* the ambiguity the watermark resolves */
	free(b);
}

/* A final frame made to look incomplete: torn without a watermark,
 * corrupt with one covering it. */
static void test_final_frame_looks_incomplete(void **state)
{
	struct fx *f = *state;
	size_t last = f->off[f->nfr - 1];
	uint8_t *b = malloc(f->n);
	memcpy(b, f->p, f->n);
	ctx = "block size increased";
	bump_block_size(b + last, 1000);
	scan_free(expect_scan(b, f->n, &f->wm[3], SCAN_CORRUPT, "below the durable watermark"));
	struct scan *s = expect_scan(b, f->n, NULL, SCAN_TORN, NULL);
	assert_int_equal(s->good_len, last);
	scan_free(s);
	scan_free(expect_scan(b, f->n, &f->wm[2], SCAN_TORN, NULL)); /* not covered */
	ctx = "truncated";
	for (size_t cut = 1; cut < f->n - last; cut += 7) {
		scan_free(expect_scan(f->p, f->n - cut, &f->wm[3], SCAN_CORRUPT, "shorter than its durable watermark"));
		scan_free(expect_scan(f->p, f->n - cut, NULL, SCAN_TORN, NULL));
		scan_free(expect_scan(f->p, f->n - cut, &f->wm[2], SCAN_TORN, NULL));
	}
	ctx = "last frame gone";
	both(f->p, last, &f->wm[3], SCAN_CORRUPT, SCAN_OK);
	both(f->p, f->off[1], &f->wm[3], SCAN_CORRUPT, SCAN_OK);
	free(b);
}

/* Above the watermark the first invalid point starts a torn tail. */
static void test_garbage_above_the_watermark_is_a_torn_tail(void **state)
{
	struct fx *f = *state;
	size_t extra = 4096;
	uint8_t *b = calloc(1, f->n + extra + f->n);
	memcpy(b, f->p, f->n);
	static const size_t lens[] = {1, 3, 17, 512, 4096};
	for (size_t k = 0; k < 5; k++) {
		ctx = "zeros";
		memset(b + f->n, 0, extra);
		both(b, f->n + lens[k], &f->wm[3], SCAN_TORN, SCAN_CORRUPT);
		ctx = "garbage";
		uint32_t x = 2463534242u + (uint32_t)k;
		for (size_t i = 0; i < lens[k]; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			b[f->n + i] = (uint8_t)(x % 0x27); /* never the magic's 0x28 */
		}
		struct scan *s = expect_scan(b, f->n + lens[k], &f->wm[3], SCAN_TORN, NULL);
		assert_int_equal(s->good_len, f->n);
		assert_int_equal(s->rev.next_seq, f->wm[3].wm_seq);
		assert_int_equal(s->rev.len, f->n + lens[k]);
		scan_free(s);
	}
	/* Above an older watermark: the frames after it are kept, the
	 * garbage after them is the tail. */
	ctx = "valid frames, then zeros";
	memset(b + f->n, 0, 64);
	struct scan *s = expect_scan(b, f->n + 64, &f->wm[1], SCAN_TORN, NULL);
	assert_int_equal(s->good_len, f->n);
	assert_int_equal(s->rev.next_seq, f->wm[3].wm_seq);
	scan_free(s);
	/* A damaged complete frame above the watermark is where the tail
	 * starts; below it, corruption. */
	ctx = "bit flip above";
	memcpy(b, f->p, f->n);
	b[f->n - 2] ^= 0x01;
	s = expect_scan(b, f->n, &f->wm[2], SCAN_TORN, NULL);
	assert_int_equal(s->good_len, f->wm[2].wm_len);
	assert_int_equal(s->rev.next_seq, f->wm[2].wm_seq);
	scan_free(s);
	scan_free(expect_scan(b, f->n, &f->wm[3], SCAN_CORRUPT, NULL));
	/* A whole, checksummed frame above it that repeats seqs: the first
	 * invalid point, where structural rules alone say corrupt. */
	ctx = "replayed frame above";
	memcpy(b, f->p, f->n);
	memcpy(b + f->n, f->p + f->off[3], f->off[4] - f->off[3]);
	s = expect_scan(b, f->n + f->off[4] - f->off[3], &f->wm[3], SCAN_TORN, NULL);
	assert_int_equal(s->good_len, f->n);
	scan_free(s);
	scan_free(expect_scan(b, f->n + f->off[4] - f->off[3], NULL, SCAN_CORRUPT, NULL));
	/* A prefix of a frame above it: torn either way. */
	ctx = "partial frame above";
	memcpy(b, f->p, f->n);
	memcpy(b + f->n, f->p + f->off[2], 9);
	both(b, f->n + 9, &f->wm[3], SCAN_TORN, SCAN_TORN);
	/* Garbage followed by a complete valid frame is no torn write. */
	ctx = "garbage then a frame";
	memset(b + f->n, 0, 32);
	memcpy(b + f->n + 32, f->p + f->off[3], f->off[4] - f->off[3]);
	scan_free(expect_scan(b, f->n + 32 + f->off[4] - f->off[3], &f->wm[3], SCAN_CORRUPT, "inside the torn tail"));
	free(b);
}

/* Complete valid frames above the watermark are kept. */
static void test_valid_frames_above_the_watermark_are_kept(void **state)
{
	struct fx *f = *state;
	ctx = "frames above";
	struct scan *s = expect_scan(f->p, f->n, &f->wm[1], SCAN_OK, NULL);
	assert_int_equal(s->good_len, f->n);
	assert_true(s->rev.next_seq > f->wm[1].wm_seq);
	assert_int_equal(s->rev.next_seq, f->wm[3].wm_seq);
	assert_int_equal(s->n_frames, 4);
	scan_free(s);
	struct scan_opts hdr = f->wm[1]; /* just the header */
	hdr.wm_len = f->off[1];
	hdr.wm_seq = 1;
	scan_free(expect_scan(f->p, f->n, &hdr, SCAN_OK, NULL));
}

/* A watermark that does not fit the file is corruption. */
static void test_watermark_not_fitting_the_file_is_corrupt(void **state)
{
	struct fx *f = *state;
	for (int k = 1; k <= 3; k++) {
		char c[64];
		snprintf(c, sizeof c, "seq off at the boundary of batch %d%s", k, k == 3 ? " (the end)" : "");
		ctx = c;
		struct scan_opts o = f->wm[k];
		o.wm_seq = f->wm[k].wm_seq + 1;
		scan_free(expect_scan(f->p, f->n, &o, SCAN_CORRUPT, NULL));
		o.wm_seq = f->wm[k].wm_seq - 1;
		scan_free(expect_scan(f->p, f->n, &o, SCAN_CORRUPT, NULL));
	}
	ctx = "length inside a frame";
	for (size_t d = 1; d < 8; d++) {
		struct scan_opts o = f->wm[1];
		o.wm_len += d;
		scan_free(expect_scan(f->p, f->n, &o, SCAN_CORRUPT, "crosses"));
	}
	ctx = "longer than the file";
	struct scan_opts o = f->wm[3];
	o.wm_len = f->n + 1;
	scan_free(expect_scan(f->p, f->n, &o, SCAN_CORRUPT, "shorter"));
}

/* A watermark belongs to the log whose header frame has its head digest:
 * a copy of that log (another inode) keeps it, any other log is read by
 * the structural rules alone. */
static void test_watermark_holds_only_for_its_header_digest(void **state)
{
	struct fx *f = *state;
	uint8_t *b = malloc(f->n + 100);
	memcpy(b, f->p, f->n);
	memset(b + f->n, 0, 100);
	rewrite(f->path, b, f->n + 100);
	struct scan_opts other = f->wm[3];
	other.head[7] ^= 1;
	int fd = open(f->path, O_RDONLY);
	struct scan *s;
	struct cerr err;
	assert_int_equal(scan_fd_opts(fd, &f->wm[3], &s, &err), 0);
	assert_int_equal(s->status, SCAN_TORN); /* zeros above: a torn tail */
	assert_true(s->wm_applied);
	assert_true(s->head_known);
	assert_memory_equal(s->head, f->wm[3].head, SHA256_LEN);
	scan_free(s);
	assert_int_equal(scan_fd_opts(fd, &other, &s, &err), 0);
	assert_int_equal(s->status, SCAN_CORRUPT); /* structural rules alone */
	assert_false(s->wm_applied);
	scan_free(s);
	close(fd);
	/* A copy (a new inode, as cp or rsync of the data root makes) keeps
	 * its watermark: damage in its final frame is still corruption. */
	memcpy(b, f->p, f->n);
	bump_block_size(b + f->off[f->nfr - 1], 1000);
	char copy[300];
	snprintf(copy, sizeof copy, "%s.copy", f->path);
	struct stat before, after;
	assert_int_equal(stat(f->path, &before), 0);
	int cfd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(cfd >= 0);
	assert_int_equal(write(cfd, b, f->n), (ssize_t)f->n);
	close(cfd);
	assert_int_equal(rename(copy, f->path), 0);
	assert_int_equal(stat(f->path, &after), 0);
	assert_true(after.st_ino != before.st_ino);
	fd = open(f->path, O_RDONLY);
	assert_int_equal(scan_fd_opts(fd, &f->wm[3], &s, &err), 0);
	assert_int_equal(s->status, SCAN_CORRUPT);
	scan_free(s);
	assert_int_equal(scan_fd_opts(fd, &other, &s, &err), 0);
	assert_int_equal(s->status, SCAN_TORN);
	scan_free(s);
	assert_int_equal(scan_fd_opts(fd, NULL, &s, &err), 0);
	assert_int_equal(s->status, SCAN_TORN);
	scan_free(s);
	uint8_t head[SHA256_LEN];
	bool found;
	assert_int_equal(scan_head_fd(fd, head, &found, &err), 0);
	assert_true(found);
	assert_memory_equal(head, f->wm[3].head, SHA256_LEN);
	close(fd);
	/* Damage in the header frame itself is corruption with or without
	 * a watermark: it names the log. */
	memcpy(b, f->p, f->n);
	b[f->off[1] - 5] ^= 0x40;
	s = scan_buffer_opts(b, f->n, &f->wm[3]);
	assert_int_equal(s->status, SCAN_CORRUPT);
	assert_false(s->wm_applied);
	scan_free(s);
	free(b);
}

/* log_open_opts + repair: garbage above the watermark is cut; damage
 * below it is refused and the file left byte for byte. */
static void test_repair_cuts_above_and_refuses_below_the_watermark(void **state)
{
	struct fx *f = *state;
	struct log *lg = NULL;
	struct cerr err;
	uint8_t *b = malloc(f->n + 700);
	memcpy(b, f->p, f->n);
	memset(b + f->n, 0, 300);
	memset(b + f->n + 300, 0xA5, 400);
	rewrite(f->path, b, f->n + 700);
	assert_int_equal(log_open(f->st, "s1", &lg, &err), -1); /* structural: corrupt */
	assert_int_equal(err.cls, CERR_CORRUPT);
	assert_int_equal(log_open_opts(f->st, "s1", &f->wm[3], &lg, &err), 0);
	assert_int_equal(log_scan(lg)->status, SCAN_TORN);
	struct repair_report rep;
	if (repair_log(lg, &rep, &err) < 0)
		fail_msg("repair: %s", err.msg);
	assert_int_equal(rep.cut_bytes, 700);
	assert_int_equal(rep.first_seq, f->wm[3].wm_seq);
	assert_int_equal(rep.appended, 2); /* c1 not executed, t2 interrupted */
	cJSON_Delete(rep.closers);
	log_close(lg);
	size_t n;
	uint8_t *after = slurp(f->path, &n);
	assert_true(n > f->n);
	assert_memory_equal(after, f->p, f->n); /* acknowledged bytes untouched */
	struct scan *s = scan_buffer(after, n);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, rep.next_seq);
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
	free(after);
	/* Damage below the watermark: refused, nothing written. */
	static const size_t cuts[] = {1, 5, 0};
	for (size_t k = 0; k < 3; k++) {
		memcpy(b, f->p, f->n);
		size_t len = f->n - cuts[k];
		if (!cuts[k])
			bump_block_size(b + f->off[f->nfr - 1], 1000);
		rewrite(f->path, b, len);
		lg = NULL;
		assert_int_equal(log_open_opts(f->st, "s1", &f->wm[3], &lg, &err), -1);
		assert_int_equal(err.cls, CERR_CORRUPT);
		assert_null(lg);
		after = slurp(f->path, &n);
		assert_int_equal(n, len);
		assert_memory_equal(after, b, len);
		free(after);
		/* Without the watermark it would pass for a torn write. */
		assert_int_equal(log_open(f->st, "s1", &lg, &err), 0);
		assert_int_equal(log_scan(lg)->status, SCAN_TORN);
		log_close(lg);
	}
	free(b);
}

/* log_open_end: a log exactly as the watermark says (its length, its
 * header frame) is opened at its end without being read; anything else is
 * read in full as log_open_opts does. */
static void test_open_end_skips_reading_only_a_log_matching_it(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_open_end(f->st, "s1", &f->wm[3], &lg, &err), 0);
	assert_null(log_scan(lg)); /* not read */
	assert_int_equal(log_next_seq(lg), f->wm[3].wm_seq);
	add(lg, "[{'type':'user/message','turn':'t2','data':{'text':'more'}}]");
	struct log_mark d = log_durable(lg);
	assert_memory_equal(d.head, f->wm[3].head, SHA256_LEN);
	log_close(lg);
	size_t n;
	uint8_t *p = slurp(f->path, &n);
	struct scan *s = scan_buffer_opts(p, n, &f->wm[3]);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, f->wm[3].wm_seq + 1);
	assert_int_equal(d.rev.len, n);
	assert_int_equal(d.rev.next_seq, s->rev.next_seq);
	scan_free(s);
	free(p);
	/* The file is longer than the watermark now: read in full. */
	assert_int_equal(log_open_end(f->st, "s1", &f->wm[3], &lg, &err), 0);
	assert_non_null(log_scan(lg));
	assert_int_equal(log_next_seq(lg), f->wm[3].wm_seq + 1);
	log_close(lg);
	/* The right length but another log's head: read in full. */
	rewrite(f->path, f->p, f->n);
	struct scan_opts other = f->wm[3];
	other.head[3] ^= 1;
	assert_int_equal(log_open_end(f->st, "s1", &other, &lg, &err), 0);
	assert_non_null(log_scan(lg));
	log_close(lg);
	assert_int_equal(log_open_end(f->st, "s1", &f->wm[3], &lg, &err), 0);
	assert_null(log_scan(lg));
	log_close(lg);
}

/* catalog_sync reads each log with the watermark the catalog recorded. */
static void test_catalog_sync_uses_watermark(void **state)
{
	struct fx *f = *state;
	struct catalog *c;
	struct cerr err;
	struct cat_session s;
	assert_int_equal(catalog_open(f->st, &c, &err), 0);
	assert_int_equal(catalog_sync(c, f->st, NULL, &err), 0);
	struct cat_watermark wm = {.known = true, .rev.len = f->wm[3].wm_len, .rev.next_seq = f->wm[3].wm_seq};
	memcpy(wm.head, f->wm[3].head, SHA256_LEN);
	assert_int_equal(catalog_set_watermark(c, "s1", &wm, &err), 0);
	uint8_t *b = calloc(1, f->n + 50);
	memcpy(b, f->p, f->n);
	bump_block_size(b + f->off[f->nfr - 1], 1000);
	usleep(20000); /* a later ctime than the projected one */
	rewrite(f->path, b, f->n); /* rewritten in place, same length */
	assert_int_equal(catalog_sync(c, f->st, NULL, &err), 0);
	assert_int_equal(catalog_get(c, "s1", &s, &err), 0);
	assert_string_equal(s.status, "corrupt");
	assert_non_null(strstr(s.error, "below the durable watermark"));
	cat_session_release(&s);
	rewrite(f->path, f->p, f->n - 3); /* acknowledged bytes lost */
	assert_int_equal(catalog_sync(c, f->st, NULL, &err), 0);
	assert_int_equal(catalog_get(c, "s1", &s, &err), 0);
	assert_string_equal(s.status, "corrupt");
	assert_non_null(strstr(s.error, "durable watermark"));
	cat_session_release(&s);
	memcpy(b, f->p, f->n);
	rewrite(f->path, b, f->n + 50); /* zeros above it: a torn tail */
	assert_int_equal(catalog_sync(c, f->st, NULL, &err), 0);
	assert_int_equal(catalog_get(c, "s1", &s, &err), 0);
	assert_string_equal(s.status, "interrupted");
	assert_null(s.error);
	assert_int_equal(s.content_version, f->wm[3].wm_seq);
	assert_int_equal(s.durable_len, f->n); /* the watermark stays */
	cat_session_release(&s);
	free(b);
	catalog_close(c);
}

static void expect_wm(struct catalog *c, const struct scan_opts *want)
{
	struct cat_watermark wm;
	struct cerr err;
	assert_int_equal(catalog_get_watermark(c, "s1", &wm, &err), 0);
	assert_true(wm.known);
	assert_int_equal(wm.rev.len, want->wm_len);
	assert_int_equal(wm.rev.next_seq, want->wm_seq);
	assert_memory_equal(wm.head, want->head, SHA256_LEN);
}

/* The recorded watermark never moves back on one log; another log (a
 * salvaged or replaced one: another head) starts its own. */
static void test_catalog_watermark_recording(void **state)
{
	struct fx *f = *state;
	struct catalog *c;
	struct cerr err;
	struct cat_watermark wm = {0};
	assert_int_equal(catalog_open(f->st, &c, &err), 0);
	assert_int_equal(catalog_set_watermark(c, "s1", &wm, &err), 0); /* unknown: no row, no-op */
	assert_int_equal(catalog_sync(c, f->st, NULL, &err), 0);
	assert_int_equal(catalog_get_watermark(c, "s1", &wm, &err), 0);
	assert_false(wm.known); /* a sync vouches for nothing */
	struct scan_opts other = f->wm[1];
	other.head[0] ^= 1;
	static const int order[] = {2, 3, 1, 2};
	for (size_t i = 0; i < 5; i++) {
		const struct scan_opts *o = i < 4 ? &f->wm[order[i]] : &other;
		wm = (struct cat_watermark){.known = true, .rev.len = o->wm_len, .rev.next_seq = o->wm_seq};
		memcpy(wm.head, o->head, SHA256_LEN);
		assert_int_equal(catalog_set_watermark(c, "s1", &wm, &err), 0);
		expect_wm(c, i == 0 ? &f->wm[2] : i < 4 ? &f->wm[3] : &other);
	}
	assert_int_equal(catalog_get_watermark(c, "nope", &wm, &err), 0);
	assert_false(wm.known);
	catalog_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_clean_log_scans_ok_at_every_watermark),
		T(test_bit_flip_below_the_watermark_is_corrupt),
		T(test_final_frame_looks_incomplete),
		T(test_garbage_above_the_watermark_is_a_torn_tail),
		T(test_valid_frames_above_the_watermark_are_kept),
		T(test_watermark_not_fitting_the_file_is_corrupt),
		T(test_watermark_holds_only_for_its_header_digest),
		T(test_repair_cuts_above_and_refuses_below_the_watermark),
		T(test_open_end_skips_reading_only_a_log_matching_it),
		T(test_catalog_sync_uses_watermark),
		T(test_catalog_watermark_recording),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
