/* json.c — strict parsing rules layered over cJSON. */
#include "base/json.h"
#include "base/buf.h"
#include "base/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at s[0..n)? */
static bool hex4(const char *s, size_t n)
{
	return n >= 4 && hex_digit(s[0]) >= 0 && hex_digit(s[1]) >= 0 && hex_digit(s[2]) >= 0 &&
	       hex_digit(s[3]) >= 0;
}

/* Skip plain string bytes from s[i], 8 at a time: none a quote, a
 * backslash or a control character (SWAR tests). Returns the offset of the
 * first byte that is one, or where fewer than 8 bytes are left. (The
 * lowest flagged byte of a group is exact: only bytes above a true match
 * can be flagged falsely, by the borrow.) */
static inline size_t skip_plain(const char *s, size_t i, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	while (i + 8 <= n) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
		uint64_t special = (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w)) & high;
		if (special) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			i += (size_t)__builtin_ctzll(special) / 8;
#endif
			break;
		}
		i += 8;
	}
	return i;
}

/* The double the number literal s[0..n) denotes, as strtod reads it. */
static double literal_double(const char *s, size_t n)
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
	double d = literal_double(s, n);
	if (isinf(d))
		return "number out of range (over 1.8e308 in magnitude)";
	if (d == 0 && nonzero)
		return "number too small (nonzero, but rounds to 0)";
	return NULL;
}

/* Check the RFC 8259 number at s[*i..n) and advance past it; *unstorable
 * gets number_unstorable's verdict. */
