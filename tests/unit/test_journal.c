/* test_journal.c — a session's journal against the real FIFO on a real
 * loop, in a temporary data root (engine/journal.h): its first write
 * creates the log, writes go in call order at its cursor and are published
 * to the sink and the context once durable, in log order; a failed batch
 * that keeps its events is written again, first, by the next full save,
 * while a failed command gives its seqs back; a full save waits for the
 * items before it and the writes after it wait for it; a failed full save
 * leaves the session UNSAVED until a recovery save, which goes ahead of the
 * next write; the transition table refuses everything it does not list.
 * Logs are read back from disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "engine/journal.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

struct jx {
	char dir[64], root[128];
	uv_loop_t loop;
	struct fifo *f;
	struct sink *sink;
	struct context *ctx;
	struct journal *j;
	struct buf seen;    /* "type seq\n" per durable event the sink delivered */
	struct buf order;   /* "name:first_seq:ok " per write callback */
	struct buf states;  /* "S ", "U ", "R " per durability change */
	int calls;
	struct cerr last;
	bool faults;
};

struct wr {
	struct jx *x;
	const char *name;
};

static uint64_t now_ms(void)
{
	return clock_mono_ns() / 1000000;
}

static void run_until(struct jx *x, const int *calls, int want)
{
	uint64_t until = now_ms() + 10000;
	while (*calls < want) {
		if (now_ms() > until)
			fail_msg("waited 10 s for a callback (%d of %d)", *calls, want);
		uv_run(&x->loop, UV_RUN_NOWAIT);
		usleep(200);
	}
}

/* Let the sink deliver what is queued. */
static void drain_sink(struct jx *x)
{
	for (int i = 0; i < 20; i++)
		uv_run(&x->loop, UV_RUN_NOWAIT);
}

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	(void)s;
	struct jx *x = ctx;
	if (it->kind == SINK_EVENT) {
		assert_true(it->durable);
		buf_printf(&x->seen, "%s %llu\n", vocab_type_name(it->vtype),
			   (unsigned long long)it->seq);
	}
}

static void state_cb(void *ud, enum journal_state st, const struct cerr *err)
{
	struct jx *x = ud;
	buf_adds(&x->states, st == JOURNAL_SAVED ? "S " : st == JOURNAL_UNSAVED ? "U " : "R ");
	if (st == JOURNAL_UNSAVED)
		assert_non_null(err);
}

static void done_cb(void *ctx, const struct journal_receipt *r, const struct cerr *err)
{
	struct wr *w = ctx;
	struct jx *x = w->x;
	buf_printf(&x->order, "%s:%llu:%s ", w->name, (unsigned long long)r->first_seq,
		   err ? "err" : "ok");
	x->calls++;
	x->last = err ? *err : (struct cerr){0};
}

static cJSON *events(const char *json)
{
	cJSON *a = cJSON_Parse(json);
	assert_non_null(a);
	return a;
}

static cJSON *text_events(const char *turn, const char *text)
{
	char json[256];
	snprintf(json, sizeof json,
		 "[{\"type\":\"assistant/text\",\"turn\":\"%s\",\"data\":{\"text\":\"%s\"}}]", turn,
		 text);
	return events(json);
}

static cJSON *before_events(const char *turn, const char *text)
{
	char json[256];
	snprintf(json, sizeof json,
		 "[{\"type\":\"turn/start\",\"turn\":\"%s\",\"data\":{}},{\"type\":\"user/message\","
		 "\"turn\":\"%s\",\"data\":{\"text\":\"%s\"}}]",
		 turn, turn, text);
	return events(json);
}

