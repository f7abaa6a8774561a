/* transcript.c — the chat screen's model of a session (transcript.h):
 * turns and their blocks, streamed and durable text joined once, turn
 * outcomes in words, the queue, the status line's facts and the change
 * clock. Tool blocks are in transcript_tool.c. */
#include "tui/transcript_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/json.h"
#include "base/title.h"
#include "base/xalloc.h"

/* ---- storage ---- */

struct transcript *transcript_new(const char *session)
{
	struct transcript *tr = xcalloc(1, sizeof *tr);
	tr->session = xstrdup(session ? session : "");
	return tr;
}

static void block_free(struct transcript_block *b)
{
	if (b->kind == TR_TOOL)
		transcript_tool_release(b);
	buf_release(&b->text);
	free(b);
}

static void turn_free(struct transcript_turn *t)
{
	for (size_t i = 0; i < t->n; i++)
		block_free(t->b[i]);
	free(t->b);
	free(t->id);
	free((char *)t->err_class);
	free((char *)t->err_msg);
	free(t);
}

static void queued_release(struct tr_queued *q)
{
	free(q->id);
	free(q->text);
}

void transcript_free(struct transcript *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->n; i++)
		turn_free(tr->turns[i]);
	for (size_t k = 0; k < tr->nq; k++)
		queued_release(&tr->q[k]);
	free(tr->turns);
	strmap_release(&tr->ids);
	free(tr->q);
	free(tr->session);
	free((char *)tr->unsaved_err);
	free((char *)tr->title);
	free((char *)tr->first_title);
	free((char *)tr->provider);
	free((char *)tr->model);
	free(tr);
}

void transcript_touch(struct transcript *tr, struct transcript_turn *t, struct transcript_block *b)
{
	tr->clock++;
	if (b)
		b->version = tr->clock;
	if (t)
		t->version = tr->clock;
}

bool transcript_set_str(const char **slot, const char *v)
{
	if (*slot == v || (*slot && v && strcmp(*slot, v) == 0))
		return false;
	free((char *)*slot);
	*slot = xstrdup_opt(v);
	return true;
}

const char *transcript_str(const cJSON *data, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(data, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

struct transcript_block *transcript_block_add(struct transcript *tr, struct transcript_turn *t,
					      enum transcript_kind kind)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->b = xreallocarray(t->b, t->cap, sizeof *t->b);
	}
	struct transcript_block *b = xcalloc(1, sizeof *b);
	b->kind = kind;
	b->turn = t;
	buf_init(&b->text);
	t->b[t->n++] = b;
	transcript_touch(tr, t, b);
	return b;
}

void transcript_block_remove(struct transcript *tr, struct transcript_turn *t, size_t i)
{
	block_free(t->b[i]);
	memmove(&t->b[i], &t->b[i + 1], (t->n - i - 1) * sizeof *t->b);
	t->n--;
	transcript_touch(tr, t, NULL);
}

/* The latest turn held with this id, or NULL. */
static struct transcript_turn *turn_find(const struct transcript *tr, const char *id)
{
	size_t k;
	return strmap_get(&tr->ids, id, &k) ? tr->turns[k - tr->dropped] : NULL;
}

static struct transcript_turn *turn_add(struct transcript *tr, const char *id, uint64_t seq,
					int64_t t_ms)
{
	if (tr->n == tr->cap) {
		tr->cap = tr->cap ? 2 * tr->cap : 16;
		tr->turns = xreallocarray(tr->turns, tr->cap, sizeof *tr->turns);
	}
	struct transcript_turn *t = xcalloc(1, sizeof *t);
	t->id = xstrdup(id ? id : "");
	t->first_seq = seq;
	t->started_ms = t_ms;
	t->out_tokens = -1;
	t->phase = TR_WAITING;
	t->phase_ms = t_ms;
	tr->turns[tr->n++] = t;
	strmap_put(&tr->ids, t->id, tr->dropped + tr->n - 1);
	transcript_touch(tr, t, NULL);
	if (tr->window && tr->n > tr->window)
		transcript_drop_before(tr, tr->dropped + tr->n - tr->window);
	return t;
}

/* The turn an event or item belongs to: the latest one with its id, or
 * with none the latest turn; one not held yet is added (a log read from
 * its end can begin inside a turn). */
