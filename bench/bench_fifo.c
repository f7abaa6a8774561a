/* bench_fifo.c — full saves through the persistence FIFO measured against
 * the targets of issue 3 ("Tests and measurements"); method and figures in
 * bench/bench_catalog.md.
 *
 *   1. full saves per second through the FIFO, one session, with 2 saves in
 *      flight (and, for information, each save waited for before the next:
 *      an interactive client), against a baseline doing the same syncs by
 *      hand in the same run on the same disk: pwrite of a ~300-byte zstd
 *      frame + fdatasync, then one SQLite UPDATE commit (WAL,
 *      synchronous=NORMAL). Target: ratio >= 0.8.
 *      1b: the writer's calls for one save made inline and timed phase by
 *      phase, with variants that show what each part costs;
 *   2. several sessions (8) saving at once: one full save per session
 *      posted together, all waited for, repeated; saves/s against the same
 *      baseline over 8 files. Target: ratio > 1 (group commit). Also the
 *      ceiling of a writer that syncs the 8 logs concurrently.
 *
 * Everything runs in a temp dir under $BENCH_DIR, else $TMPDIR, else /tmp.
 * Exit 0 whatever the figures (informational); non-zero when something
 * fails (a write error, a receipt that is not what the save expects).
 *
 * Options: --only=1|2 (repeatable), --rounds=N (default 6), --fifo-secs=S
 * (time per side, default 3), --writers=N (test 2, default 8), --keep
 * (keep the temp dir). */
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "persist/catalog.h"
#include "persist/catalog_int.h" /* diagnostics only: the connection, for PRAGMAs */
#include "persist/fifo.h"
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <uv.h>
#include <zstd.h>

/* ---- options ----------------------------------------------------------- */

static struct {
	bool only[3];
	bool any_only;
	int rounds, writers;
	double fifo_secs;
	bool keep;
} opt = {.rounds = 6, .writers = 8, .fifo_secs = 3.0};

static char *work; /* temp dir of this run (FIFO roots, baseline files) */

/* ---- 1 and 2. FIFO full saves vs the same syncs by hand ---------------- */

static char *small_text; /* ~200 bytes: a ~310-byte line, a ~290-byte frame */
static double fifo1_rate; /* test 1's median saves/s, for 1b */

struct fsess {
	char id[32];
	uint64_t seq, version; /* what the next save expects */
	unsigned saves, done;
	int inflight;
	bool created;
	uint64_t want[64]; /* next seq each save in flight should end at */
};

/* Saves per turn. A session saves turns the way the engine does: the
 * first save of a turn starts it (turn/start and the prompt), the last
 * ends it (the last chunk of the answer and turn/end), the saves between
 * stream the answer (one assistant/text each), so the turn's assistant
 * text grows as a real one does. */
#define SAVES_PER_TURN 8

static cJSON *end_data; /* turn/end's data */

/* The events of save i (0-based) of a session in turn `turn`: 1 or 2,
 * borrowing `data` (the text) for those that carry text. */
static size_t turn_events(unsigned i, const char *turn, cJSON *data, struct log_event ev[2])
{
	unsigned k = i % SAVES_PER_TURN;
	memset(ev, 0, 2 * sizeof *ev);
	ev[0] = (struct log_event){.type = "assistant/text", .turn = turn, .data = data};
	if (k == 0) {
		ev[0].type = "turn/start";
		ev[0].data = NULL;
		ev[1] = (struct log_event){.type = "user/message", .turn = turn, .data = data};
		return 2;
	}
	if (k == SAVES_PER_TURN - 1) {
		if (!end_data)
			end_data = cJSON_Parse("{\"outcome\":\"completed\"}");
		ev[1] = (struct log_event){.type = "turn/end", .turn = turn, .data = end_data};
		return 2;
	}
	return 1;
}

static int pending;

/* Every receipt is checked: one event per save, and the content version
 * is the next seq, which is what lets the next save be posted before this
 * receipt arrives. */
