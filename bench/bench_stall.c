/* bench_stall.c — how long the loop thread stalls while persistence runs
 * around it (issue 10, "Loop stall"). Typing in the chat screen stays
 * smooth only if the loop answers within a frame or two.
 *
 * A uv_timer re-armed at 1 ms on the loop records how late each firing is
 * (callback time minus arming time minus 1 ms). First with nothing else
 * on the loop (the baseline, same run: libuv's millisecond timers alone
 * account for most of it); then while, on the same loop:
 *   - 8 sessions save turns back to back through the FIFO (persist/fifo.h,
 *     asynchronous API: each posts its next full save from the receipt of
 *     the last), into a data root of their own;
 *   - a session of --events events (about 300 bytes each) is loaded over
 *     and over on a libuv worker (load_async, as a viewer or the
 *     browser's preview loads a session), completing on the loop;
 *   - a search is typed into catalog_worker every 30 ms (the prefixes of a
 *     word, one character at a time, then the next word), on the data set
 *     of bench_catalog (--sessions sessions of 20 turns, cached under
 *     $BENCH_DIR like bench_catalog's).
 * Target: p99 of the lateness under load <= 2 ms; the maximum is reported
 * (on 2 cores the scheduler decides it). The data set is read only: the
 * saves go to a root of their own, so a cached set stays as generated.
 *
 * Options: --sessions=N (data set, default 2000), --events=N (the loaded
 * session, default 20000), --ms=N (load phase, default 3000),
 * --only=saves,load,search (some of the three loads), --loop-slice-us=N
 * (an experiment: the loop thread asks the scheduler for an N us slice),
 * --helpers-nice=N (an experiment: the threads the loop starts run at nice
 * N, the loop at 0), --keep. */
#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "bench/support_dataset.h"
#include "persist/catalog_worker.h"
#include "persist/fifo.h"
#include "persist/load.h"
#include "persist/load_async.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <uv.h>

#define SAVERS 8
#define TYPE_MS 30 /* between two keystrokes in the search box */

static struct {
	size_t sessions;
	size_t events;
	int ms;
	bool keep;
	bool saves, load, search; /* which loads run (--only=...) */
	unsigned slice_us;        /* the loop thread's scheduler slice (0: the default) */
	int helpers_nice;         /* nice of the threads the loop starts (0: the loop's) */
} opt = {2000, 20000, 3000, false, true, true, true, 0, 0};

static char *work, *save_root, *droot;
static uv_loop_t loop;
static bool running; /* the load phase: keep posting */

/* ---- the probe: a 1 ms timer ---- */

static uv_timer_t probe;
static uint64_t armed;
static double *late;
static size_t n_late, cap_late;

static void probe_tick(uv_timer_t *t)
{
	uint64_t now = uv_hrtime();
	double ms = (double)(now - armed) / 1e6 - 1.0;
	if (n_late == cap_late)
		late = xreallocarray(late, cap_late = cap_late ? cap_late * 2 : 4096, sizeof *late);
	late[n_late++] = ms < 0 ? 0 : ms;
	armed = uv_hrtime();
	uv_update_time(&loop);
	uv_timer_start(t, probe_tick, 1, 0);
}

