/* test_log.c — the session log writer (persist/log.h) and the writer lock
 * (persist/lock.h), against real files in a private temporary directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/fsops.h"
#include "persist/lock.h"
#include "persist/event_batch.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

struct fx {
	char dir[64];
	char root[128];
	struct store *st;
};

/* A path under the fixture dir, in one of a few rotating buffers. */
#define P(f, ...) path_in((f)->dir, __VA_ARGS__)

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	if (tmp_root("cairn-test-log", f->dir, sizeof f->dir, f->root, sizeof f->root) < 0)
		return -1;
	struct cerr err;
	if (store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	fsops = &fsops_real;
	store_close(f->st);
	rm_rf(f->dir);
	free(f);
	return 0;
}

/* Append a batch written as a JSON array of {"type","turn"?,"ignorable"?,
 * "t"?,"data"?} objects. Returns log_append's result. */
static int add(struct log *lg, uint64_t expect, const char *batch, uint64_t *next, struct cerr *err)
{
	cJSON *arr = cJSON_Parse(batch);
	assert_non_null(arr);
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
	struct log_event *evs = calloc(n ? n : 1, sizeof *evs);
	for (cJSON *c = arr->child; c; c = c->next, i++) {
		const cJSON *v = cJSON_GetObjectItem(c, "type");
		evs[i].type = cJSON_IsString(v) ? v->valuestring : NULL;
		v = cJSON_GetObjectItem(c, "turn");
		evs[i].turn = v ? v->valuestring : NULL;
		evs[i].ignorable = cJSON_IsTrue(cJSON_GetObjectItem(c, "ignorable"));
		evs[i].data = cJSON_GetObjectItem(c, "data");
		v = cJSON_GetObjectItem(c, "t");
		evs[i].t = v ? (int64_t)v->valuedouble : 0;
	}
	int r = log_append(lg, expect, evs, n, next, err);
	free(evs);
	cJSON_Delete(arr);
	return r;
}

static void add_ok(struct log *lg, uint64_t expect, const char *batch, uint64_t want_next)
{
	struct cerr err = {0};
	uint64_t next = 0;
	int r = add(lg, expect, batch, &next, &err);
	if (r != 0)
		fail_msg("append failed: %s", err.msg);
	assert_int_equal(next, want_next);
	assert_int_equal(log_next_seq(lg), want_next);
}

#define B_TURN "[{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{}}," \
	       "{\"type\":\"user/message\",\"data\":{\"text\":\"hi\"}}]"
#define B_TEXT "[{\"type\":\"assistant/text\",\"data\":{\"text\":\"hello\"}}]"

/* A published session `id` (key _no-cwd) holding header + `frames` batches of
 * B_TEXT after B_TURN; returns its log path. The handle is closed. */
static const char *make_session(struct fx *f, const char *id, int frames)
{
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, id, NULL, NULL, &lg, &err), 0);
	add_ok(lg, 1, B_TURN, 3);
	for (int i = 1; i < frames; i++)
		add_ok(lg, (uint64_t)(2 + i), B_TEXT, (uint64_t)(3 + i));
	log_close(lg);
	return P(f, "root/sessions/_no-cwd/%s/session.jsonl.zst", id);
}

static struct log *open_ok(struct fx *f, const char *id)
{
	struct log *lg;
	struct cerr err;
	if (log_open(f->st, id, &lg, &err) < 0)
		fail_msg("log_open '%s': %s", id, err.msg);
	return lg;
}

/* The bytes of one frame holding an assistant/text event with seq. */
static void text_frame(struct buf *out, uint64_t seq)
{
	struct buf line = BUF_INIT;
	cJSON *d = cJSON_Parse("{\"text\":\"from elsewhere\"}");
	event_format(&line, seq, 1000, "assistant/text", NULL, false, d);
	struct frame_codec *fc = frame_codec_new();
	assert_int_equal(frame_encode(fc, line.p, line.len, out), 0);
	frame_codec_free(fc);
	cJSON_Delete(d);
	buf_release(&line);
}

/* ---- creation and first publication ---- */

static void test_create_writes_nothing_until_the_first_append(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, NULL, "/w/p", NULL, &lg, &err), 0);
	assert_int_equal(strlen(log_id(lg)), 26);
	assert_int_equal(log_next_seq(lg), 1);
	assert_null(log_scan(lg));
	struct revision r = log_revision_of(lg);
	assert_int_equal(r.len, 0);
	assert_int_equal(r.next_seq, 0);
	char want[1024];
	snprintf(want, sizeof want, "%s/sessions/-w-p/%s/session.jsonl.zst", f->root, log_id(lg));
	assert_string_equal(log_path(lg), want);
	assert_false(exists(P(f, "root/sessions")));
	/* an empty batch is a no-op, even on a log not yet published */
	uint64_t next = 99;
	assert_int_equal(log_append(lg, 1, NULL, 0, &next, &err), 0);
	assert_int_equal(next, 1);
	assert_false(exists(P(f, "root/sessions")));
	/* a CAS miss on the first append writes nothing either */
	FAILS(add(lg, 0, B_TURN, NULL, &err), CERR_CONFLICT);
	assert_false(exists(P(f, "root/sessions")));
	log_close(lg);
	assert_false(exists(P(f, "root/sessions")));
}

