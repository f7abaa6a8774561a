/* prepare.c — one pass over a load's index building the runner's view of a
 * session (rules in prepare.h). */
#include "persist/prepare.h"
#include "base/sha256.h"
#include "base/strmap.h"
#include "base/xalloc.h"
#include "persist/tree.h"

#include <stdlib.h>
#include <string.h>

struct prepared {
	struct load *load;
	struct prepared_turn *turns;
	size_t n_turns;
	size_t *turn_of;     /* load turn number -> latest turn index + 1 */
	struct prepared_call *calls; /* every tool/call; unmatched ones listed apart */
	size_t n_calls;
	bool *resulted;      /* per call */
	size_t *unmatched;   /* indexes into calls */
	size_t n_unmatched;
	struct prepared_input *inputs; /* every input/queued */
	size_t n_inputs;
	bool *dequeued;      /* per input */
	size_t *queued;      /* indexes into inputs, still pending */
	size_t n_queued;
	struct prepared_settings settings;
	size_t open;         /* turn index + 1 of the open turn, 0 none */
	struct tree *tree;   /* entry k is turn k */
	size_t turn_number;  /* the highest k of a turn id t<k>, or n_turns if more */
	size_t *path;        /* the active path, root first */
	size_t n_path;
	bool version_known;
	int64_t version;
	char **strings;      /* every string the structures point to */
	size_t n_strings;
};

/* A copy of v's string owned by p, or NULL when v is not a string. */
static const char *keep(struct prepared *p, const cJSON *v)
{
	if (!cJSON_IsString(v))
		return NULL;
	if ((p->n_strings & (p->n_strings - 1)) == 0) /* 0, 1, 2, 4 ...: full */
		p->strings = xreallocarray(p->strings, p->n_strings ? p->n_strings * 2 : 1,
					   sizeof *p->strings);
	return p->strings[p->n_strings++] = xstrdup(v->valuestring);
}

static const cJSON *field(const cJSON *data, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(data, name);
}

/* Replace *slot with data's string field `name` when data names it (null
 * clears it). */
static void set_field(struct prepared *p, const char **slot, const cJSON *data, const char *name)
{
	const cJSON *v = field(data, name);
	if (v)
		*slot = keep(p, v);
}

/* Grow an array of n elements of size sz by one when n is 0 or a power of
 * two (its capacity). */
static void *grow(void *a, size_t n, size_t sz)
{
	return (n & (n - 1)) == 0 ? xreallocarray(a, n ? n * 2 : 1, sz) : a;
}

static void on_turn_start(struct prepared *p, struct strmap *ids, size_t i, enum vocab_type t,
			  const cJSON *data)
{
	(void)ids, (void)t;
	const struct load_event *e = load_event(p->load, i);
	const cJSON *parent = field(data, "parent_turn");
	enum tree_parent how = !parent ? TREE_PARENT_ABSENT
			       : cJSON_IsString(parent) ? TREE_PARENT_NAMED : TREE_PARENT_NULL;
	size_t k = tree_start(p->tree, load_turn(p->load, i), e->seq, how,
			      how == TREE_PARENT_NAMED ? parent->valuestring : NULL);
	size_t up = tree_parent(p->tree, k);
	p->turns = grow(p->turns, p->n_turns, sizeof *p->turns);
	p->turns[p->n_turns] = (struct prepared_turn){
		.id = load_turn(p->load, i), .seq = e->seq,
		.parent = up == TREE_NONE ? NULL : p->turns[up].id,
		.parent_index = up == TREE_NONE ? PREPARED_NONE : up,
		.start = i, .end = PREPARED_OPEN};
	p->turn_of[e->turn] = ++p->n_turns;
	size_t number = 0;
	const char *id = p->turns[k].id;
	if (id[0] == 't' && id[1] >= '1' && id[1] <= '9' && strspn(id + 1, "0123456789") == strlen(id + 1) &&
	    strlen(id + 1) < 19)
		number = (size_t)strtoull(id + 1, NULL, 10);
	if (number < p->n_turns)
		number = p->n_turns;
	if (number > p->turn_number)
		p->turn_number = number;
}