static void save_done(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		      const struct cerr *err)
{
	(void)it;
	struct fsess *s = ctx;
	if (err)
		die_err("fifo full save", err);
	uint64_t want = s->want[s->done % 64];
	if (r->next_seq != want || r->content_version != r->next_seq)
		die("fifo receipt: next seq %llu, version %llu after save %u (want %llu)",
		    (unsigned long long)r->next_seq, (unsigned long long)r->content_version,
		    s->done + 1, (unsigned long long)want);
	s->done++;
	s->inflight--;
	pending--;
}

static void post_save(struct fifo *f, struct fsess *s)
{
	char turn[48];
	snprintf(turn, sizeof turn, "%s-turn-%u", s->id, s->saves / SAVES_PER_TURN);
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "text", small_text);
	struct log_event evs[2];
	size_t n = turn_events(s->saves, turn, data, evs);
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "type", evs[i].type);
		cJSON_AddStringToObject(ev, "turn", turn);
		if (evs[i].data)
			cJSON_AddItemToObject(ev, "data", cJSON_Duplicate(evs[i].data, true));
		cJSON_AddItemToArray(arr, ev);
	}
	cJSON_Delete(data);
	struct fifo_item *it = fifo_full_save(s->id, s->seq, s->version, arr);
	s->seq += n;
	s->version = s->seq;
	s->want[s->saves % 64] = s->seq;
	if (!s->created) {
		fifo_item_create(it, "/home/dev/src/fifo-bench");
		s->created = true;
	}
	struct cerr e;
	if (fifo_post(f, it, save_done, s, &e) < 0)
		die_err("fifo_post", &e);
	pending++;
	s->inflight++;
	s->saves++;
}

static void wait_all(uv_loop_t *loop)
{
	while (pending > 0)
		uv_run(loop, UV_RUN_ONCE);
}

/* `count` saves of each of the n sessions with up to `depth` of each in
 * flight: the loop posts a session's next save as soon as fewer than depth
 * are outstanding, the way the engine posts without waiting for receipts
 * (depth 1: each save waits for the one before it). */
static void run_saves(struct fifo *f, uv_loop_t *loop, struct fsess *ss, int n, int count,
		      int depth)
{
	unsigned goal[64];
	for (int i = 0; i < n; i++)
		goal[i] = ss[i].saves + (unsigned)count;
	for (;;) {
		bool more = false;
		for (int i = 0; i < n; i++) {
			while (ss[i].inflight < depth && ss[i].saves < goal[i])
				post_save(f, &ss[i]);
			more |= ss[i].saves < goal[i];
		}
		if (!more)
			break;
		uv_run(loop, UV_RUN_ONCE);
	}
	wait_all(loop);
}

/* The baseline: per save, a ~290-byte zstd frame pwritten at the end of
 * its own file + fdatasync, then BEGIN IMMEDIATE; UPDATE one row; COMMIT on
 * a WAL database at synchronous=NORMAL (same autocheckpoint as index.db). */
struct baseline {
	int fd[64];
	uint64_t off[64];
	sqlite3 *db;
	sqlite3_stmt *begin, *upd, *commit;
	void *frame;
	size_t frame_len;
};

static void base_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		die("baseline sqlite: %s: %s", sql, msg ? msg : "?");
}

