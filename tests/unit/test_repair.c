/* test_repair.c — closing what a crash left open (persist/repair.h): the
 * closer events, torn-tail cuts, idempotence, and logs repair must not touch. */
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

#include "base/buf.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/event_batch.h"
#include "persist/log.h"
#include "persist/repair.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "persist/vocab.h"
#include "tests/unit/support_fixture.h"

struct fx {
	char dir[64];
	char root[128];
	char path[512]; /* log of the session under test */
	struct store *st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	if (tmp_root("cairn-test-repair", f->dir, sizeof f->dir, f->root, sizeof f->root) < 0)
		return -1;
	snprintf(f->path, sizeof f->path, "%s/sessions/_no-cwd/s/session.jsonl.zst", f->root);
	struct cerr err;
	if (store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	store_close(f->st);
	rm_rf(f->dir);
	free(f);
	return 0;
}

/* Append a batch written as a JSON array of {"type","turn"?,"ignorable"?,
 * "data"?}; fails the test unless it lands at `expect`. */
static void add(struct log *lg, uint64_t expect, const char *batch)
{
	cJSON *arr = cJSON_Parse(batch);
	assert_non_null(arr);
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
	struct log_event *evs = calloc(n, sizeof *evs);
	for (cJSON *c = arr->child; c; c = c->next, i++) {
		evs[i].type = cJSON_GetObjectItem(c, "type")->valuestring;
		const cJSON *t = cJSON_GetObjectItem(c, "turn");
		evs[i].turn = t ? t->valuestring : NULL;
		evs[i].ignorable = cJSON_IsTrue(cJSON_GetObjectItem(c, "ignorable"));
		evs[i].data = cJSON_GetObjectItem(c, "data");
	}
	struct cerr err;
	uint64_t next;
	if (log_append(lg, expect, evs, n, &next, &err) < 0)
		fail_msg("append at %llu: %s", (unsigned long long)expect, err.msg);
	assert_int_equal(next, expect + n);
	free(evs);
	cJSON_Delete(arr);
}

/* Session "s" holding header + the given batches; returns the next seq. */
static uint64_t make(struct fx *f, const char *const *batches, size_t nb)
{
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "s", NULL, NULL, &lg, &err), 0);
	for (size_t i = 0; i < nb; i++)
		add(lg, log_next_seq(lg), batches[i]);
	uint64_t next = log_next_seq(lg);
	log_close(lg);
	return next;
}

static struct log *open_s(struct fx *f)
{
	struct log *lg;
	struct cerr err;
	if (log_open(f->st, "s", &lg, &err) < 0)
		fail_msg("log_open: %s", err.msg);
	return lg;
}

/* Repair in a fresh handle; the report's closers are freed. */
static struct repair_report repair(struct fx *f)
{
	struct log *lg = open_s(f);
	struct repair_report rep;
	struct cerr err;
	if (repair_log(lg, &rep, &err) < 0)
		fail_msg("repair_log: %s", err.msg);
	assert_int_equal(log_next_seq(lg), rep.next_seq);
	assert_int_equal((size_t)cJSON_GetArraySize(rep.closers), rep.appended);
	cJSON_Delete(rep.closers);
	log_close(lg);
	return rep;
}

/* A second repair changes nothing, byte for byte. */
static void assert_repair_idempotent(struct fx *f)
{
	size_t n;
	uint8_t *before = slurp(f->path, &n);
	struct scan *s = scan_path(f->path);
	uint64_t next = s->rev.next_seq;
	scan_free(s);
	struct repair_report rep = repair(f);
	assert_int_equal(rep.appended, 0);
	assert_int_equal(rep.cut_bytes, 0);
	assert_int_equal(rep.first_seq, next);
	assert_int_equal(rep.next_seq, next);
	assert_same_file(f->path, before, n);
	free(before);
}

