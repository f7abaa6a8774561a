/* test_fifo_held.c — sessions the FIFO holds open for a host, on a
 * running loop: fifo_open repairs whatever the catalog says (a torn tail
 * cut, an open turn closed) and holds the writer lock through a handle
 * cache of 4 under 200 sessions, reading the session on a helper while the
 * batch goes on; fifo_release lets go; the running status set with an
 * append and cleared by a full save, a stale one not blocking a delete; an
 * open rebuilding the row only for a changed log; an open reading the log
 * once, with no tree per event; a created session's header. Each test ends with uv_loop_close() == 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/draft.h"
#include "persist/fifo.h"
#include "persist/prepare.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fifoloop.h"
#include "tests/unit/support_fixture.h"

/* An open takes the lock and reads the log whatever the catalog says: a
 * torn tail (garbage after the last frame, as a crash mid-write leaves) is
 * cut and the turn left open is closed by a synthetic turn/end; the
 * session comes back read, with the closer in it, and stays locked. */
static void test_open_cuts_torn_tail_and_closes_open_turn(void **state)
{
	struct lx *x = *state;
	struct lx_rec c;
	lx_post_wait(x, lx_hist("A", 1, true), &c);
	lx_post_wait(x, fifo_history("A", 2, lx_one_event("turn/start", "t1", NULL, NULL)), &c);
	lx_post_wait(x, fifo_release("A"), &c); /* the cache's handle goes: the file is free */
	char *path = session_path(x->root, "sessions", NULL, "A", "session.jsonl.zst");
	static const uint8_t torn[] = {0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x10, 0x01};
	spit(path, torn, sizeof torn, O_APPEND);
	lx_post_wait(x, fifo_open("A"), &c);
	assert_int_equal(c.cut_bytes, sizeof torn);
	assert_int_equal(c.closers, 1);
	assert_int_equal(c.next_seq, 4);
	assert_non_null(c.prepared);
	assert_int_equal(prepared_scan(c.prepared)->status, SCAN_OK);
	assert_null(prepared_open_turn(c.prepared));
	const struct load *l = prepared_load(c.prepared);
	assert_int_equal(load_count(l), 4);
	assert_int_equal(load_event(l, 3)->type, VT_TURN_END);
	assert_int_equal(prepared_n_turns(c.prepared), 1);
	prepared_free(c.prepared);
	assert_int_equal(lx_try_lock(x, "A"), CERR_LOCKED);
	/* Opened twice, the repair would end the host's own turn. */
	lx_post(x, fifo_open("A"), &c);
	lx_run_until(x, &c.calls, 1);
	assert_false(c.ok);
	assert_int_equal(c.err.cls, CERR_USAGE);
	/* Writes go on from the seq it reported; the release lets it go. */
	lx_post_wait(x, lx_hist("A", 4, false), &c);
	assert_int_equal(c.next_seq, 5);
	lx_post_wait(x, fifo_release("A"), &c);
	assert_int_equal(lx_try_lock(x, "A"), CERR_OK);
	free(path);
}

/* An open reads its session on a helper while the writer goes on with the
 * batch: items of other sessions in the same batch, and a write of the
 * opened session after it, all complete in post order, and the session
 * read is the log as the open left it (the later write not in it). */
static void test_open_in_a_batch_with_other_writes(void **state)
{
	struct lx *x = *state;
	static const char *const ids[] = {"A", "B"};
	lx_create_all(x, ids, 2);
	struct lx_rec c[5];
	fifo_pause(x->f, true);
	lx_post(x, lx_hist("B", 2, false), &c[0]);
	lx_post(x, fifo_open("A"), &c[1]);
	lx_post(x, lx_hist("B", 3, false), &c[2]);
	lx_post(x, lx_hist("A", 2, false), &c[3]);
	lx_barrier(x, NULL, &c[4]);
	fifo_pause(x->f, false);
	lx_run_until(x, &c[4].calls, 1);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(c[i].calls, 1);
		assert_true(c[i].ok);
		assert_true(i == 0 || c[i - 1].order < c[i].order);
	}
	assert_int_equal(c[1].next_seq, 2);
	assert_int_equal(prepared_scan(c[1].prepared)->status, SCAN_OK);
	assert_int_equal(load_count(prepared_load(c[1].prepared)), 2); /* header and its first event */
	prepared_free(c[1].prepared);
	assert_int_equal(c[2].next_seq, 4);
	assert_int_equal(c[3].next_seq, 3);
	assert_int_equal(lx_try_lock(x, "A"), CERR_LOCKED);
}

