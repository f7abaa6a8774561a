/* host.c — sessions of the host (host.h): create, open, release, delete,
 * close, and completions delivered from the loop.
 *
 * The runtime of a session (enum host_state), changed only by host_to(),
 * which checks this table:
 *
 *   OPENING   --(open item done, context built: open_built;
 *                or a new session, nothing to read: host_create)--> IDLE
 *   OPENING   --(open failed once the FIFO held it, or a release asked
 *                for meanwhile: open_built, open_canceled)--> RELEASING
 *   IDLE      --(a turn admitted: host_turn_start)--> TURN
 *   TURN      --(settled, saved or not: host_turn_settled)--> IDLE
 *   IDLE      --(host_release, host_delete, host_close)--> RELEASING
 *
 * A session is born OPENING (sess_new) and forgotten (freed, no state)
 * when its open item failed (the FIFO never held it) or once RELEASING's
 * release item is done. Any other transition is a bug: host_to asserts,
 * and where assertions are off it refuses it (CERR_CONFLICT, the state
 * unchanged). Durability (SAVED / UNSAVED / RECOVERING) is host_turn.c's. */
#include "engine/host_int.h"

#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/ulid.h"
#include "base/strmap.h"
#include "base/xalloc.h"
#include "engine/textfix.h"
#include "persist/blob.h"
#include "persist/prepare.h"
#include "persist/store.h"

#define B(st) (1u << (st))

/* host_next[from] has bit `to` set: the table above. */
static const unsigned host_next[HOST_STATE_COUNT] = {
	[HOST_OPENING] = B(HOST_IDLE) | B(HOST_RELEASING),
	[HOST_IDLE] = B(HOST_TURN) | B(HOST_RELEASING),
	[HOST_TURN] = B(HOST_IDLE),
	[HOST_RELEASING] = 0,
};

_Static_assert(HOST_OPENING == 0, "a session is born OPENING (sess_new zeroes it)");

bool host_state_allows(enum host_state from, enum host_state to)
{
	if ((unsigned)from >= HOST_STATE_COUNT || (unsigned)to >= HOST_STATE_COUNT)
		return false;
	return (host_next[from] & B(to)) != 0;
}

const char *host_state_name(enum host_state st)
{
	static const char *const names[HOST_STATE_COUNT] = {
		[HOST_OPENING] = "opening", [HOST_IDLE] = "idle", [HOST_TURN] = "turn",
		[HOST_RELEASING] = "releasing",
	};
	return (unsigned)st < HOST_STATE_COUNT ? names[st] : "?";
}

int host_may(const struct hsess *s, enum host_state to, struct cerr *err)
{
	if (host_state_allows(s->st, to))
		return 0;
	assert(!"a host transition the table lacks");
	return cerr_set(err, CERR_CONFLICT, 0, "session '%s': no transition from %s to %s", s->id,
			host_state_name(s->st), host_state_name(to));
}

int host_to(struct hsess *s, enum host_state to, struct cerr *err)
{
	if (host_may(s, to, err) < 0)
		return -1;
	s->st = to;
	return 0;
}

void host_set_str(char **slot, const char *v)
{
	char *c = xstrdup_opt(v);
	free(*slot);
	*slot = c;
}

