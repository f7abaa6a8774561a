/* json.h — strict JSON on top of cJSON.
 *
 * cJSON accepts duplicate object keys, "\u0000" inside strings and trailing
 * bytes, and reads a number beyond a double's range as infinity (printed
 * as null) or below it as 0; cairn's on-disk format rejects all of them.
 * json_parse_strict adds those checks; the caller validates UTF-8
 * beforehand. */
#ifndef CAIRN_JSON_H
#define CAIRN_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Largest integer a JSON number can carry exactly (2^53 - 1). */
#define JSON_MAX_SAFE_INT 9007199254740991LL

/* Parse s[0..n) as exactly one JSON value (surrounding whitespace allowed).
 * Returns the tree (caller frees with cJSON_Delete) or NULL with a reason
 * in *why, valid until the next call on this thread. Rejects duplicate
 * keys, escaped NUL characters and numbers a double cannot hold (out of
 * range, or nonzero but rounding to 0); for those the reason starts with
 * the number's path ("data.x: number out of range ..."). */
cJSON *json_parse_strict(const char *s, size_t n, const char **why);
/* The path (prefix, then ".key" or "[i]" steps) of the first number in v
 * that is infinite or NaN, which JSON cannot carry; NULL when there is
 * none. Caller frees. */
char *json_nonfinite_path(const cJSON *v, const char *prefix);
/* True when v is a number holding an integer in [min, max]; stores it. */
bool json_get_int(const cJSON *v, int64_t min, int64_t max, int64_t *out);
/* Serialize without whitespace; caller frees. A non-finite number prints
 * as null: writers refuse one first (json_nonfinite_path). */
char *json_print(const cJSON *v);

/* A value inside a text json_check accepted. */
struct json_span {
	const char *p; /* first byte; for a string, the one after its quote */
	size_t n;      /* length; for a string, up to its closing quote */
	char kind;     /* 'n' null, 't' true, 'f' false, '0' number, '"' string,
			* '[' array, '{' object */
	bool esc;      /* a string holding a backslash escape */
};

struct json_member {
	struct json_span key, val;
};

/* What json_check keeps of a text: the members of its root object, and
 * those of the root's object member named sub. Spans point into the text
 * checked and arrays are valid until the next check. Embedded and reused:
 * json_check_init / json_check_release. */
struct json_check {
	const char *sub;           /* borrowed; NULL: no inner members */
	size_t sub_len;            /* private */
	struct json_member *top;   /* root members in text order */
	size_t n_top;
	struct json_member *inner; /* members of root.sub when it is an object */
	size_t n_inner;
	bool has_inner;            /* root.sub is an object */
	size_t cap_top, cap_inner; /* private */
	char *scratch;             /* private: unescaped keys */
	size_t n_scratch, cap_scratch;
	void *keys;                /* private: keys of open objects */
	size_t cap_keys;
};

void json_check_init(struct json_check *c, const char *sub);
void json_check_release(struct json_check *c);
/* Accept s[0..n) exactly when json_parse_strict would, without building a
 * tree (the reasons may be worded differently). On success *root spans the
 * value and c holds its members; on failure *why is a static reason. */
bool json_check(struct json_check *c, const char *s, size_t n, struct json_span *root,
		const char **why);
/* Decode a checked string span into out (room for v->n + 1 bytes), NUL
 * terminated; returns its length. */
size_t json_span_unescape(const struct json_span *v, char *out);
/* Is v a string equal to s once decoded? */
bool json_span_is(const struct json_span *v, const char *s);
/* json_get_int for a checked span: a number holding an integer in
 * [min, max], read as cJSON reads it. */
bool json_span_int(const struct json_span *v, int64_t min, int64_t max, int64_t *out);

#endif
