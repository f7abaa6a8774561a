/* vocab.h — the one table of event types cairn knows (DESIGN §4.2).
 *
 * Each entry names the data fields a reader relies on and their JSON kinds.
 * Unknown extra fields are ignored. A type not in the table is unsupported
 * unless its envelope says "ignorable":true. Adding a type or a required
 * field is a vocabulary change; see docs/format.md. */
#ifndef CAIRN_VOCAB_H
#define CAIRN_VOCAB_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "base/json.h"
#include "base/json_check.h"

enum vocab_kind {
	VK_STR,         /* string */
	VK_STR_OR_NULL, /* string or null */
	VK_INT,         /* integer within ±(2^53-1) */
	VK_BOOL,
	VK_OBJ,
	VK_ARR,
	VK_ANY,         /* any JSON value */
	VK_ENUM,        /* string from a closed list (unknown value: unsupported) */
	VK_SEQ_ARR,     /* array of non-negative integers */
	VK_ERROR,       /* why a turn failed: {"class","message","http_status"?}, or
			 * the plain string older logs carry */
	VK_BLOB,        /* {"sha256": 64 lowercase hex, "size": 0..BLOB_MAX} (blob.h) */
};

struct vocab_field {
	const char *name;
	enum vocab_kind kind;
	bool required;
	const char *const *values; /* VK_ENUM: NULL-terminated */
};

/* The event types of format 1, in table order: X(enumerator, name). The
 * enum and the table in vocab.c are both generated from this list, so
 * they cannot disagree; consumers switch on the enum without a default
 * and -Wswitch names the case a new type forgot. */
#define VOCAB_TYPES(X)                                   \
	X(VT_SESSION_HEADER, "session/header")            \
	X(VT_SESSION_META, "session/meta")                \
	X(VT_SESSION_SETTINGS, "session/settings")        \
	X(VT_TURN_START, "turn/start")                    \
	X(VT_USER_MESSAGE, "user/message")                \
	X(VT_REQUEST_PREPARED, "request/prepared")        \
	X(VT_ASSISTANT_TEXT, "assistant/text")            \
	X(VT_ASSISTANT_REASONING, "assistant/reasoning")  \
	X(VT_TOOL_CALL, "tool/call")                      \
	X(VT_INTERACTION_REQUEST, "interaction/request")  \
	X(VT_INTERACTION_ANSWER, "interaction/answer")    \
	X(VT_TOOL_STARTED, "tool/started")                \
	X(VT_TOOL_RESULT, "tool/result")                  \
	X(VT_STEP_END, "step/end")                        \
	X(VT_TURN_END, "turn/end")                        \
	X(VT_BRANCH_REWIND, "branch/rewind")              \
	X(VT_INPUT_QUEUED, "input/queued")                \
	X(VT_INPUT_DEQUEUED, "input/dequeued")

enum vocab_type {
#define VOCAB_ENUM(e, name) e,
	VOCAB_TYPES(VOCAB_ENUM)
#undef VOCAB_ENUM
	VT_UNKNOWN, /* not in this build's table: readable only when ignorable */
};

#define VOCAB_N_TYPES ((size_t)VT_UNKNOWN)

/* How a turn ended: turn/end's "outcome", X(enumerator, name). A closed
 * list of format 1: any other value is unsupported. */
#define VOCAB_OUTCOMES(X)                 \
	X(VO_COMPLETED, "completed")       \
	X(VO_CANCELED, "canceled")         \
	X(VO_FAILED, "failed")             \
	X(VO_INTERRUPTED, "interrupted")

/* What became of a tool call: tool/result's "status". Closed as well. */
#define VOCAB_STATUSES(X)                       \
	X(VS_OK, "ok")                           \
	X(VS_ERROR, "error")                     \
	X(VS_DENIED, "denied")                   \
	X(VS_NOT_EXECUTED, "not_executed")       \
	X(VS_OUTCOME_UNKNOWN, "outcome_unknown") \
	X(VS_CANCELED, "canceled")

/* Why a turn failed: the "class" of turn/end's "error" that cairn writes.
 * Open: a reader meets other classes too (the store's, cerr_class_name,
 * when a turn could not start; a newer build's), and shows them by name. */
#define VOCAB_ERROR_CLASSES(X)                     \
	X(VE_PROVIDER, "provider")                  \
	X(VE_DELIVERY_UNKNOWN, "delivery_unknown")  \
	X(VE_STEP_LIMIT, "step_limit")              \
	X(VE_CAPTURE_FAILED, "capture_failed")      \
	X(VE_INTERRUPTED, "interrupted")

#define VOCAB_ENUM(e, name) e,
enum vocab_outcome { VOCAB_OUTCOMES(VOCAB_ENUM) VO_UNKNOWN /* not in the list */ };
enum vocab_status { VOCAB_STATUSES(VOCAB_ENUM) VS_UNKNOWN /* not in the list */ };
enum vocab_error { VOCAB_ERROR_CLASSES(VOCAB_ENUM) VE_OTHER /* not in the list */ };
#undef VOCAB_ENUM

/* The name of each (static storage); NULL for the sentinel or a value out
 * of range. */
const char *vocab_outcome_name(enum vocab_outcome o);
const char *vocab_status_name(enum vocab_status s);
const char *vocab_error_name(enum vocab_error e);
/* The enumerator named name (NULL allowed); the sentinel (VO_UNKNOWN,
 * VS_UNKNOWN, VE_OTHER) when no entry has that name. */
enum vocab_outcome vocab_outcome_of(const char *name);
enum vocab_status vocab_status_of(const char *name);
enum vocab_error vocab_error_of(const char *name);

struct vocab_entry {
	enum vocab_type id;
	const char *type;
	bool needs_turn; /* the envelope must carry "turn" */
	const struct vocab_field *fields; /* terminated by a NULL name */
};

/* The entry for type, or NULL when unknown. Static storage. */
const struct vocab_entry *vocab_find(const char *type);
/* The enumerator of type, VT_UNKNOWN when the table lacks it (whether
 * such an event may be kept depends on its "ignorable", see event.h). */
enum vocab_type vocab_type_of(const char *type);
/* The name of a known type (static storage); NULL for VT_UNKNOWN or a
 * value out of range. */
const char *vocab_type_name(enum vocab_type t);
/* Check data against the entry: a missing or mistyped field is CERR_CORRUPT,
 * an unknown enum value CERR_UNSUPPORTED. */
int vocab_check(const struct vocab_entry *ve, const cJSON *data, struct cerr *err);
/* Read a turn/end "error" (either form; NULL: none): its class (NULL for
 * the plain string of older logs) and message, both borrowed from v.
 * false when v is not one of the two forms. */
bool vocab_turn_error(const cJSON *v, const char **cls, const char **message);
/* The same for data held as the members of a checked object
 * (json_check): the same rules, order and errors. */
int vocab_check_members(const struct vocab_entry *ve, const struct json_member *m, size_t n,
			struct cerr *err);
/* True when s is a well-formed type name: 1..64 bytes of [a-z0-9_./-]. */
bool vocab_valid_type_name(const char *s);

#define VOCAB_FORMAT 1 /* the log format version this build reads and writes */

#endif