/* Set the catalog's last_prompt of id behind the FIFO's back (a row the
 * log does not say), then return what the row says after an open and a
 * release. */
static char *prompt_after_open(struct lx *x, const char *id, const char *set)
{
	char *db = xasprintf("%s/index.db", x->root), *sql = NULL;
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	sql = sqlite3_mprintf("UPDATE sessions SET last_prompt = %Q WHERE id = %Q", set, id);
	assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_free(sql);
	sqlite3_close(h);
	free(db);
	struct lx_rec c;
	lx_post_wait(x, fifo_open(id), &c);
	prepared_free(c.prepared);
	lx_post_wait(x, fifo_release(id), &c);
	return lx_row_field(x, id, true);
}

/* An open rebuilds the session's row only when it is not the projection of
 * the log file as read (identity, length, ctime, version): for an
 * unchanged log it writes nothing but the status (rebuilding a long
 * session's row and search index whole was most of the cost of opening
 * it). A log whose file changed in any way (here only its ctime, by a
 * chmod) is projected again, and a status left running is cleared either
 * way. */
static void test_open_rebuilds_the_row_only_for_a_changed_log(void **state)
{
	struct lx *x = *state;
	struct lx_rec c;
	lx_post_wait(x, lx_hist("A", 1, true), &c);
	lx_post_wait(x, fifo_release("A"), &c);
	char *p = prompt_after_open(x, "A", "not in the log");
	assert_string_equal(p, "not in the log"); /* the row was left alone */
	free(p);
	char *path = session_path(x->root, "sessions", NULL, "A", "session.jsonl.zst");
	assert_int_equal(chmod(path, 0640), 0);
	p = prompt_after_open(x, "A", "not in the log either");
	assert_string_equal(p, "hello"); /* projected again from the log */
	free(p);
	lx_set_status(x, "A", "running");
	free(prompt_after_open(x, "A", "hello"));
	char *status = lx_row_status(x, "A");
	assert_string_equal(status, "idle");
	free(status);
	free(path);
}

/* ---- one read per open ---- */

/* Bytes every pread through fsops returned, on any thread. */
static atomic_size_t read_bytes;
static ssize_t counting_pread(int fd, void *b, size_t n, off_t off)
{
	ssize_t r = fsops_real.pread(fd, b, n, off);
	if (r > 0)
		atomic_fetch_add(&read_bytes, (size_t)r);
	return r;
}
static struct fsops counting_ops;

/* cJSON's allocations alive, and the most alive at once, on any thread. */
static atomic_long json_live, json_peak;
static void *counting_malloc(size_t n)
{
	long live = atomic_fetch_add(&json_live, 1) + 1;
	long peak = atomic_load(&json_peak);
	while (live > peak && !atomic_compare_exchange_weak(&json_peak, &peak, live))
		;
	return malloc(n);
}
static void counting_free(void *p)
{
	if (p)
		atomic_fetch_sub(&json_live, 1);
	free(p);
}

/* Session id with `turns` turns of 4 events (turn/start, user/message,
 * assistant/text, turn/end) after its header; returns its log's size. */
