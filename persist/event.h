/* event.h — one event line of a session log: parse, validate, format.
 *
 * A line is a JSON object {"seq","t","type","turn"?,"ignorable"?,"data"};
 * seq and t are integers in [0, 2^53-1], type a vocabulary name, data an
 * object checked against the vocabulary (vocab.h). */
#ifndef CAIRN_EVENT_H
#define CAIRN_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "base/json_check.h"
#include "persist/vocab.h"

#define TURN_ID_MAX 128

struct event {
	uint64_t seq;
	int64_t t;
	const char *type;              /* points into root */
	enum vocab_type vtype;         /* VT_UNKNOWN for an unknown ignorable type */
	const char *turn;              /* points into root; NULL when absent */
	bool ignorable;
	const struct vocab_entry *kind; /* NULL for an unknown ignorable type */
	cJSON *root;                   /* owned: the whole parsed line */
	cJSON *data;                   /* inside root */
	const char *line;              /* raw line, borrowed from its frame */
	size_t line_len;               /* without the LF */
};

/* Parse and validate line[0..n) (valid UTF-8, no LF) expecting seq
 * expect_seq. On success fills ev (release with event_release); a known
 * type has ev->kind and ev->vtype set, an unknown ignorable one has kind
 * NULL and vtype VT_UNKNOWN. On failure
 * returns -1 with CERR_CORRUPT or CERR_UNSUPPORTED and ev untouched. */
int event_parse(const char *line, size_t n, uint64_t expect_seq, struct event *ev,
		struct cerr *err);
/* An event validated by event_check: what a reader indexes, without a
 * tree. Spans point into the line checked. */
struct event_ref {
	uint64_t seq;
	int64_t t;
	enum vocab_type vtype;          /* VT_UNKNOWN for an unknown ignorable type */
	const struct vocab_entry *kind; /* NULL for an unknown ignorable type */
	bool ignorable;
	struct json_span turn;          /* kind 0 when absent */
	struct json_span data;          /* the data object */
};

#define EVENT_ANY_SEQ UINT64_MAX /* expect_seq for a line whose seq is not known */

/* event_parse's rules and errors without building a tree: jc is the
 * caller's (json_check_init with "data"), reused across lines. 0 with *ev
 * filled, or -1 with CERR_CORRUPT or CERR_UNSUPPORTED. */
int event_check(struct json_check *jc, const char *line, size_t n, uint64_t expect_seq,
		struct event_ref *ev, struct cerr *err);
/* Free what ev owns; NULL-safe. */
void event_release(struct event *ev);
/* Append one event line (with its LF) in canonical key order
 * seq,t,type,turn,ignorable,data to out. data may be NULL for {}. */
void event_format(struct buf *out, uint64_t seq, int64_t t, const char *type, const char *turn,
		  bool ignorable, const cJSON *data);

#endif
