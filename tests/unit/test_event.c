/* test_event.c — persist/event and persist/vocab: every vocabulary type
 * parses with its required fields; envelope, shape and vocabulary errors are
 * told apart (corrupt vs unsupported); event_format writes canonical lines
 * that parse back identically. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/vocab.h"

/* Every type of the vocabulary with the smallest data it accepts. */
static const struct {
	const char *type, *data;
	bool needs_turn;
} types[] = {
	{"session/header", "{\"format\":1,\"id\":\"s1\",\"created_at\":5,\"cwd\":null}", false},
	{"session/meta", "{}", false},
	{"session/settings", "{}", false},
	{"turn/start", "{}", true},
	{"user/message", "{\"text\":\"hi\"}", false},
	{"request/prepared", "{}", true},
	{"assistant/text", "{\"text\":\"x\"}", false},
	{"assistant/reasoning", "{\"text\":\"r\"}", false},
	{"tool/call", "{\"call_id\":\"c1\",\"name\":\"sh\",\"args\":{\"cmd\":\"ls\"}}", true},
	{"interaction/request", "{}", true},
	{"interaction/answer", "{}", true},
	{"tool/started", "{\"call_id\":\"c1\"}", true},
	{"tool/result", "{\"call_id\":\"c1\",\"status\":\"ok\"}", true},
	{"step/end", "{}", true},
	{"turn/end", "{\"outcome\":\"completed\"}", true},
	{"branch/rewind", "{}", false},
	{"input/queued", "{}", false},
	{"input/dequeued", "{}", false},
};
#define N_TYPES (sizeof types / sizeof types[0])
#define A16 "aaaaaaaaaaaaaaaa"
#define LONG65 A16 A16 A16 A16 "a" /* a type name one byte too long */

static char line[8192];

/* Build one line; turn NULL leaves it out. */
static const char *mk(uint64_t seq, const char *type, const char *turn, const char *data)
{
	if (turn)
		snprintf(line, sizeof line,
			 "{\"seq\":%llu,\"t\":1700000000000,\"type\":\"%s\",\"turn\":\"%s\",\"data\":%s}",
			 (unsigned long long)seq, type, turn, data);
	else
		snprintf(line, sizeof line,
			 "{\"seq\":%llu,\"t\":1700000000000,\"type\":\"%s\",\"data\":%s}",
			 (unsigned long long)seq, type, data);
	return line;
}

static int parse(const char *s, uint64_t expect, struct event *ev, struct cerr *e)
{
	cerr_clear(e);
	return event_parse(s, strlen(s), expect, ev, e);
}

/* The line must fail with class cls and leave ev untouched. */
static void expect_fail(const char *s, uint64_t expect, enum cerr_class cls)
{
	struct event ev;
	memset(&ev, 0xA5, sizeof ev);
	struct event before = ev;
	struct cerr e;
	if (parse(s, expect, &ev, &e) == 0) {
		event_release(&ev);
		fail_msg("accepted: %s", s);
	}
	if (e.cls != cls)
		fail_msg("class %s (%s), expected %s: %s", cerr_class_name(e.cls), e.msg,
			 cerr_class_name(cls), s);
	assert_true(e.msg[0] != '\0');
	assert_memory_equal(&ev, &before, sizeof ev);
}

