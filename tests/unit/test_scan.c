/* test_scan.c — persist/scan classification (DESIGN §4.4) on logs built in
 * memory: ok, torn at every offset, exhaustive bit flips of committed
 * frames, the corruption and unsupported cases, and the turn summary. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

#define SID "01ARYZ6S41TSV4RRFFQ69G5FAV"

static struct frame_codec *fc;

static int setup(void **state)
{
	(void)state;
	return (fc = frame_codec_new()) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	frame_codec_free(fc);
	return 0;
}

/* A log under construction: committed frames in bytes, the next batch in
 * content. */
struct logb {
	struct buf bytes, content;
	uint64_t seq;
	size_t n_frames;
	size_t off[32];
};

static void lb_init(struct logb *l)
{
	memset(l, 0, sizeof *l);
	buf_init(&l->bytes);
	buf_init(&l->content);
}

static void lb_release(struct logb *l)
{
	buf_release(&l->bytes);
	buf_release(&l->content);
}

/* One event with the next seq (data is JSON text or NULL). */
static void lb_ev(struct logb *l, const char *type, const char *turn, bool ign, const char *data)
{
	cJSON *d = NULL;
	if (data) {
		const char *why;
		d = json_parse_strict(data, strlen(data), &why);
		assert_non_null(d);
	}
	uint64_t seq = l->seq++;
	event_format(&l->content, seq, 1700000000000LL + (int64_t)seq, type, turn, ign, d);
	cJSON_Delete(d);
}

static void lb_raw(struct logb *l, const char *raw, size_t n)
{
	buf_add(&l->content, raw, n);
}

static void lb_commit(struct logb *l)
{
	assert_true(l->n_frames < 32);
	l->off[l->n_frames++] = l->bytes.len;
	assert_int_equal(frame_encode(fc, l->content.p ? l->content.p : "", l->content.len,
				      &l->bytes), 0);
	buf_reset(&l->content);
}

static void lb_header(struct logb *l, int format)
{
	char d[160];
	snprintf(d, sizeof d, "{\"format\":%d,\"id\":\"" SID "\",\"created_at\":1700000000000,"
			      "\"cwd\":\"/home/a b\"}", format);
	lb_ev(l, "session/header", NULL, false, d);
	lb_commit(l);
}

/* header; t1 closed with call c1; t2 open with c2 (not started) and c3
 * (started): 5 frames, 13 events. */
static void std_log(struct logb *l)
{
	lb_init(l);
	lb_header(l, 1);
	lb_ev(l, "turn/start", "t1", false, "{\"parent_turn\":null}");
	lb_ev(l, "user/message", "t1", false, "{\"text\":\"list files\"}");
	lb_commit(l);
	lb_ev(l, "tool/call", "t1", false, "{\"call_id\":\"c1\",\"name\":\"sh\",\"args\":{}}");
	lb_ev(l, "tool/started", "t1", false, "{\"call_id\":\"c1\"}");
	lb_ev(l, "tool/result", "t1", false,
	      "{\"call_id\":\"c1\",\"status\":\"ok\",\"output\":\"a\\nb\"}");
	lb_commit(l);
	lb_ev(l, "assistant/text", "t1", false, "{\"text\":\"two files: caf\xC3\xA9 and more\"}");
	lb_ev(l, "turn/end", "t1", false, "{\"outcome\":\"completed\"}");
	lb_commit(l);
	lb_ev(l, "turn/start", "t2", false, NULL);
	lb_ev(l, "tool/call", "t2", false, "{\"call_id\":\"c2\",\"name\":\"read\",\"args\":[1]}");
	lb_ev(l, "tool/call", "t2", false, "{\"call_id\":\"c3\",\"name\":\"sh\",\"args\":{}}");
	lb_ev(l, "tool/started", "t2", false, "{\"call_id\":\"c3\"}");
	lb_ev(l, "assistant/reasoning", "t2", false, "{\"text\":\"thinking\"}");
	lb_commit(l);
}

static struct scan *scan_of(const struct logb *l)
{
	return scan_buffer((const uint8_t *)l->bytes.p, l->bytes.len);
}

static const char *ctx = ""; /* the case being checked, for messages */

