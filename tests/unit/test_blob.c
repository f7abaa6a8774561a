/* test_blob.c — content-addressed blobs (persist/blob.h) on real files: the
 * round trip, idempotent and repairing rewrites, verified reads, a fault at
 * every file system call (no blob or a complete one), a power loss, the
 * "blob" field of event data, the inline head and tail of a spilled text,
 * repair removing only blobs no durable event names, the checks inspect and
 * doctor run, and blobs going with their session (trash, restore, purge,
 * an interrupted creation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/leftover.h"
#include "persist/log.h"
#include "persist/repair.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

struct fx {
	char dir[64];
	char root[128];
	char sdir[512]; /* the folder of session "s" */
	struct store *st;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	struct cerr err;
	if (tmp_root("cairn-test-blob", f->dir, sizeof f->dir, f->root, sizeof f->root) < 0)
		return -1;
	if (store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	snprintf(f->sdir, sizeof f->sdir, "%s/sessions/_no-cwd/s", f->root);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	faultfs_uninstall();
	store_close(f->st);
	rm_rf(f->dir);
	free(f);
	return 0;
}

/* Some bytes that are not all alike: i-th byte from a small LCG. */
static char *bytes(size_t n, unsigned seed)
{
	char *p = xmalloc(n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (char)(seed >> 16);
	}
	return p;
}

static void hex_of(const void *p, size_t n, char hex[SHA256_HEX_LEN + 1])
{
	uint8_t d[SHA256_LEN];
	sha256(p, n, d);
	sha256_hex(d, hex);
}

/* A folder standing for a session's, opened O_DIRECTORY. */
static int open_dir(const char *path)
{
	char p[512];
	snprintf(p, sizeof p, "%s", path);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0700);
		*s = '/';
	}
	mkdir(path, 0700);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

/* Entries of dir other than . and .. */
static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	if (!d)
		return 0;
	for (struct dirent *de; (de = readdir(d));)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void must(int rc, const struct cerr *err, const char *what)
{
	if (rc < 0)
		fail_msg("%s: %s", what, err->msg);
}