static void test_every_vocabulary_type_parses_with_its_data(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_TYPES; i++) {
		const struct vocab_entry *ve = vocab_find(types[i].type);
		assert_non_null(ve);
		assert_string_equal(ve->type, types[i].type);
		assert_int_equal(ve->needs_turn, types[i].needs_turn);

		const char *s = mk(7, types[i].type, "turn-1", types[i].data);
		struct event ev;
		struct cerr e;
		if (parse(s, 7, &ev, &e) < 0)
			fail_msg("%s rejected: %s", types[i].type, e.msg);
		assert_int_equal(ev.seq, 7);
		assert_int_equal(ev.t, 1700000000000LL);
		assert_string_equal(ev.type, types[i].type);
		assert_string_equal(ev.turn, "turn-1");
		assert_false(ev.ignorable);
		assert_ptr_equal(ev.kind, ve);
		assert_int_equal(ev.vtype, ve->id);
		assert_non_null(ev.root);
		assert_true(cJSON_IsObject(ev.data));
		assert_ptr_equal(ev.line, s);
		assert_int_equal(ev.line_len, strlen(s));
		char *d = json_print(ev.data);
		assert_string_equal(d, types[i].data);
		free(d);
		event_release(&ev);
		assert_null(ev.root);
		event_release(&ev); /* twice is harmless */

		/* without "turn" */
		s = mk(3, types[i].type, NULL, types[i].data);
		if (types[i].needs_turn) {
			expect_fail(s, 3, CERR_CORRUPT);
		} else {
			assert_int_equal(parse(s, 3, &ev, &e), 0);
			assert_null(ev.turn);
			event_release(&ev);
		}
	}
	event_release(NULL);
	assert_null(vocab_find("tool/unknown"));
	assert_null(vocab_find(""));
	assert_null(vocab_find("Turn/Start"));
}

static void test_turn_is_required_where_the_vocabulary_says(void **state)
{
	(void)state;
	static const char *const need[] = {"turn/start", "tool/call", "tool/started",
					   "tool/result", "turn/end"};
	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
		const struct vocab_entry *ve = vocab_find(need[i]);
		assert_non_null(ve);
		assert_true(ve->needs_turn);
	}
	/* turn must be a non-empty string of at most TURN_ID_MAX bytes */
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"turn/start\",\"turn\":null,\"data\":{}}", 1,
		    CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"turn/start\",\"turn\":\"\",\"data\":{}}", 1,
		    CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"turn/start\",\"turn\":7,\"data\":{}}", 1,
		    CERR_CORRUPT);
	char turn[TURN_ID_MAX + 2];
	memset(turn, 't', TURN_ID_MAX);
	turn[TURN_ID_MAX] = '\0';
	struct event ev;
	struct cerr e;
	assert_int_equal(parse(mk(1, "turn/start", turn, "{}"), 1, &ev, &e), 0);
	assert_int_equal(strlen(ev.turn), TURN_ID_MAX);
	event_release(&ev);
	turn[TURN_ID_MAX] = 't';
	turn[TURN_ID_MAX + 1] = '\0';
	expect_fail(mk(1, "turn/start", turn, "{}"), 1, CERR_CORRUPT);
}