static void test_first_append_publishes_the_header_and_events(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	cJSON *extra = cJSON_Parse("{\"model\":\"m1\",\"id\":\"evil\"}");
	int64_t before = clock_unix_ms();
	assert_int_equal(log_create(f->st, "sess1", "/w/p", extra, &lg, &err), 0);
	cJSON_Delete(extra);
	int64_t after = clock_unix_ms();
	add_ok(lg, 1, "[{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{},\"t\":12345},"
		      "{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"hi\"}}]", 3);
	const char *path = P(f, "root/sessions/-w-p/sess1/session.jsonl.zst");
	assert_string_equal(log_path(lg), path);
	/* no staging file is left behind */
	glob_t g;
	assert_int_equal(glob(P(f, "root/sessions/-w-p/sess1/.*.tmp"), 0, NULL, &g), GLOB_NOMATCH);
	globfree(&g);
	assert_true(exists(P(f, "root/sessions/-w-p/sess1/session.lock")));

	struct scan *s = scan_path(path);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_frames, 2);
	assert_int_equal(s->frames[0].n_events, 1);
	assert_int_equal(s->frames[1].n_events, 2);
	assert_int_equal(s->frames[1].offset, s->frames[0].len);
	assert_int_equal(s->good_len, s->rev.len);
	assert_string_equal(s->id, "sess1");
	assert_string_equal(s->cwd, "/w/p");
	assert_int_equal(s->format, 1);
	assert_in_range(s->created_at, before, after);
	assert_int_equal(s->n_events, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(s->events[i].seq, i);
	assert_string_equal(s->events[0].type, "session/header");
	assert_string_equal(cJSON_GetObjectItem(s->events[0].data, "model")->valuestring, "m1");
	/* an extra can't override a field the store writes */
	assert_string_equal(cJSON_GetObjectItem(s->events[0].data, "id")->valuestring, "sess1");
	assert_string_equal(s->events[1].type, "turn/start");
	assert_int_equal(s->events[1].t, 12345);
	assert_string_equal(s->events[1].turn, "t1");
	assert_in_range(s->events[2].t, before, clock_unix_ms());
	assert_string_equal(s->events[2].type, "user/message");
	assert_string_equal(scan_open_turn(s), "t1");
	size_t len = (size_t)s->rev.len;
	scan_free(s);

	log_close(lg);
	assert_int_equal(log_open(f->st, "sess1", &lg, &err), 0);
	assert_int_equal(log_next_seq(lg), 3);
	assert_string_equal(log_id(lg), "sess1");
	struct revision r = log_revision_of(lg);
	assert_int_equal(r.len, len);
	assert_int_equal(r.next_seq, 3);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(r.ino, st.st_ino);
	assert_int_equal(log_scan(lg)->status, SCAN_OK);
	assert_int_equal(log_cut_bytes(lg), 0);
	add_ok(lg, 3, B_TEXT, 4);
	log_close(lg);
	/* an existing id can't be created again */
	FAILS(log_create(f->st, "sess1", NULL, NULL, &lg, &err), CERR_CONFLICT);
	FAILS(log_create(f->st, "../x", NULL, NULL, &lg, &err), CERR_USAGE);
	/* a cwd the header's JSON cannot hold: refused, not written unreadable */
	FAILS(log_create(f->st, "sess2", "/w/a\x9b" "b", NULL, &lg, &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "not UTF-8"));
}

static void test_append_at_a_wrong_seq_conflicts_and_writes_nothing(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "cas", 2);
	size_t n;
	uint8_t *before = slurp(path, &n);
	struct log *lg = open_ok(f, "cas");
	struct cerr err;
	assert_int_equal(log_next_seq(lg), 4);
	uint64_t next = 0;
	assert_int_equal(log_append(lg, 4, NULL, 0, &next, &err), 0);
	assert_int_equal(next, 4);
	assert_same_file(path, before, n);
	static const uint64_t wrong[] = {0, 1, 3, 5, UINT64_MAX};
	for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
		FAILS(add(lg, wrong[i], B_TEXT, NULL, &err), CERR_CONFLICT);
		assert_int_equal(log_next_seq(lg), 4);
	}
	assert_same_file(path, before, n);
	add_ok(lg, 4, B_TEXT, 5);
	log_close(lg);
	free(before);
}

/* ---- validation ---- */

static const char *const bad_batches[] = {
	"[{\"type\":\"x/unknown\",\"data\":{}}]",
	"[{\"type\":\"Bad Type\",\"ignorable\":true,\"data\":{}}]",
	"[{\"data\":{}}]",
	"[{\"type\":\"user/message\",\"data\":{}}]",
	"[{\"type\":\"user/message\",\"data\":{\"text\":7}}]",
	"[{\"type\":\"tool/call\",\"data\":{\"call_id\":\"c\",\"name\":\"n\",\"args\":{}}}]",
	"[{\"type\":\"tool/result\",\"turn\":\"t\",\"data\":{\"call_id\":\"c\",\"status\":\"bogus\"}}]",
	"[{\"type\":\"turn/end\",\"turn\":\"t\",\"data\":{\"outcome\":\"done\"}}]",
	"[{\"type\":\"session/header\",\"data\":{\"format\":1,\"id\":\"x\",\"created_at\":1,\"cwd\":null}}]",
	"[{\"type\":\"user/message\",\"data\":[1]}]",
	"[{\"type\":\"user/message\",\"t\":-5,\"data\":{\"text\":\"a\"}}]",
	"[{\"type\":\"user/message\",\"t\":9007199254740992,\"data\":{\"text\":\"a\"}}]",
	"[{\"type\":\"turn/start\",\"turn\":\"\",\"data\":{}}]",
	/* a valid event before an invalid one: the batch is all or nothing */
	"[{\"type\":\"assistant/text\",\"data\":{\"text\":\"ok\"}},{\"type\":\"nope/x\",\"data\":{}}]",
};