static void expect_status(const struct scan *s, enum scan_status st)
{
	if (s->status != st)
		fail_msg("%s: status %s (%s), expected %s", ctx, scan_status_name(s->status),
			 s->err.msg, scan_status_name(st));
}

/* s holds exactly the first n events of ref, byte for byte. */
static void expect_events(const struct scan *s, const struct scan *ref, size_t n)
{
	if (s->n_events != n || n > ref->n_events)
		fail_msg("%s: %zu events, expected %zu", ctx, s->n_events, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(s->events[i].seq, ref->events[i].seq);
		assert_int_equal(s->events[i].line_len, ref->events[i].line_len);
		assert_memory_equal(s->events[i].line, ref->events[i].line, ref->events[i].line_len);
		assert_string_equal(s->events[i].type, ref->events[i].type);
	}
}

static void test_whole_log_and_header_only_log_scan_ok(void **state)
{
	(void)state;
	struct logb l;
	std_log(&l);
	struct scan *s = scan_of(&l);
	expect_status(s, SCAN_OK);
	assert_int_equal(scan_class(s), CERR_OK);
	assert_int_equal(s->n_events, 13);
	assert_int_equal(s->rev.next_seq, 13);
	assert_int_equal(s->n_frames, 5);
	assert_int_equal(s->rev.len, l.bytes.len);
	assert_int_equal(s->good_len, l.bytes.len);
	assert_int_equal(s->n_skipped, 0);
	assert_string_equal(s->id, SID);
	assert_string_equal(s->cwd, "/home/a b");
	assert_int_equal(s->created_at, 1700000000000LL);
	assert_int_equal(s->format, 1);
	static const size_t per_frame[] = {1, 2, 3, 2, 5};
	size_t ev = 0;
	for (size_t f = 0; f < 5; f++) {
		assert_int_equal(s->frames[f].offset, l.off[f]);
		assert_int_equal(s->frames[f].len,
				 (f + 1 < 5 ? l.off[f + 1] : l.bytes.len) - l.off[f]);
		assert_int_equal(s->frames[f].first_event, ev);
		assert_int_equal(s->frames[f].n_events, per_frame[f]);
		assert_int_equal(s->frames[f].first_seq, ev);
		assert_int_equal(s->frames[f].end_seq, ev + per_frame[f]);
		ev += per_frame[f];
	}
	for (size_t i = 0; i < s->n_events; i++) {
		assert_int_equal(s->events[i].seq, i);
		assert_non_null(s->events[i].kind);
	}
	assert_string_equal(s->events[0].type, "session/header");
	assert_string_equal(scan_status_name(SCAN_OK), "ok");
	assert_string_equal(scan_status_name(SCAN_TORN), "torn");
	assert_string_equal(scan_status_name(SCAN_CORRUPT), "corrupt");
	assert_string_equal(scan_status_name(SCAN_UNSUPPORTED), "unsupported");
	scan_free(s);
	lb_release(&l);

	lb_init(&l);
	lb_header(&l, 1);
	s = scan_of(&l);
	expect_status(s, SCAN_OK);
	assert_int_equal(s->n_events, 1);
	assert_int_equal(s->rev.next_seq, 1);
	assert_int_equal(s->n_frames, 1);
	assert_int_equal(s->good_len, l.bytes.len);
	assert_int_equal(s->turns, 0);
	assert_null(scan_open_turn(s));
	assert_int_equal(s->n_calls, 0);
	scan_free(s);
	lb_release(&l);
	scan_free(NULL);
}

/* Cut the log at every offset: before the end of frame 0 it is corrupt
 * (or empty), at a frame boundary ok, anywhere else torn with exactly the
 * complete frames. */
