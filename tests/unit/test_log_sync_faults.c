/* test_log_sync_faults.c — single failed syncs of the log writer (the
 * fixture: support_logfaults.h): a failed fdatasync is never acknowledged
 * whatever its cleanup manages, one failing log_sync takes back every frame
 * written before it, a failed fsync poisons the handle so that its next
 * append re-reads the file, and a failed directory sync after the
 * publication's rename leaves the outcome unknown until the next append. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <sys/stat.h>

#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_logfaults.h"

/* A session with two batches, open in *lg; returns its next seq. */
static uint64_t two_batches(struct fx *x, struct log **lg)
{
	struct cerr err;
	struct batch b;
	uint64_t next;
	lf_msgs(&b, "setup", 2);
	lf_open(x);
	assert_int_equal(log_create(x->st, SID, NULL, NULL, lg, &err), 0);
	assert_int_equal(log_append(*lg, 1, b.ev, b.n, &next, &err), 0);
	assert_int_equal(log_append(*lg, next, b.ev, b.n, &next, &err), 0);
	lf_batch_free(&b);
	return next;
}

/* A failed fdatasync is never reported as success, whatever the cleanup
 * manages; the handle then believes the disk, not its cursor. */
static void test_fdatasync_failure_never_acked(void **state)
{
	(void)state;
	static const int errs[] = {EIO, ENOSPC};
	for (size_t i = 0; i < 2; i++) {
		for (int cleanup_fails = 0; cleanup_fails < 2; cleanup_fails++) {
			struct fx x;
			struct log *lg;
			struct cerr err = {0};
			struct batch b;
			lf_msgs(&b, "unknown", 3);
			uint64_t before = two_batches(&x, &lg), next = 999;
			faultfs_fail(FF_FDATASYNC, 1, errs[i]);
			if (cleanup_fails) /* the frame cannot be taken back */
				faultfs_fail(FF_FTRUNCATE, 1, errs[i]);
			assert_int_equal(log_append(lg, before, b.ev, b.n, &next, &err), -1);
			assert_int_equal(err.cls, CERR_IO);
			assert_true(err.outcome_unknown);
			assert_int_equal(next, 999);
			assert_int_equal(log_next_seq(lg), before);
			faultfs_disarm();
			struct snap now;
			lf_snap_read(x.path, &now);
			uint64_t on_disk = now.next_seq;
			assert_int_equal(on_disk, cleanup_fails ? before + b.n : before);
			/* The handle never builds on bytes a failed sync may not
			 * have written: even when they stayed in the file, its
			 * next use cuts them and goes on at the acknowledged seq. */
			assert_int_equal(log_append(lg, before, b.ev, b.n, &next, &err), 0);
			assert_int_equal(next, before + b.n);
			log_close(lg);
			lf_snap_free(&now);
			lf_snap_read(x.path, &now);
			assert_int_equal(now.status, SCAN_OK);
			assert_int_equal(now.next_seq, next);
			lf_check_survives(&x, &now, "after a failed fdatasync");
			lf_snap_free(&now);
			lf_batch_free(&b);
			lf_close(&x);
		}
	}
}

/* Two frames written with log_write and one failing log_sync: both are
 * taken back together, the outcome is unknown, and the handle goes on at
 * the seq before the first. */
static void test_failed_sync_takes_back_every_write(void **state)
{
	(void)state;
	struct fx x;
	struct log *lg;
	struct cerr err = {0};
	struct batch b;
	lf_msgs(&b, "pending", 2);
	uint64_t before = two_batches(&x, &lg);
	assert_int_equal(log_write(lg, before, b.ev, b.n, NULL, &err), 0);
	assert_int_equal(log_write(lg, before + b.n, b.ev, b.n, NULL, &err), 0);
	assert_true(log_pending(lg));
	faultfs_fail(FF_FDATASYNC, 1, EIO);
	assert_int_equal(log_sync(lg, &err), -1);
	assert_int_equal(err.cls, CERR_IO);
	assert_true(err.outcome_unknown);
	assert_false(log_pending(lg));
	assert_int_equal(log_next_seq(lg), before);
	faultfs_disarm();
	struct snap now;
	lf_snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.next_seq, before);
	lf_snap_free(&now);
	uint64_t next;
	assert_int_equal(log_append(lg, before, b.ev, b.n, &next, &err), 0);
	assert_int_equal(next, before + b.n);
	log_close(lg);
	lf_snap_read(x.path, &now);
	assert_int_equal(now.next_seq, before + b.n);
	lf_snap_free(&now);
	lf_batch_free(&b);
	lf_close(&x);
}

