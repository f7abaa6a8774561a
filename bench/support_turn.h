/* support_turn.h — what the turn benches (bench_turn, bench_continue)
 * share: the cairn binary and the programs run beside it (BUILD/bench/aux),
 * a temp dir with cairn's data, home and configuration, the Chat
 * Completions server thread (bench/support_chatsrv.c), running a client as
 * a child against it, the fsync counter's log (aux/fsync_count.so) and the
 * fdatasync probe.
 *
 * Calling sequence: bench_set_name(), turnb_start() (it chdirs into the
 * temp dir: cairn's working directory, no AGENTS.md, no .git), runs with
 * turnb_spawn() / turnb_cairn(), turnb_stop(). */
#ifndef CAIRN_SUPPORT_TURN_H
#define CAIRN_SUPPORT_TURN_H

#include "base/buf.h"
#include "bench/support_chatsrv.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The bench's programs and files; strings owned by it until turnb_stop. */
struct turnb {
	char cairn_bin[PATH_MAX], aux_dir[PATH_MAX];
	char *root, *data_dir, *out_path, *err_path, *fsync_log;
	struct chatsrv *srv;
	char base_url[64];
};

/* Finds cairn ($CAIRN, else BUILD/cairn beside this binary's folder) and
 * the aux programs, makes the temp dir and its folders, chdirs there,
 * prints "NAME: " and the machine line on stderr and starts the server; dies on
 * failure. */
void turnb_start(struct turnb *tb, const char *name);
/* Stops the server; removes the temp dir unless keep; frees tb's strings. */
void turnb_stop(struct turnb *tb, bool keep);

/* One child's figures. */
struct run {
	double wall_ms, cpu_ms, sys_ms, first_req_ms; /* first_req_ms < 0: no request */
	long rss_kb;
	uint64_t t0, arrived_ns;
	size_t n_req;
	struct chatsrv_request rq; /* the first request, when n_req > 0 */
};

/* Runs argv with env (NULL-terminated: the whole environment), stdin from
 * /dev/null, stdout to tb->out_path and stderr to tb->err_path; fills r
 * with its wall time (from just before the spawn to its exit), CPU time and
 * peak RSS from wait4, and what the server saw (dies if it refused a
 * request). Returns the wait status. */
int turnb_spawn(struct turnb *tb, const char *const *argv, const char *const *env, struct run *r);

/* cairn --data-dir DATA ARGS... with cairn's environment (HOME, its
 * configuration and OPENAI_BASE_URL in the temp dir, PATH), with preload
 * under the fsync counter; args is NULL-terminated. stdout and stderr are
 * read into out and err (reset first; NULL: not read). Returns the wait
 * status. */
int turnb_cairn(struct turnb *tb, const char *const *args, bool preload, struct run *r,
		struct buf *out, struct buf *err);

/* Reads the whole file at path into b (reset first); dies on failure. */
void turnb_read_file(const char *path, struct buf *b);

/* The session id from cairn's "cairn: session ID" line on stderr. */
void turnb_session_of(const struct buf *err, char id[32]);

/* The fsync counter's log of one preloaded run. */
struct syncs {
	unsigned total, before;       /* all, and those done before the request arrived */
	double total_ms, before_ms;   /* time spent in them */
	uint64_t first_ns, last_ns;   /* the first started, the last before the request ended */
	char list[400];               /* the calls before the request, in order, with their ms */
};

/* Reads the counter's log of the last preloaded run r into s. */
void turnb_read_syncs(const struct turnb *tb, const struct run *r, struct syncs *s);
/* Prints s (and r's times from exec) on stderr, indented. */
void turnb_print_syncs(const struct syncs *s, const struct run *r);
/* The median of sy[0..n) by syncs before the request (sy is sorted). */
struct syncs turnb_median_syncs(struct syncs *sy, size_t n);

/* The time of n 512-byte O_APPEND write + fdatasync in dir (ms), after
 * three warm-up appends, into v[0..n). */
void turnb_probe_fdatasync(const char *dir, double *v, size_t n);

/* "1.23 ms" below 10 ms, else "12.3 ms". */
void fmt_ms(char *o, size_t n, double ms);

#endif
