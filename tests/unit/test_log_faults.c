/* test_log_faults.c — fault loops over the log writer (SQLite style): for
 * append, first publication and repair, fail the Nth pwrite, fsync,
 * fdatasync, rename, ftruncate, mkdirat and create with EIO and ENOSPC (and
 * make the Nth pwrite short) for N = 1, 2, ... until a run meets no fault.
 * After each failure the caller must get io, the log must read back at its
 * acknowledged state, a later append must succeed, and everything
 * acknowledged in the end must survive a simulated power loss. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "persist/frame.h"
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/repair.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

#define SID "S"
#define MAX_N 200

/* ---- fixtures ---- */

struct fx {
	char dir[64], root[128];
	char *path;
	struct store *st;
};

static char *log_file(const char *root)
{
	return session_path(root, STORE_SESSIONS, NULL, SID, LOG_FILE);
}

/* A fresh store root, tracked by the power-loss model from its creation;
 * fsops is the fault table, disarmed. */
static void fx_open(struct fx *f)
{
	struct cerr err;
	assert_int_equal(tmp_root("cairn-faults", f->dir, sizeof f->dir, f->root, sizeof f->root), 0);
	f->path = log_file(f->root);
	assert_int_equal(store_open(f->root, true, &f->st, &err), 0);
	faultfs_install();
	assert_int_equal(faultfs_track(f->root), 0);
}

static void fx_close(struct fx *f)
{
	faultfs_uninstall();
	store_close(f->st);
	rm_rf(f->dir);
	free(f->path);
}

/* ---- batches ---- */

struct batch {
	struct log_event ev[8];
	cJSON *data[8];
	size_t n;
};

static void add(struct batch *b, const char *type, const char *turn, cJSON *data)
{
	assert_true(b->n < 8);
	b->data[b->n] = data;
	b->ev[b->n] = (struct log_event){.type = type, .turn = turn, .data = data};
	b->n++;
}

static cJSON *obj(const char *k1, const char *v1, const char *k2, const char *v2)
{
	cJSON *o = cJSON_CreateObject();
	if (k1)
		cJSON_AddStringToObject(o, k1, v1);
	if (k2)
		cJSON_AddStringToObject(o, k2, v2);
	return o;
}

/* n user messages "<tag> i". */
static void msgs(struct batch *b, const char *tag, size_t n)
{
	char text[64];
	memset(b, 0, sizeof *b);
	for (size_t i = 0; i < n; i++) {
		snprintf(text, sizeof text, "%s %zu", tag, i);
		add(b, "user/message", NULL, obj("text", text, NULL, NULL));
	}
}

/* One message of len bytes that zstd cannot shrink much. */
static void big(struct batch *b, size_t len)
{
	char *text = xmalloc(len + 1);
	uint32_t seed = (uint32_t)len;
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1664525u + 1013904223u;
		text[i] = (char)('a' + (seed >> 24) % 26);
	}
	text[len] = '\0';
	memset(b, 0, sizeof *b);
	add(b, "assistant/text", NULL, obj("text", text, NULL, NULL));
	free(text);
}

/* A turn left open: two calls, the first one started. */
static void open_turn(struct batch *b)
{
	memset(b, 0, sizeof *b);
	add(b, "turn/start", "T1", obj(NULL, NULL, NULL, NULL));
	cJSON *call = obj("call_id", "c1", "name", "shell");
	cJSON_AddItemToObject(call, "args", obj("cmd", "ls", NULL, NULL));
	add(b, "tool/call", "T1", call);
	add(b, "tool/started", "T1", obj("call_id", "c1", NULL, NULL));
	call = obj("call_id", "c2", "name", "read");
	cJSON_AddItemToObject(call, "args", obj("path", "/x", NULL, NULL));
	add(b, "tool/call", "T1", call);
}

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		cJSON_Delete(b->data[i]);
	b->n = 0;
}

/* ---- reading back with the real table ---- */

struct snap {
	bool exists;
	enum scan_status status;
	size_t n;
	char **lines, **types;
	uint64_t next_seq;
	size_t open_turns;
};

static void snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->lines[i]);
		free(s->types[i]);
	}
	free(s->lines);
	free(s->types);
	memset(s, 0, sizeof *s);
}