static void check_every_cut(const struct logb *l, size_t from)
{
	struct scan *ref = scan_of(l);
	expect_status(ref, SCAN_OK);
	const uint8_t *p = (const uint8_t *)l->bytes.p;
	for (size_t cut = from; cut < l->bytes.len; cut++) {
		struct scan *s = scan_buffer(p, cut);
		size_t k = 0; /* complete frames in p[0..cut) */
		while (k < l->n_frames &&
		       (k + 1 < l->n_frames ? l->off[k + 1] : l->bytes.len) <= cut)
			k++;
		assert_int_equal(s->rev.len, cut);
		if (k == 0) {
			expect_status(s, SCAN_CORRUPT);
			assert_int_equal(s->n_events, 0);
			assert_int_equal(scan_class(s), CERR_CORRUPT);
		} else {
			expect_status(s, cut == l->off[k] ? SCAN_OK : SCAN_TORN);
			assert_int_equal(scan_class(s), CERR_OK);
			assert_int_equal(s->n_frames, k);
			assert_int_equal(s->good_len, l->off[k]);
			assert_int_equal(s->rev.next_seq, ref->frames[k - 1].end_seq);
			expect_events(s, ref, ref->frames[k - 1].first_event + ref->frames[k - 1].n_events);
		}
		scan_free(s);
	}
	scan_free(ref);
}

static void test_cut_at_every_offset_scans_torn_not_corrupt(void **state)
{
	(void)state;
	struct logb l;
	std_log(&l);
	check_every_cut(&l, 0);
	lb_release(&l);
}

static void test_torn_multiblock_last_frame(void **state)
{
	(void)state;
	struct logb l;
	std_log(&l);
	/* ~300 KiB of poorly compressible text: several blocks */
	size_t n = 300 * 1024;
	char *text = malloc(n + 32);
	uint32_t x = 12345;
	memcpy(text, "{\"text\":\"", 9);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		text[9 + i] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[(x >> 16) % 62];
	}
	memcpy(text + 9 + n, "\"}", 3);
	lb_ev(&l, "user/message", "t2", false, text);
	free(text);
	lb_commit(&l);
	struct scan *ref = scan_of(&l);
	expect_status(ref, SCAN_OK);
	size_t last = l.off[l.n_frames - 1], len = l.bytes.len;
	const uint8_t *p = (const uint8_t *)l.bytes.p;
	size_t tried = 0;
	for (size_t cut = last; cut < len; cut++) {
		size_t in = cut - last;
		if (!(in < 64 || len - cut <= 8 || in % 509 == 0))
			continue;
		struct scan *s = scan_buffer(p, cut);
		expect_status(s, cut == last ? SCAN_OK : SCAN_TORN);
		assert_int_equal(s->good_len, last);
		assert_int_equal(s->rev.next_seq, 13);
		expect_events(s, ref, 13);
		scan_free(s);
		tried++;
	}
	assert_true(tried > 500);
	scan_free(ref);
	lb_release(&l);
}

/* Flip every bit of frames [0, upto): each result is corruption, or the
 * very same events. */
static void flip_every_bit(struct logb *l, size_t upto)
{
	struct scan *ref = scan_of(l);
	expect_status(ref, SCAN_OK);
	uint8_t *p = (uint8_t *)l->bytes.p;
	size_t end = upto < l->n_frames ? l->off[upto] : l->bytes.len;
	size_t same = 0, corrupt = 0;
	for (size_t i = 0; i < end; i++) {
		size_t f = 0;
		while (f + 1 < l->n_frames && l->off[f + 1] <= i)
			f++;
		for (int bit = 0; bit < 8; bit++) {
			p[i] ^= (uint8_t)(1u << bit);
			struct scan *s = scan_buffer(p, l->bytes.len);
			if (s->status == SCAN_CORRUPT) {
				corrupt++;
				/* the frames before the damage are kept intact */
				size_t keep = ref->frames[f].first_event;
				assert_true(s->n_events >= keep);
				expect_events(s, ref, s->n_events);
				assert_true(s->damage_at >= l->off[f]);
			} else {
				if (s->status != SCAN_OK)
					fail_msg("byte %zu bit %d: %s (%s)", i, bit,
						 scan_status_name(s->status), s->err.msg);
				same++;
				expect_events(s, ref, ref->n_events);
				assert_int_equal(s->rev.next_seq, ref->rev.next_seq);
				assert_int_equal(s->good_len, l->bytes.len);
			}
			scan_free(s);
			p[i] ^= (uint8_t)(1u << bit);
		}
	}
	assert_int_equal(same + corrupt, end * 8);
	assert_true(corrupt > same);
	scan_free(ref);
}