/* branch/rewind: its to_turn is the active leaf (until a later turn/start). */
static void on_rewind(struct prepared *p, struct strmap *ids, size_t i, enum vocab_type t,
		      const cJSON *data)
{
	(void)ids, (void)i, (void)t;
	const cJSON *to = field(data, "to_turn");
	enum tree_to how = !to ? TREE_TO_ABSENT : cJSON_IsString(to) ? TREE_TO_NAMED : TREE_TO_NULL;
	(void)tree_rewind(p->tree, how, how == TREE_TO_NAMED ? to->valuestring : NULL);
}

static void on_turn_end(struct prepared *p, struct strmap *ids, size_t i, enum vocab_type t,
			const cJSON *data)
{
	(void)ids, (void)t;
	size_t k = p->turn_of[load_event(p->load, i)->turn];
	if (!k || p->turns[k - 1].end != PREPARED_OPEN)
		return; /* an end without a start: nothing is open */
	p->turns[k - 1].end = i;
	p->turns[k - 1].outcome = keep(p, field(data, "outcome"));
}

static void on_tool(struct prepared *p, struct strmap *ids, size_t i, enum vocab_type t,
		    const cJSON *data)
{
	const cJSON *id = field(data, "call_id");
	size_t k;
	if (t == VT_TOOL_CALL) {
		p->calls = grow(p->calls, p->n_calls, sizeof *p->calls);
		p->resulted = grow(p->resulted, p->n_calls, sizeof *p->resulted);
		p->calls[p->n_calls] = (struct prepared_call){
			.call_id = keep(p, id), .name = keep(p, field(data, "name")),
			.turn = load_turn(p->load, i), .event = i, .seq = load_event(p->load, i)->seq};
		p->resulted[p->n_calls] = false;
		strmap_put(ids, p->calls[p->n_calls].call_id, p->n_calls);
		p->n_calls++;
	} else if (strmap_get(ids, id->valuestring, &k)) {
		if (t == VT_TOOL_STARTED)
			p->calls[k].started = true;
		else
			p->resulted[k] = true;
	}
}

static void on_input(struct prepared *p, struct strmap *ids, size_t i, enum vocab_type t,
		     const cJSON *data)
{
	(void)ids;
	const cJSON *id = field(data, "input_id");
	if (t == VT_INPUT_QUEUED) {
		p->inputs = grow(p->inputs, p->n_inputs, sizeof *p->inputs);
		p->dequeued = grow(p->dequeued, p->n_inputs, sizeof *p->dequeued);
		p->inputs[p->n_inputs] = (struct prepared_input){
			.input_id = keep(p, id), .text = keep(p, field(data, "text")), .event = i,
			.seq = load_event(p->load, i)->seq};
		p->dequeued[p->n_inputs++] = false;
		return;
	}
	/* The pending input it names, or without a name the oldest. */
	for (size_t k = 0; k < p->n_inputs; k++) {
		if (p->dequeued[k])
			continue;
		if (!id || (p->inputs[k].input_id &&
			    strcmp(p->inputs[k].input_id, id->valuestring) == 0)) {
			p->dequeued[k] = true;
			return;
		}
	}
}

static void on_settings(struct prepared *p, struct strmap *ids, size_t i, enum vocab_type t,
			const cJSON *data)
{
	(void)ids, (void)i, (void)t;
	struct prepared_settings *s = &p->settings;
	set_field(p, &s->provider, data, "provider");
	set_field(p, &s->model, data, "model");
	set_field(p, &s->approval, data, "approval");
	const cJSON *prompt = field(data, "system_prompt");
	if (prompt) {
		struct cerr err;
		s->system_prompt = keep(p, prompt);
		/* the blob was checked at load: -1 cannot happen */
		s->system_prompt_in_blob =
			s->system_prompt && blob_ref_from_data(data, &s->system_prompt_blob, &err) > 0;
	}
}