static void probe_start(void)
{
	n_late = 0;
	uv_update_time(&loop);
	armed = uv_hrtime();
	uv_timer_start(&probe, probe_tick, 1, 0);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct spread {
	double p50, p99, max;
	size_t n;
};

static struct spread spread_of(void)
{
	qsort(late, n_late, sizeof *late, by_value);
	struct spread s = {0, 0, 0, n_late};
	if (n_late) {
		s.p50 = late[n_late / 2];
		s.p99 = late[(size_t)((double)(n_late - 1) * 0.99)];
		s.max = late[n_late - 1];
	}
	return s;
}

/* ---- the loop's own work: callbacks between two polls ---- */

static uv_prepare_t before_poll;
static uv_check_t after_poll;
static uint64_t prep_ns, prep_idle;
static double prep_cpu, busy_max_ms, busy_sum_ms, cpu_max_ms;

static double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_prepare(uv_prepare_t *h)
{
	prep_ns = uv_hrtime();
	prep_idle = uv_metrics_idle_time(&loop);
	prep_cpu = thread_cpu_ms();
}

/* The poll's callbacks (FIFO receipts, worker completions): the time from
 * the prepare to this check less the time spent waiting in the poll. */
static void on_check(uv_check_t *h)
{
	double ms = (double)((uv_hrtime() - prep_ns) - (uv_metrics_idle_time(&loop) - prep_idle)) / 1e6;
	busy_sum_ms += ms;
	if (ms > busy_max_ms)
		busy_max_ms = ms;
	double cpu = thread_cpu_ms() - prep_cpu; /* the poll's own system time included */
	if (cpu > cpu_max_ms)
		cpu_max_ms = cpu;
}

/* The longest run of each of this bench's own callbacks (loop CPU time),
 * to tell them from the rest of the loop's work. */
enum { CB_SAVED, CB_SEARCHED, CB_LOADED, CB_KEY, CB_N };
static double cb_max[CB_N];
#define CB_TIMED(k, ...)                                                                           \
	do {                                                                                       \
		double c0_ = thread_cpu_ms();                                                      \
		__VA_ARGS__;                                                                       \
		double d_ = thread_cpu_ms() - c0_;                                                 \
		if (d_ > cb_max[k])                                                                \
			cb_max[k] = d_;                                                            \
	} while (0)

/* ---- 8 sessions saving turns ---- */

struct saver {
	char id[32];
	uint64_t seq, version; /* what the next save expects (seq 0 is the header) */
	unsigned turns;
	bool busy;
};

static struct saver savers[SAVERS];
static struct fifo *fifo;
static unsigned saves_done;
static char *turn_text;

static void post_turn(struct saver *s);

static void saved(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		  const struct cerr *err)
{
	struct saver *s = ctx;
	if (err)
		die_err("full save", err);
	s->seq = r->next_seq;
	s->version = r->content_version;
	s->busy = false;
	saves_done++;
	if (running)
		CB_TIMED(CB_SAVED, post_turn(s));
}

/* One turn as one full save: its start, the prompt, the answer, its end. */
static void post_turn(struct saver *s)
{
	char turn[32];
	snprintf(turn, sizeof turn, "t%u", s->turns++);
	static const char *const types[] = {"turn/start", "user/message", "assistant/text", "turn/end"};
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < 4; i++) {
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "type", types[i]);
		cJSON_AddStringToObject(ev, "turn", turn);
		cJSON *data = cJSON_AddObjectToObject(ev, "data");
		if (i == 1 || i == 2)
			cJSON_AddStringToObject(data, "text", turn_text);
		if (i == 3)
			cJSON_AddStringToObject(data, "outcome", "completed");
		cJSON_AddItemToArray(arr, ev);
	}
	struct fifo_item *it = fifo_full_save(s->id, s->seq, s->version, arr);
	if (s->turns == 1)
		fifo_item_create(it, "/home/dev/src/stall-bench");
	struct cerr e;
	if (fifo_post(fifo, it, saved, s, &e) < 0)
		die_err("fifo_post", &e);
	s->busy = true;
}

/* ---- a session loaded again and again ---- */

#define BIG_ID "stall-big"

static unsigned loads_done;
static double load_ms_sum;
static uint64_t load_events;
static uint64_t load_t0;

static void load_done(void *ctx, struct load *l, const struct cerr *err, bool canceled);

/* The product's load: load_async (persist/load_async.h) on a libuv worker. */
static void load_start(void)
{
	struct cerr e;
	struct load_req *req;
	load_t0 = clock_mono_ns();
	if (load_async(&loop, save_root, BIG_ID, NULL, load_done, NULL, &req, &e) < 0)
		die_err("load", &e);
}

