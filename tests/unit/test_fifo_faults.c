/* test_fifo_faults.c — fault loops over the persistence FIFO (SQLite style;
 * the runs: support_fiforun.h): a scripted sequence of items for two
 * sessions (creation, coalesced history batches, full saves, meta changes,
 * a delete, one session's saves in consecutive overlapping rounds, then a
 * recovery save) runs with the Nth pwrite / fdatasync / fsync / rename
 * failing with EIO or ENOSPC (or a short write, or a cleanup ftruncate /
 * fsync failing after a failed write or sync) for N = 1, 2, ... until a run
 * meets no fault. In every run: every item completes exactly once, in post
 * order, on the loop thread, with a receipt or an io error (fail-fast
 * follow-ups naming the first failure, or, when they were written in the
 * same round and their log's one sync failed, or in the next round while it
 * synced, that same error; pipelined full saves of a failed session may
 * conflict); every acknowledged event is in the log read back and after a
 * simulated power loss; and nothing of a failed session is written after
 * its gap (the log is exactly the acknowledged items, plus possibly items
 * whose error has outcome_unknown). Catalog failures:
 * test_fifo_catalog_faults.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
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
#include "persist/fifo.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

#include "tests/unit/support_fiforun.h"

#define MAX_N 300

/* ---- faults ---- */

#define F(op, e) {op, e, false, FF_NOPS, false}
static const struct fault faults[] = {
	F(FF_PWRITE, EIO), F(FF_PWRITE, ENOSPC), {FF_PWRITE, ENOSPC, true, FF_NOPS, false},
	F(FF_FDATASYNC, EIO), F(FF_FDATASYNC, ENOSPC), F(FF_FSYNC, EIO), F(FF_FSYNC, ENOSPC),
	F(FF_RENAME, EIO), F(FF_RENAME, ENOSPC),
	/* The cleanup of a failed append fails too. */
	{FF_FTRUNCATE, EIO, false, FF_PWRITE, false},
	{FF_FTRUNCATE, EIO, false, FF_FDATASYNC, false},
	{FF_FTRUNCATE, EIO, false, FF_PWRITE, true},
	{FF_FSYNC, EIO, false, FF_FDATASYNC, false},
};
#define NFAULTS (sizeof faults / sizeof faults[0])

/* Arms op at its first call after pre fired (ftruncate is only ever called
 * in cleanups, but fsync is not: the sync hook arms it). */
static const struct fault *hook_fault;
static unsigned hook_seen;

/* With slow_syncs, every fdatasync takes 2 ms longer, so the writer
 * commits the next round's projection before the sync of the round in
 * flight ends, and a failure of that sync reaches a round already
 * committed. */
static bool slow_syncs;

static void sync_hook(void *ctx, enum faultfs_op op, bool after)
{
	(void)ctx;
	if (slow_syncs && !after && op == FF_FDATASYNC)
		usleep(2000);
	if (after || !hook_fault || op != hook_fault->pre || faultfs_fired() == hook_seen)
		return;
	faultfs_fail(hook_fault->op, 1, hook_fault->errnum);
	hook_fault = NULL;
}

static void arm(const struct fault *f, unsigned long n)
{
	if (f->pre == FF_NOPS) {
		if (f->shortw)
			faultfs_short_write(n);
		else
			faultfs_fail(f->op, n, f->errnum);
		return;
	}
	if (f->pre_short)
		faultfs_short_write(n);
	else
		faultfs_fail(f->pre, n, EIO);
	if (f->op == FF_FTRUNCATE) {
		faultfs_fail(f->op, 1, f->errnum);
	} else {
		hook_fault = f;
		hook_seen = faultfs_fired();
		faultfs_set_sync_hook(sync_hook, NULL);
	}
}

/* ---- reading back ---- */

/* What happened to every item, for a failure's message. */
static void dump(void)
{
	static const char *const kinds[] = {"history", "full save", "meta", "delete", "restore",
					    "purge"};
	for (size_t i = 0; i < R.n; i++) {
		const struct titem *t = &R.it[i];
		if (t->ok)
			print_message("#   %2zu %s %-9s next %llu version %llu\n", i, run_ids[t->sess],
				      kinds[t->kind], (unsigned long long)t->r.next_seq,
				      (unsigned long long)t->r.content_version);
		else
			print_message("#   %2zu %s %-9s %s%s: %s\n", i, run_ids[t->sess], kinds[t->kind],
				      cerr_class_name(t->err.cls),
				      t->err.outcome_unknown ? " (unknown)" : "", t->err.msg);
	}
}

#define FAIL(...)                       \
	do {                            \
		dump();                 \
		fail_msg(__VA_ARGS__);  \
	} while (0)