static const char *sget(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

/* Check one synthetic tool/result (JSON {"type","turn","data"}). */
static void check_result(const cJSON *c, const char *turn, const char *call, const char *status,
			 uint64_t call_seq)
{
	assert_string_equal(sget(c, "type"), "tool/result");
	assert_string_equal(sget(c, "turn"), turn);
	const cJSON *d = cJSON_GetObjectItem(c, "data");
	assert_string_equal(sget(d, "call_id"), call);
	assert_string_equal(sget(d, "status"), status);
	/* what the model reads starts with the status in words */
	const char *lead = strcmp(status, "outcome_unknown") == 0 ? "outcome unknown: " : "not executed: ";
	assert_int_equal(strncmp(sget(d, "output"), lead, strlen(lead)), 0);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "synthetic")));
	const cJSON *seqs = cJSON_GetObjectItem(d, "source_seqs");
	assert_true(cJSON_IsArray(seqs));
	assert_int_equal(cJSON_GetArraySize(seqs), 1);
	assert_true(cJSON_IsNumber(seqs->child));
	assert_int_equal((uint64_t)seqs->child->valuedouble, call_seq);
}

static void check_end(const cJSON *c, const char *turn)
{
	assert_string_equal(sget(c, "type"), "turn/end");
	assert_string_equal(sget(c, "turn"), turn);
	const cJSON *d = cJSON_GetObjectItem(c, "data");
	assert_string_equal(sget(d, "outcome"), "interrupted");
	/* The shape of every failed turn's error, with its own class. */
	const cJSON *e = cJSON_GetObjectItem(d, "error");
	assert_string_equal(sget(e, "class"), "interrupted");
	assert_non_null(strstr(sget(e, "message"), "stopped"));
}

/* The closers the log on disk holds from `from` on, as JSON objects like
 * repair_closers' (the envelope, parsed back from the file). */
static cJSON *closers_on_disk(struct fx *f, uint64_t from)
{
	struct scan *s = scan_path(f->path);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_open_turns, 0);
	cJSON *out = cJSON_CreateArray();
	for (size_t i = 0; i < s->n_events; i++) {
		if (s->events[i].seq < from)
			continue;
		assert_int_equal(s->events[i].seq, from + (uint64_t)cJSON_GetArraySize(out));
		assert_non_null(s->events[i].turn); /* every closer carries its turn */
		cJSON_AddItemToArray(out, cJSON_Duplicate(s->events[i].root, 1));
	}
	scan_free(s);
	return out;
}

#define TS(t) "{\"type\":\"turn/start\",\"turn\":\"" t "\",\"data\":{}}"
#define TE(t) "{\"type\":\"turn/end\",\"turn\":\"" t "\",\"data\":{\"outcome\":\"completed\"}}"
#define MSG "{\"type\":\"user/message\",\"data\":{\"text\":\"hi\"}}"
#define CALL(t, c) "{\"type\":\"tool/call\",\"turn\":\"" t "\",\"data\":{\"call_id\":\"" c \
		   "\",\"name\":\"sh\",\"args\":{\"cmd\":\"ls\"}}}"
#define STARTED(t, c) "{\"type\":\"tool/started\",\"turn\":\"" t "\",\"data\":{\"call_id\":\"" c "\"}}"
#define RESULT(t, c, s) "{\"type\":\"tool/result\",\"turn\":\"" t "\",\"data\":{\"call_id\":\"" c \
			"\",\"status\":\"" s "\"}}"

static void test_repair_without_an_open_turn_changes_nothing(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {
		"[" TS("t1") "," MSG "," CALL("t1", "c1") "]",
		"[" RESULT("t1", "c1", "ok") "," TE("t1") "]",
		"[" MSG "]", /* events outside any turn */
	};
	uint64_t next = make(f, b, 3);
	assert_int_equal(next, 7);
	struct log *lg = open_s(f);
	cJSON *c = repair_closers(log_scan(lg));
	assert_true(cJSON_IsArray(c));
	assert_int_equal(cJSON_GetArraySize(c), 0);
	cJSON_Delete(c);
	log_close(lg);
	assert_repair_idempotent(f);
	assert_repair_idempotent(f);
}

