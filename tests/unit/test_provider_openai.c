/* test_provider_openai.c — Chat Completions: the exact request body for a
 * conversation with every kind of part (reasoning never sent, an
 * interrupted answer's text sent, an empty assistant message omitted, a
 * cut-off call replayed as {}), URL and headers (no Authorization without
 * a key), tools omitted when empty; the decoder fed chunks as OpenAI,
 * Ollama, llama.cpp, vLLM and OpenRouter send them: usage null on every
 * chunk, errors inside the stream, finish_reason "stop" with tool calls,
 * tool-call deltas without index or id, [DONE] alone, reasoning fields,
 * a surrogate pair split across chunks; error bodies. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "engine/provider.h"
#include "tests/unit/support_stream.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char tools_json[] =
	"[{\"name\":\"shell\",\"description\":\"Run a command\",\"parameters\":{\"type\":\"object\","
	"\"properties\":{\"command\":{\"type\":\"string\"}},\"required\":[\"command\"]}}]";

static void build(const char *const *lines, const struct provider_params *p, struct provider_request *rq)
{
	struct context *c = support_context(lines);
	size_t n;
	const struct ctx_message *m = context_messages(c, NULL, &n);
	struct cerr err;
	assert_int_equal(provider_build(PROVIDER_OPENAI, p, m, n, rq, &err), 0);
	context_free(c);
}

static void test_request_body_has_model_system_tools_and_messages(void **state)
{
	cJSON *tools = cJSON_Parse(tools_json);
	struct provider_params p = {.model = "gpt-4.1", .base_url = "https://api.example.com/v1/",
				    .api_key = "sk-test", .system = "Be brief.", .tools = tools};
	struct provider_request rq = PROVIDER_REQUEST_INIT;
	build(support_conversation, &p, &rq);
	assert_string_equal(rq.url, "https://api.example.com/v1/chat/completions");
	assert_string_equal(provider_header(&rq, "authorization"), "Authorization: Bearer sk-test");
	assert_string_equal(provider_header(&rq, "Content-Type"), "Content-Type: application/json");
	assert_string_equal(rq.body,
		"{\"model\":\"gpt-4.1\",\"messages\":["
		"{\"role\":\"system\",\"content\":\"Be brief.\"},"
		"{\"role\":\"user\",\"content\":\"What is in this directory?\"},"
		"{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":[{\"id\":\"toolu_01\",\"type\":\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"toolu_01\",\"content\":\"a.txt\\nb.txt\\n\"},"
		"{\"role\":\"assistant\",\"content\":\"There are two files.\"},"
		"{\"role\":\"user\",\"content\":\"Write a long poem.\"},"
		"{\"role\":\"assistant\",\"content\":\"Roses are\"},"
		"{\"role\":\"user\",\"content\":\"Are you there?\"},"
		"{\"role\":\"user\",\"content\":\"Run it again.\"},"
		"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_9\",\"type\":\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"{}\"}}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"call_9\",\"content\":\"[not_executed] cut off\"},"
		"{\"role\":\"user\",\"content\":\"Thanks.\"}],"
		"\"stream\":true,\"stream_options\":{\"include_usage\":true},"
		"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"shell\",\"description\":\"Run a command\","
		"\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},\"required\":[\"command\"]}}}]}");
	assert_int_equal(rq.body_len, strlen(rq.body));
	provider_request_release(&rq);
	cJSON_Delete(tools);
}

/* A local server: no key, no Authorization header; no tools, no "tools";
 * no system prompt, no system message. */
static void test_absent_key_tools_system_are_left_out(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"user/message\",\"data\":{\"text\":\"hi\"}}",
		NULL,
	};
	cJSON *empty = cJSON_CreateArray();
	struct provider_params p = {.model = "llama3", .base_url = "http://127.0.0.1:11434/v1",
				    .api_key = "", .tools = empty};
	struct provider_request rq = PROVIDER_REQUEST_INIT;
	build(lines, &p, &rq);
	assert_string_equal(rq.url, "http://127.0.0.1:11434/v1/chat/completions");
	assert_null(provider_header(&rq, "Authorization"));
	assert_int_equal(rq.nheaders, 2);
	assert_null(rq.headers[rq.nheaders]);
	assert_string_equal(rq.body, "{\"model\":\"llama3\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
				     "\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
	provider_request_release(&rq);
	cJSON_Delete(empty);
	struct cerr err;
	p.model = NULL;
	assert_int_equal(provider_build(PROVIDER_OPENAI, &p, NULL, 0, &rq, &err), -1);
	assert_int_equal(err.cls, CERR_USAGE);
}

