/* bench_tui.c — the chat screen as a user meets it: the real cairn binary
 * (next to this bench, or $CAIRN) on a pseudo-terminal of this bench's own
 * (forkpty, 100x30, TERM=xterm-256color, LANG=C.UTF-8, a private data
 * directory and configuration), everything it writes read back and timed
 * here. No tmux: the time from a write() to the pty until cairn's bytes
 * come back is the user's latency minus the terminal emulator's.
 *
 *   1. start-up: exec -> first byte, -> the status line's "idle", -> a
 *      key typed right after exec echoed in the composer; VmRSS then,
 *      against aux/libs_floor --tty (the same libraries initialised,
 *      ncursesw through newterm on a pty). Targets: usable < 30 ms, RSS <=
 *      floor + 8 MiB.
 *   2. idle CPU: utime + stime over 2 s with nothing happening, after
 *      start-up and after a streamed turn. Target: 0 ticks.
 *   3. streaming, from a Chat Completions server in this process
 *      (bench/support_chatsrv.c) paced at 2,000 words (tokens) a second:
 *      bytes written to the terminal per streamed character and the full
 *      screen clears (ESC[2J, ESC[H ESC[J) while streaming (target 0);
 *      then, in a second turn, keystroke -> screen latency: a '§' written
 *      every 36-76 ms, the time until its bytes come back, p50 and p99
 *      (target p99 < 16 ms; the same measured on the idle screen is the
 *      baseline).
 *   4. long sessions of 100,000 and 1,000,000 events (~200 bytes each,
 *      bench/support_sessionlog.c, in the page cache) opened with -r,
 *      after one untimed open (the catalog then knows the log, as it
 *      knows a session cairn wrote): exec -> the last turn's answer on
 *      the screen, and -> ready (the status line's "idle": the host read
 *      the session); VmRSS at the first and 1 s after ready (what the
 *      open session keeps), and the peak (VmHWM), against the
 *      decompressed size.
 *      Targets (issue 22): ready <= 300 ms for 100,000 events and
 *      <= 2 s for 1,000,000; for 1,000,000 also the end shown <= 150 ms,
 *      the peak while opening <= 2 x and RSS when ready < 1.5 x the JSON.
 *      The raw load (decompress and parse every line) is the reference.
 *
 * Options: --rounds=N (start-up rounds, default 15; long sessions get
 * max(N/5, 1)), --stream-secs=N (default 8), --quick (7 rounds, 4 s
 * streams, only the 100,000-event session), --long (only the long
 * sessions), --keep. Unknown options are
 * ignored (bench/run.sh passes the same to every bench). Temp dir under
 * $BENCH_DIR, else $TMPDIR, else /tmp. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "bench/support_chatsrv.h"
#include "bench/support_sessionlog.h"
#include "persist/store.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define ROWS 30
#define COLS 100
#define SECTION "\xc2\xa7" /* '§': in nothing cairn draws by itself */
#define PILCROW "\xc2\xb6" /* '¶': nor this */

static struct {
	int rounds, stream_secs, long_limit;
	bool quick, keep, long_only;
} opt = {15, 8, 60, false, false, false};

static char cairn_bin[PATH_MAX], aux_dir[PATH_MAX];
static char *root, *data_dir, *work_dir, *cfg_path;
static char base_url[64];

/* ---- cairn on a pty ----------------------------------------------------- */

struct tty {
	pid_t pid;
	int fd;           /* the pty's master side */
	uint64_t t0;      /* clock_mono_ns() just before the fork */
	uint64_t first_ns; /* when the first byte came back (0: none yet) */
	struct buf out;   /* everything cairn wrote */
	bool eof;
};

/* Writes the configuration every run reads: the offline provider's pace,
 * no bell. */
static void write_config(unsigned pace_ms)
{
	FILE *f = fopen(cfg_path, "w");
	if (!f || fprintf(f, "{\"bell\": false, \"providers\": {\"offline\": {\"pace_ms\": %u}}}\n",
			  pace_ms) < 0 || fclose(f) != 0)
		die("cannot write %s", cfg_path);
}