static bool lex_number(const char *s, size_t n, size_t *i, const char **unstorable)
{
	size_t k = *i;
	bool nonzero = false;
	if (k < n && s[k] == '-')
		k++;
	if (k >= n || !is_digit(s[k]))
		return false;
	if (s[k] == '0')
		k++;
	else
		for (nonzero = true; k < n && is_digit(s[k]);)
			k++;
	if (k < n && s[k] == '.') {
		k++;
		if (k >= n || !is_digit(s[k]))
			return false;
		while (k < n && is_digit(s[k]))
			nonzero |= s[k++] != '0';
	}
	bool exp = k < n && (s[k] == 'e' || s[k] == 'E');
	if (exp) {
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
			i = skip_plain(s, i, n);
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
				if (i + 1 < n && s[i + 1] == 'u' && !hex4(s + i + 2, n - i - 2))
					return "invalid \\u escape in string";
				i++; /* the escaped character; cJSON checks the escape */
			} else if (c < 0x20) {
				return "raw control character in string";
			}
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '-' || is_digit((char)c)) {
			const char *unstorable = NULL;
			if (!lex_number(s, n, &i, &unstorable))
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
		if (!(is_digit(*k) || (*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || *k == '_'))
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
static bool double_int(double d, int64_t min, int64_t max, int64_t *out)
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
	return cJSON_IsNumber(v) && double_int(v->valuedouble, min, max, out);
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

/* ---- checking without a tree --------------------------------------------
 * json_check accepts exactly the texts json_parse_strict accepts: the
 * lexical rules of lex_check, cJSON's grammar (at most CJSON_NESTING_LIMIT
 * nested containers), no duplicate key after unescaping, and no number a
 * double cannot hold. test_json pins the two together on generated texts. */

struct jkey {
	const char *p; /* raw key, or NULL: unescaped at scratch[off] */
	size_t off, n;
};

struct jwalk {
	struct json_check *c;
	const char *s;
	size_t n, i, depth;
	const char *why;
	struct jkey *keys; /* keys of the open objects, innermost last */
	size_t n_keys, cap_keys;
};

static bool jw_fail(struct jwalk *w, const char *why)
{
	if (!w->why)
		w->why = why;
	return false;
}

static void jw_ws(struct jwalk *w)
{
	while (w->i < w->n) {
		char c = w->s[w->i];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		w->i++;
	}
}

static unsigned hex_value(const char *p)
{
	return (unsigned)(hex_digit(p[0]) << 12 | hex_digit(p[1]) << 8 | hex_digit(p[2]) << 4 |
			  hex_digit(p[3]));
}

/* The string whose opening quote is at s[i]; *v gets its span. */
static bool jw_string(struct jwalk *w, struct json_span *v)
{
	const char *s = w->s;
	size_t n = w->n, i = w->i + 1;
	bool esc = false;
	for (;;) {
		i = skip_plain(s, i, n);
		if (i >= n)
			return jw_fail(w, "invalid JSON");
		unsigned char c = (unsigned char)s[i];
		if (c == '"')
			break;
		if (c < 0x20)
			return jw_fail(w, "raw control character in string");
		if (c != '\\') {
			i++;
			continue;
		}
		esc = true;
		if (i + 1 >= n)
			return jw_fail(w, "invalid JSON");
		char e = s[i + 1];
		if (e != 'u') {
			if (!strchr("bfnrt\"\\/", e) || e == '\0')
				return jw_fail(w, "invalid JSON");
			i += 2;
			continue;
		}
		if (!hex4(s + i + 2, n - i - 2))
			return jw_fail(w, "invalid \\u escape in string");
		unsigned u = hex_value(s + i + 2);
		if (u == 0)
			return jw_fail(w, "escaped NUL character in string");
		i += 6;
		if (u >= 0xDC00 && u <= 0xDFFF)
			return jw_fail(w, "invalid JSON");
		if (u >= 0xD800 && u <= 0xDBFF) {
			if (i + 6 > n || s[i] != '\\' || s[i + 1] != 'u' || !hex4(s + i + 2, n - i - 2))
				return jw_fail(w, "invalid JSON");
			unsigned lo = hex_value(s + i + 2);
			if (lo < 0xDC00 || lo > 0xDFFF)
				return jw_fail(w, "invalid JSON");
			i += 6;
		}
	}
	v->kind = '"';
	v->p = s + w->i + 1;
	v->n = i - w->i - 1;
	v->esc = esc;
	w->i = i + 1;
	return true;
}

size_t json_span_unescape(const struct json_span *v, char *out)
{
	const char *p = v->p, *end = v->p + v->n;
	size_t o = 0;
	while (p < end) {
		if (*p != '\\') {
			out[o++] = *p++;
			continue;
		}
		char e = p[1];
		p += 2;
		switch (e) {
		case 'b': out[o++] = '\b'; continue;
		case 'f': out[o++] = '\f'; continue;
		case 'n': out[o++] = '\n'; continue;
		case 'r': out[o++] = '\r'; continue;
		case 't': out[o++] = '\t'; continue;
		case 'u': break;
		default: out[o++] = e; continue; /* " \ / */
		}
		uint32_t cp = hex_value(p);
		p += 4;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			cp = 0x10000 + ((cp - 0xD800) << 10) + (hex_value(p + 2) - 0xDC00);
			p += 6;
		}
		if (cp < 0x80) {
			out[o++] = (char)cp;
		} else if (cp < 0x800) {
			out[o++] = (char)(0xC0 | cp >> 6);
			out[o++] = (char)(0x80 | (cp & 0x3F));
		} else if (cp < 0x10000) {
			out[o++] = (char)(0xE0 | cp >> 12);
			out[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
			out[o++] = (char)(0x80 | (cp & 0x3F));
		} else {
			out[o++] = (char)(0xF0 | cp >> 18);
			out[o++] = (char)(0x80 | (cp >> 12 & 0x3F));
			out[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
			out[o++] = (char)(0x80 | (cp & 0x3F));
		}
	}
	out[o] = '\0';
	return o;
}

bool json_span_is(const struct json_span *v, const char *s)
{
	size_t n = strlen(s);
	if (v->kind != '"')
		return false;
	if (!v->esc)
		return v->n == n && memcmp(v->p, s, n) == 0;
	if (v->n < n)
		return false;
	char small[256];
	char *u = v->n < sizeof small ? small : xmalloc(v->n + 1);
	size_t un = json_span_unescape(v, u);
	bool same = un == n && memcmp(u, s, n) == 0;
	if (u != small)
		free(u);
	return same;
}

bool json_span_int(const struct json_span *v, int64_t min, int64_t max, int64_t *out)
{
	if (v->kind != '0')
		return false;
	const char *p = v->p;
	size_t n = v->n, k = p[0] == '-';
	bool digits = n - k <= 15;
	for (size_t j = k; j < n && digits; j++)
		digits = is_digit(p[j]);
	if (digits) { /* exact in a double: the value strtod would give */
		int64_t x = 0;
		for (size_t j = k; j < n; j++)
			x = x * 10 + (p[j] - '0');
		return double_int(k ? -(double)x : (double)x, min, max, out);
	}
	return double_int(literal_double(p, n), min, max, out);
}

static const char *jkey_bytes(const struct jwalk *w, const struct jkey *k)
{
	return k->p ? k->p : w->c->scratch + k->off;
}

static bool jkey_same(const struct jwalk *w, const struct jkey *a, const struct jkey *b)
{
	if (a->n != b->n)
		return false;
	const char *x = jkey_bytes(w, a), *y = jkey_bytes(w, b);
	return a->n == 0 || (x[0] == y[0] && memcmp(x, y, a->n) == 0);
}

static _Thread_local const struct jwalk *sort_walk; /* qsort has no context argument */

static int jkey_cmp(const void *a, const void *b)
{
	const struct jkey *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(jkey_bytes(sort_walk, x), jkey_bytes(sort_walk, y), n);
	return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Do keys[from..) of the object just closed hold a duplicate? */
static bool jw_dup_keys(struct jwalk *w, size_t from)
{
	struct jkey *k = w->keys + from;
	size_t n = w->n_keys - from;
	if (n <= 16) {
		for (size_t a = 0; a < n; a++)
			for (size_t b = a + 1; b < n; b++)
				if (jkey_same(w, &k[a], &k[b]))
					return true;
		return false;
	}
	sort_walk = w;
	qsort(k, n, sizeof *k, jkey_cmp);
	for (size_t a = 1; a < n; a++)
		if (jkey_same(w, &k[a - 1], &k[a]))
			return true;
	return false;
}

static void jw_push_key(struct jwalk *w, const struct json_span *key)
{
	struct json_check *c = w->c;
	if (w->n_keys == w->cap_keys) {
		w->cap_keys = w->cap_keys ? w->cap_keys * 2 : 32;
		w->keys = xreallocarray(w->keys, w->cap_keys, sizeof *w->keys);
	}
	struct jkey *k = &w->keys[w->n_keys++];
	if (!key->esc) {
		*k = (struct jkey){key->p, 0, key->n};
		return;
	}
	if (c->n_scratch + key->n + 1 > c->cap_scratch) {
		c->cap_scratch = (c->n_scratch + key->n + 1) * 2;
		c->scratch = xrealloc(c->scratch, c->cap_scratch);
	}
	*k = (struct jkey){NULL, c->n_scratch, 0};
	k->n = json_span_unescape(key, c->scratch + c->n_scratch);
	c->n_scratch += k->n + 1;
}

static void jw_keep(struct json_member **arr, size_t *n, size_t *cap, const struct json_span *key,
		    const struct json_span *val)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*arr = xreallocarray(*arr, *cap, sizeof **arr);
	}
	(*arr)[(*n)++] = (struct json_member){*key, *val};
}

enum jw_role { JW_OTHER, JW_ROOT, JW_SUB };

static bool jw_value(struct jwalk *w, struct json_span *v, enum jw_role role);

static bool jw_container(struct jwalk *w, struct json_span *v, enum jw_role role)
{
	bool obj = w->s[w->i] == '{';
	char close = obj ? '}' : ']';
	if (!obj)
		role = JW_OTHER; /* members are kept of objects only */
	size_t start = w->i, key_base = w->n_keys, scratch_base = w->c->n_scratch;
	if (w->depth >= CJSON_NESTING_LIMIT)
		return jw_fail(w, "invalid JSON");
	w->depth++;
	w->i++;
	jw_ws(w);
	if (w->i < w->n && w->s[w->i] == close) {
		w->i++;
	} else {
		for (;;) {
			struct json_span key, val;
			if (obj) {
				jw_ws(w);
				if (w->i >= w->n || w->s[w->i] != '"' || !jw_string(w, &key))
					return jw_fail(w, "invalid JSON");
				jw_push_key(w, &key);
				jw_ws(w);
				if (w->i >= w->n || w->s[w->i] != ':')
					return jw_fail(w, "invalid JSON");
				w->i++;
			}
			enum jw_role sub = JW_OTHER;
			if (role == JW_ROOT && w->c->sub &&
			    (key.esc ? json_span_is(&key, w->c->sub)
				     : key.n == w->c->sub_len && memcmp(key.p, w->c->sub, key.n) == 0))
				sub = JW_SUB;
			if (!jw_value(w, &val, sub))
				return false;
			if (role == JW_ROOT)
				jw_keep(&w->c->top, &w->c->n_top, &w->c->cap_top, &key, &val);
			else if (role == JW_SUB)
				jw_keep(&w->c->inner, &w->c->n_inner, &w->c->cap_inner, &key, &val);
			jw_ws(w);
			if (w->i < w->n && w->s[w->i] == ',') {
				w->i++;
				continue;
			}
			if (w->i < w->n && w->s[w->i] == close) {
				w->i++;
				break;
			}
			return jw_fail(w, "invalid JSON");
		}
	}
	if (obj && jw_dup_keys(w, key_base))
		return jw_fail(w, "duplicate object key");
	w->n_keys = key_base;
	w->c->n_scratch = scratch_base;
	w->depth--;
	v->kind = obj ? '{' : '[';
	v->p = w->s + start;
	v->n = w->i - start;
	v->esc = false;
	if (role == JW_SUB && obj)
		w->c->has_inner = true;
	return true;
}

static bool jw_value(struct jwalk *w, struct json_span *v, enum jw_role role)
{
	jw_ws(w);
	if (w->i >= w->n)
		return jw_fail(w, "invalid JSON");
	const char *s = w->s;
	char c = s[w->i];
	static const char *const words[] = {"null", "true", "false"};
	switch (c) {
	case '"': return jw_string(w, v);
	case '{':
	case '[': return jw_container(w, v, role);
	case 'n':
	case 't':
	case 'f': {
		const char *word = words[c == 'n' ? 0 : c == 't' ? 1 : 2];
		size_t len = strlen(word);
		if (w->n - w->i < len || memcmp(s + w->i, word, len) != 0)
			return jw_fail(w, "invalid JSON");
		*v = (struct json_span){s + w->i, len, c, false};
		w->i += len;
		return true;
	}
	default: break;
	}
	if (c != '-' && !is_digit(c))
		return jw_fail(w, c < 0x20 || (unsigned char)c >= 0x80 ? "invalid byte outside a string"
								: "invalid JSON");
	size_t start = w->i;
	const char *unstorable = NULL;
	if (!lex_number(s, w->n, &w->i, &unstorable))
		return jw_fail(w, "invalid number");
	if (unstorable)
		return jw_fail(w, unstorable);
	*v = (struct json_span){s + start, w->i - start, '0', false};
	return true;
}

void json_check_init(struct json_check *c, const char *sub)
{
	memset(c, 0, sizeof *c);
	c->sub = sub;
	c->sub_len = sub ? strlen(sub) : 0;
}

void json_check_release(struct json_check *c)
{
	free(c->top);
	free(c->inner);
	free(c->scratch);
	free(c->keys);
	memset(c, 0, sizeof *c);
}

bool json_check(struct json_check *c, const char *s, size_t n, struct json_span *root,
		const char **why)
{
	struct jwalk w = {.c = c, .s = s, .n = n, .keys = c->keys, .cap_keys = c->cap_keys};
	c->n_top = c->n_inner = c->n_scratch = 0;
	c->has_inner = false;
	jw_ws(&w);
	bool ok = w.i < n && jw_value(&w, root, s[w.i] == '{' ? JW_ROOT : JW_OTHER);
	if (ok) {
		jw_ws(&w);
		if (w.i < n) {
			ok = false;
			w.why = "trailing bytes after JSON value";
		}
	}
	c->keys = w.keys;
	c->cap_keys = w.cap_keys;
	if (!ok)
		*why = w.why ? w.why : "invalid JSON";
	return ok;
}
