/* support_dataset.c — generating bench_catalog's data set through
 * persist/log.h (one process per core, syncs skipped, each session staged
 * then renamed into the root), caching it, and building its catalog. */
#include "bench/support_dataset.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "persist/catalog.h"
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/pathkey.h"
#include "persist/store.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static struct dataset_opts o;
static const char *dataset; /* o's data set directory, and its data root */
static const char *droot;

static uint64_t tree_bytes_total;
static int add_size(const char *p, const struct stat *sb, int type, struct FTW *f)
{
	(void)p;
	(void)f;
	if (type == FTW_F)
		tree_bytes_total += (uint64_t)sb->st_size;
	return 0;
}

static uint64_t tree_bytes(const char *path)
{
	tree_bytes_total = 0;
	nftw(path, add_size, 16, FTW_PHYS);
	return tree_bytes_total;
}

static uint64_t file_bytes(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}


struct turn_batch {
	struct log_event evs[64];
	cJSON *data[64];
	size_t n;
};

static void tb_add(struct turn_batch *tb, const char *type, const char *turn, cJSON *data,
		   int64_t t)
{
	if (tb->n == sizeof tb->evs / sizeof tb->evs[0])
		die("turn batch overflow");
	tb->data[tb->n] = data;
	tb->evs[tb->n++] = (struct log_event){.type = type, .turn = turn, .data = data, .t = t};
}

static cJSON *text_obj(struct buf *tmp, unsigned lo, unsigned hi, bool zh)
{
	gen_prose(tmp, rnd_in(lo, hi), zh);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", tmp->p);
	return d;
}

static const char *const tool_names[] = {"read_file", "bash", "edit_file", "grep"};
static const char *const src_paths[] = {
	"persist/log.c", "persist/scan.c", "base/json.c", "tui/view.c", "engine/turn.c",
	"Makefile", "docs/format.md", "tests/unit/test_log.c", "README.md", "app/main.c",
};

static cJSON *tool_args(const char *name, struct buf *tmp)
{
	cJSON *a = cJSON_CreateObject();
	const char *path = src_paths[rnd() % (sizeof src_paths / sizeof src_paths[0])];
	if (strcmp(name, "read_file") == 0) {
		cJSON_AddStringToObject(a, "path", path);
		cJSON_AddNumberToObject(a, "offset", rnd_in(1, 400));
	} else if (strcmp(name, "bash") == 0) {
		cJSON_AddStringToObject(a, "command", "make -j2 test 2>&1 | tail -n 40");
	} else if (strcmp(name, "edit_file") == 0) {
		cJSON_AddStringToObject(a, "path", path);
		gen_prose(tmp, rnd_in(40, 200), false);
		cJSON_AddStringToObject(a, "old_string", tmp->p);
		gen_prose(tmp, rnd_in(40, 200), false);
		cJSON_AddStringToObject(a, "new_string", tmp->p);
	} else {
		cJSON_AddStringToObject(a, "pattern", "log_append\\(");
		cJSON_AddStringToObject(a, "path", path);
	}
	return a;
}

/* One turn as one batch: turn/start, user/message, 0-2 tool steps
 * (request/prepared, 1-3 assistant/text chunks, tool/call, tool/started,
 * tool/result, step/end), the answer streamed in 2-6 assistant/text chunks,
 * step/end, turn/end with usage. */