static void test_bitflips_committed_frames(void **state)
{
	(void)state;
	struct logb l;
	std_log(&l);
	assert_true(l.n_frames >= 4);
	flip_every_bit(&l, l.n_frames - 1); /* every non-final frame */
	lb_release(&l);

	lb_init(&l); /* frame 0 alone: also the final frame */
	lb_header(&l, 1);
	flip_every_bit(&l, 1);
	lb_release(&l);
}

static void append_bytes_expect_corrupt(const struct logb *l, const void *tail, size_t n)
{
	struct buf b = BUF_INIT;
	buf_add(&b, l->bytes.p, l->bytes.len);
	buf_add(&b, tail, n);
	struct scan *s = scan_buffer((const uint8_t *)b.p, b.len);
	expect_status(s, SCAN_CORRUPT);
	assert_int_equal(scan_class(s), CERR_CORRUPT);
	assert_int_equal(s->good_len, l->bytes.len);
	assert_int_equal(s->damage_at, l->bytes.len);
	assert_int_equal(s->rev.next_seq, l->seq);
	assert_int_equal(s->n_events, l->seq);
	assert_true(s->err.msg[0] != '\0');
	scan_free(s);
	buf_release(&b);
}

static void test_damage_after_the_last_frame_is_corrupt_not_torn(void **state)
{
	(void)state;
	struct logb l;
	std_log(&l);

	/* empty file */
	struct scan *s = scan_buffer((const uint8_t *)"", 0);
	expect_status(s, SCAN_CORRUPT);
	assert_int_equal(s->n_events, 0);
	scan_free(s);

	/* garbage and zeros after a valid log */
	append_bytes_expect_corrupt(&l, "hello, world\n", 13);
	static const uint8_t zeros[4096];
	static const size_t nz[] = {1, 3, 4, 5, 16, 4096};
	for (size_t i = 0; i < sizeof nz / sizeof nz[0]; i++)
		append_bytes_expect_corrupt(&l, zeros, nz[i]);
	static const uint8_t skippable[] = {0x50, 0x2A, 0x4D, 0x18, 2, 0, 0, 0, 'h', 'i'};
	append_bytes_expect_corrupt(&l, skippable, sizeof skippable);

	/* a complete valid frame after an incomplete one: not a torn tail */
	struct logb extra;
	lb_init(&extra);
	extra.seq = l.seq;
	lb_ev(&extra, "assistant/text", "t2", false, "{\"text\":\"after\"}");
	lb_commit(&extra);
	size_t last = l.off[l.n_frames - 1];
	for (size_t cut = last + 1; cut < l.bytes.len; cut++) {
		struct buf b = BUF_INIT;
		buf_add(&b, l.bytes.p, cut);
		buf_add(&b, extra.bytes.p, extra.bytes.len);
		s = scan_buffer((const uint8_t *)b.p, b.len);
		if (s->status != SCAN_CORRUPT)
			fail_msg("cut at %zu + complete frame: %s", cut, scan_status_name(s->status));
		assert_int_equal(s->good_len, last);
		assert_int_equal(s->n_events, 13 - 5);
		scan_free(s);
		buf_release(&b);
	}
	/* ... even when the complete frame is the whole last frame again */
	struct buf b = BUF_INIT;
	buf_add(&b, l.bytes.p, last + 7);
	buf_add(&b, l.bytes.p + last, l.bytes.len - last);
	s = scan_buffer((const uint8_t *)b.p, b.len);
	expect_status(s, SCAN_CORRUPT);
	scan_free(s);
	buf_release(&b);
	lb_release(&extra);

	/* a torn frame 0 followed by anything is corrupt, never torn */
	b = (struct buf)BUF_INIT;
	buf_add(&b, l.bytes.p, l.off[1] - 1);
	s = scan_buffer((const uint8_t *)b.p, b.len);
	expect_status(s, SCAN_CORRUPT);
	assert_int_equal(s->n_events, 0);
	scan_free(s);
	buf_release(&b);
	lb_release(&l);
}

/* A log whose last frame holds `content` verbatim after a valid prefix
 * (header + one batch); expects status st. */
