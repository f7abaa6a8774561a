/* test_provider_anthropic.c — Messages: the exact request body for a
 * conversation with every kind of part (thinking sent back with its
 * signature, redacted thinking verbatim, an unsigned block never, an
 * interrupted answer's text sent, an empty assistant message omitted and
 * the user messages around it merged, a cut-off call replayed as {}),
 * URL, headers and the max_tokens table; the decoder fed an event
 * sequence as the API sends it (thinking, signature, text, tool_use with
 * partial JSON, usage, stop reason), redacted thinking, a tool call cut
 * by max_tokens, error events, a stream without message_stop; and the
 * round trip: what the decoder emits, captured as events, comes back in
 * the next request unchanged. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/provider.h"
#include "engine/textfix.h"
#include "tests/unit/support_stream.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_request_body_has_model_system_tools_and_messages(void **state)
{
	cJSON *tools = cJSON_Parse("[{\"name\":\"shell\",\"description\":\"Run a command\",\"parameters\":"
				   "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}},"
				   "{\"name\":\"now\"}]");
	struct provider_params p = {.model = "claude-sonnet-4-5", .base_url = "https://api.anthropic.com/",
				    .api_key = "sk-ant-test", .system = "Be brief.", .tools = tools};
	struct context *c = support_context(support_conversation);
	size_t n;
	const struct ctx_message *m = context_messages(c, NULL, &n);
	struct provider_request rq = PROVIDER_REQUEST_INIT;
	struct cerr err;
	assert_int_equal(provider_build(PROVIDER_ANTHROPIC, &p, m, n, &rq, &err), 0);
	assert_string_equal(rq.url, "https://api.anthropic.com/v1/messages");
	assert_string_equal(provider_header(&rq, "x-api-key"), "x-api-key: sk-ant-test");
	assert_string_equal(provider_header(&rq, "anthropic-version"), "anthropic-version: 2023-06-01");
	assert_null(provider_header(&rq, "Authorization"));
	assert_string_equal(rq.body,
		"{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":64000,\"system\":\"Be brief.\",\"messages\":["
		"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is in this directory?\"}]},"
		"{\"role\":\"assistant\",\"content\":["
		"{\"type\":\"thinking\",\"thinking\":\"The user wants a listing.\",\"signature\":\"sig-1\"},"
		"{\"type\":\"redacted_thinking\",\"data\":\"opaque==\"},"
		"{\"type\":\"text\",\"text\":\"Let me look.\"},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"shell\",\"input\":{\"command\":\"ls\"}}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_01\",\"content\":\"a.txt\\nb.txt\\n\"}]},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"There are two files.\"}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Write a long poem.\"}]},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Roses are\"}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Are you there?\"},{\"type\":\"text\",\"text\":\"Run it again.\"}]},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"call_9\",\"name\":\"shell\",\"input\":{}}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"call_9\",\"content\":\"[not_executed] cut off\",\"is_error\":true},"
		"{\"type\":\"text\",\"text\":\"Thanks.\"}]}],"
		"\"tools\":[{\"name\":\"shell\",\"description\":\"Run a command\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}},"
		"{\"name\":\"now\",\"input_schema\":{\"type\":\"object\"}}],"
		"\"stream\":true}");
	provider_request_release(&rq);
	/* No key (a proxy that adds it): no x-api-key; no tools: no "tools";
	 * an id another provider made is mapped to the allowed characters. */
	static const char *const lines[] = {
		"{\"type\":\"user/message\",\"data\":{\"text\":\"hi\"}}",
		"{\"type\":\"tool/call\",\"turn\":\"x\",\"data\":{\"call_id\":\"fc.1:a\",\"name\":\"now\",\"args\":{}}}",
		"{\"type\":\"tool/result\",\"turn\":\"x\",\"data\":{\"call_id\":\"fc.1:a\",\"status\":\"ok\",\"output\":\"noon\"}}",
		NULL,
	};
	context_free(c);
	c = support_context(lines);
	m = context_messages(c, NULL, &n);
	p = (struct provider_params){.model = "claude-3-5-haiku-20241022", .base_url = "http://127.0.0.1:9"};
	assert_int_equal(provider_build(PROVIDER_ANTHROPIC, &p, m, n, &rq, &err), 0);
	assert_null(provider_header(&rq, "x-api-key"));
	assert_string_equal(rq.body,
		"{\"model\":\"claude-3-5-haiku-20241022\",\"max_tokens\":8192,\"messages\":["
		"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"fc_1_a\",\"name\":\"now\",\"input\":{}}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"fc_1_a\",\"content\":\"noon\"}]}],"
		"\"stream\":true}");
	provider_request_release(&rq);
	context_free(c);
	cJSON_Delete(tools);
}

