/* bench_log.c — the log store against raw baselines measured in the same run
 * on the same disk (issue 2, "Tests and measurements"):
 *
 *   1. durable appends/s through log_append (one ~300-byte event per batch)
 *      vs raw 512-byte O_APPEND write + fdatasync to a growing file;
 *   2. time of one append to a 50 MiB log vs one to an almost empty log;
 *   3. scan_fd of a 200,000-event log vs raw ZSTD_decompressDCtx of every
 *      frame + cJSON_ParseWithLength of every line of the same bytes.
 *
 * The machine is noisy, so ours and the baseline always alternate (test 1
 * in short blocks inside each round, test 2 append by append, test 3 load
 * by load with the order rotated) and every figure is a median. Exit 0
 * whatever the ratios (the bench is informational); non-zero only when
 * something fails.
 *
 * Options (for profiling smaller runs): --only=1|2|3 (repeatable),
 * --rounds=N, --events=N (test 3), --big-mib=N (test 2), --appends=N
 * (test 2), --keep (leave the temp dir). Temp dir under $BENCH_DIR, else
 * $TMPDIR, else /tmp. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "bench/support_sessionlog.h"
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* ---- options and small helpers ---------------------------------------- */

static struct {
	bool only[4];
	bool any_only;
	int rounds;
	size_t events;
	unsigned big_mib;
	int appends;
	bool keep;
} opt = {.rounds = 9, .events = 200000, .big_mib = 50, .appends = 200};

static char *root;
static struct store *st;

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static uint64_t file_size(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		die("stat %s: %s", path, strerror(errno));
	return (uint64_t)sb.st_size;
}

static struct log *new_log(const char *cwd)
{
	struct log *lg;
	struct cerr e;
	if (log_create(st, NULL, cwd, NULL, &lg, &e) < 0)
		die_err("log_create", &e);
	return lg;
}

static struct log *reopen(struct log *lg)
{
	char id[SESSION_ID_MAX + 1];
	snprintf(id, sizeof id, "%s", log_id(lg));
	log_close(lg);
	struct cerr e;
	if (log_open(st, id, &lg, &e) < 0)
		die_err("log_open", &e);
	return lg;
}

/* The small durable batch of tests 1 and 2: one assistant/text event whose
 * line is about 300 bytes. */
static cJSON *small_data;
static struct log_event small_ev;

static void small_event_init(void)
{
	struct buf b = BUF_INIT;
	gen_text(&b, 200);
	small_data = cJSON_CreateObject();
	cJSON_AddStringToObject(small_data, "text", b.p);
	buf_release(&b);
	small_ev = (struct log_event){.type = "assistant/text",
				      .turn = "01J9ZB3N4Q8X6V2K7M5R1T0WYA",
				      .data = small_data};
}

/* ---- results table ---------------------------------------------------- */

struct row {
	const char *metric, *unit;
	double ours, base, ratio;
	const char *target;
	bool pass;
};

/* A row of the table (support_bench.h), echoed to stderr in this bench's
 * own words: ours and the baseline in r.unit, PASS or MISS against the
 * target ("-" for "(info)"). */
static void add_result(struct row r)
{
	const char *result = strcmp(r.target, "(info)") == 0 ? "-" : r.pass ? "PASS" : "MISS";
	fprintf(stderr, "  -> %s: ours %.4g %s, baseline %.4g %s, ratio %.3f (%s) %s\n", r.metric,
		r.ours, r.unit, r.base, r.unit, r.ratio, r.target, result);
	char o[32], b[32];
	snprintf(o, sizeof o, "%.4g %s", r.ours, r.unit);
	snprintf(b, sizeof b, "%.4g %s", r.base, r.unit);
	table_add(r.metric, o, b, r.ratio, true, r.target, result);
}

/* ---- 1. durable appends per second ------------------------------------ */

static void baseline_append(int fd, const char *block, size_t n)
{
	if (write(fd, block, n) != (ssize_t)n || fdatasync(fd) < 0)
		die("baseline write: %s", strerror(errno));
}

