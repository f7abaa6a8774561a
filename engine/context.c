/* context.c — session events to the messages a model sees (context.h). */
#include "engine/context.h"
#include "engine/tool_output.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/strmap.h"
#include "base/xalloc.h"
#include "engine/textfix.h"
#include "persist/blob.h"
#include "persist/tree.h"

#include <stdlib.h>
#include <string.h>

struct turn {
	char *id;
	size_t parent; /* index of its parent turn; TREE_NONE: a root */
	struct ctx_message *msgs;
	size_t n, cap;
	bool open_asst;      /* the last message still takes assistant parts */
	bool open_text;      /* its last part is a text that takes more pieces */
	bool open_reasoning; /* its last part is a reasoning block not yet signed */
};

struct context {
	struct turn *turns;
	size_t n, cap;
	struct strmap ids; /* turn id -> index of the latest turn with it */
	struct tree *tree; /* the turn/starts: parents and the active leaf */
	size_t *of_entry;  /* tree entry -> index of its turn */
	struct ctx_message *view; /* the last context_messages result */
	size_t nview, capview;
	int blob_dir; /* -1: none */
	size_t result_max;
};

struct context *context_new(void)
{
	struct context *c = xcalloc(1, sizeof(struct context));
	c->blob_dir = -1;
	c->result_max = CONTEXT_RESULT_MAX;
	strmap_init(&c->ids);
	c->tree = tree_new();
	return c;
}

void context_set_result_max(struct context *c, size_t max)
{
	c->result_max = max ? max : CONTEXT_RESULT_MAX;
}

void context_set_blob_dir(struct context *c, int dirfd)
{
	c->blob_dir = dirfd;
}

/* The whole text of data's blob into *out (caller frees): 1; 0 when data
 * names none or no blob directory is set; -1 with err. */
static int blob_text(struct context *c, const cJSON *data, char **out, struct cerr *err)
{
	struct blob_ref ref;
	int r = c->blob_dir < 0 ? 0 : blob_ref_from_data(data, &ref, err);
	if (r <= 0)
		return r;
	struct buf b = BUF_INIT;
	if (blob_read(c->blob_dir, &ref, &b, err) < 0) {
		buf_release(&b);
		return -1;
	}
	/* A tool's output may be any bytes: the model gets valid text. */
	*out = textfix_string(b.p ? b.p : "", b.len);
	buf_release(&b);
	return 1;
}

static void part_release(struct ctx_part *p)
{
	free(p->text);
	free(p->signature);
	free(p->call_id);
	free(p->wire_id);
	free(p->ref);
	free(p->name);
	free(p->args);
}

static void msgs_free(struct ctx_message *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < m[i].nparts; k++)
			part_release(&m[i].parts[k]);
		free(m[i].parts);
	}
	free(m);
}

void context_free(struct context *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->turns[i].id);
		msgs_free(c->turns[i].msgs, c->turns[i].n);
	}
	free(c->turns);
	strmap_release(&c->ids);
	tree_free(c->tree);
	free(c->of_entry);
	msgs_free(c->view, c->nview);
	free(c);
}

static struct turn *find_turn(struct context *c, const char *id)
{
	size_t i;
	return strmap_get(&c->ids, id, &i) ? &c->turns[i] : NULL;
}

static struct turn *new_turn(struct context *c, const char *id, size_t parent)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 8;
		c->turns = xreallocarray(c->turns, c->cap, sizeof *c->turns);
	}
	struct turn *t = &c->turns[c->n++];
	*t = (struct turn){.id = xstrdup(id), .parent = parent};
	strmap_put(&c->ids, t->id, c->n - 1);
	return t;
}

/* The turn an event belongs to: its envelope's, else the turn started
 * last. One is made for a turn no turn/start began (a damaged log): it
 * continues the previous turn but is no entry of the tree, so it is on
 * no branch but its own (or, with no turn/start at all, the only one). */