/* Read path through fsops_real, whatever table is in force. */
static void snap_read(const char *path, struct snap *s)
{
	const struct fsops *saved = fsops;
	fsops = &fsops_real;
	memset(s, 0, sizeof *s);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		assert_int_equal(errno, ENOENT);
		fsops = saved;
		return;
	}
	struct scan *sc;
	struct cerr err;
	assert_int_equal(scan_fd(fd, &sc, &err), 0);
	close(fd);
	s->exists = true;
	s->status = sc->status;
	s->n = sc->n_events;
	s->next_seq = sc->rev.next_seq;
	s->open_turns = sc->n_open_turns;
	s->lines = xcalloc(s->n + 1, sizeof *s->lines);
	s->types = xcalloc(s->n + 1, sizeof *s->types);
	for (size_t i = 0; i < s->n; i++) {
		s->lines[i] = xstrndup(sc->events[i].line, sc->events[i].line_len);
		s->types[i] = xstrdup(sc->events[i].type);
	}
	scan_free(sc);
	fsops = saved;
}

/* got holds exactly acked, or (only when the outcome is unknown) acked plus
 * the n_extra events of the failed batch. Returns got's next seq. */
static uint64_t check_holds(const struct snap *got, const struct snap *acked, size_t n_extra,
			    bool unknown, const char *what)
{
	if (!got->exists)
		fail_msg("%s: the log vanished", what);
	if (got->status != SCAN_OK && got->status != SCAN_TORN)
		fail_msg("%s: the log reads as %s", what, scan_status_name(got->status));
	if (got->n != acked->n && !(unknown && got->n == acked->n + n_extra))
		fail_msg("%s: %zu events on disk, %zu acknowledged (+%zu unknown: %d)", what, got->n,
			 acked->n, n_extra, unknown);
	for (size_t i = 0; i < acked->n; i++)
		if (strcmp(got->lines[i], acked->lines[i]) != 0)
			fail_msg("%s: event %zu changed:\n  %s\n  %s", what, i, acked->lines[i],
				 got->lines[i]);
	return got->next_seq;
}

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

/* The tree as a power loss now would leave it holds exactly `want`. */
static void check_survives(const struct fx *x, const struct snap *want, const char *what)
{
	char *dest = xasprintf("%s/crash", x->dir);
	rm_rf(dest);
	assert_int_equal(faultfs_crash_copy(x->root, dest), 0);
	char *p = log_file(dest);
	struct snap got;
	snap_read(p, &got);
	if (!got.exists)
		fail_msg("%s: the acknowledged session is lost by a power loss", what);
	if (got.status != SCAN_OK || got.n != want->n)
		fail_msg("%s: after a power loss the log is %s with %zu events, %zu acknowledged", what,
			 scan_status_name(got.status), got.n, want->n);
	check_holds(&got, want, 0, false, what);
	snap_free(&got);
	free(p);
	rm_rf(dest);
	free(dest);
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
	msgs(&b1, "one", 1);
	msgs(&b2, "two", 3);
	big(&b3, 6000); /* larger than b4: its torn part must be cut, not overwritten */
	msgs(&b4, "four", 1);
	msgs(&b5, "five", 2);
	fx_open(&x);
	assert_int_equal(log_create(x.st, SID, NULL, NULL, &lg, &err), 0);
	assert_int_equal(log_append(lg, 1, b1.ev, b1.n, &next, &err), 0);
	assert_int_equal(log_append(lg, next, b2.ev, b2.n, &next, &err), 0);
	struct snap acked, now;
	snap_read(x.path, &acked);
	assert_int_equal(acked.next_seq, next);

	arm(f, n);
	uint64_t got_next = 12345;
	int rc = log_append(lg, next, b3.ev, b3.n, &got_next, &err);
	bool fired, target = met_fault(f, &fired);
	snap_read(x.path, &now);
	uint64_t expect;
	if (!fired) {
		assert_int_equal(rc, 0);
		assert_int_equal(got_next, next + b3.n);
		assert_int_equal(now.status, SCAN_OK);
		assert_int_equal(now.n, acked.n + b3.n);
		expect = check_holds(&now, &acked, b3.n, true, what);
	} else {
		check_failed(rc, &err, f, what);
		assert_int_equal(got_next, 12345); /* never reported durable */
		/* A partial frame stays only when the cleanup failed too. */
		if (now.status != SCAN_OK && !(now.status == SCAN_TORN && f->pre != FF_NOPS))
			fail_msg("%s: a failed append left the log %s", what,
				 scan_status_name(now.status));
		expect = check_holds(&now, &acked, b3.n, err.outcome_unknown, what);
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
	snap_free(&now);
	snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.next_seq, next);
	check_holds(&now, &acked, now.n - acked.n, true, what);
	check_types(&now, (size_t)same, &b4, what);
	check_types(&now, (size_t)same + b4.n, &b5, what);
	check_survives(&x, &now, what);
	snap_free(&now);
	snap_free(&acked);
	fx_close(&x);
	batch_free(&b1), batch_free(&b2), batch_free(&b3), batch_free(&b4), batch_free(&b5);
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
	msgs(&b1, "first", 2);
	msgs(&b2, "second", 1);
	msgs(&b3, "third", 3);
	fx_open(&x);
	struct snap now;

	arm(f, n);
	int rc = log_create(x.st, SID, NULL, NULL, &lg, &err);
	assert_int_equal(rc, 0);
	rc = log_append(lg, 1, b1.ev, b1.n, &next, &err);
	bool fired, target = met_fault(f, &fired);
	snap_read(x.path, &now);
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
	snap_free(&now);
	snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.next_seq, next);
	assert_string_equal(now.types[0], "session/header");
	check_types(&now, (size_t)expect, &b2, what);
	check_types(&now, (size_t)expect + b2.n, &b3, what);
	check_survives(&x, &now, what);
	snap_free(&now);
	fx_close(&x);
	batch_free(&b1), batch_free(&b2), batch_free(&b3);
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

