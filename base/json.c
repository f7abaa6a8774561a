/* json.c — strict parsing rules layered over cJSON. */
#include "base/json.h"
#include "base/xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An escaped NUL would silently truncate a C string: reject it. Backslashes
 * occur only inside strings in valid JSON, so a flat scan is exact. */
static bool has_escaped_nul(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 5 < n && s[i + 2] == '0' && s[i + 3] == '0' &&
		    s[i + 4] == '0' && s[i + 5] == '0')
			return true;
		i++; /* skip the escaped character */
	}
	return false;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool has_duplicate_keys(const cJSON *v)
{
	if (cJSON_IsObject(v)) {
		size_t n = 0;
		for (const cJSON *c = v->child; c; c = c->next)
			n++;
		if (n > 1 && n <= 8) {
			for (const cJSON *a = v->child; a; a = a->next)
				for (const cJSON *b = a->next; b; b = b->next)
					if (strcmp(a->string, b->string) == 0)
						return true;
		} else if (n > 8) {
			const char **names = xmalloc(n * sizeof *names);
			size_t i = 0;
			for (const cJSON *c = v->child; c; c = c->next)
				names[i++] = c->string;
			qsort(names, n, sizeof *names, cmp_names);
			bool dup = false;
			for (i = 1; i < n && !dup; i++)
				dup = strcmp(names[i - 1], names[i]) == 0;
			free(names);
			if (dup)
				return true;
		}
	}
	if (cJSON_IsObject(v) || cJSON_IsArray(v))
		for (const cJSON *c = v->child; c; c = c->next)
			if (has_duplicate_keys(c))
				return true;
	return false;
}

cJSON *json_parse_strict(const char *s, size_t n, const char **why)
{
	const char *end = NULL;
	if (has_escaped_nul(s, n)) {
		*why = "escaped NUL character in string";
		return NULL;
	}
	cJSON *v = cJSON_ParseWithLengthOpts(s, n, &end, 0);
	if (!v) {
		*why = "invalid JSON";
		return NULL;
	}
	for (const char *p = end; p < s + n; p++) {
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
			cJSON_Delete(v);
			*why = "trailing bytes after JSON value";
			return NULL;
		}
	}
	if (has_duplicate_keys(v)) {
		cJSON_Delete(v);
		*why = "duplicate object key";
		return NULL;
	}
	return v;
}

bool json_get_int(const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
	if (!cJSON_IsNumber(v))
		return false;
	double d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
		return false;
	if (d < -(double)JSON_MAX_SAFE_INT || d > (double)JSON_MAX_SAFE_INT)
		return false;
	*out = (int64_t)d;
	return true;
}

char *json_print(const cJSON *v)
{
	char *s = cJSON_PrintUnformatted(v);
	if (!s)
		abort(); /* cJSON fails only on allocation */
	return s;
}
