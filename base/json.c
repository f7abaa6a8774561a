/* json.c — strict parsing rules layered over cJSON. */
#include "base/json.h"
#include "base/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Check the RFC 8259 number at s[*i..n) and advance past it. */
static bool lex_number(const char *s, size_t n, size_t *i)
{
	size_t k = *i;
	if (k < n && s[k] == '-')
		k++;
	if (k >= n || !is_digit(s[k]))
		return false;
	if (s[k] == '0')
		k++;
	else
		while (k < n && is_digit(s[k]))
			k++;
	if (k < n && s[k] == '.') {
		k++;
		if (k >= n || !is_digit(s[k]))
			return false;
		while (k < n && is_digit(s[k]))
			k++;
	}
	if (k < n && (s[k] == 'e' || s[k] == 'E')) {
		k++;
		if (k < n && (s[k] == '+' || s[k] == '-'))
			k++;
		if (k >= n || !is_digit(s[k]))
			return false;
		while (k < n && is_digit(s[k]))
			k++;
	}
	/* A number ends at a delimiter: "01" is not 0 followed by 1. */
	if (k < n && !(s[k] == ',' || s[k] == ']' || s[k] == '}' || s[k] == ' ' || s[k] == '\t' ||
		       s[k] == '\n' || s[k] == '\r'))
		return false;
	*i = k;
	return true;
}

/* The lexical rules cJSON does not enforce: no raw control characters in
 * strings, no escaped NUL (it would silently truncate a C string), no bytes
 * outside strings but JSON's own (so no byte-order mark, no raw NUL), and
 * RFC 8259 number syntax ("01", "1.", "+1" rejected). */
static const char *lex_check(const char *s, size_t n)
{
	bool in_str = false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (in_str) {
			/* Skip 8 plain string bytes at a time: none a quote, a
			 * backslash or a control character (SWAR tests). */
			while (i + 8 <= n) {
				uint64_t w;
				memcpy(&w, s + i, 8);
				const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
				uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
				uint64_t special = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w);
				if (special & high)
					break;
				i += 8;
			}
			if (i >= n)
				break;
			c = (unsigned char)s[i];
			if (c == '"') {
				in_str = false;
			} else if (c == '\\') {
				if (i + 5 < n && s[i + 1] == 'u' && s[i + 2] == '0' && s[i + 3] == '0' &&
				    s[i + 4] == '0' && s[i + 5] == '0')
					return "escaped NUL character in string";
				i++; /* the escaped character; cJSON checks the escape */
			} else if (c < 0x20) {
				return "raw control character in string";
			}
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '-' || is_digit((char)c)) {
			if (!lex_number(s, n, &i))
				return "invalid number";
			i--;
		} else if (c >= 0x80 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r')) {
			return "invalid byte outside a string";
		}
	}
	return NULL;
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
	const char *bad = lex_check(s, n);
	if (bad) {
		*why = bad;
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

/* cJSON prints a number with 15 significant digits whenever that reads
 * back within a relative epsilon, which changes integers near 2^53 (and
 * some doubles). Print the shortest form that reads back exactly. */
static void format_number(double d, char *out, size_t n)
{
	if (d == floor(d) && fabs(d) <= (double)JSON_MAX_SAFE_INT) {
		snprintf(out, n, "%.0f", d);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(out, n, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
}

static void exact_numbers(cJSON *v)
{
	for (cJSON *c = v->child; c; c = c->next) {
		if (cJSON_IsNumber(c) && isfinite(c->valuedouble)) {
			char num[40];
			format_number(c->valuedouble, num, sizeof num);
			/* Turn the node into raw text in place, keeping its key. */
			size_t len = strlen(num) + 1;
			char *raw = cJSON_malloc(len);
			if (!raw)
				abort();
			memcpy(raw, num, len);
			c->type = cJSON_Raw | (c->type & cJSON_StringIsConst);
			c->valuestring = raw;
		} else {
			exact_numbers(c);
		}
	}
}

char *json_print(const cJSON *v)
{
	cJSON *copy = cJSON_Duplicate(v, 1);
	if (!copy)
		abort(); /* cJSON fails only on allocation */
	char *s;
	if (cJSON_IsNumber(copy) && isfinite(copy->valuedouble)) {
		char num[40];
		format_number(copy->valuedouble, num, sizeof num);
		s = xstrdup(num);
	} else {
		exact_numbers(copy);
		s = cJSON_PrintUnformatted(copy);
	}
	cJSON_Delete(copy);
	if (!s)
		abort();
	return s;
}