static void bench_append_rate(void)
{
	fprintf(stderr, "[1] durable appends/s: log_append vs 512 B O_APPEND + fdatasync\n");
	struct log *lg = new_log("/bench/rate");
	append_or_die(lg, &small_ev, 1); /* first publication: not timed */
	char *bpath = xasprintf("%s/baseline-append.dat", root);
	int bfd = open(bpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (bfd < 0)
		die("open %s: %s", bpath, strerror(errno));
	char block[512];
	memset(block, 'x', sizeof block);
	block[sizeof block - 1] = '\n';

	/* Calibrate: about 0.5 s per side per round. Within a round the two
	 * sides alternate in 10 short blocks, so a burst of disk contention
	 * from elsewhere hits both alike. */
	uint64_t t0 = clock_mono_ns();
	for (int i = 0; i < 30; i++)
		baseline_append(bfd, block, sizeof block);
	double per = secs(clock_mono_ns() - t0) / 30;
	int blocks = 10;
	int per_block = (int)(0.05 / (per > 1e-6 ? per : 1e-6));
	if (per_block < 2)
		per_block = 2;
	if (per_block > 500)
		per_block = 500;

	double ours[64], base[64], ratio[64];
	int R = opt.rounds;
	for (int r = 0; r < R; r++) {
		uint64_t t_ours = 0, t_base = 0;
		for (int b = 0; b < blocks; b++) {
			for (int side = 0; side < 2; side++) {
				bool do_ours = (side == 0) == ((r + b) % 2 == 0);
				uint64_t t = clock_mono_ns();
				for (int i = 0; i < per_block; i++) {
					if (do_ours)
						append_or_die(lg, &small_ev, 1);
					else
						baseline_append(bfd, block, sizeof block);
				}
				t = clock_mono_ns() - t;
				if (do_ours)
					t_ours += t;
				else
					t_base += t;
			}
		}
		int n = blocks * per_block;
		ours[r] = n / secs(t_ours);
		base[r] = n / secs(t_base);
		ratio[r] = ours[r] / base[r];
		fprintf(stderr, "    round %d: %d ops each, ours %.0f/s, baseline %.0f/s, ratio %.3f\n",
			r + 1, n, ours[r], base[r], ratio[r]);
		/* Re-aim the next round at ~0.5 s per side from what this one saw. */
		per = secs(t_base) / n;
		per_block = (int)(0.05 / (per > 1e-6 ? per : 1e-6));
		per_block = per_block < 2 ? 2 : per_block > 500 ? 500 : per_block;
	}
	double rt = median(ratio, (size_t)R);
	add_result((struct row){"durable appends/s (1 event ~300 B)", "/s",
				median(ours, (size_t)R), median(base, (size_t)R), rt, ">= 0.80",
				rt >= 0.8});
	close(bfd);
	free(bpath);
	log_close(lg);
}

/* ---- 2. append latency on a 50 MiB log vs an almost empty one -------- */

static void bench_big_append(void)
{
	fprintf(stderr, "[2] one append to a %u MiB log vs one to an almost empty log\n",
		opt.big_mib);
	/* Big log: batches of 8 events of 768 KiB of random base64 each (6 bits
	 * per byte: zstd keeps about 3/4 of it), so ~4.5 MiB per frame. */
	const size_t per_event = 768 * 1024, per_batch = 8;
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *blob = xmalloc(per_event + 1);
	struct log *big = new_log("/bench/big");
	uint64_t want = (uint64_t)opt.big_mib * 1024 * 1024;
	uint64_t t0 = clock_mono_ns();
	size_t batches = 0;
	for (;;) {
		struct log_event evs[8];
		cJSON *data[8];
		for (size_t i = 0; i < per_batch; i++) {
			for (size_t k = 0; k < per_event; k += 8) {
				uint64_t x = rnd();
				for (size_t j = 0; j < 8 && k + j < per_event; j++, x >>= 6)
					blob[k + j] = b64[x & 63];
			}
			blob[per_event] = '\0';
			data[i] = cJSON_CreateObject();
			cJSON_AddStringToObject(data[i], "text", blob);
			evs[i] = (struct log_event){.type = "assistant/text", .turn = "bulk", .data = data[i]};
		}
		append_or_die(big, evs, per_batch);
		for (size_t i = 0; i < per_batch; i++)
			cJSON_Delete(data[i]);
		batches++;
		if (file_size(log_path(big)) >= want)
			break;
	}
	free(blob);
	struct log *small = new_log("/bench/small");
	append_or_die(small, &small_ev, 1);
	/* Reopen both so the append cursor comes from a real read of the file. */
	big = reopen(big);
	small = reopen(small);
	uint64_t big_len = file_size(log_path(big));
	fprintf(stderr, "    built %.1f MiB in %zu batches (%.1f s); %llu-byte small log\n",
		(double)big_len / 1048576.0, batches, secs(clock_mono_ns() - t0),
		(unsigned long long)file_size(log_path(small)));

	/* Warm-up, then alternate: big, small, small, big, ... */
	for (int i = 0; i < 5; i++) {
		append_or_die(big, &small_ev, 1);
		append_or_die(small, &small_ev, 1);
	}
	int n = opt.appends;
	double *tb = xmalloc((size_t)n * sizeof *tb), *ts = xmalloc((size_t)n * sizeof *ts);
	for (int i = 0; i < n; i++) {
		for (int side = 0; side < 2; side++) {
			bool do_big = (side == 0) == (i % 2 == 0);
			struct log *lg = do_big ? big : small;
			uint64_t s = clock_mono_ns();
			append_or_die(lg, &small_ev, 1);
			double us = (double)(clock_mono_ns() - s) / 1e3;
			if (do_big)
				tb[i] = us;
			else
				ts[i] = us;
		}
	}
	double mb = median(tb, (size_t)n), ms = median(ts, (size_t)n), rt = mb / ms;
	fprintf(stderr, "    %d appends each: median big %.1f us, small %.1f us\n", n, mb, ms);
	char *metric = xasprintf("one append, %.0f MiB log vs empty (median)",
				 (double)big_len / 1048576.0);
	add_result((struct row){metric, "us", mb, ms, rt, "<= 1.20", rt <= 1.2});
	free(metric);
	free(tb);
	free(ts);
	log_close(big);
	log_close(small);
}

/* ---- 3. loading a 200,000-event log ------------------------------------ */

static struct scan *our_load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	struct scan *s;
	struct cerr e;
	if (scan_fd(fd, &s, &e) < 0)
		die_err("scan_fd", &e);
	close(fd);
	return s;
}

