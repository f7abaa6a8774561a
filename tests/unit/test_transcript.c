/* test_transcript.c — the chat screen's model (tui/transcript.h), fed by
 * the real engine: the host runs turns with the offline provider and the
 * fake model server, every sink item goes into one model as the screen
 * would apply it, and the session's log read back from disk goes into
 * another. Once a turn is saved both must show the same blocks and text
 * (each streamed character once), for a plain answer, tool calls allowed
 * and denied, a canceled turn with queued input, failed turns, reasoning,
 * hostile bytes, and a turn a crash left open that repair closed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "engine/tool.h"
#include "tests/unit/support_host.h"
#include "tui/transcript.h"
#include "engine/tool_reaper.h"

/* The live consumer: every sink item into tr, checking on each delta that
 * only the block it streams into changed. */
struct live {
	struct transcript *tr;
	size_t deltas, durable_text; /* items seen of each kind */
	bool only_open_block;        /* every delta changed its block and no other */
	bool saw_approval;           /* the status said "approval" for the shell */
	bool saw_streaming, saw_waiting;
	bool saw_args_streaming;     /* a tool block announced, its arguments streaming */
	bool call_added_a_block;     /* a tool/call made a block of its own */
};

static int64_t now_ms(void)
{
	return (int64_t)(clock_mono_ns() / 1000000);
}

static void tap(const struct sink_item *it, void *ctx)
{
	struct live *l = ctx;
	uint64_t before = transcript_version(l->tr);
	size_t end = transcript_end(l->tr);
	const struct transcript_turn *last = end ? transcript_turn(l->tr, end - 1) : NULL;
	size_t blocks = last ? transcript_turn_blocks(last) : 0;
	bool changed = transcript_apply_sink(l->tr, it, now_ms());
	if (it->kind == SINK_EVENT && it->vtype == VT_TOOL_CALL &&
	    transcript_turn_blocks(last) != blocks)
		l->call_added_a_block = true;
	struct transcript_state st;
	transcript_state(l->tr, &st);
	l->saw_streaming |= st.activity == TR_STREAMING;
	l->saw_waiting |= st.activity == TR_WAITING;
	if (it->kind == SINK_NOTICE && it->notice == SINK_NOTICE_INTERACTION)
		l->saw_approval = st.activity == TR_APPROVAL && strcmp(st.tool, "shell") == 0;
	if (it->kind == SINK_NOTICE && it->notice == SINK_NOTICE_TOOL_CALL) {
		const struct transcript_turn *t = transcript_turn(l->tr, transcript_end(l->tr) - 1);
		const struct transcript_tool *x =
			transcript_block_tool(transcript_turn_block(t, transcript_turn_blocks(t) - 1));
		l->saw_args_streaming = x && x->args_state == TR_ARGS_STREAMING && !x->call_id &&
					strcmp(x->name, "shell") == 0;
	}
	if (it->kind == SINK_EVENT && it->vtype == VT_ASSISTANT_TEXT)
		l->durable_text++;
	if (it->kind != SINK_TEXT)
		return;
	l->deltas++;
	/* The turn's last block took the delta; every other block is older. */
	const struct transcript_turn *t = transcript_turn(l->tr, transcript_end(l->tr) - 1);
	size_t n = transcript_turn_blocks(t);
	if (!changed || transcript_changed_from(l->tr, before) != transcript_end(l->tr) - 1)
		l->only_open_block = false;
	for (size_t i = 0; i < n; i++) {
		bool newer = transcript_block_version(transcript_turn_block(t, i)) > before;
		if (newer != (i == n - 1))
			l->only_open_block = false;
	}
}

static struct live *live_start(struct hx *x)
{
	struct live *l = xcalloc(1, sizeof *l);
	l->tr = transcript_new(x->id);
	l->only_open_block = true;
	x->tap = tap;
	x->tap_ctx = l;
	return l;
}

static void live_free(struct hx *x, struct live *l)
{
	x->tap = NULL;
	transcript_free(l->tr);
	free(l);
}

/* A model of x->id built from its log on disk. */
static struct transcript *from_log(struct hx *x)
{
	struct scan *s = hx_read_log(x);
	struct transcript *tr = transcript_new(x->id);
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *e = &s->events[i];
		transcript_apply_event(tr, e->vtype, e->turn, e->seq, e->t, e->data);
	}
	scan_free(s);
	return tr;
}