static void base_open(struct baseline *b, const char *dir, int files)
{
	memset(b, 0, sizeof *b);
	mkdir_p1(dir);
	for (int i = 0; i < files; i++) {
		char *p = xasprintf("%s/base-%d.log", dir, i);
		b->fd[i] = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (b->fd[i] < 0)
			die("open %s: %s", p, strerror(errno));
		free(p);
	}
	char *line = xasprintf("{\"seq\":1,\"t\":1700000000000,\"type\":\"assistant/text\",\"turn\":"
			       "\"base-turn-0\",\"data\":{\"text\":\"%s\"}}\n",
			       small_text);
	size_t cap = ZSTD_compressBound(strlen(line));
	b->frame = xmalloc(cap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 3);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	b->frame_len = ZSTD_compress2(cc, b->frame, cap, line, strlen(line));
	if (ZSTD_isError(b->frame_len))
		die("baseline: zstd");
	ZSTD_freeCCtx(cc);
	free(line);
	char *dbp = xasprintf("%s/base.db", dir);
	if (sqlite3_open(dbp, &b->db) != SQLITE_OK)
		die("open %s", dbp);
	free(dbp);
	base_exec(b->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			 " PRAGMA wal_autocheckpoint=1000;"
			 " CREATE TABLE s (id INTEGER PRIMARY KEY, n INTEGER, t INTEGER);");
	for (int i = 0; i < files; i++) {
		char *sql = xasprintf("INSERT INTO s VALUES (%d, 0, 0)", i);
		base_exec(b->db, sql);
		free(sql);
	}
	if (sqlite3_prepare_v2(b->db, "BEGIN IMMEDIATE", -1, &b->begin, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db, "UPDATE s SET n = n + 1, t = ?2 WHERE id = ?1", -1, &b->upd,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db, "COMMIT", -1, &b->commit, NULL) != SQLITE_OK)
		die("baseline prepare: %s", sqlite3_errmsg(b->db));
}

static void base_step(struct baseline *b, sqlite3_stmt *st)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		die("baseline sqlite: %s", sqlite3_errmsg(b->db));
	sqlite3_reset(st);
}

static void base_save(struct baseline *b, int k)
{
	if (fs_pwrite_all(b->fd[k], b->frame, b->frame_len, (off_t)b->off[k]) < 0 ||
	    fdatasync(b->fd[k]) < 0)
		die("baseline write: %s", strerror(errno));
	b->off[k] += b->frame_len;
	base_step(b, b->begin);
	sqlite3_bind_int(b->upd, 1, k);
	sqlite3_bind_int64(b->upd, 2, clock_unix_ms());
	base_step(b, b->upd);
	base_step(b, b->commit);
}

static void base_close(struct baseline *b, int files)
{
	sqlite3_finalize(b->begin);
	sqlite3_finalize(b->upd);
	sqlite3_finalize(b->commit);
	sqlite3_close(b->db);
	for (int i = 0; i < files; i++)
		close(b->fd[i]);
	free(b->frame);
}

/* What a writer that syncs a batch's logs concurrently could reach: the n
 * frames pwritten + fdatasynced by n threads at once, then one commit
 * updating n rows. Not a target, a ceiling for test 2's design. */
struct par_pool {
	pthread_t th[64];
	pthread_barrier_t start, done;
	struct baseline *b;
	int n;
	bool stop;
};
struct par_arg {
	struct par_pool *p;
	int k;
};

static void *par_worker(void *arg)
{
	struct par_arg *a = arg;
	struct par_pool *p = a->p;
	for (;;) {
		pthread_barrier_wait(&p->start);
		if (p->stop)
			break;
		struct baseline *b = p->b;
		if (fs_pwrite_all(b->fd[a->k], b->frame, b->frame_len, (off_t)b->off[a->k]) < 0 ||
		    fdatasync(b->fd[a->k]) < 0)
			die("parallel baseline write: %s", strerror(errno));
		b->off[a->k] += b->frame_len;
		pthread_barrier_wait(&p->done);
	}
	return NULL;
}

static void par_save_all(struct par_pool *p)
{
	pthread_barrier_wait(&p->start);
	pthread_barrier_wait(&p->done);
	struct baseline *b = p->b;
	base_step(b, b->begin);
	for (int k = 0; k < p->n; k++) {
		sqlite3_bind_int(b->upd, 1, k);
		sqlite3_bind_int64(b->upd, 2, clock_unix_ms());
		base_step(b, b->upd);
	}
	base_step(b, b->commit);
}

/* One FIFO on a fresh root with `n` sessions, against the baseline over
 * `n` files: each round runs `iters` iterations of each side (the order
 * rotating between rounds); an iteration posts one full save per session
 * and waits for them all (ours) or does n saves by hand. */
