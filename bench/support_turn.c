/* support_turn.c — running cairn and its baselines for the turn benches
 * (support_turn.h). */
#include "bench/support_turn.h"

#include "base/clock.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void locate(struct turnb *tb)
{
	char self[PATH_MAX];
	ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sn <= 0)
		die("cannot find this binary");
	self[sn] = '\0';
	const char *dir = dirname(self);
	snprintf(tb->aux_dir, sizeof tb->aux_dir, "%s/aux", dir);
	const char *env = getenv("CAIRN");
	if (env && *env)
		snprintf(tb->cairn_bin, sizeof tb->cairn_bin, "%s", env);
	else
		snprintf(tb->cairn_bin, sizeof tb->cairn_bin, "%s/../cairn", dir);
	if (access(tb->cairn_bin, X_OK) < 0)
		die("no cairn binary at '%s' (make, or set CAIRN)", tb->cairn_bin);
	const char *need[] = {"baseline_turn", "libs_floor", "fsync_count.so"};
	for (size_t i = 0; i < 3; i++) {
		char p[PATH_MAX + 32];
		snprintf(p, sizeof p, "%s/%s", tb->aux_dir, need[i]);
		if (access(p, R_OK) < 0)
			die("no %s (make bench builds it)", p);
	}
}

void turnb_start(struct turnb *tb, const char *name)
{
	locate(tb);
	umask(077);
	tb->root = temp_dir();
	tb->data_dir = xasprintf("%s/data", tb->root);
	tb->out_path = xasprintf("%s/stdout", tb->root);
	tb->err_path = xasprintf("%s/stderr", tb->root);
	tb->fsync_log = xasprintf("%s/fsyncs", tb->root);
	char *home = xasprintf("%s/home", tb->root), *cfg = xasprintf("%s/config", tb->root);
	mkdir_p1(home);
	mkdir_p1(cfg);
	mkdir_p1(tb->data_dir);
	free(home);
	free(cfg);
	if (chdir(tb->root) < 0) /* cairn's working directory: no AGENTS.md, no .git */
		die("chdir %s: %s", tb->root, strerror(errno));
	char machine[256];
	describe_machine(machine, sizeof machine, tb->root);
	fprintf(stderr, "%s: %s\n", name, machine);
	tb->srv = chatsrv_start();
	snprintf(tb->base_url, sizeof tb->base_url, "http://127.0.0.1:%d/v1", chatsrv_port(tb->srv));
}

void turnb_stop(struct turnb *tb, bool keep)
{
	chatsrv_stop(tb->srv);
	temp_dir_done(tb->root, keep);
	free(tb->data_dir), free(tb->out_path), free(tb->err_path), free(tb->fsync_log);
	free(tb->root);
}

int turnb_spawn(struct turnb *tb, const char *const *argv, const char *const *env, struct run *r)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, tb->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, tb->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	chatsrv_take(tb->srv, &r->rq); /* nothing stale */
	r->t0 = clock_mono_ns();
	int e = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, (char *const *)env);
	posix_spawn_file_actions_destroy(&fa);
	if (e != 0)
		die("cannot run %s: %s", argv[0], strerror(e));
	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR)
			die("wait4: %s", strerror(errno));
	r->wall_ms = ms_since(r->t0);
	r->cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
		    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	r->sys_ms = (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
	r->rss_kb = ru.ru_maxrss;
	r->n_req = chatsrv_take(tb->srv, &r->rq);
	r->first_req_ms = -1;
	if (r->n_req) {
		if (!r->rq.ok)
			die("%s sent a request the server refused: %s", argv[0], r->rq.why);
		r->arrived_ns = r->rq.arrived_ns;
		r->first_req_ms = (double)(r->rq.arrived_ns - r->t0) / 1e6;
	}
	return status;
}