static void test_envelope_errors_are_corrupt(void **state)
{
	(void)state;
	/* a number a double cannot hold: the log would not read back as
	 * written (another writer's line; cairn's own refuses it) */
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"a\",\"x\":1e400}}",
		    1, CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"a\",\"z\":1e-400}}",
		    1, CERR_CORRUPT);
	/* missing members */
	expect_fail("{\"t\":1,\"type\":\"session/meta\",\"data\":{}}", 1, CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"type\":\"session/meta\",\"data\":{}}", 1, CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"t\":1,\"data\":{}}", 1, CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"session/meta\"}", 1, CERR_CORRUPT);
	/* not an object at all, or not JSON */
	expect_fail("[1,2]", 1, CERR_CORRUPT);
	expect_fail("\"x\"", 1, CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"session/meta\",\"data\":{}", 1, CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"session/meta\",\"data\":{}} x", 1, CERR_CORRUPT);
	expect_fail("{\"seq\":1,\"seq\":1,\"t\":1,\"type\":\"session/meta\",\"data\":{}}", 1,
		    CERR_CORRUPT);
	/* seq mismatch either way */
	expect_fail(mk(4, "session/meta", NULL, "{}"), 5, CERR_CORRUPT);
	expect_fail(mk(6, "session/meta", NULL, "{}"), 5, CERR_CORRUPT);
	/* bad seq values */
	static const char *const seqs[] = {"-1", "1.5", "9007199254740992", "18446744073709551615",
					   "1e300", "\"1\"", "null", "true", "[1]"};
	for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
		snprintf(line, sizeof line,
			 "{\"seq\":%s,\"t\":1,\"type\":\"session/meta\",\"data\":{}}", seqs[i]);
		expect_fail(line, 1, CERR_CORRUPT);
	}
	struct event ev;
	struct cerr e;
	assert_int_equal(parse(mk(9007199254740991ull, "session/meta", NULL, "{}"),
			       9007199254740991ull, &ev, &e), 0);
	assert_int_equal(ev.seq, 9007199254740991ull);
	event_release(&ev);
	/* bad t values */
	static const char *const ts[] = {"-1", "0.5", "9007199254740992", "\"now\""};
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
		snprintf(line, sizeof line,
			 "{\"seq\":1,\"t\":%s,\"type\":\"session/meta\",\"data\":{}}", ts[i]);
		expect_fail(line, 1, CERR_CORRUPT);
	}
	/* invalid type names */
	static const char *const names[] = {"\"\"", "\"Turn/Start\"", "\"a b\"",
					    "\"caf\xC3\xA9\"", "\"x\\u0001\"", "7", "null",
					    "\"" LONG65 "\""};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(line, sizeof line, "{\"seq\":1,\"t\":1,\"type\":%s,\"ignorable\":true,"
					    "\"data\":{}}", names[i]);
		expect_fail(line, 1, CERR_CORRUPT);
	}
	/* ignorable must be a boolean */
	expect_fail("{\"seq\":1,\"t\":1,\"type\":\"session/meta\",\"ignorable\":1,\"data\":{}}", 1,
		    CERR_CORRUPT);
	/* data must be an object */
	static const char *const datas[] = {"[]", "\"x\"", "null", "1", "true"};
	for (size_t i = 0; i < sizeof datas / sizeof datas[0]; i++) {
		expect_fail(mk(1, "session/meta", NULL, datas[i]), 1, CERR_CORRUPT);
		snprintf(line, sizeof line, "{\"seq\":1,\"t\":1,\"type\":\"x/new\",\"ignorable\":true,"
					    "\"data\":%s}", datas[i]);
		expect_fail(line, 1, CERR_CORRUPT);
	}
}

