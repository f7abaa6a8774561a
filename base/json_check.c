/* json_check.c — strict JSON without a tree (see json_check.h).
 *
 * json_check accepts exactly the texts json_parse_strict accepts: the
 * lexical rules of lex_check, cJSON's grammar (at most CJSON_NESTING_LIMIT
 * nested containers), no duplicate key after unescaping, and no number a
 * double cannot hold. test_json_check pins the two together on generated
 * texts. */
#include "base/json_check.h"
#include "base/json_int.h"
#include "base/utf8.h"
#include "base/xalloc.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

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
	return (unsigned)(json_hex_digit(p[0]) << 12 | json_hex_digit(p[1]) << 8 | json_hex_digit(p[2]) << 4 |
			  json_hex_digit(p[3]));
}

/* The string whose opening quote is at s[i]; *v gets its span. */
static bool jw_string(struct jwalk *w, struct json_span *v)
{
	const char *s = w->s;
	size_t n = w->n, i = w->i + 1;
	bool esc = false;
	for (;;) {
		i = json_skip_plain(s, i, n);
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
		if (!json_hex4(s + i + 2, n - i - 2))
			return jw_fail(w, "invalid \\u escape in string");
		unsigned u = hex_value(s + i + 2);
		if (u == 0)
			return jw_fail(w, "escaped NUL character in string");
		i += 6;
		if (u >= 0xDC00 && u <= 0xDFFF)
			return jw_fail(w, "invalid JSON");
		if (u >= 0xD800 && u <= 0xDBFF) {
			if (i + 6 > n || s[i] != '\\' || s[i + 1] != 'u' || !json_hex4(s + i + 2, n - i - 2))
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

size_t json_check_unescape(const struct json_span *v, char *out)
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
		o += utf8_encode(cp, out + o);
	}
	out[o] = '\0';
	return o;
}

bool json_check_is(const struct json_span *v, const char *s)
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
	size_t un = json_check_unescape(v, u);
	bool same = un == n && memcmp(u, s, n) == 0;
	if (u != small)
		free(u);
	return same;
}

bool json_check_int(const struct json_span *v, int64_t min, int64_t max, int64_t *out)
{
	if (v->kind != '0')
		return false;
	const char *p = v->p;
	size_t n = v->n, k = p[0] == '-';
	bool digits = n - k <= 15;
	for (size_t j = k; j < n && digits; j++)
		digits = json_is_digit(p[j]);
	if (digits) { /* exact in a double: the value strtod would give */
		int64_t x = 0;
		for (size_t j = k; j < n; j++)
			x = x * 10 + (p[j] - '0');
		return json_double_int(k ? -(double)x : (double)x, min, max, out);
	}
	return json_double_int(json_literal_double(p, n), min, max, out);
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
	size_t n = w->n_keys - from;
	if (n < 2)
		return false; /* and keys may still be NULL: no offset from it */
	struct jkey *k = w->keys + from;
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
	k->n = json_check_unescape(key, c->scratch + c->n_scratch);
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
			    (key.esc ? json_check_is(&key, w->c->sub)
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
	if (c != '-' && !json_is_digit(c))
		return jw_fail(w, c < 0x20 || (unsigned char)c >= 0x80 ? "invalid byte outside a string"
								: "invalid JSON");
	size_t start = w->i;
	const char *unstorable = NULL;
	if (!json_lex_number(s, w->n, &w->i, &unstorable))
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
