/* fifo_int.h — what the FIFO's files share; not for other modules.
 * fifo.c: the queue, the thread, the loop side; fifo_writer.c: a batch's
 * items to what runs them; fifo_round.c: rounds; fifo_sess.c: per-session
 * state, handles, failure and recovery; fifo_move.c: delete, restore,
 * purge; fifo_lane.c: sync lanes; fifo_ckpt.c: checkpoints; fifo_draft.c:
 * drafts. */
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
	cJSON *header; /* create: the header's extra fields (or NULL) */
	bool running;  /* mark the session running with this append */
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

/* The writer's view of one session (fifo_sess.c), found by its id in
 * f->ws_map; dropped once it needs nothing kept (fifo_sess_sweep). */
struct fifo_sess {
	char id[SESSION_ID_MAX + 1];
	struct log *lg;
	bool held;          /* open for a host (fifo_open) until fifo_release */
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
	struct fifo *lane_f;       /* its FIFO (count of running lanes, helpers) */
	_Atomic uint64_t lane_done; /* written under lane_mu */
	_Atomic int lane_errno;    /* written under lane_mu: a failed sync's */
	/* An open's read and parse of the log, on a helper (fifo_hold.c):
	 * the writer writes nothing to the log until it has waited for it. */
	struct pool_job read_job;
	struct fifo_item *read_item; /* the open it completes (NULL: none out) */
	struct load *read_load;      /* the open's own read, to prepare (NULL: read it) */
	int read_rc;
};

struct round; /* fifo_round.c */

/* A durable watermark the catalog has not recorded yet. */
struct durable {
	struct fifo_sess *w;
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
	/* session -> its last post not delivered yet (struct fifo_ticket *) */
	struct strmap last_ticket;
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
	unsigned helpers;        /* fifo_opts */
	size_t max_open;
	struct fifo_sess **ws;   /* every session's state, */
	size_t n_ws;
	struct strmap ws_map;    /* by id: index in ws */
	_Atomic size_t ws_known; /* n_ws, for fifo_sessions_known */
	uint64_t use_clock;
	uint64_t round;
	struct durable *durable; /* recorded with the next transaction */
	size_t n_durable;
	struct round *flight;    /* committed, its logs still syncing (or NULL) */
	struct fifo_sess **reading; /* sessions whose open's read is out */
	size_t n_reading;
	size_t batch_limit;      /* test hook: items per batch (0: all queued) */
	struct catalog *ck_cat;  /* the checkpointing helper's connection */
	_Atomic int ck_state;    /* enum ckpt_state */
	int ck_mark;             /* WAL frames when the last checkpoint started */
	struct pool_job ck_job;
	_Atomic unsigned long ck_done; /* checkpoints the helper completed */
	_Atomic int lanes_busy;  /* lanes holding a helper */
};

/* ---- fifo.c ---- */
/* Hand a batch whose items have all completed to the loop (writer thread;
 * batches in the order they were taken). */
void fifo_deliver(struct fifo *f, struct fifo_item *batch);
/* Mark first..last (linked by next) failed with err (writer thread). */
void fifo_fail_items(struct fifo_item *first, struct fifo_item *last, const struct cerr *err);

/* ---- fifo_writer.c (writer thread) ---- */
/* Execute a batch taken from the queue; every item ends failed or with its
 * receipt, and the batch is handed to fifo_deliver: before this returns,
 * or when its last round, left in flight, settles (the next batch's
 * commit, or fifo_round_settle_flight). */
void fifo_writer_process(struct fifo *f, struct fifo_item *batch);
/* Nothing queued: record what is pending. */
void fifo_writer_idle(struct fifo *f);
/* Close every log handle and free the writer's state. */
void fifo_writer_free(struct fifo *f);

/* ---- fifo_round.c (writer thread) ---- */
/* A new round for batch (the caller's until fifo_round_end). */
struct round *fifo_round_new(struct fifo *f, struct fifo_item *batch);
/* Prepare history, full save or meta items first..last of one session
 * (merged when first != last): checked and written, not synced. */
void fifo_round_prepare(struct round *r, struct fifo_item *first, struct fifo_item *last);
/* Commit r (syncs requested, projection committed); it settles now, or
 * stays in flight when may_fly and nothing more is needed from the
 * catalog. r is then empty again, or f->flight. */
void fifo_round_commit(struct round *r, bool may_fly);
/* Commit the batch's last round; true when its batch was delivered and r
 * freed, false when r stays in flight (freed when it settles). */
bool fifo_round_end(struct round *r);
/* Settle the round in flight, if any, and deliver its batch; cur is the
 * round being prepared meanwhile (or NULL). */
void fifo_round_settle_flight(struct fifo *f, struct round *cur);
/* True when no round is in flight or its syncs have all ended, so that
 * fifo_round_settle_flight will not wait. */
bool fifo_round_flight_synced(const struct fifo *f);
/* Whether w wrote in the round being prepared or the one in flight (its
 * handle must stay open). */
bool fifo_round_holds(const struct fifo *f, const struct fifo_sess *w);

