/* test_chat_files.c — the chat screen's files (app/chat_files.c): the
 * editor's file is written, read back and removed, each on a libuv worker
 * (with the pool's one thread held, nothing completes), its read capped
 * (one byte over the cap is refused, classified, the file still removed);
 * the clipboard file is replaced whole, and a root it cannot be written
 * in is a classified error naming the file. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/chat_files.h"
#include "base/buf.h"
#include "tests/unit/support_fixture.h"

struct got {
	int calls;
	char *path, *text;
	size_t n;
	bool failed;
	struct cerr err;
};

static void on_file(void *ctx, const char *path, const char *text, size_t n, const struct cerr *err)
{
	struct got *g = ctx;
	g->calls++;
	g->path = path ? strdup(path) : NULL;
	if (text) {
		assert_int_equal(text[n], '\0');
		g->text = malloc(n + 1);
		memcpy(g->text, text, n + 1);
	}
	g->n = n;
	if (err) {
		g->failed = true;
		g->err = *err;
	}
}

static void got_release(struct got *g)
{
	free(g->path);
	free(g->text);
	*g = (struct got){0};
}

struct fx {
	char dir[64], root[128];
	uv_loop_t loop;
	struct chat_files *f;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof *x);
	assert_int_equal(tmp_root("chatfiles", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(mkdir(x->root, 0700), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	x->f = chat_files_new(&x->loop, x->root);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	chat_files_free(x->f);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	rm_rf(x->dir);
	free(x);
	return 0;
}

static void run(struct fx *x)
{
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
}

static void test_editor_file_written_read_back_and_removed(void **state)
{
	struct fx *x = *state;
	struct got w = {0}, r = {0};
	struct cerr err;
	const char text[] = "a prompt\nover two lines\n";
	assert_int_equal(x->f->edit_write(x->f->fctx, text, strlen(text), on_file, &w, &err), 0);
	assert_int_equal(w.calls, 0); /* never from inside the call */
	run(x);
	assert_int_equal(w.calls, 1);
	assert_false(w.failed);
	char prefix[200];
	snprintf(prefix, sizeof prefix, "%s/prompt-", x->root);
	assert_true(strncmp(w.path, prefix, strlen(prefix)) == 0);
	size_t n;
	uint8_t *on_disk = slurp(w.path, &n);
	assert_int_equal(n, strlen(text));
	assert_memory_equal(on_disk, text, n);
	free(on_disk);
	struct stat st;
	assert_int_equal(stat(w.path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	spit(w.path, "edited\n", 7, O_TRUNC); /* what the editor saved */
	assert_int_equal(x->f->edit_read(x->f->fctx, w.path, 100, on_file, &r, &err), 0);
	assert_int_equal(r.calls, 0);
	run(x);
	assert_int_equal(r.calls, 1);
	assert_false(r.failed);
	assert_int_equal(r.n, 7);
	assert_string_equal(r.text, "edited\n");
	assert_false(exists(w.path)); /* removed once read */
	got_release(&w);
	got_release(&r);
}

static void test_editor_file_read_is_capped(void **state)
{
	struct fx *x = *state;
	char *path = strdup(path_in(x->root, "prompt-test"));
	char big[101];
	memset(big, 'x', sizeof big);
	struct got r = {0};
	struct cerr err;
	/* At the cap: read. */
	spit(path, big, 100, O_CREAT | O_TRUNC);
	assert_int_equal(x->f->edit_read(x->f->fctx, path, 100, on_file, &r, &err), 0);
	run(x);
	assert_false(r.failed);
	assert_int_equal(r.n, 100);
	got_release(&r);
	/* One byte over: refused, classified, nothing read, the file gone. */
	spit(path, big, 101, O_CREAT | O_TRUNC);
	assert_int_equal(x->f->edit_read(x->f->fctx, path, 100, on_file, &r, &err), 0);
	run(x);
	assert_int_equal(r.calls, 1);
	assert_true(r.failed);
	assert_int_equal(r.err.cls, CERR_USAGE);
	assert_non_null(strstr(r.err.msg, "larger than 100 bytes"));
	assert_null(r.text);
	assert_false(exists(path));
	got_release(&r);
	/* Removed by the editor: CERR_MISSING. */
	assert_int_equal(x->f->edit_read(x->f->fctx, path, 100, on_file, &r, &err), 0);
	run(x);
	assert_true(r.failed);
	assert_int_equal(r.err.cls, CERR_MISSING);
	got_release(&r);
	free(path);
}

/* The pool's one thread (UV_THREADPOOL_SIZE=1, set in main) held by a
 * work item until the loop lets it go. */
struct hold {
	uv_work_t w;
	uv_sem_t go;
	atomic_bool started;
	struct got *r;
	int read_calls_at_release;
};

static void hold_work(uv_work_t *w)
{
	struct hold *h = w->data;
	atomic_store(&h->started, true);
	uv_sem_wait(&h->go);
}

static void hold_after(uv_work_t *w, int status)
{
	(void)w;
	assert_int_equal(status, 0);
}

static void release(uv_timer_t *t)
{
	struct hold *h = t->data;
	h->read_calls_at_release = h->r->calls;
	uv_close((uv_handle_t *)t, NULL);
	uv_sem_post(&h->go);
}

static void test_editor_file_read_waits_for_a_worker(void **state)
{
	struct fx *x = *state;
	char *path = strdup(path_in(x->root, "prompt-test"));
	spit(path, "edited", 6, O_CREAT | O_TRUNC);
	struct got r = {0};
	struct hold h = {.r = &r};
	assert_int_equal(uv_sem_init(&h.go, 0), 0);
	h.w.data = &h;
	assert_int_equal(uv_queue_work(&x->loop, &h.w, hold_work, hold_after), 0);
	while (!atomic_load(&h.started))
		uv_sleep(1); /* bounded by the pool taking the work */
	struct cerr err;
	assert_int_equal(x->f->edit_read(x->f->fctx, path, 100, on_file, &r, &err), 0);
	/* Changed after the call: a read done inside it would not see this. */
	spit(path, "edited later", 12, O_TRUNC);
	/* The loop turns (a timer a few ms on) while the only worker is held:
	 * a read done on the loop would have completed by then. */
	uv_timer_t t;
	uv_timer_init(&x->loop, &t);
	t.data = &h;
	uv_timer_start(&t, release, 20, 0);
	run(x);
	assert_int_equal(h.read_calls_at_release, 0);
	assert_int_equal(r.calls, 1);
	assert_false(r.failed);
	assert_string_equal(r.text, "edited later");
	uv_sem_destroy(&h.go);
	got_release(&r);
	free(path);
}

static void test_clipboard_file_replaced_whole(void **state)
{
	struct fx *x = *state;
	struct got c = {0};
	struct cerr err;
	assert_int_equal(x->f->clip_write(x->f->fctx, "a longer first copy", 19, on_file, &c, &err), 0);
	run(x);
	got_release(&c);
	assert_int_equal(x->f->clip_write(x->f->fctx, "second", 6, on_file, &c, &err), 0);
	run(x);
	assert_false(c.failed);
	char want[200];
	snprintf(want, sizeof want, "%s/clipboard.txt", x->root);
	assert_string_equal(c.path, want);
	size_t n;
	uint8_t *p = slurp(want, &n);
	assert_int_equal(n, 6);
	assert_memory_equal(p, "second", 6);
	free(p);
	got_release(&c);
}

static void test_clipboard_file_that_cannot_be_written(void **state)
{
	struct fx *x = *state;
	char root[200];
	snprintf(root, sizeof root, "%s/not-a-dir", x->dir);
	spit(root, "", 0, O_CREAT | O_TRUNC);
	struct chat_files *f = chat_files_new(&x->loop, root);
	struct got c = {0};
	struct cerr err;
	assert_int_equal(f->clip_write(f->fctx, "text", 4, on_file, &c, &err), 0);
	run(x);
	assert_true(c.failed);
	assert_int_equal(c.err.cls, CERR_IO);
	assert_non_null(strstr(c.err.msg, "not-a-dir/clipboard.txt"));
	got_release(&c);
	struct got w = {0};
	assert_int_equal(f->edit_write(f->fctx, "text", 4, on_file, &w, &err), 0);
	run(x);
	assert_true(w.failed);
	assert_int_equal(w.err.cls, CERR_IO);
	got_release(&w);
	chat_files_free(f);
}

int main(void)
{
	setenv("UV_THREADPOOL_SIZE", "1", 1); /* before the pool starts */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_editor_file_written_read_back_and_removed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_editor_file_read_is_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_editor_file_read_waits_for_a_worker, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clipboard_file_replaced_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clipboard_file_that_cannot_be_written, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