static void test_max_tokens_per_model_with_a_default(void **state)
{
	assert_int_equal(provider_anthropic_max_tokens("claude-opus-4-1-20250805"), 32000);
	assert_int_equal(provider_anthropic_max_tokens("claude-opus-4-5"), 64000);
	assert_int_equal(provider_anthropic_max_tokens("claude-sonnet-4-20250514"), 64000);
	assert_int_equal(provider_anthropic_max_tokens("claude-3-haiku-20240307"), 4096);
	assert_int_equal(provider_anthropic_max_tokens("claude-3-5-sonnet-latest"), 8192);
	assert_int_equal(provider_anthropic_max_tokens("some-future-model"), 8192);
}

static void expect_decode(const struct sse *ev, size_t n, const char *want)
{
	char *got = support_decode(PROVIDER_ANTHROPIC, ev, n);
	if (strcmp(got, want) != 0)
		fail_msg("got  %s\nwant %s", got, want);
	free(got);
}

/* A reply with thinking, text and a tool call, as the API streams it. */
static const struct sse full[] = {
	{"message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"usage\":{\"input_tokens\":120,\"cache_creation_input_tokens\":10,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}"},
	{"content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}"},
	{"ping", "{\"type\":\"ping\"}"},
	{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me \"}}"},
	{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"list.\"}}"},
	{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAh==\"}}"},
	{"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}"},
	{"content_block_start", "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"},
	{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Looking.\"}}"},
	{"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":1}"},
	{"content_block_start", "{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"shell\",\"input\":{}}}"},
	{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}"},
	{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \\\"l\"}}"},
	{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"s\\\"}\"}}"},
	{"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":2}"},
	{"message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":89}}"},
	{"message_stop", "{\"type\":\"message_stop\"}"},
};

static void test_decoded_stream_is_whole_only_after_message_stop(void **state)
{
	expect_decode(full, N(full),
		      "U(120,1,100,10,-1) R(Let me ) R(list.) RE(EqQBCgIYAh==) T(Looking.) TS(toolu_9,shell) "
		      "TA(toolu_9,{\"command\": \"l) TA(toolu_9,s\"}) U(120,89,100,10,-1) "
		      "TE(toolu_9,shell,{\"command\": \"ls\"}) F(tool_calls,tool_use) D|closed");
	/* Without message_stop the reply is not known to be whole. */
	expect_decode(full, N(full) - 1,
		      "U(120,1,100,10,-1) R(Let me ) R(list.) RE(EqQBCgIYAh==) T(Looking.) TS(toolu_9,shell) "
		      "TA(toolu_9,{\"command\": \"l) TA(toolu_9,s\"}) U(120,89,100,10,-1) "
		      "TE(toolu_9,shell,{\"command\": \"ls\"}) F(tool_calls,tool_use)|open");
}

static void test_decode_redacted_and_cut(void **state)
{
	static const struct sse ev[] = {
		{"message_start", "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}"},
		{"content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va==\"}}"},
		{"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}"},
		{"content_block_start", "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"write\",\"input\":{}}}"},
		{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}"},
		{"message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":4096}}"},
		{"message_stop", "{\"type\":\"message_stop\"}"},
	};
	expect_decode(ev, N(ev),
		      "U(5,1,-1,-1,-1) X(EmwKAhgBEgy3va==) TS(toolu_2,write) TA(toolu_2,{\"path\": \"a) "
		      "U(5,4096,-1,-1,-1) TE(toolu_2,write,{\"path\": \"a,incomplete) F(length,max_tokens) D|closed");
	/* Even whole arguments are not trusted when max_tokens cut the reply
	 * right after them. */
	static const struct sse whole[] = {
		{NULL, ev[3].data},
		{NULL, "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}"},
		{NULL, "{\"type\":\"content_block_stop\",\"index\":1}"},
		{NULL, ev[5].data},
	};
	expect_decode(whole, N(whole),
		      "TS(toolu_2,write) TA(toolu_2,{}) U(-1,4096,-1,-1,-1) TE(toolu_2,write,{},incomplete) F(length,max_tokens)|open");
	/* A thinking block cut before its signature ends unsigned. */
	static const struct sse unsigned_block[] = {
		{NULL, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}"},
		{NULL, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}"},
		{NULL, "{\"type\":\"content_block_stop\",\"index\":0}"},
	};
	expect_decode(unsigned_block, N(unsigned_block), "R(hm) RE()|open");
}