static int setup(void **state)
{
	struct jx *x = xcalloc(1, sizeof *x);
	struct cerr err = {0};
	assert_int_equal(tmp_root("cairn-journal", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	assert_int_equal(uv_loop_init(&x->loop), 0);
	if (!(x->f = fifo_new(&x->loop, x->root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	x->sink = sink_new(&x->loop, NULL);
	sink_read_start(x->sink, read_cb, x);
	x->ctx = context_new();
	buf_init(&x->seen);
	buf_init(&x->order);
	buf_init(&x->states);
	struct journal_deps d = {
		.fifo = x->f, .sink = x->sink, .session = "S", .generation = 1, .cwd = "/w"};
	x->j = journal_new(&d, x->ctx, false, 0, 0);
	journal_on_state(x->j, state_cb, x);
	*state = x;
	return 0;
}

static void closed_cb(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t outstanding)
{
	(void)f;
	(void)outstanding;
	assert_int_equal(st, FIFO_CLOSED);
	(*(int *)ctx)++;
}

static int teardown(void **state)
{
	struct jx *x = *state;
	if (x->faults)
		faultfs_uninstall();
	journal_close(x->j);
	int closed = 0;
	assert_int_equal(fifo_close(x->f, now_ms() + 10000, closed_cb, &closed), 0);
	run_until(x, &closed, 1);
	sink_close(x->sink, NULL, NULL);
	assert_int_equal(uv_run(&x->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&x->loop), 0);
	context_free(x->ctx);
	buf_release(&x->seen);
	buf_release(&x->order);
	buf_release(&x->states);
	rm_rf(x->dir);
	free(x);
	return 0;
}

static struct scan *read_log(struct jx *x)
{
	char *p = session_path(x->root, STORE_SESSIONS, "/w", "S", LOG_FILE);
	struct scan *s = scan_path(p);
	free(p);
	assert_int_equal(s->status, SCAN_OK);
	return s;
}

static const char *text_of(const struct scan *s, size_t i)
{
	const cJSON *t = cJSON_GetObjectItem(s->events[i].data, "text");
	return cJSON_IsString(t) ? t->valuestring : "";
}

/* The BEFORE batch of turn t1, durable: the log exists at seq 3. */
static void before(struct jx *x)
{
	static struct wr w;
	w = (struct wr){x, "before"};
	struct journal_write jw = {.running = true, .provider = "offline", .model = "m"};
	struct cerr err;
	int calls = x->calls;
	assert_int_equal(journal_append(x->j, before_events("t1", "hi"), &jw, done_cb, &w, &err), 0);
	run_until(x, &x->calls, calls + 1);
	assert_int_equal(x->last.cls, CERR_OK);
	assert_int_equal(journal_next_seq(x->j), 3);
}

/* Every later sync fails (the disk is gone) until faultfs_disarm. */
static void break_disk(struct jx *x)
{
	assert_int_equal(fifo_flush_wait(x->f, NULL, now_ms() + 10000), 0);
	faultfs_install();
	x->faults = true;
	for (unsigned k = 1; k <= 4; k++) {
		faultfs_fail(FF_FDATASYNC, k, EIO);
		faultfs_fail(FF_FSYNC, k, EIO);
	}
}

/* The first write creates the log; writes made without the loop running
 * go in call order at the cursor, their callbacks run in that order (never
 * from inside the call), and each event reaches the sink and the context
 * once durable, in log order, with its seq. */
static void test_journal_writes_in_order_and_publishes_once_durable(void **state)
{
	struct jx *x = *state;
	assert_false(journal_created(x->j));
	struct wr a = {x, "a"}, b = {x, "b"}, c = {x, "c"};
	struct journal_write jw = {.provider = "offline", .model = "m"};
	struct cerr err;
	assert_int_equal(journal_append(x->j, before_events("t1", "hi"), &jw, done_cb, &a, &err), 0);
	assert_true(journal_created(x->j));
	assert_int_equal(journal_cursor(x->j), 3);
	assert_int_equal(journal_append(x->j, text_events("t1", "one"), NULL, done_cb, &b, &err), 0);
	assert_int_equal(journal_append(x->j, events("[{\"type\":\"session/meta\",\"data\":"
						     "{\"title\":\"named\"}}]"),
					NULL, done_cb, &c, &err),
			 0);
	assert_int_equal(journal_cursor(x->j), 5);
	assert_int_equal(journal_outstanding(x->j), 3);
	assert_int_equal(x->calls, 0);
	assert_string_equal(x->seen.p ? x->seen.p : "", ""); /* nothing before it is durable */
	run_until(x, &x->calls, 3);
	assert_string_equal(x->order.p, "a:1:ok b:3:ok c:4:ok ");
	assert_int_equal(journal_next_seq(x->j), 5);
	assert_int_equal(journal_outstanding(x->j), 0);
	drain_sink(x);
	assert_string_equal(x->seen.p, "turn/start 1\nuser/message 2\nassistant/text 3\n"
				       "session/meta 4\n");
	assert_string_equal(context_last_user_text(x->ctx, "t1"), "hi");
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 5);
	assert_string_equal(s->events[0].type, "session/header");
	assert_string_equal(text_of(s, 3), "one");
	assert_string_equal(s->events[4].type, "session/meta");
	scan_free(s);
	assert_string_equal(x->states.p ? x->states.p : "", "");
}

/* A batch that keeps its events fails: a command posted behind it fails
 * fast and gives its seq back; the next full save writes the kept events
 * first, from the durable head, then its own; only then are they
 * published. The session stays SAVED throughout. */
static void test_journal_failed_batch_is_kept_and_written_again(void **state)
{
	struct jx *x = *state;
	before(x);
	break_disk(x);
	struct wr a = {x, "kept"}, b = {x, "cmd"}, f = {x, "full"};
	struct journal_write keep = {.keep = true};
	struct cerr err;
	int calls = x->calls;
	assert_int_equal(journal_append(x->j, text_events("t1", "lost once"), &keep, done_cb, &a,
					&err), 0);
	assert_int_equal(journal_append(x->j, events("[{\"type\":\"session/meta\",\"data\":"
						     "{\"title\":\"no\"}}]"),
					NULL, done_cb, &b, &err),
			 0);
	run_until(x, &x->calls, calls + 2);
	faultfs_disarm();
	assert_string_equal(x->order.p, "before:1:ok kept:3:err cmd:4:err ");
	assert_int_equal(journal_kept(x->j), 1);
	assert_int_equal(journal_next_seq(x->j), 3);
	assert_int_equal(journal_cursor(x->j), 4); /* after the kept event, not the command */
	assert_int_equal(journal_state(x->j), JOURNAL_SAVED);
	drain_sink(x);
	assert_null(strstr(x->seen.p, "assistant/text"));
	assert_int_equal(journal_full_save(x->j, events("[{\"type\":\"turn/end\",\"turn\":\"t1\","
							"\"data\":{\"outcome\":\"completed\"}}]"),
					   NULL, done_cb, &f, &err),
			 0);
	run_until(x, &x->calls, calls + 3);
	if (x->last.cls != CERR_OK)
		fail_msg("full save: %s", x->last.msg);
	assert_non_null(strstr(x->order.p, "full:3:ok"));
	assert_int_equal(journal_kept(x->j), 0);
	assert_int_equal(journal_next_seq(x->j), 5);
	drain_sink(x);
	assert_non_null(strstr(x->seen.p, "user/message 2\nassistant/text 3\nturn/end 4\n"));
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 5);
	assert_string_equal(text_of(s, 3), "lost once");
	assert_string_equal(s->events[4].type, "turn/end");
	assert_int_equal(s->n_open_turns, 0);
	for (size_t i = 0; i < s->n_events; i++)
		if (strcmp(s->events[i].type, "session/meta") == 0)
			fail_msg("the failed command reached the log");
	scan_free(s);
	assert_string_equal(x->states.p ? x->states.p : "", "");
}

/* A full save waits for the items before it (it expects their version)
 * and the writes after it wait for it: posted, acknowledged and called
 * back in call order. */
static void test_journal_full_save_waits_for_the_items_before_it(void **state)
{
	struct jx *x = *state;
	before(x);
	struct wr a = {x, "a"}, f = {x, "full"}, b = {x, "b"};
	struct cerr err;
	int calls = x->calls;
	assert_int_equal(journal_append(x->j, text_events("t1", "x"), NULL, done_cb, &a, &err), 0);
	assert_int_equal(journal_full_save(x->j, events("[{\"type\":\"turn/end\",\"turn\":\"t1\","
							"\"data\":{\"outcome\":\"completed\"}}]"),
					   NULL, done_cb, &f, &err),
			 0);
	assert_int_equal(journal_append(x->j, events("[{\"type\":\"session/meta\",\"data\":"
						     "{\"pinned\":true}}]"),
					NULL, done_cb, &b, &err),
			 0);
	/* Only the first is posted: the full save waits for it, b for the save. */
	assert_int_equal(journal_cursor(x->j), 4);
	assert_int_equal(journal_outstanding(x->j), 3);
	run_until(x, &x->calls, calls + 3);
	assert_string_equal(x->order.p, "before:1:ok a:3:ok full:4:ok b:5:ok ");
	drain_sink(x);
	assert_string_equal(x->seen.p, "turn/start 1\nuser/message 2\nassistant/text 3\n"
				       "turn/end 4\nsession/meta 5\n");
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 6);
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
}

static void item_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	(void)r;
	struct wr *w = ctx;
	buf_printf(&w->x->order, "%s:%s ", w->name, err ? "err" : "ok");
	w->x->calls++;
}

/* An item of the session posted through the journal (a release, a
 * delete) goes behind every write asked for before it, a full save still
 * waiting included, and leaves the durable head alone. */
static void test_journal_item_goes_behind_a_waiting_full_save(void **state)
{
	struct jx *x = *state;
	before(x);
	struct wr a = {x, "a"}, f = {x, "full"}, m = {x, "item"};
	struct cerr err;
	int calls = x->calls;
	assert_int_equal(journal_append(x->j, text_events("t1", "x"), NULL, done_cb, &a, &err), 0);
	assert_int_equal(journal_full_save(x->j, events("[{\"type\":\"turn/end\",\"turn\":\"t1\","
							"\"data\":{\"outcome\":\"completed\"}}]"),
					   NULL, done_cb, &f, &err),
			 0);
	assert_int_equal(journal_post_item(x->j, fifo_release("S"), item_cb, &m, &err), 0);
	run_until(x, &x->calls, calls + 3);
	assert_string_equal(x->order.p, "before:1:ok a:3:ok full:4:ok item:ok ");
	assert_int_equal(journal_next_seq(x->j), 5);
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 5);
	assert_int_equal(s->n_open_turns, 0);
	scan_free(s);
}

