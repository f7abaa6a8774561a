/* test_catalog_worker.c — listing and search off the loop thread
 * (persist/catalog_worker.h) on a real catalog and a real libuv loop: both
 * complete on the loop with the rows catalog_list and catalog_search give;
 * a newer search supersedes the one before it (which says so, and never
 * delivers results after it), a running one is interrupted midway, a
 * burst of 50 searches runs at most 2; a close completes what waits, and
 * uv_loop_close() == 0 after it. And the running status: a row left
 * `running` with its writer lock free is listed as interrupted and can be
 * deleted and purged through the FIFO; a held lock keeps it running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/catalog_worker.h"
#include "persist/fifo.h"
#include "persist/lock.h"
#include "persist/store.h"
#include "tests/unit/support_catalog.h"
#include "tests/unit/support_fixture.h"

#define OPEN(t, text) START(t) ",{'type':'user/message','turn':'" t "','data':{'text':'" text "'}}"
#define TURN(t, text) OPEN(t, text) "," END(t, "completed")

static pthread_t loop_thread;

/* What one request completed with, in completion order. */
struct got {
	int order;
	enum catalog_worker_outcome outcome;
	bool started, interrupted, on_loop;
	char ids[256]; /* the rows' or hits' sessions, space separated */
	char status[32]; /* the first row's status */
	struct cerr err;
};

static int completions;

static void record(void *ctx, struct catalog_worker_result *r)
{
	struct got *g = ctx;
	g->order = ++completions;
	g->outcome = r->outcome;
	g->started = r->started;
	g->interrupted = r->interrupted;
	g->on_loop = pthread_equal(pthread_self(), loop_thread);
	g->err = r->err;
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < r->n_sessions; i++)
		buf_printf(&b, "%s%s", i ? " " : "", r->sessions[i].id);
	for (size_t i = 0; i < r->n_hits; i++)
		buf_printf(&b, "%s%s/%s", i ? " " : "", r->hits[i].session, r->hits[i].turn);
	snprintf(g->ids, sizeof g->ids, "%s", b.p ? b.p : "");
	buf_release(&b);
	snprintf(g->status, sizeof g->status, "%s", r->n_sessions ? r->sessions[0].status : "");
	cat_sessions_free(r->sessions, r->n_sessions); /* the receiver's */
	cat_hits_free(r->hits, r->n_hits);
}

static bool closed;
static void on_close(void *ctx)
{
	closed = true;
	assert_true(pthread_equal(pthread_self(), loop_thread));
}

static int setup(void **state)
{
	if (catfx_setup(state, "cairn-test-catw") < 0)
		return -1;
	loop_thread = pthread_self();
	completions = 0;
	closed = false;
	return 0;
}

/* A new loop at *loop and a worker on it for f's root. */
static struct catalog_worker *worker_on(uv_loop_t *loop, struct fx *f)
{
	uv_loop_init(loop);
	return catalog_worker_new(loop, f->root);
}

/* Search q on w and run the loop until it completed into *g. */
static void search_run(uv_loop_t *loop, struct catalog_worker *w, const char *q, size_t limit,
		       struct got *g)
{
	struct cerr err;
	assert_int_equal(catalog_worker_search(w, q, limit, false, record, g, &err), 0);
	uv_run(loop, UV_RUN_DEFAULT);
}