/* A reply cut short (a cancel, a broken connection) ends the calls it
 * began, incomplete with their partial arguments; one never announced
 * (after an error) is not invented; after the finish a cut adds nothing. */
static void test_cut_reply_ends_its_begun_calls_incomplete(void **state)
{
	(void)state;
	static const struct sse ev[] = {
		{NULL, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_3\",\"name\":\"shell\",\"input\":{}}}"},
		{NULL, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \\\"rm\"}}"},
		{SSE_CUT, ""},
		{SSE_CUT, ""},
	};
	expect_decode(ev, N(ev),
		      "TS(toolu_3,shell) TA(toolu_3,{\"command\": \"rm) "
		      "TE(toolu_3,shell,{\"command\": \"rm,incomplete)|open");
	static const struct sse after_error[] = {
		ev[0], ev[1],
		{NULL, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}"},
		{NULL, "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_4\",\"name\":\"shell\",\"input\":{}}}"},
		{SSE_CUT, ""},
	};
	expect_decode(after_error, N(after_error),
		      "TS(toolu_3,shell) TA(toolu_3,{\"command\": \"rm) E(overloaded_error,busy) "
		      "TE(toolu_3,shell,{\"command\": \"rm,incomplete)|open");
	static const struct sse finished[] = {
		ev[0],
		{NULL, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}"},
		{NULL, "{\"type\":\"content_block_stop\",\"index\":0}"},
		{NULL, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}"},
		{SSE_CUT, ""},
	};
	expect_decode(finished, N(finished),
		      "TS(toolu_3,shell) TA(toolu_3,{}) U(-1,9,-1,-1,-1) TE(toolu_3,shell,{}) F(tool_calls,tool_use)|open");
}

static void test_error_event_ends_the_reply_as_a_provider_error(void **state)
{
	static const struct sse ev[] = {
		{"content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"},
		{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hal\"}}"},
		{"error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"},
		{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"never\"}}"},
		{"message_stop", "{\"type\":\"message_stop\"}"},
	};
	expect_decode(ev, N(ev), "T(Hal) E(overloaded_error,Overloaded)|open");
	/* A proxy that drops the type from the data: the event name decides. */
	static const struct sse named[] = {
		{"message_stop", "{}"},
	};
	expect_decode(named, N(named), "F(stop,) D|closed");
	static const struct sse junk[] = {{"content_block_delta", "not json"}};
	expect_decode(junk, N(junk), "E(malformed,the server sent an event that is not a JSON object)|open");
}

/* ---- round trip: stream events captured as log events, then sent ---- */

struct capture {
	struct context *ctx;
	struct buf text, reasoning;
};

static void add(struct capture *c, enum vocab_type t, cJSON *data)
{
	struct cerr err;
	assert_int_equal(context_add(c->ctx, t, "t1", data, &err), 0);
	cJSON_Delete(data);
}

/* What a runner writes for each stream event (pieces as they come). */
static void capture_cb(void *arg, const struct stream_event *ev)
{
	struct capture *c = arg;
	cJSON *d = cJSON_CreateObject();
	switch (ev->kind) {
	case STREAM_TEXT:
		cJSON_AddStringToObject(d, "text", ev->text);
		add(c, VT_ASSISTANT_TEXT, d);
		return;
	case STREAM_REASONING:
		cJSON_AddStringToObject(d, "text", ev->text);
		add(c, VT_ASSISTANT_REASONING, d);
		return;
	case STREAM_REASONING_END:
		cJSON_AddStringToObject(d, "text", "");
		if (ev->text)
			cJSON_AddStringToObject(d, "signature", ev->text);
		add(c, VT_ASSISTANT_REASONING, d);
		return;
	case STREAM_TOOL_END:
		cJSON_AddStringToObject(d, "call_id", ev->id);
		cJSON_AddStringToObject(d, "name", ev->name);
		cJSON_AddItemToObject(d, "args", cJSON_Parse(ev->text));
		add(c, VT_TOOL_CALL, d);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "call_id", ev->id);
		cJSON_AddStringToObject(d, "status", "ok");
		cJSON_AddStringToObject(d, "output", "x");
		add(c, VT_TOOL_RESULT, d);
		return;
	default:
		cJSON_Delete(d);
		return;
	}
}