static void bench_fifo(int n, int depth, const char *metric, const char *target, double min_ratio)
{
	fprintf(stderr, "[%d] FIFO full saves, %d session%s, %d in flight per session, vs pwrite + "
		"fdatasync + commit\n", n == 1 ? 1 : 2, n, n == 1 ? "" : "s at once", depth);
	char *froot = xasprintf("%s/fifo-%d", work, n);
	char *bdir = xasprintf("%s/base-%d", work, n);
	char *pdir = xasprintf("%s/par-%d", work, n);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct cerr e;
	struct fifo *f = fifo_new(&loop, froot, NULL, &e);
	if (!f)
		die_err("fifo_new", &e);
	struct fsess *ss = xcalloc((size_t)n, sizeof *ss);
	for (int i = 0; i < n; i++) {
		snprintf(ss[i].id, sizeof ss[i].id, "fifo-bench-%02d", i);
		ss[i].seq = 1; /* a new log expects seq 1 after its header */
	}
	struct baseline b, bp;
	base_open(&b, bdir, n);
	struct par_pool pool = {.b = &bp, .n = n};
	struct par_arg pargs[64];
	int sides = n > 1 ? 3 : 2;
	if (n > 1) {
		base_open(&bp, pdir, n);
		pthread_barrier_init(&pool.start, NULL, (unsigned)n + 1);
		pthread_barrier_init(&pool.done, NULL, (unsigned)n + 1);
		for (int k = 0; k < n; k++) {
			pargs[k] = (struct par_arg){&pool, k};
			if (pthread_create(&pool.th[k], NULL, par_worker, &pargs[k]) != 0)
				die("pthread_create");
		}
	}

	/* Warm-up (creates the sessions), then calibrate on the baseline:
	 * each side about fifo_secs / rounds per round. */
	for (int w = 0; w < 20; w++) {
		run_saves(f, &loop, ss, n, 1, 1);
		for (int i = 0; i < n; i++)
			base_save(&b, i);
		if (n > 1)
			par_save_all(&pool);
	}
	uint64_t t0 = clock_mono_ns();
	int cal = 0;
	while (ms_since(t0) < 250) {
		for (int i = 0; i < n; i++)
			base_save(&b, i);
		cal++;
	}
	double per_iter_ms = ms_since(t0) / cal;
	int iters = (int)(opt.fifo_secs * 1000 / opt.rounds / per_iter_ms);
	if (iters < 5)
		iters = 5;

	double ours[64], base[64], par[64], ratio[64], pratio[64];
	for (int r = 0; r < opt.rounds; r++) {
		double secs_of[3] = {0, 0, 0};
		for (int k = 0; k < sides; k++) {
			int side = (k + r) % sides; /* 0 ours, 1 baseline, 2 parallel */
			uint64_t t = clock_mono_ns();
			if (side == 0)
				run_saves(f, &loop, ss, n, iters, depth);
			for (int it = 0; it < iters && side != 0; it++) {
				if (side == 1) {
					for (int i = 0; i < n; i++)
						base_save(&b, i);
				} else {
					par_save_all(&pool);
				}
			}
			secs_of[side] = ms_since(t) / 1e3;
		}
		ours[r] = iters * n / secs_of[0];
		base[r] = iters * n / secs_of[1];
		ratio[r] = ours[r] / base[r];
		par[r] = n > 1 ? iters * n / secs_of[2] : 0;
		pratio[r] = par[r] / base[r];
		fprintf(stderr, "    round %d: %d saves each, ours %.0f/s, baseline %.0f/s, ratio %.3f",
			r + 1, iters * n, ours[r], base[r], ratio[r]);
		if (n > 1)
			fprintf(stderr, "; parallel syncs + 1 commit %.0f/s (%.2fx baseline)", par[r],
				pratio[r]);
		fputc('\n', stderr);
	}
	size_t R = (size_t)opt.rounds;
	double rt = median(ratio, R);
	char o[24], bs[24];
	snprintf(o, sizeof o, "%.0f /s", median(ours, R));
	snprintf(bs, sizeof bs, "%.0f /s", median(base, R));
	add_row(metric, o, bs, rt, true, target,
		min_ratio <= 0 ? "-" : rt >= min_ratio ? "PASS" : "MISS");
	if (n == 1 && depth == 2)
		fifo1_rate = median(ours, R);
	if (n > 1) {
		snprintf(o, sizeof o, "%.0f /s", median(par, R));
		add_row("  ceiling: the n log syncs in parallel + 1 commit", o, bs, median(pratio, R),
			true, "(info)", "-");
		pool.stop = true;
		pthread_barrier_wait(&pool.start);
		for (int k = 0; k < n; k++)
			pthread_join(pool.th[k], NULL);
		pthread_barrier_destroy(&pool.start);
		pthread_barrier_destroy(&pool.done);
		base_close(&bp, n);
	}

	if (fifo_close_wait(f, clock_mono_ns() / 1000000 + 30000) != 0)
		die("fifo_close_wait timed out");
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	base_close(&b, n);
	free(ss);
	rm_tree(froot);
	rm_tree(bdir);
	rm_tree(pdir);
	free(froot);
	free(bdir);
	free(pdir);
}