/* Starts `cairn --data-dir DATA args...` in the work dir on a new pty,
 * with echo and line editing off on it before the exec (so a key typed
 * before cairn sets its own modes is not echoed by the terminal driver:
 * what comes back is cairn's). url: OPENAI_BASE_URL, or NULL. */
static void tty_start(struct tty *t, const char *const *args, const char *url)
{
	const char *argv[12] = {cairn_bin, "--data-dir", data_dir};
	size_t n = 3;
	for (; *args && n < 11; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	char *home = xasprintf("HOME=%s/home", root), *xdg = xasprintf("XDG_CONFIG_HOME=%s/config", root);
	char *u = url ? xasprintf("OPENAI_BASE_URL=%s", url) : NULL;
	const char *env[] = {"TERM=xterm-256color", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
			     "PATH=/usr/bin:/bin", home, xdg, u, NULL};
	struct winsize ws = {.ws_row = ROWS, .ws_col = COLS};
	memset(t, 0, sizeof *t);
	t->t0 = clock_mono_ns();
	t->pid = forkpty(&t->fd, NULL, NULL, &ws);
	if (t->pid < 0)
		die("forkpty: %s", strerror(errno));
	if (t->pid == 0) {
		struct termios tio;
		if (tcgetattr(0, &tio) == 0) {
			tio.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
			tcsetattr(0, TCSANOW, &tio);
		}
		if (chdir(work_dir) < 0)
			_exit(126);
		execve(argv[0], (char *const *)argv, (char *const *)env);
		_exit(127);
	}
	free(home), free(xdg), free(u);
	fcntl(t->fd, F_SETFD, FD_CLOEXEC);
}

/* Reads what cairn wrote, waiting up to ms for something. Returns when
 * something was read (or the pty closed, or time ran out). */
static void tty_pump(struct tty *t, int ms)
{
	struct pollfd p = {.fd = t->fd, .events = POLLIN};
	if (t->eof || poll(&p, 1, ms) <= 0)
		return;
	char chunk[65536];
	ssize_t n = read(t->fd, chunk, sizeof chunk);
	if (n > 0) {
		if (!t->first_ns)
			t->first_ns = clock_mono_ns();
		buf_add(&t->out, chunk, (size_t)n);
	} else if (n == 0 || errno != EINTR) {
		t->eof = true; /* EIO: cairn is gone */
	}
}

/* Keeps reading for ms, whatever comes. */
static void tty_drain(struct tty *t, int ms)
{
	uint64_t end = clock_mono_ns() + (uint64_t)ms * 1000000u;
	for (uint64_t now; (now = clock_mono_ns()) < end;)
		tty_pump(t, (int)((end - now) / 1000000u) + 1);
}

static const char *find(const struct tty *t, size_t from, const char *needle)
{
	size_t nl = strlen(needle);
	if (t->out.len < from + nl)
		return NULL;
	return memmem(t->out.p + from, t->out.len - from, needle, nl);
}

/* Reads until needle appears in the output at or after offset from; returns
 * the clock_mono_ns() reading taken right after the read that brought it
 * (and its end offset in *end when not NULL). Dies after timeout_ms. */
static uint64_t tty_wait(struct tty *t, size_t from, const char *needle, int timeout_ms, size_t *end)
{
	uint64_t limit = clock_mono_ns() + (uint64_t)timeout_ms * 1000000u, now = 0;
	const char *hit;
	while (!(hit = find(t, from, needle))) {
		if (t->eof || (now = clock_mono_ns()) > limit) {
			size_t l = t->out.len, k = l > 600 ? l - 600 : 0;
			char *dump = xasprintf("%s/tty.out", root);
			FILE *f = fopen(dump, "w");
			if (f && t->out.len)
				fwrite(t->out.p, 1, t->out.len, f);
			if (f)
				fclose(f);
			fprintf(stderr, "bench_tui: all cairn wrote is in %s\n", dump);
			free(dump);
			opt.keep = true;
			die("no '%s' from cairn after %d ms%s; its last output: %.*s", needle, timeout_ms,
			    t->eof ? " (it exited)" : "", (int)(l - k), t->out.p ? t->out.p + k : "");
		}
		tty_pump(t, (int)((limit - now) / 1000000u) + 1);
		now = clock_mono_ns();
	}
	if (end)
		*end = (size_t)(hit - t->out.p) + strlen(needle);
	return now ? now : clock_mono_ns();
}

static void tty_write(struct tty *t, const char *s)
{
	size_t n = strlen(s);
	if (write(t->fd, s, n) != (ssize_t)n)
		die("write to the pty: %s", strerror(errno));
}

static void tty_kill(struct tty *t)
{
	kill(t->pid, SIGKILL);
	while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
		;
	close(t->fd);
	buf_release(&t->out);
}

/* VmRSS (or VmHWM, the peak) of pid in KiB, from /proc. */
static long proc_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, field, strlen(field)) == 0 &&
		    sscanf(line + strlen(field), ": %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb < 0)
		die("no %s for pid %d", field, (int)pid);
	return kb;
}