/* Append the first half of a valid frame with plain calls: what a writer
 * killed mid-write leaves. The content does not compress, so the torn tail
 * is longer than the small frames appended after it. */
static void tear(const char *path)
{
	struct frame_codec *fc = frame_codec_new();
	struct buf fr = BUF_INIT;
	char content[8192];
	uint32_t seed = 1;
	for (size_t i = 0; i < sizeof content; i++) {
		seed = seed * 1664525u + 1013904223u;
		content[i] = (char)('A' + (seed >> 24) % 26);
	}
	assert_int_equal(frame_encode(fc, content, sizeof content, &fr), 0);
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, fr.p, fr.len / 2), (ssize_t)(fr.len / 2));
	close(fd);
	buf_release(&fr);
	frame_codec_free(fc);
}

static bool run_repair(const struct fault *f, unsigned long n)
{
	struct fx x;
	struct cerr err = {0};
	struct log *lg;
	struct batch b1, b2, b3;
	struct repair_report rep;
	uint64_t next;
	const char *what = fname(f, n);
	msgs(&b1, "hello", 2);
	open_turn(&b2);
	msgs(&b3, "after", 1);
	fx_open(&x);
	assert_int_equal(log_create(x.st, SID, NULL, NULL, &lg, &err), 0);
	assert_int_equal(log_append(lg, 1, b1.ev, b1.n, &next, &err), 0);
	assert_int_equal(log_append(lg, next, b2.ev, b2.n, &next, &err), 0);
	log_close(lg);
	struct snap acked, now;
	snap_read(x.path, &acked);
	tear(x.path);
	assert_int_equal(log_open(x.st, SID, &lg, &err), 0);
	assert_int_equal(log_scan(lg)->status, SCAN_TORN);

	arm(f, n);
	int rc = repair_log(lg, &rep, &err);
	bool fired, target = met_fault(f, &fired);
	snap_read(x.path, &now);
	uint64_t expect;
	if (!fired) {
		assert_int_equal(rc, 0);
		assert_int_equal(rep.appended, 3); /* 2 results + turn/end */
		assert_true(rep.cut_bytes > 0);
		cJSON_Delete(rep.closers);
		assert_int_equal(now.status, SCAN_OK);
		assert_int_equal(now.n, acked.n + 3);
		assert_int_equal(now.open_turns, 0);
		expect = check_holds(&now, &acked, 3, true, what);
	} else {
		check_failed(rc, &err, f, what);
		expect = check_holds(&now, &acked, 3, err.outcome_unknown, what);
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
	snap_free(&now);
	snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.open_turns, 0);
	check_holds(&now, &acked, now.n - acked.n, true, what);
	check_types(&now, (size_t)same, &b3, what);
	check_survives(&x, &now, what);
	snap_free(&now);
	snap_free(&acked);
	fx_close(&x);
	batch_free(&b1), batch_free(&b2), batch_free(&b3);
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

/* ---- failed syncs ---- */

/* A session with two batches, open in *lg; returns its next seq. */
static uint64_t two_batches(struct fx *x, struct log **lg)
{
	struct cerr err;
	struct batch b;
	uint64_t next;
	msgs(&b, "setup", 2);
	fx_open(x);
	assert_int_equal(log_create(x->st, SID, NULL, NULL, lg, &err), 0);
	assert_int_equal(log_append(*lg, 1, b.ev, b.n, &next, &err), 0);
	assert_int_equal(log_append(*lg, next, b.ev, b.n, &next, &err), 0);
	batch_free(&b);
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
			msgs(&b, "unknown", 3);
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
			snap_read(x.path, &now);
			uint64_t on_disk = now.next_seq;
			assert_int_equal(on_disk, cleanup_fails ? before + b.n : before);
			/* The handle never builds on bytes a failed sync may not
			 * have written: even when they stayed in the file, its
			 * next use cuts them and goes on at the acknowledged seq. */
			assert_int_equal(log_append(lg, before, b.ev, b.n, &next, &err), 0);
			assert_int_equal(next, before + b.n);
			log_close(lg);
			snap_free(&now);
			snap_read(x.path, &now);
			assert_int_equal(now.status, SCAN_OK);
			assert_int_equal(now.next_seq, next);
			check_survives(&x, &now, "after a failed fdatasync");
			snap_free(&now);
			batch_free(&b);
			fx_close(&x);
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
	msgs(&b, "pending", 2);
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
	snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.next_seq, before);
	snap_free(&now);
	uint64_t next;
	assert_int_equal(log_append(lg, before, b.ev, b.n, &next, &err), 0);
	assert_int_equal(next, before + b.n);
	log_close(lg);
	snap_read(x.path, &now);
	assert_int_equal(now.next_seq, before + b.n);
	snap_free(&now);
	batch_free(&b);
	fx_close(&x);
}

