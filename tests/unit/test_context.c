/* test_context.c — engine/context: session events to the messages a model
 * sees. Pieces joined, reasoning blocks closed by their signature, the
 * partial text of an interrupted answer kept, empty parts dropped, every
 * call answered (a synthetic not_executed result when the log has none),
 * results without their call dropped, a cut-off call replayed as {}, as
 * is one whose arguments the log kept only as text (args_raw), and the
 * branch followed through parent turns: the active path, the one prepare
 * reads from the same log. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "base/buf.h"
#include "engine/context.h"
#include "persist/blob.h"
#include "persist/load.h"
#include "persist/prepare.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_logbytes.h"
#include "tests/unit/support_stream.h"

static void expect_part(const struct ctx_message *m, size_t k, enum ctx_part_kind kind, const char *text)
{
	assert_true(k < m->nparts);
	assert_int_equal(m->parts[k].kind, kind);
	if (text)
		assert_string_equal(m->parts[k].text, text);
}

static void test_log_becomes_the_provider_message_sequence(void **state)
{
	struct context *c = support_context(support_conversation);
	size_t n;
	const struct ctx_message *m = context_messages(c, NULL, &n);
	assert_int_equal(n, 12);
	assert_int_equal(m[0].role, CTX_USER);
	expect_part(&m[0], 0, CTX_TEXT, "What is in this directory?");

	assert_int_equal(m[1].role, CTX_ASSISTANT);
	assert_int_equal(m[1].nparts, 5);
	expect_part(&m[1], 0, CTX_REASONING, "The user wants a listing.");
	assert_string_equal(m[1].parts[0].signature, "sig-1");
	expect_part(&m[1], 1, CTX_REASONING, "opaque==");
	assert_true(m[1].parts[1].redacted);
	expect_part(&m[1], 2, CTX_REASONING, "unsigned thought");
	assert_null(m[1].parts[2].signature);
	expect_part(&m[1], 3, CTX_TEXT, "Let me look.");
	expect_part(&m[1], 4, CTX_TOOL_CALL, NULL);
	assert_string_equal(m[1].parts[4].call_id, "toolu_01");
	assert_string_equal(m[1].parts[4].args, "{\"command\":\"ls\"}");
	assert_false(m[1].parts[4].incomplete);

	assert_int_equal(m[2].role, CTX_TOOL);
	expect_part(&m[2], 0, CTX_TOOL_RESULT, "a.txt\nb.txt\n");
	assert_false(m[2].parts[0].is_error);
	/* The second step: its batches joined into one text. */
	assert_int_equal(m[3].role, CTX_ASSISTANT);
	assert_int_equal(m[3].nparts, 1);
	expect_part(&m[3], 0, CTX_TEXT, "There are two files.");
	/* The interrupted answer's partial text is the assistant's. */
	expect_part(&m[4], 0, CTX_TEXT, "Write a long poem.");
	assert_int_equal(m[5].role, CTX_ASSISTANT);
	expect_part(&m[5], 0, CTX_TEXT, "Roses are");
	/* The failed turn: the empty text is gone, the unsigned reasoning
	 * stays for the encoders to judge. */
	expect_part(&m[6], 0, CTX_TEXT, "Are you there?");
	assert_int_equal(m[7].role, CTX_ASSISTANT);
	assert_int_equal(m[7].nparts, 1);
	expect_part(&m[7], 0, CTX_REASONING, "hmm");
	/* The cut-off call: arguments {}, marked, with its result. */
	expect_part(&m[8], 0, CTX_TEXT, "Run it again.");
	expect_part(&m[9], 0, CTX_TOOL_CALL, NULL);
	assert_string_equal(m[9].parts[0].args, "{}");
	assert_true(m[9].parts[0].incomplete);
	expect_part(&m[10], 0, CTX_TOOL_RESULT, "[not_executed] cut off");
	assert_true(m[10].parts[0].is_error);
	expect_part(&m[11], 0, CTX_TEXT, "Thanks.");
	assert_string_equal(context_last_user_text(c, NULL), "Thanks.");
	context_free(c);
}

/* A call with no result in the log (a turn still open, or a log repair
 * has not closed) gets a not_executed one before the next message; a
 * result whose call is not in the branch is dropped; a result for the
 * same call twice is sent once. */