static size_t build_turns(struct lx *x, const char *id, size_t turns)
{
	struct lx_rec c;
	lx_post_wait(x, lx_hist(id, 1, true), &c);
	uint64_t seq = 2;
	for (size_t done = 0; done < turns;) {
		cJSON *a = cJSON_CreateArray();
		for (size_t k = 0; k < 50 && done < turns; k++, done++) {
			char turn[32];
			snprintf(turn, sizeof turn, "t%zu", done);
			static const char *const types[] = {"turn/start", "user/message", "assistant/text",
							    "turn/end"};
			for (int e = 0; e < 4; e++) {
				cJSON *one = lx_one_event(types[e], turn, NULL, NULL);
				cJSON *ev = cJSON_DetachItemFromArray(one, 0);
				cJSON_Delete(one);
				cJSON *d = cJSON_AddObjectToObject(ev, "data");
				if (e == 1 || e == 2)
					cJSON_AddStringToObject(d, "text", "some words of a turn, said once");
				if (e == 3)
					cJSON_AddStringToObject(d, "outcome", "completed");
				cJSON_AddItemToArray(a, ev);
			}
		}
		size_t n = (size_t)cJSON_GetArraySize(a);
		lx_post_wait(x, fifo_history(id, seq, a), &c);
		seq += n;
	}
	lx_post_wait(x, fifo_release(id), &c);
	char *path = session_path(x->root, "sessions", NULL, id, "session.jsonl.zst");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	free(path);
	return (size_t)st.st_size;
}

/* An open reads the session's log once: the bytes read through fsops are
 * about the file's size (not one read for the writer's handle and one for
 * the session handed over), and no JSON tree is kept per event while it
 * reads (the most cJSON allocations alive at once stays far below the
 * number of events), whatever the size: the same at 100 and 800 turns. */
static void test_open_reads_the_log_once(void **state)
{
	struct lx *x = *state;
	static const size_t sizes[] = {100, 800};
	for (int k = 0; k < 2; k++) {
		char id[8];
		snprintf(id, sizeof id, "S%d", k);
		size_t size = build_turns(x, id, sizes[k]);
		counting_ops = fsops_real;
		counting_ops.pread = counting_pread;
		atomic_store(&read_bytes, 0);
		atomic_store(&json_live, 0);
		atomic_store(&json_peak, 0);
		cJSON_InitHooks(&(cJSON_Hooks){counting_malloc, counting_free});
		fsops = &counting_ops;
		struct lx_rec c;
		lx_post_wait(x, fifo_open(id), &c);
		fsops = &fsops_real;
		cJSON_InitHooks(NULL);
		size_t events = 1 + 1 + 4 * sizes[k];
		assert_int_equal(load_count(prepared_load(c.prepared)), events);
		assert_int_equal(prepared_n_turns(c.prepared), sizes[k]);
		prepared_free(c.prepared);
		size_t got = atomic_load(&read_bytes);
		long peak = atomic_load(&json_peak);
		if (got > size + size / 4 || got < size)
			fail_msg("%zu turns: an open read %zu bytes of a %zu-byte log", sizes[k], got, size);
		if (peak > 200)
			fail_msg("%zu turns (%zu events): %ld cJSON allocations alive at once", sizes[k],
				 events, peak);
		lx_post_wait(x, fifo_release(id), &c);
	}
}

/* A session that does not exist cannot be held. */
static void test_open_missing_session_fails(void **state)
{
	struct lx *x = *state;
	struct lx_rec c;
	lx_post(x, fifo_open("NONE"), &c);
	lx_run_until(x, &c.calls, 1);
	assert_false(c.ok);
	assert_int_equal(c.err.cls, CERR_MISSING);
}

/* A held session is never closed by the handle cache: with room for 4
 * handles, 200 other sessions written after the open leave it locked (a
 * descriptor of another open file description gets CERR_LOCKED), while
 * the others' handles are closed once the writer takes its next batch
 * (their locks are free). */
static void test_held_session_survives_handle_cache(void **state)
{
	struct lx *x = *state;
	lx_renew(x, &(struct fifo_opts){.helpers = 2, .max_open = 4});
	struct lx_rec c;
	lx_post_wait(x, lx_hist("H", 1, true), &c);
	lx_post_wait(x, fifo_open("H"), &c);
	prepared_free(c.prepared);
	static struct lx_rec cs[200];
	for (int i = 0; i < 200; i++) {
		char id[8];
		snprintf(id, sizeof id, "S%03d", i);
		lx_post(x, lx_hist(id, 1, true), &cs[i]);
	}
	for (int i = 0; i < 200; i++) {
		lx_run_until(x, &cs[i].calls, 1);
		assert_true(cs[i].ok);
	}
	assert_int_equal(lx_try_lock(x, "H"), CERR_LOCKED);
	lx_post_wait(x, lx_hist("H", 2, false), &c);
	assert_int_equal(c.next_seq, 3);
	/* The cache trims at the writer's next batch: a round still in
	 * flight when the 200 completed keeps its handles till then. */
	assert_int_equal(lx_try_lock(x, "S000"), CERR_OK);
	lx_post_wait(x, fifo_release("H"), &c);
	assert_int_equal(lx_try_lock(x, "H"), CERR_OK);
}