int turnb_cairn(struct turnb *tb, const char *const *args, bool preload, struct run *r,
		struct buf *out, struct buf *err)
{
	const char *argv[160] = {tb->cairn_bin, "--data-dir", tb->data_dir};
	size_t na = 3;
	for (; *args; args++) {
		if (na + 1 >= sizeof argv / sizeof *argv)
			die("too many arguments for cairn");
		argv[na++] = *args;
	}
	argv[na] = NULL;
	char *own[] = {xasprintf("HOME=%s/home", tb->root),
		       xasprintf("XDG_CONFIG_HOME=%s/config", tb->root),
		       xasprintf("OPENAI_BASE_URL=%s", tb->base_url),
		       xasprintf("LD_PRELOAD=%s/fsync_count.so", tb->aux_dir),
		       xasprintf("BENCH_FSYNC_LOG=%s", tb->fsync_log)};
	const char *env[] = {own[0], own[1], own[2], "PATH=/usr/bin:/bin",
			     preload ? own[3] : NULL, preload ? own[4] : NULL, NULL};
	if (preload)
		unlink(tb->fsync_log);
	int st = turnb_spawn(tb, argv, env, r);
	if (out)
		turnb_read_file(tb->out_path, out);
	if (err)
		turnb_read_file(tb->err_path, err);
	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		free(own[i]);
	return st;
}

void turnb_read_file(const char *path, struct buf *b)
{
	buf_reset(b);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));
	char chunk[65536];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		buf_add(b, chunk, (size_t)n);
	close(fd);
}

void turnb_session_of(const struct buf *err, char id[32])
{
	const char *p = strstr(err->p ? err->p : "", "cairn: session ");
	if (!p || sscanf(p + 15, "%31s", id) != 1)
		die("cairn did not name its session; stderr: %s", err->p ? err->p : "");
}

/* ---- fsyncs ------------------------------------------------------------- */

void turnb_read_syncs(const struct turnb *tb, const struct run *r, struct syncs *s)
{
	memset(s, 0, sizeof *s);
	FILE *f = fopen(tb->fsync_log, "r");
	if (!f)
		die("no fsync log at %s (was %s/fsync_count.so loaded?)", tb->fsync_log, tb->aux_dir);
	char name[32], kind[8];
	unsigned long long a, b;
	while (fscanf(f, "%31s %llu %llu %7s", name, &a, &b, kind) == 4) {
		if (strcmp(name, "overflow") == 0)
			die("the fsync counter overflowed");
		double ms = (double)(b - a) / 1e6;
		s->total++;
		s->total_ms += ms;
		if (s->total == 1 || a < s->first_ns)
			s->first_ns = a;
		if (b <= r->arrived_ns) {
			if (b > s->last_ns)
				s->last_ns = b;
			s->before++;
			s->before_ms += ms;
			size_t l = strlen(s->list);
			snprintf(s->list + l, sizeof s->list - l, "%s%s(%s) %.2f", l ? ", " : "", name,
				 kind, ms);
		}
	}
	fclose(f);
}

void turnb_print_syncs(const struct syncs *s, const struct run *r)
{
	fprintf(stderr, "    counted: %u syncs (%.2f ms), %u before the request (%.2f ms): %s\n"
			"      from exec: first sync at %.2f ms, the last before the request done at "
			"%.2f ms, request at %.2f ms\n",
		s->total, s->total_ms, s->before, s->before_ms, s->list,
		s->total ? (double)(s->first_ns - r->t0) / 1e6 : 0.0,
		s->before ? (double)(s->last_ns - r->t0) / 1e6 : 0.0, r->first_req_ms);
}

struct syncs turnb_median_syncs(struct syncs *sy, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && sy[k].before < sy[k - 1].before; k--) {
			struct syncs t = sy[k];
			sy[k] = sy[k - 1];
			sy[k - 1] = t;
		}
	return sy[n / 2];
}

void turnb_probe_fdatasync(const char *dir, double *v, size_t n)
{
	char *p = xasprintf("%s/fdatasync.probe", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die("cannot create %s: %s", p, strerror(errno));
	char block[512];
	memset(block, 'x', sizeof block);
	for (size_t i = 0; i < n + 3; i++) {
		uint64_t t = clock_mono_ns();
		if (write(fd, block, sizeof block) != (ssize_t)sizeof block || fdatasync(fd) < 0)
			die("write + fdatasync %s: %s", p, strerror(errno));
		if (i >= 3) /* three warm-up appends */
			v[i - 3] = ms_since(t);
	}
	close(fd);
	unlink(p);
	free(p);
}

void fmt_ms(char *o, size_t n, double ms)
{
	snprintf(o, n, ms < 10 ? "%.2f ms" : "%.1f ms", ms);
}
