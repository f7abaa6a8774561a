/* support_queries.c — the search queries at the caps' worst cases and
 * their p99. */
#include "bench/support_queries.h"
#include "bench/support_bench.h"
#include "bench/support_dataset.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The i-th word of the list made of ASCII letters only: one token each. */
static const char *plain_word(size_t i)
{
	for (size_t k = 0; k < BENCH_N_WORDS; k++) {
		const char *w = bench_words[k];
		bool plain = true;
		for (const char *p = w; *p; p++)
			plain &= (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
		if (plain && i-- == 0)
			return w;
	}
	die("the vocabulary has too few plain words");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void time_one(const char *what, const char *q,
		     double (*run)(const char *, void *, double *), void *ctx, int runs,
		     double limit_ms)
{
	run(q, ctx, NULL);
	double *v = xcalloc((size_t)runs, sizeof *v), *cpu = xcalloc((size_t)runs, sizeof *cpu);
	double total = 0;
	int n = 0;
	while (n < runs && total < 20000) {
		total += v[n] = run(q, ctx, &cpu[n]);
		n++;
	}
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	size_t rank99 = ((size_t)n * 99 + 99) / 100; /* nearest rank, from 1 */
	double p99 = v[rank99 - 1];
	char metric[64], ours[24], ref[24], target[16];
	snprintf(metric, sizeof metric, "%s p99", what);
	snprintf(ours, sizeof ours, "%.1f ms", p99);
	snprintf(ref, sizeof ref, "%.0f ms", limit_ms);
	snprintf(target, sizeof target, "< %.0f ms", limit_ms);
	add_row(metric, ours, ref, p99 / limit_ms, true, target, p99 < limit_ms ? "PASS" : "MISS");
	char info[64];
	snprintf(info, sizeof info, "  same, median of %d runs (%zu B), CPU", n, strlen(q));
	add_info_ms(info, median(v, (size_t)n), median(cpu, (size_t)n));
	free(v);
	free(cpu);
}

/* "search: <n> <what>" (static storage). */
static const char *named(int n, const char *what)
{
	static char name[80];
	snprintf(name, sizeof name, "search: %d %s", n, what);
	return name;
}

void bench_search_worst(double (*run)(const char *query, void *ctx, double *cpu_ms), void *ctx,
			int runs, double limit_ms)
{
	fprintf(stderr, "[2] search at the caps' worst cases (%d words, %d bytes)\n",
		CATALOG_QUERY_MAX_WORDS, CATALOG_QUERY_MAX_BYTES);
	struct buf q = BUF_INIT;
	for (size_t i = 0; i < CATALOG_QUERY_MAX_WORDS; i++)
		buf_printf(&q, "%s%s", i ? " " : "", plain_word(i));
	time_one(named(CATALOG_QUERY_MAX_WORDS, "common words"), q.p, run, ctx, runs, limit_ms);

	buf_reset(&q);
	for (size_t i = 0; i < CATALOG_QUERY_MAX_WORDS - 1; i++)
		buf_printf(&q, "%s ", plain_word(i));
	buf_adds(&q, RARE_TERM);
	time_one(named(CATALOG_QUERY_MAX_WORDS - 1, "common words + a rare one"), q.p, run, ctx, runs, limit_ms);

	buf_reset(&q);
	for (size_t i = 0; i < CATALOG_QUERY_MAX_WORDS; i++) {
		if (i < BENCH_N_RARE_WORDS)
			buf_printf(&q, "%s ", bench_rare_words[i]);
		else if (i == BENCH_N_RARE_WORDS)
			buf_printf(&q, "%s ", RARE_TERM);
		else /* rarer still: in no document */
			buf_printf(&q, "%s%zu ", bench_rare_words[i % BENCH_N_RARE_WORDS], i);
	}
	time_one(named(CATALOG_QUERY_MAX_WORDS, "rare words"), q.p, run, ctx, runs, limit_ms);

	buf_reset(&q);
	for (size_t i = 0; i < CATALOG_QUERY_MAX_WORDS; i++)
		buf_printf(&q, "zq%zuxv ", i);
	time_one(named(CATALOG_QUERY_MAX_WORDS, "words that match nothing"), q.p, run, ctx, runs, limit_ms);

	/* characters without spaces: a character pair for each but the last, and a character. */
	buf_reset(&q);
	size_t chars = 0;
	for (size_t i = 0; chars < CATALOG_QUERY_MAX_WORDS; i++) {
		const char *w = bench_zh_words[i % BENCH_N_ZH_WORDS];
		for (const char *p = w; *p && chars < CATALOG_QUERY_MAX_WORDS; p += 3, chars++)
			buf_add(&q, p, 3); /* these are all 3-byte characters */
	}
	time_one(named(CATALOG_QUERY_MAX_WORDS, "CJK characters in one run"), q.p, run, ctx, runs, limit_ms);

	buf_reset(&q);
	for (size_t i = 0; i < CATALOG_QUERY_MAX_WORDS / 2; i++)
		buf_printf(&q, "\"%s %s\" ", plain_word(i), plain_word((i * 7 + 1) % CATALOG_QUERY_MAX_WORDS));
	time_one(named(CATALOG_QUERY_MAX_WORDS / 2, "phrases of 2 common words"), q.p, run, ctx, runs, limit_ms);

	buf_reset(&q);
	buf_printf(&q, "\"%s %s\" \"%s %s\"", plain_word(0), plain_word(1), plain_word(1),
		   plain_word(8));
	time_one("search: 2 phrases of common words", q.p, run, ctx, runs, limit_ms);

	time_one("search: " COMMON_TERM " (in half of all documents)", COMMON_TERM, run, ctx, runs,
		 limit_ms);

	buf_reset(&q);
	while (q.len + 2 <= CATALOG_QUERY_MAX_BYTES)
		buf_adds(&q, q.len ? " a" : "a");
	time_one("search: 'a' repeated to 1 KiB", q.p, run, ctx, runs, limit_ms);
	buf_release(&q);
}