static void check_rejected(struct fx *f, struct log *lg, const char *path, const char *batch)
{
	size_t n = 0;
	uint8_t *before = path ? slurp(path, &n) : NULL;
	uint64_t seq = log_next_seq(lg);
	struct cerr err = {0};
	if (add(lg, seq, batch, NULL, &err) != -1)
		fail_msg("accepted: %s", batch);
	if (err.cls != CERR_USAGE)
		fail_msg("class %d for %s: %s", err.cls, batch, err.msg);
	assert_int_equal(log_next_seq(lg), seq);
	if (path)
		assert_same_file(path, before, n);
	else
		assert_false(exists(P(f, "root/sessions")));
	free(before);
}

static void test_invalid_events_rejected(void **state)
{
	struct fx *f = *state;
	struct log *fresh;
	struct cerr err;
	assert_int_equal(log_create(f->st, "fresh", NULL, NULL, &fresh, &err), 0);
	for (size_t i = 0; i < sizeof bad_batches / sizeof *bad_batches; i++)
		check_rejected(f, fresh, NULL, bad_batches[i]);
	const char *path = make_session(f, "valid", 1);
	struct log *lg;
	assert_int_equal(log_open(f->st, "valid", &lg, &err), 0);
	for (size_t i = 0; i < sizeof bad_batches / sizeof *bad_batches; i++)
		check_rejected(f, lg, path, bad_batches[i]);
	char turn[TURN_ID_MAX + 16], batch[512];
	memset(turn, 'x', TURN_ID_MAX + 1);
	turn[TURN_ID_MAX + 1] = '\0';
	snprintf(batch, sizeof batch, "[{\"type\":\"turn/start\",\"turn\":\"%s\",\"data\":{}}]", turn);
	check_rejected(f, lg, path, batch);
	turn[TURN_ID_MAX] = '\0'; /* exactly the maximum is fine */
	snprintf(batch, sizeof batch, "[{\"type\":\"turn/start\",\"turn\":\"%s\",\"data\":{}}]", turn);
	add_ok(lg, 3, batch, 4);
	log_close(lg);
	log_close(fresh);
}

/* A number JSON cannot carry (infinity, NaN) in an event built in memory
 * is refused by the encoder, naming its path, instead of being written as
 * null; nothing is written. So is one in the header's extra fields. */
static void test_unstorable_numbers_refused(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "valid", 1);
	size_t n = 0;
	uint8_t *before = slurp(path, &n);
	struct log *lg = open_ok(f, "valid");
	static const double bad[] = {INFINITY, -INFINITY, NAN};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cJSON *d = cJSON_Parse("{\"text\":\"hi\",\"a\":[1,{\"b\":2}]}");
		cJSON_GetArrayItem(cJSON_GetObjectItem(d, "a"), 1)->child->valuedouble = bad[i];
		struct log_event ev = {.type = "user/message", .data = d};
		struct cerr err = {0};
		FAILS(log_append(lg, 3, &ev, 1, NULL, &err), CERR_USAGE);
		if (!strstr(err.msg, "data.a[1].b"))
			fail_msg("the field is not named: %s", err.msg);
		cJSON_Delete(d);
	}
	assert_int_equal(log_next_seq(lg), 3);
	assert_same_file(path, before, n);
	log_close(lg);
	free(before);

	cJSON *extra = cJSON_CreateObject();
	cJSON_AddNumberToObject(extra, "weight", INFINITY);
	struct log *fresh;
	struct cerr err = {0};
	FAILS(log_create(f->st, "fresh", NULL, extra, &fresh, &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "data.weight"));
	cJSON_Delete(extra);
}

/* The event shape `log append` and the FIFO take: a null turn is refused
 * (the format calls it invalid; it used to be dropped), as are seq, t and
 * unknown keys; a valid object fills the event. */
static void test_event_from_json_refuses_null_turn_and_unknown_keys(void **state)
{
	(void)state;
	static const char *const refused[] = {
		"{\"type\":\"user/message\",\"turn\":null,\"data\":{\"text\":\"x\"}}",
		"{\"type\":\"turn/start\",\"turn\":7,\"data\":{}}",
		"{\"type\":\"user/message\",\"seq\":1,\"data\":{\"text\":\"x\"}}",
		"{\"type\":\"user/message\",\"t\":1,\"data\":{\"text\":\"x\"}}",
		"{\"type\":\"user/message\",\"data\":{\"text\":\"x\"},\"extra\":1}",
		"{\"type\":\"user/message\",\"data\":[]}",
		"{\"type\":\"user/message\",\"data\":\"x\"}",
		"{\"type\":\"user/message\",\"data\":1}",
		"{\"type\":\"user/message\",\"data\":null}",
		"{\"type\":\"user/message\",\"data\":true}",
		"{\"type\":\"user/message\",\"ignorable\":null,\"data\":{}}",
		"{\"data\":{}}",
		"[]",
	};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		cJSON *o = cJSON_Parse(refused[i]);
		struct event_batch b = EVENT_BATCH_INIT;
		struct cerr err = {0};
		if (event_batch_add_json(&b, o, &err) == 0)
			fail_msg("accepted: %s", refused[i]);
		assert_int_equal(b.n, 0);
		assert_int_equal(err.cls, CERR_USAGE);
		if (i == 0 && !strstr(err.msg, "\"turn\" is null"))
			fail_msg("the null turn is not named: %s", err.msg);
		cJSON_Delete(o);
	}
	cJSON *o = cJSON_Parse("{\"type\":\"tool/started\",\"turn\":\"t1\",\"ignorable\":true,"
			       "\"data\":{\"call_id\":\"c\"}}");
	struct event_batch b = EVENT_BATCH_INIT;
	struct cerr err = {0};
	assert_int_equal(event_batch_add_json(&b, o, &err), 0);
	assert_int_equal(b.n, 1);
	struct log_event ev = b.evs[0];
	event_batch_release(&b);
	assert_string_equal(ev.type, "tool/started");
	assert_string_equal(ev.turn, "t1");
	assert_true(ev.ignorable);
	assert_ptr_equal(ev.data, cJSON_GetObjectItem(o, "data"));
	assert_int_equal(ev.t, 0);
	cJSON_Delete(o);
}