static void test_open_turn_without_calls(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {
		"[" TS("t1") "," MSG "]",
		"[{\"type\":\"assistant/text\",\"turn\":\"t1\",\"data\":{\"text\":\"so\"}}]",
	};
	assert_int_equal(make(f, b, 2), 4);
	size_t n0;
	uint8_t *before = slurp(f->path, &n0);
	struct log *lg = open_s(f);
	cJSON *c = repair_closers(log_scan(lg));
	assert_int_equal(cJSON_GetArraySize(c), 1);
	check_end(c->child, "t1");
	cJSON_Delete(c);
	assert_same_file(f->path, before, n0); /* computing closers writes nothing */

	struct repair_report rep;
	struct cerr err;
	assert_int_equal(repair_log(lg, &rep, &err), 0);
	assert_int_equal(rep.cut_bytes, 0);
	assert_int_equal(rep.appended, 1);
	assert_int_equal(rep.first_seq, 4);
	assert_int_equal(rep.next_seq, 5);
	check_end(rep.closers->child, "t1");
	assert_int_equal(cJSON_GetObjectItem(rep.closers->child, "seq")->valuedouble, 4);
	cJSON_Delete(rep.closers);
	log_close(lg);

	/* the committed bytes are kept; one frame of closers follows them */
	size_t n1;
	uint8_t *after = slurp(f->path, &n1);
	assert_true(n1 > n0);
	assert_memory_equal(after, before, n0);
	free(after);
	free(before);
	struct scan *s = scan_path(f->path);
	assert_int_equal(s->n_frames, 4);
	assert_int_equal(s->frames[3].offset, n0);
	assert_int_equal(s->frames[3].first_seq, 4);
	assert_int_equal(s->frames[3].end_seq, 5);
	scan_free(s);
	cJSON *disk = closers_on_disk(f, 4);
	assert_int_equal(cJSON_GetArraySize(disk), 1);
	check_end(disk->child, "t1");
	cJSON_Delete(disk);
	assert_repair_idempotent(f);
}

#define ASK(t, r, c) "{\"type\":\"interaction/request\",\"turn\":\"" t "\",\"data\":{\"request_id\":\"" r \
	"\",\"call_id\":\"" c "\",\"tool\":\"shell\",\"summary\":\"shell: ls\"}}"
#define ANSWER(t, r) "{\"type\":\"interaction/answer\",\"turn\":\"" t "\",\"data\":{\"request_id\":\"" r \
	"\",\"decision\":\"allow_once\",\"by\":\"user\"}}"

/* A call waiting for approval at the crash: its request is answered
 * canceled (by repair) before the call is closed as not executed; an
 * answered one gets no second answer. */
static void test_pending_approval_is_answered_canceled(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {
		/* 1..3 */ "[" TS("t1") "," CALL("t1", "c1") "," ASK("t1", "r1", "c1") "]",
		/* 4..6 */ "[" ANSWER("t1", "r1") "," CALL("t1", "c2") "," ASK("t1", "r2", "c2") "]",
	};
	assert_int_equal(make(f, b, 2), 7);
	struct log *lg = open_s(f);
	cJSON *c = repair_closers(log_scan(lg));
	assert_int_equal(cJSON_GetArraySize(c), 4);
	check_result(cJSON_GetArrayItem(c, 0), "t1", "c1", "not_executed", 2);
	const cJSON *a = cJSON_GetArrayItem(c, 1);
	assert_string_equal(sget(a, "type"), "interaction/answer");
	assert_string_equal(sget(cJSON_GetObjectItem(a, "data"), "request_id"), "r2");
	assert_string_equal(sget(cJSON_GetObjectItem(a, "data"), "decision"), "canceled");
	check_result(cJSON_GetArrayItem(c, 2), "t1", "c2", "not_executed", 5);
	check_end(cJSON_GetArrayItem(c, 3), "t1");
	cJSON_Delete(c);
	log_close(lg);
}