static void gen_turn(struct turn_batch *tb, size_t sess, unsigned k, int64_t t, bool zh, bool rare,
		     char *turn, size_t turn_size, struct buf *tmp)
{
	snprintf(turn, turn_size, "T%06zu%04u%08X", sess, k, (unsigned)rnd());
	char sub[48], call_id[64];
	if (k == 0 && sess % 50 == 7) {
		cJSON *m = cJSON_CreateObject();
		gen_prose(tmp, rnd_in(20, 60), zh);
		cJSON_AddStringToObject(m, "title", tmp->p);
		tb_add(tb, "session/meta", NULL, m, t);
	}
	if (k == 1 && sess % 200 == 3) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddBoolToObject(m, "pinned", 1);
		tb_add(tb, "session/meta", NULL, m, t);
	}
	cJSON *d = cJSON_CreateObject();
	snprintf(sub, sizeof sub, "sub-%zu-%u", sess, k);
	cJSON_AddStringToObject(d, "client_submit_id", sub);
	tb_add(tb, "turn/start", turn, d, t);
	d = text_obj(tmp, 40, 400, zh);
	if (rare) {
		/* The rare term: exactly one user message in these sessions. */
		struct buf b = BUF_INIT;
		buf_printf(&b, "why does %s %s", RARE_TERM, cJSON_GetStringValue(cJSON_GetObjectItem(d, "text")));
		cJSON_ReplaceItemInObject(d, "text", cJSON_CreateString(b.p));
		buf_release(&b);
	}
	tb_add(tb, "user/message", turn, d, t);
	unsigned steps = rnd_in(0, 99) < 35 ? rnd_in(1, 2) : 0;
	for (unsigned s = 0; s < steps; s++) {
		tb_add(tb, "request/prepared", turn, cJSON_CreateObject(), t);
		for (unsigned c = rnd_in(1, 3); c > 0; c--)
			tb_add(tb, "assistant/text", turn, text_obj(tmp, 30, 200, zh), t);
		const char *name = tool_names[rnd() % 4];
		snprintf(call_id, sizeof call_id, "call_%zu_%u_%u_%08x", sess, k, s, (unsigned)rnd());
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "call_id", call_id);
		cJSON_AddStringToObject(d, "name", name);
		cJSON_AddItemToObject(d, "args", tool_args(name, tmp));
		tb_add(tb, "tool/call", turn, d, t);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "call_id", call_id);
		tb_add(tb, "tool/started", turn, d, t);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "call_id", call_id);
		bool err = rnd_in(0, 9) == 0;
		cJSON_AddStringToObject(d, "status", err ? "error" : "ok");
		gen_prose(tmp, rnd_in(100, 1500), false);
		cJSON_AddStringToObject(d, "output", tmp->p);
		if (strcmp(name, "bash") == 0)
			cJSON_AddNumberToObject(d, "exit_code", err ? 2 : 0);
		tb_add(tb, "tool/result", turn, d, t);
		tb_add(tb, "step/end", turn, cJSON_CreateObject(), t);
	}
	tb_add(tb, "request/prepared", turn, cJSON_CreateObject(), t);
	for (unsigned c = rnd_in(2, 6); c > 0; c--)
		tb_add(tb, "assistant/text", turn, text_obj(tmp, 30, 250, zh), t);
	tb_add(tb, "step/end", turn, cJSON_CreateObject(), t);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", "completed");
	cJSON *u = cJSON_AddObjectToObject(d, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", rnd_in(1000, 120000));
	cJSON_AddNumberToObject(u, "output_tokens", rnd_in(10, 4000));
	tb_add(tb, "turn/end", turn, d, t);
}

/* Generate session `idx` in the private staging store `stage`, then move
 * its directory into the data root: the staging store holds one session
 * at a time, so what log_create checks (that the id is new: one probe per
 * project folder) costs the same whatever the data set already holds. */
static void gen_session(struct store *stage, const char *stage_path, size_t idx, int64_t now,
			struct gen_stats *gs)
{
	rng_seed(idx);
	bool zh = idx % 10 == 4;
	unsigned turns = rnd_in(o.turns > 10 ? o.turns - 10 : 1, o.turns + 10);
	char cwd[64];
	snprintf(cwd, sizeof cwd, "/home/dev/src/project-%02zu", (idx * 7) % 40);
	cJSON *extra = cJSON_CreateObject();
	cJSON_AddStringToObject(extra, "provider", idx % 3 ? "anthropic" : "openai");
	cJSON_AddStringToObject(extra, "model", idx % 3 ? "claude-sonnet-4" : "gpt-4.1");
	struct log *lg;
	struct cerr e;
	if (log_create(stage, NULL, cwd, extra, &lg, &e) < 0)
		die_err("log_create", &e);
	cJSON_Delete(extra);
	/* Last activity spread so that listing order is not directory order;
	 * after the headers' created_at (now), as a real session's is. */
	int64_t base = now + (int64_t)((idx * 7919) % o.sessions) * 60000;
	struct turn_batch tb;
	struct buf tmp = BUF_INIT;
	char turn[64];
	for (unsigned k = 0; k < turns; k++) {
		tb.n = 0;
		gen_turn(&tb, idx, k, base + (int64_t)k * 20000, zh,
			 k == turns / 2 && idx % RARE_EVERY == 123, turn, sizeof turn, &tmp);
		if (log_append(lg, log_next_seq(lg), tb.evs, tb.n, NULL, &e) < 0)
			die_err("log_append", &e);
		gs->events += tb.n;
		gs->frames++;
		for (size_t i = 0; i < tb.n; i++)
			cJSON_Delete(tb.data[i]);
	}
	gs->turns += turns;
	gs->sessions++;
	buf_release(&tmp);
	char *key = pathkey_project(cwd);
	char *from = xasprintf("%s/%s/%s/%s", stage_path, STORE_SESSIONS, key, log_id(lg));
	char *kdir = xasprintf("%s/%s/%s", droot, STORE_SESSIONS, key);
	char *to = xasprintf("%s/%s", kdir, log_id(lg));
	log_close(lg);
	mkdir_p1(kdir);
	if (rename(from, to) < 0)
		die("rename %s -> %s: %s", from, to, strerror(errno));
	free(key);
	free(from);
	free(kdir);
	free(to);
}

