/* test_log_validate.c — what the session log writer (persist/log.h) and
 * the event reader it shares with `log append` and the FIFO
 * (persist/event_batch.h) refuse, writing nothing, and what they accept:
 * invalid events and batches, numbers JSON cannot carry, a null turn and
 * unknown keys, oversized lines and batches naming their limit, unknown
 * ignorable events. The fixture: support_log.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist/event.h"
#include "persist/event_batch.h"
#include "persist/frame.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_log.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		LOGFX_TEST(test_invalid_events_rejected),
		LOGFX_TEST(test_unstorable_numbers_refused),
		LOGFX_TEST(test_event_from_json_refuses_null_turn_and_unknown_keys),
		LOGFX_TEST(test_event_batch_from_json_names_the_bad_event),
		LOGFX_TEST(test_oversized_line_or_batch_is_refused_naming_its_limit),
		LOGFX_TEST(test_unknown_ignorable_accepted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