static const char *const KIND[] = {"prompt", "text", "reasoning", "tool", "outcome"};
static const char *const OUTCOME[] = {"open", "completed", "canceled", "failed", "interrupted"};
static const char *const ARGS[] = {"streaming", "ok", "cut-off", "blob", "invalid"};
static const char *const APPROVAL[] = {"none", "waiting", "once", "session",
				       "policy", "denied", "canceled"};
static const char *const STATUS[] = {"none", "ok", "error", "denied",
				     "canceled", "not-executed", "outcome-unknown"};

/* Everything the screen can show, without times; caller frees. */
static char *dump(const struct transcript *tr)
{
	struct buf b = BUF_INIT;
	for (size_t k = transcript_dropped(tr); k < transcript_end(tr); k++) {
		const struct transcript_turn *t = transcript_turn(tr, k);
		buf_printf(&b, "turn %s %s\n", transcript_turn_id(t),
			   OUTCOME[transcript_turn_outcome(t)]);
		for (size_t i = 0; i < transcript_turn_blocks(t); i++) {
			const struct transcript_block *bl = transcript_turn_block(t, i);
			const struct transcript_tool *x = transcript_block_tool(bl);
			buf_printf(&b, "  %s", KIND[transcript_block_kind(bl)]);
			if (transcript_block_in_blob(bl, NULL))
				buf_adds(&b, "[blob]");
			if (x)
				buf_printf(&b, " %s %s target=%s args=%s approval=%s%s%s%s %s%s %s exit=%lld",
					   x->call_id ? x->call_id : "-", x->name,
					   x->target ? x->target : "-", ARGS[x->args_state],
					   APPROVAL[x->approval], x->note ? "(" : "",
					   x->note ? x->note : "", x->note ? ")" : "",
					   x->started ? "started" : "unstarted", x->synthetic ? " synthetic" : "",
					   STATUS[x->status],
					   x->has_exit_code ? (long long)x->exit_code : -1LL);
			buf_printf(&b, ": %s\n", transcript_block_text(bl, NULL));
		}
	}
	for (size_t k = 0; k < transcript_queued(tr); k++) {
		const char *id;
		const char *text = transcript_queued_text(tr, k, &id, NULL);
		buf_printf(&b, "queued %s: %s\n", id, text);
	}
	return buf_detach(&b, NULL);
}

/* The live model equals the log's; returns the dump (caller frees). */
static char *same_as_log(struct hx *x, struct live *l)
{
	struct transcript *lt = from_log(x);
	char *a = dump(l->tr), *b = dump(lt);
	assert_string_equal(a, b);
	transcript_free(lt);
	free(b);
	return a;
}

/* A plain answer streamed in pieces: each character shown once although
 * it came twice (deltas, then the durable assistant/text), only the open
 * block re-rendered per delta, and the same from the log. */
static void test_transcript_plain_answer_shows_each_character_once(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"one two three four five\","
					  "\"pieces\":5,\"split\":\"event\",\"rate\":50}]}");
	hx_create(x, &c);
	struct live *l = live_start(x);
	hx_send(x, "count to five", NULL);
	WAIT(x, x->settled == 1);
	assert_true(l->deltas >= 2);
	assert_true(l->durable_text >= 1);
	assert_true(l->only_open_block);
	assert_true(l->saw_waiting);
	assert_true(l->saw_streaming);
	char *d = same_as_log(x, l);
	assert_string_equal(d, "turn t1 completed\n"
			       "  prompt: count to five\n"
			       "  text: one two three four five\n");
	free(d);
	struct transcript_state st;
	transcript_state(l->tr, &st);
	assert_int_equal(st.activity, TR_IDLE);
	assert_false(st.interrupted);
	assert_string_equal(st.provider, "openai");
	assert_string_equal(st.model, "m-1");
	/* nothing changed since: nothing to re-render */
	uint64_t v = transcript_version(l->tr);
	assert_int_equal(transcript_changed_from(l->tr, v), transcript_end(l->tr));
	/* collapsing is a change of that block only */
	const struct transcript_turn *t = transcript_turn(l->tr, 0);
	const struct transcript_block *txt = transcript_turn_block(t, 1);
	transcript_block_set_expanded(l->tr, txt, true);
	assert_true(transcript_block_expanded(txt));
	assert_int_equal(transcript_changed_from(l->tr, v), 0);
	assert_true(transcript_block_version(txt) > v);
	assert_true(transcript_block_version(transcript_turn_block(t, 0)) <= v);
	live_free(x, l);
}