static void bench_load(void)
{
	size_t target = opt.events;
	fprintf(stderr, "[3] loading a %zu-event log: scan_fd vs raw zstd + cJSON\n", target);
	/* Build it through log_append; syncs are skipped while building (the
	 * store's fsops table), one real fsync at the end. */
	const struct fsops *saved = fsops;
	fsops = fsops_nosync();
	struct batcher bt = {.lg = new_log("/home/dev/project"), .total = 1, .target = target};
	struct buf tmp = BUF_INIT;
	uint64_t t0 = clock_mono_ns();
	for (unsigned t = 1; !bt.done; t++)
		gen_turn(&bt, t, &tmp);
	fsops = saved;
	buf_release(&tmp);
	char *path = xstrdup(log_path(bt.lg));
	log_close(bt.lg);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		die("fsync %s: %s", path, strerror(errno));
	close(fd);
	uint64_t len = file_size(path);

	/* Validate once (and warm the page cache). */
	struct scan *s = our_load(path);
	if (s->status != SCAN_OK || s->n_events != target)
		die("built log: status %s, %zu events", scan_status_name(s->status), s->n_events);
	size_t frames = s->n_frames;
	scan_free(s);
	struct raw_load rl;
	if (raw_load(path, target, true, &rl) != target)
		die("baseline parsed a different number of lines");
	raw_free(&rl);
	fprintf(stderr,
		"    built %zu events in %zu frames, %.1f MiB on disk, %.1f MiB of JSON lines "
		"(%.1f s)\n",
		target, frames, (double)len / 1048576.0, (double)rl.content_bytes / 1048576.0,
		secs(clock_mono_ns() - t0));

	/* Rounds rotate the order of the three loads; wall time is the figure,
	 * thread CPU time a cross-check that the scheduler's noise (other
	 * processes on the same cores) leaves out. */
	int R = opt.rounds;
	double ours[64], base[64], lite[64], ratio[64], cpu_o[64], cpu_b[64], cpu_ratio[64];
	for (int r = 0; r < R; r++) {
		for (int side = 0; side < 3; side++) {
			int which = (side + r) % 3;
			uint64_t a = clock_mono_ns(), c = cpu_ns();
			if (which == 0) {
				s = our_load(path);
				ours[r] = secs(clock_mono_ns() - a);
				cpu_o[r] = secs(cpu_ns() - c);
				scan_free(s);
			} else if (which == 1) {
				raw_load(path, target, true, &rl);
				base[r] = secs(clock_mono_ns() - a);
				cpu_b[r] = secs(cpu_ns() - c);
				raw_free(&rl);
			} else {
				raw_load(path, target, false, &rl);
				lite[r] = secs(clock_mono_ns() - a);
			}
		}
		ratio[r] = base[r] / ours[r];
		cpu_ratio[r] = cpu_b[r] / cpu_o[r];
		fprintf(stderr,
			"    round %d: ours %.3f s (cpu %.3f), baseline %.3f s (cpu %.3f), "
			"parse-and-free %.3f s, ratio %.3f (cpu %.3f)\n",
			r + 1, ours[r], cpu_o[r], base[r], cpu_b[r], lite[r], ratio[r], cpu_ratio[r]);
	}
	size_t nr = (size_t)R;
	double rt = median(ratio, nr), mo = median(ours, nr), mb = median(base, nr);
	double ml = median(lite, nr);
	for (int r = 0; r < R; r++)
		lite[r] = lite[r] / ours[r];
	double rl_ratio = median(lite, nr);
	char *metric = xasprintf("load %zu-event log (scan_fd), %.0f MiB", target,
				 (double)len / 1048576.0);
	add_result((struct row){metric, "s", mo, mb, rt, ">= 0.70", rt >= 0.7});
	free(metric);
	double rc = median(cpu_ratio, nr);
	add_result((struct row){"  same, thread CPU time instead of wall", "s",
				median(cpu_o, nr), median(cpu_b, nr), rc, "(info)", rc >= 0.7});
	add_result((struct row){"  same, baseline frees each tree at once", "s", mo, ml,
				rl_ratio, "(info)", rl_ratio >= 0.7});
	free(path);
}