static void test_every_call_gets_exactly_one_result(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"turn/start\",\"turn\":\"a\",\"data\":{}}",
		"{\"type\":\"user/message\",\"turn\":\"a\",\"data\":{\"text\":\"go\"}}",
		"{\"type\":\"tool/result\",\"turn\":\"a\",\"data\":{\"call_id\":\"ghost\",\"status\":\"ok\"}}",
		"{\"type\":\"tool/call\",\"turn\":\"a\",\"data\":{\"call_id\":\"c1\",\"name\":\"read\",\"args\":{}}}",
		"{\"type\":\"tool/call\",\"turn\":\"a\",\"data\":{\"call_id\":\"c2\",\"name\":\"read\",\"args\":{\"p\":1}}}",
		"{\"type\":\"tool/result\",\"turn\":\"a\",\"data\":{\"call_id\":\"c2\",\"status\":\"denied\",\"output\":{\"why\":\"no\"}}}",
		"{\"type\":\"tool/result\",\"turn\":\"a\",\"data\":{\"call_id\":\"c2\",\"status\":\"ok\",\"output\":\"again\"}}",
		"{\"type\":\"user/message\",\"turn\":\"a\",\"data\":{\"text\":\"next\"}}",
		NULL,
	};
	struct context *c = support_context(lines);
	size_t n;
	const struct ctx_message *m = context_messages(c, NULL, &n);
	assert_int_equal(n, 5);
	assert_int_equal(m[0].role, CTX_USER);
	assert_int_equal(m[1].role, CTX_ASSISTANT);
	assert_int_equal(m[1].nparts, 2);
	assert_int_equal(m[2].role, CTX_TOOL);
	assert_string_equal(m[2].parts[0].call_id, "c2");
	assert_string_equal(m[2].parts[0].text, "[denied] {\"why\":\"no\"}");
	assert_int_equal(m[3].role, CTX_TOOL);
	assert_string_equal(m[3].parts[0].call_id, "c1");
	assert_string_equal(m[3].parts[0].text, "[not_executed] no result was recorded for this call");
	assert_true(m[3].parts[0].is_error);
	assert_int_equal(m[4].role, CTX_USER);
	context_free(c);

	/* A branch that ends with a call still waiting (an open turn). */
	static const char *const open_call[] = {
		"{\"type\":\"user/message\",\"turn\":\"a\",\"data\":{\"text\":\"go\"}}",
		"{\"type\":\"tool/call\",\"turn\":\"a\",\"data\":{\"call_id\":\"c9\",\"name\":\"read\",\"args\":\"{\\\"p\",\"incomplete\":true}}",
		NULL,
	};
	c = support_context(open_call);
	m = context_messages(c, NULL, &n);
	assert_int_equal(n, 3);
	assert_int_equal(m[2].role, CTX_TOOL);
	assert_string_equal(m[2].parts[0].call_id, "c9");
	assert_string_equal(m[2].parts[0].text,
			    "[not_executed] the call was cut off before its arguments were complete");
	context_free(c);
}

/* A call is sent back under the provider's id (provider_id), its result
 * too, however cairn names it in the log. */
static void test_calls_go_back_under_the_provider_id(void **state)
{
	(void)state;
	static const char *const lines[] = {
		"{\"type\":\"user/message\",\"turn\":\"a\",\"data\":{\"text\":\"go\"}}",
		"{\"type\":\"tool/call\",\"turn\":\"a\",\"data\":{\"call_id\":\"a.1\",\"provider_id\":\"toolu_X\",\"name\":\"read\",\"args\":{}}}",
		"{\"type\":\"tool/call\",\"turn\":\"a\",\"data\":{\"call_id\":\"a.2\",\"provider_id\":\"toolu_Y\",\"name\":\"read\",\"args\":{}}}",
		"{\"type\":\"tool/result\",\"turn\":\"a\",\"data\":{\"call_id\":\"a.1\",\"status\":\"ok\",\"output\":\"one\"}}",
		NULL,
	};
	struct context *c = support_context(lines);
	size_t n;
	const struct ctx_message *m = context_messages(c, NULL, &n);
	assert_int_equal(n, 4);
	assert_string_equal(m[1].parts[0].call_id, "toolu_X");
	assert_string_equal(m[1].parts[0].ref, "a.1");
	assert_string_equal(m[1].parts[1].call_id, "toolu_Y");
	assert_string_equal(m[2].parts[0].call_id, "toolu_X");
	assert_string_equal(m[2].parts[0].text, "one");
	assert_string_equal(m[3].parts[0].call_id, "toolu_Y"); /* the synthetic answer too */
	context_free(c);
}

