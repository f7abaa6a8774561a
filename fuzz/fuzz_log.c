/* fuzz_log.c — libFuzzer target for the log reader: frame walk, zstd
 * decoding, line and event parsing, the turn summary.
 *
 * Each input is scanned three ways: as a whole log file; and, when small,
 * as the content of one frame behind a valid header frame (so mutations
 * reach the line and event parser instead of dying at the zstd checksum),
 * and as the content of the header frame itself. Every scan must satisfy
 * the scan.h contract, and a compact load (load.h) of the same bytes must
 * read exactly what the scan read; a violation aborts. Run with
 * fuzz/run.sh. */
#include "base/buf.h"
#include "base/json.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/load.h"
#include "persist/scan.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTENT_MAX (64u * 1024u) /* inputs up to this size are also framed */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                       \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "fuzz_log: invariant failed: %s (%s:%d)\n", #cond,  \
				__FILE__, __LINE__);                                        \
			abort();                                                            \
		}                                                                           \
	} while (0)

static const char header[] = "{\"seq\":0,\"t\":1,\"type\":\"session/header\",\"data\":"
			     "{\"format\":1,\"id\":\"fuzz\",\"created_at\":1,\"cwd\":null}}\n";

/* The scan.h contract, whatever the bytes. */
static void check_scan(const struct scan *s, size_t file_len)
{
	REQUIRE(s->status == SCAN_OK || s->status == SCAN_TORN || s->status == SCAN_CORRUPT ||
		s->status == SCAN_UNSUPPORTED);
	REQUIRE(s->rev.len == file_len);
	REQUIRE(s->good_len <= s->rev.len);
	REQUIRE(s->n_events >= s->n_skipped);
	REQUIRE(s->n_open_turns <= s->turns);
	if (s->status == SCAN_OK)
		REQUIRE(s->good_len == s->rev.len);
	if (s->status == SCAN_TORN)
		REQUIRE(s->good_len < s->rev.len);
	if (s->status == SCAN_CORRUPT) {
		REQUIRE(s->err.cls == CERR_CORRUPT);
		REQUIRE(s->damage_at <= s->rev.len);
	}
	if (s->status == SCAN_UNSUPPORTED)
		REQUIRE(s->err.cls == CERR_UNSUPPORTED);
	if (s->status == SCAN_OK || s->status == SCAN_TORN) {
		/* A readable log starts with a valid header frame. */
		REQUIRE(s->n_frames >= 1 && s->n_events >= 1 && s->id);
		REQUIRE(strcmp(s->events[0].type, "session/header") == 0);
		REQUIRE(s->format == 1);
		REQUIRE(scan_class(s) == CERR_OK);
	} else {
		REQUIRE(scan_class(s) != CERR_OK);
	}
	/* Events: seq contiguous from 0, ignorable unknown ones included. */
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		REQUIRE(ev->seq == i);
		REQUIRE(ev->type && ev->data && ev->root);
		REQUIRE(ev->kind || ev->ignorable);
		REQUIRE(!ev->turn || (*ev->turn && strlen(ev->turn) <= TURN_ID_MAX));
		REQUIRE(ev->line_len <= EVENT_MAX_LINE);
		REQUIRE(memchr(ev->line, '\n', ev->line_len) == NULL);
	}
	if (s->n_frames)
		REQUIRE(s->rev.next_seq == s->n_events);
	/* Frames tile the good prefix and the event array in order. */
	uint64_t off = 0, seq = 0;
	size_t ev = 0;
	for (size_t i = 0; i < s->n_frames; i++) {
		const struct scan_frame *fr = &s->frames[i];
		REQUIRE(fr->offset == off && fr->len > 0);
		REQUIRE(fr->first_event == ev && fr->first_seq == seq);
		REQUIRE(fr->end_seq - fr->first_seq == fr->n_events && fr->n_events > 0);
		REQUIRE(i > 0 || fr->n_events == 1);
		off += fr->len;
		seq = fr->end_seq;
		ev += fr->n_events;
	}
	REQUIRE(off == s->good_len);
	REQUIRE(ev == s->n_events);
	/* The turn summary points at events it has. */
	for (size_t i = 0; i < s->n_calls; i++) {
		REQUIRE(s->calls[i].call_id && s->calls[i].seq < s->n_events);
		REQUIRE(strcmp(s->events[s->calls[i].seq].type, "tool/call") == 0);
	}
	const char *open = scan_open_turn(s);
	REQUIRE((open != NULL) == (s->n_open_turns > 0));
}

/* What the reader accepted, the writer's canonical form must reproduce:
 * format each event again and parse it back at the same seq. */