/* Counts the re-read of the next append: opening the log again (openat)
 * and reading it (pread). */
static bool next_append_rereads(struct log *lg, uint64_t seq)
{
	struct cerr err;
	struct batch b;
	lf_msgs(&b, "probe", 1);
	faultfs_reset_counts();
	assert_int_equal(log_append(lg, seq, b.ev, b.n, NULL, &err), 0);
	lf_batch_free(&b);
	return faultfs_count(FF_OPENAT) >= 1 && faultfs_count(FF_PREAD) >= 1;
}

/* After a failed fsync the handle is poisoned: the next append re-reads
 * from disk even when the file still looks like the cursor. */
static void test_poisoned_handle_rereads(void **state)
{
	(void)state;
	struct fx x;
	struct log *lg;
	struct cerr err = {0};
	struct batch b;
	lf_msgs(&b, "x", 2);
	uint64_t seq = two_batches(&x, &lg);
	/* A healthy append trusts its cursor. */
	assert_false(next_append_rereads(lg, seq));
	seq += 1;

	/* fdatasync fails; the rollback truncates but its fsync fails too, so
	 * length and identity match the cursor and only the poison tells. */
	faultfs_fail(FF_FDATASYNC, 1, EIO);
	faultfs_fail(FF_FSYNC, 1, EIO);
	assert_int_equal(log_append(lg, seq, b.ev, b.n, NULL, &err), -1);
	assert_true(err.outcome_unknown);
	faultfs_disarm();
	struct stat st;
	assert_int_equal(stat(x.path, &st), 0);
	assert_true(next_append_rereads(lg, seq));
	seq += 1;
	assert_false(next_append_rereads(lg, seq));
	seq += 1;

	/* A failed fsync after a torn-tail cut poisons too. */
	log_close(lg);
	lf_tear(x.path);
	assert_int_equal(log_open(x.st, SID, &lg, &err), 0);
	struct revision rev = log_revision_of(lg);
	uint64_t cut;
	faultfs_fail(FF_FSYNC, 1, EIO);
	assert_int_equal(log_cut_torn_tail(lg, &rev, &cut, &err), -1);
	assert_int_equal(err.cls, CERR_IO);
	faultfs_disarm();
	assert_true(next_append_rereads(lg, seq));
	seq += 1;
	log_close(lg);
	struct snap now;
	lf_snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.next_seq, seq);
	lf_snap_free(&now);
	lf_batch_free(&b);
	lf_close(&x);
}

/* The publication's directory fsync fails after the rename: the outcome is
 * unknown, and the next append re-reads and makes the entry durable. */
static void test_publish_dir_sync_failure(void **state)
{
	(void)state;
	struct batch b1;
	lf_msgs(&b1, "a", 1);
	/* Fail fsync N = 1, 2, ... until the failing one follows the rename. */
	for (unsigned long n = 1;; n++) {
		struct fx x;
		struct log *lg;
		struct cerr err = {0};
		uint64_t next = 0;
		assert_true(n < 20);
		lf_open(&x);
		assert_int_equal(log_create(x.st, SID, NULL, NULL, &lg, &err), 0);
		faultfs_fail(FF_FSYNC, n, EIO);
		int rc = log_append(lg, 1, b1.ev, b1.n, &next, &err);
		assert_int_equal(faultfs_fired(), 1);
		faultfs_disarm();
		if (faultfs_count(FF_RENAME) == 0) {
			log_close(lg);
			lf_close(&x);
			continue;
		}
		assert_int_equal(rc, -1);
		assert_int_equal(err.cls, CERR_IO);
		assert_true(err.outcome_unknown);
		assert_true(next_append_rereads(lg, 1 + b1.n));
		log_close(lg);
		struct snap now;
		lf_snap_read(x.path, &now);
		assert_int_equal(now.next_seq, 3);
		lf_check_survives(&x, &now, "publication after a failed directory sync");
		lf_snap_free(&now);
		lf_close(&x);
		break;
	}
	lf_batch_free(&b1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fdatasync_failure_never_acked),
		cmocka_unit_test(test_failed_sync_takes_back_every_write),
		cmocka_unit_test(test_poisoned_handle_rereads),
		cmocka_unit_test(test_publish_dir_sync_failure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