/* Close w, run the loop to its end and close it: must be 0. */
static void close_all(uv_loop_t *loop, struct catalog_worker *w)
{
	catalog_worker_close(w, on_close, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_true(closed);
	assert_int_equal(uv_loop_close(loop), 0);
}

static void three_sessions(struct fx *f)
{
	make(f, "s1", "/p", NULL, B("[" TURN("t1", "the quick brown fox") "]"));
	make(f, "s2", "/p", NULL, B("[" TURN("t1", "a lazy dog sleeps") "]"));
	make(f, "s3", "/q", NULL, B("[" TURN("t1", "quick thinking fox") "]"));
	sync_ok(f);
}

static void test_list_and_search_complete_on_the_loop_with_the_catalogs_results(void **state)
{
	struct fx *f = *state;
	three_sessions(f);
	uv_loop_t loop;
	struct catalog_worker *w = worker_on(&loop, f);
	struct got all = {0}, proj = {0}, hits = {0};
	struct cerr err;
	assert_int_equal(catalog_worker_list(w, &(struct catalog_worker_listing){0}, record, &all, &err), 0);
	uv_run(&loop, UV_RUN_DEFAULT); /* a list alone: it is not superseded by the next */
	assert_int_equal(catalog_worker_list(w, &(struct catalog_worker_listing){.project = "/p"},
					     record, &proj, &err), 0);
	assert_int_equal(catalog_worker_search(w, "quick fox", 0, false, record, &hits, &err), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	/* The same rows as catalog_list and catalog_search on the test's own connection. */
	struct cat_session *v;
	size_t n;
	assert_int_equal(catalog_list(cat(f), false, false, NULL, 0, &v, &n, &err), 0);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s%s", i ? " " : "", v[i].id);
	cat_sessions_free(v, n);
	assert_string_equal(all.ids, b.p);
	buf_release(&b);
	assert_int_equal(all.outcome, CATALOG_WORKER_DONE);
	assert_string_equal(all.ids, "s3 s2 s1");
	assert_string_equal(proj.ids, "s2 s1");
	assert_int_equal(hits.outcome, CATALOG_WORKER_DONE);
	assert_string_equal(hits.ids, "s3/t1 s1/t1");
	assert_true(all.on_loop && proj.on_loop && hits.on_loop);
	assert_true(all.started && hits.started);
	close_all(&loop, w);
}

static void test_a_failed_search_says_why(void **state)
{
	struct fx *f = *state;
	three_sessions(f);
	uv_loop_t loop;
	struct catalog_worker *w = worker_on(&loop, f);
	struct got g = {0};
	search_run(&loop, w, "", 0, &g);
	assert_int_equal(g.outcome, CATALOG_WORKER_FAILED);
	assert_int_equal(g.err.cls, CERR_USAGE);
	close_all(&loop, w);
}

static void test_a_second_search_supersedes_the_first_which_delivers_nothing(void **state)
{
	struct fx *f = *state;
	three_sessions(f);
	uv_loop_t loop;
	struct catalog_worker *w = worker_on(&loop, f);
	struct cerr err;
	for (int round = 0; round < 20; round++) { /* the first at any stage: waiting, running, done */
		struct got a = {0}, b = {0};
		completions = 0;
		assert_int_equal(catalog_worker_search(w, "fox", 0, false, record, &a, &err), 0);
		if (round % 2)
			for (int i = 0; i < round * 50 && !catalog_worker_started(w); i++)
				usleep(100);
		assert_int_equal(catalog_worker_search(w, "dog", 0, false, record, &b, &err), 0);
		uv_run(&loop, UV_RUN_DEFAULT);
		assert_int_equal(a.outcome, CATALOG_WORKER_SUPERSEDED);
		assert_string_equal(a.ids, "");
		assert_int_equal(b.outcome, CATALOG_WORKER_DONE);
		assert_string_equal(b.ids, "s2/t1");
		assert_true(a.order < b.order);
	}
	close_all(&loop, w);
}

/* n turns in one session, each message holding both words of "beta
 * alpha" but never next to each other in that order: the phrase reads the
 * index up to the work budget. */
static void big_session(struct fx *f, int n)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "[");
	for (int i = 0; i < n; i++)
		buf_printf(&b, "%s{'type':'turn/start','turn':'t%d'},{'type':'user/message','turn':'t%d',"
			       "'data':{'text':'alpha beta w%d gamma delta'}},{'type':'turn/end','turn':'t%d',"
			       "'data':{'outcome':'completed'}}",
			   i ? "," : "", i, i, i % 97, i);
	buf_adds(&b, "]");
	make(f, "big", "/p", NULL, (const char *const[]){b.p, NULL});
	buf_release(&b);
	sync_ok(f);
}

