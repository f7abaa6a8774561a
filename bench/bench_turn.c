/* bench_turn.c — one headless turn, `cairn -p`, as a user runs it (the cairn
 * binary next to this bench, or $CAIRN), against a Chat Completions server
 * in this process (bench/support_chatsrv.c) that streams 2,000 or 20,000
 * words, one word per chunk, as fast as the socket takes them. Baselines
 * in the same run:
 *
 *   aux/baseline_turn  libcurl + cJSON reading the same stream, writing
 *                      the text to a file as cairn does (bench/baseline_turn.c)
 *   aux/libs_floor      cairn's libraries linked and initialised, nothing
 *                      else: the floor of peak RSS (bench/libs_floor.c)
 *   aux/fsync_count.so an LD_PRELOAD counter of cairn's fsync, fdatasync
 *                      and sync_file_range calls, with their times
 *   an fdatasync probe the median of a 512-byte append + fdatasync on the
 *                      disk of the data directory
 *
 * Targets (issue 11): CPU <= 1.5 x the baseline; wall - baseline wall <=
 * fsyncs x fdatasync + 10 ms; peak RSS <= floor + 6 MiB, the 20,000-word
 * turn within 1 MiB of the 2,000-word one; the first request on the wire
 * <= 5 ms + the fsyncs before it x fdatasync. Every turn is checked: exit
 * 0, the text on stdout is the words sent, and `cairn log cat` shows the
 * text saved and the turn completed; the bench dies (exit 1) if not.
 *
 * Options: --rounds=N (default 9), --words=N[,N...] (default 2000,20000),
 * --fsync-runs=N (default 3), --keep; --serve=N runs only the server,
 * streaming N words to every request until stdin ends (it prints the
 * OPENAI_BASE_URL to use), for profiling by hand. Unknown options are ignored
 * (bench/run.sh passes the same to every bench). Temp dir under
 * $BENCH_DIR, else $TMPDIR, else /tmp. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "bench/support_chatsrv.h"
#include "bench/support_turn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define MAX_SIZES 4

static struct turnb tb;

/* ---- the two clients ---------------------------------------------------- */

static const char prompt[] = "Write a long answer, please.";

/* `cairn log cat ID`: the saved text must be text and the turn completed,
 * after exactly one request/prepared. */
static void check_log(const char *id, const struct buf *text)
{
	const char *args[] = {"log", "cat", id, NULL};
	struct run r;
	struct buf cat = BUF_INIT, saved = BUF_INIT;
	int st = turnb_cairn(&tb, args, false, &r, &cat, NULL);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("cairn log cat %s failed (status %d)", id, st);
	const char *outcome = NULL;
	int prepared = 0;
	cJSON *last_end = NULL;
	for (char *l = cat.p, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		cJSON *j = cJSON_ParseWithLength(l, nl ? (size_t)(nl - l) : strlen(l));
		const cJSON *type = cJSON_GetObjectItem(j, "type"), *data = cJSON_GetObjectItem(j, "data");
		if (!cJSON_IsString(type))
			die("cairn log cat %s: a line that is not an event", id);
		if (strcmp(type->valuestring, "assistant/text") == 0)
			buf_adds(&saved, cJSON_GetStringValue(cJSON_GetObjectItem(data, "text")));
		else if (strcmp(type->valuestring, "request/prepared") == 0)
			prepared++;
		if (strcmp(type->valuestring, "turn/end") == 0) {
			cJSON_Delete(last_end);
			last_end = j;
			outcome = cJSON_GetStringValue(cJSON_GetObjectItem(data, "outcome"));
		} else {
			cJSON_Delete(j);
		}
	}
	if (!outcome || strcmp(outcome, "completed") != 0 || prepared != 1)
		die("session %s: turn/end %s after %d request/prepared", id, outcome ? outcome : "missing",
		    prepared);
	if (saved.len != text->len || memcmp(saved.p, text->p, text->len) != 0)
		die("session %s: the saved text (%zu bytes) is not the text sent (%zu bytes)", id,
		    saved.len, text->len);
	cJSON_Delete(last_end);
	buf_release(&cat);
	buf_release(&saved);
}

/* One cairn -p turn; with preload, under the fsync counter. Dies unless
 * it completed with text on stdout, saved. */
static void run_cairn(const struct buf *text, bool preload, struct run *r)
{
	const char *args[] = {"-p", prompt, NULL};
	struct buf out = BUF_INIT, err = BUF_INIT;
	int st = turnb_cairn(&tb, args, preload, r, &out, &err);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || r->n_req != 1)
		die("cairn -p: status %d after %zu requests; stderr: %s", st, r->n_req, err.p ? err.p : "");
	if (out.len != text->len || memcmp(out.p, text->p, text->len) != 0)
		die("cairn -p printed %zu bytes, not the %zu bytes sent", out.len, text->len);
	char id[32];
	turnb_session_of(&err, id);
	check_log(id, text);
	buf_release(&out);
	buf_release(&err);
}

