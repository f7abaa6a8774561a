/* test_capture.c — a turn's history captured through the real FIFO on a
 * real loop (engine/capture.h): deltas of one stream become one event,
 * batches go at the deadline or at their size (cut on a character
 * boundary), a commit calls back once everything before it is durable, a
 * failed item poisons the capture so nothing more is posted, what is
 * pending is taken for the full save, and a capture closed with items in
 * flight is freed only after they completed. Logs are read back from disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "engine/capture.h"
#include "persist/fifo.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

struct cx {
	char dir[64], root[128];
	uv_loop_t loop;
	struct fifo *f;
	struct journal *j;         /* the session's, after the BEFORE save */
	struct sink_op op;
	uint64_t next_seq, version; /* after the BEFORE save */
	int done;                  /* item callbacks */
	struct cerr last;
};

static uint64_t now_ms(void)
{
	return clock_mono_ns() / 1000000;
}

static void run_until(struct cx *x, const int *calls, int want)
{
	uint64_t until = now_ms() + 10000;
	while (*calls < want) {
		if (now_ms() > until)
			fail_msg("waited 10 s for a callback (%d of %d)", *calls, want);
		uv_run(&x->loop, UV_RUN_NOWAIT);
		usleep(200);
	}
}

static void item_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	struct cx *x = ctx;
	x->done++;
	x->last = err ? *err : (struct cerr){0};
	if (!err) {
		x->next_seq = r->next_seq;
		x->version = r->content_version;
	}
}

static void saved_cb(void *ctx, const struct journal_receipt *r, const struct cerr *err)
{
	(void)r;
	struct cx *x = ctx;
	x->done++;
	x->last = err ? *err : (struct cerr){0};
}

static cJSON *batch(const char *json)
{
	cJSON *a = cJSON_Parse(json);
	assert_non_null(a);
	return a;
}