static void test_missing_or_mistyped_data_fields_are_corrupt(void **state)
{
	(void)state;
	/* missing required fields: corrupt */
	static const struct {
		const char *type, *data;
	} missing[] = {
		{"user/message", "{}"},
		{"assistant/text", "{\"txt\":\"x\"}"},
		{"tool/call", "{\"call_id\":\"c\",\"name\":\"n\"}"},
		{"tool/call", "{\"name\":\"n\",\"args\":{}}"},
		{"tool/started", "{}"},
		{"tool/result", "{\"call_id\":\"c\"}"},
		{"tool/result", "{\"status\":\"ok\"}"},
		{"turn/end", "{}"},
		{"session/header", "{\"format\":1,\"id\":\"s\",\"created_at\":1}"},
		{"session/header", "{\"id\":\"s\",\"created_at\":1,\"cwd\":null}"},
	};
	for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
		expect_fail(mk(1, missing[i].type, "t", missing[i].data), 1, CERR_CORRUPT);

	/* wrong kinds: corrupt */
	static const struct {
		const char *type, *data;
	} kinds[] = {
		{"user/message", "{\"text\":1}"},
		{"user/message", "{\"text\":null}"},
		{"tool/call", "{\"call_id\":5,\"name\":\"n\",\"args\":{}}"},
		{"tool/result", "{\"call_id\":\"c\",\"status\":5}"},
		{"tool/result", "{\"call_id\":\"c\",\"status\":\"ok\",\"source_seqs\":[-1]}"},
		{"tool/result", "{\"call_id\":\"c\",\"status\":\"ok\",\"source_seqs\":[1.5]}"},
		{"tool/result", "{\"call_id\":\"c\",\"status\":\"ok\",\"source_seqs\":3}"},
		{"tool/result", "{\"call_id\":\"c\",\"status\":\"ok\",\"exit_code\":1.5}"},
		{"turn/end", "{\"outcome\":\"completed\",\"usage\":[]}"},
		{"turn/end", "{\"outcome\":null}"},
		{"session/header", "{\"format\":\"1\",\"id\":\"s\",\"created_at\":1,\"cwd\":null}"},
		{"session/header", "{\"format\":1,\"id\":\"s\",\"created_at\":1,\"cwd\":5}"},
		{"session/meta", "{\"pinned\":\"yes\"}"},
		{"turn/start", "{\"parent_turn\":3}"},
		{"turn/end", "{\"outcome\":\"failed\",\"error\":7}"},
		{"turn/end", "{\"outcome\":\"failed\",\"error\":null}"},
		{"turn/end", "{\"outcome\":\"failed\",\"error\":{\"class\":\"provider\"}}"},
		{"turn/end", "{\"outcome\":\"failed\",\"error\":{\"message\":\"m\"}}"},
		{"turn/end", "{\"outcome\":\"failed\",\"error\":{\"class\":1,\"message\":\"m\"}}"},
		{"turn/end", "{\"outcome\":\"failed\",\"error\":{\"class\":\"provider\",\"message\":\"m\",\"http_status\":700}}"},
		{"turn/end", "{\"outcome\":\"failed\",\"error\":{\"class\":\"provider\",\"message\":\"m\",\"http_status\":\"429\"}}"},
		{"turn/end", "{\"outcome\":\"interrupted\",\"synthetic\":1}"},
		{"request/prepared", "{\"step\":\"1\"}"},
		{"request/prepared", "{\"model\":null}"},
		{"step/end", "{\"usage\":3}"},
		{"step/end", "{\"finish_reason\":false}"},
		{"branch/rewind", "{\"to_turn\":1}"},
		{"branch/rewind", "{\"to_turn\":\"t1\",\"from_leaf\":2}"},
		{"branch/rewind", "{\"to_turn\":null,\"source_next_seq\":\"9\"}"},
		{"branch/rewind", "{\"to_turn\":null,\"source_next_seq\":1.5}"},
	};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		expect_fail(mk(1, kinds[i].type, "t", kinds[i].data), 1, CERR_CORRUPT);

	/* unknown enum values: unsupported (a newer writer) */
	expect_fail(mk(1, "tool/result", "t", "{\"call_id\":\"c\",\"status\":\"maybe\"}"), 1,
		    CERR_UNSUPPORTED);
	expect_fail(mk(1, "tool/result", "t", "{\"call_id\":\"c\",\"status\":\"OK\"}"), 1,
		    CERR_UNSUPPORTED);
	expect_fail(mk(1, "turn/end", "t", "{\"outcome\":\"exploded\"}"), 1, CERR_UNSUPPORTED);

	/* every documented enum value is accepted */
	static const char *const st[] = {"ok", "error", "denied", "not_executed",
					 "outcome_unknown", "canceled"};
	static const char *const oc[] = {"completed", "canceled", "failed", "interrupted"};
	struct event ev;
	struct cerr e;
	char d[128];
	for (size_t i = 0; i < 6; i++) {
		snprintf(d, sizeof d, "{\"call_id\":\"c\",\"status\":\"%s\",\"source_seqs\":[1,2]}",
			 st[i]);
		assert_int_equal(parse(mk(1, "tool/result", "t", d), 1, &ev, &e), 0);
		event_release(&ev);
	}
	for (size_t i = 0; i < 4; i++) {
		snprintf(d, sizeof d, "{\"outcome\":\"%s\",\"usage\":{}}", oc[i]);
		assert_int_equal(parse(mk(1, "turn/end", "t", d), 1, &ev, &e), 0);
		event_release(&ev);
	}
	/* turn/end.error: the object of this format, the plain string of
	 * older logs, and a class this build does not know (the list grows) */
	static const char *const errs[] = {
		"{\"outcome\":\"failed\",\"error\":{\"class\":\"provider\",\"message\":\"rate limited\","
		"\"http_status\":429}}",
		"{\"outcome\":\"interrupted\",\"synthetic\":true,\"error\":\"the session stopped\"}",
		"{\"outcome\":\"failed\",\"error\":{\"class\":\"from_the_future\",\"message\":\"m\","
		"\"more\":[]}}",
	};
	static const char *const want_cls[] = {"provider", NULL, "from_the_future"};
	static const char *const want_msg[] = {"rate limited", "the session stopped", "m"};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(parse(mk(1, "turn/end", "t", errs[i]), 1, &ev, &e), 0);
		const char *cls = "unset", *msg = NULL;
		assert_true(vocab_turn_error(cJSON_GetObjectItem(ev.data, "error"), &cls, &msg));
		if (want_cls[i])
			assert_string_equal(cls, want_cls[i]);
		else
			assert_null(cls);
		assert_string_equal(msg, want_msg[i]);
		event_release(&ev);
	}
	assert_int_equal(parse(mk(1, "request/prepared", "t",
				  "{\"provider\":\"openai\",\"model\":\"m\",\"step\":1,\"attempt\":1,"
				  "\"messages\":3,\"context_fp\":\"ab\",\"tools_fp\":\"cd\"}"), 1, &ev, &e), 0);
	event_release(&ev);
	assert_int_equal(parse(mk(1, "step/end", "t",
				  "{\"step\":1,\"finish_reason\":\"stop\",\"usage\":{\"input\":5}}"), 1, &ev,
			       &e), 0);
	event_release(&ev);
	/* branch/rewind as cairn writes it: to a turn, or before the first */
	assert_int_equal(parse(mk(1, "branch/rewind", NULL,
				  "{\"to_turn\":\"t1\",\"from_leaf\":\"t2\",\"source_next_seq\":9}"),
			       1, &ev, &e), 0);
	event_release(&ev);
	assert_int_equal(parse(mk(1, "branch/rewind", NULL,
				  "{\"to_turn\":null,\"from_leaf\":null,\"source_next_seq\":0}"),
			       1, &ev, &e), 0);
	event_release(&ev);
	/* optional fields and unknown extra fields */
	assert_int_equal(parse(mk(1, "turn/start", "t", "{\"parent_turn\":null,\"x\":[1]}"), 1,
			       &ev, &e), 0);
	event_release(&ev);
	assert_int_equal(parse(mk(1, "session/header", NULL,
				  "{\"format\":1,\"id\":\"s\",\"created_at\":1,\"cwd\":\"/w\","
				  "\"model\":\"m\",\"future\":{}}"), 1, &ev, &e), 0);
	event_release(&ev);
}

