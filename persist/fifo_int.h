/* fifo_int.h — what fifo.c (the queue, the thread, the loop side) and
 * fifo_writer.c (how the writer thread executes a batch) share; not for
 * other modules. */
#ifndef CAIRN_FIFO_INT_H
#define CAIRN_FIFO_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "base/err.h"
#include "base/pool.h"
#include "base/strmap.h"
#include "persist/catalog.h"
#include "persist/fifo.h"
#include "persist/log.h"
#include "persist/store.h"

struct fifo_item {
	struct fifo_item *next;
	enum fifo_kind kind;
	char session[SESSION_ID_MAX + 1];
	bool create;
	char *cwd;
	uint64_t expected_seq, expected_version;
	cJSON *events; /* array */
	cJSON *meta;
	char *text; /* FIFO_DRAFT (its project is cwd) */
	fifo_done_cb cb;
	void *ctx;
	uint64_t ticket;
	bool failed;
	struct cerr err;
	struct fifo_receipt rcpt;
};

/* The writer's view of one session. */
/* Helper threads: a round's logs sync on them (one lane each), all at
 * once, while the writer commits the round's catalog transaction; the
 * catalog's checkpoint runs on one too. */
#define FIFO_HELPERS 8

struct wsess {
	char id[SESSION_ID_MAX + 1];
	struct log *lg;
	bool failed;        /* an item failed: only a full save may go on */
	struct cerr why;
	uint64_t used;      /* for closing the least recently used handle */
	bool behind;        /* its catalog row lags what it acknowledged */
	bool acked;         /* acked_version is known: */
	uint64_t acked_version; /* the version of its last receipt, or the one found */
	/* The last round this session wrote in (0: none), its place in it,
	 * and the version its last write makes: */
	uint64_t round;
	size_t rs_idx;
	uint64_t version;
	/* Its sync lane: a helper fdatasyncs the log while the writer goes on,
	 * and starts the next sync as soon as one ends when more was written
	 * meanwhile. Writes are counted (gen); a sync covers every write
	 * counted before it starts. */
	uint64_t gen;              /* writer thread */
	bool lane_job_out;         /* writer thread: lane_job not waited for */
	struct pool_job lane_job;
	pthread_mutex_t lane_mu;
	pthread_cond_t lane_cv;
	uint64_t lane_target;      /* under lane_mu */
	bool lane_running;         /* under lane_mu */
	bool lane_quit;            /* under lane_mu: stop lingering */
	_Atomic int *lanes_busy;   /* the FIFO's count of running lanes */
	_Atomic uint64_t lane_done; /* written under lane_mu */
	_Atomic int lane_errno;    /* written under lane_mu: a failed sync's */
};

struct round; /* fifo_writer.c */

/* A durable watermark the catalog has not recorded yet. */
struct durable {
	struct wsess *w;
	uint64_t version;
	struct cat_watermark wm;
};

/* The helper's checkpoint (fifo_ckpt.c). */
enum ckpt_state { CK_IDLE, CK_COPYING, CK_COPIED };

struct fifo {
	uv_loop_t *loop;
	uv_async_t async;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	struct fifo_item *queue, *queue_tail; /* posted, not taken */
	struct fifo_item *done, *done_tail;   /* completed, not delivered */
	uint64_t posted, completed;           /* tickets */
	atomic_bool queued;                   /* queue non-empty (read without mu) */
	struct strmap last_ticket;            /* session -> ticket of its last post */
	char **ticket_keys;
	size_t n_ticket_keys;
	bool stopping, paused;
	bool exited;     /* the writer thread freed its state and is ending */

	/* loop thread only: an asynchronous fifo_close (fifo.c) */
	bool closing;    /* under mu too: posts are refused while it runs */
	fifo_close_cb close_cb;
	void *close_ctx;
	uv_timer_t timer; /* its deadline */
	bool timer_init;
	int handles_open; /* f is freed when the last one's close callback ran */

	/* writer thread only */
	struct store *st;
	struct catalog *cat;
	struct pool *pool;
	struct wsess **ws;
	size_t n_ws;
	uint64_t use_clock;
	uint64_t round;
	struct durable *durable; /* recorded with the next transaction */
	size_t n_durable;
	struct round *flight;    /* committed, its logs still syncing (or NULL) */
	size_t batch_limit;      /* test hook: items per batch (0: all queued) */
	struct catalog *ck_cat;  /* the checkpointing helper's connection */
	_Atomic int ck_state;    /* enum ckpt_state */
	int ck_mark;             /* WAL frames when the last checkpoint started */
	struct pool_job ck_job;
	_Atomic unsigned long ck_done; /* checkpoints the helper completed */
	_Atomic int lanes_busy;  /* lanes holding a helper */
};

/* Hand a batch whose items have all completed to the loop (writer thread;
 * batches in the order they were taken). */
void fifo_deliver(struct fifo *f, struct fifo_item *batch);

/* Execute a batch taken from the queue (writer thread); every item ends
 * failed or with its receipt, and the batch is handed to fifo_deliver:
 * before this returns, or when its last round, left in flight, settles
 * (the next batch's commit, or fifo_writer_settle). */
void fifo_writer_process(struct fifo *f, struct fifo_item *batch);
/* Nothing queued: complete the round in flight, if any (writer thread). */
void fifo_writer_settle(struct fifo *f);
/* True when no round is in flight or its syncs have all ended, so that
 * fifo_writer_settle will not wait (writer thread). */
bool fifo_writer_flight_synced(struct fifo *f);
/* Nothing queued: record what is pending (writer thread). */
void fifo_writer_idle(struct fifo *f);
/* A session's sync lane (fifo_lane.c; writer thread but for the helper
 * it runs on). lane_request: sync every write up to count gen; lane_wait:
 * 0 once they are synced, else the errno of the sync that failed;
 * lane_quiesce: wait until no helper uses the log; lane_reset: after a
 * failure is settled, a lane that starts from the current count. */
/* Checkpoints (fifo_ckpt.c; writer thread): after each commit of the
 * writer, when it goes idle, and when the FIFO closes. */
void ckpt_after_commit(struct fifo *f);
void ckpt_idle(struct fifo *f);
void ckpt_stop(struct fifo *f);
void lane_init(struct wsess *w);
void lane_destroy(struct wsess *w);
void lane_request(struct fifo *f, struct wsess *w, uint64_t gen);
int lane_wait(struct wsess *w, uint64_t gen);
/* Whether lane_wait(w, gen) would return at once. */
bool lane_ended(struct wsess *w, uint64_t gen);
void lane_quiesce(struct fifo *f, struct wsess *w);
void lane_reset(struct fifo *f, struct wsess *w);

/* Mark first..last (linked by next) failed with err (writer thread). */
void fifo_fail_items(struct fifo_item *first, struct fifo_item *last, const struct cerr *err);
/* Write the draft of `it` and of the drafts of its project that follow it
 * at once, only the last one's text (fifo_draft.c; writer thread); every
 * one of them ends with that write's result. Returns the last. */
struct fifo_item *fifo_draft_run(struct fifo *f, struct fifo_item *it);

/* Close every log handle and free the writer's state. */
void fifo_writer_free(struct fifo *f);

#endif
