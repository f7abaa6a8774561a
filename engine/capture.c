/* capture.c — a turn's history captured into durable batches (capture.h).
 *
 * Items of one session complete in post order, so acknowledgment is a
 * counter: a commit waits for `acked` to reach the number of items posted
 * when it was made. One timer serves two purposes: the batch deadline
 * (flush_ms after a batch's first event), and calling back commits that
 * are already satisfied (or failed) from the loop rather than from inside
 * capture_commit. */
#include "engine/capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "persist/pathkey.h"
#include "persist/event_batch.h"

static const struct capture_opts DEFAULTS = {100, 16 * 1024, CAPTURE_BYTES_MAX};

struct waiter {
	uint64_t target; /* items that must have completed */
	capture_commit_cb cb;
	void *ctx;
	struct waiter *next;
};

/* A posted batch: the text it holds, for the pressure marks. */
struct sent {
	size_t text; /* bytes of text it holds */
	struct sent *next;
};

struct capture {
	uv_timer_t timer;
	struct journal *j;
	struct sink_op op;
	struct capture_opts o;
	enum capture_state st;
	struct cerr err;

	cJSON *pending;    /* events not posted yet */
	size_t pending_text;
	size_t pending_json; /* bytes of the structural events' data in pending */
	uint64_t pending_since;
	struct buf text;   /* the open text event, not in pending yet */
	bool text_open;
	enum capture_stream text_stream;
	char *text_turn;

	uint64_t posted, acked;
	struct waiter *wait_head, *wait_tail;
	struct sent *sent_head, *sent_tail;
	size_t inflight;   /* text posted, not acknowledged */
	bool pressed;      /* the producer was told to stop */
	capture_pressure_cb pressure_cb;
	void *pressure_ctx;
	bool timer_closed;
};

static void timer_cb(uv_timer_t *t);

struct capture *capture_new(uv_loop_t *loop, struct journal *j, const struct sink_op *op,
			    const struct capture_opts *opts)
{
	struct capture *c = xcalloc(1, sizeof *c);
	c->j = j;
	c->op = *op;
	c->o = opts ? *opts : DEFAULTS;
	if (c->o.batch_max < 64)
		c->o.batch_max = 64; /* room for any character, and then some */
	if (!c->o.bytes_max)
		c->o.bytes_max = CAPTURE_BYTES_MAX;
	c->pending = cJSON_CreateArray();
	buf_init(&c->text);
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	return c;
}

void capture_on_pressure(struct capture *c, capture_pressure_cb cb, void *ctx)
{
	c->pressure_cb = cb;
	c->pressure_ctx = ctx;
}

/* Tell the producer when the text in flight crosses a mark. */
static void pressure(struct capture *c)
{
	bool want = c->pressed ? c->inflight > CAPTURE_INFLIGHT_LOW :
				 c->inflight >= CAPTURE_INFLIGHT_HIGH;
	if (want == c->pressed)
		return;
	c->pressed = want;
	if (c->pressure_cb && c->st != CAPTURE_CLOSING)
		c->pressure_cb(c, c->pressure_ctx, want);
}

static void arm_deadline(struct capture *c)
{
	if (cJSON_GetArraySize(c->pending) == 0 && !c->text_open) {
		c->pending_since = uv_now(c->timer.loop);
		uv_timer_start(&c->timer, timer_cb, c->o.flush_ms, 0);
	}
}

/* Move the open text event into the pending batch. */
static void close_text(struct capture *c)
{
	if (!c->text_open)
		return;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", c->text.p ? c->text.p : "");
	cJSON_AddItemToArray(c->pending,
			     event_batch_event(c->text_stream == CAPTURE_TEXT ? VT_ASSISTANT_TEXT
								       : VT_ASSISTANT_REASONING,
					c->text_turn, d));
	buf_reset(&c->text);
	free(c->text_turn);
	c->text_turn = NULL;
	c->text_open = false;
}

static void fail(struct capture *c, const struct cerr *why)
{
	if (c->err.cls != CERR_OK)
		return;
	c->err = *why;
	cerr_prefix(&c->err, "capture_failed");
	if (c->st == CAPTURE_OPEN)
		c->st = CAPTURE_FAILED;
}

