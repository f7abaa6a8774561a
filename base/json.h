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

#endif
