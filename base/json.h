/* json.h — strict JSON on top of cJSON.
 *
 * cJSON accepts duplicate object keys, "\u0000" inside strings and trailing
 * bytes; cairn's on-disk format rejects all three. json_parse_strict adds
 * those checks; the caller validates UTF-8 beforehand. */
#ifndef CAIRN_JSON_H
#define CAIRN_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Largest integer a JSON number can carry exactly (2^53 - 1). */
#define JSON_MAX_SAFE_INT 9007199254740991LL

/* Parse s[0..n) as exactly one JSON value (surrounding whitespace allowed).
 * Returns the tree (caller frees with cJSON_Delete) or NULL with a static
 * reason in *why. Rejects duplicate keys and escaped NUL characters. */
cJSON *json_parse_strict(const char *s, size_t n, const char **why);
/* True when v is a number holding an integer in [min, max]; stores it. */
bool json_get_int(const cJSON *v, int64_t min, int64_t max, int64_t *out);
/* Serialize without whitespace; caller frees. */
char *json_print(const cJSON *v);

#endif
