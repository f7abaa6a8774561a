/* support_dataset.h — bench_catalog's data set: 10,000 generated sessions
 * of about 30 turns (see bench_catalog.md, "Data set"), kept under
 * $BENCH_DIR between runs with the catalog built from them. */
#ifndef CAIRN_BENCH_SUPPORT_DATASET_H
#define CAIRN_BENCH_SUPPORT_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#define RARE_TERM "quetzalcoatl"
#define COMMON_TERM "function"
#define CJK_TERM "配置文件"
#define CJK2_TERM "日志" /* two characters (once too short for a trigram index) */
#define RARE_EVERY 1000 /* one session in RARE_EVERY mentions RARE_TERM once */

struct gen_stats {
	uint64_t sessions, turns, events, frames;
};

struct dataset_info {
	struct gen_stats gs;
	double gen_s, sync_s;
	uint64_t log_bytes, db_bytes;
	bool cached;  /* reused from an earlier run */
	bool rebuilt; /* its index.db was built in this run */
	char *dir;    /* the data set's directory (owned; dataset_release) */
	char *root;   /* dir/root, the data root (owned) */
	bool is_temp; /* dir is under the run's temp dir (no $BENCH_DIR) */
};


struct dataset_opts {
	size_t sessions;
	unsigned turns;
	bool regen;           /* generate again even when cached */
	bool rebuild_catalog; /* build index.db again even when it fits */
	const char *work;     /* the run's temp dir (used without $BENCH_DIR) */
};

/* Generate the data set, or reuse a cached one (rebuilding its index.db
 * when it does not fit this build), and describe it in *di; dies on
 * failure. Free di's strings with dataset_release. */
void dataset_prepare(const struct dataset_opts *o, struct dataset_info *di);
void dataset_release(struct dataset_info *di);
/* The first column of the first row of sql (?1 bound to q when not NULL),
 * -1 without a row; dies if sql does not compile. */
long long sql_int(sqlite3 *db, const char *sql, const char *q);

#endif