static void test_unknown_type_is_unsupported_unless_ignorable(void **state)
{
	(void)state;
	expect_fail(mk(2, "future/thing", "t", "{}"), 2, CERR_UNSUPPORTED);
	expect_fail("{\"seq\":2,\"t\":1,\"type\":\"future/thing\",\"ignorable\":false,\"data\":{}}",
		    2, CERR_UNSUPPORTED);
	/* the seq is still checked first */
	expect_fail(mk(3, "future/thing", "t", "{}"), 2, CERR_CORRUPT);

	struct event ev;
	struct cerr e;
	const char *s = "{\"seq\":2,\"t\":1,\"type\":\"future/thing\",\"ignorable\":true,"
			"\"data\":{\"anything\":[1,{\"deep\":null}]}}";
	assert_int_equal(parse(s, 2, &ev, &e), 0);
	assert_null(ev.kind);
	assert_int_equal(ev.vtype, VT_UNKNOWN);
	assert_true(ev.ignorable);
	assert_string_equal(ev.type, "future/thing");
	assert_null(ev.turn);
	assert_int_equal(ev.seq, 2);
	event_release(&ev);

	/* a known type marked ignorable is still validated */
	expect_fail("{\"seq\":2,\"t\":1,\"type\":\"user/message\",\"ignorable\":true,"
		    "\"data\":{\"text\":1}}", 2, CERR_CORRUPT);
	s = "{\"seq\":2,\"t\":1,\"type\":\"user/message\",\"ignorable\":true,\"data\":{\"text\":\"a\"}}";
	assert_int_equal(parse(s, 2, &ev, &e), 0);
	assert_non_null(ev.kind);
	assert_int_equal(ev.vtype, VT_USER_MESSAGE);
	assert_true(ev.ignorable);
	event_release(&ev);
}