static long rss_kb(pid_t pid)
{
	return proc_kb(pid, "VmRSS");
}

/* utime + stime of pid in clock ticks, from /proc/PID/stat. */
static unsigned long long cpu_ticks(pid_t pid)
{
	char path[64], s[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(s, 1, sizeof s - 1, f) : 0;
	if (f)
		fclose(f);
	s[n] = 0;
	const char *p = strrchr(s, ')'); /* the command may hold spaces */
	unsigned long long ut, st;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		die("cannot read %s", path);
	return ut + st;
}

static double pct(const double *v, size_t n, double p)
{
	double *s = xcalloc(n, sizeof *s);
	memcpy(s, v, n * sizeof *s);
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && s[k] < s[k - 1]; k--) {
			double x = s[k];
			s[k] = s[k - 1];
			s[k - 1] = x;
		}
	size_t i = (size_t)(p * (double)n + 0.999999);
	double r = s[i ? i - 1 : 0];
	free(s);
	return r;
}

static void fmt_ms(char *o, size_t n, double ms)
{
	snprintf(o, n, ms < 10 ? "%.2f ms" : "%.1f ms", ms);
}

static void fmt_mib(char *o, size_t n, double kb)
{
	snprintf(o, n, "%.1f MiB", kb / 1024.0);
}

/* ---- 1. start-up ---------------------------------------------------------- */

