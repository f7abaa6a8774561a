/* bench_catalog.c — listing and search over the catalog measured against
 * the targets of issue 3 ("Tests and measurements"); method and figures in
 * bench/bench_catalog.md (the FIFO's targets are in bench_fifo.c).
 *
 * With N (10,000) generated sessions of about T (30) turns: the wall time
 * of the real binary (posix_spawn, stdout to /dev/null, median of --runs
 * after one warm-up) for `cairn sessions --json` (target < 100 ms) and
 * `cairn search --json` for a rare, a common, a CJK and a two-character
 * CJK term (< 50 ms each); then the same work in-process, piece by piece
 * (catalog_sync, catalog_list, the JSON output, catalog_search) and the SQL
 * alone on index.db, to tell process start-up, reconciliation, query and
 * output apart, with prototypes of the fixes proposed ("proposed:" rows).
 *
 * The data set is generated straight through the log store (one log_append
 * per turn, syncs skipped through the fsops table, one syncfs at the end),
 * in one process per core, then catalog_open + catalog_sync build index.db
 * (timed). With $BENCH_DIR set the generated root is kept there and reused
 * by later runs (--regen rebuilds it, --rebuild-catalog only index.db; an
 * index.db of another schema version is rebuilt by itself).
 *
 * Exit 0 whatever the figures (informational); non-zero when something
 * fails (a write error, a cairn run that fails, a wrong hit count, a
 * prototype whose output differs from cairn's).
 *
 * Then the search queries at the caps' worst cases (support_queries.c),
 * each timed --search-runs times (default 100) for its p99 (< 100 ms).
 *
 * Options: --sessions=N, --turns=N, --runs=N (timed CLI runs, default 5,
 * after one warm-up), --search-runs=N, --cairn=PATH (default: ../cairn next to this
 * binary's directory), --regen, --rebuild-catalog, --keep. */
#include "app/cmds.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "bench/support_dataset.h"
#include "bench/support_queries.h"
#include "persist/catalog.h"
#include "persist/catalog_int.h" /* diagnostics only: the connection, for PRAGMAs */
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/pathkey.h"
#include "persist/store.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <dirent.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

extern char **environ;

/* sessions_json (the `sessions --json` array) lives in app/cmd_sessions.c,
 * whose object also refers to the command table of app/main.c, which is not
 * in libcairn.a: an empty table lets the bench call the real function. */
const struct command cli_commands[] = {{NULL, NULL, NULL, NULL}};


/* ---- options and small helpers ---------------------------------------- */

static struct {
	size_t sessions;
	unsigned turns;
	int runs;
	const char *cairn;
	int search_runs;
	bool regen, rebuild_catalog, keep;
} opt = {.sessions = 10000, .turns = 30, .runs = 5, .search_runs = 100};

static char *work;    /* temp dir of this run */
static char *dataset; /* the generated set: dataset/root is the data root */
static char *droot;
static bool dataset_is_temp;
static int failures;

/* ---- 1b. the real binary ---------------------------------------------- */

static char *cairn_path(void)
{
	if (opt.cairn)
		return xstrdup(opt.cairn);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return xstrdup("build/cairn");
	self[n] = '\0';
	char *slash = strrchr(self, '/'); /* .../BUILD/bench/bench_catalog */
	if (slash)
		*slash = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	return xasprintf("%s/cairn", self);
}

static char *cairn_bin;

/* Run cairn with args (NULL-terminated), stdout to out (NULL: /dev/null);
 * returns the wall time in ms, *cpu_ms (may be NULL) the child's user +
 * system time. A failing run is fatal. */
static double run_cairn(const char *const *args, const char *out, double *cpu_ms)
{
	const char *argv[16];
	size_t n = 0;
	argv[n++] = cairn_bin;
	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	char *errp = xasprintf("%s/cairn.stderr", work);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC,
					 0600);
	posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	uint64_t t0 = clock_mono_ns();
	int rc = posix_spawn(&pid, cairn_bin, &fa, NULL, (char *const *)argv, environ);
	if (rc != 0)
		die("cannot run %s: %s", cairn_bin, strerror(rc));
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0)
		die("wait4: %s", strerror(errno));
	double ms = ms_since(t0);
	if (cpu_ms)
		*cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			  (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	posix_spawn_file_actions_destroy(&fa);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char msg[1024] = "";
		FILE *f = fopen(errp, "r");
		if (f) {
			size_t k = fread(msg, 1, sizeof msg - 1, f);
			msg[k] = '\0';
			fclose(f);
		}
		struct buf cmd = BUF_INIT;
		for (size_t i = 0; argv[i]; i++)
			buf_printf(&cmd, "%s%s", i ? " " : "", argv[i]);
		die("'%s' failed (status %d): %s", cmd.p, status, msg);
	}
	free(errp);
	return ms;
}