/* Every type of the vocabulary round-trips name -> enum -> name, the
 * enum has exactly one value per type of the list above (a type added to
 * the table without a test entry fails here), and a name not in the
 * table maps to VT_UNKNOWN, which has no name. */
static void test_type_enum_round_trips_every_vocabulary_name(void **state)
{
	(void)state;
	assert_int_equal(VOCAB_N_TYPES, N_TYPES);
	bool seen[VOCAB_N_TYPES] = {false};
	for (size_t i = 0; i < N_TYPES; i++) {
		enum vocab_type t = vocab_type_of(types[i].type);
		assert_true(t != VT_UNKNOWN);
		assert_true((size_t)t < VOCAB_N_TYPES);
		assert_false(seen[t]);
		seen[t] = true;
		assert_string_equal(vocab_type_name(t), types[i].type);
		assert_int_equal(vocab_find(types[i].type)->id, t);
	}
	for (size_t t = 0; t < VOCAB_N_TYPES; t++) {
		const char *name = vocab_type_name((enum vocab_type)t);
		assert_non_null(name);
		assert_int_equal(vocab_type_of(name), t);
	}
	assert_null(vocab_type_name(VT_UNKNOWN));
	static const char *const unknown[] = {"future/thing", "", "Turn/Start", "turn/start ",
					      "turn", "tool/results", "session/header/x"};
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		assert_int_equal(vocab_type_of(unknown[i]), VT_UNKNOWN);
		assert_null(vocab_find(unknown[i]));
	}
}

static void test_max_length_line_parses_and_one_byte_more_is_corrupt(void **state)
{
	(void)state;
	const char *pre = "{\"seq\":1,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"";
	const char *post = "\"}}";
	size_t fixed = strlen(pre) + strlen(post);
	char *s = malloc(EVENT_MAX_LINE + 2);
	assert_non_null(s);
	for (size_t total = EVENT_MAX_LINE; total <= EVENT_MAX_LINE + 1; total++) {
		size_t pad = total - fixed;
		memcpy(s, pre, strlen(pre));
		memset(s + strlen(pre), 'a', pad);
		memcpy(s + strlen(pre) + pad, post, strlen(post));
		s[total] = '\0';
		assert_int_equal(strlen(s), total);
		struct event ev;
		struct cerr e;
		int r = event_parse(s, total, 1, &ev, &e);
		if (total == EVENT_MAX_LINE) {
			assert_int_equal(r, 0);
			assert_int_equal(strlen(cJSON_GetObjectItem(ev.data, "text")->valuestring), pad);
			event_release(&ev);
		} else {
			assert_int_equal(r, -1);
			assert_int_equal(e.cls, CERR_CORRUPT);
		}
	}
	free(s);
}

