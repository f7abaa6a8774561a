/* json_check.h — strict JSON checked without building a tree: the texts
 * json_parse_strict (json.h) accepts, walked once with no allocation per
 * value, keeping the spans of the root object's members and of one of its
 * object members. Readers that validate every line but need few fields
 * (persist/load.c through event_check) use it. */
#ifndef CAIRN_JSON_CHECK_H
#define CAIRN_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
size_t json_check_unescape(const struct json_span *v, char *out);
/* Is v a string equal to s once decoded? */
bool json_check_is(const struct json_span *v, const char *s);
/* json_get_int for a checked span: a number holding an integer in
 * [min, max], read as cJSON reads it. */
bool json_check_int(const struct json_span *v, int64_t min, int64_t max, int64_t *out);

#endif