/* One warm-up, then the median of opt.runs (wall; *cpu_ms the median CPU
 * time of the same runs). */
static double time_cairn(const char *const *args, double *cpu_ms)
{
	run_cairn(args, NULL, NULL);
	double v[64], c[64];
	for (int i = 0; i < opt.runs; i++)
		v[i] = run_cairn(args, NULL, &c[i]);
	*cpu_ms = median(c, (size_t)opt.runs);
	return median(v, (size_t)opt.runs);
}

static cJSON *parse_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		die("cannot read %s", path);
	struct buf b = BUF_INIT;
	char chunk[65536];
	size_t k;
	while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_add(&b, chunk, k);
	fclose(f);
	cJSON *v = cJSON_ParseWithLength(b.p ? b.p : "", b.len);
	buf_release(&b);
	return v;
}

/* Run once into a file and count the elements of the JSON array printed. */
static int json_count(const char *const *args, const char *what)
{
	char *out = xasprintf("%s/cairn.out", work);
	run_cairn(args, out, NULL);
	cJSON *v = parse_file(out);
	cJSON *hits = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "hits") : v;
	if (!cJSON_IsArray(hits))
		die("%s: output is neither a JSON array nor an object with \"hits\"", what);
	int n = cJSON_GetArraySize(hits);
	cJSON_Delete(v);
	free(out);
	return n;
}

/* ---- 1c. in-process pieces -------------------------------------------- */

static double proc_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Median wall ms of opt.runs runs of the body after one warm-up; the
 * median process CPU ms of the same runs goes to med_cpu. */
static double med_cpu;
#define TIME_MEDIAN(out, ...)                                                                      \
	do {                                                                                       \
		double v_[64], c_[64];                                                             \
		for (int r_ = -1; r_ < opt.runs; r_++) {                                           \
			double cs_ = proc_cpu_ms();                                                \
			uint64_t t_ = clock_mono_ns();                                             \
			__VA_ARGS__;                                                               \
			if (r_ >= 0) {                                                             \
				v_[r_] = ms_since(t_);                                             \
				c_[r_] = proc_cpu_ms() - cs_;                                      \
			}                                                                          \
		}                                                                                  \
		(out) = median(v_, (size_t)opt.runs);                                              \
		med_cpu = median(c_, (size_t)opt.runs);                                            \
	} while (0)

static void open_catalog(struct store **st, struct catalog **cat)
{
	struct cerr e;
	if (store_open(droot, false, st, &e) < 0 || catalog_open(*st, cat, &e) < 0)
		die_err("open the catalog", &e);
}

static size_t search_count(struct catalog *cat, const char *q)
{
	struct cat_hit *h;
	size_t n;
	struct cerr e;
	if (catalog_search(cat, q, 0, false, &h, &n, NULL, &e) < 0)
		die_err("catalog_search", &e);
	cat_hits_free(h, n);
	return n;
}

/* Diagnostics straight on index.db (read-only): the median ms of sql with
 * ?1 bound to q (NULL: nothing bound); *nrows gets the rows of a run. */
static double sql_ms(sqlite3 *db, const char *sql, const char *q, long long *nrows)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		die("prepare %s: %s", sql, sqlite3_errmsg(db));
	double ms;
	long long n = 0;
	TIME_MEDIAN(ms, {
		sqlite3_reset(st);
		if (q)
			sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
		n = 0;
		int rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			n++;
		if (rc != SQLITE_DONE)
			die("step %s: %s", sql, sqlite3_errmsg(db));
	});
	sqlite3_finalize(st);
	if (nrows)
		*nrows = n;
	return ms;
}


/* `cairn sessions --json`'s own path, in-process (sessions_json), written
 * to fd. */
static size_t list_json(struct catalog *cat, int fd)
{
	struct buf b = BUF_INIT;
	struct cerr e;
	if (sessions_json(cat, false, false, NULL, 0, &b, &e) < 0)
		die_err("sessions_json", &e);
	if (write(fd, b.p, b.len) != (ssize_t)b.len)
		die("write: %s", strerror(errno));
	size_t n = b.len;
	buf_release(&b);
	return n;
}