/* The BEFORE save of turn t1: creates session S. */
static int setup(void **state)
{
	struct cx *x = xcalloc(1, sizeof *x);
	struct cerr err = {0};
	assert_int_equal(tmp_root("cairn-capture", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	struct fifo_item *it = fifo_history("S", 1, batch("[{\"type\":\"turn/start\",\"turn\":\"t1\","
							 "\"data\":{}},{\"type\":\"user/message\","
							 "\"turn\":\"t1\",\"data\":{\"text\":\"hi\"}}]"));
	fifo_item_create(it, "/w");
	assert_int_equal(fifo_post(x->f, it, item_cb, x, &err), 0);
	run_until(x, &x->done, 1);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_int_equal(x->next_seq, 3);
	struct journal_deps jd = {.fifo = x->f, .session = "S", .generation = 1, .cwd = "/w"};
	x->j = journal_new(&jd, NULL, true, x->next_seq, x->version);
	sink_op_set(&x->op, "S", 1, 1);
	*state = x;
	return 0;
}

static void closed_cb(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t outstanding)
{
	(void)f;
	(void)outstanding;
	assert_int_equal(st, FIFO_CLOSED);
	(*(int *)ctx)++;
}

static int teardown(void **state)
{
	struct cx *x = *state;
	int closed = 0;
	journal_close(x->j);
	assert_int_equal(fifo_close(x->f, now_ms() + 10000, closed_cb, &closed), 0);
	run_until(x, &closed, 1);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	rm_rf(x->dir);
	free(x);
	return 0;
}

/* The log of S as read from disk; the caller frees it. */
static struct scan *read_log(struct cx *x)
{
	char *p = session_path(x->root, STORE_SESSIONS, "/w", "S", LOG_FILE);
	struct scan *s = scan_path(p);
	free(p);
	assert_int_equal(s->status, SCAN_OK);
	return s;
}

/* The text of event i of s (its data.text), or "" when it has none. */
static const char *text_of(const struct scan *s, size_t i)
{
	const cJSON *t = cJSON_GetObjectItem(s->events[i].data, "text");
	return cJSON_IsString(t) ? t->valuestring : "";
}

struct commits {
	int calls;
	struct cerr err;
	size_t outstanding_then;
	struct buf durable; /* "first_seq:n " per durable batch */
};

static void commit_cb(struct capture *c, void *ctx, const struct cerr *err)
{
	struct commits *k = ctx;
	k->calls++;
	k->err = err ? *err : (struct cerr){0};
	k->outstanding_then = capture_outstanding(c);
}

static void durable_cb(void *ctx, const cJSON *events, uint64_t first_seq)
{
	struct commits *k = ctx;
	buf_printf(&k->durable, "%llu:%d ", (unsigned long long)first_seq,
		   cJSON_GetArraySize(events));
}

/* Deltas of one stream become one event; another stream, a structural
 * event or another turn starts a new one; a commit calls back once all of
 * it is durable, from the loop, with the log holding it in order. */
static void test_capture_coalesces_deltas_and_commit_waits_for_durability(void **state)
{
	struct cx *x = *state;
	struct capture *c = capture_new(&x->loop, x->j, &x->op, NULL);
	struct commits k = {.durable = BUF_INIT};
	journal_on_durable(x->j, durable_cb, &k);
	capture_text(c, CAPTURE_REASONING, "t1", "think", 5);
	capture_text(c, CAPTURE_REASONING, "t1", "ing", 3);
	capture_text(c, CAPTURE_TEXT, "t1", "Hel", 3);
	capture_text(c, CAPTURE_TEXT, "t1", "lo \xe2\x9c", 5);
	capture_text(c, CAPTURE_TEXT, "t1", "\x93", 1); /* a character split across deltas */
	cJSON *d = cJSON_Parse("{\"step\":1,\"finish_reason\":\"stop\"}");
	capture_event(c, VT_STEP_END, "t1", d);
	cJSON_Delete(d);
	capture_text(c, CAPTURE_TEXT, "t1", "after", 5);
	capture_event(c, VT_REQUEST_PREPARED, "t1", NULL);
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	assert_int_equal(k.calls, 0); /* never from inside the call */
	run_until(x, &k.calls, 1);
	assert_int_equal(k.err.cls, CERR_OK);
	assert_int_equal(k.outstanding_then, 0);
	assert_string_equal(k.durable.p, "3:5 ");
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 1 + 2 + 5);
	static const char *const types[] = {"assistant/reasoning", "assistant/text", "step/end",
					    "assistant/text", "request/prepared"};
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(s->events[3 + i].type, types[i]);
	assert_string_equal(text_of(s, 3), "thinking");
	assert_string_equal(text_of(s, 4), "Hello \xe2\x9c\x93");
	assert_string_equal(text_of(s, 6), "after");
	assert_string_equal(s->events[7].turn, "t1");
	scan_free(s);
	/* A commit with nothing pending and nothing in flight still answers
	 * from the loop. */
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	assert_int_equal(k.calls, 1);
	run_until(x, &k.calls, 2);
	assert_int_equal(k.err.cls, CERR_OK);
	capture_close(c);
	uv_run(&x->loop, UV_RUN_NOWAIT);
	buf_release(&k.durable);
}

/* Without a commit, a batch goes flush_ms after its first event. */
static void test_capture_batch_goes_at_its_deadline(void **state)
{
	struct cx *x = *state;
	struct capture_opts o = {40, 16 * 1024, 0};
	struct capture *c = capture_new(&x->loop, x->j, &x->op, &o);
	struct commits k = {.durable = BUF_INIT};
	journal_on_durable(x->j, durable_cb, &k);
	uint64_t t0 = uv_now(&x->loop);
	uv_update_time(&x->loop);
	t0 = uv_now(&x->loop);
	capture_text(c, CAPTURE_TEXT, "t1", "a", 1);
	capture_text(c, CAPTURE_TEXT, "t1", "b", 1);
	uint64_t until = now_ms() + 10000;
	while (k.durable.len == 0 && now_ms() < until) {
		uv_run(&x->loop, UV_RUN_ONCE);
	}
	assert_string_equal(k.durable.p, "3:1 ");
	assert_true(uv_now(&x->loop) - t0 >= 40);
	assert_int_equal(capture_outstanding(c), 0);
	struct scan *s = read_log(x);
	assert_string_equal(text_of(s, 3), "ab");
	scan_free(s);
	capture_close(c);
	uv_run(&x->loop, UV_RUN_NOWAIT);
	buf_release(&k.durable);
}

/* A long answer is cut into events of at most batch_max bytes, each on a
 * character boundary, each batch posted as soon as it is full. */
static void test_capture_long_text_is_cut_on_character_boundaries(void **state)
{
	struct cx *x = *state;
	struct capture_opts o = {10000, 64, 0};
	struct capture *c = capture_new(&x->loop, x->j, &x->op, &o);
	struct buf want = BUF_INIT;
	for (int i = 0; i < 200; i++)
		buf_adds(&want, i % 3 ? "\xe4\xb8\xad" : "x\xf0\x9f\x98\x80"); /* 中, x😀 */
	/* Fed in odd pieces, some ending inside a character. */
	for (size_t off = 0; off < want.len;) {
		size_t n = want.len - off < 7 ? want.len - off : 7;
		capture_text(c, CAPTURE_TEXT, "t1", want.p + off, n);
		off += n;
	}
	assert_true(capture_outstanding(c) >= 10);
	struct commits k = {.durable = BUF_INIT};
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	run_until(x, &k.calls, 1);
	assert_int_equal(k.err.cls, CERR_OK);
	struct scan *s = read_log(x);
	struct buf got = BUF_INIT;
	for (size_t i = 3; i < s->n_events; i++) {
		const char *t = text_of(s, i);
		size_t n = strlen(t);
		assert_true(n > 0 && n <= 64);
		assert_true(((unsigned char)t[0] & 0xC0) != 0x80);
		buf_add(&got, t, n);
	}
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.p, want.p, want.len);
	scan_free(s);
	buf_release(&got);
	buf_release(&want);
	capture_close(c);
	uv_run(&x->loop, UV_RUN_NOWAIT);
}

