/* test_fifo_spill.c — the FIFO writer sends content too long for an event
 * to a blob before the event is appended (persist/fifo_spill.c): a paste
 * larger than the log's line limit is saved, not refused; the event keeps
 * a bounded head and tail and names the blob, which reads back whole;
 * short texts and events that name their own blob are left as they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/fifo.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

struct sx {
	char dir[64], root[128];
	uv_loop_t loop;
	struct fifo *f;
	int done;
	struct cerr last;
};

static void item_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	(void)r;
	struct sx *x = ctx;
	x->done++;
	x->last = err ? *err : (struct cerr){0};
}

static int setup(void **state)
{
	struct sx *x = xcalloc(1, sizeof *x);
	struct cerr err;
	assert_int_equal(tmp_root("cairn-spill", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct sx *x = *state;
	assert_int_equal(fifo_close_wait(x->f, deadline(10000)), 0);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	rm_rf(x->dir);
	free(x);
	return 0;
}

/* Post one item and wait for its completion. */
static void save(struct sx *x, struct fifo_item *it)
{
	struct cerr err;
	int want = x->done + 1;
	assert_int_equal(fifo_post(x->f, it, item_cb, x, &err), 0);
	assert_int_equal(fifo_flush_wait(x->f, NULL, deadline(10000)), 0);
	while (x->done < want)
		uv_run(&x->loop, UV_RUN_NOWAIT);
}

static cJSON *event(const char *type, const char *turn, cJSON *data)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", type);
	if (turn)
		cJSON_AddStringToObject(e, "turn", turn);
	cJSON_AddItemToObject(e, "data", data);
	return e;
}

/* n bytes of text that differ along their length (not one repeated byte). */
static char *long_text(size_t n)
{
	char *t = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		t[i] = (char)('a' + (i * 7 + i / 1000) % 26);
	memcpy(t + n - 3, "END", 3);
	t[n] = '\0';
	return t;
}

static int session_dir(struct sx *x)
{
	char *p = session_path(x->root, STORE_SESSIONS, "/w", "S", NULL);
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	free(p);
	assert_true(fd >= 0);
	return fd;
}

/* A paste three times the log's line limit in the very first batch (the
 * blob comes before the session's first append), a tool's long output,
 * and a short message: the long ones are saved through blobs. */
static void test_long_texts_go_to_blobs_and_read_back_whole(void **state)
{
	struct sx *x = *state;
	size_t big = 3u * EVENT_MAX_LINE, out = BLOB_INLINE_MAX + 1;
	char *paste = long_text(big), *output = long_text(out);
	cJSON *evs = cJSON_CreateArray();
	cJSON_AddItemToArray(evs, event("turn/start", "t1", cJSON_CreateObject()));
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", paste);
	cJSON_AddItemToArray(evs, event("user/message", "t1", d));
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "call_id", "c1");
	cJSON_AddStringToObject(d, "name", "shell");
	cJSON_AddItemToObject(d, "args", cJSON_CreateObject());
	cJSON_AddItemToArray(evs, event("tool/call", "t1", d));
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "call_id", "c1");
	cJSON_AddStringToObject(d, "status", "ok");
	cJSON_AddStringToObject(d, "output", output);
	cJSON_AddItemToArray(evs, event("tool/result", "t1", d));
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", "short");
	cJSON_AddItemToArray(evs, event("user/message", "t1", d));
	struct fifo_item *it = fifo_history("S", 1, evs);
	fifo_item_create(it, "/w");
	save(x, it);
	if (x->last.cls != CERR_OK)
		fail_msg("save: %s", x->last.msg);
	char *log = session_path(x->root, STORE_SESSIONS, "/w", "S", LOG_FILE);
	struct scan *s = scan_path(log);
	free(log);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_events, 6);
	int dirfd = session_dir(x);
	const char *const whole[] = {NULL, NULL, paste, NULL, output, NULL};
	const char *const field[] = {NULL, NULL, "text", NULL, "output", "text"};
	for (size_t i = 2; i < 6; i++) {
		if (!field[i])
			continue;
		const cJSON *data = s->events[i].data;
		const char *kept = cJSON_GetObjectItem(data, field[i])->valuestring;
		struct blob_ref ref;
		struct cerr err;
		int has = blob_ref_from_data(data, &ref, &err);
		if (!whole[i]) {
			assert_int_equal(has, 0);
			assert_string_equal(kept, "short");
			continue;
		}
		assert_int_equal(has, 1);
		assert_int_equal(ref.size, strlen(whole[i]));
		/* bounded inline: its head and tail, around a note */
		assert_true(strlen(kept) < BLOB_INLINE_HEAD + BLOB_INLINE_TAIL + 512);
		assert_memory_equal(kept, whole[i], 100);
		assert_non_null(strstr(kept, "END"));
		struct buf b = BUF_INIT;
		assert_int_equal(blob_read(dirfd, &ref, &b, &err), 0);
		assert_int_equal(b.len, strlen(whole[i]));
		assert_memory_equal(b.p, whole[i], b.len);
		buf_release(&b);
	}
	close(dirfd);
	scan_free(s);
	free(paste);
	free(output);
}