static cJSON *schemas;

static struct host_call tools_call(void)
{
	struct host_call c = hx_offline_call();
	if (!schemas)
		schemas = tool_schemas();
	c.call.params.tools = schemas;
	return c;
}

/* Policy ask, the user allows: the tool block goes through waiting
 * (status "approval"), allowed, started, ok with its exit code. */
static void test_transcript_tool_allowed_by_the_user(void **state)
{
	struct hx *x = *state;
	struct host_call c = tools_call();
	hx_create(x, &c);
	struct live *l = live_start(x);
	x->decision = "allow_once";
	hx_send(x, "run echo tool-says-hi", NULL);
	WAIT(x, x->settled == 1);
	assert_true(l->saw_approval);
	char *d = same_as_log(x, l);
	assert_string_equal(d, "turn t1 completed\n"
			       "  prompt: run echo tool-says-hi\n"
			       "  tool t1.1 shell target=echo tool-says-hi args=ok approval=once "
			       "started ok exit=0: tool-says-hi\n\n"
			       "  text: done: tool-says-hi\n");
	free(d);
	const struct transcript_tool *tool =
		transcript_block_tool(transcript_turn_block(transcript_turn(l->tr, 0), 1));
	assert_string_equal(tool->provider_id, "offline-1");
	assert_string_equal(tool->summary, "shell: echo tool-says-hi");
	assert_int_equal(tool->status, TR_STATUS_OK);
	assert_false(transcript_block_expanded(transcript_turn_block(transcript_turn(l->tr, 0), 1)));
	live_free(x, l);
}

/* The user denies with a note: denied, never started, the note kept. */
static void test_transcript_tool_denied_with_a_note(void **state)
{
	struct hx *x = *state;
	struct host_call c = tools_call();
	hx_create(x, &c);
	struct live *l = live_start(x);
	x->decision = "deny";
	x->note = "not today";
	hx_send(x, "run echo no", NULL);
	WAIT(x, x->settled == 1);
	char *d = same_as_log(x, l);
	assert_non_null(strstr(d, "  tool t1.1 shell target=echo no args=ok approval=denied(not today) "
				  "unstarted denied exit=-1: denied: the user did not allow this call (not today)"));
	free(d);
	const struct transcript_tool *tool =
		transcript_block_tool(transcript_turn_block(transcript_turn(l->tr, 0), 1));
	assert_int_equal(tool->status, TR_STATUS_DENIED);
	live_free(x, l);
}

/* Canceled while a call's arguments stream: the block announced by the
 * notice becomes the recorded call (cut off, not executed), not a second
 * block. */
static void test_transcript_call_announced_then_cut_off_by_a_cancel(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(
		x, "{\"replies\":[{\"text\":\"let me\",\"tool_calls\":[{\"id\":\"call_cut\","
		   "\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":\\\"touch nothing\\\"}\"}],"
		   "\"split\":\"event\",\"stall_after\":4,\"stall_ms\":15000}]}");
	c.call.params.tools = tools_call().call.params.tools;
	hx_create(x, &c);
	struct live *l = live_start(x);
	hx_send(x, "cut it", NULL);
	WAIT(x, l->saw_args_streaming);
	host_cancel(x->h, x->id);
	WAIT(x, x->settled == 1);
	assert_false(l->call_added_a_block);
	char *d = same_as_log(x, l);
	assert_string_equal(d, "turn t1 canceled\n"
			       "  prompt: cut it\n"
			       "  text: let me\n"
			       "  tool t1.1 shell target=- args=cut-off approval=none unstarted "
			       "not-executed exit=-1: not executed: this tool call did not run (the turn "
			       "was canceled). It had no effect; call it again if it is still needed.\n"
			       "  outcome: canceled\n");
	free(d);
	const struct transcript_tool *tool =
		transcript_block_tool(transcript_turn_block(transcript_turn(l->tr, 0), 2));
	assert_string_equal(tool->provider_id, "call_cut");
	live_free(x, l);
}

