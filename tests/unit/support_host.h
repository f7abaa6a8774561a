/* support_host.h — the fixture of the host's conformance scenarios
 * (test_host.c, test_host_saves.c): a loop with the real FIFO on a temp
 * root, a sink, the HTTP engine and a host, and a consumer on the same loop
 * that applies every sink item and reports each marker it handled
 * (unless told to hold a turn_done). Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_HOST_H
#define CAIRN_SUPPORT_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/buf.h"
#include "base/clock.h"
#include "engine/host.h"
#include "persist/scan.h"
#include "tests/unit/support_servers.h"

struct hx {
	char dir[64], root[128];
	uv_loop_t loop;
	struct fifo *f;
	struct sink *sink;
	struct http *http;
	struct host *h;
	struct fake fake;
	bool have_fake;
	char *base;
	char id[SESSION_ID_MAX + 1];
	/* the consumer */
	bool hold;                 /* don't report turn_done (yet) */
	struct sink_item held;     /* the turn_done held (op copied) */
	bool have_held;
	struct buf seen;           /* one line per item */
	struct buf text;           /* streamed answers */
	cJSON *dones;              /* every turn_done payload */
	int settled, settled_ok;
	int unsaved, saved;
	/* command results */
	int calls;
	struct cerr last;
	char turn[32], input[64];
	char *taken;
	bool queued, replayed;
	bool faults;
	/* interactions: each request seen (its data), answered with decision
	 * (NULL: left waiting) and note */
	cJSON *requests;
	const char *decision, *note;
	char cwd[256]; /* the sessions' cwd: a real folder under dir */
	uv_timer_t tick; /* so a wait never blocks for good: its deadline is checked */
	/* another consumer of every item, called first (NULL: none) */
	void (*tap)(const struct sink_item *it, void *ctx);
	void *tap_ctx;
};

/* Run the loop until cond holds; fail the test after 20 s. */
#define WAIT(x, cond)                                                                     \
	do {                                                                              \
		uint64_t until_ = clock_mono_ns() / 1000000 + 20000;                      \
		while (!(cond)) {                                                         \
			if (clock_mono_ns() / 1000000 > until_)                           \
				fail_msg("timed out waiting for %s; seen:\n%s", #cond,    \
					 (x)->seen.p ? (x)->seen.p : "");                 \
			uv_run(&(x)->loop, UV_RUN_ONCE);                                  \
		}                                                                         \
	} while (0)

/* The consumer: records items, reports turn_done to the host (or holds it). */
void hx_read_cb(struct sink *s, const struct sink_item *it, void *ctx);
/* A command's callback: counts it and keeps its result in x. */
void hx_done_cb(void *ctx, const struct host_result *r, const struct cerr *err);
/* FIFO, sink, HTTP engine and host on x->root; the consumer reading. */
void hx_start(struct hx *x);
/* Close callbacks for the parts. */
void hx_noop(void *ud);
void hx_fifo_closed(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t n);
void hx_host_closed(struct host *h, void *ctx, enum host_close_status st);
/* Close the parts once the host is freed (x->h NULL). */
void hx_close_parts(struct hx *x);
/* Report the held turn_done with every sync failing, so its full save
 * fails; returns once it settled, the faults disarmed. */
void hx_settle_held_failing(struct hx *x);
/* Close the host (every session released), then its parts. */
void hx_stop(struct hx *x);
/* cmocka setup and teardown: a temp root and the parts started; all removed. */
int hx_setup(void **state);
int hx_teardown(void **state);
/* The offline provider at pace 0. */
struct host_call hx_offline_call(void);
/* The fake server started with script, and a call to it (x->base owned by x). */
struct host_call hx_fake_call(struct hx *x, const char *script);
/* A new session in x->id with call c. */
void hx_create(struct hx *x, const struct host_call *c);
/* Send text with submit id sid (NULL: made up); waits for its callback, fails on an error. */
void hx_send(struct hx *x, const char *text, const char *sid);
/* x->id's log as scanned from disk (must be OK); caller frees. */
struct scan *hx_read_log(struct hx *x);
/* The frame (the batch) event i of x->id's log was written in. */
uint32_t hx_frame_of(struct hx *x, size_t i);
/* Events of type in s; the index of the first from i on (s->n_events: none). */
size_t hx_count(const struct scan *s, const char *type);
size_t hx_find(const struct scan *s, size_t i, const char *type);
/* o[k] when a string, else "". */
const char *hx_str(const cJSON *o, const char *k);
/* The k-th turn_done payload seen. */
const cJSON *hx_done(struct hx *x, int k);

#endif