/* A batch is a JSON array read event by event with that same reader: the
 * first bad event fails the whole batch, is named by its position, and
 * leaves the batch empty; anything but an array is refused. */
static void test_event_batch_from_json_names_the_bad_event(void **state)
{
	(void)state;
	cJSON *arr = cJSON_Parse("[{\"type\":\"user/message\",\"data\":{\"text\":\"a\"}},"
				 "{\"type\":\"assistant/text\",\"turn\":\"t\",\"data\":{\"text\":\"b\"}},"
				 "{\"type\":\"user/message\",\"data\":7}]");
	struct event_batch b;
	struct cerr err = {0};
	assert_int_equal(event_batch_from_json(arr, &b, &err), -1);
	assert_int_equal(err.cls, CERR_USAGE);
	if (!strstr(err.msg, "event 3") || !strstr(err.msg, "data"))
		fail_msg("the bad event is not named: %s", err.msg);
	assert_int_equal(b.n, 0);
	assert_null(b.evs);
	cJSON_DeleteItemFromArray(arr, 2);
	assert_int_equal(event_batch_from_json(arr, &b, &err), 0);
	assert_int_equal(b.n, 2);
	assert_string_equal(b.evs[1].type, "assistant/text");
	assert_string_equal(b.evs[1].turn, "t");
	assert_ptr_equal(b.evs[0].data, cJSON_GetObjectItem(arr->child, "data"));
	event_batch_release(&b);
	assert_int_equal(b.n, 0);
	cJSON *obj = cJSON_Parse("{\"type\":\"user/message\"}");
	assert_int_equal(event_batch_from_json(obj, &b, &err), -1);
	assert_int_equal(err.cls, CERR_USAGE);
	assert_int_equal(event_batch_from_json(NULL, &b, &err), -1);
	cJSON *empty = cJSON_CreateArray();
	assert_int_equal(event_batch_from_json(empty, &b, &err), 0);
	assert_int_equal(b.n, 0);
	event_batch_release(&b);
	cJSON_Delete(empty);
	cJSON_Delete(obj);
	cJSON_Delete(arr);
}

/* One event line longer than EVENT_MAX_LINE; a batch of lines each under it
 * whose total exceeds FRAME_MAX_CONTENT. Each refusal names its limit. */
static void test_oversized_line_or_batch_is_refused_naming_its_limit(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "big", 1);
	size_t n;
	uint8_t *before = slurp(path, &n);
	struct log *lg = open_ok(f, "big");
	struct cerr err;
	char *text = malloc(EVENT_MAX_LINE + 1);
	memset(text, 'a', EVENT_MAX_LINE);
	text[EVENT_MAX_LINE] = '\0';
	cJSON *big = cJSON_CreateObject();
	cJSON_AddStringToObject(big, "text", text);
	struct log_event ev = {.type = "user/message", .data = big};
	FAILS(log_append(lg, 3, &ev, 1, NULL, &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "event 1: its line is 10486"));
	assert_non_null(strstr(err.msg, " bytes; the limit is EVENT_MAX_LINE = 1048576"));
	assert_same_file(path, before, n);

	size_t each = EVENT_MAX_LINE - 100, count = FRAME_MAX_CONTENT / each + 1;
	text[each] = '\0';
	cJSON *mid = cJSON_CreateObject();
	cJSON_AddStringToObject(mid, "text", text);
	struct log_event *evs = calloc(count, sizeof *evs);
	for (size_t i = 0; i < count; i++)
		evs[i] = (struct log_event){.type = "user/message", .data = mid};
	assert_int_equal(log_append(lg, 3, evs, 1, NULL, &err), 0); /* one alone is fine */
	free(before);
	before = slurp(path, &n);
	FAILS(log_append(lg, 4, evs, count, NULL, &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "the limit is FRAME_MAX_CONTENT = 16777216"));
	assert_same_file(path, before, n);
	assert_int_equal(log_next_seq(lg), 4);
	free(evs);
	cJSON_Delete(mid);
	cJSON_Delete(big);
	free(text);
	free(before);
	log_close(lg);
}

