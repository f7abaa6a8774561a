/* test_powerloss.c — simulated power loss at every sync point of a scripted
 * session (support_faultfs's model: only what fsync made durable survives).
 * Before and after every fsync/fdatasync the tree a power loss would leave
 * is materialized; each copy must open (ok or torn, ok after repair), hold
 * every batch acknowledged before that instant and nothing never written.
 * A store that skips the directory fsync after publication must fail it. */
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

#include "base/xalloc.h"
#include "persist/frame.h"
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/repair.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

#define CWD_A "/home/u/project a"
#define CWD_B "/srv/b"
#define MAX_POINTS 400

/* ---- reading a log (always with the real table) ---- */

struct snap {
	bool exists;
	enum scan_status status;
	size_t n, open_turns;
	char **lines;
};

static void snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->lines[i]);
	free(s->lines);
	memset(s, 0, sizeof *s);
}

static void snap_read(const char *path, struct snap *s)
{
	const struct fsops *saved = fsops;
	struct scan *sc;
	struct cerr err;
	memset(s, 0, sizeof *s);
	fsops = &fsops_real;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && scan_fd(fd, &sc, &err) == 0) {
		s->exists = true;
		s->status = sc->status;
		s->n = sc->n_events;
		s->open_turns = sc->n_open_turns;
		s->lines = xcalloc(s->n + 1, sizeof *s->lines);
		for (size_t i = 0; i < s->n; i++)
			s->lines[i] = xstrndup(sc->events[i].line, sc->events[i].line_len);
		scan_free(sc);
	}
	if (fd >= 0)
		close(fd);
	fsops = saved;
}

/* ---- the script's state and its crash points ---- */

struct point {
	char *dir;
	char label[48];
	uint64_t acked_a, acked_b; /* next seq acknowledged; 0: nothing yet */
	bool trashed;              /* store_trash(B) returned */
};

struct script {
	char tmp[64], root[128];
	struct store *st;
	char id_a[SESSION_ID_MAX + 1], id_b[SESSION_ID_MAX + 1];
	uint64_t acked_a, acked_b;
	bool trashed;
	struct point pts[MAX_POINTS];
	size_t n_pts;
	unsigned syncs;
	struct snap final_a, final_b;
};

static void crash_here(void *ctx, enum faultfs_op op, bool after)
{
	struct script *sc = ctx;
	if (!after)
		sc->syncs++;
	if (sc->n_pts == MAX_POINTS)
		return;
	struct point *p = &sc->pts[sc->n_pts];
	p->dir = xasprintf("%s/crash-%03zu", sc->tmp, sc->n_pts);
	snprintf(p->label, sizeof p->label, "%s %s #%u", after ? "after" : "before",
		 faultfs_op_name(op), sc->syncs);
	p->acked_a = sc->acked_a;
	p->acked_b = sc->acked_b;
	p->trashed = sc->trashed;
	if (faultfs_crash_copy(sc->root, p->dir) < 0) {
		perror("crash copy");
		abort();
	}
	sc->n_pts++;
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
	b->ev[b->n++] = (struct log_event){.type = type, .turn = turn, .data = data};
}

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		cJSON_Delete(b->data[i]);
	b->n = 0;
}

/* Text that zstd cannot shrink much: len bytes from a 64-letter alphabet. */
static char *noise(size_t len, uint32_t seed)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *s = xmalloc(len + 1);
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1664525u + 1013904223u;
		s[i] = abc[(seed >> 24) & 63];
	}
	s[len] = '\0';
	return s;
}

/* Batch i of the script: 1..4 events, text from 8 bytes to 40 KB; batch 5
 * is one 300 KB message, a frame of several 128 KiB blocks. */
static void script_batch(struct batch *b, unsigned i)
{
	memset(b, 0, sizeof *b);
	size_t n_ev = 1 + i % 4;
	for (size_t e = 0; e < n_ev; e++) {
		size_t len = i == 5 ? 300 * 1024 : (size_t)8 << ((i * 3 + e) % 13);
		char *text = noise(len, i * 31u + (uint32_t)e);
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "text", text);
		free(text);
		add(b, e % 2 ? "assistant/text" : "user/message", NULL, d);
		if (i == 5)
			break;
	}
}

