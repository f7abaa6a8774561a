/* support_stream.c — see support_stream.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/ulid.h"
#include "tests/unit/support_stream.h"

struct context *support_context(const char *const *lines)
{
	struct context *c = context_new();
	for (; *lines; lines++) {
		cJSON *j = cJSON_Parse(*lines);
		if (!j)
			fail_msg("bad test line: %s", *lines);
		const cJSON *t = cJSON_GetObjectItem(j, "type"), *turn = cJSON_GetObjectItem(j, "turn");
		struct cerr err;
		if (context_add(c, vocab_type_of(t->valuestring), cJSON_IsString(turn) ? turn->valuestring : NULL,
				cJSON_GetObjectItem(j, "data"), &err) < 0)
			fail_msg("context_add: %s (%s)", err.msg, *lines);
		cJSON_Delete(j);
	}
	return c;
}

static void add_id(struct buf *b, const char *id)
{
	/* call_ and a ULID: made up by the decoder. */
	if (strncmp(id, "call_", 5) == 0 && strlen(id) == 5 + ULID_LEN)
		buf_adds(b, "call_*");
	else
		buf_adds(b, id);
}

static void record(void *arg, const struct stream_event *ev)
{
	struct buf *b = arg;
	if (b->len)
		buf_addc(b, ' ');
	switch (ev->kind) {
	case STREAM_TEXT: buf_printf(b, "T(%s)", ev->text); break;
	case STREAM_REASONING: buf_printf(b, "R(%s)", ev->text); break;
	case STREAM_REASONING_END: buf_printf(b, "RE(%s)", ev->text ? ev->text : ""); break;
	case STREAM_REDACTED: buf_printf(b, "X(%s)", ev->text); break;
	case STREAM_TOOL_START:
		buf_adds(b, "TS(");
		add_id(b, ev->id);
		buf_printf(b, ",%s)", ev->name);
		break;
	case STREAM_TOOL_ARGS:
		buf_adds(b, "TA(");
		add_id(b, ev->id);
		buf_printf(b, ",%s)", ev->text);
		break;
	case STREAM_TOOL_END:
		buf_adds(b, "TE(");
		add_id(b, ev->id);
		buf_printf(b, ",%s,%s%s)", ev->name, ev->text, ev->incomplete ? ",incomplete" : "");
		assert_int_equal(strlen(ev->text), ev->len);
		break;
	case STREAM_USAGE:
		buf_printf(b, "U(%lld,%lld,%lld,%lld,%lld)", (long long)ev->usage->input,
			   (long long)ev->usage->output, (long long)ev->usage->cache_read,
			   (long long)ev->usage->cache_write, (long long)ev->usage->reasoning);
		break;
	case STREAM_FINISH:
		buf_printf(b, "F(%s,%s)", stream_finish_name(ev->finish), ev->text ? ev->text : "");
		break;
	case STREAM_ERROR: buf_printf(b, "E(%s,%s)", ev->error_type ? ev->error_type : "", ev->text); break;
	case STREAM_DONE: buf_adds(b, "D"); break;
	}
	if (ev->kind == STREAM_TEXT || ev->kind == STREAM_REASONING || ev->kind == STREAM_TOOL_ARGS)
		assert_int_equal(strlen(ev->text), ev->len);
}

char *support_decode(enum provider_kind kind, const struct sse *events, size_t n)
{
	struct buf b = BUF_INIT;
	struct stream_decoder *d = stream_decoder_new(kind, record, &b);
	for (size_t i = 0; i < n; i++)
		if (events[i].name && strcmp(events[i].name, SSE_CUT) == 0)
			stream_decoder_cut(d);
		else
			stream_decoder_feed(d, events[i].name, events[i].data, strlen(events[i].data));
	buf_adds(&b, stream_decoder_closed(d) ? "|closed" : "|open");
	stream_decoder_free(d);
	return buf_detach(&b, NULL);
}

