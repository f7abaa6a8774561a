/* bench_cli.c — `cairn log append` from the command line, the process as a
 * user runs it (the cairn binary next to this bench, or $CAIRN): a 2-event
 * append to an ~11 MiB log against the same append to a one-event log,
 * alternating, medians. When the catalog's watermark matches the file, an
 * append starts at its end and projects just the batch, so its cost must
 * not grow with the log (target: big / small <= 1.5). For reference, the
 * same append by PATH, which reads the whole log first (as every append
 * did before), against the small one.
 *
 * Options: --rounds=N (default 15), --big-mib=N (default 11), --keep.
 * Unknown options are ignored (bench/run.sh passes the same to every
 * bench). Temp dir under $BENCH_DIR, else $TMPDIR, else /tmp. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "persist/log.h"
#include "persist/store.h"

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static char cairn_bin[PATH_MAX];
static char *root, *data_dir, *input;

/* Run cairn --data-dir DATA ARGS... with stdin from `in` (NULL: none);
 * returns the wall time in ms and dies unless it exits 0. */
static double run(const char *in, const char *const *args)
{
	const char *argv[16] = {"cairn", "--data-dir", data_dir};
	size_t n = 3;
	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	uint64_t t0 = clock_mono_ns();
	pid_t pid = fork();
	if (pid < 0)
		die("fork failed");
	if (pid == 0) {
		int fd = open(in ? in : "/dev/null", O_RDONLY);
		int out = open("/dev/null", O_WRONLY);
		if (fd < 0 || out < 0 || dup2(fd, 0) < 0 || dup2(out, 1) < 0)
			_exit(126);
		execv(cairn_bin, (char *const *)argv);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("cairn %s %s exited with status %d", args[-1], argv[4], status);
	return ms_since(t0);
}

/* A session of turns with ~60 KB of prose each until the log holds
 * `bytes`; returns its id (caller frees). */
static char *build(struct store *st, uint64_t bytes)
{
	struct log *lg;
	struct cerr e;
	if (log_create(st, NULL, "/bench/cli", NULL, &lg, &e) < 0)
		die_err("log_create", &e);
	struct buf text = BUF_INIT;
	char turn[32];
	struct stat sb = {0};
	for (unsigned t = 0; (uint64_t)sb.st_size < bytes; t++) {
		snprintf(turn, sizeof turn, "t%u", t);
		cJSON *end = cJSON_CreateObject(), *msg = cJSON_CreateObject();
		cJSON_AddStringToObject(end, "outcome", "completed");
		gen_prose(&text, 60000, t % 7 == 0);
		cJSON_AddStringToObject(msg, "text", text.p);
		struct log_event evs[3] = {{.type = "turn/start", .turn = turn},
					   {.type = "user/message", .turn = turn, .data = msg},
					   {.type = "turn/end", .turn = turn, .data = end}};
		if (log_append(lg, log_next_seq(lg), evs, bytes > 4096 ? 3 : 2, NULL, &e) < 0)
			die_err("log_append", &e);
		cJSON_Delete(end);
		cJSON_Delete(msg);
		if (stat(log_path(lg), &sb) < 0)
			die("stat %s", log_path(lg));
		if (bytes <= 4096)
			break;
	}
	buf_release(&text);
	char *id = xstrdup(log_id(lg));
	log_close(lg);
	return id;
}

int main(int argc, char **argv)
{
	bench_set_name("bench_cli");
	int rounds = 15;
	unsigned big_mib = 11;
	bool keep = false;
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--rounds=", 9) == 0)
			rounds = atoi(argv[i] + 9);
		else if (strncmp(argv[i], "--big-mib=", 10) == 0)
			big_mib = (unsigned)atoi(argv[i] + 10);
		else if (strcmp(argv[i], "--keep") == 0)
			keep = true;
	}
	if (rounds < 1 || rounds > 1000 || big_mib < 1)
		die("option out of range");
	const char *env = getenv("CAIRN");
	char self[PATH_MAX];
	ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
	if (env && *env)
		snprintf(cairn_bin, sizeof cairn_bin, "%s", env);
	else if (sn > 0 && (self[sn] = '\0', 1))
		snprintf(cairn_bin, sizeof cairn_bin, "%s/../cairn", dirname(self));
	if (access(cairn_bin, X_OK) < 0)
		die("no cairn binary at '%s' (make, or set CAIRN)", cairn_bin);

	umask(077);
	root = temp_dir();
	data_dir = xasprintf("%s/root", root);
	input = xasprintf("%s/batch.jsonl", root);
	struct store *st;
	struct cerr e;
	if (store_open(data_dir, true, &st, &e) < 0)
		die_err("store_open", &e);
	const struct fsops *saved = fsops;
	fsops = fsops_nosync(); /* building only; every measured append syncs */
	uint64_t t0 = clock_mono_ns();
	char *big = build(st, (uint64_t)big_mib * 1024 * 1024), *small = build(st, 1);
	fsops = saved;
	char *big_path = xasprintf("%s/sessions/-bench-cli/%s/%s", data_dir, big, LOG_FILE);
	struct stat sb;
	if (stat(big_path, &sb) < 0)
		die("stat %s", big_path);
	fprintf(stderr, "[1] `cairn log append` of 2 events: a %.1f MiB log vs a one-event log\n"
			"    built in %.1f s\n", (double)sb.st_size / 1048576.0, ms_since(t0) / 1000);
	/* The catalog learns both (repair records a missing watermark). */
	run(NULL, (const char *const[]){"repair", big, NULL});
	run(NULL, (const char *const[]){"repair", small, NULL});
	FILE *f = fopen(input, "w");
	if (!f)
		die("cannot write %s", input);
	fputs("{\"type\":\"turn/start\",\"turn\":\"b\"}\n"
	      "{\"type\":\"user/message\",\"turn\":\"b\",\"data\":{\"text\":\"two more events\"}}\n", f);
	fclose(f);
	/* Seqs: each log has 3 events per turn plus the header. */
	uint64_t next_big = 0, next_small = 0;
	{
		struct log *lg;
		if (log_open(st, big, &lg, &e) < 0)
			die_err("log_open", &e);
		next_big = log_next_seq(lg);
		log_close(lg);
		if (log_open(st, small, &lg, &e) < 0)
			die_err("log_open", &e);
		next_small = log_next_seq(lg);
		log_close(lg);
	}
	double *tb = xcalloc((size_t)rounds, sizeof *tb), *ts = xcalloc((size_t)rounds, sizeof *ts);
	double *tp = xcalloc((size_t)rounds, sizeof *tp);
	char sb_[32], ss_[32];
	for (int r = -2; r < rounds; r++) { /* two warm-up rounds */
		double b, s, p;
		snprintf(sb_, sizeof sb_, "%llu", (unsigned long long)next_big);
		snprintf(ss_, sizeof ss_, "%llu", (unsigned long long)next_small);
		const char *const ab[] = {"log", "append", big, "--expect-seq", sb_, NULL};
		const char *const as[] = {"log", "append", small, "--expect-seq", ss_, NULL};
		if (r % 2 == 0) {
			b = run(input, ab);
			s = run(input, as);
		} else {
			s = run(input, as);
			b = run(input, ab);
		}
		next_big += 2;
		next_small += 2;
		snprintf(sb_, sizeof sb_, "%llu", (unsigned long long)next_big);
		const char *const ap[] = {"log", "append", big_path, "--expect-seq", sb_, NULL};
		p = run(input, ap);
		next_big += 2;
		if (r >= 0)
			tb[r] = b, ts[r] = s, tp[r] = p;
		if (r >= 0)
			fprintf(stderr, "    round %d: big %.1f ms, small %.1f ms, big by path %.1f ms\n",
				r + 1, b, s, p);
	}
	double mb = median(tb, (size_t)rounds), ms = median(ts, (size_t)rounds);
	double mp = median(tp, (size_t)rounds);
	char o[32], b[32], metric[96];
	snprintf(metric, sizeof metric, "log append, 2 events, %.0f MiB log vs 1 event",
		 (double)sb.st_size / 1048576.0);
	snprintf(o, sizeof o, "%.1f ms", mb);
	snprintf(b, sizeof b, "%.1f ms", ms);
	add_row(metric, o, b, mb / ms, true, "<= 1.50", mb / ms <= 1.5 ? "PASS" : "MISS");
	snprintf(o, sizeof o, "%.1f ms", mp);
	add_row("  same by PATH (reads the whole log first)", o, b, mp / ms, true, "(info)", "-");
	print_table("1-event log", 44, 8, 8);
	store_close(st);
	temp_dir_done(root, keep);
	free(tb), free(ts), free(tp);
	free(big), free(small), free(big_path), free(input), free(data_dir), free(root);
	return 0;
}