/* Call back the commits that are settled: all of them once failed. */
static void resolve(struct capture *c, bool all)
{
	while (c->wait_head &&
	       (all || c->err.cls != CERR_OK || c->wait_head->target <= c->acked)) {
		struct waiter *w = c->wait_head;
		c->wait_head = w->next;
		if (!c->wait_head)
			c->wait_tail = NULL;
		w->cb(c, w->ctx, c->err.cls != CERR_OK ? &c->err : NULL);
		free(w);
	}
}

static void maybe_free(struct capture *c)
{
	if (c->st != CAPTURE_CLOSING || !c->timer_closed || c->acked != c->posted)
		return;
	resolve(c, true);
	cJSON_Delete(c->pending);
	buf_release(&c->text);
	free(c->text_turn);
	free(c);
}

static void item_done(void *ctx, const struct journal_receipt *r, const struct cerr *err)
{
	(void)r;
	struct capture *c = ctx;
	c->acked++;
	struct sent *s = c->sent_head;
	if (s) {
		c->sent_head = s->next;
		if (!c->sent_head)
			c->sent_tail = NULL;
		c->inflight -= s->text;
	}
	if (err) /* the journal keeps its events for the full save */
		fail(c, err);
	free(s);
	pressure(c);
	resolve(c, false);
	maybe_free(c);
}

/* Post the pending batch (the open text included) as one history item. */
static void flush(struct capture *c)
{
	close_text(c);
	uv_timer_stop(&c->timer);
	if (cJSON_GetArraySize(c->pending) == 0 || c->st != CAPTURE_OPEN) {
		c->pending_text = 0;
		return;
	}
	cJSON *batch = c->pending;
	c->pending = cJSON_CreateArray();
	c->pending_json = 0;
	struct sent *s = xcalloc(1, sizeof *s);
	s->text = c->pending_text;
	c->pending_text = 0;
	struct journal_write w = {.op = &c->op, .keep = true};
	struct cerr err;
	if (journal_append(c->j, batch, &w, item_done, c, &err) < 0) {
		free(s);
		fail(c, &err);
		return;
	}
	if (c->sent_tail)
		c->sent_tail->next = s;
	else
		c->sent_head = s;
	c->sent_tail = s;
	c->posted++;
	c->inflight += s->text;
	pressure(c);
}

static void timer_cb(uv_timer_t *t)
{
	struct capture *c = t->data;
	resolve(c, false);
	if (c->st != CAPTURE_OPEN)
		return;
	bool have = c->text_open || cJSON_GetArraySize(c->pending) > 0;
	uint64_t age = uv_now(t->loop) - c->pending_since;
	if (have && age >= c->o.flush_ms)
		flush(c);
	else if (have)
		uv_timer_start(&c->timer, timer_cb, c->o.flush_ms - age, 0);
}

/* Observations are kept while OPEN, and while FAILED for the full save. */
static bool capturing(const struct capture *c)
{
	return c->st == CAPTURE_OPEN || c->st == CAPTURE_FAILED;
}

void capture_event(struct capture *c, enum vocab_type type, const char *turn,
		   const cJSON *data)
{
	if (!capturing(c))
		return;
	/* Its size as the writer prints it (what a batch's limit counts);
	 * the text of an open text event is counted in bytes as well. */
	char *printed = data ? json_print(data) : NULL;
	size_t size = printed ? strlen(printed) : 2;
	free(printed);
	if (c->st == CAPTURE_OPEN && cJSON_GetArraySize(c->pending) > 0 &&
	    c->pending_json + c->pending_text + size > c->o.bytes_max)
		flush(c); /* the batch so far goes alone: this one starts the next */
	arm_deadline(c);
	close_text(c);
	c->pending_json += size;
	cJSON_AddItemToArray(c->pending,
			     event_batch_event(type, turn, data ? cJSON_Duplicate(data, 1) : NULL));
}

/* Bytes at the end of p[0..n) that begin a character and do not finish it
 * (a delta may end inside one when the caller splits bytes): 0 when p ends
 * on a character boundary. */
static size_t incomplete_tail(const char *p, size_t n)
{
	for (size_t back = 1; back <= 4 && back <= n; back++) {
		unsigned char b = (unsigned char)p[n - back];
		if ((b & 0xC0) == 0x80)
			continue;
		size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
		return need > back ? back : 0;
	}
	return 0;
}