static struct transcript_turn *turn_of(struct transcript *tr, const char *id, uint64_t seq)
{
	struct transcript_turn *t = id ? turn_find(tr, id) : tr->n ? tr->turns[tr->n - 1] : NULL;
	return t ? t : turn_add(tr, id, seq, 0); /* its start is not known */
}

/* ---- text ---- */

static size_t chars_in(const char *p, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)p[i] & 0xC0) != 0x80;
	return c;
}

/* Bytes of a stream from one source: the part past what is shown joins
 * the turn's last block when it is of that stream, else a new block. */
static bool text_add(struct transcript *tr, struct transcript_turn *t, enum sink_stream s,
		     enum tr_source src, const char *p, size_t n, int64_t now_ms)
{
	size_t from = t->at[s][src];
	t->at[s][src] += n;
	if (t->at[s][src] <= t->shown[s])
		return false;
	size_t skip = t->shown[s] > from ? t->shown[s] - from : 0;
	p += skip;
	n -= skip;
	t->shown[s] = t->at[s][src];
	enum transcript_kind kind = s == SINK_STREAM_TEXT ? TR_TEXT : TR_REASONING;
	struct transcript_block *b = t->n ? t->b[t->n - 1] : NULL;
	if (!b || b->kind != kind)
		b = transcript_block_add(tr, t, kind);
	buf_add(&b->text, p, n);
	transcript_touch(tr, t, b);
	if (t->outcome == TR_OPEN) {
		if (t->phase != TR_STREAMING) {
			t->phase = TR_STREAMING;
			t->phase_ms = now_ms;
		}
		t->step_chars += chars_in(p, n);
	}
	return true;
}

/* ---- outcomes ---- */

static enum transcript_outcome outcome_of(const char *s)
{
	switch (vocab_outcome_of(s)) {
	case VO_COMPLETED: return TR_COMPLETED;
	case VO_CANCELED: return TR_CANCELED;
	case VO_FAILED: return TR_FAILED;
	case VO_INTERRUPTED: return TR_INTERRUPTED;
	case VO_UNKNOWN: return TR_OPEN;
	}
	return TR_OPEN;
}

/* The outcome in words: the class of a failure says what happened. */
static void outcome_words(const struct transcript_turn *t, struct buf *b)
{
	const char *cls = t->err_class ? t->err_class : "";
	const char *msg = t->err_msg;
	switch (t->outcome) {
	case TR_OPEN:
	case TR_COMPLETED:
		return;
	case TR_CANCELED:
		buf_adds(b, "canceled");
		break;
	case TR_INTERRUPTED:
		buf_adds(b, "interrupted");
		break;
	case TR_FAILED:
		switch (vocab_error_of(cls)) {
		case VE_DELIVERY_UNKNOWN:
			buf_adds(b, "delivery unknown: the request was sent and its answer was lost");
			break;
		case VE_STEP_LIMIT:
			buf_adds(b, "stopped at the step limit");
			break;
		case VE_CAPTURE_FAILED:
			buf_adds(b, "failed: the turn could not be saved");
			break;
		case VE_PROVIDER:
			buf_adds(b, "failed: the provider's error");
			break;
		case VE_INTERRUPTED: /* a store class, a newer build's: by name */
		case VE_OTHER:
			if (*cls)
				buf_printf(b, "failed: %s", cls);
			else
				buf_adds(b, "failed");
			break;
		}
		break;
	}
	if (t->http_status)
		buf_printf(b, " (HTTP %lld)", (long long)t->http_status);
	if (msg && *msg)
		buf_printf(b, ": %s", msg);
}

/* Record how turn t ended (outcome name, error, usage): its outcome block
 * says it in words when it did not complete. */
static bool turn_ended(struct transcript *tr, struct transcript_turn *t, const cJSON *d,
		       int64_t t_ms)
{
	enum transcript_outcome o = outcome_of(transcript_str(d, "outcome"));
	if (o == TR_OPEN)
		return false;
	const char *cls = NULL, *msg = NULL;
	const cJSON *e = cJSON_GetObjectItem(d, "error");
	if (e)
		(void)vocab_turn_error(e, &cls, &msg);
	int64_t http = 0, out = -1;
	(void)json_get_int(cJSON_GetObjectItem(e, "http_status"), 100, 599, &http);
	(void)json_get_int(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "usage"), "output"), 0,
			   INT64_MAX, &out);
	bool changed = t->outcome != o || http != t->http_status;
	changed |= transcript_set_str(&t->err_class, cls);
	changed |= transcript_set_str(&t->err_msg, msg);
	t->outcome = o;
	t->http_status = http;
	if (out >= 0)
		t->out_tokens = out;
	if (!t->ended_ms)
		t->ended_ms = t_ms;
	if (!changed)
		return false;
	struct transcript_block *ob = NULL;
	for (size_t i = 0; i < t->n && !ob; i++)
		if (t->b[i]->kind == TR_OUTCOME)
			ob = t->b[i];
	if (!ob && o == TR_COMPLETED)
		return true;
	if (!ob)
		ob = transcript_block_add(tr, t, TR_OUTCOME);
	buf_reset(&ob->text);
	outcome_words(t, &ob->text);
	transcript_touch(tr, t, ob);
	return true;
}

