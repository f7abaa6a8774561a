/* test_log_faults.c — fault loops over the log writer (SQLite style; the
 * fixture: support_logfaults.h): for append, first publication and repair,
 * fail the Nth pwrite, fsync, fdatasync, rename, ftruncate, mkdirat and
 * create with EIO and ENOSPC (and make the Nth pwrite short) for N = 1, 2,
 * ... until a run meets no fault. After each failure the caller must get
 * io, the log must read back at its acknowledged state, a later append must
 * succeed, and everything acknowledged in the end must survive a simulated
 * power loss. Single failed syncs: test_log_sync_faults.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist/log.h"
#include "persist/repair.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_logfaults.h"

#define MAX_N 200

/* What to inject: op fails with errnum at its Nth call (or the Nth pwrite
 * is short). With pre, the first pre call fails with EIO first, so the
 * store is in its cleanup path when op fails. */
struct fault {
	enum faultfs_op op;
	int errnum;
	bool shortw;
	enum faultfs_op pre; /* FF_NOPS: none */
	bool pre_short;      /* pre is a short pwrite, not EIO */
};

#define F(op, e) {op, e, false, FF_NOPS, false}
#define CLEANUP(op, pre) {op, EIO, false, pre, false}

static const struct fault faults[] = {
	F(FF_PWRITE, EIO),	F(FF_PWRITE, ENOSPC),	 {FF_PWRITE, ENOSPC, true, FF_NOPS, false},
	F(FF_FSYNC, EIO),	F(FF_FSYNC, ENOSPC),	 F(FF_FDATASYNC, EIO),
	F(FF_FDATASYNC, ENOSPC), F(FF_RENAME, EIO),	 F(FF_RENAME, ENOSPC),
	F(FF_FTRUNCATE, EIO),	F(FF_FTRUNCATE, ENOSPC), F(FF_MKDIRAT, EIO),
	F(FF_MKDIRAT, ENOSPC),	F(FF_CREATE, EIO),	 F(FF_CREATE, ENOSPC),
	/* The cleanup of a failed append (truncate back, fsync) fails too. */
	CLEANUP(FF_FTRUNCATE, FF_PWRITE), CLEANUP(FF_FSYNC, FF_PWRITE),
	CLEANUP(FF_FTRUNCATE, FF_FDATASYNC), CLEANUP(FF_FSYNC, FF_FDATASYNC),
	/* A short write leaves part of a frame that cannot be truncated away. */
	{FF_FTRUNCATE, EIO, false, FF_PWRITE, true},
};
#define NFAULTS (sizeof faults / sizeof faults[0])
#define NPRIMARY 15 /* the faults without pre */

static char fault_name[96];

static const char *fname(const struct fault *f, unsigned long n)
{
	snprintf(fault_name, sizeof fault_name, "%s #%lu %s%s%s", faultfs_op_name(f->op), n,
		 f->shortw ? "short write" : strerror(f->errnum),
		 f->pre_short ? " after short " : f->pre != FF_NOPS ? " after failed " : "",
		 f->pre != FF_NOPS ? faultfs_op_name(f->pre) : "");
	return fault_name;
}

static unsigned long target_at; /* count of f->op at which the fault fires */

static void arm(const struct fault *f, unsigned long n)
{
	target_at = faultfs_count(f->op) + n;
	if (f->pre_short)
		faultfs_short_write(1);
	else if (f->pre != FF_NOPS)
		faultfs_fail(f->pre, 1, EIO);
	if (f->shortw)
		faultfs_short_write(n);
	else
		faultfs_fail(f->op, n, f->errnum);
}

static bool is_sync(enum faultfs_op op)
{
	return op == FF_FSYNC || op == FF_FDATASYNC;
}

static void check_failed(int rc, const struct cerr *err, const struct fault *f, const char *what)
{
	if (rc != -1 || err->cls != CERR_IO)
		fail_msg("%s: returned %d with class %s (%s), want -1 io", what, rc,
			 cerr_class_name(err->cls), err->msg);
	if (err->outcome_unknown && !is_sync(f->op) && !(f->pre != FF_NOPS && is_sync(f->pre)))
		fail_msg("%s: outcome reported unknown without a failed sync: %s", what, err->msg);
}