static struct turn *turn_of(struct context *c, const char *id)
{
	struct turn *t = id ? find_turn(c, id) : (c->n ? &c->turns[c->n - 1] : NULL);
	if (!t)
		t = new_turn(c, id ? id : "", c->n ? c->n - 1 : TREE_NONE);
	return t;
}

/* A turn/start: a tree entry (tree.h) and its turn. */
static void start_turn(struct context *c, const char *id, const cJSON *parent)
{
	enum tree_parent how = !parent ? TREE_PARENT_ABSENT
			       : cJSON_IsString(parent) ? TREE_PARENT_NAMED : TREE_PARENT_NULL;
	size_t k = tree_start(c->tree, id, 0, how, how == TREE_PARENT_NAMED ? parent->valuestring : NULL);
	size_t up = tree_parent(c->tree, k);
	if ((k & (k - 1)) == 0) /* 0, 1, 2, 4 ...: full */
		c->of_entry = xreallocarray(c->of_entry, k ? 2 * k : 1, sizeof *c->of_entry);
	new_turn(c, id, up == TREE_NONE ? TREE_NONE : c->of_entry[up]);
	c->of_entry[k] = c->n - 1;
}

static struct ctx_message *push_msg(struct turn *t, enum ctx_role role)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->msgs = xreallocarray(t->msgs, t->cap, sizeof *t->msgs);
	}
	t->msgs[t->n] = (struct ctx_message){.role = role};
	t->open_asst = role == CTX_ASSISTANT;
	t->open_text = t->open_reasoning = false;
	return &t->msgs[t->n++];
}

static struct ctx_part *push_part(struct ctx_message *m, enum ctx_part_kind kind)
{
	m->parts = xreallocarray(m->parts, m->nparts + 1, sizeof *m->parts);
	m->parts[m->nparts] = (struct ctx_part){.kind = kind};
	return &m->parts[m->nparts++];
}

static struct ctx_message *asst(struct turn *t)
{
	return t->open_asst ? &t->msgs[t->n - 1] : push_msg(t, CTX_ASSISTANT);
}

/* Append s to p's text, in amortized O(s): the length is kept, the
 * allocation grows by half again. */
static void append_text(struct ctx_part *p, const char *s)
{
	if (!p->text_cap) {
		p->text_len = p->text ? strlen(p->text) : 0;
		p->text_cap = p->text_len + 1;
	}
	size_t b = strlen(s);
	if (p->text_len + b + 1 > p->text_cap) {
		size_t cap = p->text_cap + p->text_cap / 2;
		p->text_cap = cap > p->text_len + b + 1 ? cap : p->text_len + b + 1;
		p->text = xrealloc(p->text, p->text_cap);
	}
	memcpy(p->text + p->text_len, s, b + 1);
	p->text_len += b;
}

static const char *str_field(const cJSON *data, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool bool_field(const cJSON *data, const char *name)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(data, name));
}

/* What the model reads of a tool result: the output (a string as it is,
 * any other value as JSON), led by the status when it is not ok. */
/* Does o already say its status in words (a result cairn wrote itself)? */
static bool says_status(const char *o)
{
	static const char *const leads[] = {"outcome unknown: ", "not executed: ", "canceled: ",
					    "denied: ", "error: "};
	for (size_t i = 0; i < sizeof leads / sizeof *leads; i++)
		if (strncmp(o, leads[i], strlen(leads[i])) == 0)
			return true;
	return false;
}

/* What the model reads of a result: its status when not ok, then its
 * output, capped to max bytes (head and tail; the log keeps it whole). */
static char *result_text(const cJSON *data, const char *whole, bool *is_error, size_t max)
{
	const char *status = str_field(data, "status");
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(data, "output");
	char *printed = NULL;
	const char *o = "";
	if (whole)
		o = whole;
	else if (cJSON_IsString(out))
		o = out->valuestring;
	else if (out && !cJSON_IsNull(out))
		o = printed = json_print(out);
	*is_error = vocab_status_of(status) != VS_OK;
	struct buf b = BUF_INIT;
	if (*is_error && !says_status(o))
		buf_printf(&b, "[%s]%s", status ? status : "error", *o ? " " : "");
	buf_adds(&b, o);
	if (b.len == 0)
		buf_adds(&b, "(no output)");
	free(printed);
	char *capped = tool_output_cap(b.p, b.len, max, NULL);
	buf_release(&b);
	return capped;
}

