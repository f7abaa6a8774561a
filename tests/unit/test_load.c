/* test_load.c — the compact load (persist/load.c): it reads every log as a
 * scan does (status, error class, lengths, events) on ok, torn, corrupt and
 * unsupported logs, every cut and every bit flip, with and without a
 * watermark; a tail read holds the last events of the full load, across
 * frame boundaries and above a torn end; events parse on demand; and a
 * load never changes the file. */
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

#include "base/json.h"
#include "base/sha256.h"
#include "persist/load.h"
#include "persist/scan.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_logbytes.h"

/* header; t1 closed with a tool call; t2 open: 5 frames. */
static void small_log(struct logbytes *l)
{
	lbytes_init(l);
	lbytes_event(l, "turn/start", "t1", "{\"parent_turn\":null}");
	lbytes_event(l, "user/message", "t1", "{\"text\":\"list \\\"files\\\"\\n\"}");
	lbytes_commit(l);
	lbytes_event(l, "tool/call", "t1", "{\"call_id\":\"c1\",\"name\":\"sh\",\"args\":{\"a\":[1,2.5]}}");
	lbytes_event(l, "tool/started", "t1", "{\"call_id\":\"c1\"}");
	lbytes_event(l, "tool/result", "t1",
		     "{\"call_id\":\"c1\",\"status\":\"ok\",\"output\":\"a\\nb\",\"source_seqs\":[3,4]}");
	lbytes_commit(l);
	lbytes_event(l, "assistant/text", "t1", "{\"text\":\"caf\xC3\xA9 \xE6\x97\xA5\"}");
	lbytes_event(l, "turn/end", "t1", "{\"outcome\":\"completed\"}");
	lbytes_commit(l);
	lbytes_event(l, "turn/start", "t2", "{\"parent_turn\":\"t1\"}");
	lbytes_event(l, "input/queued", NULL, "{\"input_id\":\"i1\",\"text\":\"next\"}");
	lbytes_commit(l);
}

static void compare(const uint8_t *p, size_t n, const struct scan_opts *o, const char *what)
{
	struct scan *sc = scan_buffer_opts(p, n, o);
	struct load *ld = load_buffer(p, n, o);
	assert_load_is_scan(ld, sc, what);
	load_free(ld);
	scan_free(sc);
}

static struct scan_opts wm_at(const struct logbytes *l, size_t frame, uint64_t seq)
{
	struct scan_opts o = {.watermark = true, .wm_len = l->frame_at[frame], .wm_seq = seq};
	assert_true(scan_head((const uint8_t *)l->bytes.p, l->bytes.len, o.head));
	return o;
}

