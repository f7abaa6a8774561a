/* bench_bigturn.c — one headless turn whose answer is very long (52 MiB by
 * default) and streamed flat out, `cairn -p` against the Chat Completions
 * server thread (bench/support_chatsrv.c, 16 KiB of text per chunk), beside
 *
 *   aux/baseline_turn  libcurl + cJSON reading the same stream, writing
 *                      the text to a file (bench/baseline_turn.c)
 *
 * in the same run. cairn saves every batch of the answer (log, catalog,
 * search documents), so the wall and peak RSS of a run show what saving
 * costs against a reader that keeps nothing; then a second cairn run gets
 * SIGTERM once an eighth of the answer is on its stdout, and the time to
 * its exit (11: canceled, what arrived saved) is measured.
 *
 * Targets (issue 21): saved, exit 0, in <= 20 s wall on 2 cores; peak RSS
 * <= 256 MiB; SIGTERM at any moment exits 11 within 2 s.
 *
 * Options: --mib=N (the answer's size, default 52), --rounds=N (runs of
 * each, default 1; the median is reported), --keep (keep the temp dir). */
#include "bench/support_bench.h"
#include "bench/support_turn.h"
#include "base/clock.h"
#include "base/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct turnb tb;
static const char prompt[] = "write a very long answer";

static double ms_between(uint64_t a, uint64_t b)
{
	return (double)(b - a) / 1e6;
}

static void run_baseline(const struct buf *text, struct run *r)
{
	char *bin = xasprintf("%s/baseline_turn", tb.aux_dir);
	const char *argv[] = {bin, tb.base_url, prompt, NULL};
	const char *env[] = {"PATH=/usr/bin:/bin", NULL};
	int st = turnb_spawn(&tb, argv, env, r);
	struct stat sb;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || stat(tb.out_path, &sb) < 0 ||
	    (size_t)sb.st_size != text->len)
		die("baseline_turn: status %d, or not the %zu bytes sent", st, text->len);
	free(bin);
}

static void run_cairn(const struct buf *text, struct run *r)
{
	const char *args[] = {"-p", prompt, NULL};
	struct buf err = BUF_INIT;
	int st = turnb_cairn(&tb, args, false, r, NULL, &err);
	struct stat sb;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || stat(tb.out_path, &sb) < 0 ||
	    (size_t)sb.st_size < text->len)
		die("cairn -p: status %d, or less than the %zu bytes sent; stderr: %s", st, text->len,
		    err.p ? err.p : "");
	buf_release(&err);
}

/* cairn -p, SIGTERM once `after` bytes are on its stdout: the ms from the
 * signal to its exit, and its exit code in *code. */
static double run_sigterm(size_t after, int *code)
{
	char *own[] = {xasprintf("HOME=%s/home", tb.root),
		       xasprintf("XDG_CONFIG_HOME=%s/config", tb.root),
		       xasprintf("OPENAI_BASE_URL=%s", tb.base_url)};
	const char *env[] = {own[0], own[1], own[2], "PATH=/usr/bin:/bin", NULL};
	const char *argv[] = {tb.cairn_bin, "--data-dir", tb.data_dir, "-p", prompt, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, tb.out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, tb.err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int e = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, (char *const *)env);
	posix_spawn_file_actions_destroy(&fa);
	if (e != 0)
		die("cannot run cairn: %s", strerror(e));
	struct timespec tick = {0, 1000000};
	uint64_t start = clock_mono_ns();
	int status = 0;
	for (;;) { /* up to 120 s for the answer to be under way */
		struct stat sb;
		if (stat(tb.out_path, &sb) == 0 && (size_t)sb.st_size >= after)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid)
			die("cairn ended before SIGTERM (status %d)", status);
		if (ms_between(start, clock_mono_ns()) > 120000)
			die("cairn printed less than %zu bytes in 120 s", after);
		nanosleep(&tick, NULL);
	}
	uint64_t t0 = clock_mono_ns();
	kill(pid, SIGTERM);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			die("waitpid: %s", strerror(errno));
		if (ms_between(t0, clock_mono_ns()) > 120000) {
			kill(pid, SIGKILL);
			die("cairn still running 120 s after SIGTERM");
		}
		nanosleep(&tick, NULL);
	}
	double ms = ms_between(t0, clock_mono_ns());
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		free(own[i]);
	return ms;
}

