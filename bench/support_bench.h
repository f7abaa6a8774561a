/* support_bench.h — what the bench binaries share: fatal errors, timing and
 * medians, the temp dir under $BENCH_DIR, a seeded random generator and
 * prose, the machine line, and the results table each binary prints at the
 * end. The Makefile links bench/support_*.c into every bench binary.
 *
 * Calling sequence: bench_set_name("bench_x") first (die() puts it before
 * its messages), then temp_dir(); rows go in with add_row() and friends as
 * the tests end; print_table() at the end, then temp_dir_done(). */
#ifndef CAIRN_SUPPORT_BENCH_H
#define CAIRN_SUPPORT_BENCH_H

#include "base/buf.h"
#include "base/err.h"
#include "persist/fsops.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors and timing ------------------------------------------------- */

/* Sets the program name that die() prints; name is kept, not copied. */
void bench_set_name(const char *name);

/* Prints "NAME: message" and a newline to stderr, then exits 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* die() with "what: message (class)" from e. */
void die_err(const char *what, const struct cerr *e) __attribute__((noreturn));

/* Milliseconds elapsed since t0, a clock_mono_ns() reading. */
double ms_since(uint64_t t0);

/* The median of v[0..n), n >= 1; v is left unchanged. */
double median(const double *v, size_t n);

/* ---- files and directories -------------------------------------------- */

/* $BENCH_DIR when set and not empty, else NULL; the string belongs to the
 * environment. */
const char *bench_dir(void);

/* Where temp dirs go: $BENCH_DIR, else $TMPDIR, else /tmp; the string
 * belongs to the environment (or is static). */
const char *base_dir(void);

/* Creates a fresh base_dir()/cairn-bench-XXXXXX (dies if it cannot);
 * returns its path, which the caller frees. */
char *temp_dir(void);

/* Removes path and everything below it without following symlinks;
 * failures are ignored. */
void rm_tree(const char *path);

/* At the end of a run: with keep, prints "kept DIR" to stderr, else removes
 * dir (rm_tree). dir stays the caller's. */
void temp_dir_done(const char *dir, bool keep);

/* mkdir(path, 0700) that accepts an existing directory; dies on any other
 * error. */
void mkdir_p1(const char *path);

/* fsops_real with fsync and fdatasync made no-ops, for building data sets
 * quickly; a static table, owned by this module. */
const struct fsops *fsops_nosync(void);

/* Writes "N cpus, MODEL, FS, Linux RELEASE, SQLite VERSION" into out
 * (n bytes), FS being the type of the file system holding dir. */
void describe_machine(char *out, size_t n, const char *dir);

/* ---- random numbers and prose ----------------------------------------- */

/* Seeds rnd() from s (splitmix64), e.g. per session, so that what is
 * generated does not depend on the order of generation. Unseeded, rnd()
 * starts from a fixed state. */
void rng_seed(uint64_t s);

/* The next number of the generator (xorshift64*; one state per process). */
uint64_t rnd(void);

/* A number in [lo, hi] from rnd(). */
unsigned rnd_in(unsigned lo, unsigned hi);

/* The vocabulary of gen_prose: 100 words (each about equally likely),
 * Chinese words, and 8 uncommon words. */
#define BENCH_N_WORDS 100
#define BENCH_N_ZH_WORDS 15
#define BENCH_N_RARE_WORDS 8
extern const char *const bench_words[BENCH_N_WORDS];
extern const char *const bench_zh_words[BENCH_N_ZH_WORDS];
extern const char *const bench_rare_words[BENCH_N_RARE_WORDS];

/* Replaces b's content with prose of about n bytes (at least n) drawn with
 * rnd(): words from a 100-word list, the odd newline, tab and quote (JSON
 * escapes), non-ASCII, rarely one of 8 uncommon words; with zh, runs of
 * Chinese without spaces mixed in. b stays the caller's. */
void gen_prose(struct buf *b, size_t n, bool zh);

/* ---- results table ---------------------------------------------------- */

/* Adds a row to the results table and echoes it to stderr as
 * "  -> metric: ours vs ref, ratio R target result" (the ratio only when
 * has_ratio). The strings are copied, cut to the column's size. */
void add_row(const char *metric, const char *ours, const char *ref, double ratio,
	     bool has_ratio, const char *target, const char *result);

/* add_row() without the echo to stderr, for a binary that prints its own. */
void table_add(const char *metric, const char *ours, const char *ref, double ratio,
	       bool has_ratio, const char *target, const char *result);

/* A row for a wall time against a limit: "ms" vs "limit ms", ratio
 * ours / limit, target "< limit ms", PASS when ms < limit_ms, else MISS. */
void add_time_row(const char *metric, double ms, double limit_ms);

/* An informational row "(info)" for a time in ms, with the CPU time of the
 * same runs in the second column (cpu_ms < 0: not measured, left empty). */
void add_info_ms(const char *metric, double ms, double cpu_ms);

/* Prints the rows added so far to stdout, after an empty line and a header
 * line: the metric column metric_w characters wide (padded by characters,
 * not bytes), ours and ref 12 wide (ref headed ref_head), the ratio
 * ratio_w wide (%.3f, or empty), the target target_w wide, then the result. */
void print_table(const char *ref_head, int metric_w, int ratio_w, int target_w);

#endif
