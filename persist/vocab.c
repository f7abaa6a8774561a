/* vocab.c — the event vocabulary of log format 1. */
#include "persist/vocab.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "persist/blob.h"

#include <stdlib.h>

#include <string.h>

#define VOCAB_NAME(e, name) [e] = name,
/* NULL-terminated, as VK_ENUM fields take them. */
static const char *const turn_outcome[] = {VOCAB_OUTCOMES(VOCAB_NAME)[VO_UNKNOWN] = NULL};
static const char *const tool_status[] = {VOCAB_STATUSES(VOCAB_NAME)[VS_UNKNOWN] = NULL};
static const char *const error_class[] = {VOCAB_ERROR_CLASSES(VOCAB_NAME)[VE_OTHER] = NULL};
#undef VOCAB_NAME

/* The index of name in the NULL-terminated list names, or n (not found). */
static size_t name_index(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return n;
}

const char *vocab_outcome_name(enum vocab_outcome o)
{
	return (size_t)o < VO_UNKNOWN ? turn_outcome[o] : NULL;
}

const char *vocab_status_name(enum vocab_status st)
{
	return (size_t)st < VS_UNKNOWN ? tool_status[st] : NULL;
}

const char *vocab_error_name(enum vocab_error e)
{
	return (size_t)e < VE_OTHER ? error_class[e] : NULL;
}

enum vocab_outcome vocab_outcome_of(const char *name)
{
	return (enum vocab_outcome)name_index(turn_outcome, VO_UNKNOWN, name);
}

enum vocab_status vocab_status_of(const char *name)
{
	return (enum vocab_status)name_index(tool_status, VS_UNKNOWN, name);
}

enum vocab_error vocab_error_of(const char *name)
{
	return (enum vocab_error)name_index(error_class, VE_OTHER, name);
}

#define END {NULL, VK_ANY, false, NULL}
/* "blob": the whole content when it was too long to keep inline (blob.h). */
#define BLOB_FIELD {"blob", VK_BLOB, false, NULL}

static const struct vocab_field f_header[] = {
	{"format", VK_INT, true, NULL},
	{"id", VK_STR, true, NULL},
	{"created_at", VK_INT, true, NULL},
	{"cwd", VK_STR_OR_NULL, true, NULL},
	{"provider", VK_STR_OR_NULL, false, NULL},
	{"model", VK_STR_OR_NULL, false, NULL},
	{"forked_from", VK_OBJ, false, NULL},
	{"salvaged_from", VK_OBJ, false, NULL},
	{"imported_from", VK_OBJ, false, NULL},
	END};
static const struct vocab_field f_meta[] = {
	{"title", VK_STR_OR_NULL, false, NULL},
	{"pinned", VK_BOOL, false, NULL},
	END};
static const struct vocab_field f_settings[] = {
	{"provider", VK_STR_OR_NULL, false, NULL},
	{"model", VK_STR_OR_NULL, false, NULL},
	{"approval", VK_STR_OR_NULL, false, NULL},
	{"system_prompt", VK_STR_OR_NULL, false, NULL},
	BLOB_FIELD, /* the whole system_prompt, when it went to a blob */
	END};
static const struct vocab_field f_turn_start[] = {
	{"parent_turn", VK_STR_OR_NULL, false, NULL},
	{"client_submit_id", VK_STR, false, NULL},
	END};
static const struct vocab_field f_text[] = {
	{"text", VK_STR, true, NULL},
	END};
static const struct vocab_field f_user_message[] = {
	{"text", VK_STR, true, NULL},
	BLOB_FIELD,
	END};
static const struct vocab_field f_reasoning[] = {
	{"text", VK_STR, true, NULL},
	{"signature", VK_STR, false, NULL},
	{"redacted", VK_BOOL, false, NULL},
	END};
static const struct vocab_field f_none[] = {END};
static const struct vocab_field f_tool_call[] = {
	{"call_id", VK_STR, true, NULL},
	{"provider_id", VK_STR, false, NULL},
	{"name", VK_STR, true, NULL},
	{"args", VK_ANY, true, NULL},
	BLOB_FIELD,
	{"incomplete", VK_BOOL, false, NULL},
	{"args_raw", VK_STR, false, NULL},
	END};
static const struct vocab_field f_call_id[] = {
	{"call_id", VK_STR, true, NULL},
	END};
static const struct vocab_field f_tool_result[] = {
	{"call_id", VK_STR, true, NULL},
	{"status", VK_ENUM, true, tool_status},
	{"output", VK_ANY, false, NULL},
	{"source_seqs", VK_SEQ_ARR, false, NULL},
	{"synthetic", VK_BOOL, false, NULL},
	{"exit_code", VK_INT, false, NULL},
	{"truncated", VK_BOOL, false, NULL},
	BLOB_FIELD,
	END};
static const struct vocab_field f_turn_end[] = {
	{"outcome", VK_ENUM, true, turn_outcome},
	{"error", VK_ERROR, false, NULL},
	{"usage", VK_OBJ, false, NULL},
	{"synthetic", VK_BOOL, false, NULL},
	END};
