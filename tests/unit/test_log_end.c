/* test_log_end.c — log_open_end (persist/log.h), the append that starts at
 * the end the catalog's watermark names: it checks the frame it builds on
 * (a bit flip in the last acknowledged frame fails closed as corruption and
 * leaves the file as it was) and reads frame 0 and about that frame, the
 * same at two log sizes, never the whole log. */
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

#include <cjson/cJSON.h>

#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_store.h"

/* Bytes every pread through fsops returned. */
static size_t read_bytes;
static ssize_t counting_pread(int fd, void *b, size_t n, off_t off)
{
	ssize_t r = fsops_real.pread(fd, b, n, off);
	if (r > 0)
		read_bytes += (size_t)r;
	return r;
}
static struct fsops counting_ops;

/* Text zstd cannot shrink much: hex digits of a fixed pseudo-random run. */
static char *noise(size_t n, uint32_t seed)
{
	char *s = malloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		s[i] = "0123456789abcdef"[(seed >> 16) & 15];
	}
	s[n] = '\0';
	return s;
}

/* Session id: a header, then `frames` batches of one message of about 1 KiB,
 * the last one of `last` bytes, all synced at once. *wm gets the watermark
 * its handle acknowledged, *last_len the last frame's length in bytes. */
static void build(struct fx *f, const char *id, int frames, size_t last, struct scan_opts *wm,
		  size_t *last_len)
{
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, id, "/p", NULL, &lg, &err), 0);
	uint64_t next = log_next_seq(lg);
	uint64_t before = 0;
	for (int i = 0; i < frames; i++) {
		char *text = i == frames - 1 ? noise(last, 7) : noise(1024, (uint32_t)i + 8);
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "text", text);
		struct log_event ev = {.type = "user/message", .turn = "t1", .data = data};
		if (i == frames - 1) {
			assert_int_equal(log_sync(lg, &err), 0);
			before = log_durable(lg).rev.len;
		}
		assert_int_equal(log_write(lg, next, &ev, 1, &next, &err), 0);
		cJSON_Delete(data);
		free(text);
	}
	assert_int_equal(log_sync(lg, &err), 0);
	struct log_mark d = log_durable(lg);
	*wm = (struct scan_opts){true, d.rev.len, d.rev.next_seq, {0}};
	memcpy(wm->head, d.head, SHA256_LEN);
	*last_len = (size_t)(d.rev.len - before);
	log_close(lg);
}

static uint8_t *slurp_log(struct fx *f, const char *id, size_t *n, char *path, size_t cap)
{
	snprintf(path, cap, "%s/sessions/-p/%s/%s", f->root, id, LOG_FILE);
	return slurp(path, n);
}

/* A bit flipped in the last frame's payload: the append refuses as
 * corruption, and the file keeps every byte it had. */
static void test_damaged_last_frame_fails_closed(void **state)
{
	struct fx *f = *state;
	struct scan_opts wm;
	size_t last_len, n;
	char path[320];
	build(f, "s1", 4, 600, &wm, &last_len);
	uint8_t *p = slurp_log(f, "s1", &n, path, sizeof path);
	assert_int_equal(n, wm.wm_len);
	p[n - last_len / 2] ^= 0x10; /* inside the last frame's compressed data */
	int fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
	struct log *lg = NULL;
	struct cerr err;
	assert_int_equal(log_open_end(f->st, "s1", &wm, &lg, &err), -1);
	assert_null(lg);
	assert_int_equal(err.cls, CERR_CORRUPT);
	size_t m;
	uint8_t *q = slurp(path, &m);
	assert_int_equal(m, n);
	assert_memory_equal(q, p, n);
	free(q);
	free(p);
}

/* Bytes log_open_end reads of a log of `frames` frames whose last frame
 * holds `last` bytes of text; *last_len as build gives it. */
static size_t end_read(struct fx *f, const char *id, int frames, size_t last, size_t *size,
		       size_t *last_len)
{
	struct scan_opts wm;
	build(f, id, frames, last, &wm, last_len);
	*size = (size_t)wm.wm_len;
	counting_ops = fsops_real;
	counting_ops.pread = counting_pread;
	read_bytes = 0;
	fsops = &counting_ops;
	struct log *lg;
	struct cerr err;
	int rc = log_open_end(f->st, id, &wm, &lg, &err);
	fsops = &fsops_real;
	assert_int_equal(rc, 0);
	assert_null(log_scan(lg)); /* not read in full */
	assert_int_equal(log_next_seq(lg), wm.wm_seq);
	log_close(lg);
	return read_bytes;
}

/* The check costs frame 0 and the last frame: it reads at least the last
 * frame, and as much of a log over six times longer. */
static void test_open_end_reads_the_last_frame_only(void **state)
{
	struct fx *f = *state;
	size_t small_size, big_size, small_last, big_last;
	size_t small = end_read(f, "s2", 60, 20000, &small_size, &small_last);
	size_t big = end_read(f, "s3", 600, 20000, &big_size, &big_last);
	print_message("log of %zu bytes: read %zu; log of %zu bytes: read %zu; last frame %zu bytes\n",
		      small_size, small, big_size, big, big_last);
	/* The same text; only its seq and time differ. */
	assert_true(small_last + 64 > big_last && big_last + 64 > small_last);
	assert_true(big_size > 6 * small_size);
	assert_true(small >= small_last);
	assert_int_equal(big, small);
	assert_true(big < big_size / 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) STOREFX_TEST(x)
		T(test_damaged_last_frame_fails_closed),
		T(test_open_end_reads_the_last_frame_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