static bool events_at(const struct scan *s, size_t pos, const cJSON *evs)
{
	size_t i = pos;
	for (const cJSON *e = evs->child; e; e = e->next, i++) {
		if (i >= s->n_events)
			return false;
		const char *type = cJSON_GetObjectItemCaseSensitive(e, "type")->valuestring;
		if (strcmp(s->events[i].type, type) != 0 ||
		    !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(e, "data"), s->events[i].data,
				   true))
			return false;
	}
	return true;
}

/* s holds exactly session k's acknowledged events in post order, each at
 * its receipt's seq, plus possibly whole items whose outcome is unknown. */
static void match(const struct scan *s, int k, const char *where)
{
	const char *w = R.what;
	size_t pos = 1;
	if (s) {
		if (s->status != SCAN_OK && s->status != SCAN_TORN)
			fail_msg("%s: %s log of '%s' reads as %s: %s", w, where, run_ids[k],
				 scan_status_name(s->status), s->err.msg);
		if (s->n_events == 0 || strcmp(s->events[0].type, "session/header") != 0)
			fail_msg("%s: %s log of '%s' has no header", w, where, run_ids[k]);
	}
	for (size_t i = 0; i < R.n; i++) {
		const struct titem *t = &R.it[i];
		if (t->sess != k || !t->evs)
			continue;
		size_t n = (size_t)cJSON_GetArraySize(t->evs);
		bool there = s && events_at(s, pos, t->evs);
		if (t->ok && !there)
			FAIL("%s: %s log of '%s' lost acknowledged item %zu (at event %zu of %zu)",
				 w, where, run_ids[k], i, pos, s ? s->n_events : 0);
		if (there && !t->ok && !t->err.outcome_unknown)
			FAIL("%s: %s log of '%s' holds failed item %zu (%s)", w, where, run_ids[k], i,
				 t->err.msg);
		if (there && t->ok && s->events[pos + n - 1].seq + 1 != t->r.next_seq)
			fail_msg("%s: item %zu ends at seq %llu, its receipt says next %llu", w, i,
				 (unsigned long long)s->events[pos + n - 1].seq,
				 (unsigned long long)t->r.next_seq);
		if (there)
			pos += n;
	}
	if (s && pos != s->n_events)
		FAIL("%s: %s log of '%s' holds %zu events, %zu explained (a write after a gap?)",
			 w, where, run_ids[k], s->n_events, pos);
}

/* Where session k's log must be (live, trash, or either) and that it holds
 * what match() demands. */
static void check_tree(const char *root, const char *where)
{
	for (int k = 0; k < 2; k++) {
		const struct sstate *S = &R.s[k];
		struct scan *live = run_read_log(root, STORE_SESSIONS, k);
		struct scan *trash = run_read_log(root, STORE_TRASH, k);
		if (S->deleted && live)
			fail_msg("%s: %s: deleted '%s' is still live", R.what, where, run_ids[k]);
		if (!S->deleted && !S->delete_unknown && trash)
			fail_msg("%s: %s: '%s' is in the trash without a delete", R.what, where, run_ids[k]);
		if (S->deleted && !trash && S->acked)
			fail_msg("%s: %s: deleted '%s' is not in the trash", R.what, where, run_ids[k]);
		match(live ? live : trash, k, where);
		if (live && trash)
			match(trash, k, where);
		scan_free(live);
		scan_free(trash);
	}
}

/* The catalog never leads the logs and holds the last receipt's version.
 * Before the recovery (`before_recovery`), a failed session's row may lag
 * its receipts but never holds more than its log, even when its
 * projection committed before the sync it relied on failed (the writer
 * rebuilds such a row from the log). */
static void check_catalog(bool before_recovery)
{
	struct store *st;
	struct catalog *cat;
	struct cerr err;
	assert_int_equal(store_open(R.root, false, &st, &err), 0);
	assert_int_equal(catalog_open(st, &cat, &err), 0);
	for (int k = 0; k < 2; k++) {
		struct cat_session row;
		if (before_recovery && (R.s[k].deleted || R.s[k].delete_unknown))
			continue;
		if (catalog_get(cat, run_ids[k], &row, &err) < 0) {
			if (R.s[k].acked && !before_recovery)
				fail_msg("%s: the catalog lost '%s': %s", R.what, run_ids[k], err.msg);
			continue;
		}
		struct scan *s = run_read_log(R.root, R.s[k].deleted ? STORE_TRASH : STORE_SESSIONS, k);
		if (before_recovery && s && row.content_version > s->rev.next_seq)
			fail_msg("%s: the catalog has '%s' at version %llu, its log ends at %llu", R.what,
				 run_ids[k], (unsigned long long)row.content_version,
				 (unsigned long long)s->rev.next_seq);
		if (!before_recovery && R.s[k].acked && row.content_version != R.s[k].version)
			fail_msg("%s: catalog has '%s' at version %llu, last receipt %llu", R.what,
				 run_ids[k], (unsigned long long)row.content_version,
				 (unsigned long long)R.s[k].version);
		if (s && row.durable_seq > s->rev.next_seq)
			fail_msg("%s: the watermark of '%s' (%llu) leads its log (%llu)", R.what, run_ids[k],
				 (unsigned long long)row.durable_seq, (unsigned long long)s->rev.next_seq);
		if (R.s[k].deleted && row.deleted_at == 0)
			fail_msg("%s: deleted '%s' is live in the catalog", R.what, run_ids[k]);
		scan_free(s);
		cat_session_release(&row);
	}
	catalog_close(cat);
	store_close(st);
}