/* ---- fifo_sess.c (writer thread) ---- */
/* The writer's state of session id, made on first use (owned by f). */
struct fifo_sess *fifo_sess_get(struct fifo *f, const char *id);
/* Close w's log handle (its lane stopped first), releasing its lock. */
void fifo_sess_close_log(struct fifo *f, struct fifo_sess *w);
/* w's log open for writing, created if `it` allows it (fifo_item_create). */
/* fifo_spill.c: in events (a batch about to be appended to lg's log),
 * replace every text too long for an event (user/message and input/queued
 * "text", tool/result "output", tool/call "args" or "args_raw" over
 * BLOB_INLINE_MAX) with its head and
 * tail, and write the whole to a blob the event names; events that name a
 * blob already are left alone. 0, or -1 as blob_write. Writer thread. */
int fifo_spill_batch(struct log *lg, cJSON *events, struct cerr *err);
int fifo_sess_ensure_log(struct fifo *f, struct fifo_sess *w, const struct fifo_item *it,
			 struct cerr *err);
/* Project the session whole from its log read again (its row lags the
 * log, is missing, or may hold writes that failed). */
int fifo_sess_reproject(struct fifo *f, struct fifo_sess *w, struct cerr *err);
/* The same, unless the row already is the projection of the whole durable
 * log as it was just read (catalog_row_current): opening a session writes
 * nothing to the catalog for an unchanged log. */
int fifo_sess_refresh(struct fifo *f, struct fifo_sess *w, struct cerr *err);
/* A conflict or a failed write leaves a gap the session must not write
 * past until a full save recovers it (the first reason is kept). */
void fifo_sess_fail(struct fifo_sess *w, const struct cerr *err);
/* A failed full save leaves the session unsaved (best effort). */
void fifo_sess_unsaved(struct fifo *f, struct fifo_sess *w);
/* A full save's recovery: the log read again and the row rebuilt. */
int fifo_sess_recover(struct fifo *f, struct fifo_sess *w, const struct fifo_item *it,
		      struct cerr *err);
/* Remember w's durable watermark for the next transaction (one per
 * session: a newer one replaces it). */
void fifo_sess_durable_add(struct fifo *f, struct fifo_sess *w);
/* Record the remembered watermarks in the open transaction (skip_round:
 * not those of sessions the current round writes again, which get newer
 * ones); false on a failure (they stay for the next transaction). */
bool fifo_sess_durable_record(struct fifo *f, bool skip_round);
/* Forget the sessions that keep nothing the writer needs (writer idle). */
void fifo_sess_sweep(struct fifo *f);
/* Close every handle and free every session's state. */
void fifo_sess_free_all(struct fifo *f);

/* ---- fifo_move.c (writer thread) ---- */
/* Delete, restore or purge the session of it. */
void fifo_move_run(struct fifo *f, struct fifo_item *it);

/* ---- fifo_hold.c (writer thread) ---- */
/* FIFO_OPEN and FIFO_RELEASE (see fifo.h); the round is committed. The
 * open's read and parse of the log runs on a helper meanwhile. */
void fifo_hold_open(struct fifo *f, struct fifo_item *it);
void fifo_hold_release(struct fifo *f, struct fifo_item *it);
/* Wait for the open's read of session (NULL: of every session), before an
 * item of it runs or a batch is delivered; a read that failed fails its
 * open and lets the session go. */
void fifo_hold_wait(struct fifo *f, const char *session);

/* ---- fifo_lane.c ---- */
/* A session's sync lane (writer thread but for the helper it runs on).
 * request: sync every write up to count gen; wait: 0 once they are
 * synced, else the errno of the sync that failed; quiesce: wait until no
 * helper uses the log; reset: after a failure is settled, a lane that
 * starts from the current count. */
void fifo_lane_init(struct fifo_sess *w);
void fifo_lane_destroy(struct fifo_sess *w);
void fifo_lane_request(struct fifo *f, struct fifo_sess *w, uint64_t gen);
int fifo_lane_wait(struct fifo_sess *w, uint64_t gen);
/* Whether fifo_lane_wait(w, gen) would return at once. */
bool fifo_lane_ended(struct fifo_sess *w, uint64_t gen);
void fifo_lane_quiesce(struct fifo *f, struct fifo_sess *w);
void fifo_lane_reset(struct fifo *f, struct fifo_sess *w);

/* ---- fifo_ckpt.c (writer thread) ---- */
/* Checkpoints: after each commit of the writer, when it goes idle, and
 * when the FIFO closes. */
void fifo_ckpt_after_commit(struct fifo *f);
void fifo_ckpt_idle(struct fifo *f);
void fifo_ckpt_stop(struct fifo *f);

/* ---- fifo_draft.c (writer thread) ---- */
/* Write the draft of `it` and of the drafts of its project that follow it
 * at once, only the last one's text; every one of them ends with that
 * write's result. Returns the last. */
struct fifo_item *fifo_draft_run(struct fifo *f, struct fifo_item *it);

#endif