static void check_types(const struct snap *s, size_t from, const struct batch *b, const char *what)
{
	for (size_t i = 0; i < b->n; i++)
		if (from + i >= s->n || strcmp(s->types[from + i], b->ev[i].type) != 0)
			fail_msg("%s: event %zu is not the %s appended", what, from + i, b->ev[i].type);
}

/* Did the run meet any fault (*any), and the one it aims at (returned)? */
static bool met_fault(const struct fault *f, bool *any)
{
	*any = faultfs_fired() > 0;
	faultfs_disarm();
	return faultfs_count(f->op) >= target_at;
}

/* Run one scenario under faults[k] at call N = 1, 2, ... until a run does
 * not meet the fault it aims at; count the runs that met it. */
typedef bool (*scenario_fn)(const struct fault *f, unsigned long n);

static void fault_loop(scenario_fn run, const char *name, size_t nfaults, unsigned *fired_per_op)
{
	unsigned total = 0;
	for (size_t k = 0; k < nfaults; k++) {
		unsigned long n = 1;
		while (run(&faults[k], n)) {
			fired_per_op[faults[k].op]++;
			total++;
			if (++n > MAX_N)
				fail_msg("%s: still failing at call %d", faultfs_op_name(faults[k].op), MAX_N);
		}
	}
	print_message("# %s: %u runs with an injected failure, %zu without\n", name, total, nfaults);
}

/* ---- append ---- */

static bool run_append(const struct fault *f, unsigned long n)
{
	struct fx x;
	struct cerr err = {0};
	struct log *lg;
	struct batch b1, b2, b3, b4, b5;
	uint64_t next;
	const char *what = fname(f, n);
	lf_msgs(&b1, "one", 1);
	lf_msgs(&b2, "two", 3);
	lf_big(&b3, 6000); /* larger than b4: its torn part must be cut, not overwritten */
	lf_msgs(&b4, "four", 1);
	lf_msgs(&b5, "five", 2);
	lf_open(&x);
	assert_int_equal(log_create(x.st, SID, NULL, NULL, &lg, &err), 0);
	assert_int_equal(log_append(lg, 1, b1.ev, b1.n, &next, &err), 0);
	assert_int_equal(log_append(lg, next, b2.ev, b2.n, &next, &err), 0);
	struct snap acked, now;
	lf_snap_read(x.path, &acked);
	assert_int_equal(acked.next_seq, next);

	arm(f, n);
	uint64_t got_next = 12345;
	int rc = log_append(lg, next, b3.ev, b3.n, &got_next, &err);
	bool fired, target = met_fault(f, &fired);
	lf_snap_read(x.path, &now);
	uint64_t expect;
	if (!fired) {
		assert_int_equal(rc, 0);
		assert_int_equal(got_next, next + b3.n);
		assert_int_equal(now.status, SCAN_OK);
		assert_int_equal(now.n, acked.n + b3.n);
		expect = lf_check_holds(&now, &acked, b3.n, true, what);
	} else {
		check_failed(rc, &err, f, what);
		assert_int_equal(got_next, 12345); /* never reported durable */
		/* A partial frame stays only when the cleanup failed too. */
		if (now.status != SCAN_OK && !(now.status == SCAN_TORN && f->pre != FF_NOPS))
			fail_msg("%s: a failed append left the log %s", what,
				 scan_status_name(now.status));
		expect = lf_check_holds(&now, &acked, b3.n, err.outcome_unknown, what);
	}
	/* The same handle goes on where its last acknowledged batch ended:
	 * bytes a failed sync may never have written are cut on its next use,
	 * never built on (another reader of the file cannot know that). */
	uint64_t same = rc != 0 ? acked.next_seq : expect;
	if (log_append(lg, same, b4.ev, b4.n, &next, &err) != 0)
		fail_msg("%s: the next append on the same handle failed: %s", what, err.msg);
	log_close(lg);
	/* So does a reopened one. */
	if (log_open(x.st, SID, &lg, &err) != 0 ||
	    log_append(lg, next, b5.ev, b5.n, &next, &err) != 0)
		fail_msg("%s: append on a reopened handle failed: %s", what, err.msg);
	log_close(lg);
	lf_snap_free(&now);
	lf_snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.next_seq, next);
	lf_check_holds(&now, &acked, now.n - acked.n, true, what);
	check_types(&now, (size_t)same, &b4, what);
	check_types(&now, (size_t)same + b4.n, &b5, what);
	lf_check_survives(&x, &now, what);
	lf_snap_free(&now);
	lf_snap_free(&acked);
	lf_close(&x);
	lf_batch_free(&b1), lf_batch_free(&b2), lf_batch_free(&b3), lf_batch_free(&b4), lf_batch_free(&b5);
	return target;
}

