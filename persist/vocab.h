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
};

struct vocab_field {
	const char *name;
	enum vocab_kind kind;
	bool required;
	const char *const *values; /* VK_ENUM: NULL-terminated */
};

struct vocab_entry {
	const char *type;
	bool needs_turn; /* the envelope must carry "turn" */
	const struct vocab_field *fields; /* terminated by a NULL name */
};

/* The entry for type, or NULL when unknown. Static storage. */
const struct vocab_entry *vocab_find(const char *type);
/* Check data against the entry: a missing or mistyped field is CERR_CORRUPT,
 * an unknown enum value CERR_UNSUPPORTED. */
int vocab_check(const struct vocab_entry *ve, const cJSON *data, struct cerr *err);
/* True when s is a well-formed type name: 1..64 bytes of [a-z0-9_./-]. */
bool vocab_valid_type_name(const char *s);

#define VOCAB_FORMAT 1 /* the log format version this build reads and writes */

#endif