struct presses {
	struct buf seen; /* "1 " when told to stop, "0 " when to go on */
	size_t fed, fed_then;
};

static void press_cb(struct capture *c, void *ctx, bool paused)
{
	(void)c;
	struct presses *p = ctx;
	buf_adds(&p->seen, paused ? "1 " : "0 ");
	if (paused)
		p->fed_then = p->fed;
}

/* A stream faster than the disk: with CAPTURE_INFLIGHT_HIGH bytes of text
 * posted and not acknowledged the producer is told to stop (once), and
 * told to go on once the acknowledgments bring it down to the low mark;
 * nothing of the text is lost. */
static void test_capture_text_in_flight_is_bounded(void **state)
{
	struct cx *x = *state;
	struct capture *c = capture_new(&x->loop, x->j, &x->op, NULL);
	struct presses p = {.seen = BUF_INIT};
	capture_on_pressure(c, press_cb, &p);
	char piece[4096];
	memset(piece, 'a', sizeof piece);
	/* No loop runs meanwhile: nothing is acknowledged. */
	for (; p.fed < 3 * CAPTURE_INFLIGHT_HIGH / 2; p.fed += sizeof piece)
		capture_text(c, CAPTURE_TEXT, "t1", piece, sizeof piece);
	assert_string_equal(p.seen.p ? p.seen.p : "", "1 ");
	assert_true(p.fed_then + sizeof piece >= CAPTURE_INFLIGHT_HIGH);
	assert_true(p.fed_then <= CAPTURE_INFLIGHT_HIGH + 16 * 1024);
	struct commits k = {.durable = BUF_INIT};
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	run_until(x, &k.calls, 1);
	assert_int_equal(k.err.cls, CERR_OK);
	assert_string_equal(p.seen.p ? p.seen.p : "", "1 0 ");
	struct scan *s = read_log(x);
	size_t got = 0;
	for (size_t i = 3; i < s->n_events; i++)
		got += strlen(text_of(s, i));
	assert_int_equal(got, p.fed);
	scan_free(s);
	buf_release(&p.seen);
	buf_release(&k.durable);
	capture_close(c);
	uv_run(&x->loop, UV_RUN_NOWAIT);
}

/* Bytes that are not UTF-8 (a contract the runner keeps, broken) never
 * hang the cutting or grow a batch past its size: they reach the log,
 * which refuses them, and the capture fails with the log's reason. */