/* ---- the queue ---- */

static ssize_t queue_find(const struct transcript *tr, const char *id)
{
	for (size_t k = 0; id && k < tr->nq; k++)
		if (strcmp(tr->q[k].id, id) == 0)
			return (ssize_t)k;
	return -1;
}

static bool queue_add(struct transcript *tr, const cJSON *d, uint64_t seq)
{
	char made[32];
	const char *id = transcript_str(d, "input_id");
	if (!id) { /* an older writer's input without an id: its seq names it */
		snprintf(made, sizeof made, "seq-%llu", (unsigned long long)seq);
		id = made;
	}
	if (queue_find(tr, id) >= 0)
		return false;
	if (tr->nq == tr->capq) {
		tr->capq = tr->capq ? 2 * tr->capq : 8;
		tr->q = xreallocarray(tr->q, tr->capq, sizeof *tr->q);
	}
	const char *text = transcript_str(d, "text");
	tr->q[tr->nq++] = (struct tr_queued){xstrdup(id), xstrdup(text ? text : ""),
					     cJSON_GetObjectItem(d, "blob") != NULL};
	tr->q_version = ++tr->clock;
	return true;
}

bool transcript_input_removed(struct transcript *tr, const char *input_id)
{
	ssize_t k = queue_find(tr, input_id);
	if (k < 0)
		return false;
	queued_release(&tr->q[k]);
	memmove(&tr->q[k], &tr->q[k + 1], (tr->nq - (size_t)k - 1) * sizeof *tr->q);
	tr->nq--;
	tr->q_version = ++tr->clock;
	return true;
}

size_t transcript_queued(const struct transcript *tr)
{
	return tr->nq;
}

const char *transcript_queued_text(const struct transcript *tr, size_t k, const char **input_id,
				   bool *in_blob)
{
	if (k >= tr->nq)
		return NULL;
	if (input_id)
		*input_id = tr->q[k].id;
	if (in_blob)
		*in_blob = tr->q[k].in_blob;
	return tr->q[k].text;
}

uint64_t transcript_queue_version(const struct transcript *tr)
{
	return tr->q_version;
}

/* ---- events ---- */

static bool session_field(const char **slot, const cJSON *d, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(d, k);
	if (cJSON_IsString(v))
		return transcript_set_str((const char **)slot, v->valuestring);
	if (cJSON_IsNull(v))
		return transcript_set_str((const char **)slot, NULL);
	return false;
}

/* A session without a title of its own is called by its first prompt, as
 * the catalog calls it (`cairn sessions`): known only to a model that was
 * fed the log from its start. */
static void first_title(struct transcript *tr, const char *text)
{
	if (tr->first_title || !text || tr->begin_seq > 1)
		return;
	char *t = title_of(text, TITLE_PROMPT_MAX);
	if (*t)
		tr->first_title = t;
	else
		free(t); /* nothing to call it by (an empty prompt, one in a blob): the next one */
}

static bool prompt_add(struct transcript *tr, struct transcript_turn *t, const cJSON *d)
{
	const char *text = transcript_str(d, "text");
	first_title(tr, text);
	struct transcript_block *b = transcript_block_add(tr, t, TR_PROMPT);
	buf_adds(&b->text, text ? text : "");
	int64_t size = 0;
	const cJSON *blob = cJSON_GetObjectItem(d, "blob");
	b->in_blob = blob != NULL;
	if (blob && json_get_int(cJSON_GetObjectItem(blob, "size"), 0, INT64_MAX, &size))
		b->blob_size = (uint64_t)size;
	return true;
}