/* ---- 1b. where a full save's time goes -------------------------------- */

/* The writer's calls for one full save made inline, in the order of
 * fifo.c's process() + run_group() + project(), each phase timed: no
 * thread, no uv_async. Variants: 1 adds PRAGMA temp_store=MEMORY (the
 * SAVEPOINT's statement journal spills to a temp file in /var/tmp
 * otherwise: open, unlink, pwrites, close per save); 2 puts every save in
 * a new turn (an INSERT into docs instead of the UPSERT that re-indexes the
 * turn's whole text); 3 is a streamlined sequence (temp_store=MEMORY;
 * BEGIN, log_append, catalog_project_batch, COMMIT: no separate version
 * reads, no savepoint, no status write); 4 is 3 with the trigram index
 * left out of the triggers (as if only docs that need it were in it), 5 is
 * 3 without any FTS maintenance (the floor of the rest). Variants 4 and 5
 * change their own scratch catalog's triggers, nothing else. */
enum { PH_BEGIN, PH_GET1, PH_APPEND, PH_SAVEPOINT, PH_GET2, PH_PROJECT, PH_RELEASE, PH_STATUS,
       PH_COMMIT, PH_N };
static const char *const phase_name[PH_N] = {
	"catalog_begin (BEGIN IMMEDIATE)", "catalog_get (version check)",
	"log_append (pwrite + fdatasync)", "catalog_savepoint", "catalog_get (in project)",
	"catalog_project_batch", "catalog_savepoint_release", "catalog_set_status(NULL)",
	"catalog_commit"};
#define N_VARIANTS 6

struct inline_ctx {
	int variant;
	char *root;
	struct fsess s;
	struct store *st;
	struct catalog *cat;
	struct log *lg;
	cJSON *data;
	double sum[PH_N];
	long long pages;
	int saves, counted;
	size_t cached; /* statements in the connection's cache before the first save */
};