static void load_done(void *ctx, struct load *l, const struct cerr *err, bool canceled)
{
	(void)ctx;
	if (err)
		die_err("load", err);
	if (!canceled) {
		load_events = load_count(l);
		load_free(l);
		loads_done++;
		load_ms_sum += ms_since(load_t0);
	}
	if (running)
		CB_TIMED(CB_LOADED, load_start());
}

static uv_work_t nop_req;
static void nop_work(uv_work_t *w)
{
}

/* The loaded session, written before anything is measured. */
static void make_big(void)
{
	struct store *st;
	struct log *lg;
	struct cerr e;
	if (store_open(save_root, true, &st, &e) < 0 ||
	    log_create(st, BIG_ID, "/home/dev/src/stall-big", NULL, &lg, &e) < 0)
		die_err("create the loaded session", &e);
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "text", turn_text);
	struct log_event evs[100];
	for (size_t i = 0; i < 100; i++)
		evs[i] = (struct log_event){.type = "assistant/text", .turn = "t0", .data = data};
	uint64_t next = 1;
	for (size_t done = 0; done < opt.events; done += 100)
		if (log_append(lg, next, evs, 100, &next, &e) < 0)
			die_err("log_append", &e);
	cJSON_Delete(data);
	log_close(lg);
	store_close(st);
}

/* ---- typing in the search box ---- */

static uv_timer_t typist;
static struct catalog_worker *cw;
static unsigned keys, searches_done, searches_superseded;

static void searched(void *ctx, struct catalog_worker_result *r)
{
	if (r->outcome == CATALOG_WORKER_FAILED)
		die_err("search", &r->err);
	if (r->outcome == CATALOG_WORKER_DONE)
		searches_done++;
	else
		searches_superseded++;
	CB_TIMED(CB_SEARCHED, cat_hits_free(r->hits, r->n_hits));
}

static void type_key(uv_timer_t *t)
{
	static const char *const words[] = {"function", RARE_TERM, "config", "variable", "return"};
	const char *w = words[(keys / 8) % 5];
	size_t len = keys % 8 + 1;
	char q[16];
	snprintf(q, sizeof q, "%.*s", (int)(len < strlen(w) ? len : strlen(w)), w);
	keys++;
	struct cerr e;
	int rc;
	CB_TIMED(CB_KEY, rc = catalog_worker_search(cw, q, 0, false, searched, NULL, &e));
	if (rc < 0)
		die_err("catalog_worker_search", &e);
}

static void worker_closed(void *ctx)
{
	*(bool *)ctx = true;
}

static void fifo_closed(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t outstanding)
{
	if (st != FIFO_CLOSED)
		die("fifo_close: %llu items outstanding", (unsigned long long)outstanding);
	*(bool *)ctx = true;
}


/* Ask the scheduler (EEVDF, Linux 6.12 and later) for a shorter slice for
 * the calling thread: a thread that wakes with a short slice gets an
 * earlier deadline and preempts sooner. An experiment, to tell what the
 * loop thread would need; not what cairn does. */
static void set_slice(unsigned us)
{
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t priority;
		uint64_t runtime, deadline, period;
	} attr = {.size = 48, .policy = 0, .runtime = (uint64_t)us * 1000};
	if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0)
		fprintf(stderr, "    sched_setattr (slice %u us): %s\n", us, strerror(errno));
}

static void row_ms(const char *metric, double ms, const char *target, const char *result)
{
	char o[24];
	snprintf(o, sizeof o, "%.3f ms", ms);
	add_row(metric, o, "", 0, false, target, result);
}