/* An event that names its own blob is written as given, even when its
 * inline text is long: the producer chose what to keep. */
static void test_an_event_naming_its_blob_is_left_alone(void **state)
{
	struct sx *x = *state;
	char *text = long_text(BLOB_INLINE_MAX + 10);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", text);
	cJSON *b = cJSON_AddObjectToObject(d, "blob");
	cJSON_AddStringToObject(b, "sha256",
				"0000000000000000000000000000000000000000000000000000000000000000");
	cJSON_AddNumberToObject(b, "size", 1);
	cJSON *evs = cJSON_CreateArray();
	cJSON_AddItemToArray(evs, event("user/message", NULL, d));
	struct fifo_item *it = fifo_history("S", 1, evs);
	fifo_item_create(it, "/w");
	save(x, it);
	assert_int_equal(x->last.cls, CERR_OK);
	char *log = session_path(x->root, STORE_SESSIONS, "/w", "S", LOG_FILE);
	struct scan *s = scan_path(log);
	free(log);
	assert_string_equal(cJSON_GetObjectItem(s->events[1].data, "text")->valuestring, text);
	scan_free(s);
	char *blobs = session_path(x->root, STORE_SESSIONS, "/w", "S", BLOB_DIR);
	assert_false(exists(blobs));
	free(blobs);
	free(text);
}

/* Arguments the log kept as text (tool/call args_raw: not JSON it could
 * keep) longer than the line limit go to a blob like any long text: the
 * call is saved, not refused. */
static void test_long_raw_tool_arguments_go_to_a_blob(void **state)
{
	struct sx *x = *state;
	char *raw = long_text(2u * EVENT_MAX_LINE);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "call_id", "c1");
	cJSON_AddStringToObject(d, "name", "write_file");
	cJSON_AddItemToObject(d, "args", cJSON_CreateObject());
	cJSON_AddStringToObject(d, "args_raw", raw);
	cJSON *evs = cJSON_CreateArray();
	cJSON_AddItemToArray(evs, event("turn/start", "t1", cJSON_CreateObject()));
	cJSON_AddItemToArray(evs, event("tool/call", "t1", d));
	struct fifo_item *it = fifo_history("S", 1, evs);
	fifo_item_create(it, "/w");
	save(x, it);
	if (x->last.cls != CERR_OK)
		fail_msg("save: %s", x->last.msg);
	char *log = session_path(x->root, STORE_SESSIONS, "/w", "S", LOG_FILE);
	struct scan *s = scan_path(log);
	free(log);
	assert_int_equal(s->status, SCAN_OK);
	assert_int_equal(s->n_events, 3);
	const cJSON *data = s->events[2].data;
	assert_true(cJSON_IsObject(cJSON_GetObjectItem(data, "args")));
	const char *kept = cJSON_GetObjectItem(data, "args_raw")->valuestring;
	assert_true(strlen(kept) < BLOB_INLINE_HEAD + BLOB_INLINE_TAIL + 512);
	struct blob_ref ref;
	struct cerr err;
	assert_int_equal(blob_ref_from_data(data, &ref, &err), 1);
	int dirfd = session_dir(x);
	struct buf b = BUF_INIT;
	assert_int_equal(blob_read(dirfd, &ref, &b, &err), 0);
	assert_int_equal(b.len, strlen(raw));
	assert_memory_equal(b.p, raw, b.len);
	buf_release(&b);
	close(dirfd);
	scan_free(s);
	free(raw);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_long_texts_go_to_blobs_and_read_back_whole),
		T(test_an_event_naming_its_blob_is_left_alone),
		T(test_long_raw_tool_arguments_go_to_a_blob),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
