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
 * First (issue 22): sessions made by `cairn log append` of 1, 1,000 and
 * 25,000 turns (4 events a turn), continued in turn, 5 rounds: the
 * request of the 1,000-turn session may go out <= 30 ms later than the
 * 1-turn one's, the 25,000-turn one's <= 300 ms later (medians).
 *
 * Options: --turns=N, --words=N, --rounds=N (default 9), --fsync-runs=N
 * (default 3), --appended (only the sessions made by log append), --keep. Unknown options are ignored (bench/run.sh passes
 * the same to every bench). Temp dir under $BENCH_DIR, else $TMPDIR, else
 * /tmp. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "bench/support_turn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* ---- sessions made with `log append` (issue 22) ---------------------------- */

/* cairn --data-dir DATA log append ARGS with stdin from the file at in;
 * dies unless it exits 0. Its stdout's first line into out (NUL ended). */
static void log_append_run(const char *const *args, const char *in, char *out, size_t cap)
{
	char *outp = xasprintf("%s/append.out", tb.root);
	const char *argv[12] = {tb.cairn_bin, "--data-dir", tb.data_dir, "log", "append"};
	size_t n = 5;
	for (; *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		int i = open(in, O_RDONLY), o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (i < 0 || o < 0 || dup2(i, 0) < 0 || dup2(o, 1) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("cairn log append: status %d", st);
	struct buf b = BUF_INIT;
	turnb_read_file(outp, &b);
	snprintf(out, cap, "%.*s", (int)strcspn(b.p ? b.p : "", "\n"), b.p ? b.p : "");
	buf_release(&b);
	free(outp);
}

/* A session of `turns` completed turns of 4 events each (turn/start,
 * user/message of 60-200 bytes of prose, assistant/text of 60-200 bytes,
 * turn/end), written by `cairn log append --new` and then
 * `log append ID --expect-seq N` in batches of 2,000 events. */
static void build_appended(size_t turns, char id[32])
{
	uint64_t t0 = clock_mono_ns();
	char *in = xasprintf("%s/append.jsonl", tb.root), line[64], cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		die("getcwd: %s", strerror(errno));
	struct buf p = BUF_INIT;
	uint64_t next = 0;
	*id = '\0';
	rng_seed(7 + turns);
	for (size_t done = 0; done < turns;) {
		FILE *f = fopen(in, "w");
		if (!f)
			die("%s: %s", in, strerror(errno));
		size_t n = turns - done < 500 ? turns - done : 500;
		for (size_t k = 0; k < n; k++, done++) {
			char turn[24];
			snprintf(turn, sizeof turn, "a%07zu", done + 1);
			fprintf(f, "{\"type\":\"turn/start\",\"turn\":\"%s\",\"data\":{}}\n", turn);
			gen_prose(&p, rnd_in(60, 200), false);
			cJSON *d = cJSON_CreateObject();
			cJSON_AddStringToObject(d, "text", p.p);
			char *j = cJSON_PrintUnformatted(d);
			fprintf(f, "{\"type\":\"user/message\",\"turn\":\"%s\",\"data\":%s}\n", turn, j);
			free(j);
			cJSON_Delete(d);
			gen_prose(&p, rnd_in(60, 200), false);
			d = cJSON_CreateObject();
			cJSON_AddStringToObject(d, "text", p.p);
			j = cJSON_PrintUnformatted(d);
			fprintf(f, "{\"type\":\"assistant/text\",\"turn\":\"%s\",\"data\":%s}\n", turn,
				j);
			free(j);
			cJSON_Delete(d);
			fprintf(f,
				"{\"type\":\"turn/end\",\"turn\":\"%s\",\"data\":{\"outcome\":\"completed\"}}\n",
				turn);
		}
		if (fclose(f) != 0)
			die("%s: write failed", in);
		char seq[32];
		snprintf(seq, sizeof seq, "%llu", (unsigned long long)next);
		const char *fresh[] = {"--new", "--cwd", cwd, NULL};
		const char *more[] = {id, "--expect-seq", seq, NULL};
		log_append_run(*id ? more : fresh, in, line, sizeof line);
		unsigned long long ns;
		char got[32];
		if (sscanf(line, "%31s %llu", got, &ns) != 2)
			die("log append printed '%s'", line);
		snprintf(id, 32, "%s", got);
		next = ns;
	}
	unlink(in);
	free(in);
	buf_release(&p);
	fprintf(stderr, "built a %zu-turn session %s with log append in %.1f s\n", turns, id,
		ms_since(t0) / 1e3);
}

/* Issue 22: the request of `cairn -p Q --session ID` is on the wire
 * <= 30 ms later for a 1,000-turn session than for a 1-turn one, and
 * <= 300 ms later for a 25,000-turn (100,000-event) one: sessions made by
 * `log append`, medians of `rounds`, the three alternating round by round
 * (after one warm-up round). */
static void bench_appended(const struct buf *text, int rounds)
{
	enum { N = 3 };
	static const size_t sizes[N] = {1, 1000, 25000};
	char ids[N][32];
	int min_msgs[N];
	for (int k = 0; k < N; k++) {
		build_appended(sizes[k], ids[k]);
		min_msgs[k] = 2 * (int)sizes[k] + 2;
	}
	double *q[N];
	for (int k = 0; k < N; k++)
		q[k] = xcalloc((size_t)rounds, sizeof *q[k]);
	fprintf(stderr, "[sessions made by log append: 1, 1000, 25000 turns] %d rounds\n", rounds);
	for (int r = -1; r < rounds; r++) {
		for (int j = 0; j < N; j++) {
			int k = (j + (r < 0 ? 0 : r)) % N; /* rotate the order */
			struct run o;
			run_turn(ids[k], text, false, min_msgs[k], &o);
			min_msgs[k] += 2;
			fprintf(stderr, "    round %d: %zu turns: request at %.2f ms (%zu KiB, %d messages)\n",
				r + 1, sizes[k], o.first_req_ms, o.rq.body_len / 1024, o.rq.messages);
			if (r >= 0)
				q[k][r] = o.first_req_ms;
		}
	}
	double m[N];
	for (int k = 0; k < N; k++)
		m[k] = median(q[k], (size_t)rounds);
	char o[32], b[32];
	fmt_ms(o, sizeof o, m[0]);
	add_row("exec -> request, a 1-turn session (log append)", o, "", 0, false, "(info)", "-");
	static const double limit[N] = {0, 30, 300};
	for (int k = 1; k < N; k++) {
		char metric[96];
		double d = m[k] - m[0];
		snprintf(metric, sizeof metric, "  a %zu-turn session: later than the 1-turn one by",
			 sizes[k]);
		fmt_ms(o, sizeof o, d);
		fmt_ms(b, sizeof b, limit[k]);
		add_row(metric, o, b, d / limit[k], true, "<= 1.00", d <= limit[k] ? "PASS" : "MISS");
	}
	for (int k = 0; k < N; k++)
		free(q[k]);
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
	bool keep = false, appended_only = false;
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
		else if (strcmp(argv[i], "--appended") == 0)
			appended_only = true;
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
	bench_appended(&text, rounds < 5 ? rounds : 5);
	if (appended_only) {
		print_table("limit", 54, 8, 8);
		buf_release(&body);
		buf_release(&text);
		turnb_stop(&tb, keep);
		return 0;
	}
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