static void test_unknown_ignorable_accepted(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "ign", 1);
	struct log *lg = open_ok(f, "ign");
	struct cerr err;
	add_ok(lg, 3, "[{\"type\":\"x.future/thing\",\"ignorable\":true,\"data\":{\"a\":1}},"
		      "{\"type\":\"assistant/text\",\"ignorable\":true,\"data\":{\"text\":\"k\"}}]", 5);
	log_close(lg);
	struct scan *s = scan_path(path);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_events, 5);
	assert_null(s->events[3].kind);
	assert_true(s->events[3].ignorable);
	assert_string_equal(s->events[3].type, "x.future/thing");
	assert_non_null(s->events[4].kind);
	assert_int_equal(s->n_skipped, 1);
	assert_int_equal(s->rev.next_seq, 5);
	scan_free(s);
	assert_int_equal(log_open(f->st, "ign", &lg, &err), 0);
	assert_int_equal(log_next_seq(lg), 5);
	log_close(lg);
}

/* ---- the append cursor ---- */

static int preads;
static ssize_t counting_pread(int fd, void *b, size_t n, off_t off)
{
	preads++;
	return fsops_real.pread(fd, b, n, off);
}
static struct fsops counting_ops;

static void count_preads(void)
{
	counting_ops = fsops_real;
	counting_ops.pread = counting_pread;
	preads = 0;
	fsops = &counting_ops;
}

/* Two-step appends: log_write writes frames nobody may call durable yet
 * (log_durable still names the last sync, log_pending says so), several
 * queue up, and one log_sync makes them all durable. */
static int write_only(struct log *lg, uint64_t expect, const char *batch, struct cerr *err)
{
	cJSON *arr = cJSON_Parse(batch);
	assert_non_null(arr);
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
	struct log_event *evs = calloc(n, sizeof *evs);
	for (cJSON *c = arr->child; c; c = c->next, i++) {
		const cJSON *turn = cJSON_GetObjectItem(c, "turn");
		evs[i].type = cJSON_GetObjectItem(c, "type")->valuestring;
		evs[i].turn = turn ? turn->valuestring : NULL;
		evs[i].data = cJSON_GetObjectItem(c, "data");
	}
	uint64_t next = 0;
	int r = log_write(lg, expect, evs, n, &next, err);
	if (r == 0)
		assert_int_equal(next, expect + n);
	free(evs);
	cJSON_Delete(arr);
	return r;
}

static void test_written_frames_are_pending_until_synced(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "two", NULL, NULL, &lg, &err), 0);
	/* A first publication is durable at once: nothing pending. */
	assert_int_equal(write_only(lg, 1, B_TURN, &err), 0);
	assert_false(log_pending(lg));
	assert_int_equal(log_durable(lg).rev.next_seq, 3);
	assert_int_equal(log_sync(lg, &err), 0);
	assert_int_equal(write_only(lg, 3, B_TEXT, &err), 0);
	assert_int_equal(write_only(lg, 4, B_TEXT, &err), 0);
	assert_true(log_pending(lg));
	assert_int_equal(log_next_seq(lg), 5);
	assert_int_equal(log_durable(lg).rev.len, 0); /* not durable yet: no watermark */
	/* The seq check sees the unsynced frames. */
	assert_int_equal(write_only(lg, 4, B_TEXT, &err), -1);
	assert_int_equal(err.cls, CERR_CONFLICT);
	assert_int_equal(log_sync(lg, &err), 0);
	assert_false(log_pending(lg));
	struct log_mark d = log_durable(lg);
	assert_int_equal(d.rev.next_seq, 5);
	assert_int_equal(log_sync(lg, &err), 0); /* nothing pending: a no-op */
	log_close(lg);
	struct scan *s = scan_path(P(f, "root/sessions/_no-cwd/two/session.jsonl.zst"));
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, 5);
	assert_int_equal(s->rev.len, d.rev.len);
	scan_free(s);
}

/* log_sync in steps: frames written after log_sync_begin are not part of
 * that sync (still pending after log_sync_end); when the sync failed,
 * log_sync_end takes back its frames and those written after them, and
 * the next write builds on what the file holds. */
static void test_failed_sync_takes_back_its_frames_and_later_ones(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "steps", NULL, NULL, &lg, &err), 0);
	assert_int_equal(write_only(lg, 1, B_TURN, &err), 0); /* published: durable */
	assert_int_equal(write_only(lg, 3, B_TEXT, &err), 0);
	assert_true(log_sync_begin(lg));
	assert_false(log_pending(lg));
	assert_int_equal(write_only(lg, 4, B_TEXT, &err), 0); /* during the sync */
	assert_int_equal(log_sync_end(lg, log_sync_fd(lg), &err), 0);
	assert_true(log_pending(lg));
	assert_int_equal(log_durable(lg).rev.len, 0); /* seq 4 is not synced yet */
	assert_int_equal(log_sync(lg, &err), 0);
	assert_int_equal(log_durable(lg).rev.next_seq, 5);
	assert_false(log_sync_begin(lg)); /* nothing to take */

	assert_int_equal(write_only(lg, 5, B_TEXT, &err), 0);
	assert_true(log_sync_begin(lg));
	assert_int_equal(write_only(lg, 6, B_TEXT, &err), 0);
	assert_int_equal(log_sync_end(lg, EIO, &err), -1); /* as if it failed */
	assert_int_equal(err.cls, CERR_IO);
	assert_int_equal(err.sys_errno, EIO);
	assert_true(err.outcome_unknown);
	assert_false(log_pending(lg));
	assert_int_equal(log_next_seq(lg), 5);
	struct scan *s = scan_path(P(f, "root/sessions/_no-cwd/steps/session.jsonl.zst"));
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, 5); /* both frames taken back */
	scan_free(s);
	assert_int_equal(write_only(lg, 5, B_TEXT, &err), 0);
	assert_int_equal(log_sync(lg, &err), 0);
	assert_int_equal(log_durable(lg).rev.next_seq, 6);
	log_close(lg);
}