static void test_decoded_reply_goes_back_with_signature_and_tool_use(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{}}",
		"{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"ls please\"}}",
		NULL,
	};
	struct capture cap = {.ctx = support_context(lines)};
	struct stream_decoder *d = stream_decoder_new(PROVIDER_ANTHROPIC, capture_cb, &cap);
	for (size_t i = 0; i < N(full); i++)
		stream_decoder_feed(d, full[i].name, full[i].data, strlen(full[i].data));
	assert_true(stream_decoder_closed(d));
	stream_decoder_free(d);
	size_t n;
	const struct ctx_message *m = context_messages(cap.ctx, NULL, &n);
	struct provider_params p = {.model = "claude-opus-4-1", .base_url = "https://h", .max_tokens = 1000};
	struct provider_request rq = PROVIDER_REQUEST_INIT;
	struct cerr err;
	assert_int_equal(provider_build(PROVIDER_ANTHROPIC, &p, m, n, &rq, &err), 0);
	assert_string_equal(rq.body,
		"{\"model\":\"claude-opus-4-1\",\"max_tokens\":1000,\"messages\":["
		"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"ls please\"}]},"
		"{\"role\":\"assistant\",\"content\":["
		"{\"type\":\"thinking\",\"thinking\":\"Let me list.\",\"signature\":\"EqQBCgIYAh==\"},"
		"{\"type\":\"text\",\"text\":\"Looking.\"},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"shell\",\"input\":{\"command\":\"ls\"}}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_9\",\"content\":\"x\"}]}],"
		"\"stream\":true}");
	provider_request_release(&rq);
	context_free(cap.ctx);
}

/* Nothing a reply says may be too long for the log: a signature that grows
 * past one event over many deltas is dropped (the block unsigned), as is
 * redacted data too long for one event; a tool id longer than any id is
 * replaced by one made up, a name longer than any name cut. */
static void test_fields_too_long_for_the_log_are_bounded(void **state)
{
	(void)state;
	size_t piece = 400000;
	char *sig = malloc(piece + 1), *big = malloc(TEXTFIX_PIECE_MAX + 2);
	memset(sig, 'S', piece);
	sig[piece] = '\0';
	memset(big, 'R', TEXTFIX_PIECE_MAX + 1);
	big[TEXTFIX_PIECE_MAX + 1] = '\0';
	char *long_id = malloc(STREAM_ID_MAX + 2);
	memset(long_id, 'i', STREAM_ID_MAX + 1);
	long_id[STREAM_ID_MAX + 1] = '\0';
	struct buf b[6] = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
	buf_printf(&b[0], "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
		   "\"signature_delta\",\"signature\":\"%s\"}}", sig);
	buf_printf(&b[1], "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":"
		   "{\"type\":\"redacted_thinking\",\"data\":\"%s\"}}", big);
	buf_printf(&b[2], "{\"type\":\"content_block_start\",\"index\":2,\"content_block\":"
		   "{\"type\":\"tool_use\",\"id\":\"%s\",\"name\":\"shell\",\"input\":{}}}", long_id);
	buf_printf(&b[3], "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":"
		   "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"%s\",\"input\":{}}}", long_id);
	const struct sse ev[] = {
		{"content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}"},
		{"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}"},
		{"content_block_delta", b[0].p},
		{"content_block_delta", b[0].p},
		{"content_block_delta", b[0].p},
		{"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}"},
		{"content_block_start", b[1].p},
		{"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":1}"},
		{"content_block_start", b[2].p},
		{"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":2}"},
		{"content_block_start", b[3].p},
		{"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":3}"},
		{"message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}"},
		{"message_stop", "{\"type\":\"message_stop\"}"},
	};
	char *name = xstrdup(long_id);
	name[STREAM_ID_MAX] = '\0';
	char *want = xasprintf("R(hm) RE() TS(call_*,shell) TS(toolu_2,%s) U(-1,9,-1,-1,-1) "
			       "TE(call_*,shell,{}) TE(toolu_2,%s,{}) F(tool_calls,tool_use) D|closed",
			       name, name);
	expect_decode(ev, N(ev), want);
	free(want);
	free(name);
	for (size_t i = 0; i < 6; i++)
		buf_release(&b[i]);
	free(long_id);
	free(big);
	free(sig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_body_has_model_system_tools_and_messages),
		cmocka_unit_test(test_max_tokens_per_model_with_a_default),
		cmocka_unit_test(test_decoded_stream_is_whole_only_after_message_stop),
		cmocka_unit_test(test_decode_redacted_and_cut),
		cmocka_unit_test(test_fields_too_long_for_the_log_are_bounded),
		cmocka_unit_test(test_cut_reply_ends_its_begun_calls_incomplete),
		cmocka_unit_test(test_error_event_ends_the_reply_as_a_provider_error),
		cmocka_unit_test(test_decoded_reply_goes_back_with_signature_and_tool_use),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