static void open_turn(struct batch *b)
{
	memset(b, 0, sizeof *b);
	add(b, "turn/start", "T1", cJSON_CreateObject());
	cJSON *call = cJSON_CreateObject();
	cJSON_AddStringToObject(call, "call_id", "c1");
	cJSON_AddStringToObject(call, "name", "shell");
	cJSON_AddItemToObject(call, "args", cJSON_CreateObject());
	add(b, "tool/call", "T1", call);
	cJSON *started = cJSON_CreateObject();
	cJSON_AddStringToObject(started, "call_id", "c1");
	add(b, "tool/started", "T1", started);
	call = cJSON_CreateObject();
	cJSON_AddStringToObject(call, "call_id", "c2");
	cJSON_AddStringToObject(call, "name", "read");
	cJSON_AddItemToObject(call, "args", cJSON_CreateObject());
	add(b, "tool/call", "T1", call);
}

static void append_ok(struct log *lg, uint64_t *acked, const struct batch *b)
{
	struct cerr err;
	uint64_t next;
	uint64_t expect = *acked ? *acked : 1;
	if (log_append(lg, expect, b->ev, b->n, &next, &err) != 0)
		fail_msg("append: %s", err.msg);
	*acked = next; /* acknowledged: from here on it must survive */
}

/* A writer killed mid-frame whose partial write still reached the disk:
 * half a frame, written and synced through the table. */
static void torn_write(const char *path)
{
	struct frame_codec *fc = frame_codec_new();
	struct buf fr = BUF_INIT;
	char *junk = noise(3000, 7);
	assert_int_equal(frame_encode(fc, junk, 3000, &fr), 0);
	int fd = fsops->openat(AT_FDCWD, path, O_RDWR, 0);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fsops->fstat(fd, &st), 0);
	assert_int_equal(fs_pwrite_all(fd, fr.p, fr.len / 2, st.st_size), 0);
	assert_int_equal(fsops->fsync(fd), 0);
	fsops->close(fd);
	free(junk);
	buf_release(&fr);
	frame_codec_free(fc);
}

/* ---- the script ---- */

static void script_open(struct script *sc)
{
	struct cerr err;
	memset(sc, 0, sizeof *sc);
	assert_int_equal(tmp_root("cairn-powerloss", sc->tmp, sizeof sc->tmp, sc->root, sizeof sc->root), 0);
	assert_int_equal(store_open(sc->root, true, &sc->st, &err), 0);
	faultfs_install();
	assert_int_equal(faultfs_track(sc->root), 0);
}

static void script_close(struct script *sc)
{
	faultfs_uninstall();
	store_close(sc->st);
	for (size_t i = 0; i < sc->n_pts; i++)
		free(sc->pts[i].dir);
	snap_free(&sc->final_a);
	snap_free(&sc->final_b);
	rm_rf(sc->tmp);
}

static void run_script(struct script *sc)
{
	struct cerr err;
	struct log *lg;
	struct batch b;
	struct repair_report rep;
	faultfs_set_sync_hook(crash_here, sc);

	/* B: a small session, trashed later. */
	assert_int_equal(log_create(sc->st, NULL, CWD_B, NULL, &lg, &err), 0);
	snprintf(sc->id_b, sizeof sc->id_b, "%s", log_id(lg));
	for (unsigned i = 0; i < 2; i++) {
		script_batch(&b, i);
		append_ok(lg, &sc->acked_b, &b);
		batch_free(&b);
	}
	log_close(lg);

	/* A: twelve batches of varying sizes, then a turn left open. */
	assert_int_equal(log_create(sc->st, NULL, CWD_A, NULL, &lg, &err), 0);
	snprintf(sc->id_a, sizeof sc->id_a, "%s", log_id(lg));
	for (unsigned i = 0; i < 12; i++) {
		script_batch(&b, i);
		append_ok(lg, &sc->acked_a, &b);
		batch_free(&b);
	}
	open_turn(&b);
	append_ok(lg, &sc->acked_a, &b);
	batch_free(&b);
	log_close(lg);

	/* The writer died mid-frame; the next one repairs. */
	char *path_a = session_path(sc->root, STORE_SESSIONS, CWD_A, sc->id_a, LOG_FILE);
	torn_write(path_a);
	free(path_a);
	assert_int_equal(log_open(sc->st, sc->id_a, &lg, &err), 0);
	assert_int_equal(log_scan(lg)->status, SCAN_TORN);
	if (repair_log(lg, &rep, &err) != 0)
		fail_msg("repair: %s", err.msg);
	assert_int_equal(rep.appended, 3);
	sc->acked_a = rep.next_seq;
	cJSON_Delete(rep.closers);
	log_close(lg);

	/* Delete B. */
	struct session_ref ref;
	assert_int_equal(store_resolve(sc->st, sc->id_b, &ref, &err), 0);
	if (store_trash(sc->st, &ref, NULL, &err) != 0)
		fail_msg("trash: %s", err.msg);
	sc->trashed = true;

	/* A goes on, so there are sync points after the trash. */
	assert_int_equal(log_open(sc->st, sc->id_a, &lg, &err), 0);
	for (unsigned i = 12; i < 14; i++) {
		script_batch(&b, i);
		append_ok(lg, &sc->acked_a, &b);
		batch_free(&b);
	}
	log_close(lg);
	faultfs_set_sync_hook(NULL, NULL);

	char *p = session_path(sc->root, STORE_SESSIONS, CWD_A, sc->id_a, LOG_FILE);
	snap_read(p, &sc->final_a);
	free(p);
	p = session_path(sc->root, STORE_TRASH, CWD_B, sc->id_b, LOG_FILE);
	snap_read(p, &sc->final_b);
	free(p);
	assert_int_equal(sc->final_a.status, SCAN_OK);
	assert_int_equal(sc->final_a.n, sc->acked_a);
	assert_int_equal(sc->final_b.status, SCAN_OK);
	assert_int_equal(sc->final_b.n, sc->acked_b);
}