static void on_meta(struct prepared *p, struct strmap *ids, size_t i, enum vocab_type t,
		    const cJSON *data)
{
	(void)ids, (void)i, (void)t;
	set_field(p, &p->settings.title, data, "title");
	if (cJSON_IsBool(field(data, "pinned")))
		p->settings.pinned = cJSON_IsTrue(field(data, "pinned"));
}

typedef void handler(struct prepared *p, struct strmap *ids, size_t i, enum vocab_type t,
		     const cJSON *data);

/* What prepare does with an event of type t (NULL: nothing, and its line
 * is not parsed). */
static handler *handler_of(enum vocab_type t)
{
	switch (t) {
	case VT_SESSION_HEADER: /* the first settings */
	case VT_SESSION_SETTINGS: return on_settings;
	case VT_SESSION_META: return on_meta;
	case VT_TURN_START: return on_turn_start;
	case VT_TURN_END: return on_turn_end;
	case VT_TOOL_CALL:
	case VT_TOOL_STARTED:
	case VT_TOOL_RESULT: return on_tool;
	case VT_INPUT_QUEUED:
	case VT_INPUT_DEQUEUED: return on_input;
	case VT_USER_MESSAGE:
	case VT_REQUEST_PREPARED:
	case VT_ASSISTANT_TEXT:
	case VT_ASSISTANT_REASONING:
	case VT_INTERACTION_REQUEST:
	case VT_INTERACTION_ANSWER:
	case VT_BRANCH_REWIND: return on_rewind;
	case VT_STEP_END:
	case VT_UNKNOWN:
		return NULL;
	}
	return NULL;
}

struct prepared *prepare_load(struct load *l)
{
	struct prepared *p = xcalloc(1, sizeof *p);
	p->load = l;
	p->turn_of = xcalloc(load_n_turns(l) + 1, sizeof *p->turn_of);
	p->tree = tree_new();
	struct strmap ids;
	strmap_init(&ids);
	for (size_t i = 0; i < load_count(l); i++) {
		enum vocab_type t = (enum vocab_type)load_event(l, i)->type;
		handler *h = handler_of(t);
		if (!h)
			continue;
		cJSON *root = load_json(l, i);
		if (!root)
			abort(); /* validated at load: only memory can fail */
		h(p, &ids, i, t, field(root, "data"));
		cJSON_Delete(root);
	}
	strmap_release(&ids);
	for (size_t k = 0; k < p->n_calls; k++) {
		if (p->resulted[k])
			continue;
		p->unmatched = grow(p->unmatched, p->n_unmatched, sizeof *p->unmatched);
		p->unmatched[p->n_unmatched++] = k;
	}
	for (size_t k = 0; k < p->n_inputs; k++) {
		if (p->dequeued[k])
			continue;
		p->queued = grow(p->queued, p->n_queued, sizeof *p->queued);
		p->queued[p->n_queued++] = k;
	}
	for (size_t k = p->n_turns; k-- > 0 && !p->open;)
		if (p->turns[k].end == PREPARED_OPEN && p->turn_of[load_event(l, p->turns[k].start)->turn] == k + 1)
			p->open = k + 1;
	p->n_path = tree_path(p->tree, tree_leaf(p->tree), &p->path);
	return p;
}

int prepare_fd(int fd, const struct scan_opts *o, struct prepared **out, struct cerr *err)
{
	struct load *l;
	if (load_fd(fd, o, &l, err) < 0)
		return -1;
	*out = prepare_load(l);
	return 0;
}

void prepared_free(struct prepared *p)
{
	if (!p)
		return;
	load_free(p->load);
	free(p->turns);
	free(p->turn_of);
	tree_free(p->tree);
	free(p->path);
	free(p->calls);
	free(p->resulted);
	free(p->unmatched);
	free(p->inputs);
	free(p->dequeued);
	free(p->queued);
	for (size_t k = 0; k < p->n_strings; k++)
		free(p->strings[k]);
	free(p->strings);
	free(p);
}