static void run_baseline(const struct buf *text, struct run *r)
{
	char *bin = xasprintf("%s/baseline_turn", tb.aux_dir);
	const char *argv[] = {bin, tb.base_url, prompt, NULL};
	const char *env[] = {"PATH=/usr/bin:/bin", NULL};
	int st = turnb_spawn(&tb, argv, env, r);
	struct buf out = BUF_INIT;
	turnb_read_file(tb.out_path, &out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || r->n_req != 1)
		die("baseline_turn: status %d after %zu requests", st, r->n_req);
	if (out.len != text->len || memcmp(out.p, text->p, text->len) != 0)
		die("baseline_turn printed %zu bytes, not the %zu bytes sent", out.len, text->len);
	buf_release(&out);
	free(bin);
}

/* The floor program's peak RSS (KiB); its wall time in *wall_ms. */
static long run_floor(double *wall_ms)
{
	char *bin = xasprintf("%s/libs_floor", tb.aux_dir);
	const char *argv[] = {bin, NULL};
	const char *env[] = {NULL};
	struct run r;
	int st = turnb_spawn(&tb, argv, env, &r);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("libs_floor failed (status %d)", st);
	*wall_ms = r.wall_ms;
	free(bin);
	return r.rss_kb;
}

/* ---- one size ----------------------------------------------------------- */

struct size_result {
	size_t words;
	double cpu, cpu_base, cpu_ratio;      /* medians; ratio of each round's pair */
	double sys, sys_base;                 /* the system part of cpu */
	double wall, wall_base, wall_diff;
	double req, req_base, req_diff;       /* exec -> request on the wire */
	double rss_kb, rss_base_kb;
	struct syncs sy;                      /* the median run of the counter's */
};

static void measure(size_t words, int rounds, int fsync_runs, struct size_result *res)
{
	struct buf body = BUF_INIT, text = BUF_INIT;
	rng_seed(words);
	chatsrv_render(&body, &text, words);
	chatsrv_set_reply(tb.srv, &body);
	fprintf(stderr, "[%zu words] %zu bytes of text, a %.2f MiB stream; %d rounds\n", words,
		text.len, (double)body.len / 1048576.0, rounds);
	size_t n = (size_t)rounds;
	double *c = xcalloc(n, sizeof *c), *cb = xcalloc(n, sizeof *cb), *cr = xcalloc(n, sizeof *cr);
	double *w = xcalloc(n, sizeof *w), *wb = xcalloc(n, sizeof *wb), *wd = xcalloc(n, sizeof *wd);
	double *q = xcalloc(n, sizeof *q), *qb = xcalloc(n, sizeof *qb), *qd = xcalloc(n, sizeof *qd);
	double *m = xcalloc(n, sizeof *m), *mb = xcalloc(n, sizeof *mb);
	double *ss = xcalloc(n, sizeof *ss), *syb = xcalloc(n, sizeof *syb);
	for (int r = -1; r < rounds; r++) { /* one warm-up round */
		struct run o, b;
		if (r % 2 == 0) {
			run_cairn(&text, false, &o);
			run_baseline(&text, &b);
		} else {
			run_baseline(&text, &b);
			run_cairn(&text, false, &o);
		}
		if (r < 0)
			continue;
		c[r] = o.cpu_ms, cb[r] = b.cpu_ms, cr[r] = o.cpu_ms / b.cpu_ms;
		w[r] = o.wall_ms, wb[r] = b.wall_ms, wd[r] = o.wall_ms - b.wall_ms;
		q[r] = o.first_req_ms, qb[r] = b.first_req_ms, qd[r] = q[r] - qb[r];
		m[r] = (double)o.rss_kb, mb[r] = (double)b.rss_kb;
		ss[r] = o.sys_ms, syb[r] = b.sys_ms;
		fprintf(stderr,
			"    round %d: cairn wall %.1f ms cpu %.1f ms rss %ld KiB request at %.2f ms | "
			"baseline wall %.1f ms cpu %.1f ms rss %ld KiB request at %.2f ms\n",
			r + 1, o.wall_ms, o.cpu_ms, o.rss_kb, o.first_req_ms, b.wall_ms, b.cpu_ms, b.rss_kb,
			b.first_req_ms);
	}
	res->words = words;
	res->cpu = median(c, n), res->cpu_base = median(cb, n), res->cpu_ratio = median(cr, n);
	res->wall = median(w, n), res->wall_base = median(wb, n), res->wall_diff = median(wd, n);
	res->req = median(q, n), res->req_base = median(qb, n), res->req_diff = median(qd, n);
	res->rss_kb = median(m, n), res->rss_base_kb = median(mb, n);
	res->sys = median(ss, n), res->sys_base = median(syb, n);
	/* Under the counter: the number of syncs is the same every run (a
	 * different count is reported); their times are noise, the median
	 * run by count-before-request is kept. */
	struct syncs *sy = xcalloc((size_t)fsync_runs, sizeof *sy);
	for (int i = 0; i < fsync_runs; i++) {
		struct run o;
		run_cairn(&text, true, &o);
		turnb_read_syncs(&tb, &o, &sy[i]);
		turnb_print_syncs(&sy[i], &o);
		if (i > 0 && sy[i].total != sy[0].total)
			fprintf(stderr, "    note: %u syncs this run, %u in the first\n", sy[i].total,
				sy[0].total);
	}
	res->sy = turnb_median_syncs(sy, (size_t)fsync_runs);
	free(sy);
	free(c), free(cb), free(cr), free(w), free(wb), free(wd), free(q), free(qb), free(qd), free(m), free(mb), free(ss), free(syb);
	buf_release(&body);
	buf_release(&text);
}