static void inline_open(struct inline_ctx *x, int variant)
{
	memset(x, 0, sizeof *x);
	x->variant = variant;
	x->root = xasprintf("%s/inline-%d", work, variant);
	x->s.seq = 1;
	snprintf(x->s.id, sizeof x->s.id, "inline-%d", variant);
	{
		/* Create the session (log + row) through the FIFO. */
		uv_loop_t loop;
		uv_loop_init(&loop);
		struct cerr e;
		struct fifo *f = fifo_new(&loop, x->root, NULL, &e);
		if (!f)
			die_err("fifo_new", &e);
		post_save(f, &x->s);
		wait_all(&loop);
		if (fifo_close_wait(f, clock_mono_ns() / 1000000 + 30000) != 0)
			die("fifo_close_wait timed out");
		uv_run(&loop, UV_RUN_DEFAULT);
		uv_loop_close(&loop);
	}
	struct cerr e;
	if (store_open(x->root, false, &x->st, &e) < 0 || catalog_open(x->st, &x->cat, &e) < 0 ||
	    log_open(x->st, x->s.id, &x->lg, &e) < 0)
		die_err("inline open", &e);
	bool lean = variant >= 3;
	if ((variant == 1 || lean) && cat_exec(x->cat, "PRAGMA temp_store=MEMORY", &e) < 0)
		die_err("temp_store", &e);
	if (variant >= 4 && cat_exec(x->cat, "DROP TRIGGER docs_ai; DROP TRIGGER docs_au;", &e) < 0)
		die_err("drop triggers", &e);
	if (variant == 4 &&
	    cat_exec(x->cat,
		     "CREATE TRIGGER docs_ai AFTER INSERT ON docs WHEN new.indexed BEGIN"
		     "  INSERT INTO fts_words(rowid, body) VALUES (new.docid, new.body);"
		     "END;"
		     "CREATE TRIGGER docs_au AFTER UPDATE OF body, indexed ON docs BEGIN"
		     "  INSERT INTO fts_words(fts_words, rowid, body) SELECT 'delete', old.docid,"
		     " old.body WHERE old.indexed;"
		     "  INSERT INTO fts_words(rowid, body) SELECT new.docid, new.body WHERE new.indexed;"
		     "END;",
		     &e) < 0)
		die_err("triggers", &e);
	x->data = cJSON_CreateObject();
	cJSON_AddStringToObject(x->data, "text", small_text);
	int cur, hi;
	sqlite3_db_status(x->cat->db, SQLITE_DBSTATUS_CACHE_WRITE, &cur, &hi, 1);
	x->cached = x->cat->n_cache;
}

/* One full save; counted once the first 20 (warm-up) are done. */
static void inline_save(struct inline_ctx *x)
{
	bool lean = x->variant >= 3;
	struct catalog *cat = x->cat;
	struct fsess *s = &x->s;
	struct cerr e;
	char turn[48];
	int i = x->saves++;
	snprintf(turn, sizeof turn, "inline-turn-%d", i / SAVES_PER_TURN);
	/* Variant 2: only text, in a turn never started, so indexed at every
	 * save (what every save cost before open turns waited outside the
	 * word index). */
	struct log_event ev[2] = {{.type = "assistant/text", .turn = turn, .data = x->data}};
	size_t nev = x->variant == 2 ? 1 : turn_events((unsigned)i, turn, x->data, ev);
	uint64_t t[PH_N + 1];
	struct cat_session row;
	uint64_t next, version;
	t[0] = clock_mono_ns();
	if (catalog_begin(cat, &e) < 0)
		die_err("begin", &e);
	t[1] = clock_mono_ns();
	if (!lean) {
		if (catalog_get(cat, s->id, &row, &e) < 0)
			die_err("get", &e);
		if (row.content_version != s->version)
			die("inline: version %llu, not %llu", (unsigned long long)row.content_version,
			    (unsigned long long)s->version);
		cat_session_release(&row);
	}
	t[2] = clock_mono_ns();
	if (log_append(x->lg, s->seq, ev, nev, &next, &e) < 0)
		die_err("log_append", &e);
	t[3] = clock_mono_ns();
	if (!lean && catalog_savepoint(cat, &e) < 0)
		die_err("savepoint", &e);
	t[4] = clock_mono_ns();
	if (!lean) {
		if (catalog_get(cat, s->id, &row, &e) < 0)
			die_err("get", &e);
		cat_session_release(&row);
	}
	t[5] = clock_mono_ns();
	struct log_mark d = log_durable(x->lg);
	struct cat_watermark wm = catalog_watermark_of(d);
	if (catalog_project_batch(cat, s->id, s->seq, log_batch_time(x->lg), ev, nev, &wm, &version,
				  &e) < 0)
		die_err("project", &e);
	t[6] = clock_mono_ns();
	if (!lean)
		catalog_savepoint_release(cat);
	t[7] = clock_mono_ns();
	if (!lean)
		catalog_set_status(cat, s->id, NULL, &e);
	t[8] = clock_mono_ns();
	if (catalog_commit(cat, &e) < 0)
		die_err("commit", &e);
	t[9] = clock_mono_ns();
	s->seq = next;
	s->version = version;
	int cur, hi;
	sqlite3_db_status(cat->db, SQLITE_DBSTATUS_CACHE_WRITE, &cur, &hi, 1);
	if (i >= 20) {
		for (int p = 0; p < PH_N; p++)
			x->sum[p] += (double)(t[p + 1] - t[p]) / 1e3;
		x->pages += cur;
		x->counted++;
	}
}

