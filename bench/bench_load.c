/* bench_load.c — the compact load (persist/load.c) against baselines
 * measured in the same run (issue 10, "Load and prepare"):
 *
 *   1. loading a 200,000-event log (bench_log's mix): load_fd vs the raw
 *      baseline — zstd-decompress every frame and keep a cJSON tree of
 *      every line — and the strict tree-building scan_fd beside it;
 *   2. the memory a load holds vs 1.2 x the decompressed JSON + 32 B/event;
 *   3. the last screenful (100 events) of a 1,000,000-event session with a
 *      mean of ~200 bytes per event, the file in the page cache: load_tail
 *      against a 100 ms limit (a full load_fd of the same file beside it).
 *
 * Loads alternate with their baselines, the order rotating per round, and
 * the figures are medians. Exit 0 whatever the ratios; non-zero only when
 * something fails (a log that does not read back as built).
 *
 * Options: --only=1|2|3 (repeatable; 2 runs with 1), --rounds=N (default
 * 9), --events=N (default 200000), --tail-events=N (default 1000000),
 * --keep. Temp dir under $BENCH_DIR, else $TMPDIR, else /tmp. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "bench/support_sessionlog.h"
#include "persist/fsops.h"
#include "persist/load.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct {
	bool only[4], any_only;
	int rounds;
	size_t events, tail_events;
	bool keep;
} opt = {.rounds = 9, .events = 200000, .tail_events = 1000000};

static struct store *st;
static const char *self; /* argv[0], to run a load in a fresh process */

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

/* Bytes malloc has handed out and not had back (heap and mmapped). */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static void row(const char *metric, const char *unit, double ours, double base, double ratio,
		const char *target, bool pass)
{
	const char *result = strcmp(target, "(info)") == 0 ? "-" : pass ? "PASS" : "MISS";
	char o[32], b[32];
	snprintf(o, sizeof o, "%.4g %s", ours, unit);
	snprintf(b, sizeof b, "%.4g %s", base, unit);
	add_row(metric, o, b, ratio, true, target, result);
}

static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	return fd;
}

static struct load *compact(const char *path)
{
	int fd = open_ro(path);
	struct load *l;
	struct cerr e;
	if (load_fd(fd, NULL, &l, &e) < 0)
		die_err("load_fd", &e);
	close(fd);
	return l;
}

static struct scan *strict(const char *path)
{
	int fd = open_ro(path);
	struct scan *s;
	struct cerr e;
	if (scan_fd(fd, &s, &e) < 0)
		die_err("scan_fd", &e);
	close(fd);
	return s;
}

static uint64_t size_of(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		die("stat %s: %s", path, strerror(errno));
	return (uint64_t)sb.st_size;
}

/* The CPU time (user + system) of one load in a fresh process: this
 * binary again with --child=WHICH:PATH, so neither side finds memory that
 * an earlier load freed (in one process the baseline's 2 million small
 * allocations reuse what the previous round freed, while a first load in
 * a viewer starts from nothing). */
