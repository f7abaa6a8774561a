/* test_every_fault_acks_once_and_keeps_acked_events.c — fault loops over the persistence FIFO (SQLite style):
 * a scripted sequence of items for two sessions (creation, coalesced history
 * batches, full saves, meta changes, a delete, one session's saves in
 * consecutive overlapping rounds, then a recovery save) runs
 * with the Nth pwrite / fdatasync / fsync / rename failing with EIO or
 * ENOSPC (or a short write, or a cleanup ftruncate / fsync failing after a
 * failed write or sync) for N = 1, 2, ... until a run meets no fault. In
 * every run: every item completes exactly once, in post order, on the loop
 * thread, with a receipt or an io error (fail-fast follow-ups naming the
 * first failure, or, when they were written in the same round and their
 * log's one sync failed, or in the next round while it synced, that same
 * error; pipelined full saves of a failed session may conflict);
 * every acknowledged event is in the log read back and after a simulated
 * power loss; and nothing of a failed session is written after its gap
 * (the log is exactly the acknowledged items, plus possibly items whose
 * error has outcome_unknown). Then catalog failures: a write lock held by
 * another connection, a projection or deletion mark aborted after the log
 * write (acknowledged, with the catalog behind), and a root fifo_new
 * cannot open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

#define MAX_N 300
#define MAX_ITEMS 32

static const char *const ids[2] = {"A", "B"};

/* ---- faults ---- */

/* op fails with errnum at its Nth call (or the Nth pwrite is short); with
 * pre, pre fails at its Nth call instead and op at its first call after. */
struct fault {
	enum faultfs_op op;
	int errnum;
	bool shortw;
	enum faultfs_op pre; /* FF_NOPS: none */
	bool pre_short;
};

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

static bool is_sync(enum faultfs_op op)
{
	return op == FF_FSYNC || op == FF_FDATASYNC;
}

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

/* ---- one run ---- */

struct titem {
	int calls, order;
	bool on_loop, ok, both_or_none;
	struct fifo_receipt r;
	struct cerr err;
	int sess;
	enum fifo_kind kind;
	int recovery; /* 0, or the attempt of a recovery save */
	cJSON *evs; /* the events it appends ({type, data}); NULL for delete */
};

struct sstate {
	bool failed, acked, deleted, delete_unknown;
	struct cerr why;
	uint64_t next, version;
};

struct run {
	char what[128];
	const struct fault *flt;
	char dir[64];
	char root[128];
	uv_loop_t loop;
	struct fifo *f;
	struct titem it[MAX_ITEMS];
	size_t n, judged, n_failed;
	struct sstate s[2];
	int order;
	bool nojudge; /* the catalog tests check their items themselves */
};

static struct run R;
static pthread_t loop_thread;

static void done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	(void)it;
	struct titem *t = ctx;
	t->calls++;
	t->order = ++R.order;
	t->on_loop = pthread_equal(pthread_self(), loop_thread);
	t->both_or_none = (r == NULL) == (err == NULL);
	t->ok = err == NULL;
	if (r)
		t->r = *r;
	if (err)
		t->err = *err;
}

static void put(int k, struct fifo_item *item, cJSON *evs, int recovery)
{
	struct cerr err = {0};
	assert_true(R.n < MAX_ITEMS);
	struct titem *t = &R.it[R.n++];
	memset(t, 0, sizeof *t);
	t->sess = k;
	t->kind = fifo_item_kind(item);
	t->recovery = recovery;
	t->evs = evs;
	if (fifo_post(R.f, item, done_cb, t, &err) != 0)
		fail_msg("%s: fifo_post: %s", R.what, err.msg);
}

/* n messages tagged with the item's index, and a copy to check against. */
static cJSON *msgs(const char *type, int n, cJSON **copy)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		char text[64];
		snprintf(text, sizeof text, "%s item %zu event %d", ids[R.it[R.n].sess], R.n, i);
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "type", type);
		cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "data"), "text", text);
		cJSON_AddItemToArray(a, e);
	}
	*copy = cJSON_Duplicate(a, 1);
	return a;
}