static void inline_close(struct inline_ctx *x)
{
	cJSON_Delete(x->data);
	log_close(x->lg);
	catalog_close(x->cat);
	store_close(x->st);
	rm_tree(x->root);
	free(x->root);
}

/* Compiling what one save would compile without the statement cache, on a
 * catalog connection (median us): the statements the saves of x put in
 * its connection's cache, the catalog's own SQL text. *n gets their number. */
static double prepare_us(struct inline_ctx *x, size_t *n)
{
	struct catalog *cat = x->cat;
	struct cerr e;
	double v[21];
	*n = cat->n_cache - x->cached;
	for (int r = 0; r < 21; r++) {
		uint64_t t0 = clock_mono_ns();
		for (int k = 0; k < 50; k++)
			for (size_t q = x->cached; q < cat->n_cache; q++) {
				sqlite3_stmt *ps = cat_prepare_once(cat, cat->cache[q].sql, &e);
				if (!ps)
					die_err("prepare", &e);
				cat_done(cat, ps);
			}
		v[r] = (double)(clock_mono_ns() - t0) / 1e3 / 50;
	}
	return median(v, 21);
}

static void bench_save_phases(void)
{
	fprintf(stderr, "[1b] one full save, the writer's calls made inline, per phase\n");
	/* The variants run side by side in blocks of 25 saves, round robin,
	 * so a burst of disk or CPU contention hits them alike. */
	struct inline_ctx x[N_VARIANTS];
	for (int v = 0; v < N_VARIANTS; v++)
		inline_open(&x[v], v);
	for (int blk = 0; blk < 41; blk++)
		for (int v = 0; v < N_VARIANTS; v++)
			for (int k = 0; k < (blk == 0 ? 20 : 25); k++)
				inline_save(&x[(v + blk) % N_VARIANTS]);
	size_t n_stmts;
	double prep = prepare_us(&x[0], &n_stmts);
	double ph[N_VARIANTS][PH_N], total[N_VARIANTS], cat_us[N_VARIANTS], pages[N_VARIANTS];
	for (int v = 0; v < N_VARIANTS; v++) {
		total[v] = 0;
		for (int p = 0; p < PH_N; p++) {
			ph[v][p] = x[v].sum[p] / x[v].counted;
			total[v] += ph[v][p];
		}
		cat_us[v] = total[v] - ph[v][PH_APPEND];
		pages[v] = (double)x[v].pages / x[v].counted;
		inline_close(&x[v]);
	}
	char m[64], o[24], c[24];
	for (int p = 0; p < PH_N; p++) {
		snprintf(m, sizeof m, "  save: %s", phase_name[p]);
		snprintf(o, sizeof o, "%.1f us", ph[0][p]);
		add_row(m, o, "", 0, false, "(info)", "-");
	}
	snprintf(o, sizeof o, "%.1f us", total[0]);
	snprintf(c, sizeof c, "catalog %.0f us", cat_us[0]);
	snprintf(m, sizeof m, "  save inline, all phases (%.0f pages/commit)", pages[0]);
	add_row(m, o, c, 0, false, "(info)", "-");
	snprintf(o, sizeof o, "%.1f us", prep);
	snprintf(m, sizeof m, "  of which compiling its %zu statements", n_stmts);
	add_row(m, o, "", 0, false, "(info)", "-");
	if (fifo1_rate > 0) {
		/* The same work (the log's sync, the projection with its FTS
		 * index, the commit) done one save after another. */
		char r[24];
		snprintf(o, sizeof o, "%.0f /s", fifo1_rate);
		snprintf(r, sizeof r, "%.0f /s", 1e6 / total[0]);
		add_row("  1 session, 2 in flight, vs the same saves made inline", o, r,
			fifo1_rate * total[0] / 1e6, true, "(info)", "-");
	}
	static const char *const vname[N_VARIANTS] = {
		"", "  variant: temp_store=MEMORY", "  variant: text outside turns, indexed at every save",
		"  variant: lean (see source), temp_store=MEMORY", "  variant: lean, triggers recreated",
		"  variant: lean, no FTS at all (floor)"};
	for (int v = 1; v < N_VARIANTS; v++) {
		snprintf(o, sizeof o, "%.1f us", total[v]);
		snprintf(c, sizeof c, "catalog %.0f us", cat_us[v]);
		add_row(vname[v], o, c, 0, false, "(info)", "-");
	}
}