/* Metadata of the request about to be sent, never the context itself:
 * the log grows with the conversation, not with its square. */
static const struct vocab_field f_request[] = {
	{"provider", VK_STR, false, NULL},
	{"model", VK_STR, false, NULL},
	{"step", VK_INT, false, NULL},
	{"attempt", VK_INT, false, NULL},
	{"messages", VK_INT, false, NULL},
	{"context_fp", VK_STR, false, NULL},
	{"tools_fp", VK_STR, false, NULL},
	END};
static const struct vocab_field f_step_end[] = {
	{"step", VK_INT, false, NULL},
	{"finish_reason", VK_STR, false, NULL},
	{"usage", VK_OBJ, false, NULL},
	END};
static const struct vocab_field f_rewind[] = {
	{"to_turn", VK_STR_OR_NULL, false, NULL},
	{"from_leaf", VK_STR_OR_NULL, false, NULL},       /* the active leaf it left */
	{"source_next_seq", VK_INT, false, NULL},         /* the log's next seq it saw */
	END};
static const struct vocab_field f_queued[] = {
	{"input_id", VK_STR, false, NULL},
	{"text", VK_STR, false, NULL},
	BLOB_FIELD,
	END};
static const struct vocab_field f_dequeued[] = {
	{"input_id", VK_STR, false, NULL},
	END};

/* Per type: whether the envelope needs "turn", and the data fields. */
#define F_VT_SESSION_HEADER false, f_header
#define F_VT_SESSION_META false, f_meta
#define F_VT_SESSION_SETTINGS false, f_settings
#define F_VT_TURN_START true, f_turn_start
#define F_VT_USER_MESSAGE false, f_user_message
#define F_VT_REQUEST_PREPARED true, f_request
#define F_VT_ASSISTANT_TEXT false, f_text
#define F_VT_ASSISTANT_REASONING false, f_reasoning
#define F_VT_TOOL_CALL true, f_tool_call
#define F_VT_INTERACTION_REQUEST true, f_none
#define F_VT_INTERACTION_ANSWER true, f_none
#define F_VT_TOOL_STARTED true, f_call_id
#define F_VT_TOOL_RESULT true, f_tool_result
#define F_VT_STEP_END true, f_step_end
#define F_VT_TURN_END true, f_turn_end
#define F_VT_BRANCH_REWIND false, f_rewind
#define F_VT_INPUT_QUEUED false, f_queued
#define F_VT_INPUT_DEQUEUED false, f_dequeued

/* Indexed by enum vocab_type; a type listed in VOCAB_TYPES without its
 * F_ line above does not compile. */
static const struct vocab_entry table[] = {
#define VOCAB_ROW(e, name) [e] = {e, name, F_##e},
	VOCAB_TYPES(VOCAB_ROW)
#undef VOCAB_ROW
};

_Static_assert(sizeof table / sizeof table[0] == VOCAB_N_TYPES, "one table row per type");

const struct vocab_entry *vocab_find(const char *type)
{
	enum vocab_type t = vocab_type_of(type);
	return t == VT_UNKNOWN ? NULL : &table[t];
}

enum vocab_type vocab_type_of(const char *type)
{
	for (size_t i = 0; i < VOCAB_N_TYPES; i++)
		if (strcmp(table[i].type, type) == 0)
			return (enum vocab_type)i;
	return VT_UNKNOWN;
}

const char *vocab_type_name(enum vocab_type t)
{
	return (size_t)t < VOCAB_N_TYPES ? table[t].type : NULL;
}

bool vocab_valid_type_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '/' || c == '-'))
			return false;
	}
	return true;
}

static bool kind_ok(const struct vocab_field *f, const cJSON *v)
{
	int64_t i;
	switch (f->kind) {
	case VK_STR: return cJSON_IsString(v);
	case VK_STR_OR_NULL: return cJSON_IsString(v) || cJSON_IsNull(v);
	case VK_INT: return json_get_int(v, -JSON_MAX_SAFE_INT, JSON_MAX_SAFE_INT, &i);
	case VK_BOOL: return cJSON_IsBool(v);
	case VK_OBJ: return cJSON_IsObject(v);
	case VK_ARR: return cJSON_IsArray(v);
	case VK_ANY: return true;
	case VK_ENUM: return cJSON_IsString(v);
	case VK_ERROR: return vocab_turn_error(v, NULL, NULL);
	case VK_BLOB: {
		struct blob_ref ref;
		return blob_ref_from_json(v, &ref, NULL) == 0;
	}
	case VK_SEQ_ARR:
		if (!cJSON_IsArray(v))
			return false;
		for (const cJSON *c = v->child; c; c = c->next)
			if (!json_get_int(c, 0, JSON_MAX_SAFE_INT, &i))
				return false;
		return true;
	}
	return false;
}