static void test_capture_bytes_not_utf8_fail_the_capture_without_hanging(void **state)
{
	struct cx *x = *state;
	struct capture_opts o = {10000, 64, 0};
	struct capture *c = capture_new(&x->loop, x->j, &x->op, &o);
	char junk[300];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (char)(i % 5 == 0 ? 0xF0 : 0x80);
	capture_text(c, CAPTURE_TEXT, "t1", junk, sizeof junk);
	capture_text(c, CAPTURE_TEXT, "t1", "\xe4", 1);
	capture_text(c, CAPTURE_TEXT, "t1", "plain", 5);
	struct commits k = {.durable = BUF_INIT};
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	run_until(x, &k.calls, 1);
	assert_int_equal(k.err.cls, CERR_USAGE);
	assert_non_null(strstr(k.err.msg, "UTF-8"));
	assert_int_equal(capture_state(c), CAPTURE_FAILED);
	capture_close(c);
	uv_run(&x->loop, UV_RUN_NOWAIT);
}

/* A batch the log refuses (here: another writer moved the log on, so the
 * expected seq no longer holds) poisons the capture: the waiting commit and
 * every later one fail with capture_failed, later observations are not
 * posted but kept, and what is taken says the history has a gap, with the
 * failed batch's events and the seq it expected for the full save. */
static void test_capture_failed_item_stops_everything_after_it(void **state)
{
	struct cx *x = *state;
	struct cerr err;
	assert_int_equal(fifo_post(x->f, fifo_history("S", x->next_seq,
						      batch("[{\"type\":\"session/meta\",\"data\":"
							    "{\"title\":\"moved on\"}}]")),
				   item_cb, x, &err), 0);
	run_until(x, &x->done, 2);
	/* A journal gone stale: the log is at 4. */
	journal_close(x->j);
	struct journal_deps jd = {.fifo = x->f, .session = "S", .generation = 1, .cwd = "/w"};
	x->j = journal_new(&jd, NULL, true, 3, x->version);
	struct capture *c = capture_new(&x->loop, x->j, &x->op, NULL);
	struct commits k = {.durable = BUF_INIT};
	capture_text(c, CAPTURE_TEXT, "t1", "lost", 4);
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	run_until(x, &k.calls, 1);
	assert_int_equal(k.err.cls, CERR_CONFLICT);
	assert_non_null(strstr(k.err.msg, "capture_failed"));
	assert_int_equal(capture_state(c), CAPTURE_FAILED);
	assert_int_equal(capture_error(c)->cls, CERR_CONFLICT);
	capture_text(c, CAPTURE_TEXT, "t1", "more", 4);
	capture_event(c, VT_REQUEST_PREPARED, "t1", NULL);
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	assert_int_equal(k.calls, 1);
	run_until(x, &k.calls, 2);
	assert_int_equal(k.err.cls, CERR_CONFLICT);
	assert_int_equal(capture_outstanding(c), 0);
	cJSON *rest;
	assert_int_equal(capture_take(c, &rest), CAPTURE_FAILED);
	/* Observed after the failure: kept for the full save, never posted. */
	assert_int_equal(cJSON_GetArraySize(rest), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(rest, 0), "type")->valuestring,
			    "assistant/text");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(rest, 1), "type")->valuestring,
			    "request/prepared");
	cJSON_Delete(rest);
	/* The failed item's events are the journal's, for the full save from
	 * the durable head (test_journal.c). */
	assert_int_equal(journal_kept(x->j), 1);
	assert_int_equal(journal_next_seq(x->j), 3);
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 4); /* header, the BEFORE save, the meta: nothing else */
	scan_free(s);
	capture_close(c);
	uv_run(&x->loop, UV_RUN_NOWAIT);
}

/* What is pending when the turn ends is taken for the journal's full
 * save; nothing is posted after. */
static void test_capture_take_hands_the_rest_to_the_full_save(void **state)
{
	struct cx *x = *state;
	struct capture *c = capture_new(&x->loop, x->j, &x->op, NULL);
	capture_text(c, CAPTURE_TEXT, "t1", "first", 5);
	struct commits k = {.durable = BUF_INIT};
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	capture_text(c, CAPTURE_TEXT, "t1", " second", 7);
	cJSON *end = cJSON_Parse("{\"outcome\":\"completed\"}");
	capture_event(c, VT_TURN_END, "t1", end);
	cJSON_Delete(end);
	cJSON *rest;
	assert_int_equal(capture_take(c, &rest), CAPTURE_OPEN);
	assert_int_equal(capture_state(c), CAPTURE_TAKEN);
	assert_int_equal(journal_cursor(x->j), 4);
	assert_int_equal(cJSON_GetArraySize(rest), 2);
	capture_text(c, CAPTURE_TEXT, "t1", "ignored", 7);
	/* Taken, a commit posts nothing and waits for what is in flight. */
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	run_until(x, &k.calls, 2);
	assert_int_equal(k.err.cls, CERR_OK);
	assert_int_equal(capture_outstanding(c), 0);
	struct cerr err;
	int before = x->done;
	assert_int_equal(journal_version(x->j), x->version + 1); /* the one item acknowledged */
	assert_int_equal(journal_full_save(x->j, rest, NULL, saved_cb, x, &err), 0);
	run_until(x, &x->done, before + 1);
	if (x->last.cls != CERR_OK)
		fail_msg("full save: %s", x->last.msg);
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 6);
	assert_string_equal(text_of(s, 3), "first");
	assert_string_equal(text_of(s, 4), " second");
	assert_string_equal(s->events[5].type, "turn/end");
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
	capture_close(c);
	uv_run(&x->loop, UV_RUN_NOWAIT);
}

