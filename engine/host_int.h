/* host_int.h — what host.c, host_turn.c and host_write.c share (not a
 * public header: everything else uses host.h). */
#ifndef CAIRN_HOST_INT_H
#define CAIRN_HOST_INT_H

#include "base/strmap.h"
#include "engine/context.h"
#include "engine/host.h"
#include "engine/journal.h"
#include "engine/runner.h"

/* A queued input, as the log holds it. */
struct qin {
	char *id, *text;
	bool armed; /* dispatched on its own after a saved, completed turn */
};

/* What a command does once its write is durable (host_write.c). */
enum op_kind {
	OP_DONE,     /* nothing: complete with what the result holds */
	OP_QUEUE,    /* input/queued: add the input */
	OP_DEQUEUE,  /* input/dequeued: take or remove the input */
	OP_SETTINGS, /* session/settings: the settings in effect change */
	OP_META,     /* session/meta */
	OP_SAVE,     /* an explicit recovery save */
	OP_RELEASE,
	OP_DELETE,
};

/* A command in flight: its callback, what its result says, and what it
 * writes. Freed once its callback ran. */
struct op {
	struct host *h;
	struct hsess *s; /* NULL once the session is forgotten */
	enum op_kind kind;
	host_cb cb;
	void *ctx;
	struct host_result r;
	char *turn, *input_id, *text; /* owned copies behind r's strings */
	cJSON *events;                /* to write (owned until posted) */
	cJSON *settings;              /* OP_SETTINGS: the fields written */
	bool armed;                   /* OP_QUEUE: armed when durable */
	struct cerr err;              /* set: completes with this error */
	bool failed;
	struct op *next;
};

struct hsess {
	struct host *h;
	struct hsess *next;
	char id[SESSION_ID_MAX + 1];
	enum host_state st;
	char *cwd;
	uint64_t generation;
	struct journal *j;          /* the only writer of its log: cursor, durable
				     * head, durability (journal.h) */
	struct context *ctx;
	int blob_dir;               /* the session's folder for the context; -1: none */

	/* turns */
	size_t n_turns;
	char *leaf, *prev_leaf;     /* the active path's last turn (before the running one) */
	char **submit_keys;         /* client_submit_id of each known turn ... */
	char **submit_turns;        /* ... and the turn it started */
	size_t n_submits, cap_submits;
	struct strmap submits;      /* client_submit_id -> index */
	char *turn;                 /* the running turn */
	char *turn_input;           /* the queued input it dequeued, if any ... */
	char *turn_text;            /* ... and its prompt */
	cJSON *turn_settings;       /* what its BEFORE save records (session/settings),
				     * in effect once it started; NULL: none */
	struct sink_op op;
	bool last_ok;               /* the last turn completed and was saved */

	/* queued input, oldest first */
	struct qin *q;
	size_t nq, capq;
	struct host_input *view;

	/* what turns are sent with */
	bool have_call;
	struct host_call call;
	char *c_provider, *c_model, *c_base_url, *c_key, *c_system;
	cJSON *c_tools;

	/* tools: offered when the call has tool schemas */
	struct tool_ctx tctx;
	char **env;                 /* the tools' environment (tool_env) */
	struct approvals *grants;   /* "allow for this session", rebuilt from the log */
	enum approval_policy policy;
	bool policy_set;            /* host_set_approval: the settings' approval ignored */

	/* the settings in effect (set_system whole, even when its event
	 * keeps only a head and tail inline: read from its blob) */
	char *set_provider, *set_model, *set_approval, *set_system;

	struct op *after_settle;     /* writes waiting for the turn to settle */
	host_cb open_cb;
	void *open_ctx;
	host_history_fn open_history; /* called per loaded event, on the worker */
	void *open_history_ctx;
	uv_work_t *open_work;        /* the context being built */
	struct op *open_release;     /* a release asked for while opening */
};

struct host {
	struct host_deps d;
	char *root;
	struct runner *run;
	struct hsess *sessions;
	uint64_t next_generation;
	struct op *deferred, *deferred_tail; /* completions due from the loop */
	uv_idle_t idle;
	uv_timer_t deadline;
	bool closing, close_reported;
	host_close_cb close_cb;
	void *close_ctx;
	unsigned recoveries; /* start-up recoveries under way: close waits for them */
};

/* host.c */
/* May s go to state `to` (host.c's table)? 0, or a bug: it asserts, and
 * where assertions are off it is CERR_CONFLICT in err (may be NULL). */
int host_may(const struct hsess *s, enum host_state to, struct cerr *err);
/* The one change of s->st: host_may, then the state is `to` (-1: refused,
 * unchanged). */
int host_to(struct hsess *s, enum host_state to, struct cerr *err);
struct hsess *host_find(const struct host *h, const char *id);
struct op *host_op(struct host *h, struct hsess *s, enum op_kind kind, host_cb cb, void *ctx);
/* Complete op from the loop (err NULL: success); op is freed after. */
void host_defer(struct op *op, const struct cerr *err);
/* Complete op now (we are on the loop, outside any command call). */
void host_complete(struct op *op, const struct cerr *err);
void host_fill_head(struct op *op);
int host_refuse(const struct host *h, const struct hsess *s, const char *id, struct cerr *err);
void host_check_close(struct host *h);
void host_notice(struct hsess *s, enum sink_notice n, const struct cerr *err);
/* Free a released session (host_write.c calls it once the FIFO let it go). */
void host_forget(struct hsess *s);
void host_set_str(char **slot, const char *v);

/* host_turn.c */
int host_turn_start(struct hsess *s, const char *submit_id, const char *text,
		    const char *dequeued, struct op *op, struct cerr *err);
void host_turn_settled(void *ud, struct runner_settlement *st);
/* The journal's durability changed: the notices "unsaved" and "saved". */
void host_journal_state(void *ud, enum journal_state st, const struct cerr *err);
void host_dispatch_later(struct hsess *s);
void host_submit_add(struct hsess *s, const char *submit_id, const char *turn);
const char *host_submit_find(const struct hsess *s, const char *submit_id);

/* host_write.c */
/* Write op->events into s's history: through the running turn, after its
 * settlement, or directly into the session's journal. */
void host_write(struct hsess *s, struct op *op);
void host_write_after_settle(struct hsess *s);
/* The fields a durable session/settings names are in effect from now on
 * (null clears one). */
void host_apply_settings(struct hsess *s, const cJSON *settings);
ssize_t host_queue_find(const struct hsess *s, const char *input_id);
void host_queue_add(struct hsess *s, const char *input_id, const char *text, bool armed,
		    bool front);
void host_queue_del(struct hsess *s, size_t k);

#endif
