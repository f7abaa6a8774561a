/* bench_continue.c — continuing a long session with one more headless turn,
 * `cairn -p PROMPT --session ID`, from exec to the first request on the
 * wire: open the session (lock, repair check, load every event of its log,
 * build the context), the BEFORE save, and the whole history encoded into
 * the request. Against the Chat Completions server thread of bench_turn
 * (bench/support_chatsrv.c).
 *
 * The session is built first by cairn itself, so its log, blobs and
 * catalog row are what cairn writes: runs of `cairn -p P1 -p P2 ... -p P64
 * --session ID` (the later prompts queued input, each promoted after the
 * turn before it was saved) until it holds --turns turns (default 1,000),
 * each a prompt of 100-300 bytes of prose and an answer of --words words
 * (default 150). Every round then adds one turn (the session grows by a
 * few turns over the run). Each turn is checked: exit 0, the answer on
 * stdout, one request carrying the whole history (2 messages a turn).
 *
 * In the same run, for comparison: a new session's first turn (what
 * bench_turn measures) and aux/baseline_turn (libcurl + cJSON, the start-up
 * of any client), alternating with the continuing turn round by round; the
 * continuing turn under the fsync counter (aux/fsync_count.so); the
 * fdatasync probe on the data directory's disk.
 *
 * Target (issue 12): exec -> request <= 50 ms + the syncs before the
 * request x the fdatasync median.
 *
 * Options: --turns=N, --words=N, --rounds=N (default 9), --fsync-runs=N
 * (default 3), --keep. Unknown options are ignored (bench/run.sh passes
 * the same to every bench). Temp dir under $BENCH_DIR, else $TMPDIR, else
 * /tmp. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "bench/support_turn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#define PER_RUN 64 /* prompts in one building run (cairn takes at most 64) */

static struct turnb tb;
static const char prompt[] = "One more question about all of this, please.";

/* ---- the session -------------------------------------------------------- */

/* Runs cairn with args; dies unless it exited 0 after n_req requests.
 * stdout into out, stderr into err (both may be NULL). */
static void cairn_ok(const char *const *args, bool preload, size_t n_req, struct run *r,
		     struct buf *out, struct buf *err)
{
	struct buf e = BUF_INIT;
	int st = turnb_cairn(&tb, args, preload, r, out, &e);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || r->n_req != n_req)
		die("cairn %s %s: status %d after %zu requests (%zu expected); stderr: %.2000s", args[0],
		    args[1] ? args[1] : "", st, r->n_req, n_req, e.p ? e.p : "");
	if (err)
		buf_add(err, e.p ? e.p : "", e.len);
	buf_release(&e);
}

/* The session of `turns` turns, built by cairn (above); its id in id. */
static void build_session(size_t turns, char id[32])
{
	uint64_t t0 = clock_mono_ns();
	char *prompts[PER_RUN];
	const char *args[2 * PER_RUN + 4];
	struct buf p = BUF_INIT, err = BUF_INIT;
	*id = '\0';
	for (size_t done = 0; done < turns;) {
		size_t n = turns - done < PER_RUN ? turns - done : PER_RUN, na = 0;
		for (size_t i = 0; i < n; i++) {
			rng_seed(done + i);
			gen_prose(&p, rnd_in(100, 300), false);
			prompts[i] = xasprintf("%zu. %s", done + i + 1, p.p);
			args[na++] = "-p";
			args[na++] = prompts[i];
		}
		if (*id) {
			args[na++] = "--session";
			args[na++] = id;
		}
		args[na] = NULL;
		struct run r;
		buf_reset(&err);
		cairn_ok(args, false, n, &r, NULL, &err);
		if (!*id)
			turnb_session_of(&err, id);
		for (size_t i = 0; i < n; i++)
			free(prompts[i]);
		done += n;
	}
	buf_release(&p);
	buf_release(&err);
	fprintf(stderr, "built a %zu-turn session %s through cairn in %.1f s\n", turns, id,
		ms_since(t0) / 1e3);
}

/* The completed turns of session id (`cairn log cat`), and its log's size
 * in *bytes (`cairn inspect --json`). */