int main(int argc, char **argv)
{
	bench_set_name("bench_stall");
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--sessions=", 11) == 0)
			opt.sessions = (size_t)strtoull(argv[i] + 11, NULL, 10);
		else if (strncmp(argv[i], "--events=", 9) == 0)
			opt.events = (size_t)strtoull(argv[i] + 9, NULL, 10);
		else if (strncmp(argv[i], "--ms=", 5) == 0)
			opt.ms = atoi(argv[i] + 5);
		else if (strcmp(argv[i], "--keep") == 0)
			opt.keep = true;
		else if (strncmp(argv[i], "--loop-slice-us=", 16) == 0)
			opt.slice_us = (unsigned)atoi(argv[i] + 16);
		else if (strncmp(argv[i], "--helpers-nice=", 15) == 0)
			opt.helpers_nice = atoi(argv[i] + 15);
		else if (strncmp(argv[i], "--only=", 7) == 0) {
			opt.saves = strstr(argv[i] + 7, "saves") != NULL;
			opt.load = strstr(argv[i] + 7, "load") != NULL;
			opt.search = strstr(argv[i] + 7, "search") != NULL;
		}
		else {
			fprintf(stderr, "usage: bench_stall [--sessions=N] [--events=N] [--ms=N] "
					"[--only=saves,load,search] [--loop-slice-us=N] [--helpers-nice=N] [--keep]\n");
			return 2;
		}
	}
	if (opt.sessions < 200 || opt.events < 100 || opt.ms < 100)
		die("option out of range");
	umask(077);
	work = temp_dir();
	save_root = xasprintf("%s/saves", work);
	struct buf tb = BUF_INIT;
	rng_seed(42);
	gen_prose(&tb, 200, false);
	turn_text = buf_detach(&tb, NULL);

	fprintf(stderr, "[1] the loop's 1 ms timer while persistence runs\n");
	struct dataset_info di;
	struct dataset_opts dopt = {opt.sessions, 20, false, false, work};
	dataset_prepare(&dopt, &di);
	droot = xstrdup(di.root);
	make_big();

	if (opt.slice_us)
		set_slice(opt.slice_us);
	uv_loop_init(&loop);
	uv_loop_configure(&loop, UV_METRICS_IDLE_TIME);
	uv_timer_init(&loop, &probe);
	uv_prepare_init(&loop, &before_poll);
	uv_check_init(&loop, &after_poll);

	/* Baseline: the timer alone. */
	uint64_t t0 = clock_mono_ns();
	probe_start();
	while (ms_since(t0) < 1000)
		uv_run(&loop, UV_RUN_ONCE);
	uv_timer_stop(&probe);
	struct spread idle = spread_of();

	/* Under load. With --helpers-nice the threads started from here on
	 * (the FIFO's writer and helpers, libuv's pool) inherit that nice,
	 * and the loop thread goes back to 0 (which needs CAP_SYS_NICE). */
	if (opt.helpers_nice && setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), opt.helpers_nice) < 0)
		fprintf(stderr, "    setpriority: %s\n", strerror(errno));
	struct cerr e;
	fifo = fifo_new(&loop, save_root, NULL, &e);
	if (!fifo)
		die_err("fifo_new", &e);
	cw = catalog_worker_new(&loop, droot);
	uv_timer_init(&loop, &typist);
	running = true;
	for (int i = 0; opt.saves && i < SAVERS; i++) {
		snprintf(savers[i].id, sizeof savers[i].id, "stall-saver-%d", i);
		savers[i].seq = 1;
		post_turn(&savers[i]);
	}
	if (opt.load)
		load_start();
	if (opt.helpers_nice) {
		/* libuv starts its pool at the first uv_queue_work. */
		if (!opt.load)
			uv_queue_work(&loop, &nop_req, nop_work, NULL);
		if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 0) < 0)
			fprintf(stderr, "    setpriority back to 0: %s\n", strerror(errno));
	}
	if (opt.search)
		uv_timer_start(&typist, type_key, TYPE_MS, TYPE_MS);
	t0 = clock_mono_ns();
	probe_start();
	uv_prepare_start(&before_poll, on_prepare);
	uv_check_start(&after_poll, on_check);
	while (ms_since(t0) < opt.ms)
		uv_run(&loop, UV_RUN_ONCE);
	double span_s = ms_since(t0) / 1e3;
	struct spread load = spread_of();
	unsigned saves = saves_done, loads = loads_done;

	/* Wind down: no more posts; what is in flight completes. */
	running = false;
	uv_close((uv_handle_t *)&before_poll, NULL);
	uv_close((uv_handle_t *)&after_poll, NULL);
	uv_timer_stop(&probe);
	uv_close((uv_handle_t *)&probe, NULL);
	uv_timer_stop(&typist);
	uv_close((uv_handle_t *)&typist, NULL);
	bool fifo_down = false, cw_down = false;
	if (fifo_close(fifo, clock_mono_ns() / 1000000 + 60000, fifo_closed, &fifo_down) < 0)
		die("fifo_close refused");
	catalog_worker_close(cw, worker_closed, &cw_down);
	uv_run(&loop, UV_RUN_DEFAULT);
	if (!fifo_down || !cw_down)
		die("the FIFO or the catalog worker did not close");
	if (uv_loop_close(&loop) != 0)
		die("uv_loop_close: handles or requests left on the loop");

	fprintf(stderr, "    %zu firings idle, %zu under load; %u saves (%.0f /s), %u loads of %llu "
			"events (%.1f ms each), %u keys: %u searches done, %u superseded\n",
		idle.n, load.n, saves, saves / span_s, loads, (unsigned long long)load_events,
		loads ? load_ms_sum / loads_done : 0.0, keys, searches_done, searches_superseded);
	fprintf(stderr, "    longest (loop CPU): post a save %.3f ms, take a search's hits %.3f ms, "
			"queue a load %.3f ms, post a search %.3f ms\n",
		cb_max[CB_SAVED], cb_max[CB_SEARCHED], cb_max[CB_LOADED], cb_max[CB_KEY]);
	char m[96];
	row_ms("idle loop: 1 ms timer late by, p50", idle.p50, "(info)", "-");
	row_ms("idle loop: p99", idle.p99, "(info)", "-");
	row_ms("idle loop: max", idle.max, "(info)", "-");
	row_ms("under load: p50", load.p50, "(info)", "-");
	row_ms("under load: p99", load.p99, "<= 2 ms", load.p99 <= 2.0 ? "PASS" : "MISS");
	row_ms("under load: max", load.max, "(info)", "-");
	row_ms("  the loop's callbacks between two polls, max", busy_max_ms, "(info)", "-");
	row_ms("  the same, the loop thread's CPU time, max", cpu_max_ms, "(info)", "-");
	snprintf(m, sizeof m, "  the loop busy in callbacks, share of the time");
	char o[24];
	snprintf(o, sizeof o, "%.1f %%", busy_sum_ms / (span_s * 10));
	add_row(m, o, "", 0, false, "(info)", "-");
	snprintf(m, sizeof m, "  load: %d savers' full saves per second", SAVERS);
	snprintf(o, sizeof o, "%.0f /s", saves / span_s);
	add_row(m, o, "", 0, false, "(info)", "-");
	snprintf(m, sizeof m, "  load: loads of %llu events (load_async on a worker)",
		 (unsigned long long)load_events);
	snprintf(o, sizeof o, "%u", loads);
	add_row(m, o, "", 0, false, "(info)", "-");
	snprintf(m, sizeof m, "  load: %u keys typed, searches run to the end", keys);
	snprintf(o, sizeof o, "%u", searches_done);
	add_row(m, o, "", 0, false, "(info)", "-");

	char machine[256];
	describe_machine(machine, sizeof machine, work);
	print_table("ref", 52, 7, 10);
	printf("(bench_stall: %s)\n", machine);
	dataset_release(&di);
	temp_dir_done(work, opt.keep);
	free(work);
	free(save_root);
	free(droot);
	free(turn_text);
	free(late);
	return 0;
}