static void expect_decode(const struct sse *ev, size_t n, const char *want)
{
	char *got = support_decode(PROVIDER_OPENAI, ev, n);
	if (strcmp(got, want) != 0)
		fail_msg("got  %s\nwant %s", got, want);
	free(got);
}

/* OpenAI itself with include_usage: "usage": null on every chunk, then a
 * chunk with no choices and the usage, then [DONE]. */
static void test_text_and_usage_with_null_usage_chunks(void **state)
{
	static const struct sse ev[] = {
		{NULL, "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}"},
		{NULL, "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}],\"usage\":null}"},
		{NULL, "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":null}],\"usage\":null}"},
		{NULL, "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}"},
		{NULL, "{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,\"total_tokens\":14,"
		       "\"prompt_tokens_details\":{\"cached_tokens\":4},\"completion_tokens_details\":{\"reasoning_tokens\":0}}}"},
		{NULL, "[DONE]"},
	};
	expect_decode(ev, N(ev), "T(Hel) T(lo) F(stop,stop) U(12,2,4,-1,0) D|closed");
	/* A finish_reason closes the stream even when [DONE] never comes. */
	expect_decode(ev, 4, "T(Hel) T(lo) F(stop,stop)|closed");
	/* A stream cut before either is delivery unknown. */
	expect_decode(ev, 3, "T(Hel) T(lo)|open");
	/* [DONE] alone closes it too. */
	static const struct sse done[] = {{NULL, ev[1].data}, {NULL, " [DONE]\n"}};
	expect_decode(done, N(done), "T(Hel) F(stop,) D|closed");
}

/* An error object inside the stream (OpenRouter, vLLM): a provider error,
 * nothing after it; also the {"object":"error"} form and a bare string. */
static void test_error_object_in_stream_ends_the_reply(void **state)
{
	static const struct sse ev[] = {
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}"},
		{NULL, "{\"error\":{\"message\":\"Provider returned error\",\"code\":502,\"type\":\"upstream_error\"}}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"never\"}}]}"},
		{NULL, "[DONE]"},
	};
	expect_decode(ev, N(ev), "T(par) E(upstream_error,Provider returned error)|open");
	static const struct sse vllm[] = {
		{NULL, "{\"object\":\"error\",\"message\":\"max_tokens is too large\",\"type\":\"BadRequestError\",\"code\":400}"},
	};
	expect_decode(vllm, N(vllm), "E(BadRequestError,max_tokens is too large)|open");
	static const struct sse str[] = {{"error", "{\"error\":\"model not loaded\"}"}};
	expect_decode(str, N(str), "E(,model not loaded)|open");
	static const struct sse junk[] = {{NULL, "{\"choices\":["}, {NULL, "[DONE]"}};
	expect_decode(junk, N(junk), "E(malformed,the server sent an event that is not a JSON object)|open");
}

/* OpenAI's own tool-call deltas: index and id on the first, arguments in
 * pieces; two calls. */
static void test_tool_call_deltas_assemble_into_calls(void **state)
{
	static const struct sse ev[] = {
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"command\\\":\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"ls\\\"}\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"},
	};
	expect_decode(ev, N(ev),
		      "TS(call_a,shell) TA(call_a,{\"command\":) TA(call_a,\"ls\"}) TS(call_b,read) TA(call_b,{}) "
		      "TE(call_a,shell,{\"command\":\"ls\"}) TE(call_b,read,{}) F(tool_calls,tool_calls)|closed");
	/* Ollama and others say "stop" even with tool calls: still a tool step. */
	static const struct sse stop[] = {
		{NULL, ev[0].data}, {NULL, ev[1].data}, {NULL, ev[2].data},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}"},
	};
	expect_decode(stop, N(stop),
		      "TS(call_a,shell) TA(call_a,{\"command\":) TA(call_a,\"ls\"}) "
		      "TE(call_a,shell,{\"command\":\"ls\"}) F(tool_calls,stop)|closed");
	/* Cut by the output limit: the last call is never to be executed. */
	static const struct sse cut[] = {
		{NULL, ev[0].data}, {NULL, ev[1].data},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}"},
	};
	expect_decode(cut, N(cut),
		      "TS(call_a,shell) TA(call_a,{\"command\":) TE(call_a,shell,{\"command\":,incomplete) F(length,length)|closed");
}