static void with_last_frame(const char *content, size_t n, enum scan_status st)
{
	struct logb l;
	lb_init(&l);
	lb_header(&l, 1);
	lb_ev(&l, "turn/start", "t1", false, NULL);
	lb_ev(&l, "user/message", "t1", false, "{\"text\":\"hi\"}");
	lb_commit(&l);
	size_t good = l.bytes.len;
	lb_raw(&l, content, n);
	lb_commit(&l);
	struct scan *s = scan_of(&l);
	expect_status(s, st);
	if (st == SCAN_CORRUPT || st == SCAN_UNSUPPORTED) {
		assert_int_equal(s->good_len, good);
		assert_int_equal(s->rev.next_seq, 3);
		assert_int_equal(s->n_events, 3);
		assert_int_equal(s->n_frames, 2);
		assert_int_equal(s->err.cls, st == SCAN_CORRUPT ? CERR_CORRUPT : CERR_UNSUPPORTED);
		assert_int_equal(scan_class(s), s->err.cls);
	} else {
		assert_int_equal(s->good_len, l.bytes.len);
		assert_int_equal(s->n_frames, 3);
	}
	scan_free(s);
	lb_release(&l);
}

/* For string literals (embedded NULs included). */
#define LAST(lit, st) with_last_frame(lit, sizeof lit - 1, st)

#define EV(seq, rest) "{\"seq\":" #seq ",\"t\":1,\"type\":" rest "}\n"

/* An unknown type on one line does not hide a broken line after it in the
 * same frame: integrity first, so the frame is corrupt. */
static void test_unknown_then_broken_line(void **state)
{
	(void)state;
	LAST(EV(3, "\"future/thing\",\"data\":{}") "{\"seq\":4,\"t\":1,\"type\n", SCAN_CORRUPT);
	LAST(EV(3, "\"future/thing\",\"data\":{}") EV(5, "\"session/meta\",\"data\":{}"), SCAN_CORRUPT);
	LAST(EV(3, "\"future/thing\",\"data\":{}") EV(4, "\"session/meta\",\"data\":{}"),
	     SCAN_UNSUPPORTED);
	LAST(EV(3, "\"session/meta\",\"data\":{}") EV(4, "\"future/thing\",\"data\":{}"),
	     SCAN_UNSUPPORTED);
}