/* Canceled mid-stream with a prompt queued: the partial answer and the
 * outcome in words, and the queued prompt still waiting, live and from
 * the log alike. */
static void test_transcript_canceled_turn_keeps_its_partial_text_and_the_queue(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"slow slow slow slow\","
					  "\"pieces\":4,\"split\":\"event\",\"stall_ms\":3000,"
					  "\"stall_after\":3}]}");
	hx_create(x, &c);
	struct live *l = live_start(x);
	hx_send(x, "first", NULL);
	hx_send(x, "queued one", "q-1");
	assert_true(x->queued);
	WAIT(x, transcript_queued(l->tr) == 1);
	struct transcript_state st;
	transcript_state(l->tr, &st);
	assert_int_equal(st.queued, 1);
	WAIT(x, x->text.len > 0); /* mid-stream */
	transcript_state(l->tr, &st);
	assert_int_equal(st.activity, TR_STREAMING);
	assert_true(st.stream_chars > 0);
	assert_string_equal(st.turn, "t1");
	host_cancel(x->h, x->id);
	WAIT(x, x->settled == 1);
	char *d = same_as_log(x, l);
	char *want = xasprintf("turn t1 canceled\n"
			       "  prompt: first\n"
			       "  text: %s\n"
			       "  outcome: canceled\n"
			       "queued q-1: queued one\n",
			       x->text.p);
	assert_string_equal(d, want);
	free(want);
	free(d);
	assert_true(x->text.len < strlen("slow slow slow slow"));
	transcript_state(l->tr, &st);
	assert_int_equal(st.activity, TR_IDLE);
	assert_int_equal(st.queued, 1);
	/* taken back while idle: no event reaches the sink, the screen says so */
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_input_take(x->h, x->id, "q-1", hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	uint64_t qv = transcript_queue_version(l->tr);
	assert_true(transcript_input_removed(l->tr, "q-1"));
	assert_true(transcript_queue_version(l->tr) > qv);
	d = same_as_log(x, l);
	assert_null(strstr(d, "queued"));
	free(d);
	live_free(x, l);
}

/* A queued prompt runs after a saved success: dequeued live and in the
 * log, two turns. */
static void test_transcript_queued_prompt_runs_and_leaves_the_queue(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"one two three four five\","
					  "\"pieces\":5,\"rate\":20},{\"text\":\"second answer\"}]}");
	hx_create(x, &c);
	struct live *l = live_start(x);
	hx_send(x, "first", NULL);
	hx_send(x, "next, please", "q-1");
	WAIT(x, x->settled == 2);
	char *d = same_as_log(x, l);
	assert_string_equal(d, "turn t1 completed\n"
			       "  prompt: first\n"
			       "  text: one two three four five\n"
			       "turn t2 completed\n"
			       "  prompt: next, please\n"
			       "  text: second answer\n");
	free(d);
	live_free(x, l);
}

/* Failed turns: the provider's error with its HTTP status, and a reply
 * cut off mid-way (delivery unknown, the partial text kept). */
static void test_transcript_failed_turns_say_why(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(
		x, "{\"replies\":[{\"status\":400,\"error\":{\"type\":\"invalid_request_error\","
		   "\"message\":\"bad\"}},{\"text\":\"partial then gone\",\"split\":\"event\","
		   "\"pieces\":3,\"disconnect_after\":3}]}");
	hx_create(x, &c);
	struct live *l = live_start(x);
	hx_send(x, "one", NULL);
	WAIT(x, x->settled == 1);
	hx_send(x, "two", NULL);
	WAIT(x, x->settled == 2);
	char *d = same_as_log(x, l);
	assert_non_null(strstr(d, "turn t1 failed\n  prompt: one\n  outcome: failed: the provider's "
				  "error (HTTP 400): "));
	assert_non_null(strstr(d, "turn t2 failed\n  prompt: two\n  text: "));
	assert_non_null(strstr(d, "  outcome: delivery unknown: the request was sent and its answer "
				  "was lost"));
	free(d);
	const struct transcript_turn *t = transcript_turn(l->tr, 0);
	assert_string_equal(transcript_turn_error_class(t), "provider");
	assert_int_equal(transcript_turn_outcome(t), TR_FAILED);
	live_free(x, l);
}