static void count_row(const struct cat_session *s, void *ctx)
{
	(*(size_t *)ctx)++;
}

/* Proposed fix, prototyped: the walk with one fstatat per session (the
 * store stats each log twice: has_log in each_session, then
 * collect_entry). Returns the sessions found. */
static size_t walk_one_stat(void)
{
	char *area = xasprintf("%s/%s", droot, STORE_SESSIONS);
	DIR *d = opendir(area);
	free(area);
	if (!d)
		die("opendir: %s", strerror(errno));
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		int kfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *kd = kfd < 0 ? NULL : fdopendir(kfd);
		if (!kd)
			continue;
		struct dirent *se;
		while ((se = readdir(kd))) {
			char path[512];
			struct stat sb;
			if (se->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s", se->d_name, LOG_FILE);
			if (fstatat(dirfd(kd), path, &sb, AT_SYMLINK_NOFOLLOW) == 0)
				n++;
		}
		closedir(kd);
	}
	closedir(d);
	return n;
}

static void bench_queries(void)
{
	fprintf(stderr, "[1] listing and search over %zu sessions\n", opt.sessions);
	struct dataset_info di;
	struct dataset_opts dopt = {opt.sessions, opt.turns, opt.regen, opt.rebuild_catalog, work};
	dataset_prepare(&dopt, &di);
	dataset = xstrdup(di.dir);
	droot = xstrdup(di.root);
	dataset_is_temp = di.is_temp;
	dataset_release(&di);
	char o[24], c[24], buf[64];
	snprintf(o, sizeof o, "%.1f s", di.gen_s);
	add_row(di.cached ? "generate the data set (cached)" : "generate the data set", o, "", 0,
		false, "(info)", "-");
	snprintf(o, sizeof o, "%.1f s", di.sync_s);
	snprintf(c, sizeof c, "%.0f MiB", (double)di.db_bytes / 1048576.0);
	add_row(!di.rebuilt ? "build index.db: catalog_sync (cached)"
						  : "build index.db: catalog_sync",
		o, c, 0, false, "(info)", "-");

	/* The binary. No other connection is open meanwhile, as when a user
	 * runs the command: each run opens index.db, finds its -wal/-shm
	 * gone, and deletes them again when it closes. */
	cairn_bin = cairn_path();
	if (access(cairn_bin, X_OK) != 0) {
		fprintf(stderr,
			"bench_catalog: %s is missing: build it first (make BUILD=... "
			"BUILD/cairn), or pass --cairn=PATH\n",
			cairn_bin);
		failures++;
	} else {
		const char *ver[] = {"--version", NULL};
		const char *ls[] = {"--data-dir", droot, "sessions", "--json", NULL};
		const char *rare[] = {"--data-dir", droot, "search", RARE_TERM, "--json", NULL};
		const char *common[] = {"--data-dir", droot, "search", COMMON_TERM, "--json", NULL};
		const char *cjk[] = {"--data-dir", droot, "search", CJK_TERM, "--json", NULL};
		const char *cjk2[] = {"--data-dir", droot, "search", CJK2_TERM, "--json", NULL};
		int n_ls = json_count(ls, "sessions --json");
		int n_rare = json_count(rare, "search rare");
		int n_common = json_count(common, "search common");
		int n_cjk = json_count(cjk, "search cjk");
		int n_cjk2 = json_count(cjk2, "search cjk2");
		int want_rare = (int)((opt.sessions + RARE_EVERY - 1 - 123) / RARE_EVERY);
		fprintf(stderr, "    sessions --json: %d; hits: %s %d, %s %d, %s %d\n", n_ls,
			RARE_TERM, n_rare, COMMON_TERM, n_common, CJK_TERM, n_cjk);
		if ((size_t)n_ls != opt.sessions) {
			fprintf(stderr, "bench_catalog: listed %d sessions, not %zu\n", n_ls, opt.sessions);
			failures++;
		}
		if (n_rare != want_rare) {
			fprintf(stderr, "bench_catalog: %d hits for %s, not %d\n", n_rare, RARE_TERM,
				want_rare);
			failures++;
		}
		double cpu[6];
		double t_ver = time_cairn(ver, &cpu[0]);
		double t_ls = time_cairn(ls, &cpu[1]);
		double t_rare = time_cairn(rare, &cpu[2]);
		double t_common = time_cairn(common, &cpu[3]);
		double t_cjk = time_cairn(cjk, &cpu[4]);
		double t_cjk2 = time_cairn(cjk2, &cpu[5]);
		snprintf(buf, sizeof buf, "cairn sessions --json (%d sessions)", n_ls);
		add_time_row(buf, t_ls, 50);
		add_info_ms("  same, CPU time of those runs (user+sys)", cpu[1], -1);
		snprintf(buf, sizeof buf, "cairn search %s --json (rare, %d hits)", RARE_TERM, n_rare);
		add_time_row(buf, t_rare, 50);
		add_info_ms("  same, CPU time", cpu[2], -1);
		snprintf(buf, sizeof buf, "cairn search %s --json (common, %d shown)", COMMON_TERM,
			 n_common);
		add_time_row(buf, t_common, 50);
		add_info_ms("  same, CPU time", cpu[3], -1);
		snprintf(buf, sizeof buf, "cairn search <CJK word> --json (%d shown)", n_cjk);
		add_time_row(buf, t_cjk, 50);
		add_info_ms("  same, CPU time", cpu[4], -1);
		snprintf(buf, sizeof buf, "cairn search <2-char CJK> --json (%d shown)", n_cjk2);
		add_time_row(buf, t_cjk2, 50);
		add_info_ms("  same, CPU time", cpu[5], -1);
		add_info_ms("process start-up (cairn --version)", t_ver, cpu[0]);
		/* A rebuild of index.db from every log (and a heal of every
		 * watermark): once, not a median, for it takes seconds; it
		 * builds the same catalog, so what follows sees what it saw. */
		const char *reidx[] = {"--data-dir", droot, "doctor", "--reindex", NULL};
		double re_cpu;
		double t_re = run_cairn(reidx, NULL, &re_cpu);
		snprintf(buf, sizeof buf, "cairn doctor --reindex (%d sessions), one run", n_ls);
		add_time_row(buf, t_re, 5000);
		add_info_ms("  same, CPU time", re_cpu, -1);
	}

	/* In-process pieces, each the median of opt.runs after a warm-up. */
	struct store *st;
	struct catalog *cat;
	struct cerr e;
	double t;
	TIME_MEDIAN(t, {
		open_catalog(&st, &cat);
		catalog_close(cat);
		store_close(st);
	});
	add_info_ms("catalog_open + catalog_close", t, med_cpu);
	open_catalog(&st, &cat);
	TIME_MEDIAN(t, {
		size_t changed;
		if (catalog_sync(cat, st, &changed, &e) < 0)
			die_err("catalog_sync", &e);
		if (changed)
			die("catalog_sync changed %zu sessions of an unchanged root", changed);
	});
	add_info_ms("catalog_sync, nothing changed", t, med_cpu);
	TIME_MEDIAN(t, {
		struct store_entry *ents;
		size_t n;
		if (store_list_entries(st, &ents, &n, &e) < 0)
			die_err("store_list_entries", &e);
		free(ents);
	});
	add_info_ms("  of which store_list_entries (2 stats/session)", t, med_cpu);
	size_t walked = 0;
	TIME_MEDIAN(t, walked = walk_one_stat());
	snprintf(buf, sizeof buf, "  proposed: walk with 1 stat/session (%zu)", walked);
	add_info_ms(buf, t, med_cpu);
	struct cat_session *v = NULL;
	size_t nv = 0;
	TIME_MEDIAN(t, {
		cat_sessions_free(v, nv);
		if (catalog_list(cat, false, false, NULL, 0, &v, &nv, &e) < 0)
			die_err("catalog_list", &e);
	});
	add_info_ms("catalog_list (all)", t, med_cpu);
	size_t json_bytes = 0;
	TIME_MEDIAN(t, {
		struct buf jb = BUF_INIT;
		buf_addc(&jb, '[');
		for (size_t i = 0; i < nv; i++) {
			if (i)
				buf_addc(&jb, ',');
			session_json(&jb, &v[i]);
		}
		buf_adds(&jb, "]\n");
		json_bytes = jb.len;
		buf_release(&jb);
	});
	snprintf(buf, sizeof buf, "--json: session_json into one buffer (%.1f MiB)",
		 (double)json_bytes / 1048576.0);
	add_info_ms(buf, t, med_cpu);
	cat_sessions_free(v, nv);
	size_t stepped = 0;
	TIME_MEDIAN(t, {
		stepped = 0;
		if (catalog_list_each(cat, false, false, NULL, 0, count_row, &stepped, &e) < 0)
			die_err("catalog_list_each", &e);
	});
	snprintf(buf, sizeof buf, "catalog_list_each, rows stepped, no copies (%zu)", stepped);
	add_info_ms(buf, t, med_cpu);
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	size_t streamed = 0;
	TIME_MEDIAN(t, streamed = list_json(cat, devnull));
	snprintf(buf, sizeof buf, "  sessions_json (the --json path), streamed (%.1f MiB)", (double)streamed / 1048576.0);
	add_info_ms(buf, t, med_cpu);
	if (cairn_bin && access(cairn_bin, X_OK) == 0) {
		/* In-process, the same path prints what `cairn sessions --json` prints. */
		char *pa = xasprintf("%s/inproc.json", work), *pb = xasprintf("%s/real.json", work);
		int fd = open(pa, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			die("open %s: %s", pa, strerror(errno));
		list_json(cat, fd);
		close(fd);
		const char *lsargs[] = {"--data-dir", droot, "sessions", "--json", NULL};
		run_cairn(lsargs, pb, NULL);
		cJSON *ja = parse_file(pa), *jb = parse_file(pb);
		if (!cJSON_Compare(ja, jb, true)) {
			fprintf(stderr, "bench_catalog: sessions_json differs from "
					"`cairn sessions --json`\n");
			failures++;
		}
		cJSON_Delete(ja);
		cJSON_Delete(jb);
		free(pa);
		free(pb);
	}
	close(devnull);
	size_t hits = 0;
	TIME_MEDIAN(t, hits = search_count(cat, RARE_TERM));
	snprintf(buf, sizeof buf, "catalog_search rare (%zu hits)", hits);
	add_info_ms(buf, t, med_cpu);
	TIME_MEDIAN(t, hits = search_count(cat, COMMON_TERM));
	snprintf(buf, sizeof buf, "catalog_search common (%zu hits)", hits);
	add_info_ms(buf, t, med_cpu);
	TIME_MEDIAN(t, hits = search_count(cat, CJK_TERM));
	snprintf(buf, sizeof buf, "catalog_search CJK (%zu hits)", hits);
	add_info_ms(buf, t, med_cpu);
	{
		/* The same while the last turn of 50 sessions is open: its text
		 * waits outside the word index, and a search also reads it
		 * (docs/catalog.md, "Open turns"). Marked in a transaction rolled
		 * back afterwards, which the searches run in. */
		struct cerr oe;
		if (catalog_begin(cat, &oe) < 0 ||
		    cat_exec(cat, "UPDATE docs SET indexed = 0 WHERE (session, turn) IN"
				  " (SELECT session, max(turn) FROM docs WHERE session IN"
				  " (SELECT id FROM sessions ORDER BY id LIMIT 50) GROUP BY session)", &oe) < 0)
			die_err("open turns", &oe);
		sqlite3_stmt *q = cat_prepare_once(cat, "SELECT count(*) FROM docs WHERE indexed = 0", &oe);
		long long open = q && sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
		cat_done(cat, q);
		TIME_MEDIAN(t, hits = search_count(cat, RARE_TERM));
		snprintf(buf, sizeof buf, "  with %lld open documents: rare (%zu hits)", open, hits);
		add_info_ms(buf, t, med_cpu);
		TIME_MEDIAN(t, hits = search_count(cat, COMMON_TERM));
		snprintf(buf, sizeof buf, "  with %lld open documents: common (%zu hits)", open, hits);
		add_info_ms(buf, t, med_cpu);
		TIME_MEDIAN(t, hits = search_count(cat, CJK_TERM));
		snprintf(buf, sizeof buf, "  with %lld open documents: CJK (%zu hits)", open, hits);
		add_info_ms(buf, t, med_cpu);
		catalog_rollback(cat);
	}
	catalog_close(cat);
	store_close(st);

	/* Where the time goes, query by query, on the same index.db. */
	char *dbp = xasprintf("%s/%s", droot, CATALOG_FILE);
	sqlite3 *db;
	if (sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		die("open %s", dbp);
	{
		struct cerr te;
		if (cat_register_tokenizer(db, &te) < 0) /* the index's own tokenizer */
			die_err("tokenizer", &te);
	}
	long long nr;
	long long docs = sql_int(db, "SELECT count(*) FROM docs", NULL);
	long long m_common =
		sql_int(db, "SELECT count(*) FROM fts_words WHERE fts_words MATCH ?1", "\"" COMMON_TERM "\"");
	long long m_rare =
		sql_int(db, "SELECT count(*) FROM fts_words WHERE fts_words MATCH ?1", "\"" RARE_TERM "\"");
	long long m_cjk =
		sql_int(db, "SELECT count(*) FROM fts_words WHERE fts_words MATCH ?1", "\"" CJK_TERM "\"");
	fprintf(stderr, "    %lld documents; matches: %s %lld, %s %lld, %s %lld\n", docs, RARE_TERM,
		m_rare, COMMON_TERM, m_common, CJK_TERM, m_cjk);
	const char *q = "\"" COMMON_TERM "\"";
	snprintf(buf, sizeof buf, "common: count the %lld matches (no rank)", m_common);
	t = sql_ms(db, "SELECT count(*) FROM fts_words WHERE fts_words MATCH ?1", q, &nr);
	add_info_ms(buf, t, med_cpu);
	t = sql_ms(db, "SELECT rowid FROM fts_words WHERE fts_words MATCH ?1 ORDER BY rank LIMIT 50", q,
		   &nr);
	add_info_ms("common: FTS only, ORDER BY rank (bm25) LIMIT 50", t, med_cpu);
	snprintf(buf, sizeof buf, "CJK: count the %lld matches (no rank)", m_cjk);
	t = sql_ms(db, "SELECT count(*) FROM fts_words WHERE fts_words MATCH ?1", "\"" CJK_TERM "\"", &nr);
	add_info_ms(buf, t, med_cpu);
	sqlite3_close(db);
	free(dbp);
}

/* One `cairn search --json QUERY` on the data set: its wall time (and CPU
 * time in *cpu_ms, may be NULL). */
static double search_once(const char *query, void *ctx, double *cpu_ms)
{
	(void)ctx;
	const char *args[] = {"--data-dir", droot, "search", "--json", "--", query, NULL};
	return run_cairn(args, NULL, cpu_ms);
}

/* ---- main ------------------------------------------------------------- */

int main(int argc, char **argv)
{
	bench_set_name("bench_catalog");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--sessions=", 11) == 0) {
			opt.sessions = (size_t)strtoull(a + 11, NULL, 10);
		} else if (strncmp(a, "--turns=", 8) == 0) {
			opt.turns = (unsigned)atoi(a + 8);
		} else if (strncmp(a, "--runs=", 7) == 0) {
			opt.runs = atoi(a + 7);
		} else if (strncmp(a, "--search-runs=", 14) == 0) {
			opt.search_runs = atoi(a + 14);
		} else if (strncmp(a, "--cairn=", 8) == 0) {
			opt.cairn = a + 8;
		} else if (strcmp(a, "--regen") == 0) {
			opt.regen = true;
		} else if (strcmp(a, "--rebuild-catalog") == 0) {
			opt.rebuild_catalog = true;
		} else if (strcmp(a, "--keep") == 0) {
			opt.keep = true;
		} else {
			fprintf(stderr, "usage: bench_catalog [--sessions=N] [--turns=N] [--runs=N] [--search-runs=N] "
					"[--cairn=PATH] [--regen] [--rebuild-catalog] [--keep]\n");
			return 2;
		}
	}
	if (opt.sessions < 200 || opt.turns < 1 || opt.turns > 1000 || opt.runs < 1 ||
	    opt.runs > 64 || opt.search_runs < 1)
		die("option out of range");

	umask(077);
	work = temp_dir();
	uint64_t t0 = clock_mono_ns();
	bench_queries();
	if (cairn_bin && access(cairn_bin, X_OK) == 0)
		bench_search_worst(search_once, NULL, opt.search_runs, 100);

	char machine[256];
	describe_machine(machine, sizeof machine, work);
	print_table("base/limit", 52, 7, 10);
	printf("(bench_catalog: %.0f s total; %s)\n", ms_since(t0) / 1e3, machine);

	if (dataset && dataset_is_temp && opt.keep)
		fprintf(stderr, "kept %s\n", dataset);
	temp_dir_done(work, opt.keep);
	free(work);
	free(dataset);
	free(droot);
	free(cairn_bin);
	return failures ? 1 : 0;
}