/* ---- main ------------------------------------------------------------- */

static bool want(int i)
{
	return !opt.any_only || opt.only[i];
}

int main(int argc, char **argv)
{
	bench_set_name("bench_fifo");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--only=", 7) == 0 && a[7] >= '1' && a[7] <= '2' && !a[8]) {
			opt.only[a[7] - '0'] = true;
			opt.any_only = true;
		} else if (strncmp(a, "--rounds=", 9) == 0) {
			opt.rounds = atoi(a + 9);
		} else if (strncmp(a, "--fifo-secs=", 12) == 0) {
			opt.fifo_secs = atof(a + 12);
		} else if (strncmp(a, "--writers=", 10) == 0) {
			opt.writers = atoi(a + 10);
		} else if (strcmp(a, "--keep") == 0) {
			opt.keep = true;
		} else {
			fprintf(stderr, "usage: bench_fifo [--only=1|2]... [--rounds=N] [--fifo-secs=S] "
					"[--writers=N] [--keep]\n");
			return 2;
		}
	}
	if (opt.rounds < 1 || opt.rounds > 64 || opt.fifo_secs <= 0 || opt.writers < 2 ||
	    opt.writers > 64)
		die("option out of range");

	umask(077);
	work = temp_dir();
	struct buf b = BUF_INIT;
	rng_seed(42);
	gen_prose(&b, 200, false);
	small_text = buf_detach(&b, NULL);
	uint64_t t0 = clock_mono_ns();
	if (want(1)) {
		bench_fifo(1, 2, "FIFO full saves/s, 1 session, 2 in flight", ">= 0.80", 0.8);
		bench_fifo(1, 1, "  1 session, each save waits for the last receipt", "(info)", 0);
		bench_save_phases();
	}
	if (want(2)) {
		char m[80];
		snprintf(m, sizeof m, "FIFO full saves/s, %d sessions at once, 2 in flight each",
			 opt.writers);
		bench_fifo(opt.writers, 2, m, "> 1.00", 1.0 + 1e-9);
		snprintf(m, sizeof m, "  %d sessions, each save waits for the last receipt",
			 opt.writers);
		bench_fifo(opt.writers, 1, m, "(info)", 0);
	}

	char machine[256];
	describe_machine(machine, sizeof machine, work);
	print_table("base/limit", 52, 7, 10);
	printf("(bench_fifo: %.0f s total; %s)\n", ms_since(t0) / 1e3, machine);

	temp_dir_done(work, opt.keep);
	free(work);
	free(small_text);
	cJSON_Delete(end_data);
	return 0;
}