static void test_members_parse_in_any_order(void **state)
{
	(void)state;
	static const char *const orders[] = {
		"{\"data\":{\"text\":\"hi\"},\"turn\":\"t1\",\"type\":\"user/message\",\"t\":42,\"seq\":3}",
		"{\"type\":\"user/message\",\"seq\":3,\"data\":{\"text\":\"hi\"},\"t\":42,\"turn\":\"t1\"}",
		"{\"t\":42,\"turn\":\"t1\",\"seq\":3,\"data\":{\"text\":\"hi\"},\"type\":\"user/message\"}",
		" { \"seq\" : 3 , \"t\" : 42 , \"type\" : \"user/message\" , \"turn\" : \"t1\" , "
		"\"data\" : { \"text\" : \"hi\" } } ",
	};
	for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
		struct event ev;
		struct cerr e;
		if (parse(orders[i], 3, &ev, &e) < 0)
			fail_msg("rejected (%s): %s", e.msg, orders[i]);
		assert_int_equal(ev.seq, 3);
		assert_int_equal(ev.t, 42);
		assert_string_equal(ev.type, "user/message");
		assert_string_equal(ev.turn, "t1");
		assert_string_equal(cJSON_GetObjectItem(ev.data, "text")->valuestring, "hi");
		/* formatting gives the one canonical line */
		struct buf b = BUF_INIT;
		event_format(&b, ev.seq, ev.t, ev.type, ev.turn, ev.ignorable, ev.data);
		assert_string_equal(b.p, "{\"seq\":3,\"t\":42,\"type\":\"user/message\",\"turn\":\"t1\","
					 "\"data\":{\"text\":\"hi\"}}\n");
		buf_release(&b);
		event_release(&ev);
	}
}

/* Structural equality with numbers compared exactly (cJSON_Compare
 * tolerates a relative error). */
static bool json_same(const cJSON *a, const cJSON *b)
{
	if ((a->type & 0xFF) != (b->type & 0xFF))
		return false;
	if (cJSON_IsNumber(a))
		return a->valuedouble == b->valuedouble;
	if (cJSON_IsString(a))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsArray(a) || cJSON_IsObject(a)) {
		const cJSON *x = a->child, *y = b->child;
		for (; x && y; x = x->next, y = y->next) {
			if (cJSON_IsObject(a) && strcmp(x->string, y->string) != 0)
				return false;
			if (!json_same(x, y))
				return false;
		}
		return !x && !y;
	}
	return true;
}

/* Format, check the canonical prefix, parse back and compare. */
static void format_roundtrip(uint64_t seq, int64_t t, const char *type, const char *turn,
			     bool ignorable, const char *data_json)
{
	cJSON *data = NULL;
	if (data_json) {
		const char *why;
		data = json_parse_strict(data_json, strlen(data_json), &why);
		assert_non_null(data);
	}
	struct buf b = BUF_INIT;
	event_format(&b, seq, t, type, turn, ignorable, data);
	assert_true(b.len > 0);
	assert_int_equal(b.p[b.len - 1], '\n');
	assert_null(memchr(b.p, '\n', b.len - 1)); /* exactly one line */

	struct buf want = BUF_INIT;
	buf_printf(&want, "{\"seq\":%llu,\"t\":%lld,\"type\":", (unsigned long long)seq,
		   (long long)t);
	buf_add_json_string(&want, type);
	if (turn) {
		buf_adds(&want, ",\"turn\":");
		buf_add_json_string(&want, turn);
	}
	if (ignorable)
		buf_adds(&want, ",\"ignorable\":true");
	buf_adds(&want, ",\"data\":");
	assert_true(b.len > want.len);
	assert_memory_equal(b.p, want.p, want.len);

	struct event ev;
	struct cerr e;
	if (event_parse(b.p, b.len - 1, seq, &ev, &e) < 0)
		fail_msg("formatted line rejected (%s): %s", e.msg, b.p);
	assert_int_equal(ev.seq, seq);
	assert_int_equal(ev.t, t);
	assert_string_equal(ev.type, type);
	if (turn)
		assert_string_equal(ev.turn, turn);
	else
		assert_null(ev.turn);
	assert_int_equal(ev.ignorable, ignorable);
	char *got = json_print(ev.data);
	char *exp = data ? json_print(data) : NULL;
	assert_string_equal(got, exp ? exp : "{}");
	if (data && !json_same(ev.data, data))
		fail_msg("data changed by formatting: %s", b.p);
	/* canonical order: seq, t, type, turn, ignorable, data */
	static const char *const order[] = {"seq", "t", "type", "turn", "ignorable", "data"};
	size_t k = 0;
	for (const cJSON *c = ev.root->child; c; c = c->next) {
		while (k < 6 && strcmp(order[k], c->string) != 0)
			k++;
		if (k == 6)
			fail_msg("key '%s' out of canonical order in %s", c->string, b.p);
	}
	/* formatting the parsed event again gives the same bytes */
	struct buf again = BUF_INIT;
	event_format(&again, ev.seq, ev.t, ev.type, ev.turn, ev.ignorable, ev.data);
	assert_string_equal(again.p, b.p);
	free(got);
	free(exp);
	buf_release(&again);
	event_release(&ev);
	buf_release(&want);
	buf_release(&b);
	cJSON_Delete(data);
}