static void test_open_turn_gets_results_for_its_unanswered_calls(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {
		/* 1..4 */ "[" TS("t1") "," CALL("t1", "c1") "," CALL("t1", "c2") "," CALL("t1", "c3") "]",
		/* 5..7 */ "[" STARTED("t1", "c2") "," STARTED("t1", "c3") "," RESULT("t1", "c3", "ok") "]",
		/* 8..9 */ "[" CALL("t1", "c4") "," RESULT("t1", "c4", "denied") "]",
		/* 10 */ "[{\"type\":\"x/later\",\"ignorable\":true,\"turn\":\"t1\",\"data\":{}}]",
	};
	assert_int_equal(make(f, b, 4), 11);
	struct log *lg = open_s(f);
	cJSON *c = repair_closers(log_scan(lg));
	assert_int_equal(cJSON_GetArraySize(c), 3);
	check_result(cJSON_GetArrayItem(c, 0), "t1", "c1", "not_executed", 2);
	check_result(cJSON_GetArrayItem(c, 1), "t1", "c2", "outcome_unknown", 3);
	check_end(cJSON_GetArrayItem(c, 2), "t1");
	/* The closers are in the shape `log append` and the FIFO take: repair
	 * appends them through the same reader, which refuses a data that is
	 * not an object. */
	for (cJSON *e = c->child; e; e = e->next) {
		struct event_batch one = EVENT_BATCH_INIT;
		struct cerr err;
		if (event_batch_add_json(&one, e, &err) < 0)
			fail_msg("closer refused: %s", err.msg);
		struct log_event ev = one.evs[0];
		assert_ptr_equal(ev.data, cJSON_GetObjectItem(e, "data"));
		assert_true(vocab_type_of(ev.type) == VT_TOOL_RESULT ||
			    vocab_type_of(ev.type) == VT_TURN_END);
		cJSON *copy = cJSON_Duplicate(e, 1);
		cJSON_ReplaceItemInObject(copy, "data", cJSON_CreateString("x"));
		assert_int_equal(event_batch_add_json(&one, copy, &err), -1);
		assert_int_equal(err.cls, CERR_USAGE);
		assert_int_equal(one.n, 1);
		event_batch_release(&one);
		cJSON_Delete(copy);
	}
	cJSON_Delete(c);
	log_close(lg);

	struct repair_report rep = repair(f);
	assert_int_equal(rep.appended, 3);
	assert_int_equal(rep.first_seq, 11);
	assert_int_equal(rep.next_seq, 14);
	cJSON *disk = closers_on_disk(f, 11);
	assert_int_equal(cJSON_GetArraySize(disk), 3);
	check_result(cJSON_GetArrayItem(disk, 0), "t1", "c1", "not_executed", 2);
	check_result(cJSON_GetArrayItem(disk, 1), "t1", "c2", "outcome_unknown", 3);
	check_end(cJSON_GetArrayItem(disk, 2), "t1");
	cJSON_Delete(disk);
	struct scan *s = scan_path(f->path);
	for (size_t i = 0; i < s->n_calls; i++)
		assert_true(s->calls[i].resulted);
	scan_free(s);
	assert_repair_idempotent(f);
}

/* Only open turns are closed; a reused call id is matched to its own call. */
static void test_only_open_turns_close_and_call_ids_match_their_own(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {
		/* 1..5 */ "[" TS("t1") "," CALL("t1", "dup") "," RESULT("t1", "dup", "ok") ","
			   CALL("t1", "lost") "," TE("t1") "]",
		/* 6..9 */ "[" TS("t2") "," CALL("t2", "dup") "," CALL("t2", "c9") "," STARTED("t2", "c9") "]",
	};
	assert_int_equal(make(f, b, 2), 10);
	struct repair_report rep = repair(f);
	assert_int_equal(rep.appended, 3);
	assert_int_equal(rep.first_seq, 10);
	cJSON *disk = closers_on_disk(f, 10);
	assert_int_equal(cJSON_GetArraySize(disk), 3);
	check_result(cJSON_GetArrayItem(disk, 0), "t2", "dup", "not_executed", 7);
	check_result(cJSON_GetArrayItem(disk, 1), "t2", "c9", "outcome_unknown", 8);
	check_end(cJSON_GetArrayItem(disk, 2), "t2");
	cJSON_Delete(disk);
	assert_repair_idempotent(f);
}