static double child_cpu(const char *which, const char *path, size_t events)
{
	char arg[4096], ev[64];
	snprintf(arg, sizeof arg, "--child=%s:%s", which, path);
	snprintf(ev, sizeof ev, "--events=%zu", events);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		execl(self, self, ev, arg, (char *)NULL);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("child load %s failed", which);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* In the child: one load, checked. */
static int child(const char *spec)
{
	const char *path = strchr(spec, ':');
	if (!path)
		return 2;
	path++;
	if (strncmp(spec, "load:", 5) == 0) {
		struct load *l = compact(path);
		bool ok = load_count(l) == opt.events;
		load_free(l);
		return ok ? 0 : 1;
	}
	struct raw_load rl;
	bool ok = raw_load(path, opt.events, true, &rl) == opt.events;
	raw_free(&rl);
	return ok ? 0 : 1;
}

/* ---- 1 and 2. a 200,000-event log -------------------------------------- */

static void bench_full(void)
{
	size_t target = opt.events;
	fprintf(stderr, "[1] loading a %zu-event log: load_fd vs raw zstd + cJSON kept\n", target);
	uint64_t t0 = clock_mono_ns();
	char *path = sessionlog_build(st, "/home/dev/project", target, gen_turn, NULL, NULL);
	uint64_t len = size_of(path);

	/* Validate once (and warm the page cache). */
	struct load *l = compact(path);
	const struct scan *ls = load_scan(l);
	if (ls->status != SCAN_OK || load_count(l) != target)
		die("built log: status %s, %zu events", scan_status_name(ls->status), load_count(l));
	size_t json = 0, frames = load_n_frames(l);
	for (size_t k = 0; k < frames; k++)
		json += load_frame(l, k)->content_len;
	load_free(l);
	struct raw_load rl;
	if (raw_load(path, target, true, &rl) != target || rl.content_bytes != json)
		die("baseline read a different log");
	raw_free(&rl);
	scan_free(strict(path));
	fprintf(stderr, "    built %zu events in %zu frames, %.1f MiB on disk, %.1f MiB of JSON (%.1f s)\n",
		target, frames, (double)len / 1048576.0, (double)json / 1048576.0,
		secs(clock_mono_ns() - t0));

	int R = opt.rounds;
	double ours[64], base[64], scan[64], ratio[64], sratio[64], co[64], cb[64], cratio[64];
	size_t mem_ours = 0, mem_counted = 0, mem_base = 0;
	for (int r = 0; r < R; r++) {
		for (int side = 0; side < 3; side++) {
			int which = (side + r) % 3;
			size_t h0 = heap_in_use();
			uint64_t a = clock_mono_ns(), c = cpu_ns();
			if (which == 0) {
				l = compact(path);
				ours[r] = secs(clock_mono_ns() - a);
				co[r] = secs(cpu_ns() - c);
				mem_ours = heap_in_use() - h0;
				mem_counted = load_memory(l);
				load_free(l);
			} else if (which == 1) {
				raw_load(path, target, true, &rl);
				base[r] = secs(clock_mono_ns() - a);
				cb[r] = secs(cpu_ns() - c);
				mem_base = heap_in_use() - h0;
				raw_free(&rl);
			} else {
				struct scan *s = strict(path);
				scan[r] = secs(clock_mono_ns() - a);
				scan_free(s);
			}
		}
		ratio[r] = base[r] / ours[r];
		sratio[r] = base[r] / scan[r];
		cratio[r] = cb[r] / co[r];
		fprintf(stderr,
			"    round %d: load %.3f s (cpu %.3f), baseline %.3f s (cpu %.3f), scan %.3f s; "
			"ratio %.3f (cpu %.3f), scan %.3f\n",
			r + 1, ours[r], co[r], base[r], cb[r], scan[r], ratio[r], cratio[r], sratio[r]);
	}
	size_t nr = (size_t)R;
	double rt = median(ratio, nr);
	char *metric = xasprintf("load %zu-event log (load_fd), %.0f MiB", target,
				 (double)len / 1048576.0);
	row(metric, "s", median(ours, nr), median(base, nr), rt, ">= 1.00", rt >= 1.0);
	free(metric);
	double rc = median(cratio, nr);
	row("  same, thread CPU time instead of wall", "s", median(co, nr), median(cb, nr), rc,
	    "(info)", true);
	double rs = median(sratio, nr);
	row("  strict scan_fd (a tree per event kept)", "s", median(scan, nr), median(base, nr), rs,
	    "(info)", true);
	double fo[64], fb[64], fr[64];
	for (int r = 0; r < R; r++) {
		bool ours_first = r % 2 == 0;
		double x = child_cpu(ours_first ? "load" : "raw", path, target);
		double y = child_cpu(ours_first ? "raw" : "load", path, target);
		fo[r] = ours_first ? x : y;
		fb[r] = ours_first ? y : x;
		fr[r] = fb[r] / fo[r];
		fprintf(stderr, "    fresh process %d: load cpu %.3f s, baseline cpu %.3f s, ratio %.3f\n",
			r + 1, fo[r], fb[r], fr[r]);
	}
	double rf = median(fr, nr);
	row("  same, CPU time, first load in a new process", "s", median(fo, nr),
	    median(fb, nr), rf, "(info)", true);

	/* 2. What the load holds once it returned (the file buffer it read is
	 * freed by then), by malloc's count; the limit is 1.2 x the JSON plus
	 * 32 bytes per event. */
	double limit = 1.2 * (double)json + 32.0 * (double)target;
	fprintf(stderr, "[2] memory: load %.1f MiB by malloc (%.1f MiB by its own count), JSON %.1f MiB, "
			"raw baseline %.1f MiB\n",
		(double)mem_ours / 1048576.0, (double)mem_counted / 1048576.0,
		(double)json / 1048576.0, (double)mem_base / 1048576.0);
	row("memory of that load vs 1.2 x JSON + 32 B/event", "MiB", (double)mem_ours / 1048576.0,
	    limit / 1048576.0, (double)mem_ours / limit, "<= 1.00", (double)mem_ours <= limit);
	row("  raw baseline's memory (trees kept)", "MiB", (double)mem_base / 1048576.0,
	    limit / 1048576.0, (double)mem_base / limit, "(info)", true);
	free(path);
}

/* ---- 3. the last screenful of a 1,000,000-event session --------------- */

static void bench_tail(void)
{
	size_t target = opt.tail_events, screen = 100;
	fprintf(stderr, "[3] the last %zu events of a %zu-event session: load_tail\n", screen, target);
	uint64_t t0 = clock_mono_ns();
	char *path = sessionlog_build(st, "/home/dev/project", target, gen_small_turn, NULL, NULL);
	uint64_t len = size_of(path);
	struct load *full = compact(path); /* validates, warms the page cache */
	if (load_scan(full)->status != SCAN_OK || load_count(full) != target)
		die("built log: status %s, %zu events", scan_status_name(load_scan(full)->status),
		    load_count(full));
	size_t json = 0;
	for (size_t k = 0; k < load_n_frames(full); k++)
		json += load_frame(full, k)->content_len;
	fprintf(stderr, "    built %zu events in %zu frames, %.1f MiB on disk, %.0f bytes/event (%.1f s)\n",
		target, load_n_frames(full), (double)len / 1048576.0, (double)json / (double)target,
		secs(clock_mono_ns() - t0));

	int R = opt.rounds * 3;
	double tail[192], whole[64];
	int fd = open_ro(path);
	for (int r = 0; r < R; r++) {
		uint64_t a = clock_mono_ns();
		struct load *t;
		struct cerr e;
		if (load_tail(fd, screen, NULL, &t, &e) < 0)
			die_err("load_tail", &e);
		tail[r] = ms_since(a);
		size_t k = load_count(t), n = load_count(full);
		if (load_scan(t)->status != SCAN_OK || k < screen || k >= n ||
		    load_event(t, k - 1)->seq != load_event(full, n - 1)->seq ||
		    load_event(t, 0)->seq != load_event(full, n - k)->seq)
			die("load_tail read something else than the end of the log");
		load_free(t);
	}
	for (int r = 0; r < opt.rounds; r++) {
		uint64_t a = clock_mono_ns();
		load_free(compact(path));
		whole[r] = ms_since(a);
	}
	close(fd);
	load_free(full);
	double mt = median(tail, (size_t)R), mw = median(whole, (size_t)opt.rounds);
	double mx = 0;
	for (int r = 0; r < R; r++)
		mx = tail[r] > mx ? tail[r] : mx;
	fprintf(stderr, "    load_tail median %.3f ms (max %.3f), full load %.0f ms\n", mt, mx, mw);
	char *metric = xasprintf("last %zu of %zuk events (load_tail), %.0f MiB", screen,
				 target / 1000, (double)len / 1048576.0);
	add_time_row(metric, mt, 100.0);
	free(metric);
	row("  full load_fd of the same file", "ms", mw, 100.0, mw / 100.0, "(info)", true);
	free(path);
}

static bool want(int i)
{
	return !opt.any_only || opt.only[i];
}

int main(int argc, char **argv)
{
	bench_set_name("bench_load");
	self = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--child=", 8) == 0)
			return child(a + 8);
		if (strncmp(a, "--only=", 7) == 0 && a[7] >= '1' && a[7] <= '3' && !a[8]) {
			opt.only[a[7] - '0'] = opt.any_only = true;
		} else if (strncmp(a, "--rounds=", 9) == 0) {
			opt.rounds = atoi(a + 9);
		} else if (strncmp(a, "--events=", 9) == 0) {
			opt.events = (size_t)strtoull(a + 9, NULL, 10);
		} else if (strncmp(a, "--tail-events=", 14) == 0) {
			opt.tail_events = (size_t)strtoull(a + 14, NULL, 10);
		} else if (strcmp(a, "--keep") == 0) {
			opt.keep = true;
		} else {
			fprintf(stderr, "usage: bench_load [--only=1|2|3]... [--rounds=N] [--events=N] "
					"[--tail-events=N] [--keep]\n");
			return 2;
		}
	}
	if (opt.rounds < 1 || opt.rounds > 64 || opt.events < 2 || opt.tail_events < 1000)
		die("option out of range");
	umask(077);
	char *root = temp_dir();
	struct cerr e;
	if (store_open(root, true, &st, &e) < 0)
		die_err("store_open", &e);
	uint64_t t0 = clock_mono_ns();
	if (want(1) || want(2))
		bench_full();
	if (want(3))
		bench_tail();
	print_table("baseline", 48, 8, 8);
	printf("(bench_load: %.0f s total)\n", secs(clock_mono_ns() - t0));
	store_close(st);
	temp_dir_done(root, opt.keep);
	free(root);
	return 0;
}