struct hsess *host_find(const struct host *h, const char *id)
{
	for (struct hsess *s = h->sessions; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

/* ---- completions ---- */

struct op *host_op(struct host *h, struct hsess *s, enum op_kind kind, host_cb cb, void *ctx)
{
	struct op *op = xcalloc(1, sizeof *op);
	op->h = h;
	op->s = s;
	op->kind = kind;
	op->cb = cb;
	op->ctx = ctx;
	if (s)
		op->r.session = s->id;
	return op;
}

static void op_free(struct op *op)
{
	free(op->turn);
	free(op->input_id);
	free(op->text);
	cJSON_Delete(op->events);
	cJSON_Delete(op->settings);
	free(op);
}

void host_fill_head(struct op *op)
{
	if (!op->s)
		return;
	op->r.next_seq = journal_next_seq(op->s->j);
	op->r.version = journal_version(op->s->j);
}

void host_complete(struct op *op, const struct cerr *err)
{
	op->r.turn = op->turn;
	op->r.input_id = op->input_id;
	op->r.text = op->text;
	if (op->cb)
		op->cb(op->ctx, &op->r, err);
	op_free(op);
}

static void idle_cb(uv_idle_t *i)
{
	struct host *h = i->data;
	/* Only what is due now: a callback that defers more runs next time. */
	struct op *list = h->deferred;
	h->deferred = h->deferred_tail = NULL;
	while (list) {
		struct op *op = list;
		list = op->next;
		host_complete(op, op->failed ? &op->err : NULL);
	}
	if (!h->deferred)
		uv_idle_stop(&h->idle);
	host_check_close(h);
}

void host_defer(struct op *op, const struct cerr *err)
{
	struct host *h = op->h;
	if (err) {
		op->err = *err;
		op->failed = true;
	}
	op->next = NULL;
	if (h->deferred_tail)
		h->deferred_tail->next = op;
	else
		h->deferred = op;
	h->deferred_tail = op;
	uv_idle_start(&h->idle, idle_cb);
}

void host_notice(struct hsess *s, enum sink_notice n, const struct cerr *err)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "session", s->id);
	if (err) {
		cJSON *e = cJSON_AddObjectToObject(d, "error");
		cJSON_AddStringToObject(e, "class", cerr_class_name(err->cls));
		cJSON_AddStringToObject(e, "message", err->msg);
	}
	struct sink_op op;
	sink_op_set(&op, s->id, s->generation, 0);
	sink_publish_notice(s->h->d.sink, &op, n, d);
	cJSON_Delete(d);
}

/* ---- sessions ---- */

/* A session of h; cwd: the header's when it is new (NULL: it exists). */
static struct hsess *sess_new(struct host *h, const char *id, const char *cwd)
{
	struct hsess *s = xcalloc(1, sizeof *s);
	s->h = h;
	snprintf(s->id, sizeof s->id, "%s", id);
	s->generation = ++h->next_generation;
	s->ctx = context_new();
	context_set_result_max(s->ctx, h->d.tool_result_max);
	struct journal_deps jd = {
		.fifo = h->d.fifo, .sink = h->d.sink, .session = id, .generation = s->generation,
		.cwd = cwd};
	s->j = journal_new(&jd, s->ctx, false, 1, 0);
	journal_on_state(s->j, host_journal_state, s);
	static const char *const strip[] = {"*_API_KEY", NULL};
	extern char **environ;
	s->env = tool_env(environ, h->d.tool_env_strip ? (const char *const *)h->d.tool_env_strip
						       : strip);
	s->grants = approvals_new();
	s->tctx = (struct tool_ctx){
		.loop = h->d.loop,
		.env = s->env,
		.limits = {.result_max = h->d.tool_result_max, .full_max = h->d.tool_output_max},
	};
	s->blob_dir = -1;
	strmap_init(&s->submits);
	s->next = h->sessions;
	h->sessions = s;
	return s;
}