/* A history item marked running sets the row's status in the transaction
 * of its append (also the append that creates the session); a full save
 * clears it back to idle. */
static void test_running_set_with_append_cleared_by_full_save(void **state)
{
	struct lx *x = *state;
	struct lx_rec c;
	struct fifo_item *it = lx_hist("A", 1, true);
	fifo_item_set_running(it);
	lx_post_wait(x, it, &c);
	char *st = lx_row_status(x, "A");
	assert_string_equal(st, "running");
	free(st);
	lx_post_wait(x, fifo_history("A", 2, lx_one_event("turn/start", "t1", NULL, NULL)), &c);
	it = fifo_history("A", 3, lx_one_event("user/message", "t1", "text", "go"));
	fifo_item_set_running(it);
	lx_post_wait(x, it, &c);
	st = lx_row_status(x, "A");
	assert_string_equal(st, "running");
	free(st);
	assert_int_equal(lx_try_lock(x, "A"), CERR_LOCKED); /* the writer holds it while running */
	cJSON *end = lx_one_event("turn/end", "t1", "outcome", "completed");
	lx_post_wait(x, fifo_full_save("A", 4, c.version, end), &c);
	st = lx_row_status(x, "A");
	assert_string_equal(st, "idle");
	free(st);
}

/* A row left running by a crash (no writer holds the session's lock) is
 * stale: it does not keep the session from being deleted. */
static void test_stale_running_row_does_not_block_delete(void **state)
{
	struct lx *x = *state;
	struct lx_rec c;
	lx_post_wait(x, lx_hist("A", 1, true), &c);
	lx_post_wait(x, fifo_release("A"), &c); /* as after the writer's process died */
	lx_set_status(x, "A", "running");
	lx_post_wait(x, fifo_delete("A"), &c);
}

/* A created session's header names the provider, the model and the fork
 * it came from. */
static void test_create_sets_header_provider_model_forked_from(void **state)
{
	struct lx *x = *state;
	struct lx_rec c;
	struct fifo_item *it = lx_hist("F", 1, false);
	cJSON *from = cJSON_CreateObject();
	cJSON_AddStringToObject(from, "session", "A");
	cJSON_AddNumberToObject(from, "seq", 3);
	fifo_item_create_header(it, "/proj", "anthropic", "claude-x", from);
	cJSON_Delete(from);
	lx_post_wait(x, it, &c);
	lx_post_wait(x, fifo_open("F"), &c);
	cJSON *line = load_json(prepared_load(c.prepared), 0);
	const cJSON *h = cJSON_GetObjectItem(line, "data");
	assert_string_equal(cJSON_GetObjectItem(h, "provider")->valuestring, "anthropic");
	assert_string_equal(cJSON_GetObjectItem(h, "model")->valuestring, "claude-x");
	const cJSON *ff = cJSON_GetObjectItem(h, "forked_from");
	assert_string_equal(cJSON_GetObjectItem(ff, "session")->valuestring, "A");
	assert_string_equal(prepared_scan(c.prepared)->cwd, "/proj");
	assert_string_equal(prepared_settings(c.prepared)->provider, "anthropic");
	cJSON_Delete(line);
	prepared_free(c.prepared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_cuts_torn_tail_and_closes_open_turn, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_open_rebuilds_the_row_only_for_a_changed_log, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_open_missing_session_fails, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_open_reads_the_log_once, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_open_in_a_batch_with_other_writes, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_held_session_survives_handle_cache, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_running_set_with_append_cleared_by_full_save, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_create_sets_header_provider_model_forked_from, lx_setup, lx_teardown),
		cmocka_unit_test_setup_teardown(test_stale_running_row_does_not_block_delete, lx_setup, lx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