/* ---- checking one crash copy ---- */

#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), -1)

/* got is a readable log that holds at least `acked` events, each of them
 * as written, and nothing that was never written. */
static int check_prefix(const struct snap *got, const struct snap *final, uint64_t acked,
			const char *name, char *why, size_t whylen)
{
	if (got->status != SCAN_OK && got->status != SCAN_TORN)
		return BAD("%s reads as %s", name, scan_status_name(got->status));
	if (got->n < acked)
		return BAD("%s holds %zu events, %llu acknowledged", name, got->n,
			   (unsigned long long)acked);
	if (got->n > final->n)
		return BAD("%s holds %zu events, only %zu written", name, got->n, final->n);
	for (size_t i = 0; i < got->n; i++)
		if (strcmp(got->lines[i], final->lines[i]) != 0)
			return BAD("%s: event %zu is not what was written", name, i);
	return 0;
}

/* Open the copy's A for writing and repair it: it must come out ok with
 * its events untouched and no turn left open. */
static int check_repairs(const char *root, const char *id, const struct snap *before,
			 const char *path, char *why, size_t whylen)
{
	struct store *st;
	struct log *lg;
	struct repair_report rep;
	struct cerr err;
	if (store_open(root, false, &st, &err) != 0)
		return BAD("the crash copy does not open: %.400s", err.msg);
	int r = log_open(st, id, &lg, &err);
	if (r == 0) {
		r = repair_log(lg, &rep, &err);
		if (r == 0)
			cJSON_Delete(rep.closers);
		log_close(lg);
	}
	store_close(st);
	if (r != 0)
		return BAD("A does not open and repair: %.400s", err.msg);
	struct snap after;
	snap_read(path, &after);
	int ret = 0;
	if (after.status != SCAN_OK || after.open_turns != 0 || after.n < before->n)
		ret = BAD("A after repair: %s, %zu open turns, %zu events (had %zu)",
			  scan_status_name(after.status), after.open_turns, after.n, before->n);
	for (size_t i = 0; ret == 0 && i < before->n; i++)
		if (strcmp(after.lines[i], before->lines[i]) != 0)
			ret = BAD("repair changed committed event %zu", i);
	snap_free(&after);
	return ret;
}

struct seen {
	unsigned torn, a_missing, b_in_trash;
};

static int check_point(const struct script *sc, const struct point *p, struct seen *seen,
		       char *why, size_t whylen)
{
	int ret = 0;
	struct snap a, bs, bt;
	char *pa = session_path(p->dir, STORE_SESSIONS, CWD_A, sc->id_a, LOG_FILE);
	char *pbs = session_path(p->dir, STORE_SESSIONS, CWD_B, sc->id_b, LOG_FILE);
	char *pbt = session_path(p->dir, STORE_TRASH, CWD_B, sc->id_b, LOG_FILE);
	snap_read(pa, &a);
	snap_read(pbs, &bs);
	snap_read(pbt, &bt);
	if (!a.exists) {
		seen->a_missing++;
		if (p->acked_a)
			ret = BAD("A is lost with %llu events acknowledged",
				  (unsigned long long)p->acked_a);
	} else {
		seen->torn += a.status == SCAN_TORN;
		ret = check_prefix(&a, &sc->final_a, p->acked_a, "A", why, whylen);
		if (ret == 0)
			ret = check_repairs(p->dir, sc->id_a, &a, pa, why, whylen);
	}
	seen->b_in_trash += bt.exists;
	if (ret == 0 && p->trashed && (bs.exists || !bt.exists))
		ret = BAD("B after its deletion returned: %s in sessions, %s in trash",
			  bs.exists ? "still" : "not", bt.exists ? "present" : "missing");
	if (ret == 0 && p->acked_b && !bs.exists && !bt.exists)
		ret = BAD("B is lost with %llu events acknowledged", (unsigned long long)p->acked_b);
	if (ret == 0 && bs.exists)
		ret = check_prefix(&bs, &sc->final_b, p->acked_b, "B", why, whylen);
	if (ret == 0 && bt.exists)
		ret = check_prefix(&bt, &sc->final_b, p->acked_b, "B in trash", why, whylen);
	snap_free(&a);
	snap_free(&bs);
	snap_free(&bt);
	free(pa);
	free(pbs);
	free(pbt);
	return ret;
}

