/* support_queries.h — search queries at the caps' worst cases (issue 9:
 * every query answers within 100 ms at p99), built from the data set's
 * vocabulary (support_bench.h), and their timing. */
#ifndef CAIRN_BENCH_SUPPORT_QUERIES_H
#define CAIRN_BENCH_SUPPORT_QUERIES_H

/* Time each worst-case query with run (the wall ms of one search for the
 * query, its CPU ms in *cpu_ms when not NULL; ctx is passed through): one
 * warm-up, then up to runs runs (fewer once a query has taken 20 s), and a
 * row per query with the p99 (nearest rank) against limit_ms, and one with
 * the medians of wall and CPU time. */
void bench_search_worst(double (*run)(const char *query, void *ctx, double *cpu_ms), void *ctx,
			int runs, double limit_ms);

#endif