static void test_a_running_search_is_interrupted_midway_by_a_newer_one(void **state)
{
	struct fx *f = *state;
	big_session(f, 20000);
	uv_loop_t loop;
	struct catalog_worker *w = worker_on(&loop, f);
	struct cerr err;
	/* Warm: the connection is open, so the next search starts reading at once. */
	struct got warm = {0};
	search_run(&loop, w, "gamma", 1, &warm);
	assert_int_equal(warm.outcome, CATALOG_WORKER_DONE);
	/* The newer search comes while the slow one reads (~15 ms); a thread
	 * descheduled for that long may miss it: a few tries. */
	bool stopped = false;
	double ran_ms = 0;
	for (int attempt = 0; attempt < 5 && !stopped; attempt++) {
		size_t before = catalog_worker_started(w);
		struct got slow = {0}, next = {0};
		uint64_t t0 = clock_mono_ns();
		assert_int_equal(catalog_worker_search(w, "\"beta alpha\"", 0, false, record, &slow, &err), 0);
		while (catalog_worker_started(w) == before)
			sched_yield();
		assert_int_equal(catalog_worker_search(w, "w5", 1, false, record, &next, &err), 0);
		uv_run(&loop, UV_RUN_DEFAULT);
		ran_ms = (double)(clock_mono_ns() - t0) / 1e6;
		assert_int_equal(slow.outcome, CATALOG_WORKER_SUPERSEDED);
		assert_true(slow.started);
		assert_string_equal(slow.ids, "");
		assert_int_equal(next.outcome, CATALOG_WORKER_DONE);
		assert_true(slow.order < next.order);
		stopped = slow.interrupted;
	}
	if (!stopped)
		fail_msg("the search ran to its end each time (last: %.1f ms) instead of stopping", ran_ms);
	/* The connection is usable after the interrupt (its transaction ended). */
	struct got again = {0};
	search_run(&loop, w, "w7", 1, &again);
	assert_int_equal(again.outcome, CATALOG_WORKER_DONE);
	assert_string_not_equal(again.ids, "");
	close_all(&loop, w);
}