/* ---- main ------------------------------------------------------------- */

static bool want(int i)
{
	return !opt.any_only || opt.only[i];
}

int main(int argc, char **argv)
{
	bench_set_name("bench_log");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--only=", 7) == 0 && a[7] >= '1' && a[7] <= '3' && !a[8]) {
			opt.only[a[7] - '0'] = true;
			opt.any_only = true;
		} else if (strncmp(a, "--rounds=", 9) == 0) {
			opt.rounds = atoi(a + 9);
		} else if (strncmp(a, "--events=", 9) == 0) {
			opt.events = (size_t)strtoull(a + 9, NULL, 10);
		} else if (strncmp(a, "--big-mib=", 10) == 0) {
			opt.big_mib = (unsigned)atoi(a + 10);
		} else if (strncmp(a, "--appends=", 10) == 0) {
			opt.appends = atoi(a + 10);
		} else if (strcmp(a, "--keep") == 0) {
			opt.keep = true;
		} else {
			fprintf(stderr,
				"usage: bench_log [--only=1|2|3]... [--rounds=N] [--events=N] "
				"[--big-mib=N] [--appends=N] [--keep]\n");
			return 2;
		}
	}
	if (opt.rounds < 1 || opt.rounds > 64 || opt.events < 2 || opt.big_mib < 1 ||
	    opt.appends < 1)
		die("option out of range");

	umask(077);
	root = temp_dir();
	struct cerr e;
	if (store_open(root, true, &st, &e) < 0)
		die_err("store_open", &e);
	small_event_init();
	uint64_t t0 = clock_mono_ns();
	if (want(1))
		bench_append_rate();
	if (want(2))
		bench_big_append();
	if (want(3))
		bench_load();

	print_table("baseline", 44, 8, 8);
	printf("(bench_log: %.0f s total; temp dir on the same file system as $BENCH_DIR or /tmp)\n",
	       secs(clock_mono_ns() - t0));

	store_close(st);
	cJSON_Delete(small_data);
	temp_dir_done(root, opt.keep);
	free(root);
	return 0;
}