static void test_load_is_scan_on_every_cut_and_bit_flip(void **state)
{
	(void)state;
	struct logbytes l;
	small_log(&l);
	const uint8_t *p = (const uint8_t *)l.bytes.p;
	size_t n = l.bytes.len;
	/* Frame 3 starts at seq 8: a watermark there, and one that is wrong. */
	struct scan_opts wm = wm_at(&l, 3, 8), bad = wm_at(&l, 3, 7);
	const struct scan_opts *opts[] = {NULL, &wm, &bad};
	char what[96];
	for (size_t k = 0; k < 3; k++) {
		for (size_t cut = 0; cut <= n; cut++) {
			snprintf(what, sizeof what, "opts %zu, cut at %zu", k, cut);
			compare(p, cut, opts[k], what);
		}
		uint8_t *c = malloc(n);
		for (size_t bit = 0; bit < n * 8; bit++) {
			memcpy(c, p, n);
			c[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			snprintf(what, sizeof what, "opts %zu, bit %zu flipped", k, bit);
			compare(c, n, opts[k], what);
		}
		free(c);
	}
	/* Garbage and zeros after the end (a power loss), with and without
	 * the watermark at the end. */
	struct scan_opts at_end = wm_at(&l, l.n_frames - 1, 8);
	at_end.wm_len = n;
	at_end.wm_seq = l.seq;
	static const char *const tails[] = {"\0\0\0\0\0\0\0\0", "garbage!", "\x28\xB5\x2F\xFD\x64"};
	for (size_t t = 0; t < 3; t++) {
		struct buf b = BUF_INIT;
		buf_add(&b, p, n);
		buf_add(&b, tails[t], 8);
		compare((const uint8_t *)b.p, b.len, NULL, "tail bytes, no watermark");
		compare((const uint8_t *)b.p, b.len, &at_end, "tail bytes, watermark at the end");
		buf_release(&b);
	}
	lbytes_release(&l);
}

/* Lines that are wrong in each way a line can be, in a frame of their own
 * after a good one: load and scan agree on each. */
static void test_load_is_scan_on_bad_lines(void **state)
{
	(void)state;
	static const char *const lines[] = {
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"ok\"}}",
		"{\"seq\":4,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"gap\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":1}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":[]}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\"}",
		"{\"seq\":3.0,\"t\":1e3,\"type\":\"user/message\",\"data\":{\"text\":\"\"}}",
		"{\"seq\":3.5,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"\"}}",
		"{\"seq\":-3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"\"}}",
		"{\"seq\":3,\"t\":1,\"t\":2,\"type\":\"user/message\",\"data\":{\"text\":\"\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user\\/message\",\"data\":{\"text\":\"esc\"}}",
		"{\"s\\u0065q\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"esc key\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"User/Message\",\"data\":{\"text\":\"\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"x/new\",\"data\":{}}",
		"{\"seq\":3,\"t\":1,\"type\":\"x/new\",\"ignorable\":true,\"data\":{}}",
		"{\"seq\":3,\"t\":1,\"type\":\"x/new\",\"ignorable\":1,\"data\":{}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/start\",\"data\":{}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/start\",\"turn\":\"\",\"data\":{}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/start\",\"turn\":\"t\\u00e9\",\"data\":{}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/start\",\"turn\":7,\"data\":{}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"won\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"fail\\u0065d\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"status\":\"won\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"failed\",\"error\":\"boom\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"failed\",\"error\":{\"class\":\"http\",\"message\":\"x\",\"http_status\":503}}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"failed\",\"error\":{\"class\":\"http\",\"message\":\"x\",\"http_status\":99}}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"failed\",\"error\":{\"class\":1,\"message\":\"x\"}}}",
		"{\"seq\":3,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"failed\",\"error\":7}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"x\",\"blob\":{\"sha256\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":300000}}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"x\",\"blob\":{\"sha256\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"size\":1}}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"x\",\"blob\":{\"sha256\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"x\",\"blob\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c\",\"status\":\"ok\",\"source_seqs\":[1,-2]}}",
		"{\"seq\":3,\"t\":1,\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c\",\"status\":\"ok\",\"source_seqs\":[1,2.0,3e0]}}",
		"{\"seq\":3,\"t\":1,\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c\",\"status\":\"ok\",\"source_seqs\":[\"1\"]}}",
		"{\"seq\":3,\"t\":1,\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c\",\"status\":\"ok\",\"exit_code\":1.5}}",
		"{\"seq\":3,\"t\":1,\"type\":\"session/meta\",\"data\":{\"pinned\":null}}",
		"{\"seq\":3,\"t\":1,\"type\":\"session/header\",\"data\":{\"format\":1,\"id\":\"x\",\"created_at\":1,\"cwd\":null}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"a\",\"text\":\"b\"}}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"x\"},\"extra\":[1e400]}",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"\\u0000\"}}",
		"[\"seq\",3]",
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"x\"}} x",
		"{\"seq\":9007199254740992,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"\"}}",
	};
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
		for (int second = 0; second < 2; second++) {
			struct logbytes l;
			lbytes_init(&l);
			lbytes_event(&l, "turn/start", "t1", NULL);
			lbytes_event(&l, "user/message", "t1", "{\"text\":\"hi\"}");
			lbytes_commit(&l);
			lbytes_raw(&l, lines[i]);
			if (second) /* a broken line after it: integrity first */
				lbytes_raw(&l, "{\"seq\":4,\"t\":1,");
			lbytes_commit(&l);
			compare((const uint8_t *)l.bytes.p, l.bytes.len, NULL, lines[i]);
			lbytes_release(&l);
		}
	}
}

/* A log of n_turns turns of random-ish text (so frames compress little),
 * batched as sessions commit: 1 to 3 events per frame. */
static void big_log(struct logbytes *l, int n_turns)
{
	uint64_t r = 42;
	lbytes_init(l);
	for (int t = 0; t < n_turns; t++) {
		char turn[16], data[600];
		snprintf(turn, sizeof turn, "t%d", t);
		lbytes_event(l, "turn/start", turn, NULL);
		lbytes_event(l, "user/message", turn, "{\"text\":\"go\"}");
		lbytes_commit(l);
		for (int k = 0; k < 4; k++) {
			int len = snprintf(data, sizeof data, "{\"text\":\"");
			for (int j = 0; j < 200; j++) {
				r = r * 6364136223846793005ull + 1442695040888963407ull;
				data[len++] = "abcdefghijklmnopqrstuvwxyz0123456789 "[(r >> 33) % 37];
			}
			snprintf(data + len, sizeof data - (size_t)len, "\\n\"}");
			lbytes_event(l, "assistant/text", turn, data);
			if (k % 2)
				lbytes_commit(l);
		}
		lbytes_event(l, "turn/end", turn, "{\"outcome\":\"completed\"}");
		lbytes_commit(l);
	}
}