static void test_bad_content_in_a_valid_frame_is_corrupt(void **state)
{
	(void)state;
	static const struct {
		const char *what, *content;
	} cases[] = {
		{"seq gap", EV(4, "\"session/meta\",\"data\":{}")},
		{"gap inside a frame", EV(3, "\"session/meta\",\"data\":{}") EV(5, "\"session/meta\",\"data\":{}")},
		{"duplicate seq", EV(2, "\"session/meta\",\"data\":{}")},
		{"duplicate inside a frame", EV(3, "\"session/meta\",\"data\":{}") EV(3, "\"session/meta\",\"data\":{}")},
		{"header later", EV(3, "\"session/header\",\"data\":{\"format\":1,\"id\":\"x\",\"created_at\":1,\"cwd\":null}")},
		{"no final LF", "{\"seq\":3,\"t\":1,\"type\":\"session/meta\",\"data\":{}}"},
		{"empty line", EV(3, "\"session/meta\",\"data\":{}") "\n"},
		{"only LF", "\n"},
		{"empty line first", "\n" EV(3, "\"session/meta\",\"data\":{}")},
		{"not JSON", "hello\n"},
		{"missing field", EV(3, "\"user/message\",\"data\":{}")},
		{"turn missing", EV(3, "\"tool/started\",\"data\":{\"call_id\":\"c\"}")},
		{"invalid UTF-8", EV(3, "\"user/message\",\"data\":{\"text\":\"\xFF\"}")},
		{"surrogate", EV(3, "\"user/message\",\"data\":{\"text\":\"\xED\xA0\x80\"}")},
		{"overlong", EV(3, "\"user/message\",\"data\":{\"text\":\"\xC0\xAF\"}")},
		{"duplicate key", EV(3, "\"session/meta\",\"data\":{},\"data\":{}")},
		/* integrity of the batch comes before the type of a later line */
		{"bad line after unknown", EV(3, "\"x/new\",\"data\":{}") "garbage\xFF\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ctx = cases[i].what;
		with_last_frame(cases[i].content, strlen(cases[i].content), SCAN_CORRUPT);
	}
	/* an empty frame and a raw NUL inside a line */
	ctx = "empty frame or raw NUL";
	LAST("", SCAN_CORRUPT);
	LAST("{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"a\0b\"}}\n",
	     SCAN_CORRUPT);

	/* the same content shapes, valid, are ok */
	ctx = "valid two-line frame";
	LAST(EV(3, "\"session/meta\",\"data\":{}") EV(4, "\"session/meta\",\"data\":{}"), SCAN_OK);
}

#define HDR0(seq, data) "{\"seq\":" #seq ",\"t\":1,\"type\":\"session/header\",\"data\":" data "}\n"
#define GOOD_HDR HDR0(0, "{\"format\":1,\"id\":\"" SID "\",\"created_at\":1,\"cwd\":null}")

/* Frame 0 holds exactly one valid header line, or the log is corrupt. */
static void test_frame_0_holds_exactly_one_valid_header(void **state)
{
	(void)state;
	static const char *const frame0[] = {
		GOOD_HDR EV(1, "\"session/meta\",\"data\":{}"),
		GOOD_HDR GOOD_HDR,
		GOOD_HDR EV(1, "\"x/new\",\"ignorable\":true,\"data\":{}"),
		EV(0, "\"session/meta\",\"data\":{}"),
		HDR0(1, "{\"format\":1,\"id\":\"x\",\"created_at\":1,\"cwd\":null}"),
		HDR0(0, "{\"format\":1,\"id\":\"../x\",\"created_at\":1,\"cwd\":null}"),
		HDR0(0, "{\"format\":1,\"id\":\"x\"}"),
		HDR0(0, "{\"format\":\"1\",\"id\":\"x\",\"created_at\":1,\"cwd\":null}"),
		GOOD_HDR "\n",
		"",
	};
	for (size_t i = 0; i <= sizeof frame0 / sizeof frame0[0]; i++) {
		struct logb l;
		lb_init(&l);
		bool ok = i == sizeof frame0 / sizeof frame0[0]; /* the control */
		const char *c = ok ? GOOD_HDR : frame0[i];
		lb_raw(&l, c, strlen(c));
		lb_commit(&l);
		struct scan *s = scan_of(&l);
		expect_status(s, ok ? SCAN_OK : SCAN_CORRUPT);
		assert_int_equal(s->n_events, ok ? 1 : 0);
		assert_int_equal(s->good_len, ok ? l.bytes.len : 0);
		scan_free(s);
		lb_release(&l);
	}
}

static void test_format_2_header_is_unsupported_after_integrity(void **state)
{
	(void)state;
	/* header format 2, alone and followed by valid or torn frames */
	for (int variant = 0; variant < 3; variant++) {
		struct logb l;
		lb_init(&l);
		lb_header(&l, 2);
		lb_ev(&l, "user/message", NULL, false, "{\"text\":\"x\"}");
		if (variant > 0)
			lb_commit(&l);
		size_t len = l.bytes.len - (variant == 2 ? 3 : 0);
		struct scan *s = scan_buffer((const uint8_t *)l.bytes.p, len);
		expect_status(s, SCAN_UNSUPPORTED);
		assert_int_equal(scan_class(s), CERR_UNSUPPORTED);
		assert_int_equal(s->err.cls, CERR_UNSUPPORTED);
		assert_int_equal(s->format, 2);
		assert_int_equal(s->n_events, 0);
		scan_free(s);
		lb_release(&l);
	}
	/* format 2 followed by a damaged frame: integrity first */
	struct logb l;
	lb_init(&l);
	lb_header(&l, 2);
	lb_ev(&l, "user/message", NULL, false, "{\"text\":\"x\"}");
	lb_commit(&l);
	l.bytes.p[l.bytes.len - 1] ^= 0x10; /* checksum */
	struct scan *s = scan_of(&l);
	expect_status(s, SCAN_CORRUPT);
	assert_int_equal(s->damage_at, l.off[1]);
	scan_free(s);
	l.bytes.p[l.bytes.len - 1] ^= 0x10;
	buf_add(&l.bytes, "junk", 4);
	s = scan_of(&l);
	expect_status(s, SCAN_CORRUPT);
	scan_free(s);
	/* ... and format 2 in a frame 0 that fails its checksum */
	lb_release(&l);
	lb_init(&l);
	lb_header(&l, 2);
	l.bytes.p[l.bytes.len - 2] ^= 0x01;
	s = scan_of(&l);
	expect_status(s, SCAN_CORRUPT);
	scan_free(s);
	lb_release(&l);

	/* an unknown required type; then damage after it */
	LAST(EV(3, "\"future/thing\",\"turn\":\"t1\",\"data\":{}"), SCAN_UNSUPPORTED);
	LAST(EV(3, "\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c\",\"status\":\"later\"}"),
	     SCAN_UNSUPPORTED);
	lb_init(&l);
	lb_header(&l, 1);
	lb_ev(&l, "future/thing", NULL, false, NULL);
	lb_commit(&l);
	lb_ev(&l, "user/message", NULL, false, "{\"text\":\"x\"}");
	lb_commit(&l);
	s = scan_of(&l);
	expect_status(s, SCAN_UNSUPPORTED);
	assert_int_equal(s->n_events, 1);
	assert_int_equal(s->rev.next_seq, 1);
	scan_free(s);
	l.bytes.p[l.bytes.len - 1] ^= 0x01; /* a later frame is damaged */
	s = scan_of(&l);
	expect_status(s, SCAN_CORRUPT);
	scan_free(s);
	lb_release(&l);
}

static void test_ignorable_unknown_type_scans_ok(void **state)
{
	(void)state;
	struct logb l;
	lb_init(&l);
	lb_header(&l, 1);
	lb_ev(&l, "turn/start", "t1", false, NULL);
	lb_ev(&l, "future/thing", "t1", true, "{\"x\":[1,2]}");
	lb_ev(&l, "user/message", "t1", false, "{\"text\":\"hi\"}");
	lb_commit(&l);
	lb_ev(&l, "future/other", NULL, true, NULL);
	lb_commit(&l);
	lb_ev(&l, "turn/end", "t1", false, "{\"outcome\":\"completed\"}");
	lb_commit(&l);
	struct scan *s = scan_of(&l);
	expect_status(s, SCAN_OK);
	assert_int_equal(s->n_skipped, 2);
	assert_int_equal(s->n_events, 6);
	assert_int_equal(s->rev.next_seq, 6);
	assert_null(s->events[2].kind);
	assert_true(s->events[2].ignorable);
	assert_string_equal(s->events[2].type, "future/thing");
	assert_int_equal(s->events[3].seq, 3);
	assert_null(s->events[4].kind);
	assert_int_equal(s->frames[2].first_seq, 4);
	assert_int_equal(s->frames[2].end_seq, 5);
	assert_int_equal(s->turns, 1);
	assert_null(scan_open_turn(s));
	scan_free(s);
	lb_release(&l);
}

static void test_turn_summary_covers_the_valid_prefix_latest_open(void **state)
{
	(void)state;
	struct logb l;
	std_log(&l);
	struct scan *s = scan_of(&l);
	expect_status(s, SCAN_OK);
	assert_int_equal(s->turns, 2);
	assert_int_equal(s->n_open_turns, 1);
	assert_string_equal(s->open_turns[0], "t2");
	assert_string_equal(scan_open_turn(s), "t2");
	assert_int_equal(s->n_calls, 3);
	static const struct {
		const char *id, *turn;
		uint64_t seq;
		bool started, resulted;
	} want[] = {{"c1", "t1", 3, true, true}, {"c2", "t2", 9, false, false},
		    {"c3", "t2", 10, true, false}};
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(s->calls[i].call_id, want[i].id);
		assert_string_equal(s->calls[i].turn, want[i].turn);
		assert_int_equal(s->calls[i].seq, want[i].seq);
		assert_int_equal(s->calls[i].started, want[i].started);
		assert_int_equal(s->calls[i].resulted, want[i].resulted);
	}
	scan_free(s);

	/* the summary covers only the valid prefix of a torn log */
	s = scan_buffer((const uint8_t *)l.bytes.p, l.bytes.len - 1);
	expect_status(s, SCAN_TORN);
	assert_int_equal(s->turns, 1);
	assert_int_equal(s->n_open_turns, 0);
	assert_null(scan_open_turn(s));
	assert_int_equal(s->n_calls, 1);
	scan_free(s);

	/* two open turns: the most recent is the open one */
	lb_ev(&l, "turn/start", "t3", false, NULL);
	lb_commit(&l);
	s = scan_of(&l);
	expect_status(s, SCAN_OK);
	assert_int_equal(s->turns, 3);
	assert_int_equal(s->n_open_turns, 2);
	assert_string_equal(s->open_turns[0], "t2");
	assert_string_equal(s->open_turns[1], "t3");
	assert_string_equal(scan_open_turn(s), "t3");
	scan_free(s);
	lb_release(&l);
}

