/* json.c — strict parsing rules layered over cJSON. */
#include "base/json.h"
#include "base/json_int.h"
#include "base/buf.h"
#include "base/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The double the number literal s[0..n) denotes, as strtod reads it. */
double json_literal_double(const char *s, size_t n)
{
	char small[64];
	char *z = n < sizeof small ? small : xmalloc(n + 1);
	memcpy(z, s, n);
	z[n] = '\0';
	double d = strtod(z, NULL);
	if (z != small)
		free(z);
	return d;
}

/* Why the number literal s[0..n) (valid syntax; nonzero: a digit of its
 * mantissa is not 0) cannot be stored as a double, or NULL. Only a literal
 * with an exponent or of more than 300 characters can leave the range of a
 * double, so the common ones never reach strtod. A nonzero subnormal is
 * kept: the shortest form json_print writes reads back as the same double. */
static const char *number_unstorable(const char *s, size_t n, bool nonzero, bool exp)
{
	if (!exp && n <= 300)
		return NULL;
	double d = json_literal_double(s, n);
	if (isinf(d))
		return "number out of range (over 1.8e308 in magnitude)";
	if (d == 0 && nonzero)
		return "number too small (nonzero, but rounds to 0)";
	return NULL;
}

/* Check the RFC 8259 number at s[*i..n) and advance past it; *unstorable
 * gets number_unstorable's verdict. */
bool json_lex_number(const char *s, size_t n, size_t *i, const char **unstorable)
{
	size_t k = *i;
	bool nonzero = false;
	if (k < n && s[k] == '-')
		k++;
	if (k >= n || !json_is_digit(s[k]))
		return false;
	if (s[k] == '0')
		k++;
	else
		for (nonzero = true; k < n && json_is_digit(s[k]);)
			k++;
	if (k < n && s[k] == '.') {
		k++;
		if (k >= n || !json_is_digit(s[k]))
			return false;
		while (k < n && json_is_digit(s[k]))
			nonzero |= s[k++] != '0';
	}
	bool exp = k < n && (s[k] == 'e' || s[k] == 'E');
	if (exp) {
		k++;
		if (k < n && (s[k] == '+' || s[k] == '-'))
			k++;
		if (k >= n || !json_is_digit(s[k]))
			return false;
		while (k < n && json_is_digit(s[k]))
			k++;
	}
	/* A number ends at a delimiter: "01" is not 0 followed by 1. */
	if (k < n && !(s[k] == ',' || s[k] == ']' || s[k] == '}' || s[k] == ' ' || s[k] == '\t' ||
		       s[k] == '\n' || s[k] == '\r'))
		return false;
	*unstorable = number_unstorable(s + *i, k - *i, nonzero, exp);
	*i = k;
	return true;
}

/* The lexical rules cJSON does not enforce: no raw control characters in
 * strings, no escaped NUL (it would silently truncate a C string), no bytes
 * outside strings but JSON's own (so no byte-order mark, no raw NUL), and
 * RFC 8259 number syntax ("01", "1.", "+1" rejected). A number a double
 * cannot hold is no lexical error: the first one's place among the text's
 * numbers (from 0) goes to *bad_num, the reason to *bad_why. */