/* ---- the script ---- */

/* Phase 4: each live session that failed is recovered by a full save at
 * the seq its log is really at (re-read, as after an unknown outcome) and
 * the last acknowledged version; then one history item follows. When the
 * writer's own re-read cut bytes a failed sync left (so the seq read was
 * stale), the save conflicts: read again and retry once. */
static void recover(void)
{
	bool retry[2] = {true, true};
	for (int attempt = 1; attempt <= 2; attempt++) {
		size_t from = R.n;
		for (int k = 0; k < 2; k++) {
			struct sstate *S = &R.s[k];
			if (S->deleted || S->delete_unknown || !retry[k])
				continue;
			uint64_t next = S->next;
			if (S->failed) {
				struct scan *s = run_read_log(R.root, STORE_SESSIONS, k);
				next = s ? s->rev.next_seq : 1;
				scan_free(s);
				run_fsave(k, next, S->version, 1, attempt);
				next++;
			} else if (attempt > 1) {
				continue;
			}
			run_hist(k, next, 1, false);
		}
		run_settle();
		retry[0] = retry[1] = false;
		bool again = false;
		for (size_t i = from; i < R.n; i++)
			if (R.it[i].recovery && !R.it[i].ok && R.it[i].err.cls == CERR_CONFLICT)
				again = retry[R.it[i].sess] = true;
		if (!again)
			break;
	}
}

static bool run_one(const struct fault *f, unsigned long n)
{
	struct cerr err = {0};
	struct store *st;
	memset(&R, 0, sizeof R);
	R.flt = f;
	snprintf(R.what, sizeof R.what, "%s #%lu %s%s%s", faultfs_op_name(f->op), n,
		 f->shortw ? "short write" : strerror(f->errnum),
		 f->pre == FF_NOPS ? "" : f->pre_short ? " after short " : " after failed ",
		 f->pre == FF_NOPS ? "" : faultfs_op_name(f->pre));
	assert_int_equal(tmp_root("cairn-fifo-faults", R.dir, sizeof R.dir, R.root, sizeof R.root), 0);
	assert_int_equal(store_open(R.root, true, &st, &err), 0);
	store_close(st);
	faultfs_install();
	assert_int_equal(faultfs_track(R.root), 0);
	run_loop_init();
	R.f = fifo_new(&R.loop, R.root, NULL, &err);
	if (!R.f)
		fail_msg("%s: fifo_new: %s", R.what, err.msg);
	arm(f, n);
	if (slow_syncs)
		faultfs_set_sync_hook(sync_hook, NULL);

	/* Phase 1, one batch: both sessions created, history coalesced. */
	fifo_pause(R.f, true);
	run_hist(0, 1, 2, true);
	run_hist(0, 3, 1, false);
	run_hist(1, 1, 2, true);
	run_hist(0, 4, 2, false);
	run_fsave(1, 3, 3, 1, 0);
	fifo_pause(R.f, false);
	run_settle();
	/* Phase 2, one batch: full save, meta, history of both. */
	fifo_pause(R.f, true);
	run_fsave(0, 6, 6, 2, 0);
	run_meta(0, "{\"title\":\"Alpha\"}");
	run_hist(0, 9, 1, false);
	run_meta(1, "{\"pinned\":true}");
	run_hist(1, 5, 2, false);
	fifo_pause(R.f, false);
	run_settle();
	/* Phase 3, pipelined: history, a delete, a full save. */
	run_hist(0, 10, 2, false);
	R.it[R.n].sess = 1;
	run_put(1, fifo_delete(run_ids[1]), NULL, 0);
	run_fsave(0, 12, 12, 1, 0);
	run_settle();
	/* Phase 4, one session in consecutive rounds: each item a batch of
	 * its own, queued before the one ahead of it settles, so each is
	 * written while the one before it syncs. */
	fifo_pause(R.f, true);
	fifo_set_batch_limit(R.f, 1);
	run_fsave(0, 13, 13, 1, 0);
	run_fsave(0, 14, 14, 1, 0);
	run_hist(0, 15, 1, false);
	run_fsave(0, 16, 16, 2, 0);
	fifo_pause(R.f, false);
	run_settle();
	fifo_set_batch_limit(R.f, 0);
	check_catalog(true);
	recover();
	run_settle();

	if (fifo_close_wait(R.f, deadline(30000)) != 0)
		fail_msg("%s: fifo_close_wait timed out", R.what);
	assert_int_equal(uv_run(&R.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&R.loop), 0);
	faultfs_set_sync_hook(NULL, NULL);
	hook_fault = NULL;
	bool fired = faultfs_fired() > 0;
	faultfs_disarm();
	if (fired && R.n_failed == 0)
		fail_msg("%s: a fault fired and no item failed", R.what);
	if (!fired && R.n_failed != 0)
		fail_msg("%s: items failed without a fault", R.what);
	for (int k = 0; k < 2 && !fired; k++)
		if (R.s[k].failed || !R.s[k].acked)
			fail_msg("%s: '%s' failed without a fault", R.what, run_ids[k]);

	/* A power loss now keeps everything acknowledged. */
	char *crash = xasprintf("%s/crash", R.dir);
	assert_int_equal(faultfs_crash_copy(R.root, crash), 0);
	check_tree(crash, "after a power loss the");
	free(crash);
	faultfs_uninstall();
	check_tree(R.root, "the");
	check_catalog(false);
	for (size_t i = 0; i < R.n; i++)
		cJSON_Delete(R.it[i].evs);
	rm_rf(R.dir);
	return fired;
}