static void test_appends_do_not_reread_the_log(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	count_preads();
	assert_int_equal(log_create(f->st, "cur", NULL, NULL, &lg, &err), 0);
	add_ok(lg, 1, B_TURN, 3);
	for (uint64_t i = 3; i < 10; i++)
		add_ok(lg, i, B_TEXT, i + 1);
	assert_int_equal(preads, 0);
	log_close(lg);
	assert_int_equal(log_open(f->st, "cur", &lg, &err), 0);
	assert_true(preads > 0);
	preads = 0;
	for (uint64_t i = 10; i < 20; i++)
		add_ok(lg, i, B_TEXT, i + 1);
	assert_int_equal(preads, 0);
	/* another writer's frame: the cursor no longer matches, so re-read */
	struct buf fr = BUF_INIT;
	text_frame(&fr, 20);
	spit(log_path(lg), fr.p, fr.len, O_APPEND);
	struct cerr e2;
	assert_int_equal(add(lg, 20, B_TEXT, NULL, &e2), -1);
	assert_int_equal(e2.cls, CERR_CONFLICT);
	assert_true(preads > 0);
	assert_int_equal(log_next_seq(lg), 21);
	preads = 0;
	add_ok(lg, 21, B_TEXT, 22);
	assert_int_equal(preads, 0);
	buf_release(&fr);
	log_close(lg);
	fsops = &fsops_real;
	struct scan *s = scan_path(P(f, "root/sessions/_no-cwd/cur/session.jsonl.zst"));
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->rev.next_seq, 22);
	assert_string_equal(s->events[20].data->child->valuestring, "from elsewhere");
	scan_free(s);
}

static void test_append_after_truncation_builds_on_the_file(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "trunc", 3); /* seqs 0..4, three frames */
	struct log *lg = open_ok(f, "trunc");
	struct cerr err;
	const struct scan *s = log_scan(lg);
	assert_int_equal(s->n_frames, 4);
	uint64_t cut = s->frames[3].offset;
	assert_int_equal(truncate(path, (off_t)cut), 0);
	FAILS(add(lg, 5, B_TEXT, NULL, &err), CERR_CONFLICT);
	assert_int_equal(log_next_seq(lg), 4);
	add_ok(lg, 4, B_TEXT, 5);
	/* truncated inside a frame: a torn tail to cut, then the append */
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - 3), 0);
	add_ok(lg, 4, B_TEXT, 5);
	assert_true(log_cut_bytes(lg) > 0);
	log_close(lg);
	struct scan *t = scan_path(path);
	assert_int_equal(t->status, SCAN_OK);
	assert_int_equal(t->n_frames, 4);
	assert_int_equal(t->rev.next_seq, 5);
	scan_free(t);
}

static void test_append_follows_a_replaced_file_refuses_another_log(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "repl", 1);
	const char *other = make_session(f, "other", 1);
	struct log *lg = open_ok(f, "repl");
	struct cerr err;
	size_t n;
	uint8_t *bytes = slurp(path, &n);
	const char *copy = P(f, "root/sessions/_no-cwd/repl/copy");
	spit(copy, bytes, n, O_EXCL);
	assert_int_equal(rename(copy, path), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	add_ok(lg, 3, B_TEXT, 4); /* lands in the new file */
	assert_int_equal(log_revision_of(lg).ino, st.st_ino);
	struct scan *s = scan_path(path);
	assert_int_equal(s->rev.next_seq, 4);
	scan_free(s);
	/* replaced by another session's log: refuse */
	free(bytes);
	bytes = slurp(other, &n);
	spit(copy, bytes, n, O_EXCL);
	assert_int_equal(rename(copy, path), 0);
	assert_int_equal(add(lg, 3, B_TEXT, NULL, &err), -1);
	assert_true(err.cls == CERR_CONFLICT || err.cls == CERR_CORRUPT);
	assert_same_file(path, bytes, n);
	free(bytes);
	log_close(lg);
}

/* ---- torn tails ---- */

/* Append the first half of a valid frame to path; returns the bytes added. */
static size_t tear(const char *path, uint64_t seq)
{
	struct buf fr = BUF_INIT;
	text_frame(&fr, seq);
	size_t half = fr.len / 2;
	spit(path, fr.p, half, O_APPEND);
	buf_release(&fr);
	return half;
}

static void test_torn_tail_cut_by_append(void **state)
{
	struct fx *f = *state;
	const char *path = make_session(f, "torn", 2);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	size_t good = (size_t)st.st_size, half = tear(path, 4);
	struct log *lg = open_ok(f, "torn");
	assert_int_equal(log_scan(lg)->status, SCAN_TORN);
	assert_int_equal(log_scan(lg)->good_len, good);
	assert_int_equal(log_revision_of(lg).len, good + half);
	assert_int_equal(log_next_seq(lg), 4);
	assert_int_equal(log_cut_bytes(lg), 0);
	add_ok(lg, 4, B_TEXT, 5);
	assert_int_equal(log_cut_bytes(lg), half);
	log_close(lg);
	struct scan *s = scan_path(path);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_frames, 4);
	assert_int_equal(s->frames[3].offset, good);
	assert_int_equal(s->rev.next_seq, 5);
	scan_free(s);
}

/* ---- logs that must not be opened for writing ---- */