static int write_log(const char *dir, const struct buf *b)
{
	const char *path = path_in(dir, "log");
	spit(path, b->p, b->len, O_TRUNC);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	return fd;
}

/* The tail of the log at fd for n events matches the full load's end. */
static void expect_tail(int fd, size_t n, const struct scan_opts *o, const char *what)
{
	struct cerr err;
	struct load *full, *tail;
	struct scan *sc;
	assert_int_equal(load_fd(fd, o, &full, &err), 0);
	assert_int_equal(scan_fd_opts(fd, o, &sc, &err), 0);
	assert_load_is_scan(full, sc, what);
	assert_int_equal(load_tail(fd, n, o, &tail, &err), 0);
	const struct scan *ts = load_scan(tail), *fs = load_scan(full);
	if (ts->status != fs->status || ts->good_len != fs->good_len ||
	    !revision_same(&ts->rev, &fs->rev))
		fail_msg("%s: tail %s (%s) to %llu, full %s to %llu", what,
			 scan_status_name(ts->status), ts->err.msg, (unsigned long long)ts->good_len,
			 scan_status_name(fs->status), (unsigned long long)fs->good_len);
	assert_string_equal(ts->id, LB_SID);
	size_t k = load_count(tail), all = load_count(full);
	assert_true(k >= (n < all ? n : all));
	assert_true(k <= all);
	assert_same_events(tail, 0, sc, all - k, k, what);
	/* It starts at a frame boundary of the full load. */
	if (k) {
		const struct load_frame *f0 = load_frame(tail, 0);
		const struct load_frame *ff = load_frame(full, load_event(full, all - k)->frame);
		assert_int_equal(f0->offset, ff->offset);
	}
	/* A short tail is really a tail: it did not read everything. */
	if (n <= 100 && all > 1000)
		assert_true(load_is_tail(tail) && k < all / 2);
	load_free(tail);
	load_free(full);
	scan_free(sc);
}

static void test_tail_is_the_end_of_the_full_load(void **state)
{
	(void)state;
	char dir[64], root[80];
	assert_int_equal(tmp_root("load", dir, sizeof dir, root, sizeof root), 0);
	struct logbytes l;
	big_log(&l, 600); /* 4201 events, ~1 MiB */
	assert_true(l.bytes.len > 4 * 65536);
	int fd = write_log(dir, &l.bytes);
	static const size_t ns[] = {0, 1, 2, 3, 7, 100, 101, 999, 1000, 4000, 4201, 10000};
	char what[64];
	for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
		snprintf(what, sizeof what, "last %zu", ns[i]);
		expect_tail(fd, ns[i], NULL, what);
	}
	close(fd);

	/* Torn: half of one more frame. */
	struct logbytes t;
	big_log(&t, 600);
	size_t whole = t.bytes.len;
	lbytes_event(&t, "turn/start", "tx", NULL);
	lbytes_commit(&t);
	t.bytes.len = whole + (t.bytes.len - whole) / 2;
	fd = write_log(dir, &t.bytes);
	expect_tail(fd, 5, NULL, "torn, last 5");
	/* The same with a watermark below the tail and one at its end. */
	struct scan_opts o = wm_at(&t, 3, 5);
	expect_tail(fd, 5, &o, "torn, watermark far below");
	o.wm_len = whole;
	o.wm_seq = t.seq - 1;
	expect_tail(fd, 5, &o, "torn, watermark at the last whole frame");
	o.wm_len = t.bytes.len;
	expect_tail(fd, 5, &o, "torn below its watermark: corrupt");
	close(fd);

	/* Zeros at the end above the watermark: a torn tail. */
	struct buf z = BUF_INIT;
	buf_add(&z, l.bytes.p, l.bytes.len);
	buf_add(&z, "\0\0\0\0\0\0\0\0\0\0\0\0", 12);
	fd = write_log(dir, &z);
	o = wm_at(&l, 1, 1);
	o.wm_len = l.bytes.len;
	o.wm_seq = l.seq;
	expect_tail(fd, 3, &o, "zeros above the watermark");
	expect_tail(fd, 3, NULL, "zeros, no watermark: corrupt");
	close(fd);
	buf_release(&z);

	/* A damaged frame near the end (in the window) is corruption. */
	struct buf d = BUF_INIT;
	buf_add(&d, l.bytes.p, l.bytes.len);
	d.p[l.frame_at[l.n_frames - 3] + 12] ^= 0x40;
	fd = write_log(dir, &d);
	expect_tail(fd, 3, NULL, "damaged frame in the tail");
	close(fd);
	buf_release(&d);

	/* A damaged header: the tail says what a full load says. */
	struct buf h = BUF_INIT;
	buf_add(&h, l.bytes.p, l.bytes.len);
	h.p[20] ^= 0x01;
	fd = write_log(dir, &h);
	struct load *full, *tl;
	struct cerr err;
	assert_int_equal(load_fd(fd, NULL, &full, &err), 0);
	assert_int_equal(load_tail(fd, 3, NULL, &tl, &err), 0);
	assert_int_equal(load_scan(full)->status, SCAN_CORRUPT);
	assert_int_equal(load_scan(tl)->status, SCAN_CORRUPT);
	assert_int_equal(load_scan(tl)->damage_at, 0);
	assert_true(revision_same(&load_scan(tl)->rev, &load_scan(full)->rev));
	assert_int_equal(load_count(tl), 0);
	load_free(tl);
	load_free(full);
	close(fd);
	buf_release(&h);

	lbytes_release(&t);
	lbytes_release(&l);
	rm_rf(dir);
}