static void sess_free(struct hsess *s)
{
	struct host *h = s->h;
	for (struct hsess **p = &h->sessions; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	journal_close(s->j);
	context_free(s->ctx);
	tool_env_free(s->env);
	approvals_free(s->grants);
	if (s->blob_dir >= 0)
		close(s->blob_dir);
	free(s->cwd);
	free(s->leaf);
	free(s->prev_leaf);
	free(s->turn);
	free(s->turn_input);
	free(s->turn_text);
	strmap_release(&s->submits);
	for (size_t i = 0; i < s->n_submits; i++) {
		free(s->submit_keys[i]);
		free(s->submit_turns[i]);
	}
	free(s->submit_keys);
	free(s->submit_turns);
	for (size_t i = 0; i < s->nq; i++) {
		free(s->q[i].id);
		free(s->q[i].text);
	}
	free(s->q);
	free(s->view);
	free(s->c_provider);
	free(s->c_model);
	free(s->c_base_url);
	free(s->c_key);
	free(s->c_system);
	cJSON_Delete(s->c_tools);
	free(s->set_provider);
	free(s->set_model);
	free(s->set_approval);
	free(s->set_system);
	cJSON_Delete(s->turn_settings);
	free(s);
}

int host_refuse(const struct host *h, const struct hsess *s, const char *id, struct cerr *err)
{
	if (h->closing)
		return cerr_set(err, CERR_USAGE, 0, "the host is closing");
	if (!s)
		return cerr_set(err, CERR_MISSING, 0, "session '%s' is not open", id);
	if (s->st == HOST_OPENING)
		return cerr_set(err, CERR_BUSY, 0, "session '%s' is still opening", id);
	if (s->st == HOST_RELEASING)
		return cerr_set(err, CERR_BUSY, 0, "session '%s' is being released", id);
	return 0;
}

struct host *host_new(const struct host_deps *deps)
{
	struct host *h = xcalloc(1, sizeof *h);
	h->d = *deps;
	h->root = xstrdup(deps->root);
	h->d.root = h->root;
	struct runner_deps rd = {
		.loop = deps->loop, .http = deps->http, .sink = deps->sink,
		.settled = host_turn_settled, .ud = h,
	};
	h->run = runner_new(&rd);
	uv_idle_init(deps->loop, &h->idle);
	h->idle.data = h;
	uv_timer_init(deps->loop, &h->deadline);
	h->deadline.data = h;
	return h;
}

static void handle_closed(uv_handle_t *hd)
{
	struct host *h = hd->data;
	if (hd == (uv_handle_t *)&h->idle) {
		h->idle.data = NULL;
		uv_close((uv_handle_t *)&h->deadline, handle_closed);
		return;
	}
	free(h);
}

void host_free(struct host *h)
{
	if (!h)
		return;
	runner_free(h->run);
	while (h->sessions)
		sess_free(h->sessions);
	while (h->deferred) {
		struct op *op = h->deferred;
		h->deferred = op->next;
		op_free(op);
	}
	free(h->root);
	uv_close((uv_handle_t *)&h->idle, handle_closed);
}

int host_set_approval(struct host *h, const char *id, enum approval_policy p, struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (!s)
		return cerr_set(err, CERR_MISSING, 0, "session '%s' is not open", id);
	s->policy = p;
	s->policy_set = true;
	return 0;
}

void host_set_http(struct host *h, struct http *http)
{
	h->d.http = http;
	runner_set_http(h->run, http);
}

int host_set_call(struct host *h, const char *id, const struct host_call *c, struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (!s)
		return cerr_set(err, CERR_MISSING, 0, "session '%s' is not open", id);
	host_set_str(&s->c_provider, c->provider ? c->provider : "offline");
	host_set_str(&s->c_model, c->call.params.model);
	host_set_str(&s->c_base_url, c->call.params.base_url);
	host_set_str(&s->c_key, c->call.params.api_key);
	host_set_str(&s->c_system, c->call.params.system);
	cJSON_Delete(s->c_tools);
	s->c_tools = c->call.params.tools ? cJSON_Duplicate(c->call.params.tools, 1) : NULL;
	s->call = *c;
	s->call.provider = s->c_provider;
	s->call.call.params.model = s->c_model;
	s->call.call.params.base_url = s->c_base_url;
	s->call.call.params.api_key = s->c_key;
	s->call.call.params.system = s->c_system;
	s->call.call.params.tools = s->c_tools;
	s->have_call = true;
	return 0;
}

int host_create(struct host *h, const char *cwd, const struct host_call *call,
		char id_out[SESSION_ID_MAX + 1], host_cb cb, void *ctx, struct cerr *err)
{
	if (h->closing)
		return cerr_set(err, CERR_USAGE, 0, "the host is closing");
	char id[ULID_LEN + 1];
	ulid_new(id);
	struct hsess *s = sess_new(h, id, cwd);
	if (host_to(s, HOST_IDLE, err) < 0) {
		sess_free(s);
		return -1;
	}
	s->cwd = xstrdup_opt(cwd);
	s->last_ok = true;
	if (call)
		host_set_call(h, id, call, err);
	snprintf(id_out, SESSION_ID_MAX + 1, "%s", id);
	struct op *op = host_op(h, s, OP_DONE, cb, ctx);
	host_fill_head(op);
	host_defer(op, NULL);
	return 0;
}

/* ---- open: the FIFO's open item, then the context built on a worker ---- */

struct open_work {
	uv_work_t w;
	struct hsess *s;
	struct prepared *p;
	struct cerr err;
	bool failed;
	/* built on the worker, adopted on the loop */
	struct context *ctx;
	int blob_dir;
	char *system;     /* the system prompt in effect, read whole from its blob */
	char **keys, **turns;
	size_t n;
	struct approvals_replay *grants; /* "allow for this session" answers */
};

static const char *str_at(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The session's folder, for the blobs its events name (-1: none found). */
static int open_blob_dir(const char *root, const char *cwd, const char *id)
{
	struct store *st;
	struct cerr err;
	if (store_open(root, false, &st, &err) < 0)
		return -1;
	struct session_ref ref;
	snprintf(ref.id, sizeof ref.id, "%s", id);
	char *key = pathkey_project(cwd);
	snprintf(ref.key, sizeof ref.key, "%s", key ? key : "");
	free(key);
	int fd = store_open_dir(st, &ref, false, &err);
	store_close(st);
	return fd;
}

/* The system prompt the session recorded went to a blob: read it whole,
 * as the context reads long prompts (the next turn is sent it). */
static int read_system(struct open_work *ow)
{
	const struct prepared_settings *set = prepared_settings(ow->p);
	if (ow->blob_dir < 0)
		return cerr_set(&ow->err, CERR_MISSING, 0,
				"session '%s': the folder holding its system prompt cannot be opened",
				ow->s->id);
	struct buf b = BUF_INIT;
	if (blob_read(ow->blob_dir, &set->system_prompt_blob, &b, &ow->err) < 0) {
		buf_release(&b);
		cerr_prefix(&ow->err, "session '%s', its system prompt", ow->s->id);
		return -1;
	}
	ow->system = textfix_string(b.p ? b.p : "", b.len);
	buf_release(&b);
	return 0;
}

/* Whether the context, the grants or the submit keys read an event of
 * type t's data; the others are added without parsing their line (when
 * no history callback wants every event). */
static bool open_reads_data(enum vocab_type t)
{
	switch (t) {
	case VT_TURN_START:
	case VT_USER_MESSAGE:
	case VT_ASSISTANT_TEXT:
	case VT_ASSISTANT_REASONING:
	case VT_TOOL_CALL:
	case VT_TOOL_RESULT:
	case VT_INTERACTION_REQUEST:
	case VT_INTERACTION_ANSWER:
		return true;
	case VT_SESSION_HEADER:
	case VT_SESSION_META:
	case VT_SESSION_SETTINGS:
	case VT_REQUEST_PREPARED:
	case VT_TOOL_STARTED:
	case VT_STEP_END:
	case VT_TURN_END:
	case VT_BRANCH_REWIND:
	case VT_INPUT_QUEUED:
	case VT_INPUT_DEQUEUED:
	case VT_UNKNOWN:
		return false;
	}
	return true;
}

static void open_work(uv_work_t *w)
{
	struct open_work *ow = w->data;
	const struct prepared *p = ow->p;
	const struct load *l = prepared_load(p);
	ow->ctx = context_new();
	ow->grants = approvals_replay_new();
	ow->blob_dir = open_blob_dir(ow->s->h->root, prepared_scan(p)->cwd, ow->s->id);
	if (ow->blob_dir >= 0)
		context_set_blob_dir(ow->ctx, ow->blob_dir);
	if (prepared_settings(p)->system_prompt_in_blob && read_system(ow) < 0) {
		ow->failed = true;
		return;
	}
	if (ow->s->open_history && load_count(l) > 0) { /* the header: what the loop skips */
		cJSON *line = load_json(l, 0);
		ow->s->open_history(ow->s->open_history_ctx, (enum vocab_type)load_event(l, 0)->type,
				    NULL, load_event(l, 0)->seq, load_event(l, 0)->t,
				    cJSON_GetObjectItem(line, "data"));
		cJSON_Delete(line);
	}
	for (size_t i = 1; i < load_count(l); i++) {
		const struct load_event *ev = load_event(l, i);
		if (ev->type == VT_UNKNOWN)
			continue; /* unknown, ignorable */
		if (!ow->s->open_history && !open_reads_data((enum vocab_type)ev->type)) {
			if (context_add(ow->ctx, (enum vocab_type)ev->type, load_turn(l, i), NULL,
					&ow->err) < 0) {
				ow->failed = true;
				break;
			}
			continue;
		}
		cJSON *line = load_json(l, i);
		const cJSON *data = cJSON_GetObjectItem(line, "data");
		approvals_replay_event(ow->grants, (enum vocab_type)ev->type, data);
		if (ev->type == VT_TURN_START && str_at(data, "client_submit_id")) {
			ow->keys = xrealloc(ow->keys, (ow->n + 1) * sizeof *ow->keys);
			ow->turns = xrealloc(ow->turns, (ow->n + 1) * sizeof *ow->turns);
			ow->keys[ow->n] = xstrdup(str_at(data, "client_submit_id"));
			ow->turns[ow->n] = xstrdup(load_turn(l, i) ? load_turn(l, i) : "");
			ow->n++;
		}
		if (ow->s->open_history)
			ow->s->open_history(ow->s->open_history_ctx, (enum vocab_type)ev->type,
					    load_turn(l, i), ev->seq, ev->t, data);
		int rc = context_add(ow->ctx, (enum vocab_type)ev->type, load_turn(l, i), data,
				     &ow->err);
		cJSON_Delete(line);
		if (rc < 0) {
			ow->failed = true;
			break;
		}
	}
}

/* An open is canceled by a release asked for meanwhile: the open fails
 * (CERR_CONFLICT) and the release goes on. */
static void open_canceled(struct hsess *s, struct op *open_op)
{
	struct cerr err;
	cerr_set(&err, CERR_CONFLICT, 0, "opening session '%s' was canceled", s->id);
	struct op *rel = s->open_release;
	s->open_release = NULL;
	host_to(s, HOST_RELEASING, NULL);
	host_complete(open_op, &err);
	host_write(s, rel);
}

/* A long log read and freed: its memory goes back to the system on a
 * worker (malloc_trim walks the heap), not on the loop. */
#define TRIM_AFTER_BYTES ((size_t)16 << 20)

static void trim_work(uv_work_t *w)
{
	(void)w;
	xalloc_trim();
}

static void trim_done(uv_work_t *w, int status)
{
	(void)status;
	free(w);
}

static void trim_soon(uv_loop_t *loop)
{
	uv_work_t *w = xcalloc(1, sizeof *w);
	if (uv_queue_work(loop, w, trim_work, trim_done) != 0)
		free(w); /* best effort: the memory only stays resident */
}

static void open_built(uv_work_t *w, int status)
{
	struct open_work *ow = w->data;
	struct hsess *s = ow->s;
	struct host *h = s->h;
	const struct prepared *p = ow->p;
	s->open_work = NULL;
	if (s->open_release && !ow->failed) {
		ow->failed = true;
		cerr_set(&ow->err, CERR_CONFLICT, 0, "opening was canceled");
	}
	if (status < 0 && !ow->failed) {
		ow->failed = true;
		cerr_set(&ow->err, CERR_IO, 0, "building the context was canceled");
	}
	if (!ow->failed) {
		context_free(s->ctx);
		s->ctx = ow->ctx;
		journal_set_context(s->j, s->ctx);
		s->blob_dir = ow->blob_dir;
		ow->ctx = NULL;
		for (size_t i = 0; i < ow->n; i++)
			host_submit_add(s, ow->keys[i], ow->turns[i]);
		s->n_turns = prepared_turn_number(p); /* t<n+1>: a new id */
		size_t path = prepared_path_len(p);
		if (path)
			host_set_str(&s->leaf, prepared_turn(p, prepared_path(p, path - 1))->id);
		for (size_t k = 0; k < prepared_n_queued(p); k++) {
			const struct prepared_input *in = prepared_queued(p, k);
			if (in->input_id) /* restored: held, never dispatched by itself */
				host_queue_add(s, in->input_id, in->text ? in->text : "", false, false);
		}
		const struct prepared_settings *set = prepared_settings(p);
		host_set_str(&s->set_provider, set->provider);
		host_set_str(&s->set_model, set->model);
		host_set_str(&s->set_approval, set->approval);
		host_set_str(&s->set_system, ow->system ? ow->system : set->system_prompt);
		struct cerr pe;
		if (!s->policy_set && (!set->approval ||
				       approval_policy_parse(set->approval, &s->policy, &pe) < 0))
			s->policy = APPROVAL_ASK;
		approvals_free(s->grants);
		s->grants = approvals_replay_end(ow->grants);
		ow->grants = NULL;
		host_set_str(&s->cwd, prepared_scan(p)->cwd);
		s->last_ok = true;
		host_to(s, HOST_IDLE, NULL);
	} else if (ow->blob_dir >= 0) {
		close(ow->blob_dir);
	}
	for (size_t i = 0; i < ow->n; i++) {
		free(ow->keys[i]);
		free(ow->turns[i]);
	}
	free(ow->keys);
	free(ow->turns);
	free(ow->system);
	context_free(ow->ctx);
	approvals_replay_free(ow->grants);
	bool big = load_memory(prepared_load(ow->p)) > TRIM_AFTER_BYTES;
	prepared_free(ow->p);
	if (big)
		trim_soon(h->d.loop);
	struct op *op = host_op(h, s, OP_DONE, s->open_cb, s->open_ctx);
	host_fill_head(op);
	if (s->open_release) {
		open_canceled(s, op);
	} else if (ow->failed) {
		/* Held by the FIFO: let it go, then forget the session. */
		op->kind = OP_RELEASE;
		op->err = ow->err;
		op->failed = true;
		host_to(s, HOST_RELEASING, NULL);
		host_write(s, op);
	} else {
		host_complete(op, NULL);
	}
	free(ow);
}

static void opened(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		   const struct cerr *err)
{
	(void)it;
	struct hsess *s = ctx;
	struct host *h = s->h;
	if (err) {
		struct op *op = host_op(h, NULL, OP_DONE, s->open_cb, s->open_ctx);
		op->r.session = NULL;
		sess_free(s);
		host_complete(op, err);
		host_check_close(h);
		return;
	}
	/* Held by the FIFO from now on: released, never just forgotten. */
	journal_adopt(s->j, r->next_seq, r->content_version);
	struct open_work *ow = xcalloc(1, sizeof *ow);
	ow->w.data = ow;
	ow->s = s;
	ow->p = r->prepared; /* the receipt's, ours to free */
	ow->blob_dir = -1;
	if (s->open_release) { /* canceled while the FIFO opened it */
		prepared_free(ow->p);
		free(ow);
		open_canceled(s, host_op(h, s, OP_DONE, s->open_cb, s->open_ctx));
		return;
	}
	s->open_work = &ow->w;
	if (uv_queue_work(h->d.loop, &ow->w, open_work, open_built) != 0) {
		ow->failed = true;
		cerr_set(&ow->err, CERR_IO, 0, "cannot queue work on the loop");
		open_built(&ow->w, 0);
	}
}

int host_open(struct host *h, const char *id, host_cb cb, void *ctx, struct cerr *err)
{
	return host_open_history(h, id, NULL, NULL, cb, ctx, err);
}

int host_open_history(struct host *h, const char *id, host_history_fn history, void *hctx,
		      host_cb cb, void *ctx, struct cerr *err)
{
	if (h->closing)
		return cerr_set(err, CERR_USAGE, 0, "the host is closing");
	if (host_find(h, id))
		return cerr_set(err, CERR_CONFLICT, 0, "session '%s' is already open", id);
	struct hsess *s = sess_new(h, id, NULL); /* OPENING */
	s->open_cb = cb;
	s->open_ctx = ctx;
	s->open_history = history;
	s->open_history_ctx = hctx;
	if (journal_post_item(s->j, fifo_open(id), opened, s, err) < 0) {
		sess_free(s);
		return -1;
	}
	return 0;
}

/* ---- release, delete ---- */

static int release_op(struct host *h, const char *id, enum op_kind kind, host_cb cb, void *ctx,
		      struct cerr *err)
{
	struct hsess *s = host_find(h, id);
	if (!h->closing && !(s && s->st == HOST_OPENING) && host_refuse(h, s, id, err) < 0)
		return -1;
	if (!s)
		return cerr_set(err, CERR_MISSING, 0, "session '%s' is not open", id);
	if (s->st == HOST_OPENING && kind == OP_RELEASE && !s->open_release) {
		/* A context transition waiting: canceled, then released. */
		s->open_release = host_op(h, s, kind, cb, ctx);
		if (s->open_work)
			uv_cancel((uv_req_t *)s->open_work);
		return 0;
	}
	if (s->st != HOST_IDLE)
		return cerr_set(err, CERR_BUSY, 0, "session '%s' is running a turn", id);
	if (host_to(s, HOST_RELEASING, err) < 0)
		return -1;
	host_write(s, host_op(h, s, kind, cb, ctx));
	return 0;
}

int host_release(struct host *h, const char *id, host_cb cb, void *ctx, struct cerr *err)
{
	return release_op(h, id, OP_RELEASE, cb, ctx, err);
}

int host_delete(struct host *h, const char *id, host_cb cb, void *ctx, struct cerr *err)
{
	return release_op(h, id, OP_DELETE, cb, ctx, err);
}

/* Called by host_write.c once a release (or delete) completed. */
void host_forget(struct hsess *s)
{
	sess_free(s);
}

/* ---- state ---- */

enum host_state host_state(const struct host *h, const char *id)
{
	const struct hsess *s = host_find(h, id);
	return s ? s->st : HOST_RELEASING;
}

enum host_save host_save_state(const struct host *h, const char *id)
{
	const struct hsess *s = host_find(h, id);
	if (!s)
		return HOST_SAVED;
	switch (journal_state(s->j)) {
	case JOURNAL_UNSAVED:
		return HOST_UNSAVED;
	case JOURNAL_RECOVERING:
		return HOST_RECOVERING;
	case JOURNAL_SAVED:
		break;
	}
	return HOST_SAVED;
}

int host_settings(struct host *h, const char *id, struct host_settings *out, struct cerr *err)
{
	const struct hsess *s = host_find(h, id);
	if (!s)
		return cerr_set(err, CERR_MISSING, 0, "session '%s' is not open", id);
	out->provider = s->set_provider;
	out->model = s->set_model;
	out->approval = s->set_approval;
	out->system_prompt = s->set_system;
	return 0;
}

/* ---- close ---- */

static void close_report(struct host *h, enum host_close_status st)
{
	if (h->close_reported)
		return;
	h->close_reported = true;
	uv_timer_stop(&h->deadline);
	if (h->close_cb)
		h->close_cb(h, h->close_ctx, st);
}

static void deadline_cb(uv_timer_t *t)
{
	close_report(t->data, HOST_TIMED_OUT);
}

/* Closing: once no turn runs and nothing is in flight, release every
 * session; once none is left, the host is closed. */
void host_check_close(struct host *h)
{
	if (!h->closing || h->close_reported || h->deferred || h->recoveries)
		return;
	bool busy = false;
	for (struct hsess *s = h->sessions; s; s = s->next) {
		if (s->st == HOST_TURN || s->st == HOST_OPENING ||
		    journal_state(s->j) == JOURNAL_RECOVERING ||
		    s->after_settle)
			busy = true;
	}
	if (busy)
		return;
	for (struct hsess *s = h->sessions, *next; s; s = next) {
		next = s->next;
		if (s->st == HOST_IDLE && host_to(s, HOST_RELEASING, NULL) == 0) {
			host_write(s, host_op(h, s, OP_RELEASE, NULL, NULL));
		}
	}
	if (!h->sessions)
		close_report(h, HOST_CLOSED);
}

int host_close(struct host *h, uint64_t deadline_ms, host_close_cb cb, void *ctx)
{
	h->closing = true;
	h->close_reported = false;
	h->close_cb = cb;
	h->close_ctx = ctx;
	for (struct hsess *s = h->sessions; s; s = s->next)
		if (s->st == HOST_TURN)
			runner_cancel(h->run, s->id);
	uint64_t now = clock_mono_ns() / 1000000;
	uv_timer_start(&h->deadline, deadline_cb, deadline_ms > now ? deadline_ms - now : 0, 0);
	/* From the loop, never from inside this call. */
	uv_idle_start(&h->idle, idle_cb);
	return 0;
}