static void test_every_open_turn_is_closed(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {
		/* 1..2 */ "[" TS("t1") "," CALL("t1", "a1") "]",
		/* 3..5 */ "[" TS("t2") "," CALL("t2", "b1") "," STARTED("t2", "b1") "]",
	};
	assert_int_equal(make(f, b, 2), 6);
	struct repair_report rep = repair(f);
	assert_int_equal(rep.appended, 4);
	cJSON *disk = closers_on_disk(f, 6);
	assert_int_equal(cJSON_GetArraySize(disk), 4);
	check_result(cJSON_GetArrayItem(disk, 0), "t1", "a1", "not_executed", 2);
	check_end(cJSON_GetArrayItem(disk, 1), "t1");
	check_result(cJSON_GetArrayItem(disk, 2), "t2", "b1", "outcome_unknown", 4);
	check_end(cJSON_GetArrayItem(disk, 3), "t2");
	cJSON_Delete(disk);
	assert_repair_idempotent(f);
}

/* A handle that read the log compactly (log_open_load, as the FIFO's open
 * does) repairs it as one that kept every event: the same closers (calls
 * not started and started, a reused call id, an answered and a pending
 * question, an ignorable unknown event, two open turns), and its read is
 * no longer the file once they are appended. */
static void test_a_compact_read_repairs_as_a_full_one(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {
		"[" TS("t1") "," CALL("t1", "dup") "," RESULT("t1", "dup", "ok") "," CALL("t1", "lost")
		"," TE("t1") "]",
		"[" TS("t2") "," CALL("t2", "dup") "," CALL("t2", "c9") "," STARTED("t2", "c9") "]",
		"[" CALL("t2", "c1") "," ASK("t2", "r1", "c1") "," ANSWER("t2", "r1") ","
		CALL("t2", "c2") "," ASK("t2", "r2", "c2") "]",
		"[{\"type\":\"x/later\",\"ignorable\":true,\"turn\":\"t2\",\"data\":{}}]",
		"[" TS("t3") "]",
	};
	make(f, b, 5);
	struct log *full = open_s(f);
	cJSON *want = repair_closers(log_scan(full));
	log_close(full);
	assert_int_equal(cJSON_GetArraySize(want), 7);
	struct log *lg;
	struct cerr err;
	if (log_open_load(f->st, "s", NULL, &lg, &err) < 0)
		fail_msg("log_open_load: %s", err.msg);
	assert_non_null(log_load(lg));
	assert_int_equal(log_scan(lg)->n_events, 0); /* no tree per event */
	struct repair_report rep;
	if (repair_log(lg, &rep, &err) < 0)
		fail_msg("repair_log: %s", err.msg);
	for (cJSON *c = rep.closers->child; c; c = c->next)
		cJSON_DeleteItemFromObject(c, "seq");
	assert_true(cJSON_Compare(want, rep.closers, 1));
	assert_int_equal(rep.appended, 7);
	assert_null(log_take_load(lg)); /* the closers are not in it */
	cJSON_Delete(want);
	cJSON_Delete(rep.closers);
	log_close(lg);
	assert_repair_idempotent(f);
}

/* The first half of a frame holding one event with seq, appended by hand. */
static size_t tear(const char *path, uint64_t seq)
{
	struct buf line = BUF_INIT, fr = BUF_INIT;
	cJSON *d = cJSON_Parse("{\"text\":\"never acknowledged\"}");
	event_format(&line, seq, 1000, "assistant/text", "t1", false, d);
	struct frame_codec *fc = frame_codec_new();
	assert_int_equal(frame_encode(fc, line.p, line.len, &fr), 0);
	size_t half = fr.len / 2;
	spit(path, fr.p, half, O_APPEND);
	frame_codec_free(fc);
	cJSON_Delete(d);
	buf_release(&line);
	buf_release(&fr);
	return half;
}