static void test_append_fault_is_io_and_keeps_acked_state(void **state)
{
	(void)state;
	unsigned fired[FF_NOPS] = {0};
	fault_loop(run_append, "append", NFAULTS, fired);
	assert_true(fired[FF_PWRITE] >= 3);
	assert_true(fired[FF_FDATASYNC] >= 2);
	assert_true(fired[FF_FTRUNCATE] >= 2);
	assert_true(fired[FF_FSYNC] >= 2);
}

/* ---- first publication ---- */

/* Staging files left in the session directory. */
static size_t leftovers(const char *root)
{
	char *p = session_path(root, STORE_SESSIONS, NULL, SID, NULL);
	DIR *d = opendir(p);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strstr(de->d_name, ".tmp") != NULL;
	if (d)
		closedir(d);
	free(p);
	return n;
}

static bool run_publish(const struct fault *f, unsigned long n)
{
	struct fx x;
	struct cerr err = {0};
	struct log *lg;
	struct batch b1, b2, b3;
	uint64_t next = 0;
	const char *what = fname(f, n);
	lf_msgs(&b1, "first", 2);
	lf_msgs(&b2, "second", 1);
	lf_msgs(&b3, "third", 3);
	lf_open(&x);
	struct snap now;

	arm(f, n);
	int rc = log_create(x.st, SID, NULL, NULL, &lg, &err);
	assert_int_equal(rc, 0);
	rc = log_append(lg, 1, b1.ev, b1.n, &next, &err);
	bool fired, target = met_fault(f, &fired);
	lf_snap_read(x.path, &now);
	uint64_t expect;
	if (!fired) {
		assert_int_equal(rc, 0);
		assert_int_equal(next, 1 + b1.n);
		assert_int_equal(now.status, SCAN_OK);
		assert_int_equal(now.n, 1 + b1.n);
		expect = now.next_seq;
	} else {
		check_failed(rc, &err, f, what);
		expect = 1;
		if (now.exists) {
			/* Only a failed sync after the rename may leave it, and
			 * then whole. */
			if (!err.outcome_unknown)
				fail_msg("%s: a failed publication left '%s'", what, x.path);
			if (now.status != SCAN_OK || now.n != 1 + b1.n)
				fail_msg("%s: a half-published log: %s, %zu events", what,
					 scan_status_name(now.status), now.n);
			expect = now.next_seq;
		}
	}
	if (leftovers(x.root))
		fail_msg("%s: a staging file was left behind", what);
	if (log_append(lg, expect, b2.ev, b2.n, &next, &err) != 0)
		fail_msg("%s: publishing again on the same handle failed: %s", what, err.msg);
	log_close(lg);
	if (log_open(x.st, SID, &lg, &err) != 0 ||
	    log_append(lg, next, b3.ev, b3.n, &next, &err) != 0)
		fail_msg("%s: append on a reopened handle failed: %s", what, err.msg);
	log_close(lg);
	lf_snap_free(&now);
	lf_snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.next_seq, next);
	assert_string_equal(now.types[0], "session/header");
	check_types(&now, (size_t)expect, &b2, what);
	check_types(&now, (size_t)expect + b2.n, &b3, what);
	lf_check_survives(&x, &now, what);
	lf_snap_free(&now);
	lf_close(&x);
	lf_batch_free(&b1), lf_batch_free(&b2), lf_batch_free(&b3);
	return target;
}