static void test_reasoning_blocks_split_at_signatures_and_text(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"turn/start\",\"turn\":\"a\",\"data\":{}}",
		"{\"type\":\"user/message\",\"turn\":\"a\",\"data\":{\"text\":\"q\"}}",
		"{\"type\":\"assistant/reasoning\",\"turn\":\"a\",\"data\":{\"text\":\"one\",\"signature\":\"s1\"}}",
		"{\"type\":\"assistant/reasoning\",\"turn\":\"a\",\"data\":{\"text\":\"tw\"}}",
		"{\"type\":\"assistant/reasoning\",\"turn\":\"a\",\"data\":{\"text\":\"o\",\"signature\":\"s2\"}}",
		"{\"type\":\"assistant/text\",\"turn\":\"a\",\"data\":{\"text\":\"x\"}}",
		"{\"type\":\"assistant/reasoning\",\"turn\":\"a\",\"data\":{\"text\":\"three\"}}",
		"{\"type\":\"assistant/text\",\"turn\":\"a\",\"data\":{\"text\":\"y\"}}",
		"{\"type\":\"assistant/reasoning\",\"turn\":\"a\",\"data\":{\"text\":\"\",\"signature\":\"s4\"}}",
		NULL,
	};
	struct context *c = support_context(lines);
	size_t n;
	const struct ctx_message *m = context_messages(c, NULL, &n);
	assert_int_equal(n, 2);
	assert_int_equal(m[1].nparts, 6);
	expect_part(&m[1], 0, CTX_REASONING, "one");
	assert_string_equal(m[1].parts[0].signature, "s1");
	expect_part(&m[1], 1, CTX_REASONING, "two");
	assert_string_equal(m[1].parts[1].signature, "s2");
	expect_part(&m[1], 2, CTX_TEXT, "x");
	expect_part(&m[1], 3, CTX_REASONING, "three");
	expect_part(&m[1], 4, CTX_TEXT, "y");
	/* Empty thinking with a signature is still a block to send back. */
	expect_part(&m[1], 5, CTX_REASONING, "");
	assert_string_equal(m[1].parts[5].signature, "s4");
	context_free(c);
}

/* The view follows parent turns: a turn rewound to t1 does not see t2;
 * an absent parent_turn is the previous turn in log order; null a root. */
static void test_context_follows_parent_turns_not_log_order(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{\"parent_turn\":null}}",
		"{\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"one\"}}",
		"{\"type\":\"turn/start\",\"turn\":\"t2\",\"data\":{}}",
		"{\"type\":\"user/message\",\"turn\":\"t2\",\"data\":{\"text\":\"two\"}}",
		"{\"type\":\"branch/rewind\",\"data\":{\"to_turn\":\"t1\"}}",
		"{\"type\":\"turn/start\",\"turn\":\"t3\",\"data\":{\"parent_turn\":\"t1\"}}",
		"{\"type\":\"user/message\",\"turn\":\"t3\",\"data\":{\"text\":\"three\"}}",
		"{\"type\":\"turn/start\",\"turn\":\"t4\",\"data\":{\"parent_turn\":null}}",
		"{\"type\":\"user/message\",\"turn\":\"t4\",\"data\":{\"text\":\"four\"}}",
		NULL,
	};
	struct context *c = support_context(lines);
	size_t n;
	const struct ctx_message *m = context_messages(c, "t3", &n);
	assert_int_equal(n, 2);
	assert_string_equal(m[0].parts[0].text, "one");
	assert_string_equal(m[1].parts[0].text, "three");
	m = context_messages(c, "t2", &n);
	assert_int_equal(n, 2);
	assert_string_equal(m[1].parts[0].text, "two");
	m = context_messages(c, NULL, &n); /* the last started: a root */
	assert_int_equal(n, 1);
	assert_string_equal(m[0].parts[0].text, "four");
	assert_null(context_messages(c, "nope", &n));
	assert_int_equal(n, 0);
	context_free(c);
}