/* Run fault f at its 1st, 2nd, ... call until a run meets none; counts
 * the runs by the kind of call that failed. */
static void fault_loop(const struct fault *f, unsigned fired[FF_NOPS], unsigned *total,
		       unsigned *unknown_runs)
{
	unsigned long n = 1;
	while (run_one(f, n)) {
		fired[f->pre != FF_NOPS ? f->pre : f->op]++;
		(*total)++;
		for (size_t i = 0; i < R.n; i++)
			if (!R.it[i].ok && R.it[i].err.outcome_unknown) {
				(*unknown_runs)++;
				break;
			}
		if (++n > MAX_N)
			fail_msg("%s: still failing at call %d", faultfs_op_name(f->op), MAX_N);
	}
}

static void test_every_fault_acks_once_and_keeps_acked_events(void **state)
{
	(void)state;
	unsigned fired[FF_NOPS] = {0}, total = 0, unknown_runs = 0;
	for (size_t k = 0; k < NFAULTS; k++)
		fault_loop(&faults[k], fired, &total, &unknown_runs);
	print_message("# %u runs with an injected failure (%u with an unknown outcome), %zu "
		      "without\n",
		      total, unknown_runs, NFAULTS);
	print_message("# runs failed at pwrite %u, fdatasync %u, fsync %u, rename %u\n",
		      fired[FF_PWRITE], fired[FF_FDATASYNC], fired[FF_FSYNC], fired[FF_RENAME]);
	/* The script really meets each kind of call several times. */
	assert_true(fired[FF_PWRITE] >= 36);
	assert_true(fired[FF_FDATASYNC] >= 24);
	assert_true(fired[FF_FSYNC] >= 20);
	assert_true(fired[FF_RENAME] >= 6);
	assert_true(unknown_runs > 0);
}

/* The same script with slow log syncs: a sync of the round in flight
 * fails after the next round's projection has committed. */
static void test_faults_with_slow_syncs_keep_acked_events(void **state)
{
	(void)state;
	static const struct fault slow[] = {F(FF_FDATASYNC, EIO), F(FF_FDATASYNC, ENOSPC),
					    F(FF_PWRITE, EIO)};
	unsigned fired[FF_NOPS] = {0}, total = 0, unknown_runs = 0;
	slow_syncs = true;
	for (size_t k = 0; k < sizeof slow / sizeof slow[0]; k++)
		fault_loop(&slow[k], fired, &total, &unknown_runs);
	slow_syncs = false;
	print_message("# slow syncs: %u runs with an injected failure (fdatasync %u, pwrite %u)\n",
		      total, fired[FF_FDATASYNC], fired[FF_PWRITE]);
	assert_true(fired[FF_FDATASYNC] >= 16);
	assert_true(fired[FF_PWRITE] >= 12);
	assert_true(unknown_runs > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_fault_acks_once_and_keeps_acked_events),
		cmocka_unit_test(test_faults_with_slow_syncs_keep_acked_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