static void hist(int k, uint64_t seq, int n, bool create)
{
	cJSON *copy;
	R.it[R.n].sess = k;
	struct fifo_item *it = fifo_history(ids[k], seq, msgs("user/message", n, &copy));
	if (create)
		fifo_item_create(it, NULL);
	put(k, it, copy, 0);
}

static void fsave(int k, uint64_t seq, uint64_t version, int n, int recovery)
{
	cJSON *copy;
	R.it[R.n].sess = k;
	struct fifo_item *it =
		fifo_full_save(ids[k], seq, version, msgs("assistant/text", n, &copy));
	if (recovery)
		fifo_item_create(it, NULL);
	put(k, it, copy, recovery);
}

static void meta(int k, const char *json)
{
	cJSON *m = cJSON_Parse(json), *evs = cJSON_CreateArray(), *e = cJSON_CreateObject();
	assert_non_null(m);
	cJSON_AddStringToObject(e, "type", "session/meta");
	cJSON_AddItemToObject(e, "data", cJSON_Duplicate(m, 1));
	cJSON_AddItemToArray(evs, e);
	put(k, fifo_meta(ids[k], m), evs, 0);
}

/* Every item completes exactly once, in post order, on the loop thread,
 * with a receipt or an error the session's state explains. */
static void judge(size_t i)
{
	struct titem *t = &R.it[i];
	struct sstate *S = &R.s[t->sess];
	const char *w = R.what;
	if (t->calls != 1)
		fail_msg("%s: item %zu completed %d times", w, i, t->calls);
	if (t->order != (int)i + 1)
		fail_msg("%s: item %zu completed as number %d", w, i, t->order);
	if (!t->on_loop || t->both_or_none)
		fail_msg("%s: item %zu: off the loop thread or a bad completion", w, i);
	bool appends = t->kind != FIFO_DELETE;
	if (t->ok) {
		if (S->failed && t->kind != FIFO_FULL_SAVE && appends)
			fail_msg("%s: item %zu of '%s' acknowledged after a failed item", w, i,
				 ids[t->sess]);
		if (t->kind == FIFO_DELETE) {
			S->deleted = true;
			return;
		}
		if (t->r.content_version < t->r.next_seq)
			fail_msg("%s: item %zu: version %llu below next seq %llu", w, i,
				 (unsigned long long)t->r.content_version,
				 (unsigned long long)t->r.next_seq);
		S->acked = true;
		S->next = t->r.next_seq;
		S->version = t->r.content_version;
		if (t->kind == FIFO_FULL_SAVE)
			S->failed = false;
		return;
	}
	const struct cerr *e = &t->err;
	if (S->failed && t->kind == FIFO_HISTORY && i > 0 && R.it[i - 1].sess == t->sess &&
	    R.it[i - 1].kind == FIFO_HISTORY && e->cls == S->why.cls &&
	    e->outcome_unknown == S->why.outcome_unknown && strcmp(e->msg, S->why.msg) == 0)
		return; /* merged with the item before it: one append, one outcome */
	if (S->failed && t->kind != FIFO_DELETE && e->cls == S->why.cls &&
	    e->outcome_unknown == S->why.outcome_unknown && strcmp(e->msg, S->why.msg) == 0 &&
	    (is_sync(R.flt->op) || is_sync(R.flt->pre)))
		return; /* written in the same round as the failed item and synced
			 * with it, or in the next round while it synced: one outcome */
	if (S->failed && (t->kind == FIFO_HISTORY || t->kind == FIFO_META)) {
		/* Fail fast, naming the first failure. */
		char head[64];
		snprintf(head, sizeof head, "%s", S->why.msg);
		if (e->cls != S->why.cls || e->outcome_unknown ||
		    !strstr(e->msg, "failed save before this one") || !strstr(e->msg, head))
			fail_msg("%s: item %zu: fail-fast error %s '%s' does not follow '%s'", w, i,
				 cerr_class_name(e->cls), e->msg, S->why.msg);
		return;
	}
	/* A full save posted before the failure was known carries a stale seq
	 * (or finds no log at all when the session was never published); a
	 * first recovery attempt may find its re-read seq stale. */
	if (t->kind == FIFO_FULL_SAVE && S->failed && t->recovery < 2 && !e->outcome_unknown &&
	    (e->cls == CERR_CONFLICT || (e->cls == CERR_MISSING && !S->acked && !t->recovery)))
		return;
	if (t->kind == FIFO_DELETE && e->cls == CERR_MISSING && !S->acked)
		return;
	const struct fault *f = R.flt;
	bool errno_ok = e->sys_errno == f->errnum ||
			((f->shortw || f->pre_short) && e->sys_errno == ENOSPC) ||
			(f->pre != FF_NOPS && e->sys_errno == EIO);
	if (e->cls != CERR_IO || !errno_ok)
		fail_msg("%s: item %zu (%s) failed with %s errno %d (%s), want io errno %d", w, i,
			 ids[t->sess], cerr_class_name(e->cls), e->sys_errno, e->msg,
			 R.flt->errnum);
	if (e->outcome_unknown && !is_sync(R.flt->op) && !is_sync(R.flt->pre))
		fail_msg("%s: item %zu: outcome unknown without a failed sync: %s", w, i, e->msg);
	R.n_failed++;
	if (t->kind == FIFO_DELETE)
		S->delete_unknown = e->outcome_unknown;
	else if (!S->failed)
		S->failed = true, S->why = *e;
}