static char *ready_path(void)
{
	return xasprintf("%s/READY", dataset);
}

static bool read_ready(struct dataset_info *di)
{
	char *p = ready_path();
	FILE *f = fopen(p, "r");
	free(p);
	if (!f)
		return false;
	unsigned long long s, t, ev, fr;
	bool ok = fscanf(f, "%llu %llu %llu %llu %lf %lf", &s, &t, &ev, &fr, &di->gen_s,
			 &di->sync_s) == 6;
	fclose(f);
	di->gs = (struct gen_stats){s, t, ev, fr};
	return ok && s == o.sessions;
}

static void write_ready(const struct dataset_info *di)
{
	char *p = ready_path();
	FILE *f = fopen(p, "w");
	if (!f)
		die("cannot write %s: %s", p, strerror(errno));
	fprintf(f, "%llu %llu %llu %llu %.3f %.3f\n", (unsigned long long)di->gs.sessions,
		(unsigned long long)di->gs.turns, (unsigned long long)di->gs.events,
		(unsigned long long)di->gs.frames, di->gen_s, di->sync_s);
	fclose(f);
	free(p);
}

static void generate(struct dataset_info *di)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int workers = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu;
	fprintf(stderr, "    generating %zu sessions of ~%u turns in %d processes...\n",
		o.sessions, o.turns, workers);
	char *sessions = xasprintf("%s/%s", droot, STORE_SESSIONS);
	mkdir_p1(droot);
	mkdir_p1(sessions);
	free(sessions);
	int64_t now = clock_unix_ms();
	uint64_t t0 = clock_mono_ns();
	pid_t pids[8];
	int fds[8];
	for (int w = 0; w < workers; w++) {
		int p[2];
		if (pipe(p) < 0)
			die("pipe: %s", strerror(errno));
		pid_t pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			close(p[0]);
			fsops = fsops_nosync();
			char *sp = xasprintf("%s/stage-%d", dataset, w);
			struct store *stage;
			struct cerr e;
			if (store_open(sp, true, &stage, &e) < 0)
				die_err("store_open (staging)", &e);
			struct gen_stats gs = {0};
			for (size_t i = (size_t)w; i < o.sessions; i += (size_t)workers)
				gen_session(stage, sp, i, now, &gs);
			store_close(stage);
			rm_tree(sp);
			free(sp);
			if (write(p[1], &gs, sizeof gs) != (ssize_t)sizeof gs)
				_exit(1);
			_exit(0);
		}
		close(p[1]);
		pids[w] = pid;
		fds[w] = p[0];
	}
	memset(&di->gs, 0, sizeof di->gs);
	for (int w = 0; w < workers; w++) {
		struct gen_stats gs;
		ssize_t r = read(fds[w], &gs, sizeof gs);
		close(fds[w]);
		int status;
		if (waitpid(pids[w], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
		    r != (ssize_t)sizeof gs)
			die("generator %d failed", w);
		di->gs.sessions += gs.sessions;
		di->gs.turns += gs.turns;
		di->gs.events += gs.events;
		di->gs.frames += gs.frames;
	}
	/* Everything on disk before anything is timed (no writeback later). */
	int rfd = open(droot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0 || syncfs(rfd) < 0)
		die("syncfs %s: %s", droot, strerror(errno));
	close(rfd);
	di->gen_s = ms_since(t0) / 1e3;
}