/* Counts the re-read of the next append: opening the log again (openat)
 * and reading it (pread). */
static bool next_append_rereads(struct log *lg, uint64_t seq)
{
	struct cerr err;
	struct batch b;
	msgs(&b, "probe", 1);
	faultfs_reset_counts();
	assert_int_equal(log_append(lg, seq, b.ev, b.n, NULL, &err), 0);
	batch_free(&b);
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
	msgs(&b, "x", 2);
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
	tear(x.path);
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
	snap_read(x.path, &now);
	assert_int_equal(now.status, SCAN_OK);
	assert_int_equal(now.next_seq, seq);
	snap_free(&now);
	batch_free(&b);
	fx_close(&x);
}

/* The publication's directory fsync fails after the rename: the outcome is
 * unknown, and the next append re-reads and makes the entry durable. */
static void test_publish_dir_sync_failure(void **state)
{
	(void)state;
	struct batch b1;
	msgs(&b1, "a", 1);
	/* Fail fsync N = 1, 2, ... until the failing one follows the rename. */
	for (unsigned long n = 1;; n++) {
		struct fx x;
		struct log *lg;
		struct cerr err = {0};
		uint64_t next = 0;
		assert_true(n < 20);
		fx_open(&x);
		assert_int_equal(log_create(x.st, SID, NULL, NULL, &lg, &err), 0);
		faultfs_fail(FF_FSYNC, n, EIO);
		int rc = log_append(lg, 1, b1.ev, b1.n, &next, &err);
		assert_int_equal(faultfs_fired(), 1);
		faultfs_disarm();
		if (faultfs_count(FF_RENAME) == 0) {
			log_close(lg);
			fx_close(&x);
			continue;
		}
		assert_int_equal(rc, -1);
		assert_int_equal(err.cls, CERR_IO);
		assert_true(err.outcome_unknown);
		assert_true(next_append_rereads(lg, 1 + b1.n));
		log_close(lg);
		struct snap now;
		snap_read(x.path, &now);
		assert_int_equal(now.next_seq, 3);
		check_survives(&x, &now, "publication after a failed directory sync");
		snap_free(&now);
		fx_close(&x);
		break;
	}
	batch_free(&b1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_fault_is_io_and_keeps_acked_state),
		cmocka_unit_test(test_publish_fault_is_io_and_keeps_acked_state),
		cmocka_unit_test(test_repair_fault_is_io_and_keeps_acked_state),
		cmocka_unit_test(test_fdatasync_failure_never_acked),
		cmocka_unit_test(test_failed_sync_takes_back_every_write),
		cmocka_unit_test(test_poisoned_handle_rereads),
		cmocka_unit_test(test_publish_dir_sync_failure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