static bool step_ended(struct transcript_turn *t, const cJSON *d, int64_t t_ms)
{
	int64_t out;
	if (json_get_int(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "usage"), "output"), 0,
			 INT64_MAX, &out))
		t->out_tokens = (t->out_tokens < 0 ? 0 : t->out_tokens) + out;
	/* The reply is whole: its calls are decided or the next request goes. */
	t->phase = TR_WAITING;
	t->phase_ms = t_ms;
	return true;
}

bool transcript_apply_event(struct transcript *tr, enum vocab_type type, const char *turn,
			    uint64_t seq, int64_t t_ms, const cJSON *data)
{
	if (seq) {
		if (seq <= tr->last_seq)
			return false; /* applied already (the log, then the sink) */
		tr->last_seq = seq;
		if (!tr->first_fed)
			tr->first_fed = seq;
	}
	struct transcript_turn *t = NULL;
	switch (type) {
	case VT_SESSION_HEADER:
	case VT_SESSION_SETTINGS: {
		/* Both fields are read, whichever changed. */
		bool p = session_field(&tr->provider, data, "provider");
		bool m = session_field(&tr->model, data, "model");
		return p || m;
	}
	case VT_SESSION_META:
		return session_field(&tr->title, data, "title");
	case VT_INPUT_QUEUED:
		return queue_add(tr, data, seq);
	case VT_INPUT_DEQUEUED:
		return transcript_input_removed(tr, transcript_str(data, "input_id"));
	case VT_BRANCH_REWIND: /* the rewind picker's issue shows branches */
	case VT_UNKNOWN:
		return false;
	case VT_TURN_START: {
		const struct transcript_turn *same = turn_find(tr, turn ? turn : "");
		if (same && same->outcome == TR_OPEN)
			return false; /* a turn still open started again: the same turn */
		turn_add(tr, turn, seq, t_ms);
		return true;
	}
	case VT_USER_MESSAGE:
	case VT_REQUEST_PREPARED:
	case VT_ASSISTANT_TEXT:
	case VT_ASSISTANT_REASONING:
	case VT_TOOL_CALL:
	case VT_INTERACTION_REQUEST:
	case VT_INTERACTION_ANSWER:
	case VT_TOOL_STARTED:
	case VT_TOOL_RESULT:
	case VT_STEP_END:
	case VT_TURN_END:
		break;
	}
	t = turn_of(tr, turn, seq);
	const char *text = transcript_str(data, "text");
	switch (type) {
	case VT_USER_MESSAGE:
		return prompt_add(tr, t, data);
	case VT_REQUEST_PREPARED:
		t->phase = TR_WAITING;
		t->phase_ms = t_ms;
		t->step_chars = 0;
		return true;
	case VT_ASSISTANT_TEXT:
		return text && text_add(tr, t, SINK_STREAM_TEXT, TR_DURABLE, text, strlen(text), t_ms);
	case VT_ASSISTANT_REASONING:
		/* A redacted block is the provider's opaque data, never streamed:
		 * nothing a reader can use, and not part of the reasoning's bytes. */
		if (cJSON_IsTrue(cJSON_GetObjectItem(data, "redacted")) || !text)
			return false;
		return text_add(tr, t, SINK_STREAM_REASONING, TR_DURABLE, text, strlen(text), t_ms);
	case VT_STEP_END:
		return step_ended(t, data, t_ms);
	case VT_TURN_END: {
		bool changed = transcript_tool_drop_pending(tr, t);
		return turn_ended(tr, t, data, t_ms) || changed;
	}
	default:
		return transcript_tool_event(tr, t, type, t_ms, data);
	}
}

void transcript_history(void *tr, enum vocab_type type, const char *turn, uint64_t seq,
			int64_t t_ms, const cJSON *data)
{
	(void)transcript_apply_event(tr, type, turn, seq, t_ms, data);
}

/* ---- the sink ---- */

static bool notice(struct transcript *tr, const struct sink_item *it, int64_t now_ms)
{
	switch (it->notice) {
	case SINK_NOTICE_TOOL_CALL:
		return transcript_tool_notice(tr, turn_of(tr, it->turn, 0), it->data);
	case SINK_NOTICE_INTERACTION:
		return transcript_tool_asked(tr, turn_of(tr, it->turn, 0), it->data, now_ms);
	case SINK_NOTICE_UNSAVED: {
		const char *cls = NULL, *msg = NULL;
		(void)vocab_turn_error(cJSON_GetObjectItem(it->data, "error"), &cls, &msg);
		tr->unsaved = true;
		transcript_set_str(&tr->unsaved_err, msg ? msg : "not saved");
		return true;
	}
	case SINK_NOTICE_SAVED: {
		bool was = tr->unsaved;
		tr->unsaved = false;
		transcript_set_str(&tr->unsaved_err, NULL);
		return was;
	}
	case SINK_NOTICE_HELD:    /* the screen's business, nothing shown here */
	case SINK_NOTICE_UNKNOWN:
		return false;
	}
	return false;
}