/* Flush, run the loop until every item posted so far completed, judge. */
static void settle(void)
{
	if (fifo_flush_wait(R.f, NULL, deadline(30000)) != 0)
		fail_msg("%s: flush timed out", R.what);
	uint64_t until = deadline(30000);
	for (;;) {
		size_t done = 0;
		for (size_t i = 0; i < R.n; i++)
			done += R.it[i].calls > 0;
		if (done == R.n)
			break;
		if (clock_mono_ns() / 1000000 > until)
			fail_msg("%s: %zu items never completed", R.what, R.n - done);
		uv_run(&R.loop, UV_RUN_NOWAIT);
		usleep(200);
	}
	uv_run(&R.loop, UV_RUN_NOWAIT);
	for (; R.judged < R.n; R.judged++) {
		const struct titem *t = &R.it[R.judged];
		if (!R.nojudge)
			judge(R.judged);
		else if (t->calls != 1 || !t->on_loop || t->both_or_none)
			fail_msg("%s: item %zu: a bad completion", R.what, R.judged);
	}
}

/* ---- reading back ---- */

/* The log of session k under root's area, read with plain system calls
 * (never through fsops, which the writer thread uses) and scanned in
 * memory; NULL when there is none. */
static struct scan *read_log(const char *root, const char *area, int k)
{
	char *p = session_path(root, area, NULL, ids[k], LOG_FILE);
	FILE *fp = fopen(p, "rb");
	free(p);
	if (!fp)
		return NULL;
	size_t cap = 1 << 20, n = 0, got;
	uint8_t *buf = xmalloc(cap);
	while ((got = fread(buf + n, 1, cap - n, fp)) > 0)
		if ((n += got) == cap)
			buf = xrealloc(buf, cap *= 2);
	fclose(fp);
	struct scan *s = scan_buffer(buf, n);
	free(buf); /* the scan keeps its own decoded copies */
	return s;
}

