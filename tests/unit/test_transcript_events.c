/* test_transcript_events.c — the chat screen's model (tui/transcript.h)
 * fed events by hand, without an engine: what it makes of the session's
 * own title and of a call whose arguments the log kept only as text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>

#include "tui/transcript.h"

/* The title: the session's own (session/meta), else its first prompt's as
 * the catalog makes it, known only when the log was fed from its start. */
static void test_transcript_title_is_its_own_or_the_first_prompts(void **state)
{
	(void)state;
	struct transcript_state st;
	cJSON *none = cJSON_CreateObject();
	cJSON *blob = cJSON_Parse("{\"blob\": {\"size\": 9000, \"sha256\": \"00\"}}");
	cJSON *first = cJSON_Parse("{\"text\": \"  hello\\n\\tfirst   prompt \"}");
	cJSON *second = cJSON_Parse("{\"text\": \"second prompt\"}");
	cJSON *own = cJSON_Parse("{\"title\": \"Its own\"}");
	cJSON *cleared = cJSON_Parse("{\"title\": null}");
	struct transcript *tr = transcript_new("s");
	transcript_state(tr, &st);
	assert_null(st.title);
	/* a prompt in a blob gives no words: the next prompt names it */
	transcript_apply_event(tr, VT_TURN_START, "t1", 2, 0, none);
	transcript_apply_event(tr, VT_USER_MESSAGE, "t1", 3, 0, blob);
	transcript_state(tr, &st);
	assert_null(st.title);
	transcript_apply_event(tr, VT_TURN_START, "t2", 4, 0, none);
	transcript_apply_event(tr, VT_USER_MESSAGE, "t2", 5, 0, first);
	transcript_state(tr, &st);
	assert_string_equal(st.title, "hello first prompt");
	transcript_apply_event(tr, VT_TURN_START, "t3", 6, 0, none);
	transcript_apply_event(tr, VT_USER_MESSAGE, "t3", 7, 0, second);
	transcript_state(tr, &st);
	assert_string_equal(st.title, "hello first prompt");
	transcript_apply_event(tr, VT_SESSION_META, NULL, 8, 0, own);
	transcript_state(tr, &st);
	assert_string_equal(st.title, "Its own");
	transcript_apply_event(tr, VT_SESSION_META, NULL, 9, 0, cleared);
	transcript_state(tr, &st);
	assert_string_equal(st.title, "hello first prompt");
	/* a model of the log's end only never takes a later prompt for the first */
	struct transcript *tail = transcript_new("s");
	transcript_begin_at(tail, 6);
	transcript_apply_event(tail, VT_TURN_START, "t3", 6, 0, none);
	transcript_apply_event(tail, VT_USER_MESSAGE, "t3", 7, 0, second);
	transcript_state(tail, &st);
	assert_null(st.title);
	/* ... and, paging earlier turns in, keeps what the whole log said */
	transcript_adopt_session(tail, tr);
	transcript_state(tail, &st);
	assert_string_equal(st.title, "hello first prompt");
	transcript_free(tail);
	transcript_free(tr);
	cJSON_Delete(none);
	cJSON_Delete(blob);
	cJSON_Delete(first);
	cJSON_Delete(second);
	cJSON_Delete(own);
	cJSON_Delete(cleared);
}

/* A call whose arguments the log kept only as text (args_raw, args {})
 * shows the text the model sent, as not valid: never "{}" as if it were
 * fine; with a blob, still not valid (the blob is that text). */
static void test_transcript_raw_tool_arguments_show_as_sent(void **state)
{
	(void)state;
	struct transcript *tr = transcript_new("S");
	cJSON *d = cJSON_CreateObject();
	uint64_t seq = 1;
	assert_true(transcript_apply_event(tr, VT_TURN_START, "t1", seq++, 0, d));
	cJSON_Delete(d);
	const char *const calls[] = {
		"{\"call_id\":\"t1.1\",\"name\":\"shell\",\"args\":{},"
		"\"args_raw\":\"{\\\"command\\\":\\\"a\\\",\\\"command\\\":\\\"b\\\"}\"}",
		"{\"call_id\":\"t1.2\",\"name\":\"shell\",\"args\":{},\"args_raw\":\"{\\\"x\\\":1e400 ...\","
		"\"blob\":{\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\","
		"\"size\":300000}}",
	};
	for (size_t i = 0; i < 2; i++) {
		d = cJSON_Parse(calls[i]);
		assert_non_null(d);
		assert_true(transcript_apply_event(tr, VT_TOOL_CALL, "t1", seq++, 0, d));
		cJSON_Delete(d);
	}
	const struct transcript_turn *t = transcript_turn(tr, 0);
	const struct transcript_tool *a = transcript_block_tool(transcript_turn_block(t, 0));
	const struct transcript_tool *b = transcript_block_tool(transcript_turn_block(t, 1));
	assert_int_equal(a->args_state, TR_ARGS_INVALID);
	assert_string_equal(a->args, "{\"command\":\"a\",\"command\":\"b\"}");
	assert_int_equal(b->args_state, TR_ARGS_INVALID);
	assert_string_equal(b->args, "{\"x\":1e400 ...");
	transcript_free(tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transcript_title_is_its_own_or_the_first_prompts),
		cmocka_unit_test(test_transcript_raw_tool_arguments_show_as_sent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