const struct load *prepared_load(const struct prepared *p)
{
	return p->load;
}

const struct scan *prepared_scan(const struct prepared *p)
{
	return load_scan(p->load);
}

size_t prepared_n_turns(const struct prepared *p)
{
	return p->n_turns;
}

const struct prepared_turn *prepared_turn(const struct prepared *p, size_t k)
{
	return &p->turns[k];
}

const struct prepared_turn *prepared_find_turn(const struct prepared *p, const char *id)
{
	for (size_t k = p->n_turns; k-- > 0;)
		if (strcmp(p->turns[k].id, id) == 0)
			return &p->turns[k];
	return NULL;
}

size_t prepared_path_len(const struct prepared *p)
{
	return p->n_path;
}

size_t prepared_path(const struct prepared *p, size_t k)
{
	return p->path[k];
}

const struct prepared_turn *prepared_active_leaf(const struct prepared *p)
{
	return p->n_path ? &p->turns[p->path[p->n_path - 1]] : NULL;
}

size_t prepared_turn_number(const struct prepared *p)
{
	return p->turn_number;
}

const struct prepared_turn *prepared_open_turn(const struct prepared *p)
{
	return p->open ? &p->turns[p->open - 1] : NULL;
}

size_t prepared_n_unmatched(const struct prepared *p)
{
	return p->n_unmatched;
}

const struct prepared_call *prepared_unmatched(const struct prepared *p, size_t k)
{
	return &p->calls[p->unmatched[k]];
}

size_t prepared_n_queued(const struct prepared *p)
{
	return p->n_queued;
}

const struct prepared_input *prepared_queued(const struct prepared *p, size_t k)
{
	return &p->inputs[p->queued[k]];
}

const struct prepared_settings *prepared_settings(const struct prepared *p)
{
	return &p->settings;
}

static bool same_prompt(const struct prepared_settings *s, const char *text)
{
	if (!s->system_prompt)
		return false;
	if (!s->system_prompt_in_blob)
		return strcmp(s->system_prompt, text) == 0;
	uint8_t h[SHA256_LEN];
	char hex[SHA256_HEX_LEN + 1];
	size_t n = strlen(text);
	sha256(text, n, h);
	sha256_hex(h, hex);
	return s->system_prompt_blob.size == n && strcmp(hex, s->system_prompt_blob.sha256) == 0;
}

static bool same(const char *stored, const char *v)
{
	return stored && strcmp(stored, v) == 0;
}

cJSON *prepared_settings_change(const struct prepared_settings *s, const char *provider,
				const char *model, const char *system_prompt)
{
	cJSON *d = cJSON_CreateObject();
	if (provider && !(s && same(s->provider, provider)))
		cJSON_AddStringToObject(d, "provider", provider);
	if (model && !(s && same(s->model, model)))
		cJSON_AddStringToObject(d, "model", model);
	if (system_prompt && !(s && same_prompt(s, system_prompt)))
		cJSON_AddStringToObject(d, "system_prompt", system_prompt);
	if (!d->child) {
		cJSON_Delete(d);
		return NULL;
	}
	return d;
}

uint64_t prepared_next_seq(const struct prepared *p)
{
	return load_scan(p->load)->rev.next_seq;
}

bool prepared_content_version(const struct prepared *p, int64_t *version)
{
	if (p->version_known)
		*version = p->version;
	return p->version_known;
}

void prepared_set_content_version(struct prepared *p, int64_t version)
{
	p->version = version;
	p->version_known = true;
}

int prepare_async(uv_loop_t *loop, const char *root, const char *id, const struct scan_opts *o,
		  prepare_async_fn cb, void *ctx, struct load_req **req, struct cerr *err)
{
	return load_async_queue(loop, root, id, o, NULL, cb, ctx, req, err);
}