static void test_a_burst_of_50_searches_runs_at_most_2(void **state)
{
	struct fx *f = *state;
	three_sessions(f);
	uv_loop_t loop;
	struct catalog_worker *w = worker_on(&loop, f);
	struct cerr err;
	struct got g[50];
	memset(g, 0, sizeof g);
	static const char *const typed[] = {"q", "qu", "qui", "quic", "quick"};
	for (int i = 0; i < 50; i++) /* typed as fast as the loop posts them */
		assert_int_equal(catalog_worker_search(w, typed[i % 5 < 4 && i < 49 ? i % 5 : 4], 0,
						       false, record, &g[i], &err), 0);
	/* Everything but the first and the last completed at once, superseded. */
	for (int i = 1; i < 49; i++) {
		assert_int_equal(g[i].outcome, CATALOG_WORKER_SUPERSEDED);
		assert_false(g[i].started);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_true(catalog_worker_started(w) <= 2);
	assert_int_equal(g[0].outcome, CATALOG_WORKER_SUPERSEDED);
	assert_int_equal(g[49].outcome, CATALOG_WORKER_DONE);
	assert_string_equal(g[49].ids, "s3/t1 s1/t1");
	for (int i = 1; i < 50; i++)
		assert_true(g[i - 1].order < g[i].order || i == 1); /* 1..48 came before 0 */
	assert_int_equal(completions, 50);
	close_all(&loop, w);
}

static void test_close_completes_what_waits_and_the_loop_closes(void **state)
{
	struct fx *f = *state;
	three_sessions(f);
	uv_loop_t loop;
	struct catalog_worker *w = worker_on(&loop, f);
	struct cerr err;
	struct got l1 = {0}, l2 = {0}, s1 = {0}, s2 = {0};
	assert_int_equal(catalog_worker_list(w, &(struct catalog_worker_listing){0}, record, &l1, &err), 0);
	assert_int_equal(catalog_worker_list(w, &(struct catalog_worker_listing){0}, record, &l2, &err), 0);
	assert_int_equal(catalog_worker_search(w, "fox", 0, false, record, &s1, &err), 0);
	assert_int_equal(catalog_worker_search(w, "dog", 0, false, record, &s2, &err), 0);
	assert_int_equal(s1.order, 0); /* running: not yet */
	catalog_worker_close(w, on_close, NULL);
	assert_int_equal(l2.outcome, CATALOG_WORKER_CLOSED); /* waiting: at once */
	assert_int_equal(s2.outcome, CATALOG_WORKER_CLOSED);
	assert_false(l2.started || s2.started);
	struct got late = {0};
	FAILS(catalog_worker_search(w, "fox", 0, false, record, &late, &err), CERR_USAGE);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_true(closed);
	assert_int_equal(late.order, 0); /* refused: never called */
	assert_int_equal(l1.outcome, CATALOG_WORKER_DONE); /* a running list finishes */
	assert_string_equal(l1.ids, "s3 s2 s1");
	assert_int_equal(s1.outcome, CATALOG_WORKER_CLOSED);
	assert_int_equal(uv_loop_close(&loop), 0);

	/* A worker that never ran anything closes too. */
	uv_loop_init(&loop);
	closed = false;
	close_all(&loop, catalog_worker_new(&loop, f->root));
}

static void test_no_catalog_yet_fails_missing(void **state)
{
	struct fx *f = *state;
	uv_loop_t loop;
	struct catalog_worker *w = worker_on(&loop, f);
	struct got g = {0};
	struct cerr err;
	assert_int_equal(catalog_worker_list(w, &(struct catalog_worker_listing){0}, record, &g, &err), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(g.outcome, CATALOG_WORKER_FAILED);
	assert_int_equal(g.err.cls, CERR_MISSING);
	close_all(&loop, w);
}

/* ---- the running status ---- */

static void list_one(struct fx *f, struct got *g, bool with_deleted)
{
	uv_loop_t loop;
	struct catalog_worker *w = worker_on(&loop, f);
	struct cerr err;
	closed = false;
	assert_int_equal(catalog_worker_list(w, &(struct catalog_worker_listing){.with_deleted = with_deleted},
					     record, g, &err), 0);
	close_all(&loop, w);
	assert_int_equal(g->outcome, CATALOG_WORKER_DONE);
}

struct moved {
	int done;
	struct cerr err;
	bool failed;
};

static void moved_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		     const struct cerr *err)
{
	struct moved *m = ctx;
	m->done++;
	m->failed = err != NULL;
	if (err)
		m->err = *err;
}

/* Run one FIFO item to its end (the blocking form: no loop runs here). */
static struct moved move(struct fx *f, struct fifo_item *it)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct cerr err;
	struct moved m = {0};
	struct fifo *q = fifo_new(&loop, f->root, NULL, &err);
	if (!q)
		fail_msg("fifo_new: %s", err.msg);
	assert_int_equal(fifo_post(q, it, moved_cb, &m, &err), 0);
	assert_int_equal(fifo_close_wait(q, clock_mono_ns() / 1000000 + 30000), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	assert_int_equal(m.done, 1);
	return m;
}

static void set_running(struct fx *f, const char *id)
{
	struct cerr err;
	assert_int_equal(catalog_set_status(cat(f), id, "running", &err), 0);
}

static void test_a_stale_running_row_is_listed_interrupted_and_can_be_deleted_and_purged(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" OPEN("t1", "hello") "]"));
	sync_ok(f);
	set_running(f, "s1"); /* the writer that set it died: its lock is free */
	raw_expect(f->root, "SELECT status_override FROM sessions WHERE id = 's1'", "running");
	struct got g = {0};
	list_one(f, &g, false);
	assert_string_equal(g.ids, "s1");
	assert_string_equal(g.status, "interrupted");
	struct moved m = move(f, fifo_delete("s1"));
	if (m.failed)
		fail_msg("delete refused: %s", m.err.msg);
	set_running(f, "s1"); /* still running in the trash, as after a crash */
	struct got t = {0};
	list_one(f, &t, true);
	assert_string_equal(t.status, "interrupted");
	m = move(f, fifo_purge("s1"));
	if (m.failed)
		fail_msg("purge refused: %s", m.err.msg);
	char dir[512];
	path_of(f, STORE_TRASH, "/p", "s1", NULL, dir, sizeof dir);
	assert_false(exists(dir));
}