/* Anthropic reasoning: a separate block, collapsed, the same from the
 * log (the signature's closing piece adds nothing). */
static void test_transcript_reasoning_is_its_own_collapsed_block(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"reasoning\":\"let me think\","
					  "\"signature\":\"sig-1\",\"text\":\"an answer\"}]}");
	c.provider = "anthropic";
	c.call.kind = PROVIDER_ANTHROPIC;
	x->base[strlen(x->base) - 3] = '\0'; /* its paths are the API's own: /v1/messages */
	c.call.params.api_key = "ant-test";
	hx_create(x, &c);
	struct live *l = live_start(x);
	hx_send(x, "think", NULL);
	WAIT(x, x->settled == 1);
	char *d = same_as_log(x, l);
	assert_string_equal(d, "turn t1 completed\n"
			       "  prompt: think\n"
			       "  reasoning: let me think\n"
			       "  text: an answer\n");
	free(d);
	assert_false(transcript_block_expanded(transcript_turn_block(transcript_turn(l->tr, 0), 1)));
	live_free(x, l);
}

/* Escape sequences and control bytes from a model stay exactly as given:
 * the renderer sanitises, the model keeps the bytes (copying them out is
 * exact). */
static void test_transcript_hostile_text_is_kept_as_given(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"a\\u001b]0;pwned\\u0007b"
					  "\\u001b[2J\\u009b31m\\u202ec\",\"pieces\":4}]}");
	hx_create(x, &c);
	struct live *l = live_start(x);
	hx_send(x, "say something nasty", NULL);
	WAIT(x, x->settled == 1);
	char *d = same_as_log(x, l);
	free(d);
	size_t len;
	const char *t = transcript_block_text(transcript_turn_block(transcript_turn(l->tr, 0), 1), &len);
	const char want[] = "a\x1b]0;pwned\x07"
			    "b\x1b[2J\xc2\x9b"
			    "31m\xe2\x80\xae"
			    "c";
	assert_int_equal(len, sizeof want - 1);
	assert_memory_equal(t, want, len);
	live_free(x, l);
}

/* A prompt over BLOB_INLINE_MAX: live, the block holds what was typed;
 * from the log, its inline head and tail, marked as in a blob with the
 * whole size. */
static void test_transcript_prompt_in_a_blob_says_so(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_fake_call(x, "{\"replies\":[{\"text\":\"got it\"}]}");
	hx_create(x, &c);
	struct live *l = live_start(x);
	size_t n = 300 * 1024;
	char *big = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		big[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
	big[n] = '\0';
	hx_send(x, big, NULL);
	WAIT(x, x->settled == 1);
	const struct transcript_block *p = transcript_turn_block(transcript_turn(l->tr, 0), 0);
	size_t len;
	assert_false(transcript_block_in_blob(p, NULL));
	assert_string_equal(transcript_block_text(p, &len), big);
	struct transcript *tr = from_log(x);
	p = transcript_turn_block(transcript_turn(tr, 0), 0);
	uint64_t size = 0;
	assert_true(transcript_block_in_blob(p, &size));
	assert_int_equal(size, n);
	const char *text = transcript_block_text(p, &len);
	assert_true(len < n);
	assert_memory_equal(text, big, 1024); /* its head */
	assert_non_null(strstr(text, "bytes omitted; the whole text is blob "));
	assert_string_equal(transcript_block_text(transcript_turn_block(transcript_turn(tr, 0), 1),
						  NULL),
			    "got it");
	transcript_free(tr);
	free(big);
	live_free(x, l);
}

static void item_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	(void)r;
	assert_null(err);
	(*(int *)ctx)++;
}

static void recovered_cb(void *ctx, size_t recovered, size_t failed, const struct cerr *err)
{
	struct hx *x = ctx;
	assert_null(err);
	assert_int_equal(recovered, 1);
	assert_int_equal(failed, 0);
	x->calls++;
}