static void build_catalog(struct dataset_info *di)
{
	char *db = xasprintf("%s/%s", droot, CATALOG_FILE);
	char *wal = xasprintf("%s-wal", db), *shm = xasprintf("%s-shm", db);
	unlink(db), unlink(wal), unlink(shm);
	fprintf(stderr, "    building index.db (catalog_open + catalog_sync)...\n");
	uint64_t t0 = clock_mono_ns();
	struct store *st;
	struct catalog *cat;
	struct cerr e;
	size_t changed = 0;
	if (store_open(droot, false, &st, &e) < 0 || catalog_open(st, &cat, &e) < 0 ||
	    catalog_sync(cat, st, &changed, &e) < 0)
		die_err("catalog build", &e);
	catalog_close(cat);
	store_close(st);
	di->sync_s = ms_since(t0) / 1e3;
	if (changed != o.sessions)
		die("catalog_sync projected %zu sessions, not %zu", changed, o.sessions);
	free(db), free(wal), free(shm);
}

long long sql_int(sqlite3 *db, const char *sql, const char *q)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		die("prepare %s: %s", sql, sqlite3_errmsg(db));
	if (q)
		sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
	long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_finalize(st);
	return v;
}

/* Does the cached index.db fit this build? Its schema version must be
 * this build's (catalog_open would drop an older one and catalog_sync
 * re-project every log, a full rebuild), and a sync must find nothing to
 * re-project. */
static bool catalog_current(void)
{
	char *dbp = xasprintf("%s/%s", droot, CATALOG_FILE);
	sqlite3 *db;
	int version = -1;
	if (sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
		version = (int)sql_int(db, "PRAGMA user_version", NULL);
	sqlite3_close(db);
	free(dbp);
	if (version != CATALOG_SCHEMA) {
		fprintf(stderr, "    (index.db has schema %d, this build %d)\n", version, CATALOG_SCHEMA);
		return false;
	}
	struct store *st;
	struct catalog *cat;
	struct cerr e;
	size_t changed = 0;
	if (store_open(droot, false, &st, &e) < 0)
		return false;
	bool ok = catalog_open(st, &cat, &e) == 0;
	if (ok) {
		ok = catalog_sync(cat, st, &changed, &e) == 0 && changed == 0;
		if (!ok)
			fprintf(stderr, "    (catalog_sync: %s)\n",
				changed ? "sessions re-projected" : e.msg);
		catalog_close(cat);
	}
	store_close(st);
	return ok;
}

void dataset_prepare(const struct dataset_opts *opts, struct dataset_info *di)
{
	o = *opts;
	memset(di, 0, sizeof *di);
	const char *bd = bench_dir();
	if (bd)
		di->dir = xasprintf("%s/cairn-bench-catalog-v1-s%zu-t%u", bd, o.sessions, o.turns);
	else
		di->dir = xasprintf("%s/dataset", o.work);
	di->is_temp = !bd;
	di->root = xasprintf("%s/root", di->dir);
	dataset = di->dir;
	droot = di->root;
	if (!o.regen && read_ready(di)) {
		di->cached = true;
		fprintf(stderr, "    reusing the data set in %s (--regen to rebuild it)\n", dataset);
		if (!o.rebuild_catalog && !catalog_current()) {
			fprintf(stderr, "    its index.db does not fit this build: rebuilding it\n");
			o.rebuild_catalog = true;
		}
		if (o.rebuild_catalog) {
			build_catalog(di);
			di->rebuilt = true;
			write_ready(di);
		}
	} else {
		rm_tree(dataset);
		mkdir_p1(dataset);
		generate(di);
		fprintf(stderr, "    generated in %.1f s\n", di->gen_s);
		build_catalog(di);
		di->rebuilt = true;
		write_ready(di);
	}
	char *db = xasprintf("%s/%s", droot, CATALOG_FILE);
	char *sessions = xasprintf("%s/%s", droot, STORE_SESSIONS);
	di->db_bytes = file_bytes(db);
	di->log_bytes = tree_bytes(sessions);
	free(db);
	free(sessions);
	fprintf(stderr,
		"    %llu sessions, %llu turns, %llu events in %llu frames; logs %.1f MiB, index.db "
		"%.1f MiB; generation %.1f s, catalog build %.1f s%s\n",
		(unsigned long long)di->gs.sessions, (unsigned long long)di->gs.turns,
		(unsigned long long)di->gs.events, (unsigned long long)di->gs.frames,
		(double)di->log_bytes / 1048576.0, (double)di->db_bytes / 1048576.0, di->gen_s,
		di->sync_s,
		!di->rebuilt ? " (figures from the run that built it)" : "");
}

void dataset_release(struct dataset_info *di)
{
	free(di->dir);
	free(di->root);
	di->dir = di->root = NULL;
}