/* Corrupt and unsupported logs: see test_repair.c. */
static void test_open_header_id_mismatch(void **state)
{
	struct fx *f = *state;
	size_t n;
	uint8_t *bytes = slurp(make_session(f, "aaa", 1), &n);
	assert_int_equal(mkdir(P(f, "root/sessions/_no-cwd/mismatch"), 0700), 0);
	const char *path = P(f, "root/sessions/_no-cwd/mismatch/session.jsonl.zst");
	spit(path, bytes, n, O_EXCL);
	struct log *lg = NULL;
	struct cerr err;
	FAILS(log_open(f->st, "mismatch", &lg, &err), CERR_CORRUPT);
	assert_null(lg);
	assert_same_file(path, bytes, n);
	free(bytes);
	/* by path there is no directory id to match: it opens */
	assert_int_equal(log_open_path(path, &lg, &err), 0);
	assert_string_equal(log_id(lg), "aaa");
	log_close(lg);
	FAILS(log_open(f->st, "nosuch", &lg, &err), CERR_MISSING);
	FAILS(log_open(f->st, "aa", &lg, &err), CERR_MISSING); /* a prefix is not an id */
	FAILS(log_open(f->st, "a/b", &lg, &err), CERR_USAGE);
	FAILS(log_open(f->st, "..", &lg, &err), CERR_USAGE);
}