static void test_write_then_read_round_trips(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	int dfd = open_dir(f->sdir);
	size_t n = 300 * 1024;
	char *p = bytes(n, 7), hex[SHA256_HEX_LEN + 1];
	hex_of(p, n, hex);
	struct blob_ref ref;
	must(blob_write(dfd, p, n, &ref, &err), &err, "blob_write");
	assert_string_equal(ref.sha256, hex);
	assert_int_equal(ref.size, n);
	const char *file = path_in(f->sdir, "blobs/%s", hex);
	struct stat sb;
	assert_int_equal(stat(file, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(stat(path_in(f->sdir, "blobs"), &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0700);
	assert_int_equal(count_entries(path_in(f->sdir, "blobs")), 1); /* no temp file left */
	struct buf b = BUF_INIT;
	must(blob_read(dfd, &ref, &b, &err), &err, "blob_read");
	assert_int_equal(b.len, n);
	assert_memory_equal(b.p, p, n);
	/* Copied to a descriptor: the same bytes. */
	const char *out = path_in(f->dir, "copy");
	int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	must(blob_copy_to_fd(dfd, &ref, ofd, &err), &err, "blob_copy_to_fd");
	close(ofd);
	size_t cn;
	uint8_t *c = slurp(out, &cn);
	assert_int_equal(cn, n);
	assert_memory_equal(c, p, n);
	/* The empty blob is a blob too. */
	must(blob_write(dfd, "", 0, &ref, &err), &err, "blob_write empty");
	assert_int_equal(ref.size, 0);
	must(blob_verify(dfd, &ref, &err), &err, "blob_verify empty");
	free(c);
	buf_release(&b);
	free(p);
	close(dfd);
}

static void test_rewrite_of_a_present_blob_is_idempotent(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	int dfd = open_dir(f->sdir);
	char *p = bytes(5000, 3);
	struct blob_ref a, b;
	must(blob_write(dfd, p, 5000, &a, &err), &err, "first write");
	struct stat s1, s2;
	assert_int_equal(stat(path_in(f->sdir, "blobs/%s", a.sha256), &s1), 0);
	faultfs_install();
	must(blob_write(dfd, p, 5000, &b, &err), &err, "second write");
	/* Kept, not written again: no pwrite, no rename; synced again. */
	assert_int_equal(faultfs_count(FF_PWRITE), 0);
	assert_int_equal(faultfs_count(FF_RENAME), 0);
	assert_true(faultfs_count(FF_FSYNC) >= 2);
	faultfs_uninstall();
	assert_string_equal(a.sha256, b.sha256);
	assert_int_equal(stat(path_in(f->sdir, "blobs/%s", a.sha256), &s2), 0);
	assert_int_equal(s1.st_ino, s2.st_ino);
	assert_int_equal(count_entries(path_in(f->sdir, "blobs")), 1);
	free(p);
	close(dfd);
}

static void test_rewrite_replaces_a_damaged_blob(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	int dfd = open_dir(f->sdir);
	char *p = bytes(5000, 4);
	struct blob_ref a;
	must(blob_write(dfd, p, 5000, &a, &err), &err, "first write");
	const char *file = path_in(f->sdir, "blobs/%s", a.sha256);
	spit(file, "damaged", 7, O_TRUNC);
	FAILS(blob_verify(dfd, &a, &err), CERR_CORRUPT);
	must(blob_write(dfd, p, 5000, &a, &err), &err, "rewrite");
	must(blob_verify(dfd, &a, &err), &err, "verify after rewrite");
	free(p);
	close(dfd);
}

static void test_read_of_a_bad_blob_is_classified_and_named(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	int dfd = open_dir(f->sdir);
	struct blob_ref a, other;
	struct buf b = BUF_INIT;
	/* No blobs/ at all, then no such file: missing. */
	hex_of("x", 1, other.sha256);
	other.size = 1;
	FAILS(blob_read(dfd, &other, &b, &err), CERR_MISSING);
	assert_non_null(strstr(err.msg, other.sha256));
	must(blob_write(dfd, "hello", 5, &a, &err), &err, "write");
	FAILS(blob_read(dfd, &other, &b, &err), CERR_MISSING);
	assert_non_null(strstr(err.msg, other.sha256));
	/* The same length, one byte changed: the digest tells. */
	const char *file = path_in(f->sdir, "blobs/%s", a.sha256);
	spit(file, "hellO", 5, O_TRUNC);
	FAILS(blob_read(dfd, &a, &b, &err), CERR_CORRUPT);
	assert_non_null(strstr(err.msg, a.sha256));
	assert_int_equal(b.len, 0); /* nothing of a blob that did not verify */
	/* Cut short: the size tells, with or without the expected size. */
	spit(file, "hel", 3, O_TRUNC);
	FAILS(blob_verify(dfd, &a, &err), CERR_CORRUPT);
	a.size = BLOB_SIZE_ANY;
	FAILS(blob_verify(dfd, &a, &err), CERR_CORRUPT);
	/* A symlink in its place is not followed. */
	unlink(file);
	assert_int_equal(symlink("/etc/passwd", file), 0);
	FAILS(blob_verify(dfd, &a, &err), CERR_CORRUPT);
	/* Not a name a blob can have. */
	struct blob_ref bad = {"../session.jsonl.zst", 1};
	FAILS(blob_verify(dfd, &bad, &err), CERR_USAGE);
	buf_release(&b);
	close(dfd);
}

/* After a blob_write under an armed fault: either it failed and no blob of
 * that name exists (or one that verifies: the rename happened and only its
 * sync failed, which it says), or it succeeded and the blob verifies. A
 * blob that was there before (present) verifies whatever happened. */
static void check_outcome(struct fx *f, int dfd, int rc, const struct cerr *err, const char *hex,
			  size_t n, bool present, const char *what)
{
	struct blob_ref ref = {.size = n};
	snprintf(ref.sha256, sizeof ref.sha256, "%s", hex);
	struct cerr e2;
	bool there = exists(path_in(f->sdir, "blobs/%s", hex));
	if (rc == 0) {
		if (blob_verify(dfd, &ref, &e2) < 0)
			fail_msg("%s: succeeded but the blob does not verify: %s", what, e2.msg);
		return;
	}
	if (err->cls != CERR_IO)
		fail_msg("%s: failed with class %d: %s", what, err->cls, err->msg);
	if (there && blob_verify(dfd, &ref, &e2) < 0)
		fail_msg("%s: failed and left a damaged blob: %s", what, e2.msg);
	if (present && !there)
		fail_msg("%s: failed and lost the blob that was there", what);
	if (there && !present && !err->outcome_unknown)
		fail_msg("%s: failed, left a complete blob, and did not say the outcome is unknown",
			 what);
}

static void fault_loop(struct fx *f, bool present)
{
	static const enum faultfs_op ops[] = {FF_OPENAT, FF_CREATE, FF_CLOSE, FF_PREAD, FF_PWRITE,
					      FF_FSYNC, FF_RENAME, FF_MKDIRAT, FF_UNLINKAT, FF_FSTAT,
					      FF_FSTATAT, FF_FCHMOD};
	static const int errs[] = {EIO, ENOSPC};
	size_t n = 200 * 1024;
	char *p = bytes(n, 11), hex[SHA256_HEX_LEN + 1];
	hex_of(p, n, hex);
	struct cerr err;
	struct blob_ref ref;
	unsigned long counts[FF_NOPS];
	/* A clean run counts the calls of each kind. */
	rm_rf(f->sdir);
	int dfd = open_dir(f->sdir);
	if (present)
		must(blob_write(dfd, p, n, &ref, &err), &err, "first write");
	faultfs_install();
	must(blob_write(dfd, p, n, &ref, &err), &err, "clean run");
	for (int k = 0; k < FF_NOPS; k++)
		counts[k] = faultfs_count((enum faultfs_op)k);
	faultfs_uninstall();
	close(dfd);
	size_t runs = 0;
	for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
		for (unsigned long nth = 1; nth <= counts[ops[o]] + (ops[o] == FF_PWRITE); nth++)
			for (size_t e = 0; e < 2 + (ops[o] == FF_PWRITE); e++) {
				char what[128];
				bool shorten = e == 2;
				snprintf(what, sizeof what, "%s %s #%lu%s", present ? "rewrite" : "write",
					 faultfs_op_name(ops[o]), nth,
					 shorten ? " short" : errs[e] == EIO ? " EIO" : " ENOSPC");
				rm_rf(f->sdir);
				dfd = open_dir(f->sdir);
				if (present)
					must(blob_write(dfd, p, n, &ref, &err), &err, "first write");
				faultfs_install();
				if (shorten)
					faultfs_short_write(nth);
				else
					faultfs_fail(ops[o], nth, errs[e]);
				memset(&err, 0, sizeof err);
				int rc = blob_write(dfd, p, n, &ref, &err);
				unsigned fired = faultfs_fired();
				faultfs_uninstall();
				if (nth <= counts[ops[o]] && fired == 0)
					fail_msg("%s: the fault never fired", what);
				check_outcome(f, dfd, rc, &err, hex, n, present, what);
				/* No temporary file outlives a failure, except when
				 * removing it was what failed (repair takes it). */
				size_t left = count_entries(path_in(f->sdir, "blobs"));
				bool unlink_failed = ops[o] == FF_UNLINKAT && rc < 0;
				if (left > 1 || (left == 1 && !exists(path_in(f->sdir, "blobs/%s", hex))))
					if (!unlink_failed)
						fail_msg("%s: left %zu files in blobs/", what, left);
				close(dfd);
				runs++;
			}
	assert_true(runs > 20);
	free(p);
}

static void test_fault_at_every_call_leaves_no_blob_or_a_complete_one(void **state)
{
	fault_loop(*state, false);
}

static void test_fault_at_every_call_of_a_rewrite_keeps_the_blob_whole(void **state)
{
	fault_loop(*state, true);
}

/* Power loss right after blob_write returns: the blob is there and whole.
 * The same with the sync of blobs/ skipped loses it: the test can tell. */
static void test_written_blob_survives_a_power_loss(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	char *p = bytes(70000, 5);
	struct blob_ref ref;
	for (int skip = 0; skip < 2; skip++) {
		rm_rf(f->sdir);
		int dfd = open_dir(f->sdir);
		faultfs_install();
		assert_int_equal(faultfs_track(f->root), 0);
		if (skip) {
			/* The first directory sync is the session folder's, for
			 * the new blobs/; the second is blobs/ after the rename. */
			faultfs_skip_dir_sync(2);
		}
		must(blob_write(dfd, p, 70000, &ref, &err), &err, "blob_write");
		const char *copy = path_in(f->dir, "crash%d", skip);
		assert_int_equal(faultfs_crash_copy(f->root, copy), 0);
		faultfs_uninstall();
		close(dfd);
		const char *file = path_in(copy, "sessions/_no-cwd/s/blobs/%s", ref.sha256);
		if (skip) {
			assert_int_equal(faultfs_skipped(), 1);
			assert_false(exists(file));
			continue;
		}
		size_t n;
		uint8_t *c = slurp(file, &n);
		assert_int_equal(n, 70000);
		assert_memory_equal(c, p, n);
		free(c);
	}
	free(p);
}

struct writer {
	int dfd;
	const char *p;
	size_t n;
	int rc;
	struct blob_ref ref;
	struct cerr err;
};

static void *write_thread(void *v)
{
	struct writer *w = v;
	w->rc = blob_write(w->dfd, w->p, w->n, &w->ref, &w->err);
	return NULL;
}

static void test_concurrent_writers_of_one_blob_all_succeed(void **state)
{
	struct fx *f = *state;
	int dfd = open_dir(f->sdir);
	size_t n = 512 * 1024;
	char *p = bytes(n, 9);
	struct writer w[6];
	pthread_t t[6];
	for (int i = 0; i < 6; i++) {
		w[i] = (struct writer){.dfd = dfd, .p = p, .n = n};
		assert_int_equal(pthread_create(&t[i], NULL, write_thread, &w[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		must(w[i].rc, &w[i].err, "concurrent blob_write");
	}
	struct cerr err;
	must(blob_verify(dfd, &w[0].ref, &err), &err, "verify");
	assert_int_equal(count_entries(path_in(f->sdir, "blobs")), 1);
	free(p);
	close(dfd);
}

/* ---- the event reference ---- */

/* Append one event {type, turn, data (JSON text)} to lg at its next seq. */
static int append(struct log *lg, const char *type, const char *turn, const char *data,
		  struct cerr *err)
{
	cJSON *d = cJSON_Parse(data);
	assert_non_null(d);
	struct log_event ev = {type, turn, false, d, 0};
	int rc = log_append(lg, log_next_seq(lg), &ev, 1, NULL, err);
	cJSON_Delete(d);
	return rc;
}

static void test_blob_field_is_validated_on_append(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	struct log *lg;
	char hex[SHA256_HEX_LEN + 1], data[512];
	hex_of("x", 1, hex);
	must(log_create(f->st, "s", NULL, NULL, &lg, &err), &err, "log_create");
#define BAD(fmt)                                                               \
	do {                                                                   \
		snprintf(data, sizeof data, fmt, hex);                         \
		FAILS(append(lg, "user/message", NULL, data, &err), CERR_USAGE); \
		assert_non_null(strstr(err.msg, "blob"));                      \
	} while (0)
	BAD("{\"text\":\"t\",\"blob\":\"%s\"}");
	BAD("{\"text\":\"t\",\"blob\":{\"sha256\":\"%.63s\",\"size\":1}}");
	BAD("{\"text\":\"t\",\"blob\":{\"sha256\":\"%sA\",\"size\":1}}");
	BAD("{\"text\":\"t\",\"blob\":{\"sha256\":\"%s\",\"size\":-1}}");
	BAD("{\"text\":\"t\",\"blob\":{\"sha256\":\"%s\",\"size\":\"1\"}}");
	BAD("{\"text\":\"t\",\"blob\":{\"sha256\":\"%s\",\"size\":1.5}}");
	BAD("{\"text\":\"t\",\"blob\":{\"sha256\":\"%s\"}}");
	BAD("{\"text\":\"t\",\"blob\":{\"sha256\":\"%s\",\"size\":1073741825}}");
#undef BAD
	/* Upper case is not the digest's spelling. */
	char upper[SHA256_HEX_LEN + 1];
	for (size_t i = 0; i <= SHA256_HEX_LEN; i++)
		upper[i] = (char)(hex[i] >= 'a' && hex[i] <= 'f' ? hex[i] - 32 : hex[i]);
	snprintf(data, sizeof data, "{\"text\":\"t\",\"blob\":{\"sha256\":\"%s\",\"size\":1}}", upper);
	FAILS(append(lg, "user/message", NULL, data, &err), CERR_USAGE);
	/* On the four types that take it, a valid reference goes in; extra
	 * keys inside it are ignored like any unknown key of data. */
	snprintf(data, sizeof data, "{\"text\":\"t\",\"blob\":{\"sha256\":\"%s\",\"size\":1,\"x\":0}}",
		 hex);
	must(append(lg, "user/message", NULL, data, &err), &err, "user/message");
	snprintf(data, sizeof data, "{\"text\":\"t\",\"blob\":{\"sha256\":\"%s\",\"size\":1}}", hex);
	must(append(lg, "input/queued", NULL, data, &err), &err, "input/queued");
	must(append(lg, "turn/start", "t1", "{}", &err), &err, "turn/start");
	snprintf(data, sizeof data,
		 "{\"call_id\":\"c\",\"name\":\"n\",\"args\":{},\"blob\":{\"sha256\":\"%s\",\"size\":1}}",
		 hex);
	must(append(lg, "tool/call", "t1", data, &err), &err, "tool/call");
	snprintf(data, sizeof data,
		 "{\"call_id\":\"c\",\"status\":\"ok\",\"blob\":{\"sha256\":\"%s\",\"size\":1}}", hex);
	must(append(lg, "tool/result", "t1", data, &err), &err, "tool/result");
	/* On any other type "blob" is an unknown key: ignored, as before. */
	must(append(lg, "assistant/text", "t1", "{\"text\":\"a\",\"blob\":7}", &err), &err,
	     "assistant/text");
	log_close(lg);
}

static void test_blob_field_malformed_on_disk_reads_as_corrupt(void **state)
{
	(void)state;
	struct cerr err;
	struct event ev;
	const char *line = "{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"t\","
			   "\"blob\":{\"sha256\":\"00\",\"size\":1}}}";
	FAILS(event_parse(line, strlen(line), 3, &ev, &err), CERR_CORRUPT);
	assert_non_null(strstr(err.msg, "blob"));
}

static void test_spill_keeps_a_bounded_head_and_tail_inline(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	int dfd = open_dir(f->sdir);
	/* Three-byte characters, so the cuts fall inside one unless they
	 * look for a boundary. */
	size_t m = (BLOB_INLINE_MAX + 1000) / 3, n = 2 + 3 * m + 3;
	char *text = xmalloc(n + 1);
	memcpy(text, "HH", 2);
	for (size_t i = 0; i < m; i++)
		memcpy(text + 2 + 3 * i, "\xe2\x82\xac", 3); /* U+20AC */
	/* Neither cut falls on a character boundary by itself. */
	assert_int_equal((BLOB_INLINE_HEAD - 2) % 3 == 0, false);
	assert_int_equal((n - BLOB_INLINE_TAIL - 2) % 3 == 0, false);
	memcpy(text + n - 3, "TTT", 4);
	assert_true(utf8_valid(text, n, NULL));
	struct blob_ref ref;
	char *keep = NULL;
	assert_int_equal(blob_spill(dfd, text, n, &ref, &keep, &err), 1);
	assert_non_null(keep);
	size_t k = strlen(keep);
	assert_true(k <= BLOB_INLINE_MAX);
	assert_true(k >= BLOB_INLINE_HEAD + BLOB_INLINE_TAIL - 6);
	assert_true(utf8_valid(keep, k, NULL));
	assert_memory_equal(keep, "HH", 2);
	assert_memory_equal(keep + k - 3, "TTT", 3);
	assert_non_null(strstr(keep, ref.sha256));
	struct buf b = BUF_INIT;
	must(blob_read(dfd, &ref, &b, &err), &err, "blob_read");
	assert_int_equal(b.len, n);
	assert_memory_equal(b.p, text, n);
	buf_release(&b);
	free(keep);
	/* Up to the limit the text stays as it is and no blob is written. */
	rm_rf(path_in(f->sdir, "blobs"));
	assert_int_equal(blob_spill(dfd, text, BLOB_INLINE_MAX, &ref, &keep, &err), 0);
	assert_null(keep);
	assert_false(exists(path_in(f->sdir, "blobs")));
	free(text);
	close(dfd);
}

/* (The log's own refusals, EVENT_MAX_LINE and FRAME_MAX_CONTENT, are
 * pinned in test_log_validate.c.) */
static void test_blob_over_the_limit_is_refused_naming_it(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	int dfd = open_dir(f->sdir);
	struct blob_ref ref;
	char one = 'x';
	/* Refused on its size alone, before a byte of it is read. */
	FAILS(blob_write(dfd, &one, (size_t)BLOB_MAX + 1, &ref, &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "blob is 1073741825 bytes; the limit is BLOB_MAX = 1073741824"));
	assert_false(exists(path_in(f->sdir, "blobs")));
	close(dfd);
}

/* ---- a session's blobs ---- */

/* Session "s" with one blob named by a user/message and another named by a
 * tool/result; *a and *b get them. Returns the open log. */
static struct log *session_with_blobs(struct fx *f, struct blob_ref *a, struct blob_ref *b)
{
	struct cerr err;
	struct log *lg;
	char data[512];
	must(log_create(f->st, "s", NULL, NULL, &lg, &err), &err, "log_create");
	int dfd = log_dir(lg, &err);
	must(dfd, &err, "log_dir"); /* before the first append: made and locked */
	must(blob_write(dfd, "first blob", 10, a, &err), &err, "blob a");
	snprintf(data, sizeof data, "{\"text\":\"fi\",\"blob\":{\"sha256\":\"%s\",\"size\":10}}",
		 a->sha256);
	must(append(lg, "user/message", NULL, data, &err), &err, "event a");
	must(append(lg, "turn/start", "t1", "{}", &err), &err, "turn/start");
	must(append(lg, "tool/call", "t1", "{\"call_id\":\"c\",\"name\":\"n\",\"args\":{}}", &err),
	     &err, "tool/call");
	must(blob_write(dfd, "second blob", 11, b, &err), &err, "blob b");
	snprintf(data, sizeof data,
		 "{\"call_id\":\"c\",\"status\":\"ok\",\"blob\":{\"sha256\":\"%s\",\"size\":11}}",
		 b->sha256);
	must(append(lg, "tool/result", "t1", data, &err), &err, "event b");
	must(append(lg, "turn/end", "t1", "{\"outcome\":\"completed\"}", &err), &err, "turn/end");
	return lg;
}

/* Repair reads the log through a handle that keeps every event
 * (log_open), or one that reads it compactly (log_open_load, as the
 * FIFO's open does): the same blobs go either way. */
static bool compact_open;
static int open_for_repair(struct fx *f, struct log **lg, struct cerr *err)
{
	return compact_open ? log_open_load(f->st, "s", NULL, lg, err) : log_open(f->st, "s", lg, err);
}

static void test_repair_removes_blobs_no_durable_event_names(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	struct blob_ref a, b, orphan;
	struct log *lg = session_with_blobs(f, &a, &b);
	/* A crash between a blob and its event: the blob, no event; and the
	 * temporary file of a write killed before its rename. */
	must(blob_write(log_dir(lg, &err), "never named", 11, &orphan, &err), &err, "orphan");
	spit(path_in(f->sdir, "blobs/.blob.0011223344556677.tmp"), "part", 4, O_EXCL);
	spit(path_in(f->sdir, "blobs/notes.txt"), "mine", 4, O_EXCL); /* not a blob's name */
	log_close(lg);
	must(open_for_repair(f, &lg, &err), &err, "log_open");
	struct repair_report rep;
	must(repair_log(lg, &rep, &err), &err, "repair_log");
	assert_int_equal(rep.blobs_removed, 2);
	assert_true(exists(path_in(f->sdir, "blobs/%s", a.sha256)));
	assert_true(exists(path_in(f->sdir, "blobs/%s", b.sha256)));
	assert_false(exists(path_in(f->sdir, "blobs/%s", orphan.sha256)));
	assert_false(exists(path_in(f->sdir, "blobs/.blob.0011223344556677.tmp")));
	assert_true(exists(path_in(f->sdir, "blobs/notes.txt")));
	cJSON_Delete(rep.closers);
	/* A second repair finds nothing more to remove. */
	must(repair_log(lg, &rep, &err), &err, "repair_log again");
	assert_int_equal(rep.blobs_removed, 0);
	cJSON_Delete(rep.closers);
	log_close(lg);
}

/* A blob named only in a torn tail was never durable: the cut takes its
 * event, the sweep its blob; the blob of a durable event stays. */
static void test_repair_removes_a_blob_named_only_in_a_torn_tail(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	struct blob_ref a, b, c;
	struct log *lg = session_with_blobs(f, &a, &b);
	const char *logf = path_in(f->sdir, "%s", LOG_FILE);
	struct stat sb;
	assert_int_equal(stat(logf, &sb), 0);
	off_t before = sb.st_size;
	must(blob_write(log_dir(lg, &err), "third blob", 10, &c, &err), &err, "blob c");
	char data[256];
	snprintf(data, sizeof data, "{\"text\":\"th\",\"blob\":{\"sha256\":\"%s\",\"size\":10}}",
		 c.sha256);
	must(append(lg, "user/message", NULL, data, &err), &err, "event c");
	log_close(lg);
	/* The last frame loses its final bytes, as a crash mid-write leaves it. */
	assert_int_equal(stat(logf, &sb), 0);
	assert_int_equal(truncate(logf, before + (sb.st_size - before) / 2), 0);
	must(open_for_repair(f, &lg, &err), &err, "log_open");
	struct repair_report rep;
	must(repair_log(lg, &rep, &err), &err, "repair_log");
	assert_true(rep.cut_bytes > 0);
	assert_int_equal(rep.blobs_removed, 1);
	assert_false(exists(path_in(f->sdir, "blobs/%s", c.sha256)));
	assert_true(exists(path_in(f->sdir, "blobs/%s", a.sha256)));
	assert_true(exists(path_in(f->sdir, "blobs/%s", b.sha256)));
	cJSON_Delete(rep.closers);
	log_close(lg);
}

static void collect_bad(void *ctx, const struct blob_ref *ref, uint64_t seq, const struct cerr *err)
{
	cJSON *arr = ctx;
	assert_int_equal(err->cls, CERR_CORRUPT);
	assert_non_null(strstr(err->msg, "session 's'"));
	assert_non_null(strstr(err->msg, ref->sha256));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sha256", ref->sha256);
	cJSON_AddNumberToObject(o, "seq", (double)seq);
	cJSON_AddItemToArray(arr, o);
}

static void test_check_reports_missing_and_damaged_blobs_by_name(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	struct blob_ref a, b;
	log_close(session_with_blobs(f, &a, &b));
	struct scan *s = scan_path(path_in(f->sdir, "%s", LOG_FILE));
	int dfd = open_dir(f->sdir);
	cJSON *bad = cJSON_CreateArray();
	size_t named = 0;
	assert_int_equal(blob_check_scan(dfd, s, &named, collect_bad, bad), 0);
	assert_int_equal(named, 2);
	unlink(path_in(f->sdir, "blobs/%s", a.sha256));
	spit(path_in(f->sdir, "blobs/%s", b.sha256), "second blOb", 11, O_TRUNC);
	assert_int_equal(blob_check_scan(dfd, s, &named, collect_bad, bad), 2);
	assert_string_equal(cJSON_GetArrayItem(bad, 0)->child->valuestring, a.sha256);
	assert_string_equal(cJSON_GetArrayItem(bad, 1)->child->valuestring, b.sha256);
	/* A missing blob named by a durable event is lost content: corrupt
	 * (collect_bad checks the class). Repair does not remove a named one,
	 * damaged or not. */
	struct log *lg;
	must(log_open(f->st, "s", &lg, &err), &err, "log_open");
	struct repair_report rep;
	must(repair_log(lg, &rep, &err), &err, "repair_log");
	assert_int_equal(rep.blobs_removed, 0);
	assert_true(exists(path_in(f->sdir, "blobs/%s", b.sha256)));
	cJSON_Delete(rep.closers);
	log_close(lg);
	cJSON_Delete(bad);
	scan_free(s);
	close(dfd);
}

static void test_trash_restore_and_purge_take_the_blobs_along(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	struct blob_ref a, b;
	log_close(session_with_blobs(f, &a, &b));
	struct session_ref ref = {"s", "_no-cwd"};
	must(store_trash(f->st, &ref, NULL, &err), &err, "store_trash");
	const char *tdir = path_in(f->root, "trash/_no-cwd/s");
	assert_false(exists(path_in(f->sdir, "blobs")));
	int dfd = open_dir(tdir);
	must(blob_verify(dfd, &a, &err), &err, "a in the trash");
	must(blob_verify(dfd, &b, &err), &err, "b in the trash");
	close(dfd);
	must(store_restore(f->st, &ref, &err), &err, "store_restore");
	dfd = open_dir(f->sdir);
	must(blob_verify(dfd, &a, &err), &err, "a restored");
	close(dfd);
	must(store_trash(f->st, &ref, NULL, &err), &err, "store_trash again");
	/* Purge removes blobs/ with the rest (it used to stop at the folder). */
	must(store_purge(f->st, &ref, &err), &err, "store_purge");
	assert_false(exists(tdir));
}

static void test_interrupted_creation_with_only_blobs_is_a_leftover(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	struct log *lg;
	struct blob_ref a;
	must(log_create(f->st, "s", NULL, NULL, &lg, &err), &err, "log_create");
	must(blob_write(log_dir(lg, &err), "first", 5, &a, &err), &err, "blob");
	log_close(lg); /* killed before the first append */
	struct leftover *l;
	size_t n;
	must(leftover_list(f->st, &l, &n, &err), &err, "leftover_list");
	assert_int_equal(n, 1);
	assert_true(l[0].no_log);
	assert_false(l[0].foreign);
	bool gone;
	must(leftover_remove(f->st, &l[0], &gone, &err), &err, "leftover_remove");
	assert_true(gone);
	assert_false(exists(f->sdir));
	free(l);
}

static void test_repair_removes_blobs_no_durable_event_names_compact(void **state)
{
	compact_open = true;
	test_repair_removes_blobs_no_durable_event_names(state);
	compact_open = false;
}

static void test_repair_removes_a_blob_named_only_in_a_torn_tail_compact(void **state)
{
	compact_open = true;
	test_repair_removes_a_blob_named_only_in_a_torn_tail(state);
	compact_open = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_then_read_round_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_of_a_present_blob_is_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_replaces_a_damaged_blob, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_of_a_bad_blob_is_classified_and_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_at_every_call_leaves_no_blob_or_a_complete_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_at_every_call_of_a_rewrite_keeps_the_blob_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_written_blob_survives_a_power_loss, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_writers_of_one_blob_all_succeed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blob_field_is_validated_on_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blob_field_malformed_on_disk_reads_as_corrupt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spill_keeps_a_bounded_head_and_tail_inline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blob_over_the_limit_is_refused_naming_it, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_removes_blobs_no_durable_event_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_removes_a_blob_named_only_in_a_torn_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_removes_blobs_no_durable_event_names_compact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_removes_a_blob_named_only_in_a_torn_tail_compact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check_reports_missing_and_damaged_blobs_by_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trash_restore_and_purge_take_the_blobs_along, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interrupted_creation_with_only_blobs_is_a_leftover, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