/* ---- tests ---- */

static void test_power_loss_at_every_sync_point_keeps_synced_state(void **state)
{
	(void)state;
	static struct script sc;
	struct seen seen = {0};
	char why[512];
	script_open(&sc);
	run_script(&sc);
	assert_true(sc.syncs >= 20);
	assert_int_equal(sc.n_pts, 2 * sc.syncs); /* every sync succeeded */
	for (size_t i = 0; i < sc.n_pts; i++) {
		if (check_point(&sc, &sc.pts[i], &seen, why, sizeof why) != 0)
			fail_msg("power loss %s: %s", sc.pts[i].label, why);
		rm_rf(sc.pts[i].dir);
	}
	/* The script reached every interesting state. */
	assert_true(seen.a_missing >= 1);
	assert_true(seen.torn >= 2);
	assert_true(seen.b_in_trash >= 2);
	print_message("# %zu crash points over %u syncs, %u torn copies\n", sc.n_pts, sc.syncs,
		      seen.torn);
	script_close(&sc);
}

/* Publish one session and take a crash copy right after the append was
 * acknowledged. skip: the nth directory fsync from the start is a no-op.
 * Returns the directory fsyncs seen; *why gets the check's verdict. */
static unsigned long publish_and_crash(unsigned long skip, int *verdict, char *why, size_t whylen)
{
	static struct script sc;
	struct cerr err;
	struct log *lg;
	struct batch b;
	script_open(&sc);
	if (skip)
		faultfs_skip_dir_sync(skip);
	assert_int_equal(log_create(sc.st, NULL, CWD_A, NULL, &lg, &err), 0);
	snprintf(sc.id_a, sizeof sc.id_a, "%s", log_id(lg));
	script_batch(&b, 3);
	append_ok(lg, &sc.acked_a, &b);
	batch_free(&b);
	log_close(lg);
	unsigned long dir_syncs = faultfs_dir_syncs();
	assert_int_equal(faultfs_skipped(), skip ? 1 : 0);
	crash_here(&sc, FF_FSYNC, true);
	char *p = session_path(sc.root, STORE_SESSIONS, CWD_A, sc.id_a, LOG_FILE);
	snap_read(p, &sc.final_a);
	free(p);
	struct seen seen = {0};
	*verdict = check_point(&sc, &sc.pts[0], &seen, why, whylen);
	/* The session's directory itself made it: only the log's entry can be
	 * missing, i.e. exactly the skipped sync is what was lost. */
	char *key = pathkey_project(CWD_A);
	p = xasprintf("%s/%s/%s/%s", sc.pts[0].dir, STORE_SESSIONS, key, sc.id_a);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	free(p);
	free(key);
	script_close(&sc);
	return dir_syncs;
}

/* The model catches a missing fsync: the same check that passes above
 * fails once the directory fsync after the publishing rename is skipped. */
static void test_missing_dir_fsync_is_caught(void **state)
{
	(void)state;
	char why[512];
	int verdict;
	unsigned long n = publish_and_crash(0, &verdict, why, sizeof why);
	if (verdict != 0)
		fail_msg("control: %s", why);
	assert_true(n >= 2);
	/* The last directory fsync of the publication is the one after the
	 * rename; lie about it. */
	publish_and_crash(n, &verdict, why, sizeof why);
	assert_int_equal(verdict, -1);
	assert_non_null(strstr(why, "A is lost"));
	print_message("# without the directory fsync: %s\n", why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_loss_at_every_sync_point_keeps_synced_state),
		cmocka_unit_test(test_missing_dir_fsync_is_caught),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