/* The active path is what the model gets: after a rewind, a new branch, a
 * checkout, a rewind before the first turn; and what prepare reads from
 * the same log bytes (persist/prepare.h) is the same path, turn by turn:
 * old logs without parent_turn and a foreign log starting an id again
 * included. */
static struct logbytes lb;

/* A turn/start (parent: JSON or NULL for absent) and its prompt, which
 * names the turn/start's seq. */
static void lb_turn(const char *id, const char *parent)
{
	char data[64], text[64];
	snprintf(data, sizeof data, "{\"parent_turn\":%s}", parent ? parent : "");
	snprintf(text, sizeof text, "{\"text\":\"@%llu\"}", (unsigned long long)lb.seq);
	lbytes_event(&lb, "turn/start", id, parent ? data : "{}");
	lbytes_event(&lb, "user/message", id, text);
}

/* The prompts the model would get, as "@1 @3", and prepare's path as the
 * seqs of its turn/starts in the same form: they must be equal. */
static void expect_active_path(const char *want)
{
	lbytes_commit(&lb);
	struct prepared *p = prepare_load(load_buffer((const uint8_t *)lb.bytes.p, lb.bytes.len, NULL));
	const struct load *l = prepared_load(p);
	struct context *c = context_new();
	struct cerr err;
	for (size_t i = 1; i < load_count(l); i++) {
		cJSON *e = load_json(l, i);
		assert_int_equal(context_add(c, (enum vocab_type)load_event(l, i)->type, load_turn(l, i),
					     cJSON_GetObjectItem(e, "data"), &err), 0);
		cJSON_Delete(e);
	}
	struct buf sent = BUF_INIT, path = BUF_INIT;
	size_t n;
	const struct ctx_message *m = context_messages(c, NULL, &n);
	for (size_t i = 0; i < n; i++)
		buf_printf(&sent, "%s%s", i ? " " : "", m[i].parts[0].text);
	for (size_t k = 0; k < prepared_path_len(p); k++)
		buf_printf(&path, "%s@%llu", k ? " " : "",
			   (unsigned long long)prepared_turn(p, prepared_path(p, k))->seq);
	assert_string_equal(sent.p ? sent.p : "", want);
	assert_string_equal(path.p ? path.p : "", want);
	buf_release(&sent);
	buf_release(&path);
	context_free(c);
	prepared_free(p);
}

static void test_model_gets_the_active_path_prepare_reads(void **state)
{
	(void)state;
	lbytes_init(&lb);
	lb_turn("t1", NULL); /* an old log: absent parents */
	lb_turn("t2", NULL);
	expect_active_path("@1 @3");
	lbytes_event(&lb, "branch/rewind", NULL, "{\"to_turn\":\"t1\",\"from_leaf\":\"t2\"}");
	expect_active_path("@1");
	lb_turn("t3", "\"t1\"");
	expect_active_path("@1 @6");
	lbytes_event(&lb, "branch/rewind", NULL, "{\"to_turn\":\"t2\",\"from_leaf\":\"t3\"}"); /* checkout */
	expect_active_path("@1 @3");
	lb_turn("t4", NULL); /* absent: the previous turn/start (t3), not the leaf */
	expect_active_path("@1 @6 @9");
	lbytes_event(&lb, "branch/rewind", NULL, "{\"to_turn\":null}");
	expect_active_path("");
	lb_turn("t5", "null");
	expect_active_path("@12");
	/* a foreign log starting t1 again: "t1" now means that turn */
	lb_turn("t1", "\"t4\"");
	lb_turn("t6", "\"t1\"");
	expect_active_path("@1 @6 @9 @14 @16");
	lbytes_event(&lb, "branch/rewind", NULL, "{\"to_turn\":\"t1\"}");
	expect_active_path("@1 @6 @9 @14");
	lbytes_release(&lb);
}

static void test_malformed_data_fails_and_unseen_types_are_ignored(void **state)
{
	struct context *c = context_new();
	struct cerr err;
	cJSON *d = cJSON_Parse("{\"call_id\":\"x\",\"name\":\"y\"}");
	assert_int_equal(context_add(c, VT_TOOL_CALL, "a", d, &err), -1);
	assert_int_equal(err.cls, CERR_CORRUPT);
	cJSON_Delete(d);
	d = cJSON_Parse("{\"text\":1}");
	assert_int_equal(context_add(c, VT_USER_MESSAGE, "a", d, &err), -1);
	cJSON_Delete(d);
	/* Types the model does not see are ignored. */
	d = cJSON_Parse("{}");
	assert_int_equal(context_add(c, VT_INPUT_QUEUED, NULL, d, &err), 0);
	assert_int_equal(context_add(c, VT_UNKNOWN, NULL, d, &err), 0);
	cJSON_Delete(d);
	size_t n;
	context_messages(c, NULL, &n);
	assert_int_equal(n, 0);
	context_free(c);
}