/* Closed with items in flight, the capture waits for them (their commit
 * callbacks still run) before it is freed; the loop then closes cleanly. */
static void test_capture_close_with_items_in_flight(void **state)
{
	struct cx *x = *state;
	struct capture_opts o = {10000, 64, 0};
	struct capture *c = capture_new(&x->loop, x->j, &x->op, &o);
	char chunk[200];
	memset(chunk, 'z', sizeof chunk);
	capture_text(c, CAPTURE_TEXT, "t1", chunk, sizeof chunk);
	struct commits k = {.durable = BUF_INIT};
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	assert_true(capture_outstanding(c) > 0);
	capture_close(c);
	run_until(x, &k.calls, 1);
	assert_int_equal(k.err.cls, CERR_OK);
	struct scan *s = read_log(x);
	size_t total = 0;
	for (size_t i = 3; i < s->n_events; i++)
		total += strlen(text_of(s, i));
	assert_int_equal(total, sizeof chunk);
	scan_free(s);
}

/* A step of many large tool calls (80 of 220 KB: more than the log takes
 * in one batch, none large enough for a blob) is saved in several items,
 * each under bytes_max, never refused as one batch over the limit. */
static void test_capture_many_large_events_go_in_several_items(void **state)
{
	struct cx *x = *state;
	struct capture *c = capture_new(&x->loop, x->j, &x->op, NULL);
	struct commits k = {.durable = BUF_INIT};
	journal_on_durable(x->j, durable_cb, &k);
	size_t n = 220000;
	char *content = malloc(n + 1);
	memset(content, 'y', n);
	content[n] = '\0';
	for (int i = 0; i < 80; i++) {
		cJSON *d = cJSON_CreateObject(), *args = cJSON_CreateObject();
		char id[16];
		snprintf(id, sizeof id, "t1.%d", i + 1);
		cJSON_AddStringToObject(d, "call_id", id);
		cJSON_AddStringToObject(d, "name", "write_file");
		cJSON_AddStringToObject(args, "path", id);
		cJSON_AddStringToObject(args, "content", content);
		cJSON_AddItemToObject(d, "args", args);
		capture_event(c, VT_TOOL_CALL, "t1", d);
		cJSON_Delete(d);
	}
	free(content);
	assert_int_equal(capture_commit(c, commit_cb, &k), 0);
	run_until(x, &k.calls, 1);
	if (k.err.cls != CERR_OK)
		fail_msg("commit: %s", k.err.msg);
	/* 4 MiB is 19 of these events: 5 items */
	assert_string_equal(k.durable.p, "3:19 22:19 41:19 60:19 79:4 ");
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 3 + 80);
	assert_string_equal(s->events[82].type, "tool/call");
	scan_free(s);
	capture_close(c);
	uv_run(&x->loop, UV_RUN_NOWAIT);
	buf_release(&k.durable);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_capture_coalesces_deltas_and_commit_waits_for_durability),
		T(test_capture_batch_goes_at_its_deadline),
		T(test_capture_long_text_is_cut_on_character_boundaries),
		T(test_capture_text_in_flight_is_bounded),
		T(test_capture_bytes_not_utf8_fail_the_capture_without_hanging),
		T(test_capture_failed_item_stops_everything_after_it),
		T(test_capture_take_hands_the_rest_to_the_full_save),
		T(test_capture_close_with_items_in_flight),
		T(test_capture_many_large_events_go_in_several_items),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
