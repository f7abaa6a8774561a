/* sink.c — the ordered event sink (sink.h).
 *
 * A singly linked queue of nodes on the loop thread. Delivery runs from a
 * uv_idle handle that is active only while reading is started and the
 * queue is not empty, so an idle sink costs no wake-ups. Each node is
 * unlinked before its callback runs: a delta published from inside the
 * callback can never coalesce into the item being delivered. */
#include "sink/sink.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"

const struct sink_limits SINK_LIMITS_DEFAULT = {256 * 1024, 64 * 1024, 16 * 1024, 256};

struct node {
	struct sink_item it;
	char *turn;       /* owned copies behind it.turn, it.data */
	cJSON *data;
	struct buf text;  /* SINK_TEXT: the (coalesced) delta */
	size_t bytes;     /* what it counts against the limits */
	struct node *next;
};

struct sink {
	uv_idle_t idle;
	struct sink_limits lim;
	struct node *head, *tail;
	size_t n, bytes;
	sink_read_cb read_cb;
	void *read_ctx;
	sink_pressure_cb pressure_cb;
	void *pressure_ctx;
	bool paused;
	bool closing;
	sink_close_cb close_cb;
	void *close_ctx;
};

/* What a JSON value costs in memory, roughly: its nodes and strings. */
static size_t json_weight(const cJSON *v)
{
	size_t w = 0;
	for (; v; v = v->next) {
		w += sizeof *v;
		if (v->string)
			w += strlen(v->string) + 1;
		if (v->valuestring)
			w += strlen(v->valuestring) + 1;
		w += json_weight(v->child);
	}
	return w;
}

static void node_free(struct node *nd)
{
	free(nd->turn);
	cJSON_Delete(nd->data);
	buf_release(&nd->text);
	free(nd);
}

static void tell_pressure(struct sink *s, bool paused)
{
	if (s->paused == paused)
		return;
	s->paused = paused;
	if (s->pressure_cb)
		s->pressure_cb(s, paused, s->pressure_ctx);
}

static void deliver_cb(uv_idle_t *h);

/* The idle handle runs exactly while there is something to deliver. */
static void arm(struct sink *s)
{
	bool want = s->read_cb && s->head && !s->closing;
	if (want && !uv_is_active((uv_handle_t *)&s->idle))
		uv_idle_start(&s->idle, deliver_cb);
	else if (!want && uv_is_active((uv_handle_t *)&s->idle))
		uv_idle_stop(&s->idle);
}

static void account(struct sink *s, struct node *nd, size_t bytes)
{
	nd->bytes += bytes;
	s->bytes += bytes;
	if (s->bytes >= s->lim.high)
		tell_pressure(s, true);
}

static void deliver_cb(uv_idle_t *h)
{
	struct sink *s = h->data;
	for (unsigned i = 0; i < s->lim.per_tick && s->head && s->read_cb && !s->closing; i++) {
		struct node *nd = s->head;
		s->head = nd->next;
		if (!s->head)
			s->tail = NULL;
		s->n--;
		s->bytes -= nd->bytes;
		if (nd->it.kind == SINK_TEXT) {
			nd->it.text = nd->text.p;
			nd->it.len = nd->text.len;
		}
		s->read_cb(s, &nd->it, s->read_ctx);
		node_free(nd);
		if (s->paused && s->bytes <= s->lim.low && !s->closing)
			tell_pressure(s, false);
	}
	arm(s);
}

struct sink *sink_new(uv_loop_t *loop, const struct sink_limits *limits)
{
	struct sink *s = xcalloc(1, sizeof *s);
	s->lim = limits ? *limits : SINK_LIMITS_DEFAULT;
	if (s->lim.per_tick == 0)
		s->lim.per_tick = 1;
	if (s->lim.low > s->lim.high)
		s->lim.low = s->lim.high;
	uv_idle_init(loop, &s->idle);
	s->idle.data = s;
	return s;
}

void sink_read_start(struct sink *s, sink_read_cb cb, void *ctx)
{
	s->read_cb = cb;
	s->read_ctx = ctx;
	arm(s);
}

void sink_read_stop(struct sink *s)
{
	s->read_cb = NULL;
	s->read_ctx = NULL;
	arm(s);
}

void sink_set_pressure(struct sink *s, sink_pressure_cb cb, void *ctx)
{
	s->pressure_cb = cb;
	s->pressure_ctx = ctx;
}

bool sink_paused(const struct sink *s)
{
	return s->paused;
}

static struct node *push(struct sink *s, enum sink_kind kind, const struct sink_op *op,
			 const char *turn)
{
	struct node *nd = xcalloc(1, sizeof *nd);
	nd->it.kind = kind;
	nd->it.op = *op;
	nd->turn = turn ? xstrdup(turn) : NULL;
	nd->it.turn = nd->turn;
	nd->it.coalesced = 1;
	buf_init(&nd->text);
	if (s->tail)
		s->tail->next = nd;
	else
		s->head = nd;
	s->tail = nd;
	s->n++;
	account(s, nd, sizeof *nd + (turn ? strlen(turn) + 1 : 0));
	arm(s);
	return nd;
}