bool transcript_apply_sink(struct transcript *tr, const struct sink_item *it, int64_t now_ms)
{
	if (strcmp(it->op.session, tr->session) != 0)
		return false;
	switch (it->kind) {
	case SINK_EVENT:
		return transcript_apply_event(tr, it->vtype, it->turn, it->seq, now_ms, it->data);
	case SINK_TEXT:
		return text_add(tr, turn_of(tr, it->turn, 0), it->stream, TR_LIVE, it->text,
				it->len, now_ms);
	case SINK_NOTICE:
		return notice(tr, it, now_ms);
	case SINK_MARKER:
		if (it->marker != SINK_MARKER_TURN_DONE)
			return false;
		/* A turn that never started (its BEFORE save failed, or it was
		 * canceled first) is not in the log: nothing of it was shown. */
		const char *id = transcript_str(it->data, "turn");
		struct transcript_turn *ended = id ? turn_find(tr, id) : NULL;
		return ended ? turn_ended(tr, ended, it->data, now_ms) : false;
	}
	return false;
}

/* ---- reading ---- */

size_t transcript_dropped(const struct transcript *tr)
{
	return tr->dropped;
}

size_t transcript_end(const struct transcript *tr)
{
	return tr->dropped + tr->n;
}

const struct transcript_turn *transcript_turn(const struct transcript *tr, size_t k)
{
	return k >= tr->dropped && k - tr->dropped < tr->n ? tr->turns[k - tr->dropped] : NULL;
}

const char *transcript_turn_id(const struct transcript_turn *t)
{
	return t->id;
}

enum transcript_outcome transcript_turn_outcome(const struct transcript_turn *t)
{
	return t->outcome;
}

const char *transcript_turn_error_class(const struct transcript_turn *t)
{
	return t->err_class;
}

const char *transcript_turn_error(const struct transcript_turn *t)
{
	return t->err_msg;
}

int64_t transcript_turn_started_ms(const struct transcript_turn *t)
{
	return t->started_ms;
}

int64_t transcript_turn_ended_ms(const struct transcript_turn *t)
{
	return t->ended_ms;
}

int64_t transcript_turn_output_tokens(const struct transcript_turn *t)
{
	return t->out_tokens;
}

uint64_t transcript_turn_version(const struct transcript_turn *t)
{
	return t->version;
}

size_t transcript_turn_blocks(const struct transcript_turn *t)
{
	return t->n;
}

const struct transcript_block *transcript_turn_block(const struct transcript_turn *t, size_t i)
{
	return i < t->n ? t->b[i] : NULL;
}

enum transcript_kind transcript_block_kind(const struct transcript_block *b)
{
	return b->kind;
}

const char *transcript_block_text(const struct transcript_block *b, size_t *len)
{
	if (len)
		*len = b->text.len;
	return b->text.p ? b->text.p : "";
}

uint64_t transcript_block_version(const struct transcript_block *b)
{
	return b->version;
}

bool transcript_block_expanded(const struct transcript_block *b)
{
	return b->expanded;
}

void transcript_block_set_expanded(struct transcript *tr, const struct transcript_block *cb,
				   bool expanded)
{
	struct transcript_block *b = (struct transcript_block *)cb; /* the model's own */
	if (b->expanded == expanded)
		return;
	b->expanded = expanded;
	transcript_touch(tr, b->turn, b);
}

bool transcript_block_in_blob(const struct transcript_block *b, uint64_t *size)
{
	if (size)
		*size = b->blob_size;
	return b->in_blob;
}

const struct transcript_tool *transcript_block_tool(const struct transcript_block *b)
{
	return b->kind == TR_TOOL ? &b->tool : NULL;
}

/* ---- status and changes ---- */

