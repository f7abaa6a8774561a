/* support_fiforun.c — scripted runs of FIFO items for the fault tests (see
 * support_fiforun.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/support_fiforun.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

const char *const run_ids[2] = {"A", "B"};

struct run R;
static pthread_t loop_thread;

bool run_is_sync(enum faultfs_op op)
{
	return op == FF_FSYNC || op == FF_FDATASYNC;
}

void run_loop_init(void)
{
	assert_int_equal(uv_loop_init(&R.loop), 0);
	loop_thread = pthread_self();
}

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

void run_put(int k, struct fifo_item *item, cJSON *evs, int recovery)
{
	struct cerr err = {0};
	assert_true(R.n < RUN_MAX_ITEMS);
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
		snprintf(text, sizeof text, "%s item %zu event %d", run_ids[R.it[R.n].sess], R.n,
			 i);
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "type", type);
		cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "data"), "text", text);
		cJSON_AddItemToArray(a, e);
	}
	*copy = cJSON_Duplicate(a, 1);
	return a;
}

void run_hist(int k, uint64_t seq, int n, bool create)
{
	cJSON *copy;
	R.it[R.n].sess = k;
	struct fifo_item *it = fifo_history(run_ids[k], seq, msgs("user/message", n, &copy));
	if (create)
		fifo_item_create(it, NULL);
	run_put(k, it, copy, 0);
}

void run_fsave(int k, uint64_t seq, uint64_t version, int n, int recovery)
{
	cJSON *copy;
	R.it[R.n].sess = k;
	struct fifo_item *it =
		fifo_full_save(run_ids[k], seq, version, msgs("assistant/text", n, &copy));
	if (recovery)
		fifo_item_create(it, NULL);
	run_put(k, it, copy, recovery);
}

void run_meta(int k, const char *json)
{
	cJSON *m = cJSON_Parse(json), *evs = cJSON_CreateArray(), *e = cJSON_CreateObject();
	assert_non_null(m);
	cJSON_AddStringToObject(e, "type", "session/meta");
	cJSON_AddItemToObject(e, "data", cJSON_Duplicate(m, 1));
	cJSON_AddItemToArray(evs, e);
	run_put(k, fifo_meta(run_ids[k], m), evs, 0);
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
				 run_ids[t->sess]);
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
	    (run_is_sync(R.flt->op) || run_is_sync(R.flt->pre)))
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
			 run_ids[t->sess], cerr_class_name(e->cls), e->sys_errno, e->msg,
			 R.flt->errnum);
	if (e->outcome_unknown && !run_is_sync(R.flt->op) && !run_is_sync(R.flt->pre))
		fail_msg("%s: item %zu: outcome unknown without a failed sync: %s", w, i, e->msg);
	R.n_failed++;
	if (t->kind == FIFO_DELETE)
		S->delete_unknown = e->outcome_unknown;
	else if (!S->failed)
		S->failed = true, S->why = *e;
}

/* Flush, run the loop until every item posted so far completed, judge. */
void run_settle(void)
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

/* The log of session k under root's area, read with plain system calls
 * (never through fsops, which the writer thread uses) and scanned in
 * memory; NULL when there is none. */
struct scan *run_read_log(const char *root, const char *area, int k)
{
	char *p = session_path(root, area, NULL, run_ids[k], LOG_FILE);
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