static void test_load_parses_each_event_on_demand_like_scan(void **state)
{
	(void)state;
	struct logbytes l;
	small_log(&l);
	struct scan *sc = scan_buffer((const uint8_t *)l.bytes.p, l.bytes.len);
	struct load *ld = load_buffer((const uint8_t *)l.bytes.p, l.bytes.len, NULL);
	assert_int_equal(load_count(ld), sc->n_events);
	for (size_t i = 0; i < load_count(ld); i++) {
		cJSON *t = load_json(ld, i);
		assert_non_null(t);
		assert_true(cJSON_Compare(t, sc->events[i].root, 1));
		cJSON_Delete(t);
	}
	/* Turns are interned once each. */
	assert_int_equal(load_n_turns(ld), 2);
	assert_string_equal(load_turn_name(ld, 1), "t1");
	assert_null(load_turn(ld, 0));
	assert_true(load_memory(ld) >= l.bytes.len);
	load_free(ld);
	scan_free(sc);
	lbytes_release(&l);
}

static void test_load_never_changes_the_file(void **state)
{
	(void)state;
	char dir[64], root[80];
	assert_int_equal(tmp_root("load", dir, sizeof dir, root, sizeof root), 0);
	struct logbytes l;
	big_log(&l, 50);
	lbytes_event(&l, "turn/start", "tx", NULL);
	lbytes_commit(&l);
	l.bytes.len -= 3; /* torn */
	int fd = write_log(dir, &l.bytes);
	close(fd);
	const char *path = path_in(dir, "log");
	assert_int_equal(chmod(path, 0400), 0); /* and readable is enough */
	fd = open(path, O_RDONLY);
	struct stat before, after;
	assert_int_equal(fstat(fd, &before), 0);
	usleep(20000);
	struct cerr err;
	struct load *ld;
	assert_int_equal(load_fd(fd, NULL, &ld, &err), 0);
	assert_int_equal(load_scan(ld)->status, SCAN_TORN);
	load_free(ld);
	assert_int_equal(load_tail(fd, 5, NULL, &ld, &err), 0);
	assert_int_equal(load_scan(ld)->status, SCAN_TORN);
	load_free(ld);
	assert_int_equal(fstat(fd, &after), 0);
	assert_int_equal(after.st_size, before.st_size);
	assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	assert_int_equal(after.st_ctim.tv_nsec, before.st_ctim.tv_nsec);
	close(fd);
	assert_same_file(path, (const uint8_t *)l.bytes.p, l.bytes.len);
	lbytes_release(&l);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_is_scan_on_every_cut_and_bit_flip),
		cmocka_unit_test(test_load_is_scan_on_bad_lines),
		cmocka_unit_test(test_tail_is_the_end_of_the_full_load),
		cmocka_unit_test(test_load_parses_each_event_on_demand_like_scan),
		cmocka_unit_test(test_load_never_changes_the_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