/* ---- the table ---------------------------------------------------------- */

static void report(const struct size_result *s, double fds_ms, double floor_kb)
{
	char metric[96], o[32], b[32];
	size_t wds = s->words;
	snprintf(metric, sizeof metric, "CPU (user+sys), %zu words", wds);
	fmt_ms(o, sizeof o, s->cpu);
	fmt_ms(b, sizeof b, s->cpu_base);
	add_row(metric, o, b, s->cpu_ratio, true, "<= 1.50", s->cpu_ratio <= 1.5 ? "PASS" : "MISS");
	snprintf(metric, sizeof metric, "  of which system CPU, %zu words", wds);
	fmt_ms(o, sizeof o, s->sys);
	fmt_ms(b, sizeof b, s->sys_base);
	add_row(metric, o, b, s->sys / s->sys_base, true, "(info)", "-");

	double allow = s->sy.total * fds_ms + 10;
	snprintf(metric, sizeof metric, "wall - baseline wall, %zu words", wds);
	fmt_ms(o, sizeof o, s->wall_diff);
	fmt_ms(b, sizeof b, allow);
	add_row(metric, o, b, s->wall_diff / allow, true, "<= 1.00",
		s->wall_diff <= allow ? "PASS" : "MISS");
	snprintf(metric, sizeof metric, "  wall, %zu words", wds);
	fmt_ms(o, sizeof o, s->wall);
	fmt_ms(b, sizeof b, s->wall_base);
	add_row(metric, o, b, s->wall / s->wall_base, true, "(info)", "-");

	double lim_kb = floor_kb + 6 * 1024;
	snprintf(metric, sizeof metric, "peak RSS vs floor + 6 MiB, %zu words", wds);
	snprintf(o, sizeof o, "%.1f MiB", s->rss_kb / 1024);
	snprintf(b, sizeof b, "%.1f MiB", lim_kb / 1024);
	add_row(metric, o, b, s->rss_kb / lim_kb, true, "<= 1.00", s->rss_kb <= lim_kb ? "PASS" : "MISS");
	snprintf(metric, sizeof metric, "  baseline's peak RSS, %zu words", wds);
	snprintf(o, sizeof o, "%.1f MiB", s->rss_base_kb / 1024);
	add_row(metric, o, "", 0, false, "(info)", "-");

	snprintf(metric, sizeof metric, "fsyncs per turn (before the request), %zu w", wds);
	snprintf(o, sizeof o, "%u (%u)", s->sy.total, s->sy.before);
	fmt_ms(b, sizeof b, s->sy.total_ms);
	add_row(metric, o, b, 0, false, "(info)", "-");

	double lim = 5 + s->sy.before * fds_ms, extra = s->req_diff;
	snprintf(metric, sizeof metric, "exec -> request on the wire, %zu words", wds);
	fmt_ms(o, sizeof o, s->req);
	fmt_ms(b, sizeof b, lim);
	add_row(metric, o, b, s->req / lim, true, "<= 1.00", s->req <= lim ? "PASS" : "MISS");
	snprintf(metric, sizeof metric, "  same, less the baseline's, %zu words", wds);
	fmt_ms(o, sizeof o, extra);
	add_row(metric, o, b, extra / lim, true, "<= 1.00", extra <= lim ? "PASS" : "MISS");
	snprintf(metric, sizeof metric, "  baseline exec -> request, %zu words", wds);
	fmt_ms(o, sizeof o, s->req_base);
	add_row(metric, o, "", 0, false, "(info)", "-");
	snprintf(metric, sizeof metric, "  time in syncs before the request, %zu words", wds);
	fmt_ms(o, sizeof o, s->sy.before_ms);
	add_row(metric, o, "", 0, false, "(info)", "-");
}