/* One run of libs_floor --tty: its peak RSS (KiB) and wall time (ms). */
static void run_floor(double *kb, double *wall)
{
	char *bin = xasprintf("%s/libs_floor", aux_dir);
	uint64_t t0 = clock_mono_ns();
	pid_t pid = fork();
	if (pid == 0) {
		const char *argv[] = {bin, "--tty", NULL};
		const char *env[] = {"TERM=xterm-256color", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", NULL};
		execve(bin, (char *const *)argv, (char *const *)env);
		_exit(127);
	}
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			die("wait4: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s --tty failed (status %d)", bin, st);
	*wall = ms_since(t0);
	*kb = (double)ru.ru_maxrss;
	free(bin);
}

static void bench_startup(void)
{
	int n = opt.rounds;
	fprintf(stderr, "[1] start-up: %d rounds (and a warm-up), a key typed right after exec\n", n);
	double *first = xcalloc((size_t)n, sizeof *first), *idle = xcalloc((size_t)n, sizeof *idle);
	double *usable = xcalloc((size_t)n, sizeof *usable), *rss = xcalloc((size_t)n, sizeof *rss);
	double *hwm = xcalloc((size_t)n, sizeof *hwm);
	double *fkb = xcalloc((size_t)n, sizeof *fkb), *fms = xcalloc((size_t)n, sizeof *fms);
	const char *none[] = {NULL};
	for (int r = -1; r < n; r++) {
		struct tty t;
		tty_start(&t, none, NULL);
		tty_write(&t, SECTION); /* type-ahead: before cairn could have drawn anything */
		uint64_t ti = tty_wait(&t, 0, "idle", 5000, NULL);
		uint64_t tu = tty_wait(&t, 0, SECTION, 5000, NULL);
		long kb = rss_kb(t.pid), peak = proc_kb(t.pid, "VmHWM");
		if (r >= 0) {
			hwm[r] = (double)peak;
			first[r] = (double)(t.first_ns - t.t0) / 1e6;
			idle[r] = (double)(ti - t.t0) / 1e6;
			usable[r] = (double)(tu - t.t0) / 1e6;
			rss[r] = (double)kb;
		}
		tty_kill(&t); /* before the draft (the key) is saved, 700 ms on */
		if (r < 0)
			continue;
		run_floor(&fkb[r], &fms[r]); /* in the same round: under the same load */
		fprintf(stderr, "    round %d: first byte %.2f ms, idle %.2f ms, key echoed %.2f ms, "
				"VmRSS %ld KiB, VmHWM %ld KiB | libs_floor --tty %.2f ms, %.0f KiB\n",
			r + 1, first[r], idle[r], usable[r], kb, peak, fms[r], fkb[r]);
	}
	double floor_kb = median(fkb, (size_t)n), floor_ms = median(fms, (size_t)n);
	fprintf(stderr, "    libs_floor --tty: peak RSS %.0f KiB, exec to exit %.2f ms\n", floor_kb,
		floor_ms);
	char a[32], b[32];
	fmt_ms(a, sizeof a, median(first, (size_t)n));
	fmt_ms(b, sizeof b, floor_ms);
	add_row("exec -> first byte on the pty (info)", a, b, 0, false, "(info)", "");
	fmt_ms(a, sizeof a, median(idle, (size_t)n));
	add_row("exec -> status line 'idle' (info)", a, b, 0, false, "(info)", "");
	add_time_row("exec -> key typed at exec echoed (usable)", median(usable, (size_t)n), 30);
	/* Peak against peak: the floor's is its ru_maxrss. */
	double ours = median(hwm, (size_t)n), lim = floor_kb + 8192;
	fmt_mib(a, sizeof a, ours);
	fmt_mib(b, sizeof b, floor_kb);
	char tg[32];
	snprintf(tg, sizeof tg, "<= %.1f MiB", lim / 1024.0);
	add_row("peak RSS when usable vs libs_floor --tty", a, b, ours / lim, true, tg,
		ours <= lim ? "PASS" : "MISS");
	fmt_mib(a, sizeof a, median(rss, (size_t)n));
	add_row("  VmRSS then (info)", a, b, 0, false, "(info)", "");
	free(first), free(idle), free(usable), free(rss), free(hwm), free(fkb), free(fms);
}

/* ---- 2. idle CPU ---------------------------------------------------------- */

/* CPU ticks cairn spends over 2 s with nothing happening (after 300 ms of
 * settling), reading its output all along. */
static unsigned long long idle_ticks(struct tty *t)
{
	tty_drain(t, 300);
	unsigned long long a = cpu_ticks(t->pid);
	tty_drain(t, 2000);
	return cpu_ticks(t->pid) - a;
}

static void idle_row(const char *metric, unsigned long long ticks)
{
	char a[32];
	long hz = sysconf(_SC_CLK_TCK);
	snprintf(a, sizeof a, "%llu ticks", ticks);
	char b[32];
	snprintf(b, sizeof b, "%.2f %%", (double)ticks * 100.0 / (2.0 * (double)hz));
	add_row(metric, a, b, 0, false, "0 ticks", ticks == 0 ? "PASS" : "MISS");
}

static void bench_idle(void)
{
	fprintf(stderr, "[2] idle CPU after start-up, 2 s\n");
	const char *none[] = {NULL};
	struct tty t;
	tty_start(&t, none, NULL);
	tty_wait(&t, 0, "idle", 5000, NULL);
	unsigned long long k = idle_ticks(&t);
	fprintf(stderr, "    %llu ticks of utime+stime over 2 s\n", k);
	idle_row("idle CPU, 2 s after start-up (2nd col: %)", k);
	tty_kill(&t);
}

/* ---- 3. streaming ---------------------------------------------------------- */

static size_t count(const char *p, size_t n, const char *needle)
{
	size_t c = 0, l = strlen(needle);
	for (const char *q = p; (q = memmem(q, (size_t)(p + n - q), needle, l)); q += l)
		c++;
	return c;
}

static size_t utf8_chars(const struct buf *b)
{
	size_t c = 0;
	for (size_t i = 0; i < b->len; i++)
		c += ((unsigned char)b->p[i] & 0xC0) != 0x80;
	return c;
}

/* Keystroke latencies (ms) into v: a '§' (then a '¶', alternately)
 * written, the time until its bytes come back, then a backspace (so the
 * composer stays one line); a random pause of 36-76 ms between samples,
 * longer than a frame (16 ms), so that on the idle screen the backspace's
 * frame is out of the way and the next key is not paced behind it.
 * Alternating: a backspace and the next key drawn in one frame still
 * change the cell, so the key's bytes always come. Stops after max samples, or (when
 * stop_at is set) once "idle" appears after offset stop_at. */
static size_t keystrokes(struct tty *t, double *v, size_t max, size_t stop_at, bool until_idle)
{
	size_t n = 0;
	while (n < max) {
		tty_drain(t, (int)rnd_in(36, 76));
		if (until_idle && find(t, stop_at, "idle"))
			break;
		size_t from = t->out.len;
		const char *key = n % 2 ? PILCROW : SECTION;
		uint64_t t0 = clock_mono_ns();
		tty_write(t, key);
		v[n++] = (double)(tty_wait(t, from, key, 5000, NULL) - t0) / 1e6;
		tty_write(t, "\x7f");
	}
	return n;
}

static void bench_stream(void)
{
	size_t words = 2000 * (size_t)opt.stream_secs;
	fprintf(stderr, "[3] streaming %zu words at 2,000 a second from the server in this process\n",
		words);
	struct chatsrv *srv = chatsrv_start();
	snprintf(base_url, sizeof base_url, "http://127.0.0.1:%d/v1", chatsrv_port(srv));
	struct buf body = BUF_INIT, text = BUF_INIT;
	rng_seed(words);
	chatsrv_render(&body, &text, words);
	chatsrv_set_reply(srv, &body);
	chatsrv_set_pace(srv, 2000);
	const char *none[] = {NULL};
	struct tty t;
	tty_start(&t, none, base_url);
	size_t at;
	tty_wait(&t, 0, "idle", 5000, &at);

	/* The baseline: keystrokes on the idle screen. */
	double base[100];
	size_t nb = keystrokes(&t, base, 100, 0, false);

	/* Turn A: nothing typed; what cairn writes per character streamed. */
	tty_drain(&t, 100);
	size_t from = t.out.len, s0, s1;
	tty_write(&t, "Write a long answer, please.\r");
	uint64_t ts = tty_wait(&t, from, "streaming", 5000, &s0);
	uint64_t te = tty_wait(&t, s0, "idle", opt.stream_secs * 4000 + 10000, &s1);
	size_t bytes = s1 - s0;
	size_t clears = count(t.out.p + s0, bytes, "\x1b[2J") + count(t.out.p + s0, bytes, "\x1b[H\x1b[J");
	size_t chars = utf8_chars(&text);
	double secs = (double)(te - ts) / 1e9;
	fprintf(stderr, "    turn A: %zu bytes to the terminal for %zu characters streamed in %.2f s "
			"(%.2f B/char), %zu full-screen clears\n",
		bytes, chars, secs, (double)bytes / (double)chars, clears);

	/* Turn B: keystrokes all along. */
	size_t cap = (size_t)opt.stream_secs * 100;
	double *lat = xcalloc(cap, sizeof *lat);
	tty_drain(&t, 100);
	from = t.out.len;
	tty_write(&t, "Another long answer, please.\r");
	tty_wait(&t, from, "streaming", 5000, &s0);
	size_t nl = keystrokes(&t, lat, cap, s0, true);
	tty_wait(&t, s0, "idle", opt.stream_secs * 4000 + 10000, &s1);
	size_t clears_b = count(t.out.p + s0, s1 - s0, "\x1b[2J") +
			  count(t.out.p + s0, s1 - s0, "\x1b[H\x1b[J");
	fprintf(stderr, "    turn B: %zu keystrokes while streaming: p50 %.2f ms, p99 %.2f ms, max "
			"%.2f ms; idle screen (%zu): p50 %.2f ms, p99 %.2f ms; %zu full-screen clears\n",
		nl, pct(lat, nl, 0.5), pct(lat, nl, 0.99), pct(lat, nl, 1.0), nb, pct(base, nb, 0.5),
		pct(base, nb, 0.99), clears_b);
	unsigned long long k = idle_ticks(&t);
	fprintf(stderr, "    after the turns: %llu ticks of utime+stime over 2 s\n", k);
	tty_kill(&t);
	chatsrv_stop(srv);

	if (nl < 20)
		die("only %zu keystrokes measured while streaming", nl);
	char a[32], b[32];
	fmt_ms(a, sizeof a, pct(lat, nl, 0.5));
	fmt_ms(b, sizeof b, pct(base, nb, 0.5));
	add_row("keystroke -> screen p50, streaming (ref: idle)", a, b, 0, false, "(info)", "");
	fmt_ms(a, sizeof a, pct(lat, nl, 0.99));
	fmt_ms(b, sizeof b, pct(base, nb, 0.99));
	double p99 = pct(lat, nl, 0.99);
	add_row("keystroke -> screen p99, streaming (ref: idle)", a, b, p99 / 16.0, true, "< 16 ms",
		p99 < 16 ? "PASS" : "MISS");
	snprintf(a, sizeof a, "%.2f B", (double)bytes / (double)chars);
	snprintf(b, sizeof b, "%zu chars", chars);
	add_row("bytes to the terminal per streamed char", a, b, 0, false, "(info)", "");
	snprintf(a, sizeof a, "%zu", clears + clears_b);
	add_row("full-screen clears while streaming", a, "", 0, false, "0",
		clears + clears_b == 0 ? "PASS" : "MISS");
	idle_row("idle CPU, 2 s after streamed turns (2nd: %)", k);
	free(lat);
	buf_release(&body);
	buf_release(&text);
}

/* ---- 4. long sessions ------------------------------------------------------ */

/* MemAvailable from /proc/meminfo, in KiB. */
static long mem_available_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb < 0)
		die("no MemAvailable in /proc/meminfo");
	return kb;
}