static void test_torn_tail_and_open_turn(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {"[" TS("t1") "," CALL("t1", "c1") "," STARTED("t1", "c1") "]"};
	assert_int_equal(make(f, b, 1), 4);
	struct stat st;
	assert_int_equal(stat(f->path, &st), 0);
	size_t good = (size_t)st.st_size, half = tear(f->path, 4);
	struct log *lg = open_s(f);
	assert_int_equal(log_scan(lg)->status, SCAN_TORN);
	struct repair_report rep;
	struct cerr err;
	assert_int_equal(repair_log(lg, &rep, &err), 0);
	assert_int_equal(rep.cut_bytes, half);
	assert_int_equal(rep.appended, 2);
	assert_int_equal(rep.first_seq, 4);
	assert_int_equal(rep.next_seq, 6);
	assert_int_equal(log_cut_bytes(lg), half);
	check_result(rep.closers->child, "t1", "c1", "outcome_unknown", 2);
	check_end(rep.closers->child->next, "t1");
	cJSON_Delete(rep.closers);
	log_close(lg);
	struct scan *s = scan_path(f->path);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_frames, 3);
	assert_int_equal(s->frames[2].offset, good);
	assert_int_equal(s->good_len, s->rev.len);
	scan_free(s);
	assert_repair_idempotent(f);
}

static void test_torn_tail_alone_is_cut_and_the_rest_kept_as_is(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {"[" TS("t1") "," TE("t1") "]"};
	assert_int_equal(make(f, b, 1), 3);
	size_t n;
	uint8_t *before = slurp(f->path, &n);
	size_t half = tear(f->path, 3);
	struct repair_report rep = repair(f);
	assert_int_equal(rep.cut_bytes, half);
	assert_int_equal(rep.appended, 0);
	assert_int_equal(rep.first_seq, 3);
	assert_int_equal(rep.next_seq, 3);
	assert_same_file(f->path, before, n);
	free(before);
	assert_repair_idempotent(f);
}

/* log_cut_torn_tail is fenced by the revision the caller read. */
static void test_cut_torn_tail_is_fenced_by_the_revision_read(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {"[" TS("t1") "," TE("t1") "]", "[" MSG "]"};
	assert_int_equal(make(f, b, 2), 4);
	size_t half = tear(f->path, 4);
	struct log *lg = open_s(f);
	struct revision rev = log_revision_of(lg);
	size_t n;
	uint8_t *before = slurp(f->path, &n);
	uint64_t cut = 99;
	struct cerr err;
	struct revision bad[4] = {rev, rev, rev, rev};
	bad[0].len++;
	bad[1].next_seq++;
	bad[2].ino++;
	bad[3].dev++;
	for (int i = 0; i < 4; i++) {
		FAILS(log_cut_torn_tail(lg, &bad[i], &cut, &err), CERR_CONFLICT);
		assert_same_file(f->path, before, n);
	}
	/* the file really changed since the read: still a conflict */
	spit(f->path, "x", 1, O_APPEND);
	FAILS(log_cut_torn_tail(lg, &rev, &cut, &err), CERR_CONFLICT);
	assert_int_equal(log_cut_bytes(lg), 0);
	assert_int_equal(truncate(f->path, (off_t)n), 0);
	assert_same_file(f->path, before, n);
	/* the right revision cuts exactly the torn bytes, once */
	assert_int_equal(log_cut_torn_tail(lg, &rev, &cut, &err), 0);
	assert_int_equal(cut, half);
	assert_int_equal(log_cut_bytes(lg), half);
	struct stat st;
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal((size_t)st.st_size, n - half);
	assert_int_equal(log_cut_torn_tail(lg, &rev, &cut, &err), 0);
	assert_int_equal(cut, 0);
	add(lg, 4, "[" MSG "]");
	log_close(lg);
	free(before);
}