/* A process died mid-turn: one call had started, one had not, a prompt was
 * queued. Repair closes the turn; the model of the log shows it
 * interrupted, the first call's outcome unknown, the second not executed,
 * the queued prompt waiting. Then the session is opened and a new turn
 * runs live into the same model: nothing doubles, and it equals the log. */
static void test_transcript_interrupted_turn_from_the_log_then_live(void **state)
{
	struct hx *x = *state;
	snprintf(x->id, sizeof x->id, "01JDEADPROCESS0000000000AA");
	int n = 0;
	struct cerr err;
	struct fifo_item *it = fifo_history(
		x->id, 1,
		cJSON_Parse(
			"[{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{}},"
			"{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"cut\"}},"
			"{\"type\":\"request/prepared\",\"turn\":\"t1\",\"data\":{\"step\":1}},"
			"{\"type\":\"assistant/text\",\"turn\":\"t1\",\"data\":{\"text\":\"on it\"}},"
			"{\"type\":\"tool/call\",\"turn\":\"t1\",\"data\":{\"call_id\":\"t1.1\","
			"\"name\":\"shell\",\"args\":{\"command\":\"make\"}}},"
			"{\"type\":\"tool/call\",\"turn\":\"t1\",\"data\":{\"call_id\":\"t1.2\","
			"\"name\":\"read_file\",\"args\":\"{\\\"path\\\":\\\"READ\",\"incomplete\":true}},"
			"{\"type\":\"interaction/request\",\"turn\":\"t1\",\"data\":{\"request_id\":"
			"\"r-t1.1\",\"call_id\":\"t1.1\",\"tool\":\"shell\",\"summary\":\"shell: make\"}},"
			"{\"type\":\"interaction/answer\",\"turn\":\"t1\",\"data\":{\"request_id\":"
			"\"r-t1.1\",\"decision\":\"allow_once\",\"by\":\"user\"}},"
			"{\"type\":\"tool/started\",\"turn\":\"t1\",\"data\":{\"call_id\":\"t1.1\"}},"
			"{\"type\":\"input/queued\",\"data\":{\"input_id\":\"q-9\",\"text\":\"later\"}}]"));
	fifo_item_create_header(it, x->cwd, "offline", NULL, NULL);
	fifo_item_set_running(it);
	assert_int_equal(fifo_post(x->f, it, item_cb, &n, &err), 0);
	WAIT(x, n == 1);
	/* before repair the log's last turn is open: the status says a tool runs */
	struct transcript *open = from_log(x);
	struct transcript_state st;
	transcript_state(open, &st);
	assert_int_equal(st.activity, TR_RUNNING_TOOL);
	assert_string_equal(st.tool, "shell");
	transcript_free(open);
	hx_stop(x);
	hx_start(x);
	int before = x->calls;
	assert_int_equal(host_recover_interrupted(x->h, recovered_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	struct transcript *tr = from_log(x);
	char *d = dump(tr);
	assert_string_equal(
		d, "turn t1 interrupted\n"
		   "  prompt: cut\n"
		   "  text: on it\n"
		   "  tool t1.1 shell target=make args=ok approval=once started synthetic outcome-unknown exit=-1: "
		   "outcome unknown: the session stopped while this tool was running, so it may or "
		   "may not have taken effect. Retry only read-only or idempotent operations; "
		   "otherwise check the external state first or ask the user.\n"
		   "  tool t1.2 read_file target=- args=cut-off approval=none unstarted synthetic "
		   "not-executed exit=-1: not executed: this tool call did not run (the session stopped before it "
		   "ran). It had no effect; call it again if it is still needed.\n"
		   "  outcome: interrupted: the session stopped before this turn ended\n"
		   "queued q-9: later\n");
	free(d);
	transcript_state(tr, &st);
	assert_int_equal(st.activity, TR_IDLE);
	assert_true(st.interrupted);
	assert_int_equal(st.queued, 1);
	const struct transcript_tool *t12 =
		transcript_block_tool(transcript_turn_block(transcript_turn(tr, 0), 3));
	assert_int_equal(t12->status, TR_STATUS_NOT_EXECUTED);
	assert_string_equal(t12->args, "{\"path\":\"READ");

	/* opened again, the model built from what the open loaded (the same
	 * as the log's), then the live sink goes into it */
	struct transcript *opened = transcript_new(x->id);
	before = x->calls;
	assert_int_equal(host_open_history(x->h, x->id, transcript_history, opened, hx_done_cb, x,
					   &err),
			 0);
	WAIT(x, x->calls > before);
	char *a = dump(tr), *b = dump(opened);
	assert_string_equal(a, b);
	free(a);
	free(b);
	transcript_free(tr);
	struct live *l = live_start(x);
	transcript_free(l->tr);
	l->tr = opened;
	struct host_call c = hx_offline_call();
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	hx_send(x, "again", NULL);
	WAIT(x, x->settled == 1);
	d = same_as_log(x, l);
	assert_non_null(strstr(d, "turn t2 completed\n  prompt: again\n  text: "));
	free(d);
	transcript_state(l->tr, &st);
	assert_false(st.interrupted);
	live_free(x, l);
}

/* A window of turns: older ones are dropped, counted, and the seq where
 * the held ones begin says where to page in from. */
static void test_transcript_window_drops_old_turns_and_remembers_them(void **state)
{
	struct hx *x = *state;
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	for (int i = 0; i < 3; i++) {
		hx_send(x, i == 0 ? "one" : i == 1 ? "two" : "three", NULL);
		WAIT(x, x->settled == i + 1);
	}
	struct transcript *tr = from_log(x);
	assert_int_equal(transcript_end(tr), 3);
	/* the same events again (a log, then a sink that repeats it): nothing */
	{
		char *a = dump(tr);
		uint64_t v0 = transcript_version(tr);
		struct scan *s = hx_read_log(x);
		for (size_t i = 1; i < s->n_events; i++)
			assert_false(transcript_apply_event(tr, s->events[i].vtype, s->events[i].turn,
							    s->events[i].seq, s->events[i].t,
							    s->events[i].data));
		scan_free(s);
		char *b = dump(tr);
		assert_string_equal(a, b);
		assert_int_equal(transcript_version(tr), v0);
		free(a);
		free(b);
	}
	assert_false(transcript_has_earlier(tr));
	assert_int_equal(transcript_first_seq(tr), 1);
	uint64_t v = transcript_version(tr);
	transcript_set_window(tr, 2);
	assert_int_equal(transcript_dropped(tr), 1);
	assert_true(transcript_has_earlier(tr));
	assert_true(transcript_version(tr) > v);
	assert_null(transcript_turn(tr, 0));
	assert_string_equal(transcript_turn_id(transcript_turn(tr, 1)), "t2");
	struct scan *s = hx_read_log(x);
	size_t t2 = hx_find(s, hx_find(s, hx_find(s, 0, "turn/start") + 1, "turn/start"), "turn/start");
	assert_int_equal(transcript_first_seq(tr), s->events[t2].seq);
	/* a model fed from a later seq (a log read from its end) knows
	 * earlier turns exist */
	struct transcript *tail = transcript_new(x->id);
	transcript_begin_at(tail, s->events[t2].seq);
	for (size_t i = t2; i < s->n_events; i++)
		transcript_apply_event(tail, s->events[i].vtype, s->events[i].turn, s->events[i].seq,
				       s->events[i].t, s->events[i].data);
	assert_true(transcript_has_earlier(tail));
	char *a = dump(tail), *b = dump(tr);
	assert_string_equal(a, b);
	free(a);
	free(b);
	scan_free(s);
	transcript_drop_before(tr, 2);
	assert_int_equal(transcript_dropped(tr), 2);
	assert_string_equal(transcript_turn_id(transcript_turn(tr, 2)), "t3");
	assert_int_equal(transcript_end(tr), 3);
	/* turns are found by id after drops: a dropped turn's id started
	 * again is a new turn, held and found; started again while open, the
	 * same one */
	cJSON *d = cJSON_CreateObject();
	uint64_t seq = 1000;
	assert_true(transcript_apply_event(tr, VT_TURN_START, "t1", seq++, 0, d));
	assert_int_equal(transcript_end(tr), 4);
	assert_string_equal(transcript_turn_id(transcript_turn(tr, 3)), "t1");
	assert_false(transcript_apply_event(tr, VT_TURN_START, "t1", seq++, 0, d));
	assert_int_equal(transcript_end(tr), 4);
	transcript_drop_before(tr, 3); /* t3 goes; t1 (the new one) stays */
	assert_false(transcript_apply_event(tr, VT_TURN_START, "t1", seq++, 0, d));
	assert_true(transcript_apply_event(tr, VT_TURN_START, "t3", seq++, 0, d));
	assert_int_equal(transcript_end(tr), 5);
	assert_string_equal(transcript_turn_id(transcript_turn(tr, 4)), "t3");
	cJSON_Delete(d);
	transcript_free(tail);
	transcript_free(tr);
}

/* Apply one event of type in turn t1 with the JSON data at seq. */
static void put_event(struct transcript *tr, const char *type, uint64_t seq, const char *data)
{
	cJSON *d = cJSON_Parse(data);
	assert_non_null(d);
	transcript_apply_event(tr, vocab_type_of(type), "t1", seq, 1000 + (int64_t)seq, d);
	cJSON_Delete(d);
}

/* The one pending-approval lookup (the approval bar and the approval keys
 * both ask it): the last waiting tool of the open turn that has a
 * request_id; a request without one cannot be answered, so it is not
 * offered, though the status still says an approval is awaited. */
static void test_transcript_pending_approval_needs_a_request_id(void **state)
{
	(void)state;
	struct transcript *tr = transcript_new("01JPENDING0000000000000000");
	put_event(tr, "turn/start", 1, "{}");
	put_event(tr, "user/message", 2, "{\"text\":\"go\"}");
	put_event(tr, "tool/call", 3,
		  "{\"call_id\":\"t1.1\",\"name\":\"shell\",\"args\":{\"command\":\"make\"}}");
	assert_null(transcript_pending_approval(tr));
	put_event(tr, "interaction/request", 4,
		  "{\"call_id\":\"t1.1\",\"tool\":\"shell\",\"summary\":\"shell: make\"}");
	struct transcript_state st;
	transcript_state(tr, &st);
	assert_int_equal(st.activity, TR_APPROVAL);
	assert_null(transcript_pending_approval(tr));
	put_event(tr, "tool/call", 5,
		  "{\"call_id\":\"t1.2\",\"name\":\"shell\",\"args\":{\"command\":\"ls\"}}");
	put_event(tr, "interaction/request", 6,
		  "{\"request_id\":\"r-t1.2\",\"call_id\":\"t1.2\",\"tool\":\"shell\","
		  "\"summary\":\"shell: ls\"}");
	const struct transcript_tool *p = transcript_pending_approval(tr);
	assert_non_null(p);
	assert_string_equal(p->request_id, "r-t1.2");
	assert_string_equal(p->summary, "shell: ls");
	put_event(tr, "interaction/answer", 7,
		  "{\"request_id\":\"r-t1.2\",\"decision\":\"deny\",\"by\":\"user\"}");
	assert_null(transcript_pending_approval(tr));
	transcript_free(tr);
}

int main(int argc, char **argv)
{
	/* Shell commands run under a reaper: this program, again. */
	tool_reaper_dispatch(argc, argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transcript_pending_approval_needs_a_request_id),
		cmocka_unit_test_setup_teardown(test_transcript_plain_answer_shows_each_character_once,
						hx_setup, hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_tool_allowed_by_the_user, hx_setup,
						hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_tool_denied_with_a_note, hx_setup,
						hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_call_announced_then_cut_off_by_a_cancel,
						hx_setup, hx_teardown),
		cmocka_unit_test_setup_teardown(
			test_transcript_canceled_turn_keeps_its_partial_text_and_the_queue, hx_setup,
			hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_queued_prompt_runs_and_leaves_the_queue,
						hx_setup, hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_failed_turns_say_why, hx_setup,
						hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_reasoning_is_its_own_collapsed_block,
						hx_setup, hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_hostile_text_is_kept_as_given, hx_setup,
						hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_prompt_in_a_blob_says_so, hx_setup,
						hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_interrupted_turn_from_the_log_then_live,
						hx_setup, hx_teardown),
		cmocka_unit_test_setup_teardown(test_transcript_window_drops_old_turns_and_remembers_them,
						hx_setup, hx_teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	cJSON_Delete(schemas);
	return rc;
}