static bool same_turn(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

void capture_text(struct capture *c, enum capture_stream stream, const char *turn,
		  const char *text, size_t len)
{
	if (!capturing(c) || len == 0)
		return;
	arm_deadline(c);
	while (len > 0) {
		if (c->text_open && (c->text_stream != stream || !same_turn(c->text_turn, turn)))
			close_text(c);
		if (!c->text_open) {
			c->text_open = true;
			c->text_stream = stream;
			c->text_turn = xstrdup_opt(turn);
		}
		/* A character the last delta left unfinished is finished
		 * first: the 4 bytes kept free below batch_max make room. */
		size_t take = 0;
		if (incomplete_tail(c->text.p, c->text.len))
			while (take < len && take < 3 && ((unsigned char)text[take] & 0xC0) == 0x80)
				take++;
		if (take == 0 && c->pending_text + 4 >= c->o.batch_max) {
			/* Full, and the open character is not finished by
			 * these bytes (not UTF-8): it goes as it is. */
			flush(c);
			if (!capturing(c))
				return;
			arm_deadline(c);
			continue;
		}
		if (take == 0) {
			size_t soft = c->o.batch_max - 4 - c->pending_text;
			take = len;
			if (take > soft) {
				/* Cut on a character boundary: never inside one. */
				take = soft;
				while (take > 0 && ((unsigned char)text[take] & 0xC0) == 0x80)
					take--;
				if (take == 0) /* not UTF-8 after all: cut where room ends */
					take = soft;
			}
		}
		buf_add(&c->text, text, take);
		c->pending_text += take;
		text += take;
		len -= take;
		/* Full: it goes, unless it ends inside a character whose rest
		 * the next delta brings (or the input is not UTF-8: then it
		 * goes as soon as the next bytes do not finish it). */
		bool open_char = incomplete_tail(c->text.p, c->text.len) != 0;
		bool finishes = len > 0 && ((unsigned char)text[0] & 0xC0) == 0x80;
		if (c->pending_text + 4 >= c->o.batch_max && (!open_char || (len > 0 && !finishes))) {
			flush(c);
			if (!capturing(c))
				return;
			if (len > 0)
				arm_deadline(c);
		}
	}
}

static void add_waiter(struct capture *c, capture_commit_cb cb, void *ctx)
{
	struct waiter *w = xcalloc(1, sizeof *w);
	w->target = c->posted;
	w->cb = cb;
	w->ctx = ctx;
	if (c->wait_tail)
		c->wait_tail->next = w;
	else
		c->wait_head = w;
	c->wait_tail = w;
}

int capture_commit(struct capture *c, capture_commit_cb cb, void *ctx)
{
	if (c->st == CAPTURE_CLOSING)
		return -1;
	if (c->st == CAPTURE_OPEN)
		flush(c);
	add_waiter(c, cb, ctx);
	/* Already settled (nothing in flight, or failed): answer from the loop. */
	if (c->st == CAPTURE_FAILED || c->err.cls != CERR_OK || c->acked >= c->posted)
		uv_timer_start(&c->timer, timer_cb, 0, 0);
	return 0;
}

enum capture_state capture_take(struct capture *c, cJSON **events)
{
	enum capture_state was = c->st;
	close_text(c);
	*events = c->pending;
	c->pending = cJSON_CreateArray();
	c->pending_text = 0;
	c->pending_json = 0;
	if (c->st == CAPTURE_OPEN || c->st == CAPTURE_FAILED)
		c->st = CAPTURE_TAKEN;
	/* The deadline no longer matters; a commit answer may still be due. */
	if (!c->wait_head)
		uv_timer_stop(&c->timer);
	return was;
}

enum capture_state capture_state(const struct capture *c)
{
	return c->st;
}

const struct cerr *capture_error(const struct capture *c)
{
	return &c->err;
}

size_t capture_outstanding(const struct capture *c)
{
	return (size_t)(c->posted - c->acked);
}

static void timer_closed_cb(uv_handle_t *h)
{
	struct capture *c = h->data;
	c->timer_closed = true;
	maybe_free(c);
}

void capture_close(struct capture *c)
{
	if (c->st == CAPTURE_CLOSING)
		return;
	c->st = CAPTURE_CLOSING;
	uv_close((uv_handle_t *)&c->timer, timer_closed_cb);
}