static void test_publish_fault_is_io_and_keeps_acked_state(void **state)
{
	(void)state;
	unsigned fired[FF_NOPS] = {0};
	fault_loop(run_publish, "first publication", NPRIMARY, fired);
	assert_true(fired[FF_MKDIRAT] >= 2 * 3);
	assert_true(fired[FF_CREATE] >= 2 * 2);
	assert_true(fired[FF_PWRITE] >= 3);
	assert_true(fired[FF_FSYNC] >= 2 * 4);
	assert_true(fired[FF_RENAME] >= 2);
}

/* ---- repair: torn-tail cut + closers ---- */

static bool run_repair(const struct fault *f, unsigned long n)
{
	struct fx x;
	struct cerr err = {0};
	struct log *lg;
	struct batch b1, b2, b3;
	struct repair_report rep;
	uint64_t next;
	const char *what = fname(f, n);
	lf_msgs(&b1, "hello", 2);
	lf_open_turn(&b2);
	lf_msgs(&b3, "after", 1);
	lf_open(&x);
	assert_int_equal(log_create(x.st, SID, NULL, NULL, &lg, &err), 0);
	assert_int_equal(log_append(lg, 1, b1.ev, b1.n, &next, &err), 0);
	assert_int_equal(log_append(lg, next, b2.ev, b2.n, &next, &err), 0);
	log_close(lg);
	struct snap acked, now;
	lf_snap_read(x.path, &acked);
	lf_tear(x.path);
	assert_int_equal(log_open(x.st, SID, &lg, &err), 0);
	assert_int_equal(log_scan(lg)->status, SCAN_TORN);

	arm(f, n);
	int rc = repair_log(lg, &rep, &err);
	bool fired, target = met_fault(f, &fired);
	lf_snap_read(x.path, &now);
	uint64_t expect;
	if (!fired) {
		assert_int_equal(rc, 0);
		assert_int_equal(rep.appended, 3); /* 2 results + turn/end */
		assert_true(rep.cut_bytes > 0);
		cJSON_Delete(rep.closers);
		assert_int_equal(now.status, SCAN_OK);
		assert_int_equal(now.n, acked.n + 3);
		assert_int_equal(now.open_turns, 0);
		expect = lf_check_holds(&now, &acked, 3, true, what);
	} else {
		check_failed(rc, &err, f, what);
		expect = lf_check_holds(&now, &acked, 3, err.outcome_unknown, what);
	}
	/* The same handle appends where its last acknowledged write ended
	 * (cutting what is torn or was never synced), and a reopened one
	 * repairs what is still open. */
	uint64_t same = rc != 0 ? acked.next_seq : expect;
	if (log_append(lg, same, b3.ev, b3.n, &next, &err) != 0)
		fail_msg("%s: the next append on the same handle failed: %s", what, err.msg);
	log_close(lg);
	if (log_open(x.st, SID, &lg, &err) != 0 || repair_log(lg, &rep, &err) != 0)
		fail_msg("%s: repair on a reopened handle failed: %s", what, err.msg);
	cJSON_Delete(rep.closers);
	log_close(lg);
	lf_snap_free(&now);
	lf_snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.open_turns, 0);
	lf_check_holds(&now, &acked, now.n - acked.n, true, what);
	check_types(&now, (size_t)same, &b3, what);
	lf_check_survives(&x, &now, what);
	lf_snap_free(&now);
	lf_snap_free(&acked);
	lf_close(&x);
	lf_batch_free(&b1), lf_batch_free(&b2), lf_batch_free(&b3);
	return target;
}

static void test_repair_fault_is_io_and_keeps_acked_state(void **state)
{
	(void)state;
	unsigned fired[FF_NOPS] = {0};
	fault_loop(run_repair, "repair", NFAULTS, fired);
	assert_true(fired[FF_FTRUNCATE] >= 2);
	assert_true(fired[FF_FSYNC] >= 2);
	assert_true(fired[FF_PWRITE] >= 3);
	assert_true(fired[FF_FDATASYNC] >= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_fault_is_io_and_keeps_acked_state),
		cmocka_unit_test(test_publish_fault_is_io_and_keeps_acked_state),
		cmocka_unit_test(test_repair_fault_is_io_and_keeps_acked_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