static int add_tool_call(struct context *c, struct turn *t, const cJSON *data, struct cerr *err)
{
	const char *id = str_field(data, "call_id"), *name = str_field(data, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(data, "args");
	if (!id || !name || !args)
		return cerr_set(err, CERR_CORRUPT, 0, "'tool/call' lacks call_id, name or args");
	/* Arguments that were not a JSON object the log could keep are their
	 * text as sent (args_raw, its blob if long): the call never ran, and
	 * goes back as an empty object, which every provider accepts; the
	 * model reads what it sent in the result's error. */
	bool raw = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(data, "args_raw"));
	/* Arguments over the line limit are in a blob, their JSON text whole;
	 * args keeps only their head and tail. */
	char *whole = NULL;
	if (!raw && blob_text(c, data, &whole, err) < 0)
		return -1;
	bool in_blob = whole != NULL;
	if (!raw && !in_blob && cJSON_GetObjectItemCaseSensitive(data, "blob")) {
		free(whole);
		return cerr_set(err, CERR_MISSING, 0,
				"the arguments of tool call '%s' are in a blob that cannot be read", id);
	}
	struct ctx_part *p = push_part(asst(t), CTX_TOOL_CALL);
	p->call_id = xstrdup(id);
	const char *wire = str_field(data, "provider_id");
	p->wire_id = xstrdup_opt(wire);
	p->name = xstrdup(name);
	/* A call cut off keeps its partial arguments as a string in the log;
	 * the model gets an empty object back, and nothing ever runs it. */
	p->incomplete = bool_field(data, "incomplete") || (cJSON_IsString(args) && !in_blob);
	p->args = p->incomplete || raw ? xstrdup("{}") : in_blob ? xstrdup(whole) : json_print(args);
	free(whole);
	t->open_text = t->open_reasoning = false;
	return 0;
}

static void add_reasoning(struct turn *t, const cJSON *data, const char *text)
{
	const char *sig = str_field(data, "signature");
	bool redacted = bool_field(data, "redacted");
	struct ctx_message *m = asst(t);
	struct ctx_part *p;
	if (t->open_reasoning && !redacted) {
		p = &m->parts[m->nparts - 1];
		append_text(p, text);
	} else {
		p = push_part(m, CTX_REASONING);
		p->text = xstrdup(text);
		p->redacted = redacted;
	}
	if (sig)
		p->signature = xstrdup(sig);
	/* A signature or redacted data closes the block: the next piece
	 * starts another one. */
	t->open_reasoning = !sig && !redacted;
	t->open_text = false;
}