static void bench_long(struct store *st, size_t events)
{
	static const char marker[] = "zqxjv the very last answer of this long session";
	int n = events >= 1000000 || opt.quick ? 1 : 3;
	fprintf(stderr, "[4] a %zu-event session opened with -r, %d rounds\n", events, n);
	uint64_t t0 = clock_mono_ns();
	char id[64];
	char *path = sessionlog_build(st, work_dir, events, gen_small_turn, marker, id);
	struct stat sb;
	if (stat(path, &sb) < 0)
		die("stat %s: %s", path, strerror(errno));
	fprintf(stderr, "    built in %.1f s: %s, %.1f MiB compressed\n", ms_since(t0) / 1e3, id,
		(double)sb.st_size / 1048576.0);
	struct raw_load rl;
	uint64_t tr = clock_mono_ns();
	size_t lines = raw_load(path, events + 4, false, &rl); /* also warms the page cache */
	double raw_ms = ms_since(tr);
	double json_kb = (double)rl.content_bytes / 1024.0;
	fprintf(stderr, "    %zu events, %.1f MiB decompressed (%.0f B/event); raw load (decompress + "
			"parse every line) %.0f ms\n",
		lines, json_kb / 1024.0, (double)rl.content_bytes / (double)lines, raw_ms);
	double *ms = xcalloc((size_t)n, sizeof *ms), *kb = xcalloc((size_t)n, sizeof *kb);
	double *rms = xcalloc((size_t)n, sizeof *rms), *rkb = xcalloc((size_t)n, sizeof *rkb);
	double *hwm = xcalloc((size_t)n, sizeof *hwm);
	const char *args[] = {"-r", id, NULL};
	bool cut = false, rcut = false;
	long guard = mem_available_kb() / 2;
	/* A warm-up open, not timed: the catalog learns of the log built
	 * here as it learns of a session cairn writes, while it is written
	 * (its first open otherwise indexes every event for search). */
	for (int r = -1; r < n && !cut; r++) {
		struct tty t;
		tty_start(&t, args, NULL);
		/* Until the end shows, then until the session is ready (the
		 * host read it whole): each until the time limit, or cairn
		 * holding half the memory available when it started. */
		/* The warm-up may index the whole log for search: ten minutes. */
		int secs = r < 0 && opt.long_limit < 600 ? 600 : opt.long_limit;
		uint64_t limit = t.t0 + (uint64_t)secs * 1000000000u, now;
		double end_ms = 0, end_kb = 0;
		bool shown = false;
		long k = 0;
		size_t from = 0;
		while (!find(&t, from, "idle") || !shown) {
			const char *at = shown ? NULL : find(&t, 0, marker);
			if (at) {
				shown = true;
				end_ms = (double)(clock_mono_ns() - t.t0) / 1e6;
				end_kb = (double)rss_kb(t.pid);
				/* the status line is drawn below the transcript */
				from = (size_t)(at - t.out.p);
				continue;
			}
			if (t.eof)
				die("cairn -r %s exited before showing the end", id);
			if ((now = clock_mono_ns()) > limit || (k = rss_kb(t.pid)) > guard) {
				if (!shown)
					cut = true;
				else
					rcut = true;
				break;
			}
			tty_pump(&t, 100);
		}
		now = clock_mono_ns();
		if (r < 0)
			fprintf(stderr, "    warm-up open: ready at %.0f ms\n", (double)(now - t.t0) / 1e6);
		if (r >= 0) {
			ms[r] = shown ? end_ms : (double)(now - t.t0) / 1e6;
			kb[r] = shown ? end_kb : (double)rss_kb(t.pid);
			rms[r] = (double)(now - t.t0) / 1e6;
			/* What the open session keeps: a moment after ready, when
			 * what the open freed went back to the system. */
			tty_drain(&t, 1000);
			rkb[r] = (double)rss_kb(t.pid);
			hwm[r] = (double)proc_kb(t.pid, "VmHWM");
			fprintf(stderr,
				"    round %d: %s at %.0f ms (VmRSS %.1f MiB), %s at %.0f ms, VmRSS 1 s "
				"later %.1f MiB (%.2f x), peak %.1f MiB (%.2f x)\n",
				r + 1, shown ? "the end on the screen" : "CUT OFF, the end not shown yet",
				ms[r], kb[r] / 1024.0, rcut || !shown ? "CUT OFF before ready" : "ready",
				rms[r], rkb[r] / 1024.0, rkb[r] / json_kb, hwm[r] / 1024.0,
				hwm[r] / json_kb);
		}
		tty_kill(&t);
		if (cut || rcut)
			n = r + 1 > 0 ? r + 1 : 1;
		if (r < 0 && (cut || rcut))
			die("the warm-up open of %s did not finish", id);
	}
	char m[64], a[32], b[32], tg[32];
	double o = median(ms, (size_t)n), k = median(kb, (size_t)n);
	double ro = median(rms, (size_t)n), rk = median(rkb, (size_t)n), hk = median(hwm, (size_t)n);
	bool big = events >= 1000000;
	snprintf(m, sizeof m, "%zu events: exec -> end shown (ref: raw)", events);
	snprintf(a, sizeof a, "%s%.0f ms", cut ? "> " : "", o);
	fmt_ms(b, sizeof b, raw_ms);
	add_row(m, a, b, big ? o / 150.0 : o / raw_ms, true, big ? "<= 150 ms" : "(info)",
		big ? (o <= 150 && !cut ? "PASS" : "MISS") : cut ? "CUT" : "");
	/* Issue 22: ready to send <= 300 ms for 100,000 events, <= 2 s for
	 * 1,000,000 (the ratio column: to the target). */
	double ready_max = big ? 2000 : 300;
	snprintf(m, sizeof m, "%zu events: exec -> ready", events);
	snprintf(a, sizeof a, "%s%.0f ms", cut || rcut ? "> " : "", ro);
	snprintf(tg, sizeof tg, "<= %.0f ms", ready_max);
	add_row(m, a, "", ro / ready_max, true, tg, ro <= ready_max && !cut && !rcut ? "PASS" : "MISS");
	snprintf(m, sizeof m, "%zu events: VmRSS at end shown", events);
	snprintf(a, sizeof a, "%.1f MiB", k / 1024.0);
	fmt_mib(b, sizeof b, json_kb);
	add_row(m, a, b, k / json_kb, true, "(info)", "");
	snprintf(m, sizeof m, "%zu events: peak RSS (VmHWM), opening", events);
	snprintf(a, sizeof a, "%.1f MiB", hk / 1024.0);
	add_row(m, a, b, hk / json_kb, true, big ? "<= 2.00" : "(info)",
		big ? (hk <= 2 * json_kb && !cut && !rcut ? "PASS" : "MISS") : "");
	snprintf(m, sizeof m, "%zu events: RSS 1 s after ready vs JSON", events);
	snprintf(a, sizeof a, "%s%.1f MiB", cut || rcut ? ">= " : "", rk / 1024.0);
	snprintf(tg, sizeof tg, big ? "< 1.50" : "(info)");
	add_row(m, a, b, rk / json_kb, true, tg,
		big ? (rk < 1.5 * json_kb && !cut && !rcut ? "PASS" : "MISS") : cut || rcut ? "CUT" : "");
	free(ms), free(kb), free(rms), free(rkb), free(hwm), free(path);
}