static void test_open_path_reads_a_log_outside_the_store(void **state)
{
	struct fx *f = *state;
	const char *src = make_session(f, "anywhere", 1);
	size_t n;
	uint8_t *bytes = slurp(src, &n);
	assert_int_equal(mkdir(P(f, "elsewhere"), 0755), 0);
	const char *path = P(f, "elsewhere/my.log");
	spit(path, bytes, n, O_EXCL);
	free(bytes);
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_open_path(path, &lg, &err), 0);
	assert_string_equal(log_id(lg), "anywhere");
	assert_string_equal(log_path(lg), path);
	assert_int_equal(log_next_seq(lg), 3);
	struct stat st;
	assert_int_equal(lstat(P(f, "elsewhere/session.lock"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	/* the lock is the directory's: a second taker is refused */
	int dfd = open(P(f, "elsewhere"), O_RDONLY | O_DIRECTORY);
	FAILS(lock_take(-1, "x", dfd, &err), CERR_LOCKED);
	add_ok(lg, 3, B_TEXT, 4);
	log_close(lg);
	int lk = lock_take(-1, "x", dfd, &err);
	assert_true(lk >= 0);
	FAILS(log_open_path(path, &lg, &err), CERR_LOCKED);
	lock_release(lk);
	close(dfd);
	struct scan *s = scan_path(path);
	assert_int_equal(s->rev.next_seq, 4);
	scan_free(s);
	FAILS(log_open_path(P(f, "elsewhere/none.log"), &lg, &err), CERR_MISSING);
	FAILS(log_open_path(P(f, "nodir/x.log"), &lg, &err), CERR_MISSING);
}

/* ---- the writer lock ---- */

static int open_dir(const char *p)
{
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

static void test_lock_is_exclusive_within_one_process(void **state)
{
	struct fx *f = *state;
	assert_int_equal(mkdir(P(f, "s"), 0700), 0);
	int key = open_dir(f->dir), dir = open_dir(P(f, "s"));
	struct cerr err;
	int a = lock_take(key, "s", dir, &err);
	assert_true(a >= 0);
	struct stat st;
	assert_int_equal(lstat(P(f, "s/session.lock"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	uint64_t t0 = clock_mono_ns();
	FAILS(lock_take(key, "s", dir, &err), CERR_LOCKED);
	assert_non_null(strstr(err.msg, "'s'"));
	FAILS(lock_take(-1, NULL, dir, &err), CERR_LOCKED);
	assert_true(clock_mono_ns() - t0 < 500000000u); /* never waits */
	lock_release(a);
	lock_release(-1);
	int b = lock_take(key, "s", dir, &err);
	assert_true(b >= 0);
	lock_release(b);
	close(dir);
	close(key);
}

/* Run lock_take on path in a child process; returns its error class. */
static int child_lock_class(const char *path)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cerr err = {0};
		int d = open(path, O_RDONLY | O_DIRECTORY);
		int fd = lock_take(-1, "c", d, &err);
		_exit(fd >= 0 ? 0 : (int)err.cls);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_lock_held_by_another_process_is_locked(void **state)
{
	struct fx *f = *state;
	make_session(f, "held", 1);
	const char *sdir = P(f, "root/sessions/_no-cwd/held");
	assert_int_equal(child_lock_class(sdir), 0);
	struct log *lg = open_ok(f, "held");
	struct cerr err;
	uint64_t t0 = clock_mono_ns();
	assert_int_equal(child_lock_class(sdir), CERR_LOCKED);
	assert_true(clock_mono_ns() - t0 < 2000000000u);
	log_close(lg);
	assert_int_equal(child_lock_class(sdir), 0);

	/* a child holds it: log_open here is refused at once, then works */
	int go[2], done[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct log *cl;
		struct cerr ce;
		close(go[0]);
		close(done[1]); /* EOF on done when the parent exits, even failing */
		char c = log_open(f->st, "held", &cl, &ce) == 0 ? 'y' : 'n';
		if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(go[1]);
	close(done[0]);
	char c;
	assert_int_equal(read(go[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	t0 = clock_mono_ns();
	FAILS(log_open(f->st, "held", &lg, &err), CERR_LOCKED);
	assert_true(clock_mono_ns() - t0 < 2000000000u);
	assert_int_equal(write(done[1], "x", 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(log_open(f->st, "held", &lg, &err), 0);
	log_close(lg);
	close(go[0]), close(done[1]);
}

static const char *swap_lock_path;
static int swapping_flock(int fd, int op)
{
	if (swap_lock_path && (op & LOCK_EX)) {
		/* another process replaced session.lock between open and flock */
		char tmp[1100];
		snprintf(tmp, sizeof tmp, "%s.new", swap_lock_path);
		int t = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
		close(t);
		rename(tmp, swap_lock_path);
		swap_lock_path = NULL;
	}
	return fsops_real.flock(fd, op);
}

static void test_lock_refuses_a_directory_renamed_away(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	assert_int_equal(mkdir(P(f, "s"), 0700), 0);
	int key = open_dir(f->dir), dir = open_dir(P(f, "s"));
	/* renamed away after we opened it */
	assert_int_equal(rename(P(f, "s"), P(f, "gone")), 0);
	FAILS(lock_take(key, "s", dir, &err), CERR_MISSING);
	/* and a new directory of the same name appeared */
	assert_int_equal(mkdir(P(f, "s"), 0700), 0);
	FAILS(lock_take(key, "s", dir, &err), CERR_MISSING);
	/* the lock is not left held by the failed attempts */
	int lk = lock_take(-1, "gone", dir, &err);
	assert_true(lk >= 0);
	lock_release(lk);
	/* the lock file itself was replaced between open and flock */
	static struct fsops swap_ops;
	swap_ops = fsops_real;
	swap_ops.flock = swapping_flock;
	swap_lock_path = P(f, "gone/session.lock");
	fsops = &swap_ops;
	assert_int_equal(lock_take(-1, "gone", dir, &err), -1);
	fsops = &fsops_real;
	assert_int_equal(err.cls, CERR_MISSING);
	lk = lock_take(-1, "gone", dir, &err);
	assert_true(lk >= 0);
	lock_release(lk);
	close(dir);
	close(key);
}

/* A probe (lock_probe: a shared lock for the instant of one call) that
 * holds the lock just when a writer takes it: the flock below takes such
 * a shared lock right before the writer's first exclusive attempt and
 * drops it at the next call, as a probe on another thread would. */
static const char *probe_lock_path;
static int probe_fd = -1;
static int probing_flock(int fd, int op)
{
	if (probe_fd >= 0) {
		close(probe_fd); /* the probe is over */
		probe_fd = -1;
	} else if (probe_lock_path && (op & LOCK_EX)) {
		probe_fd = open(probe_lock_path, O_RDONLY | O_CLOEXEC);
		assert_int_equal(flock(probe_fd, LOCK_SH | LOCK_NB), 0);
		probe_lock_path = NULL;
	}
	return fsops_real.flock(fd, op);
}

/* A writer taking the lock while a listing probes it is not refused: the
 * probe's shared lock is told from a writer's and waited out; a writer's
 * exclusive lock still refuses at once. */
static void test_lock_waits_out_a_probe_but_not_a_writer(void **state)
{
	struct fx *f = *state;
	struct cerr err;
	assert_int_equal(mkdir(P(f, "s"), 0700), 0);
	int dir = open_dir(P(f, "s"));
	int lk = lock_take(-1, "s", dir, &err); /* the lock file exists */
	assert_true(lk >= 0);
	lock_release(lk);
	static struct fsops probe_ops;
	probe_ops = fsops_real;
	probe_ops.flock = probing_flock;
	probe_lock_path = P(f, "s/session.lock");
	fsops = &probe_ops;
	lk = lock_take(-1, "s", dir, &err);
	fsops = &fsops_real;
	if (lk < 0)
		fail_msg("refused while only a probe held the lock: %s", err.msg);
	assert_null(probe_lock_path); /* the probe did happen */
	/* held by a writer: the next one is refused */
	FAILS(lock_take(-1, "s", dir, &err), CERR_LOCKED);
	bool held = false;
	assert_int_equal(lock_probe(dir, &held, &err), 0);
	assert_true(held);
	lock_release(lk);
	assert_int_equal(lock_probe(dir, &held, &err), 0);
	assert_false(held);
	close(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_create_writes_nothing_until_the_first_append),
		T(test_first_append_publishes_the_header_and_events),
		T(test_append_at_a_wrong_seq_conflicts_and_writes_nothing),
		T(test_invalid_events_rejected),
		T(test_unstorable_numbers_refused),
		T(test_event_from_json_refuses_null_turn_and_unknown_keys),
		T(test_event_batch_from_json_names_the_bad_event),
		T(test_oversized_line_or_batch_is_refused_naming_its_limit),
		T(test_unknown_ignorable_accepted),
		T(test_written_frames_are_pending_until_synced),
		T(test_failed_sync_takes_back_its_frames_and_later_ones),
		T(test_appends_do_not_reread_the_log),
		T(test_append_after_truncation_builds_on_the_file),
		T(test_append_follows_a_replaced_file_refuses_another_log),
		T(test_torn_tail_cut_by_append),
		T(test_open_header_id_mismatch),
		T(test_open_path_reads_a_log_outside_the_store),
		T(test_lock_is_exclusive_within_one_process),
		T(test_lock_held_by_another_process_is_locked),
		T(test_lock_refuses_a_directory_renamed_away),
		T(test_lock_waits_out_a_probe_but_not_a_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
