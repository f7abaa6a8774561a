/* support_log.c — the log tests' fixture (see support_log.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/support_log.h"

#include <stdlib.h>

#include "persist/event.h"
#include "persist/frame.h"
#include "persist/fsops.h"
#include "tests/unit/support_fixture.h"

int logfx_setup(void **state)
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

int logfx_teardown(void **state)
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
int add(struct log *lg, uint64_t expect, const char *batch, uint64_t *next, struct cerr *err)
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

void add_ok(struct log *lg, uint64_t expect, const char *batch, uint64_t want_next)
{
	struct cerr err = {0};
	uint64_t next = 0;
	int r = add(lg, expect, batch, &next, &err);
	if (r != 0)
		fail_msg("append failed: %s", err.msg);
	assert_int_equal(next, want_next);
	assert_int_equal(log_next_seq(lg), want_next);
}

/* A published session `id` (key _no-cwd) holding header + `frames` batches of
 * B_TEXT after B_TURN; returns its log path. The handle is closed. */
const char *make_session(struct fx *f, const char *id, int frames)
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

struct log *open_ok(struct fx *f, const char *id)
{
	struct log *lg;
	struct cerr err;
	if (log_open(f->st, id, &lg, &err) < 0)
		fail_msg("log_open '%s': %s", id, err.msg);
	return lg;
}

/* The bytes of one frame holding an assistant/text event with seq. */
void text_frame(struct buf *out, uint64_t seq)
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