int main(int argc, char **argv)
{
	bench_set_name("bench_bigturn");
	int rounds = 1;
	long mib = 52;
	bool keep = false;
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--rounds=", 9) == 0)
			rounds = atoi(argv[i] + 9);
		else if (strncmp(argv[i], "--mib=", 6) == 0)
			mib = atol(argv[i] + 6);
		else if (strcmp(argv[i], "--keep") == 0)
			keep = true;
	}
	if (rounds < 1 || rounds > 100 || mib < 1 || mib > 4096)
		die("option out of range");
	turnb_start(&tb, "bench_bigturn");
	struct buf body = BUF_INIT, text = BUF_INIT;
	chatsrv_render_long(&body, &text, (size_t)mib << 20, 16384);
	chatsrv_set_reply(tb.srv, &body);
	fprintf(stderr, "answer: %zu bytes of text, %zu bytes streamed\n", text.len, body.len);

	double *ow = xcalloc((size_t)rounds, sizeof *ow), *oc = xcalloc((size_t)rounds, sizeof *oc);
	double *orss = xcalloc((size_t)rounds, sizeof *orss), *bw = xcalloc((size_t)rounds, sizeof *bw);
	double *brss = xcalloc((size_t)rounds, sizeof *brss), *term = xcalloc((size_t)rounds, sizeof *term);
	int codes_ok = 0;
	for (int r = 0; r < rounds; r++) {
		struct run o, b;
		run_baseline(&text, &b);
		run_cairn(&text, &o);
		int code = -1;
		term[r] = run_sigterm(text.len / 8, &code);
		codes_ok += code == 11;
		ow[r] = o.wall_ms, oc[r] = o.cpu_ms, orss[r] = (double)o.rss_kb;
		bw[r] = b.wall_ms, brss[r] = (double)b.rss_kb;
		fprintf(stderr, "  round %d: cairn wall %.0f ms cpu %.0f ms rss %ld KiB; baseline wall"
				" %.0f ms rss %ld KiB; SIGTERM -> exit %d in %.0f ms\n", r + 1, o.wall_ms,
			o.cpu_ms, o.rss_kb, b.wall_ms, b.rss_kb, code, term[r]);
	}
	double w = median(ow, (size_t)rounds), c = median(oc, (size_t)rounds);
	double rss = median(orss, (size_t)rounds), bwm = median(bw, (size_t)rounds);
	double brm = median(brss, (size_t)rounds), t = median(term, (size_t)rounds);
	char metric[96], o[32], ref[32], target[32];
	snprintf(metric, sizeof metric, "%ld MiB answer saved: wall", mib);
	fmt_ms(o, sizeof o, w);
	fmt_ms(ref, sizeof ref, bwm);
	add_row(metric, o, ref, w / bwm, true, "<= 20 s", w <= 20000 ? "PASS" : "MISS");
	add_info_ms("  its CPU time (user + sys)", c, -1);
	snprintf(metric, sizeof metric, "%ld MiB answer saved: peak RSS", mib);
	snprintf(o, sizeof o, "%.1f MiB", rss / 1024);
	snprintf(ref, sizeof ref, "%.1f MiB", brm / 1024);
	add_row(metric, o, ref, rss / brm, true, "<= 256 MiB", rss <= 256 * 1024 ? "PASS" : "MISS");
	snprintf(metric, sizeof metric, "SIGTERM mid-answer -> exit 11 (%d of %d)", codes_ok, rounds);
	fmt_ms(o, sizeof o, t);
	snprintf(target, sizeof target, "<= 2 s");
	add_row(metric, o, "", 0, false, target, t <= 2000 && codes_ok == rounds ? "PASS" : "MISS");
	print_table("baseline", 50, 8, 10);
	turnb_stop(&tb, keep);
	buf_release(&body);
	buf_release(&text);
	free(ow), free(oc), free(orss), free(bw), free(brss), free(term);
	return 0;
}
