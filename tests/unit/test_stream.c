/* test_stream.c — the decoders' contract whatever a server sends: recorded
 * payloads of both wire formats, mutated (bytes flipped, cut, lone
 * surrogate and NUL escapes, raw invalid bytes spliced in) and fed in
 * random order. Every text emitted is valid UTF-8 of the length given,
 * nothing follows an error or the closing event, a reply finishes at most
 * once, every tool call started is ended before FINISH, and a closed
 * stream's last event was DONE or FINISH. Which events are content (the
 * progress a reply's timeouts wait for): text, reasoning, tool calls;
 * never a role chunk, a ping, usage or the finish. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "engine/stream.h"

static const char *const openai[] = {
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello \\ud83d\\ude00\"},\"finish_reason\":null}],\"usage\":null}",
	"{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"th\\u00e9\"}}]}",
	"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"shell\",\"arguments\":\"{\\\"c\\\":\"}}]}}]}",
	"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"1}\"}}]}}]}",
	"{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}",
	"{\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}",
	"{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}",
	"[DONE]",
};

static const char *const anthropic[] = {
	"{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}",
	"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}",
	"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm \\ud83d\"}}",
	"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2ln\"}}",
	"{\"type\":\"content_block_stop\",\"index\":0}",
	"{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read\",\"input\":{}}}",
	"{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"p\\\":\\\"\\ude00\\\"}\"}}",
	"{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"x\\u0000y\"}}",
	"{\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}",
	"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}",
	"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
	"{\"type\":\"message_stop\"}",
};

static uint32_t rng = 99;
static uint32_t next_rand(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

struct check {
	bool ended;  /* ERROR or DONE seen */
	bool finished;
	size_t started, stopped;
	enum stream_kind last;
	size_t events;
};

static void check_cb(void *arg, const struct stream_event *ev)
{
	struct check *c = arg;
	assert_false(c->ended);
	c->events++;
	c->last = ev->kind;
	if (ev->text) {
		assert_int_equal(strlen(ev->text), ev->len);
		if (!utf8_valid(ev->text, ev->len, NULL))
			fail_msg("kind %d text invalid: %s", ev->kind, ev->text);
	}
	if (ev->id)
		assert_true(utf8_valid(ev->id, strlen(ev->id), NULL) && *ev->id);
	if (ev->name)
		assert_true(utf8_valid(ev->name, strlen(ev->name), NULL));
	if (ev->error_type)
		assert_true(utf8_valid(ev->error_type, strlen(ev->error_type), NULL));
	switch (ev->kind) {
	case STREAM_TOOL_START: assert_false(c->finished); c->started++; break;
	case STREAM_TOOL_END: c->stopped++; break;
	case STREAM_FINISH:
		assert_false(c->finished);
		assert_int_equal(c->started, c->stopped);
		c->finished = true;
		break;
	case STREAM_ERROR:
	case STREAM_DONE: c->ended = true; break;
	case STREAM_TEXT:
	case STREAM_REASONING:
	case STREAM_REASONING_END:
	case STREAM_REDACTED:
	case STREAM_TOOL_ARGS:
		assert_false(c->finished);
		break;
	case STREAM_USAGE: assert_non_null(ev->usage); break;
	}
}

static char *mutate(const char *src, size_t *n)
{
	static const char *const splices[] = {"\\ud83d", "\\ude00", "\\u0000", "\xff", "\xed\xa0\x80",
					      "\xe2\x82", "\"", "\\", "{", "}", "[DONE]"};
	struct buf b = BUF_INIT;
	buf_adds(&b, src);
	switch (next_rand() % 5) {
	case 0: /* as recorded */
		break;
	case 1: /* cut */
		b.len = next_rand() % (b.len + 1);
		break;
	case 2: /* a byte flipped */
		if (b.len)
			b.p[next_rand() % b.len] ^= (char)(1u << (next_rand() % 8));
		break;
	default: { /* something spliced in */
		const char *s = splices[next_rand() % (sizeof splices / sizeof splices[0])];
		size_t at = b.len ? next_rand() % b.len : 0, k = strlen(s);
		buf_grow(&b, k);
		memmove(b.p + at + k, b.p + at, b.len - at);
		memcpy(b.p + at, s, k);
		b.len += k;
	}
	}
	return buf_detach(&b, n);
}