/* A process killed between its full save's log write and the catalog's
 * commit of it leaves the row running over a log whose turn ended: the
 * listing brings the row up to the log, and opening the session would
 * close nothing, so it reads as the log says (idle), not interrupted. */
static void test_a_stale_running_row_reads_as_its_log_says_idle_once_its_turn_ended(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" OPEN("t1", "q") "]"));
	sync_ok(f);
	set_running(f, "s1"); /* the BEFORE save's round; then the process died mid-turn */
	struct got g = {0};
	list_one(f, &g, false);
	assert_string_equal(g.status, "interrupted"); /* t1 is open in the log */
	append_to(f, "s1", "[" END("t1", "completed") "]"); /* its full save reached the log */
	assert_int_equal(sync_ok(f), 1);
	raw_expect(f->root, "SELECT status_override FROM sessions WHERE id = 's1'", "running");
	struct got h = {0};
	list_one(f, &h, false);
	assert_string_equal(h.status, "idle");
	expect_row(f, "s1", "status=idle");
	int lockfd = hold_lock(f, "s1"); /* a writer holds it again: running, whatever the log says */
	expect_row(f, "s1", "status=running");
	lock_release(lockfd);
}

static void test_a_running_row_whose_lock_is_held_stays_running_and_is_not_deleted(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" OPEN("t1", "hello") "]"));
	sync_ok(f);
	set_running(f, "s1");
	struct cerr err;
	int lockfd = hold_lock(f, "s1"); /* a writer running a turn */
	struct got g = {0};
	list_one(f, &g, false);
	assert_string_equal(g.status, "running");
	struct cat_session row;
	assert_int_equal(catalog_get(cat(f), "s1", &row, &err), 0);
	assert_string_equal(row.status, "running");
	cat_session_release(&row);
	struct moved m = move(f, fifo_delete("s1"));
	assert_true(m.failed);
	assert_int_equal(m.err.cls, CERR_LOCKED);
	lock_release(lockfd);
	assert_int_equal(catalog_get(cat(f), "s1", &row, &err), 0);
	assert_string_equal(row.status, "interrupted"); /* the moment the lock is free */
	cat_session_release(&row);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, catfx_teardown)
		T(test_list_and_search_complete_on_the_loop_with_the_catalogs_results),
		T(test_a_failed_search_says_why),
		T(test_a_second_search_supersedes_the_first_which_delivers_nothing),
		T(test_a_running_search_is_interrupted_midway_by_a_newer_one),
		T(test_a_burst_of_50_searches_runs_at_most_2),
		T(test_close_completes_what_waits_and_the_loop_closes),
		T(test_no_catalog_yet_fails_missing),
		T(test_a_stale_running_row_is_listed_interrupted_and_can_be_deleted_and_purged),
		T(test_a_stale_running_row_reads_as_its_log_says_idle_once_its_turn_ended),
		T(test_a_running_row_whose_lock_is_held_stays_running_and_is_not_deleted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