bool vocab_turn_error(const cJSON *v, const char **cls, const char **message)
{
	const char *c = NULL, *m = NULL;
	if (cJSON_IsString(v)) {
		m = v->valuestring;
	} else if (cJSON_IsObject(v)) {
		const cJSON *vc = cJSON_GetObjectItemCaseSensitive(v, "class");
		const cJSON *vm = cJSON_GetObjectItemCaseSensitive(v, "message");
		const cJSON *vh = cJSON_GetObjectItemCaseSensitive(v, "http_status");
		int64_t h;
		/* The class list grows (a newer writer's class is still an
		 * error with a message): it is not a closed enum. */
		if (!cJSON_IsString(vc) || !cJSON_IsString(vm) ||
		    (vh && !json_get_int(vh, 100, 599, &h)))
			return false;
		c = vc->valuestring;
		m = vm->valuestring;
	} else {
		return false;
	}
	if (cls)
		*cls = c;
	if (message)
		*message = m;
	return true;
}

/* A field's verdict, shared by both forms of the data: present, of the
 * right kind, and for an enum a known value (value: decoded, or NULL). */
static int field_judge(const struct vocab_entry *ve, const struct vocab_field *f, bool present,
		       bool kind, const char *value, struct cerr *err)
{
	if (!present)
		return f->required ? cerr_set(err, CERR_CORRUPT, 0, "'%s' lacks required field '%s'",
					      ve->type, f->name)
				   : 0;
	if (!kind)
		return cerr_set(err, CERR_CORRUPT, 0, "'%s' field '%s' has the wrong type", ve->type,
				f->name);
	if (f->kind == VK_ENUM) {
		bool known = false;
		for (const char *const *s = f->values; *s && !known; s++)
			known = strcmp(*s, value) == 0;
		if (!known)
			return cerr_set(err, CERR_UNSUPPORTED, 0, "'%s' field '%s' has unknown value '%s'",
					ve->type, f->name, value);
	}
	return 0;
}

int vocab_check(const struct vocab_entry *ve, const cJSON *data, struct cerr *err)
{
	for (const struct vocab_field *f = ve->fields; f->name; f++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, f->name);
		bool kind = v && kind_ok(f, v);
		if (field_judge(ve, f, v != NULL, kind, kind ? v->valuestring : NULL, err) < 0)
			return -1;
	}
	return 0;
}

/* Every element of a checked array span an integer in [0, 2^53-1]? */
static bool seq_array(const struct json_span *v)
{
	const char *p = v->p + 1, *end = v->p + v->n - 1; /* inside [ ] */
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ','))
			p++;
		if (p >= end)
			return true;
		if (*p != '-' && !(*p >= '0' && *p <= '9'))
			return false; /* not a number */
		const char *q = p;
		while (q < end && strchr("0123456789+-.eE", *q))
			q++;
		struct json_span num = {p, (size_t)(q - p), '0', false};
		int64_t i;
		if (!json_check_int(&num, 0, JSON_MAX_SAFE_INT, &i))
			return false;
		p = q;
	}
}

/* An object field with rules of its own (a turn's error, a blob
 * reference: rare, and nested): its checked span parsed and judged by
 * kind_ok, the one rule. */
static bool object_ok(const struct vocab_field *f, const struct json_span *v)
{
	cJSON *o = cJSON_ParseWithLength(v->p, v->n);
	bool ok = o && kind_ok(f, o);
	cJSON_Delete(o);
	return ok;
}

static bool span_kind_ok(const struct vocab_field *f, const struct json_span *v)
{
	int64_t i;
	switch (f->kind) {
	case VK_STR: return v->kind == '"';
	case VK_STR_OR_NULL: return v->kind == '"' || v->kind == 'n';
	case VK_INT: return json_check_int(v, -JSON_MAX_SAFE_INT, JSON_MAX_SAFE_INT, &i);
	case VK_BOOL: return v->kind == 't' || v->kind == 'f';
	case VK_OBJ: return v->kind == '{';
	case VK_ARR: return v->kind == '[';
	case VK_ANY: return true;
	case VK_ENUM: return v->kind == '"';
	case VK_SEQ_ARR: return v->kind == '[' && seq_array(v);
	case VK_ERROR: return v->kind == '"' || (v->kind == '{' && object_ok(f, v));
	case VK_BLOB: return v->kind == '{' && object_ok(f, v);
	}
	return false;
}

int vocab_check_members(const struct vocab_entry *ve, const struct json_member *m, size_t n,
			struct cerr *err)
{
	for (const struct vocab_field *f = ve->fields; f->name; f++) {
		const struct json_span *v = NULL;
		size_t len = strlen(f->name);
		for (size_t i = 0; i < n && !v; i++) {
			const struct json_span *k = &m[i].key;
			if (k->esc ? json_check_is(k, f->name)
				   : k->n == len && memcmp(k->p, f->name, len) == 0)
				v = &m[i].val;
		}
		bool kind = v && span_kind_ok(f, v);
		char small[128], *value = NULL;
		if (kind && f->kind == VK_ENUM) {
			value = v->n < sizeof small ? small : xmalloc(v->n + 1);
			json_check_unescape(v, value);
		}
		int r = field_judge(ve, f, v != NULL, kind, value, err);
		if (value != small)
			free(value);
		if (r < 0)
			return -1;
	}
	return 0;
}