void transcript_state(const struct transcript *tr, struct transcript_state *out)
{
	*out = (struct transcript_state){.activity = TR_IDLE, .output_tokens = -1};
	out->queued = tr->nq;
	out->unsaved = tr->unsaved;
	out->unsaved_error = tr->unsaved_err;
	out->title = tr->title ? tr->title : tr->first_title;
	out->provider = tr->provider;
	out->model = tr->model;
	const struct transcript_turn *t = tr->n ? tr->turns[tr->n - 1] : NULL;
	if (!t)
		return;
	out->output_tokens = t->out_tokens;
	out->interrupted = t->outcome == TR_INTERRUPTED;
	if (t->outcome != TR_OPEN)
		return;
	out->turn = t->id;
	out->activity = t->phase;
	out->since_ms = t->phase_ms;
	out->stream_chars = t->step_chars;
	for (size_t i = t->n; i-- > 0;) {
		const struct transcript_tool *tool = transcript_block_tool(t->b[i]);
		if (!tool)
			continue;
		if (tool->approval == TR_APPROVAL_WAITING) {
			out->activity = TR_APPROVAL;
			out->since_ms = t->b[i]->since_ms;
			out->tool = tool->name;
			return;
		}
		if (tool->started && tool->status == TR_STATUS_NONE) {
			out->activity = TR_RUNNING_TOOL;
			out->since_ms = tool->started_ms;
			out->tool = tool->name;
			return;
		}
	}
}

const struct transcript_tool *transcript_pending_approval(const struct transcript *tr)
{
	struct transcript_state st;
	transcript_state(tr, &st);
	if (st.activity != TR_APPROVAL || !transcript_end(tr))
		return NULL;
	const struct transcript_turn *t = transcript_turn(tr, transcript_end(tr) - 1);
	for (size_t i = transcript_turn_blocks(t); i-- > 0;) {
		const struct transcript_tool *tt = transcript_block_tool(transcript_turn_block(t, i));
		if (tt && tt->approval == TR_APPROVAL_WAITING && tt->request_id)
			return tt;
	}
	return NULL;
}

uint64_t transcript_version(const struct transcript *tr)
{
	return tr->clock;
}

size_t transcript_changed_from(const struct transcript *tr, uint64_t since)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->turns[i]->version > since)
			return tr->dropped + i;
	return transcript_end(tr);
}

/* ---- memory ---- */

void transcript_drop_before(struct transcript *tr, size_t k)
{
	if (k <= tr->dropped)
		return;
	size_t n = k - tr->dropped > tr->n ? tr->n : k - tr->dropped;
	for (size_t i = 0; i < n; i++) {
		size_t at;
		if (strmap_get(&tr->ids, tr->turns[i]->id, &at) && at == tr->dropped + i)
			strmap_del(&tr->ids, tr->turns[i]->id);
		turn_free(tr->turns[i]);
	}
	memmove(tr->turns, tr->turns + n, (tr->n - n) * sizeof *tr->turns);
	tr->n -= n;
	tr->dropped += n;
	tr->clock++;
}

void transcript_set_window(struct transcript *tr, size_t max_turns)
{
	tr->window = max_turns;
	if (max_turns && tr->n > max_turns)
		transcript_drop_before(tr, tr->dropped + tr->n - max_turns);
}

void transcript_begin_at(struct transcript *tr, uint64_t first_seq)
{
	tr->begin_seq = first_seq;
}

bool transcript_has_earlier(const struct transcript *tr)
{
	return tr->dropped > 0 || tr->begin_seq > 1;
}

uint64_t transcript_last_seq(const struct transcript *tr)
{
	return tr->last_seq;
}

void transcript_adopt_session(struct transcript *tr, struct transcript *from)
{
	for (size_t k = 0; k < tr->nq; k++)
		queued_release(&tr->q[k]);
	free(tr->q);
	tr->q = from->q, tr->nq = from->nq, tr->capq = from->capq;
	from->q = NULL, from->nq = from->capq = 0;
	const char **mine[] = {&tr->unsaved_err, &tr->title, &tr->first_title, &tr->provider, &tr->model};
	const char **theirs[] = {&from->unsaved_err, &from->title, &from->first_title, &from->provider,
				 &from->model};
	for (size_t i = 0; i < sizeof mine / sizeof *mine; i++) {
		free((char *)*mine[i]);
		*mine[i] = *theirs[i];
		*theirs[i] = NULL;
	}
	tr->unsaved = from->unsaved;
	tr->clock++;
	tr->q_version = tr->clock;
}

uint64_t transcript_first_seq(const struct transcript *tr)
{
	if (tr->dropped && tr->n)
		return tr->turns[0]->first_seq;
	return tr->begin_seq ? tr->begin_seq : tr->first_fed;
}