static void test_formatted_event_parses_back_to_itself(void **state)
{
	(void)state;
	format_roundtrip(0, 1700000000000LL, "session/header", NULL, false,
			 "{\"format\":1,\"id\":\"01ARYZ6S41TSV4RRFFQ69G5FAV\",\"created_at\":1,"
			 "\"cwd\":\"/home/a b\"}");
	format_roundtrip(1, 0, "turn/start", "t1", false, NULL);
	format_roundtrip(2, 5, "user/message", "t1", false,
			 "{\"text\":\"quote \\\" back \\\\ nl \\n tab \\t ctl \\u0001 caf\xC3\xA9 "
			 "\xF0\x9F\x98\x80\"}");
	format_roundtrip(3, 6, "tool/call", "t \"odd\" \\ turn", false,
			 "{\"call_id\":\"c1\",\"name\":\"sh\",\"args\":{\"argv\":[\"ls\",\"-l\"],"
			 "\"n\":[1,-2,0.5,true,false,null]}}");
	format_roundtrip(4, 7, "tool/result", "t1", false,
			 "{\"call_id\":\"c1\",\"status\":\"not_executed\",\"source_seqs\":[3],"
			 "\"synthetic\":true,\"exit_code\":-1}");
	format_roundtrip(5, 8, "turn/end", "t1", false,
			 "{\"outcome\":\"interrupted\",\"usage\":{\"in\":10,\"out\":20}}");
	format_roundtrip(6, 9, "future/thing", NULL, true, "{\"x\":{}}");
	format_roundtrip(7, 9, "assistant/text", NULL, true, "{\"text\":\"\"}");
	format_roundtrip(9007199254740991ull, 9007199254740991LL, "session/meta", NULL, false,
			 "{\"title\":null,\"pinned\":true}");
}

/* Integers up to 2^53-1 are exact in the format; a formatted event must
 * carry them unchanged. */
static void test_format_keeps_large_integers(void **state)
{
	(void)state;
	format_roundtrip(4, 7, "tool/result", "t1", false,
			 "{\"call_id\":\"c1\",\"status\":\"ok\",\"source_seqs\":[9007199254740991,"
			 "9007199254740990,1234567890123456],\"exit_code\":-9007199254740991}");
	const char *s = "{\"source_seqs\":[9007199254740991]}";
	const char *why;
	cJSON *d = json_parse_strict(s, strlen(s), &why);
	struct buf b = BUF_INIT;
	event_format(&b, 4, 7, "tool/result", "t1", false, d);
	assert_non_null(strstr(b.p, "[9007199254740991]"));
	buf_release(&b);
	cJSON_Delete(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_vocabulary_type_parses_with_its_data),
		cmocka_unit_test(test_turn_is_required_where_the_vocabulary_says),
		cmocka_unit_test(test_envelope_errors_are_corrupt),
		cmocka_unit_test(test_missing_or_mistyped_data_fields_are_corrupt),
		cmocka_unit_test(test_unknown_type_is_unsupported_unless_ignorable),
		cmocka_unit_test(test_type_enum_round_trips_every_vocabulary_name),
		cmocka_unit_test(test_max_length_line_parses_and_one_byte_more_is_corrupt),
		cmocka_unit_test(test_members_parse_in_any_order),
		cmocka_unit_test(test_formatted_event_parses_back_to_itself),
		cmocka_unit_test(test_format_keeps_large_integers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