static void check_reformat(const struct scan *s)
{
	if (s->status != SCAN_OK && s->status != SCAN_TORN)
		return;
	struct buf out = BUF_INIT;
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		buf_reset(&out);
		event_format(&out, ev->seq, ev->t, ev->type, ev->turn, ev->ignorable, ev->data);
		REQUIRE(out.len > 0 && out.p[out.len - 1] == '\n');
		struct event again;
		struct cerr err;
		int r = event_parse(out.p, out.len - 1, ev->seq, &again, &err);
		if (r < 0)
			fprintf(stderr, "fuzz_log: reformatted event %zu rejected: %s\n%.*s\n", i,
				err.msg, (int)(out.len - 1), out.p);
		REQUIRE(r == 0);
		REQUIRE(again.seq == ev->seq && again.t == ev->t);
		REQUIRE(strcmp(again.type, ev->type) == 0);
		REQUIRE((again.turn == NULL) == (ev->turn == NULL));
		REQUIRE(!again.turn || strcmp(again.turn, ev->turn) == 0);
		REQUIRE(again.ignorable == ev->ignorable && again.kind == ev->kind);
		REQUIRE(cJSON_Compare(again.data, ev->data, true));
		event_release(&again);
	}
	buf_release(&out);
}

/* A compact load of p[0..n) reads what the scan s of them read. */
static void check_load(const uint8_t *p, size_t n, const struct scan *s)
{
	struct load *l = load_buffer(p, n, NULL);
	const struct scan *ls = load_scan(l);
	REQUIRE(ls->status == s->status && ls->err.cls == s->err.cls);
	REQUIRE(ls->good_len == s->good_len && ls->damage_at == s->damage_at);
	REQUIRE(revision_same(&ls->rev, &s->rev));
	REQUIRE(load_count(l) == s->n_events && load_n_frames(l) == s->n_frames);
	for (size_t i = 0; i < s->n_events; i++) {
		size_t len;
		const char *line = load_line(l, i, &len);
		const struct event *ev = &s->events[i];
		REQUIRE(load_event(l, i)->seq == ev->seq && load_event(l, i)->type == ev->vtype);
		REQUIRE(len == ev->line_len && memcmp(line, ev->line, len) == 0);
		const char *turn = load_turn(l, i);
		REQUIRE((turn == NULL) == (ev->turn == NULL) && (!turn || strcmp(turn, ev->turn) == 0));
	}
	load_free(l);
}

static void scan_and_check(const uint8_t *p, size_t n)
{
	struct scan *s = scan_buffer(p, n);
	check_scan(s, n);
	check_reformat(s);
	check_load(p, n, s);
	scan_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct frame_codec *fc;
	if (!fc)
		fc = frame_codec_new();

	/* 1. The bytes as a log file. */
	scan_and_check(data, size);
	if (size > CONTENT_MAX)
		return 0;

	/* 2. The bytes as the content of a batch frame after a valid header:
	 * both frames are complete, so the log is never torn. */
	struct buf log = BUF_INIT;
	REQUIRE(frame_encode(fc, header, sizeof header - 1, &log) == 0);
	size_t hdr_len = log.len;
	REQUIRE(frame_encode(fc, (const char *)data, size, &log) == 0);
	struct scan *s = scan_buffer((const uint8_t *)log.p, log.len);
	check_scan(s, log.len);
	check_reformat(s);
	check_load((const uint8_t *)log.p, log.len, s);
	REQUIRE(s->status != SCAN_TORN);
	REQUIRE(s->n_frames >= 1 && s->n_frames <= 2);
	REQUIRE(s->good_len == hdr_len || s->good_len == log.len);
	if (s->status == SCAN_OK)
		REQUIRE(s->n_frames == 2 && s->n_events >= 2);
	/* Any proper prefix of the last frame is a torn tail over the same
	 * header, never more events; corruption only when the cut region
	 * holds a complete valid frame (raw blocks can carry the input's own
	 * frames), which a crash cannot leave behind. */
	if (s->status == SCAN_OK && log.len > hdr_len + 1) {
		size_t cut = hdr_len + 1 + (size % (log.len - hdr_len - 1));
		struct scan *t = scan_buffer((const uint8_t *)log.p, cut);
		check_scan(t, cut);
		REQUIRE(t->status == SCAN_TORN ||
			(t->status == SCAN_CORRUPT && strstr(t->err.msg, "inside the torn tail")));
		REQUIRE(t->good_len == hdr_len && t->n_events == 1);
		scan_free(t);
	}
	scan_free(s);

	/* 3. The bytes as the content of the header frame. */
	buf_reset(&log);
	REQUIRE(frame_encode(fc, (const char *)data, size, &log) == 0);
	scan_and_check((const uint8_t *)log.p, log.len);
	buf_release(&log);
	return 0;
}