static size_t session_turns(const char *id, long long *bytes)
{
	const char *cat[] = {"log", "cat", id, NULL}, *ins[] = {"inspect", "--json", id, NULL};
	struct run r;
	struct buf out = BUF_INIT;
	cairn_ok(cat, false, 0, &r, &out, NULL);
	size_t done = 0;
	for (char *l = out.p, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		cJSON *e = cJSON_ParseWithLength(l, nl ? (size_t)(nl - l) : strlen(l));
		const cJSON *d = cJSON_GetObjectItem(e, "data");
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(e, "type"));
		const char *outcome = cJSON_GetStringValue(cJSON_GetObjectItem(d, "outcome"));
		done += type && strcmp(type, "turn/end") == 0 && outcome && strcmp(outcome, "completed") == 0;
		cJSON_Delete(e);
	}
	cairn_ok(ins, false, 0, &r, &out, NULL);
	cJSON *j = cJSON_ParseWithLength(out.p, out.len);
	const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(j, "path"));
	struct stat st;
	*bytes = path && stat(path, &st) == 0 ? (long long)st.st_size : -1;
	cJSON_Delete(j);
	buf_release(&out);
	return done;
}

/* ---- the runs ----------------------------------------------------------- */

/* One more turn on session id (NULL: a new session): dies unless it printed
 * text and its one request carried at least min_msgs messages. */
static void run_turn(const char *id, const struct buf *text, bool preload, int min_msgs,
		     struct run *r)
{
	const char *args[] = {"-p", prompt, id ? "--session" : NULL, id, NULL};
	struct buf out = BUF_INIT;
	cairn_ok(args, preload, 1, r, &out, NULL);
	if (out.len != text->len || memcmp(out.p, text->p, text->len) != 0)
		die("cairn -p printed %zu bytes, not the %zu bytes sent", out.len, text->len);
	if (r->rq.messages < min_msgs)
		die("the request carried %d messages, not the %d of the history", r->rq.messages,
		    min_msgs);
	buf_release(&out);
}

static void run_baseline(struct run *r)
{
	char *bin = xasprintf("%s/baseline_turn", tb.aux_dir);
	const char *argv[] = {bin, tb.base_url, prompt, NULL};
	const char *env[] = {"PATH=/usr/bin:/bin", NULL};
	int st = turnb_spawn(&tb, argv, env, r);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || r->n_req != 1)
		die("baseline_turn: status %d after %zu requests", st, r->n_req);
	free(bin);
}

/* ---- main --------------------------------------------------------------- */

struct figures {
	double req, req_new, req_base, req_less_base; /* exec -> request, medians */
	double wall, cpu;
	size_t body, messages;
	struct syncs sy;
};

static void measure(const char *id, size_t turns, const struct buf *text, int rounds,
		    int fsync_runs, struct figures *f)
{
	size_t n = (size_t)rounds;
	double *q = xcalloc(n, sizeof *q), *qn = xcalloc(n, sizeof *qn), *qb = xcalloc(n, sizeof *qb);
	double *qd = xcalloc(n, sizeof *qd), *w = xcalloc(n, sizeof *w), *c = xcalloc(n, sizeof *c);
	int min_msgs = 2 * (int)turns + 2; /* system, the history, the prompt */
	for (int r = -1; r < rounds; r++) { /* one warm-up round */
		struct run o, nw, b;
		if (r % 2 == 0) {
			run_turn(id, text, false, min_msgs, &o);
			run_turn(NULL, text, false, 2, &nw);
			run_baseline(&b);
		} else {
			run_baseline(&b);
			run_turn(NULL, text, false, 2, &nw);
			run_turn(id, text, false, min_msgs, &o);
		}
		min_msgs += 2;
		f->body = o.rq.body_len;
		f->messages = (size_t)o.rq.messages;
		fprintf(stderr,
			"    round %d: continuing: request at %.2f ms (wall %.1f ms, cpu %.1f ms, %zu KiB, "
			"%d messages) | new session: %.2f ms | baseline: %.2f ms\n",
			r + 1, o.first_req_ms, o.wall_ms, o.cpu_ms, o.rq.body_len / 1024, o.rq.messages,
			nw.first_req_ms, b.first_req_ms);
		if (r < 0)
			continue;
		q[r] = o.first_req_ms, qn[r] = nw.first_req_ms, qb[r] = b.first_req_ms;
		qd[r] = o.first_req_ms - b.first_req_ms, w[r] = o.wall_ms, c[r] = o.cpu_ms;
	}
	f->req = median(q, n), f->req_new = median(qn, n), f->req_base = median(qb, n);
	f->req_less_base = median(qd, n), f->wall = median(w, n), f->cpu = median(c, n);
	struct syncs *sy = xcalloc((size_t)fsync_runs, sizeof *sy);
	for (int i = 0; i < fsync_runs; i++) {
		struct run o;
		run_turn(id, text, true, min_msgs, &o);
		min_msgs += 2;
		turnb_read_syncs(&tb, &o, &sy[i]);
		turnb_print_syncs(&sy[i], &o);
	}
	f->sy = turnb_median_syncs(sy, (size_t)fsync_runs);
	free(sy);
	free(q), free(qn), free(qb), free(qd), free(w), free(c);
}