const char *const support_conversation[] = {
	"{\"type\":\"session/header\",\"data\":{\"format\":1,\"id\":\"s\",\"created_at\":1,\"cwd\":null}}",
	"{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{\"parent_turn\":null}}",
	"{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"What is in this directory?\"}}",
	"{\"type\":\"request/prepared\",\"turn\":\"t1\",\"data\":{}}",
	"{\"type\":\"assistant/reasoning\",\"turn\":\"t1\",\"data\":{\"text\":\"The user wants\"}}",
	"{\"type\":\"assistant/reasoning\",\"turn\":\"t1\",\"data\":{\"text\":\" a listing.\",\"signature\":\"sig-1\"}}",
	"{\"type\":\"assistant/reasoning\",\"turn\":\"t1\",\"data\":{\"text\":\"opaque==\",\"redacted\":true}}",
	"{\"type\":\"assistant/reasoning\",\"turn\":\"t1\",\"data\":{\"text\":\"unsigned thought\"}}",
	"{\"type\":\"assistant/text\",\"turn\":\"t1\",\"data\":{\"text\":\"Let me look.\"}}",
	"{\"type\":\"tool/call\",\"turn\":\"t1\",\"data\":{\"call_id\":\"toolu_01\",\"name\":\"shell\",\"args\":{\"command\":\"ls\"}}}",
	"{\"type\":\"tool/started\",\"turn\":\"t1\",\"data\":{\"call_id\":\"toolu_01\"}}",
	"{\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"toolu_01\",\"status\":\"ok\",\"output\":\"a.txt\\nb.txt\\n\",\"exit_code\":0}}",
	"{\"type\":\"step/end\",\"turn\":\"t1\",\"data\":{}}",
	"{\"type\":\"request/prepared\",\"turn\":\"t1\",\"data\":{}}",
	"{\"type\":\"assistant/text\",\"turn\":\"t1\",\"data\":{\"text\":\"There are \"}}",
	"{\"type\":\"assistant/text\",\"turn\":\"t1\",\"data\":{\"text\":\"two files.\"}}",
	"{\"type\":\"step/end\",\"turn\":\"t1\",\"data\":{}}",
	"{\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"completed\"}}",
	"{\"type\":\"turn/start\",\"turn\":\"t2\",\"data\":{}}",
	"{\"type\":\"user/message\",\"turn\":\"t2\",\"data\":{\"text\":\"Write a long poem.\"}}",
	"{\"type\":\"assistant/text\",\"turn\":\"t2\",\"data\":{\"text\":\"Roses are\"}}",
	"{\"type\":\"turn/end\",\"turn\":\"t2\",\"data\":{\"outcome\":\"interrupted\",\"synthetic\":true,\"error\":{\"class\":\"interrupted\",\"message\":\"the session stopped\"}}}",
	"{\"type\":\"turn/start\",\"turn\":\"t3\",\"data\":{}}",
	"{\"type\":\"user/message\",\"turn\":\"t3\",\"data\":{\"text\":\"Are you there?\"}}",
	"{\"type\":\"assistant/reasoning\",\"turn\":\"t3\",\"data\":{\"text\":\"hmm\"}}",
	"{\"type\":\"assistant/text\",\"turn\":\"t3\",\"data\":{\"text\":\"\"}}",
	"{\"type\":\"turn/end\",\"turn\":\"t3\",\"data\":{\"outcome\":\"failed\",\"error\":{\"class\":\"provider\",\"message\":\"overloaded\"}}}",
	"{\"type\":\"turn/start\",\"turn\":\"t4\",\"data\":{}}",
	"{\"type\":\"user/message\",\"turn\":\"t4\",\"data\":{\"text\":\"Run it again.\"}}",
	"{\"type\":\"tool/call\",\"turn\":\"t4\",\"data\":{\"call_id\":\"call_9\",\"name\":\"shell\",\"args\":\"{\\\"command\\\":\\\"l\",\"incomplete\":true}}",
	"{\"type\":\"tool/result\",\"turn\":\"t4\",\"data\":{\"call_id\":\"call_9\",\"status\":\"not_executed\",\"output\":\"cut off\",\"synthetic\":true}}",
	"{\"type\":\"turn/end\",\"turn\":\"t4\",\"data\":{\"outcome\":\"completed\"}}",
	"{\"type\":\"turn/start\",\"turn\":\"t5\",\"data\":{}}",
	"{\"type\":\"user/message\",\"turn\":\"t5\",\"data\":{\"text\":\"Thanks.\"}}",
	NULL,
};