/* What happened to every item, for a failure's message. */
static void dump(void)
{
	static const char *const kinds[] = {"history", "full save", "meta", "delete", "restore",
					    "purge"};
	for (size_t i = 0; i < R.n; i++) {
		const struct titem *t = &R.it[i];
		if (t->ok)
			print_message("#   %2zu %s %-9s next %llu version %llu\n", i, ids[t->sess],
				      kinds[t->kind], (unsigned long long)t->r.next_seq,
				      (unsigned long long)t->r.content_version);
		else
			print_message("#   %2zu %s %-9s %s%s: %s\n", i, ids[t->sess], kinds[t->kind],
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
			fail_msg("%s: %s log of '%s' reads as %s: %s", w, where, ids[k],
				 scan_status_name(s->status), s->err.msg);
		if (s->n_events == 0 || strcmp(s->events[0].type, "session/header") != 0)
			fail_msg("%s: %s log of '%s' has no header", w, where, ids[k]);
	}
	for (size_t i = 0; i < R.n; i++) {
		const struct titem *t = &R.it[i];
		if (t->sess != k || !t->evs)
			continue;
		size_t n = (size_t)cJSON_GetArraySize(t->evs);
		bool there = s && events_at(s, pos, t->evs);
		if (t->ok && !there)
			FAIL("%s: %s log of '%s' lost acknowledged item %zu (at event %zu of %zu)",
				 w, where, ids[k], i, pos, s ? s->n_events : 0);
		if (there && !t->ok && !t->err.outcome_unknown)
			FAIL("%s: %s log of '%s' holds failed item %zu (%s)", w, where, ids[k], i,
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
			 w, where, ids[k], s->n_events, pos);
}

/* Where session k's log must be (live, trash, or either) and that it holds
 * what match() demands. */
static void check_tree(const char *root, const char *where)
{
	for (int k = 0; k < 2; k++) {
		const struct sstate *S = &R.s[k];
		struct scan *live = read_log(root, STORE_SESSIONS, k);
		struct scan *trash = read_log(root, STORE_TRASH, k);
		if (S->deleted && live)
			fail_msg("%s: %s: deleted '%s' is still live", R.what, where, ids[k]);
		if (!S->deleted && !S->delete_unknown && trash)
			fail_msg("%s: %s: '%s' is in the trash without a delete", R.what, where, ids[k]);
		if (S->deleted && !trash && S->acked)
			fail_msg("%s: %s: deleted '%s' is not in the trash", R.what, where, ids[k]);
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
		if (catalog_get(cat, ids[k], &row, &err) < 0) {
			if (R.s[k].acked && !before_recovery)
				fail_msg("%s: the catalog lost '%s': %s", R.what, ids[k], err.msg);
			continue;
		}
		struct scan *s = read_log(R.root, R.s[k].deleted ? STORE_TRASH : STORE_SESSIONS, k);
		if (before_recovery && s && row.content_version > s->rev.next_seq)
			fail_msg("%s: the catalog has '%s' at version %llu, its log ends at %llu", R.what,
				 ids[k], (unsigned long long)row.content_version,
				 (unsigned long long)s->rev.next_seq);
		if (!before_recovery && R.s[k].acked && row.content_version != R.s[k].version)
			fail_msg("%s: catalog has '%s' at version %llu, last receipt %llu", R.what,
				 ids[k], (unsigned long long)row.content_version,
				 (unsigned long long)R.s[k].version);
		if (s && row.durable_seq > s->rev.next_seq)
			fail_msg("%s: the watermark of '%s' (%llu) leads its log (%llu)", R.what, ids[k],
				 (unsigned long long)row.durable_seq, (unsigned long long)s->rev.next_seq);
		if (R.s[k].deleted && row.deleted_at == 0)
			fail_msg("%s: deleted '%s' is live in the catalog", R.what, ids[k]);
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
				struct scan *s = read_log(R.root, STORE_SESSIONS, k);
				next = s ? s->rev.next_seq : 1;
				scan_free(s);
				fsave(k, next, S->version, 1, attempt);
				next++;
			} else if (attempt > 1) {
				continue;
			}
			hist(k, next, 1, false);
		}
		settle();
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
	assert_int_equal(uv_loop_init(&R.loop), 0);
	loop_thread = pthread_self();
	R.f = fifo_new(&R.loop, R.root, NULL, &err);
	if (!R.f)
		fail_msg("%s: fifo_new: %s", R.what, err.msg);
	arm(f, n);
	if (slow_syncs)
		faultfs_set_sync_hook(sync_hook, NULL);

	/* Phase 1, one batch: both sessions created, history coalesced. */
	fifo_pause(R.f, true);
	hist(0, 1, 2, true);
	hist(0, 3, 1, false);
	hist(1, 1, 2, true);
	hist(0, 4, 2, false);
	fsave(1, 3, 3, 1, 0);
	fifo_pause(R.f, false);
	settle();
	/* Phase 2, one batch: full save, meta, history of both. */
	fifo_pause(R.f, true);
	fsave(0, 6, 6, 2, 0);
	meta(0, "{\"title\":\"Alpha\"}");
	hist(0, 9, 1, false);
	meta(1, "{\"pinned\":true}");
	hist(1, 5, 2, false);
	fifo_pause(R.f, false);
	settle();
	/* Phase 3, pipelined: history, a delete, a full save. */
	hist(0, 10, 2, false);
	R.it[R.n].sess = 1;
	put(1, fifo_delete(ids[1]), NULL, 0);
	fsave(0, 12, 12, 1, 0);
	settle();
	/* Phase 4, one session in consecutive rounds: each item a batch of
	 * its own, queued before the one ahead of it settles, so each is
	 * written while the one before it syncs. */
	fifo_pause(R.f, true);
	fifo_set_batch_limit(R.f, 1);
	fsave(0, 13, 13, 1, 0);
	fsave(0, 14, 14, 1, 0);
	hist(0, 15, 1, false);
	fsave(0, 16, 16, 2, 0);
	fifo_pause(R.f, false);
	settle();
	fifo_set_batch_limit(R.f, 0);
	check_catalog(true);
	recover();
	settle();

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
			fail_msg("%s: '%s' failed without a fault", R.what, ids[k]);

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

/* A fresh root with a FIFO on it, for the tests below. */
static void open_plain(const char *what)
{
	struct cerr err = {0};
	struct store *st;
	memset(&R, 0, sizeof R);
	snprintf(R.what, sizeof R.what, "%s", what);
	assert_int_equal(tmp_root("cairn-fifo-faults", R.dir, sizeof R.dir, R.root, sizeof R.root), 0);
	assert_int_equal(store_open(R.root, true, &st, &err), 0);
	store_close(st);
	assert_int_equal(uv_loop_init(&R.loop), 0);
	loop_thread = pthread_self();
	if (!(R.f = fifo_new(&R.loop, R.root, NULL, &err)))
		fail_msg("fifo_new: %s", err.msg);
	R.nojudge = true;
}

static void close_plain(void)
{
	assert_int_equal(fifo_close_wait(R.f, deadline(30000)), 0);
	assert_int_equal(uv_run(&R.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&R.loop), 0);
	for (size_t i = 0; i < R.n; i++)
		cJSON_Delete(R.it[i].evs);
	rm_rf(R.dir);
}

static uint64_t next_on_disk(void)
{
	struct scan *s = read_log(R.root, STORE_SESSIONS, 0);
	assert_non_null(s);
	uint64_t n = s->rev.next_seq;
	scan_free(s);
	return n;
}

/* A connection of the test's own to the FIFO's catalog. The writer
 * records watermarks in short transactions of its own when it goes idle:
 * it waits for them as any other process would. */
static sqlite3 *open_db(void)
{
	sqlite3 *db;
	char *path = xasprintf("%s/%s", R.root, CATALOG_FILE);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	free(path);
	return db;
}

/* Another connection holding the catalog's write lock delays a batch; past
 * the busy timeout the batch fails locked, writes nothing and leaves no gap:
 * the same seq works once the lock is gone. */
static void test_busy_catalog_fails_locked_and_leaves_no_gap(void **state)
{
	(void)state;
	sqlite3 *db;
	open_plain("busy catalog");
	hist(0, 1, 2, true);
	settle();
	assert_true(R.it[0].ok);
	db = open_db();
	assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	hist(0, 3, 1, false);
	usleep(300 * 1000);
	assert_int_equal(R.it[1].calls, 0);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	settle();
	if (!R.it[1].ok)
		fail_msg("a briefly busy catalog failed the batch: %s", R.it[1].err.msg);
	assert_int_equal(R.it[1].r.next_seq, 4);

	assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	hist(0, 4, 1, false);
	meta(0, "{\"title\":\"busy\"}");
	settle();
	for (size_t i = 2; i < 4; i++)
		if (R.it[i].ok || R.it[i].err.cls != CERR_LOCKED)
			fail_msg("item %zu under a held catalog lock: %s (%s), want locked", i,
				 R.it[i].ok ? "ok" : cerr_class_name(R.it[i].err.cls), R.it[i].err.msg);
	assert_int_equal(next_on_disk(), 4);
	assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	hist(0, 4, 1, false);
	settle();
	if (!R.it[4].ok)
		fail_msg("after a locked batch the session does not go on: %s", R.it[4].err.msg);
	assert_int_equal(R.it[4].r.next_seq, 5);
	assert_int_equal(next_on_disk(), 5);
	close_plain();
}

static void sql(sqlite3 *db, const char *q)
{
	char *msg = NULL;
	if (sqlite3_exec(db, q, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", q, msg ? msg : "?");
}

/* The catalog fails after the log write is durable (a trigger aborts the
 * projection, then the deletion mark): the item may fail, but then its
 * error must say the outcome is unknown, since the log (or the trash)
 * holds what it did. A recovery save at the seq on disk goes on. */
static void test_catalog_fails_after_durable_write(void **state)
{
	(void)state;
	sqlite3 *db;
	open_plain("catalog failure");
	hist(0, 1, 2, true);
	hist(1, 1, 1, true);
	settle();
	assert_true(R.it[0].ok && R.it[1].ok);
	db = open_db();
	sql(db, "CREATE TRIGGER boom BEFORE UPDATE OF content_version ON sessions"
		" WHEN NEW.content_version > 3 BEGIN SELECT RAISE(ABORT, 'injected'); END");
	hist(0, 3, 1, false);
	settle();
	sql(db, "DROP TRIGGER boom");
	/* Durable, the catalog behind: a success that says so (a failure
	 * would invite a retry that appends twice). */
	const struct titem *t = &R.it[2];
	uint64_t on_disk = next_on_disk();
	assert_int_equal(on_disk, 4);
	if (!t->ok)
		fail_msg("a durable write whose projection failed was not acknowledged: %s", t->err.msg);
	assert_true(t->r.catalog_behind);
	assert_non_null(strstr(t->r.catalog_err.msg, "injected"));
	assert_int_equal(t->r.next_seq, 4);
	assert_int_equal(t->r.content_version, 4);
	/* The session goes on (no gap in its log): a full save builds on what
	 * was acknowledged and brings the catalog up to date. */
	fsave(0, on_disk, t->r.content_version, 1, 0);
	settle();
	if (!R.it[3].ok)
		fail_msg("a full save after a catalog failure: %s", R.it[3].err.msg);
	assert_false(R.it[3].r.catalog_behind);
	assert_int_equal(R.it[3].r.next_seq, on_disk + 1);
	assert_int_equal(R.it[3].r.content_version, on_disk + 1);

	sql(db, "CREATE TRIGGER boom BEFORE UPDATE OF deleted_at ON sessions"
		" WHEN NEW.deleted_at != 0 BEGIN SELECT RAISE(ABORT, 'injected'); END");
	R.it[R.n].sess = 1;
	put(1, fifo_delete(ids[1]), NULL, 0);
	settle();
	sql(db, "DROP TRIGGER boom");
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	struct scan *live = read_log(R.root, STORE_SESSIONS, 1);
	t = &R.it[4];
	assert_null(live); /* moved to the trash */
	if (!t->ok)
		fail_msg("a delete that moved the session was not acknowledged: %s", t->err.msg);
	assert_true(t->r.catalog_behind);
	assert_non_null(strstr(t->r.catalog_err.msg, "injected"));
	scan_free(live);
	close_plain();
}

/* Two sessions written in one round, and the projection of one fails (a
 * trigger aborts it): the round's transaction is run again without that
 * session, so the other's write is projected and acknowledged; the
 * failing one is acknowledged too (its log holds it) with the catalog
 * behind, and its next write brings its row up to date. */
static void test_one_projection_fails_in_a_round(void **state)
{
	(void)state;
	sqlite3 *db;
	open_plain("one projection fails");
	hist(0, 1, 2, true);
	hist(1, 1, 2, true);
	settle();
	assert_true(R.it[0].ok && R.it[1].ok);
	db = open_db();
	sql(db, "CREATE TRIGGER boom BEFORE UPDATE OF content_version ON sessions"
		" WHEN NEW.id = 'A' BEGIN SELECT RAISE(ABORT, 'injected'); END");
	fifo_pause(R.f, true);
	hist(0, 3, 1, false);
	hist(1, 3, 1, false);
	fifo_pause(R.f, false);
	settle();
	sql(db, "DROP TRIGGER boom");
	const struct titem *a = &R.it[2], *b = &R.it[3];
	if (!a->ok)
		fail_msg("A's durable write was not acknowledged: %s", a->err.msg);
	if (!a->r.catalog_behind || !strstr(a->r.catalog_err.msg, "injected"))
		fail_msg("A's receipt does not say the catalog is behind: %s", a->r.catalog_err.msg);
	if (!b->ok)
		fail_msg("B failed with A: %s", b->err.msg);
	assert_false(b->r.catalog_behind);
	assert_int_equal(b->r.next_seq, 4);
	assert_int_equal(b->r.content_version, 4);
	sqlite3_stmt *q;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT content_version FROM sessions WHERE id = 'B'",
					    -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), 4);
	sqlite3_finalize(q);
	hist(0, 4, 1, false);
	settle();
	if (!R.it[4].ok || R.it[4].r.catalog_behind)
		fail_msg("A's next write: %s", R.it[4].ok ? "catalog still behind" : R.it[4].err.msg);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT content_version FROM sessions WHERE id = 'A'",
					    -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(q, 0), 5);
	sqlite3_finalize(q);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	close_plain();
}

/* A root that cannot be made: fifo_new fails with an error and leaves the
 * loop with nothing to close. */
static void test_fifo_new_on_a_bad_root_fails_leaving_nothing(void **state)
{
	(void)state;
	uv_loop_t loop;
	struct cerr err = {0};
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_null(fifo_new(&loop, "/dev/null/cairn-root", NULL, &err));
	assert_int_not_equal(err.cls, CERR_OK);
	assert_true(err.msg[0] != '\0');
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_fault_acks_once_and_keeps_acked_events),
		cmocka_unit_test(test_faults_with_slow_syncs_keep_acked_events),
		cmocka_unit_test(test_busy_catalog_fails_locked_and_leaves_no_gap),
		cmocka_unit_test(test_catalog_fails_after_durable_write),
		cmocka_unit_test(test_one_projection_fails_in_a_round),
		cmocka_unit_test(test_fifo_new_on_a_bad_root_fails_leaving_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