static const char *const notice_names[] = {
#define SINK_NAME(e, name) [e] = name,
	SINK_NOTICES(SINK_NAME)
};
static const char *const marker_names[] = {SINK_MARKERS(SINK_NAME)
#undef SINK_NAME
};

_Static_assert(sizeof notice_names / sizeof *notice_names == SINK_NOTICE_UNKNOWN,
	       "one name per notice");
_Static_assert(sizeof marker_names / sizeof *marker_names == SINK_MARKER_UNKNOWN,
	       "one name per marker");

const char *sink_notice_name(enum sink_notice n)
{
	return (size_t)n < SINK_NOTICE_UNKNOWN ? notice_names[n] : NULL;
}

const char *sink_marker_name(enum sink_marker m)
{
	return (size_t)m < SINK_MARKER_UNKNOWN ? marker_names[m] : NULL;
}

enum sink_notice sink_notice_of(const char *name)
{
	for (size_t i = 0; name && i < SINK_NOTICE_UNKNOWN; i++)
		if (strcmp(notice_names[i], name) == 0)
			return (enum sink_notice)i;
	return SINK_NOTICE_UNKNOWN;
}

enum sink_marker sink_marker_of(const char *name)
{
	for (size_t i = 0; name && i < SINK_MARKER_UNKNOWN; i++)
		if (strcmp(marker_names[i], name) == 0)
			return (enum sink_marker)i;
	return SINK_MARKER_UNKNOWN;
}

static void set_payload(struct sink *s, struct node *nd, const cJSON *data)
{
	if (data) {
		nd->data = cJSON_Duplicate(data, 1);
		nd->it.data = nd->data;
	}
	account(s, nd, json_weight(nd->data));
}

void sink_publish_event(struct sink *s, const struct sink_op *op, enum vocab_type vtype,
			const char *turn, uint64_t seq, bool durable, const cJSON *data)
{
	if (s->closing)
		return;
	struct node *nd = push(s, SINK_EVENT, op, turn);
	nd->it.vtype = vtype;
	nd->it.seq = seq;
	nd->it.durable = durable;
	set_payload(s, nd, data);
}

static bool same_turn(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

void sink_publish_text(struct sink *s, const struct sink_op *op, const char *turn,
		       enum sink_stream stream, const char *text, size_t len)
{
	if (s->closing || len == 0)
		return;
	struct node *t = s->tail;
	if (t && t->it.kind == SINK_TEXT && t->it.stream == stream && sink_op_same(&t->it.op, op) &&
	    same_turn(t->turn, turn) && t->text.len + len <= s->lim.text_max) {
		buf_add(&t->text, text, len);
		t->it.coalesced++;
		account(s, t, len);
		return;
	}
	struct node *nd = push(s, SINK_TEXT, op, turn);
	nd->it.stream = stream;
	buf_add(&nd->text, text, len);
	account(s, nd, len);
}

void sink_publish_notice(struct sink *s, const struct sink_op *op, enum sink_notice n,
			 const cJSON *data)
{
	if (s->closing)
		return;
	struct node *nd = push(s, SINK_NOTICE, op, NULL);
	nd->it.notice = n;
	set_payload(s, nd, data);
}

void sink_publish_marker(struct sink *s, const struct sink_op *op, enum sink_marker m,
			 const cJSON *data)
{
	if (s->closing)
		return;
	struct node *nd = push(s, SINK_MARKER, op, NULL);
	nd->it.marker = m;
	set_payload(s, nd, data);
}

size_t sink_queued(const struct sink *s)
{
	return s->n;
}

size_t sink_queued_bytes(const struct sink *s)
{
	return s->bytes;
}

bool sink_op_same(const struct sink_op *a, const struct sink_op *b)
{
	return a->generation == b->generation && a->operation == b->operation &&
	       strcmp(a->session, b->session) == 0;
}

void sink_op_set(struct sink_op *op, const char *session, uint64_t generation,
		 uint64_t operation)
{
	memset(op, 0, sizeof *op);
	size_t n = session ? strlen(session) : 0;
	if (n > SESSION_ID_MAX)
		n = SESSION_ID_MAX;
	if (n)
		memcpy(op->session, session, n);
	op->generation = generation;
	op->operation = operation;
}

static void closed_cb(uv_handle_t *h)
{
	struct sink *s = h->data;
	if (s->close_cb)
		s->close_cb(s, s->close_ctx);
	free(s);
}

void sink_close(struct sink *s, sink_close_cb cb, void *ctx)
{
	if (s->closing)
		return;
	s->closing = true;
	s->close_cb = cb;
	s->close_ctx = ctx;
	for (struct node *nd = s->head, *next; nd; nd = next) {
		next = nd->next;
		node_free(nd);
	}
	s->head = s->tail = NULL;
	s->n = s->bytes = 0;
	uv_close((uv_handle_t *)&s->idle, closed_cb);
}