/* A prompt and a tool output too long for an event: the model gets them
 * whole from their blobs; without the session directory, the head and
 * tail kept inline; a blob that cannot be read fails the add. */
static void test_blob_content_reaches_the_model_whole(void **state)
{
	char dir[256], root[256];
	assert_int_equal(tmp_root("ctxblob", dir, sizeof dir, root, sizeof root), 0);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	size_t n = BLOB_INLINE_MAX + 1000;
	char *big = malloc(n + 1), *out = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + i % 26), out[i] = (char)('0' + i % 10);
	big[n] = out[n] = '\0';
	out[5] = '\xff'; /* a tool's output may be any bytes */
	struct blob_ref ref, oref;
	char *inl = NULL;
	const char *oinl;
	struct cerr err;
	assert_int_equal(blob_spill(dfd, big, n, &ref, &inl, &err), 1);
	assert_int_equal(blob_write(dfd, out, n, &oref, &err), 0);
	oinl = "(head and tail)";
	cJSON *um = cJSON_CreateObject(), *call = cJSON_Parse("{\"call_id\":\"c\",\"name\":\"sh\",\"args\":{}}");
	cJSON *res = cJSON_CreateObject();
	cJSON_AddStringToObject(um, "text", inl);
	blob_ref_to_data(um, &ref);
	cJSON_AddStringToObject(res, "call_id", "c");
	cJSON_AddStringToObject(res, "status", "ok");
	cJSON_AddStringToObject(res, "output", oinl);
	blob_ref_to_data(res, &oref);
	for (int with_dir = 0; with_dir < 2; with_dir++) {
		struct context *c = context_new();
		context_set_result_max(c, 2 * n); /* the whole output may be read */
		if (with_dir)
			context_set_blob_dir(c, dfd);
		assert_int_equal(context_add(c, VT_USER_MESSAGE, "t", um, &err), 0);
		assert_int_equal(context_add(c, VT_TOOL_CALL, "t", call, &err), 0);
		assert_int_equal(context_add(c, VT_TOOL_RESULT, "t", res, &err), 0);
		size_t k;
		const struct ctx_message *m = context_messages(c, NULL, &k);
		assert_int_equal(k, 3);
		if (with_dir) {
			assert_string_equal(m[0].parts[0].text, big);
			assert_int_equal(strlen(m[2].parts[0].text), n + 2); /* \xff became U+FFFD */
			assert_memory_equal(m[2].parts[0].text, out, 5);
			assert_memory_equal(m[2].parts[0].text + 5, "\xef\xbf\xbd", 3);
		} else {
			assert_string_equal(m[0].parts[0].text, inl);
			assert_string_equal(m[2].parts[0].text, oinl);
		}
		context_free(c);
	}
	/* By default the model reads at most CONTEXT_RESULT_MAX of a result:
	 * its head and tail, with what was cut said between them. */
	struct context *cc = context_new();
	context_set_blob_dir(cc, dfd);
	assert_int_equal(context_add(cc, VT_TOOL_CALL, "t", call, &err), 0);
	assert_int_equal(context_add(cc, VT_TOOL_RESULT, "t", res, &err), 0);
	size_t nm;
	const struct ctx_message *mm = context_messages(cc, NULL, &nm);
	assert_int_equal(nm, 2);
	const char *t = mm[1].parts[0].text;
	assert_true(strlen(t) <= CONTEXT_RESULT_MAX + 64);
	assert_non_null(strstr(t, "bytes cut"));
	assert_memory_equal(t, out, 5);
	context_free(cc);
	/* The blob gone: the add fails, naming it, instead of a cut prompt. */
	char path[512];
	snprintf(path, sizeof path, "%s/blobs/%s", dir, ref.sha256);
	assert_int_equal(unlink(path), 0);
	struct context *c = context_new();
	context_set_blob_dir(c, dfd);
	assert_int_equal(context_add(c, VT_USER_MESSAGE, "t", um, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	context_free(c);
	cJSON_Delete(um);
	cJSON_Delete(call);
	cJSON_Delete(res);
	free(inl);
	free(big);
	free(out);
	close(dfd);
	rm_rf(dir);
}

/* A call whose arguments the log could not keep as JSON (args_raw, in a
 * blob when long) goes back with {}: the text is not sent as arguments,
 * and the blob is not needed (a missing one fails nothing). */
static void test_call_with_raw_args_goes_back_with_an_empty_object(void **state)
{
	(void)state;
	char dir[256], root[256];
	assert_int_equal(tmp_root("ctxraw", dir, sizeof dir, root, sizeof root), 0);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	size_t n = BLOB_INLINE_MAX + 1000;
	char *big = malloc(n + 1);
	memset(big, 'x', n);
	memcpy(big, "{\"a\":1e400,\"b\":\"", 16); /* a number a double cannot hold */
	memcpy(big + n - 2, "\"}", 3);
	struct blob_ref ref;
	char *inl = NULL;
	struct cerr err;
	assert_int_equal(blob_spill(dfd, big, n, &ref, &inl, &err), 1);
	cJSON *spilled = cJSON_Parse("{\"call_id\":\"c1\",\"name\":\"shell\",\"args\":{}}");
	cJSON_AddStringToObject(spilled, "args_raw", inl);
	blob_ref_to_data(spilled, &ref);
	cJSON *small = cJSON_Parse("{\"call_id\":\"c2\",\"name\":\"shell\",\"args\":{},"
				   "\"args_raw\":\"{\\\"command\\\":\\\"a\\\",\\\"command\\\":\\\"b\\\"}\"}");
	cJSON *r1 = cJSON_Parse("{\"call_id\":\"c1\",\"status\":\"error\",\"output\":\"error: invalid arguments\"}");
	cJSON *r2 = cJSON_Parse("{\"call_id\":\"c2\",\"status\":\"error\",\"output\":\"error: invalid arguments\"}");
	for (int gone = 0; gone < 2; gone++) {
		if (gone) {
			char path[512];
			snprintf(path, sizeof path, "%s/blobs/%s", dir, ref.sha256);
			assert_int_equal(unlink(path), 0);
		}
		struct context *c = context_new();
		context_set_blob_dir(c, dfd);
		assert_int_equal(context_add(c, VT_TOOL_CALL, "t", spilled, &err), 0);
		assert_int_equal(context_add(c, VT_TOOL_CALL, "t", small, &err), 0);
		assert_int_equal(context_add(c, VT_TOOL_RESULT, "t", r1, &err), 0);
		assert_int_equal(context_add(c, VT_TOOL_RESULT, "t", r2, &err), 0);
		size_t k;
		const struct ctx_message *m = context_messages(c, NULL, &k);
		assert_int_equal(k, 3);
		assert_int_equal(m[0].nparts, 2);
		for (size_t i = 0; i < 2; i++) {
			assert_int_equal(m[0].parts[i].kind, CTX_TOOL_CALL);
			assert_string_equal(m[0].parts[i].args, "{}");
			assert_false(m[0].parts[i].incomplete); /* answered: not cut off */
		}
		assert_string_equal(m[1].parts[0].text, "error: invalid arguments");
		context_free(c);
	}
	cJSON_Delete(spilled);
	cJSON_Delete(small);
	cJSON_Delete(r1);
	cJSON_Delete(r2);
	free(inl);
	free(big);
	close(dfd);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_becomes_the_provider_message_sequence),
		cmocka_unit_test(test_every_call_gets_exactly_one_result),
		cmocka_unit_test(test_calls_go_back_under_the_provider_id),
		cmocka_unit_test(test_reasoning_blocks_split_at_signatures_and_text),
		cmocka_unit_test(test_context_follows_parent_turns_not_log_order),
		cmocka_unit_test(test_model_gets_the_active_path_prepare_reads),
		cmocka_unit_test(test_malformed_data_fails_and_unseen_types_are_ignored),
		cmocka_unit_test(test_blob_content_reaches_the_model_whole),
		cmocka_unit_test(test_call_with_raw_args_goes_back_with_an_empty_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