static const char *lex_check(const char *s, size_t n, size_t *bad_num, const char **bad_why)
{
	bool in_str = false;
	size_t nums = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (in_str) {
			i = json_skip_plain(s, i, n);
			if (i >= n)
				break;
			c = (unsigned char)s[i];
			if (c == '"') {
				in_str = false;
			} else if (c == '\\') {
				if (i + 5 < n && s[i + 1] == 'u' && s[i + 2] == '0' && s[i + 3] == '0' &&
				    s[i + 4] == '0' && s[i + 5] == '0')
					return "escaped NUL character in string";
				/* cJSON reads a \u escape with a non-hex digit as
				 * U+0000, which would cut the string short. */
				if (i + 1 < n && s[i + 1] == 'u' && !json_hex4(s + i + 2, n - i - 2))
					return "invalid \\u escape in string";
				i++; /* the escaped character; cJSON checks the escape */
			} else if (c < 0x20) {
				return "raw control character in string";
			}
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '-' || json_is_digit((char)c)) {
			const char *unstorable = NULL;
			if (!json_lex_number(s, n, &i, &unstorable))
				return "invalid number";
			if (unstorable && !*bad_why) {
				*bad_why = unstorable;
				*bad_num = nums;
			}
			nums++;
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

/* The steps from a value down to one of its numbers, deepest first. */
struct steps {
	const cJSON **child; /* the value entered at each step */
	size_t *index;       /* its place in an array */
	size_t n;
};

static void steps_push(struct steps *st, const cJSON *c, size_t index)
{
	st->child = xreallocarray(st->child, st->n + 1, sizeof *st->child);
	st->index = xreallocarray(st->index, st->n + 1, sizeof *st->index);
	st->child[st->n] = c;
	st->index[st->n++] = index;
}

/* Depth first in document order: the first number that is not finite
 * (skip NULL), or the one *skip numbers after v's first. On a find, the
 * steps down to it are in st. */
static bool find_number(const cJSON *v, size_t *skip, struct steps *st)
{
	if (cJSON_IsNumber(v))
		return skip ? (*skip)-- == 0 : !isfinite(v->valuedouble);
	size_t i = 0;
	for (const cJSON *c = cJSON_IsArray(v) || cJSON_IsObject(v) ? v->child : NULL; c;
	     c = c->next, i++) {
		if (find_number(c, skip, st)) {
			steps_push(st, c, i);
			return true;
		}
	}
	return false;
}

static bool plain_key(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!(json_is_digit(*k) || (*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || *k == '_'))
			return false;
	return true;
}

/* The path of the number find_number found, after prefix: "data.x",
 * "data.args[2]", "data[\"a b\"]". Caller frees. */
static char *steps_path(struct steps *st, const char *prefix)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, prefix);
	for (size_t i = st->n; i-- > 0;) {
		const char *key = st->child[i]->string;
		if (!key)
			buf_printf(&b, "[%zu]", st->index[i]);
		else if (plain_key(key))
			buf_printf(&b, "%s%s", b.len ? "." : "", key);
		else {
			buf_addc(&b, '[');
			buf_add_json_string(&b, key);
			buf_addc(&b, ']');
		}
	}
	free(st->child);
	free(st->index);
	return buf_detach(&b, NULL);
}

char *json_nonfinite_path(const cJSON *v, const char *prefix)
{
	struct steps st = {0};
	return find_number(v, NULL, &st) ? steps_path(&st, prefix) : NULL;
}

/* "path: why" for the nth number of v, in a buffer of this thread (a
 * path over 200 bytes is cut). */
static const char *number_reason(const cJSON *v, size_t nth, const char *why)
{
	static _Thread_local char msg[320];
	struct steps st = {0};
	if (!find_number(v, &nth, &st))
		return why; /* not reached: cJSON saw the numbers the lexer did */
	char *path = steps_path(&st, "");
	if (*path)
		snprintf(msg, sizeof msg, "%.200s%s: %s", path, strlen(path) > 200 ? "..." : "",
			 why);
	else
		snprintf(msg, sizeof msg, "%s", why);
	free(path);
	return msg;
}

cJSON *json_parse_strict(const char *s, size_t n, const char **why)
{
	const char *end = NULL;
	size_t bad_num = 0;
	const char *bad_why = NULL;
	const char *bad = lex_check(s, n, &bad_num, &bad_why);
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
	if (bad_why) {
		*why = number_reason(v, bad_num, bad_why);
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

/* json_get_int's test on a number's double value. */
bool json_double_int(double d, int64_t min, int64_t max, int64_t *out)
{
	if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
		return false;
	if (d < -(double)JSON_MAX_SAFE_INT || d > (double)JSON_MAX_SAFE_INT)
		return false;
	*out = (int64_t)d;
	return true;
}

bool json_get_int(const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
	return cJSON_IsNumber(v) && json_double_int(v->valuedouble, min, max, out);
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