static void run(enum provider_kind kind, const char *const *corpus, size_t m)
{
	for (int round = 0; round < 3000; round++) {
		struct check c = {0};
		struct stream_decoder *d = stream_decoder_new(kind, check_cb, &c);
		size_t events = 1 + next_rand() % 12;
		for (size_t i = 0; i < events; i++) {
			/* Mostly in recorded order, sometimes any payload. */
			size_t pick = next_rand() % 4 ? i % m : next_rand() % m;
			size_t n;
			char *p = mutate(corpus[pick], &n);
			stream_decoder_feed(d, next_rand() % 2 ? NULL : "message", p, n);
			free(p);
		}
		if (stream_decoder_closed(d))
			assert_true(c.last == STREAM_DONE || c.finished);
		if (stream_decoder_failed(d))
			assert_true(c.ended && c.last == STREAM_ERROR);
		stream_decoder_free(d);
	}
}

static void test_openai_decoder_keeps_its_contract_on_mutated_input(void **state)
{
	run(PROVIDER_OPENAI, openai, sizeof openai / sizeof openai[0]);
}

static void test_anthropic_decoder_keeps_its_contract_on_mutated_input(void **state)
{
	run(PROVIDER_ANTHROPIC, anthropic, sizeof anthropic / sizeof anthropic[0]);
}

/* Which events are content: of each SSE event fed, the kinds that count. */
struct kinds {
	char seen[256];
};

static void note_kind(void *arg, const struct stream_event *ev)
{
	struct kinds *k = arg;
	size_t n = strlen(k->seen);
	if (n + 2 < sizeof k->seen) {
		k->seen[n] = stream_event_content(ev) ? 'C' : '-';
		k->seen[n + 1] = '\0';
	}
}

/* Feed events (name, data pairs, ended by a NULL data) and say, per event, the
 * content marks ('C' content, '-' not) it emitted, '|' between events. */
static void content_marks(enum provider_kind kind, const char *const *evs, char *out, size_t cap)
{
	struct kinds k = {""};
	struct stream_decoder *d = stream_decoder_new(kind, note_kind, &k);
	out[0] = '\0';
	for (size_t i = 0; evs[i + 1]; i += 2) {
		k.seen[0] = '\0';
		stream_decoder_feed(d, evs[i], evs[i + 1], strlen(evs[i + 1]));
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "|" : "", k.seen);
	}
	stream_decoder_free(d);
}

static void test_content_is_text_reasoning_or_tool_calls(void **state)
{
	static const char *const oa_events[] = {
		NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}",
		NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hm\"}}]}",
		NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}",
		NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\","
		      "\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}",
		NULL, "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
		      "\"function\":{\"arguments\":\"{}\"}}]}}]}",
		NULL, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}",
		NULL, "{\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}",
		NULL, "[DONE]",
		NULL, NULL,
	};
	char got[256];
	content_marks(PROVIDER_OPENAI, oa_events, got, sizeof got);
	/* the role chunk: nothing; reasoning; text; a tool call's start, its
	 * arguments; the finish (the call's end, the finish); usage; done */
	assert_string_equal(got, "|C|C|C|C|--|-|-");
	static const char *const an_events[] = {
		"message_start", "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}",
		"ping", "{\"type\":\"ping\"}",
		"content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
				       "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}",
		"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,"
				       "\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"so\"}}",
		"content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}",
		"content_block_start", "{\"type\":\"content_block_start\",\"index\":1,"
				       "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
		"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,"
				       "\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}",
		"message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
				 "\"usage\":{\"output_tokens\":2}}",
		"message_stop", "{\"type\":\"message_stop\"}",
		NULL, NULL,
	};
	content_marks(PROVIDER_ANTHROPIC, an_events, got, sizeof got);
	/* usage; a ping: nothing; an empty block start: nothing; reasoning;
	 * its end (the signature); nothing; text; usage, finish; done */
	assert_string_equal(got, "-|||C|C||C|--|-");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_decoder_keeps_its_contract_on_mutated_input),
		cmocka_unit_test(test_anthropic_decoder_keeps_its_contract_on_mutated_input),
		cmocka_unit_test(test_content_is_text_reasoning_or_tool_calls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