/* Flip a bit in the middle of frame `k`. */
static void damage(const char *path, size_t k)
{
	struct scan *s = scan_path(path);
	assert_true(k < s->n_frames);
	off_t at = (off_t)(s->frames[k].offset + s->frames[k].len / 2);
	scan_free(s);
	int fd = open(path, O_RDWR);
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x10;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/* Neither log_open nor log_open_path opens it, and the file is unchanged. */
static void assert_refused_untouched(struct fx *f, const char *id, const char *path,
				    enum cerr_class cls)
{
	size_t n;
	uint8_t *before = slurp(path, &n);
	struct log *lg = NULL;
	struct cerr err;
	FAILS(log_open(f->st, id, &lg, &err), cls);
	assert_null(lg);
	FAILS(log_open_path(path, &lg, &err), cls);
	assert_same_file(path, before, n);
	free(before);
}

/* One frame holding `content`, appended to path. */
static void add_frame(const char *path, const char *content, int flags)
{
	struct buf fr = BUF_INIT;
	struct frame_codec *fc = frame_codec_new();
	assert_int_equal(frame_encode(fc, content, strlen(content), &fr), 0);
	spit(path, fr.p, fr.len, flags);
	frame_codec_free(fc);
	buf_release(&fr);
}

static void test_corrupt_log_is_refused_and_left_untouched(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {"[" TS("t1") "," CALL("t1", "c1") "]", "[" MSG "]"};
	make(f, b, 2);
	damage(f->path, 1); /* a committed, non-final frame */
	assert_refused_untouched(f, "s", f->path, CERR_CORRUPT);
	/* a complete valid frame inside the supposedly torn tail */
	struct cerr err;
	struct log *lg;
	char path[600];
	snprintf(path, sizeof path, "%s/sessions/_no-cwd/s2/session.jsonl.zst", f->root);
	assert_int_equal(log_create(f->st, "s2", NULL, NULL, &lg, &err), 0);
	add(lg, 1, "[" TS("t1") "]");
	log_close(lg);
	tear(path, 2);
	add_frame(path, "{\"seq\":2,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\","
			"\"data\":{\"outcome\":\"completed\"}}\n", O_APPEND);
	assert_refused_untouched(f, "s2", path, CERR_CORRUPT);
}

/* Damage that appears after the handle read the log: the repair's append
 * re-reads (the file no longer matches its cursor) and fails closed. */
static void test_corrupted_under_open_handle(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {"[" TS("t1") "," CALL("t1", "c1") "]", "[" MSG "]"};
	make(f, b, 2);
	struct log *lg = open_s(f);
	damage(f->path, 1);
	spit(f->path, "\0\0\0", 3, O_APPEND);
	size_t n;
	uint8_t *before = slurp(f->path, &n);
	struct repair_report rep;
	struct cerr err;
	FAILS(repair_log(lg, &rep, &err), CERR_CORRUPT);
	assert_same_file(f->path, before, n);
	log_close(lg);
	free(before);

	/* torn when read, grown since: either a conflict that leaves the file
	 * alone, or a repair from a fresh read that cuts all of the tail */
	char path[600];
	snprintf(path, sizeof path, "%s/sessions/_no-cwd/s2/session.jsonl.zst", f->root);
	struct log *l2;
	assert_int_equal(log_create(f->st, "s2", NULL, NULL, &l2, &err), 0);
	add(l2, 1, "[" TS("t1") "]");
	log_close(l2);
	size_t good;
	free(slurp(path, &good));
	size_t half = tear(path, 2);
	assert_int_equal(log_open(f->st, "s2", &l2, &err), 0);
	spit(path, "x", 1, O_APPEND);
	before = slurp(path, &n);
	if (repair_log(l2, &rep, &err) < 0) {
		assert_int_equal(err.cls, CERR_CONFLICT);
		assert_same_file(path, before, n);
	} else {
		assert_int_equal(rep.cut_bytes, half + 1);
		assert_int_equal(rep.appended, 1);
		check_end(rep.closers->child, "t1");
		cJSON_Delete(rep.closers);
		struct scan *s = scan_path(path);
		assert_int_equal(s->status, SCAN_OK);
		assert_int_equal(s->frames[2].offset, good);
		assert_int_equal(s->rev.next_seq, 3);
		scan_free(s);
	}
	log_close(l2);
	free(before);
}

static void test_unsupported_log_is_refused_and_left_untouched(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {"[" TS("t1") "," CALL("t1", "c1") "]"};
	make(f, b, 1);
	/* an open turn, then an event type this reader does not know */
	add_frame(f->path, "{\"seq\":3,\"t\":1,\"type\":\"x/required\",\"turn\":\"t1\",\"data\":{}}\n",
		  O_APPEND);
	assert_refused_untouched(f, "s", f->path, CERR_UNSUPPORTED);
	/* a header of format 2, written by hand */
	char dir[600], path[700];
	snprintf(dir, sizeof dir, "%s/sessions/_no-cwd/v2", f->root);
	snprintf(path, sizeof path, "%s/session.jsonl.zst", dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	add_frame(path, "{\"seq\":0,\"t\":1,\"type\":\"session/header\",\"data\":{\"format\":2,"
			"\"id\":\"v2\",\"created_at\":1,\"cwd\":null}}\n", O_EXCL);
	add_frame(path, "{\"seq\":1,\"t\":1,\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{}}\n",
		  O_APPEND);
	assert_refused_untouched(f, "v2", path, CERR_UNSUPPORTED);
}

/* The handle appended since it read the log: repair must see those events
 * (a turn this process already ended is not closed twice). */
static void test_repair_after_own_appends(void **state)
{
	struct fx *f = *state;
	static const char *const b[] = {"[" TS("t1") "," CALL("t1", "c1") "]"};
	make(f, b, 1);
	struct log *lg = open_s(f);
	add(lg, 3, "[" RESULT("t1", "c1", "ok") "," TE("t1") "]");
	add(lg, 5, "[" TS("t2") "]");
	struct repair_report rep;
	struct cerr err;
	if (repair_log(lg, &rep, &err) < 0)
		fail_msg("repair_log: %s", err.msg);
	assert_int_equal(rep.first_seq, 6);
	assert_int_equal(rep.appended, 1);
	check_end(rep.closers->child, "t2");
	cJSON_Delete(rep.closers);
	log_close(lg);
	struct scan *s = scan_path(f->path);
	assert_int_equal(s->n_events, 7);
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
	assert_repair_idempotent(f);

	/* a handle that published the log itself */
	assert_int_equal(log_create(f->st, "s3", NULL, NULL, &lg, &err), 0);
	add(lg, 1, "[" TS("t9") "]");
	if (repair_log(lg, &rep, &err) < 0)
		fail_msg("repair_log after publishing: %s", err.msg);
	assert_int_equal(rep.appended, 1);
	check_end(rep.closers->child, "t9");
	cJSON_Delete(rep.closers);
	log_close(lg);
}

static void test_repair_of_an_unpublished_log_is_missing(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct repair_report rep;
	struct cerr err;
	assert_int_equal(log_create(f->st, "new", NULL, NULL, &lg, &err), 0);
	FAILS(repair_log(lg, &rep, &err), CERR_MISSING);
	assert_null(rep.closers);
	log_close(lg);
	struct stat st;
	assert_int_equal(stat(f->root, &st), 0);
	assert_int_equal(lstat(f->path, &st), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_repair_without_an_open_turn_changes_nothing),
		T(test_open_turn_without_calls),
		T(test_open_turn_gets_results_for_its_unanswered_calls),
		T(test_pending_approval_is_answered_canceled),
		T(test_only_open_turns_close_and_call_ids_match_their_own),
		T(test_every_open_turn_is_closed),
		T(test_a_compact_read_repairs_as_a_full_one),
		T(test_torn_tail_and_open_turn),
		T(test_torn_tail_alone_is_cut_and_the_rest_kept_as_is),
		T(test_cut_torn_tail_is_fenced_by_the_revision_read),
		T(test_corrupt_log_is_refused_and_left_untouched),
		T(test_corrupted_under_open_handle),
		T(test_unsupported_log_is_refused_and_left_untouched),
		T(test_repair_after_own_appends),
		T(test_repair_of_an_unpublished_log_is_missing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