/* --serve=N: only the server, streaming N words to every request until
 * stdin ends, for profiling a client by hand. */
static int serve_only(size_t words)
{
	struct buf body = BUF_INIT, text = BUF_INIT;
	chatsrv_render(&body, &text, words);
	struct chatsrv *srv = chatsrv_start();
	chatsrv_set_reply(srv, &body);
	printf("OPENAI_BASE_URL=http://127.0.0.1:%d/v1\n", chatsrv_port(srv));
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	chatsrv_stop(srv);
	buf_release(&body);
	buf_release(&text);
	return 0;
}

static void parse_words(const char *s, size_t *w, size_t *n)
{
	*n = 0;
	for (char *end; *s && *n < MAX_SIZES; s = *end ? end + 1 : end) {
		long v = strtol(s, &end, 10);
		if (v < 1 || v > 10000000 || (*end && *end != ','))
			die("--words: a list of counts, e.g. 2000,20000");
		w[(*n)++] = (size_t)v;
	}
}

int main(int argc, char **argv)
{
	bench_set_name("bench_turn");
	int rounds = 9, fsync_runs = 3;
	size_t words[MAX_SIZES] = {2000, 20000}, n_sizes = 2;
	bool keep = false;
	long serve_words = 0;
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--serve=", 8) == 0)
			serve_words = atol(argv[i] + 8);
		else if (strncmp(argv[i], "--rounds=", 9) == 0)
			rounds = atoi(argv[i] + 9);
		else if (strncmp(argv[i], "--fsync-runs=", 13) == 0)
			fsync_runs = atoi(argv[i] + 13);
		else if (strncmp(argv[i], "--words=", 8) == 0)
			parse_words(argv[i] + 8, words, &n_sizes);
		else if (strcmp(argv[i], "--keep") == 0)
			keep = true;
	}
	if (rounds < 1 || rounds > 1000 || fsync_runs < 1 || fsync_runs > 100 || n_sizes < 1)
		die("option out of range");
	if (serve_words > 0)
		return serve_only((size_t)serve_words);
	turnb_start(&tb, "bench_turn");

	enum { PROBES = 41 };
	double fds[2 * PROBES];
	turnb_probe_fdatasync(tb.data_dir, fds, PROBES);
	double *floor_rss = xcalloc((size_t)rounds, sizeof *floor_rss), *floor_ms = xcalloc((size_t)rounds, sizeof *floor_ms);
	for (int r = 0; r < rounds; r++)
		floor_rss[r] = (double)run_floor(&floor_ms[r]);
	double floor_kb = median(floor_rss, (size_t)rounds), floor_wall = median(floor_ms, (size_t)rounds);
	fprintf(stderr, "floor program (libraries only): peak RSS %.1f MiB\n", floor_kb / 1024);

	struct size_result res[MAX_SIZES];
	for (size_t i = 0; i < n_sizes; i++)
		measure(words[i], rounds, fsync_runs, &res[i]);
	turnb_probe_fdatasync(tb.data_dir, fds + PROBES, PROBES); /* the disk before and after */
	double fds_ms = median(fds, 2 * PROBES);
	fprintf(stderr, "fdatasync (512-byte append): median %.3f ms\n", fds_ms);

	for (size_t i = 0; i < n_sizes; i++)
		report(&res[i], fds_ms, floor_kb);
	if (n_sizes >= 2) {
		const struct size_result *a = &res[0], *b = &res[n_sizes - 1];
		char metric[96], o[32];
		double d = b->rss_kb - a->rss_kb;
		snprintf(metric, sizeof metric, "peak RSS, %zu - %zu words", b->words, a->words);
		snprintf(o, sizeof o, "%.2f MiB", d / 1024);
		add_row(metric, o, "1.00 MiB", d / 1024, true, "<= 1.00", d <= 1024 ? "PASS" : "MISS");
	}
	char o[32], s[32];
	fmt_ms(o, sizeof o, fds_ms);
	add_row("fdatasync latency (512-byte append)", o, "", 0, false, "(info)", "-");
	snprintf(s, sizeof s, "%.1f MiB", floor_kb / 1024);
	add_row("peak RSS of the floor program (libraries only)", s, "", 0, false, "(info)", "-");
	fmt_ms(o, sizeof o, floor_wall);
	add_row("wall of the floor program: exec, load, init, exit", o, "", 0, false, "(info)", "-");
	print_table("baseline", 50, 8, 8);
	turnb_stop(&tb, keep);
	free(floor_rss), free(floor_ms);
	return 0;
}