static int recovered;

static void recovered_cb(void *ctx, const struct journal_receipt *r, const struct cerr *err)
{
	(void)r;
	struct jx *x = ctx;
	assert_null(err);
	assert_int_equal(journal_state(x->j), JOURNAL_SAVED);
	recovered++;
}

/* A failed full save leaves the session UNSAVED with its events kept; an
 * append then posts the recovery save ahead of itself (RECOVERING at
 * once), which writes the kept events first; SAVED once it is durable,
 * the append behind it. journal_recover waits for the recovery in flight,
 * and says there is nothing to recover once SAVED. */
static void test_journal_failed_full_save_is_recovered_ahead_of_the_next_write(void **state)
{
	struct jx *x = *state;
	before(x);
	break_disk(x);
	struct wr f = {x, "full"}, a = {x, "after"};
	struct cerr err;
	int calls = x->calls;
	assert_int_equal(journal_full_save(x->j, events("[{\"type\":\"turn/end\",\"turn\":\"t1\","
							"\"data\":{\"outcome\":\"completed\"}}]"),
					   NULL, done_cb, &f, &err),
			 0);
	run_until(x, &x->calls, calls + 1);
	faultfs_disarm();
	assert_int_not_equal(x->last.cls, CERR_OK);
	assert_int_equal(journal_state(x->j), JOURNAL_UNSAVED);
	assert_string_equal(x->states.p, "U ");
	assert_int_equal(journal_kept(x->j), 1);
	assert_int_equal(journal_append(x->j, events("[{\"type\":\"session/meta\",\"data\":"
						     "{\"title\":\"after\"}}]"),
					NULL, done_cb, &a, &err),
			 0);
	assert_int_equal(journal_state(x->j), JOURNAL_RECOVERING);
	recovered = 0;
	assert_int_equal(journal_recover(x->j, recovered_cb, x, &err), 0); /* waits for it */
	run_until(x, &x->calls, calls + 2);
	assert_int_equal(recovered, 1);
	assert_string_equal(x->states.p, "U R S ");
	assert_string_equal(x->order.p, "before:1:ok full:3:err after:4:ok ");
	assert_int_equal(journal_recover(x->j, recovered_cb, x, &err), 1);
	drain_sink(x);
	assert_non_null(strstr(x->seen.p, "user/message 2\nturn/end 3\nsession/meta 4\n"));
	struct scan *s = read_log(x);
	assert_int_equal(s->n_events, 5);
	assert_string_equal(s->events[3].type, "turn/end");
	assert_string_equal(s->events[4].type, "session/meta");
	scan_free(s);
}

/* The transition table: exactly the changes journal.h draws. */
static void test_journal_transition_table_refuses_the_rest(void **state)
{
	(void)state;
	enum journal_state S = JOURNAL_SAVED, U = JOURNAL_UNSAVED, R = JOURNAL_RECOVERING;
	const struct {
		enum journal_state from, to;
		bool ok;
	} t[] = {
		{S, S, false}, {S, U, true},  {S, R, false}, {U, S, false}, {U, U, true},
		{U, R, true},  {R, S, true},  {R, U, true},  {R, R, false},
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++)
		if (journal_may(t[i].from, t[i].to) != t[i].ok)
			fail_msg("%d -> %d: %s", t[i].from, t[i].to, t[i].ok ? "refused" : "allowed");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_journal_writes_in_order_and_publishes_once_durable),
		T(test_journal_failed_batch_is_kept_and_written_again),
		T(test_journal_full_save_waits_for_the_items_before_it),
		T(test_journal_failed_full_save_is_recovered_ahead_of_the_next_write),
		T(test_journal_item_goes_behind_a_waiting_full_save),
		cmocka_unit_test(test_journal_transition_table_refuses_the_rest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