/* ---- main ------------------------------------------------------------------ */

static void locate(const char *argv0)
{
	const char *env = getenv("CAIRN");
	char self[PATH_MAX];
	if (!realpath(argv0, self))
		die("cannot resolve %s", argv0);
	char *d = dirname(self); /* BUILD/bench */
	snprintf(aux_dir, sizeof aux_dir, "%s/aux", d);
	if (env && *env)
		snprintf(cairn_bin, sizeof cairn_bin, "%s", env);
	else
		snprintf(cairn_bin, sizeof cairn_bin, "%s/../cairn", d);
	if (access(cairn_bin, X_OK) != 0)
		die("no cairn binary at %s (build it, or set CAIRN)", cairn_bin);
}

int main(int argc, char **argv)
{
	bench_set_name("bench_tui");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--rounds=", 9) == 0)
			opt.rounds = atoi(a + 9);
		else if (strncmp(a, "--stream-secs=", 14) == 0)
			opt.stream_secs = atoi(a + 14);
		else if (strncmp(a, "--long-limit=", 13) == 0)
			opt.long_limit = atoi(a + 13);
		else if (strcmp(a, "--quick") == 0)
			opt.quick = true;
		else if (strcmp(a, "--keep") == 0)
			opt.keep = true;
		else if (strcmp(a, "--long") == 0)
			opt.long_only = true;
	}
	if (opt.quick)
		opt.rounds = 7, opt.stream_secs = 4;
	if (opt.rounds < 1 || opt.rounds > 100 || opt.stream_secs < 1 || opt.stream_secs > 60 ||
	    opt.long_limit < 1)
		die("option out of range");
	locate(argv[0]);
	signal(SIGPIPE, SIG_IGN);
	umask(077);
	root = temp_dir();
	data_dir = xasprintf("%s/data", root);
	work_dir = xasprintf("%s/work", root);
	char *cfg = xasprintf("%s/config", root), *cfg2 = xasprintf("%s/config/cairn", root);
	char *home = xasprintf("%s/home", root);
	mkdir_p1(data_dir), mkdir_p1(work_dir), mkdir_p1(cfg), mkdir_p1(cfg2), mkdir_p1(home);
	cfg_path = xasprintf("%s/config.json", cfg2);
	write_config(0);
	char mach[256];
	describe_machine(mach, sizeof mach, root);
	fprintf(stderr, "bench_tui: %s; cairn %s; a %dx%d pty\n", mach, cairn_bin, COLS, ROWS);
	uint64_t t0 = clock_mono_ns();
	if (!opt.long_only) {
		bench_startup();
		bench_idle();
		bench_stream();
	}
	struct store *st;
	struct cerr e;
	if (store_open(data_dir, true, &st, &e) < 0)
		die_err("store_open", &e);
	bench_long(st, 100000);
	if (!opt.quick)
		bench_long(st, 1000000);
	store_close(st);
	print_table("ref", 46, 7, 12);
	printf("(bench_tui: %.0f s total)\n", ms_since(t0) / 1e3);
	temp_dir_done(root, opt.keep);
	free(cfg), free(cfg2), free(home), free(data_dir), free(work_dir), free(cfg_path), free(root);
	return 0;
}