int context_add(struct context *c, enum vocab_type type, const char *turn, const cJSON *data,
		struct cerr *err)
{
	struct turn *t;
	const char *text = str_field(data, "text");
	switch (type) {
	case VT_TURN_START: {
		if (!turn)
			return cerr_set(err, CERR_CORRUPT, 0, "'turn/start' without a turn");
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(data, "parent_turn");
		if (p && !cJSON_IsString(p) && !cJSON_IsNull(p))
			return cerr_set(err, CERR_CORRUPT, 0, "'turn/start' has a parent_turn of the wrong kind");
		start_turn(c, turn, p);
		return 0;
	}
	case VT_BRANCH_REWIND: {
		const cJSON *to = cJSON_GetObjectItemCaseSensitive(data, "to_turn");
		if (to && !cJSON_IsString(to) && !cJSON_IsNull(to))
			return cerr_set(err, CERR_CORRUPT, 0, "'branch/rewind' has a to_turn of the wrong kind");
		enum tree_to how = !to ? TREE_TO_ABSENT : cJSON_IsString(to) ? TREE_TO_NAMED : TREE_TO_NULL;
		(void)tree_rewind(c->tree, how, how == TREE_TO_NAMED ? to->valuestring : NULL);
		return 0;
	}
	case VT_USER_MESSAGE: {
		if (!text)
			return cerr_set(err, CERR_CORRUPT, 0, "'user/message' lacks its text");
		char *whole = NULL;
		if (blob_text(c, data, &whole, err) < 0)
			return -1;
		t = turn_of(c, turn);
		push_part(push_msg(t, CTX_USER), CTX_TEXT)->text = whole ? whole : xstrdup(text);
		t->open_asst = false;
		return 0;
	}
	case VT_ASSISTANT_TEXT: {
		if (!text)
			return cerr_set(err, CERR_CORRUPT, 0, "'assistant/text' lacks its text");
		t = turn_of(c, turn);
		struct ctx_message *m = asst(t);
		if (t->open_text)
			append_text(&m->parts[m->nparts - 1], text);
		else
			push_part(m, CTX_TEXT)->text = xstrdup(text);
		t->open_text = true;
		t->open_reasoning = false;
		return 0;
	}
	case VT_ASSISTANT_REASONING:
		if (!text)
			return cerr_set(err, CERR_CORRUPT, 0, "'assistant/reasoning' lacks its text");
		add_reasoning(turn_of(c, turn), data, text);
		return 0;
	case VT_TOOL_CALL:
		return add_tool_call(c, turn_of(c, turn), data, err);
	case VT_TOOL_RESULT: {
		const char *id = str_field(data, "call_id");
		if (!id)
			return cerr_set(err, CERR_CORRUPT, 0, "'tool/result' lacks its call_id");
		char *whole = NULL;
		if (blob_text(c, data, &whole, err) < 0)
			return -1;
		t = turn_of(c, turn);
		struct ctx_part *p = push_part(push_msg(t, CTX_TOOL), CTX_TOOL_RESULT);
		t->open_asst = false;
		p->call_id = xstrdup(id);
		p->text = result_text(data, whole, &p->is_error, c->result_max);
		free(whole);
		return 0;
	}
	case VT_STEP_END:
	case VT_TURN_END:
		if (turn && (t = find_turn(c, turn)))
			t->open_asst = t->open_text = t->open_reasoning = false;
		return 0;
	case VT_SESSION_HEADER:
	case VT_SESSION_META:
	case VT_SESSION_SETTINGS:
	case VT_REQUEST_PREPARED:
	case VT_INTERACTION_REQUEST:
	case VT_INTERACTION_ANSWER:
	case VT_TOOL_STARTED:
	case VT_INPUT_QUEUED:
	case VT_INPUT_DEQUEUED:
	case VT_UNKNOWN:
		return 0;
	}
	return 0;
}

/* ---- the view along one branch ---- */


static struct ctx_message *view_push(struct context *c, enum ctx_role role)
{
	if (c->nview == c->capview) {
		c->capview = c->capview ? 2 * c->capview : 16;
		c->view = xreallocarray(c->view, c->capview, sizeof *c->view);
	}
	c->view[c->nview] = (struct ctx_message){.role = role};
	return &c->view[c->nview++];
}

static void copy_part(struct ctx_message *m, const struct ctx_part *src)
{
	struct ctx_part *p = push_part(m, src->kind);
	p->text = xstrdup_opt(src->text);
	p->signature = xstrdup_opt(src->signature);
	p->redacted = src->redacted;
	/* what the provider knows the call by; the log's id kept to match */
	p->call_id = xstrdup_opt(src->wire_id ? src->wire_id : src->call_id);
	p->ref = xstrdup_opt(src->call_id);
	p->name = xstrdup_opt(src->name);
	p->args = xstrdup_opt(src->args);
	p->incomplete = src->incomplete;
	p->is_error = src->is_error;
}

/* Calls of the last assistant message still waiting for their result. */
struct pending {
	size_t at;                   /* index of that message in the view */
	bool *answered;
};