static void report(const struct figures *f, size_t turns, long long log_bytes, double fds_ms)
{
	char metric[96], o[32], b[32];
	double lim = 50 + f->sy.before * fds_ms;
	snprintf(metric, sizeof metric, "exec -> request, continuing a %zu-turn session", turns);
	fmt_ms(o, sizeof o, f->req);
	fmt_ms(b, sizeof b, lim);
	add_row(metric, o, b, f->req / lim, true, "<= 1.00", f->req <= lim ? "PASS" : "MISS");
	fmt_ms(o, sizeof o, f->req_less_base);
	add_row("  same, less the baseline's", o, b, f->req_less_base / lim, true, "<= 1.00",
		f->req_less_base <= lim ? "PASS" : "MISS");
	fmt_ms(o, sizeof o, f->req_new);
	add_row("  exec -> request, a new session's first turn", o, "", 0, false, "(info)", "-");
	fmt_ms(o, sizeof o, f->req_base);
	add_row("  baseline exec -> request (libcurl + cJSON)", o, "", 0, false, "(info)", "-");
	snprintf(o, sizeof o, "%u (%u)", f->sy.total, f->sy.before);
	fmt_ms(b, sizeof b, f->sy.before_ms);
	add_row("  syncs of the turn (before the request), their time", o, b, 0, false, "(info)", "-");
	fmt_ms(o, sizeof o, f->wall);
	fmt_ms(b, sizeof b, f->cpu);
	add_row("  wall and CPU of the continuing turn", o, b, 0, false, "(info)", "-");
	snprintf(o, sizeof o, "%zu KiB", f->body / 1024);
	snprintf(b, sizeof b, "%zu msgs", f->messages);
	add_row("  the request's body", o, b, 0, false, "(info)", "-");
	snprintf(o, sizeof o, "%.2f MiB", (double)log_bytes / 1048576.0);
	add_row("  the session's log on disk (zstd)", o, "", 0, false, "(info)", "-");
	fmt_ms(o, sizeof o, fds_ms);
	add_row("fdatasync latency (512-byte append)", o, "", 0, false, "(info)", "-");
}

int main(int argc, char **argv)
{
	bench_set_name("bench_continue");
	int rounds = 9, fsync_runs = 3;
	long turns = 1000, words = 150;
	bool keep = false;
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--rounds=", 9) == 0)
			rounds = atoi(argv[i] + 9);
		else if (strncmp(argv[i], "--fsync-runs=", 13) == 0)
			fsync_runs = atoi(argv[i] + 13);
		else if (strncmp(argv[i], "--turns=", 8) == 0)
			turns = atol(argv[i] + 8);
		else if (strncmp(argv[i], "--words=", 8) == 0)
			words = atol(argv[i] + 8);
		else if (strcmp(argv[i], "--keep") == 0)
			keep = true;
	}
	if (rounds < 1 || rounds > 1000 || fsync_runs < 1 || fsync_runs > 100 || turns < 1 ||
	    turns > 100000 || words < 1 || words > 100000)
		die("option out of range");
	turnb_start(&tb, "bench_continue");
	enum { PROBES = 41 };
	double fds[2 * PROBES];
	turnb_probe_fdatasync(tb.data_dir, fds, PROBES);

	struct buf body = BUF_INIT, text = BUF_INIT;
	rng_seed(42);
	chatsrv_render(&body, &text, (size_t)words);
	chatsrv_set_reply(tb.srv, &body);
	char id[32];
	build_session((size_t)turns, id);
	long long log_bytes;
	size_t done = session_turns(id, &log_bytes);
	if (done != (size_t)turns)
		die("session %s has %zu completed turns, not %ld", id, done, turns);
	fprintf(stderr, "[%ld turns, %.2f MiB of log] %d rounds\n", turns,
		(double)log_bytes / 1048576.0, rounds);

	struct figures f = {0};
	measure(id, (size_t)turns, &text, rounds, fsync_runs, &f);
	turnb_probe_fdatasync(tb.data_dir, fds + PROBES, PROBES); /* the disk before and after */
	double fds_ms = median(fds, 2 * PROBES);
	fprintf(stderr, "fdatasync (512-byte append): median %.3f ms\n", fds_ms);
	report(&f, (size_t)turns, log_bytes, fds_ms);
	print_table("limit", 54, 8, 8);
	buf_release(&body);
	buf_release(&text);
	turnb_stop(&tb, keep);
	return 0;
}
