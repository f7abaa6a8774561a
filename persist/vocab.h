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