static void close_pending(struct context *c, struct pending *pd)
{
	if (!pd->answered)
		return;
	size_t at = pd->at, np = c->view[at].nparts;
	for (size_t k = 0; k < np; k++) {
		const struct ctx_part *call = &c->view[at].parts[k];
		if (call->kind != CTX_TOOL_CALL || pd->answered[k])
			continue;
		struct ctx_part *r = push_part(view_push(c, CTX_TOOL), CTX_TOOL_RESULT);
		call = &c->view[at].parts[k]; /* view_push may have moved it */
		r->call_id = xstrdup(call->call_id);
		r->text = xstrdup(call->incomplete
				  ? "[not_executed] the call was cut off before its arguments were complete"
				  : "[not_executed] no result was recorded for this call");
		r->is_error = true;
	}
	free(pd->answered);
	pd->answered = NULL;
}

static void view_add(struct context *c, const struct ctx_message *m, struct pending *pd)
{
	if (m->role == CTX_TOOL) {
		const struct ctx_part *r = &m->parts[0];
		if (!pd->answered)
			return; /* a result without its call: the provider would refuse it */
		for (size_t k = 0; k < c->view[pd->at].nparts; k++) {
			const struct ctx_part *call = &c->view[pd->at].parts[k];
			if (call->kind == CTX_TOOL_CALL && !pd->answered[k] &&
			    strcmp(call->ref, r->call_id) == 0) {
				pd->answered[k] = true;
				char *wire = xstrdup(call->call_id);
				struct ctx_message *v = view_push(c, CTX_TOOL);
				copy_part(v, r);
				free(v->parts[0].call_id);
				v->parts[0].call_id = wire; /* answered under the call's wire id */
				return;
			}
		}
		return;
	}
	close_pending(c, pd);
	struct ctx_message *v = NULL;
	bool calls = false;
	for (size_t k = 0; k < m->nparts; k++) {
		const struct ctx_part *p = &m->parts[k];
		if ((p->kind == CTX_TEXT || p->kind == CTX_REASONING) && !*p->text && !p->signature)
			continue; /* nothing to say: an empty part is never sent */
		if (!v)
			v = view_push(c, m->role);
		copy_part(v, p);
		calls |= p->kind == CTX_TOOL_CALL;
	}
	if (v && calls) {
		pd->at = c->nview - 1;
		pd->answered = xcalloc(v->nparts, sizeof(bool));
	}
}

const struct ctx_message *context_messages(struct context *c, const char *leaf, size_t *n)
{
	msgs_free(c->view, c->nview);
	c->view = NULL;
	c->nview = c->capview = 0;
	*n = 0;
	struct turn *t = NULL;
	if (leaf)
		t = find_turn(c, leaf);
	else if (tree_count(c->tree)) /* the active leaf; none before the first turn */
		t = tree_leaf(c->tree) == TREE_NONE ? NULL : &c->turns[c->of_entry[tree_leaf(c->tree)]];
	else if (c->n) /* no turn/start at all: the turn made last */
		t = &c->turns[c->n - 1];
	if (!t)
		return NULL;
	/* The chain leaf → root, walked back: a parent comes before its
	 * child, so it ends. */
	struct turn **chain = xreallocarray(NULL, c->n, sizeof *chain);
	size_t depth = 0;
	while (t) {
		chain[depth++] = t;
		t = t->parent == TREE_NONE ? NULL : &c->turns[t->parent];
	}
	struct pending pd = {0};
	for (size_t d = depth; d-- > 0;)
		for (size_t i = 0; i < chain[d]->n; i++)
			view_add(c, &chain[d]->msgs[i], &pd);
	close_pending(c, &pd);
	free(chain);
	*n = c->nview;
	return c->view;
}

const char *context_last_user_text(struct context *c, const char *leaf)
{
	size_t n;
	const struct ctx_message *m = context_messages(c, leaf, &n);
	for (size_t i = n; i-- > 0;)
		if (m[i].role == CTX_USER && m[i].nparts)
			return m[i].parts[0].text;
	return NULL;
}