/* Servers that send whole calls without index (Gemini's compatibility
 * layer, some llama.cpp builds), or without id. */
static void test_tool_calls_without_index_or_id(void **state)
{
	static const struct sse noindex[] = {
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"},
	};
	expect_decode(noindex, N(noindex),
		      "TS(a,shell) TA(a,{\"command\":\"ls\"}) TS(b,read) TA(b,{}) "
		      "TE(a,shell,{\"command\":\"ls\"}) TE(b,read,{}) F(tool_calls,tool_calls)|closed");
	/* Neither index nor id: a name starts a call, arguments continue the
	 * last one; ids are made up (unique: a ULID). */
	static const struct sse bare[] = {
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"shell\",\"arguments\":\"{\\\"command\\\"\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\":\\\"ls\\\"}\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}},{\"function\":{\"name\":\"list\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"},
	};
	expect_decode(bare, N(bare),
		      "TS(call_*,shell) TA(call_*,{\"command\") TA(call_*,:\"ls\"}) TS(call_*,read) TA(call_*,{}) TS(call_*,list) "
		      "TE(call_*,shell,{\"command\":\"ls\"}) TE(call_*,read,{}) TE(call_*,list,{}) F(tool_calls,tool_calls)|closed");
	/* An index but no id. */
	static const struct sse noid[] = {
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"shell\",\"arguments\":\"{}\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"},
	};
	expect_decode(noid, N(noid), "TS(call_*,shell) TA(call_*,{}) TE(call_*,shell,{}) F(tool_calls,tool_calls)|closed");
	/* The name after the id, in the next delta. */
	static const struct sse late[] = {
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\"}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"sh\xff\",\"arguments\":\"{}\"}}]}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"},
	};
	expect_decode(late, N(late), "TS(x,) TA(x,{}) TE(x,sh\xef\xbf\xbd,{}) F(tool_calls,tool_calls)|closed");
}

/* reasoning_content (DeepSeek, vLLM, llama.cpp) and reasoning (Ollama,
 * OpenRouter); a surrogate pair whose halves come in two chunks. */
static void test_reasoning_and_split_surrogate(void **state)
{
	static const struct sse ev[] = {
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"think\"}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"ing\"}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi \\ud83d\"}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\\ude00!\"}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\\ud83d\"}}]}"},
		{NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}"},
	};
	expect_decode(ev, N(ev), "R(think) R(ing) T(hi ) T(\xf0\x9f\x98\x80!) T(\xef\xbf\xbd) F(stop,stop)|closed");
}

static void test_error_body_gives_message_and_code(void **state)
{
	char *msg, *code;
	static const char quota[] = "{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"param\":null,\"code\":\"insufficient_quota\"}}";
	provider_error_body(quota, sizeof quota - 1, 429, &msg, &code);
	assert_string_equal(msg, "You exceeded your current quota");
	assert_string_equal(code, "insufficient_quota");
	free(msg);
	free(code);
	static const char anth[] = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";
	provider_error_body(anth, sizeof anth - 1, 529, &msg, &code);
	assert_string_equal(msg, "Overloaded");
	assert_string_equal(code, "overloaded_error");
	free(msg);
	free(code);
	static const char html[] = "<html>Bad Gateway</html>\n<body>";
	provider_error_body(html, sizeof html - 1, 502, &msg, &code);
	assert_string_equal(msg, "<html>Bad Gateway</html>");
	assert_null(code);
	free(msg);
	provider_error_body(NULL, 0, 404, &msg, &code);
	assert_string_equal(msg, "HTTP 404");
	free(msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_body_has_model_system_tools_and_messages),
		cmocka_unit_test(test_absent_key_tools_system_are_left_out),
		cmocka_unit_test(test_text_and_usage_with_null_usage_chunks),
		cmocka_unit_test(test_error_object_in_stream_ends_the_reply),
		cmocka_unit_test(test_tool_call_deltas_assemble_into_calls),
		cmocka_unit_test(test_tool_calls_without_index_or_id),
		cmocka_unit_test(test_reasoning_and_split_surrogate),
		cmocka_unit_test(test_error_body_gives_message_and_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
