/* support_bench.c — what the bench binaries share (see support_bench.h). */
#include "bench/support_bench.h"

#include "base/clock.h"
#include "base/xalloc.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <sqlite3.h>

/* ---- errors and timing ------------------------------------------------- */

static const char *prog = "bench";

void bench_set_name(const char *name)
{
	prog = name;
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void die_err(const char *what, const struct cerr *e)
{
	die("%s: %s (%s)", what, e->msg, cerr_class_name(e->cls));
}

double ms_since(uint64_t t0)
{
	return (double)(clock_mono_ns() - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double median(const double *v, size_t n)
{
	double *c = xmalloc(n * sizeof *c);
	memcpy(c, v, n * sizeof *c);
	qsort(c, n, sizeof *c, cmp_double);
	double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return m;
}

/* ---- files and directories -------------------------------------------- */

const char *bench_dir(void)
{
	const char *bd = getenv("BENCH_DIR");
	return bd && *bd ? bd : NULL;
}

const char *base_dir(void)
{
	const char *base = bench_dir();
	if (!base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	return base;
}

char *temp_dir(void)
{
	char *t = xasprintf("%s/cairn-bench-XXXXXX", base_dir());
	if (!mkdtemp(t))
		die("cannot create a temp dir under %s: %s", base_dir(), strerror(errno));
	return t;
}

static int rm_one(const char *p, const struct stat *sb, int type, struct FTW *f)
{
	(void)sb;
	(void)type;
	(void)f;
	return remove(p);
}

void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void temp_dir_done(const char *dir, bool keep)
{
	if (keep)
		fprintf(stderr, "kept %s\n", dir);
	else
		rm_tree(dir);
}

void mkdir_p1(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
}

static int nosync(int fd)
{
	(void)fd;
	return 0;
}

const struct fsops *fsops_nosync(void)
{
	static struct fsops fast;
	fast = fsops_real;
	fast.fsync = nosync;
	fast.fdatasync = nosync;
	return &fast;
}

void describe_machine(char *out, size_t n, const char *dir)
{
	char model[128] = "?";
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[256];
		while (fgets(line, sizeof line, f))
			if (strncmp(line, "model name", 10) == 0) {
				const char *p = strchr(line, ':');
				if (p) {
					snprintf(model, sizeof model, "%s", p + 2);
					model[strcspn(model, "\n")] = '\0';
				}
				break;
			}
		fclose(f);
	}
	const char *fs = "?";
	struct statfs sf;
	if (statfs(dir, &sf) == 0) {
		switch ((unsigned long)sf.f_type) {
		case 0xEF53: fs = "ext4"; break;
		case 0x58465342: fs = "xfs"; break;
		case 0x9123683E: fs = "btrfs"; break;
		case 0x01021994: fs = "tmpfs"; break;
		case 0x794C7630: fs = "overlayfs"; break;
		case 0x2FC12FC1: fs = "zfs"; break;
		case 0xF2F52010: fs = "f2fs"; break;
		default: fs = "other"; break;
		}
	}
	struct utsname u;
	if (uname(&u) < 0)
		snprintf(u.release, sizeof u.release, "?");
	snprintf(out, n, "%ld cpus, %s, %s, Linux %s, SQLite %s", sysconf(_SC_NPROCESSORS_ONLN),
		 model, fs, u.release, sqlite3_libversion());
}

/* ---- random numbers and prose ----------------------------------------- */

/* xorshift64*; rng_seed() sets the state with splitmix64. */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;

void rng_seed(uint64_t s)
{
	s += 0x9E3779B97F4A7C15u; /* splitmix64 */
	s = (s ^ (s >> 30)) * 0xBF58476D1CE4E5B9u;
	s = (s ^ (s >> 27)) * 0x94D049BB133111EBu;
	rng_state = (s ^ (s >> 31)) | 1;
}

uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Du;
}

unsigned rnd_in(unsigned lo, unsigned hi)
{
	return lo + (unsigned)(rnd() % (uint64_t)(hi - lo + 1));
}

const char *const bench_words[BENCH_N_WORDS] = {
	"the", "a", "function", "returns", "error", "file", "buffer", "when", "is", "not",
	"we", "should", "check", "this", "that", "value", "in", "of", "to", "and", "for",
	"test", "fails", "because", "pointer", "NULL", "struct", "log", "append", "frame",
	"seq", "turn", "call", "result", "with", "length", "size_t", "int", "return", "-1",
	"errno", "EIO", "fsync", "write", "read", "path", "directory", "session", "line",
	"JSON", "parse", "zstd", "compress", "header", "cursor", "lock", "open", "close",
	"Makefile", "build", "warning:", "unused", "variable", "src/main.c:42:7", "{", "}",
	"if", "(n", "==", "0)", "+=", "ok", "let's", "now", "I'll", "look", "at", "déjà",
	"naïve", "—", "→", "✓", "café", "über", "config", "index", "query", "cache",
	"thread", "socket", "timeout", "retry", "request", "response", "handler", "schema",
	"memory", "output", "input", "module",
};

/* Sessions written in Chinese mix these in (no spaces between them). */
const char *const bench_zh_words[BENCH_N_ZH_WORDS] = {
	"数据库", "连接失败", "请检查配置文件", "内存泄漏", "函数返回错误", "日志", "会话",
	"为什么", "测试没有通过", "索引", "查询很慢", "重试", "超时了", "我们", "应该",
};

/* Rarely used words: each appears in well under 0.1% of the documents. */
const char *const bench_rare_words[BENCH_N_RARE_WORDS] = {
	"xenolith", "brachistochrone", "sesquipedalian", "palimpsest", "zugzwang",
	"defenestration", "kerfuffle", "borborygmus",
};

void gen_prose(struct buf *b, size_t n, bool zh)
{
	buf_reset(b);
	size_t nw = BENCH_N_WORDS, nz = BENCH_N_ZH_WORDS;
	while (b->len < n) {
		bool z = zh && rnd_in(0, 1) == 0;
		if (b->len && !(z && rnd_in(0, 2) != 0)) {
			unsigned r = rnd_in(0, 99);
			buf_addc(b, r < 4 ? '\n' : r < 5 ? '\t' : ' ');
		}
		const char *w = z ? bench_zh_words[rnd() % nz] : bench_words[rnd() % nw];
		if (rnd_in(0, 4999) == 0)
			w = bench_rare_words[rnd() % BENCH_N_RARE_WORDS];
		if (rnd_in(0, 49) == 0) {
			buf_addc(b, '"');
			buf_adds(b, w);
			buf_addc(b, '"');
		} else {
			buf_adds(b, w);
		}
	}
}

/* ---- results table ---------------------------------------------------- */

struct trow {
	char metric[64], ours[24], ref[24], target[16], result[8];
	double ratio;
	bool has_ratio;
};
static struct trow *rows;
static size_t n_rows, cap_rows;

void table_add(const char *metric, const char *ours, const char *ref, double ratio,
	       bool has_ratio, const char *target, const char *result)
{
	if (n_rows == cap_rows) {
		cap_rows = cap_rows ? 2 * cap_rows : 32;
		rows = xreallocarray(rows, cap_rows, sizeof *rows);
	}
	struct trow *r = &rows[n_rows++];
	snprintf(r->metric, sizeof r->metric, "%s", metric);
	snprintf(r->ours, sizeof r->ours, "%s", ours);
	snprintf(r->ref, sizeof r->ref, "%s", ref);
	snprintf(r->target, sizeof r->target, "%s", target);
	snprintf(r->result, sizeof r->result, "%s", result);
	r->ratio = ratio;
	r->has_ratio = has_ratio;
}

void add_row(const char *metric, const char *ours, const char *ref, double ratio,
	     bool has_ratio, const char *target, const char *result)
{
	table_add(metric, ours, ref, ratio, has_ratio, target, result);
	if (has_ratio)
		fprintf(stderr, "  -> %s: %s vs %s, ratio %.3f %s %s\n", metric, ours, ref, ratio,
			target, result);
	else
		fprintf(stderr, "  -> %s: %s%s%s %s %s\n", metric, ours, ref[0] ? ", " : "", ref,
			target, result);
}

void add_time_row(const char *metric, double ms, double limit_ms)
{
	char o[24], l[24], t[16];
	snprintf(o, sizeof o, "%.1f ms", ms);
	snprintf(l, sizeof l, "%.0f ms", limit_ms);
	snprintf(t, sizeof t, "< %.0f ms", limit_ms);
	add_row(metric, o, l, ms / limit_ms, true, t, ms < limit_ms ? "PASS" : "MISS");
}

void add_info_ms(const char *metric, double ms, double cpu_ms)
{
	char o[24], c[24] = "";
	snprintf(o, sizeof o, "%.2f ms", ms);
	if (cpu_ms >= 0)
		snprintf(c, sizeof c, "cpu %.2f ms", cpu_ms);
	add_row(metric, o, c, 0, false, "(info)", "-");
}

void print_table(const char *ref_head, int metric_w, int ratio_w, int target_w)
{
	printf("\n%-*s %12s %12s %*s %*s  %s\n", metric_w, "metric", "ours", ref_head, ratio_w,
	       "ratio", target_w, "target", "result");
	for (size_t i = 0; i < n_rows; i++) {
		const struct trow *r = &rows[i];
		char rt[16] = "";
		if (r->has_ratio)
			snprintf(rt, sizeof rt, "%.3f", r->ratio);
		/* Pad by characters, not bytes (the metric may hold UTF-8). */
		int extra = 0;
		for (const char *p = r->metric; *p; p++)
			extra += ((unsigned char)*p & 0xC0) == 0x80;
		printf("%-*s %12s %12s %*s %*s  %s\n", metric_w + extra, r->metric, r->ours, r->ref,
		       ratio_w, rt, target_w, r->target, r->result);
	}
}