/* A log written through the public writer scans the same as in memory. */
static void test_log_written_to_disk_scans_as_in_memory(void **state)
{
	(void)state;
	char root[] = "/tmp/cairn-test-scan-XXXXXX";
	assert_non_null(mkdtemp(root));
	struct store *st = NULL;
	struct cerr e;
	assert_int_equal(store_open(root, true, &st, &e), 0);
	struct log *lg = NULL;
	assert_int_equal(log_create(st, NULL, "/tmp/proj", NULL, &lg, &e), 0);
	const char *why;
	cJSON *text = json_parse_strict("{\"text\":\"hi\"}", 13, &why);
	struct log_event evs[] = {
		{"turn/start", "t1", false, NULL, 0},
		{"user/message", "t1", false, text, 0},
		{"future/x", NULL, true, NULL, 0},
	};
	uint64_t next = 0;
	assert_int_equal(log_append(lg, 1, evs, 2, &next, &e), 0);
	assert_int_equal(next, 3);
	assert_int_equal(log_append(lg, 3, evs + 1, 2, &next, &e), 0);
	assert_int_equal(next, 5);
	cJSON_Delete(text);

	int fd = open(log_path(lg), O_RDONLY);
	assert_true(fd >= 0);
	struct scan *s = NULL;
	assert_int_equal(scan_fd(fd, &s, &e), 0);
	expect_status(s, SCAN_OK);
	assert_int_equal(s->n_events, 5);
	assert_int_equal(s->rev.next_seq, 5);
	assert_int_equal(s->n_frames, 3);
	assert_int_equal(s->n_skipped, 1);
	assert_string_equal(s->id, log_id(lg));
	assert_string_equal(s->cwd, "/tmp/proj");
	assert_true(s->rev.ino != 0);
	assert_int_equal(s->good_len, s->rev.len);
	assert_string_equal(scan_open_turn(s), "t1");

	/* the same bytes scanned from memory, and torn at every offset */
	struct logb l;
	lb_init(&l);
	buf_grow(&l.bytes, s->rev.len);
	l.bytes.len = (size_t)pread(fd, l.bytes.p, s->rev.len, 0);
	assert_int_equal(l.bytes.len, s->rev.len);
	for (size_t f = 0; f < s->n_frames; f++)
		l.off[l.n_frames++] = s->frames[f].offset;
	l.seq = s->rev.next_seq;
	struct scan *m = scan_of(&l);
	expect_status(m, SCAN_OK);
	expect_events(m, s, s->n_events);
	scan_free(m);
	check_every_cut(&l, 0);
	flip_every_bit(&l, l.n_frames - 1);
	lb_release(&l);
	scan_free(s);
	close(fd);
	log_close(lg);
	store_close(st);
	rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_log_and_header_only_log_scan_ok),
		cmocka_unit_test(test_cut_at_every_offset_scans_torn_not_corrupt),
		cmocka_unit_test(test_torn_multiblock_last_frame),
		cmocka_unit_test(test_bitflips_committed_frames),
		cmocka_unit_test(test_damage_after_the_last_frame_is_corrupt_not_torn),
		cmocka_unit_test(test_bad_content_in_a_valid_frame_is_corrupt),
		cmocka_unit_test(test_unknown_then_broken_line),
		cmocka_unit_test(test_frame_0_holds_exactly_one_valid_header),
		cmocka_unit_test(test_format_2_header_is_unsupported_after_integrity),
		cmocka_unit_test(test_ignorable_unknown_type_scans_ok),
		cmocka_unit_test(test_turn_summary_covers_the_valid_prefix_latest_open),
		cmocka_unit_test(test_log_written_to_disk_scans_as_in_memory),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
