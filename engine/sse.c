/* sse.c — the Server-Sent Events parser: a byte-at-a-time state machine
 * that never backtracks, so any split of the input gives the same events.
 * Complete lines found inside one piece are parsed where they lie; only a
 * line cut by the end of a piece is copied, and the copy is bounded. */
#include "engine/sse.h"

#include "base/buf.h"
#include "base/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char bom[3] = {0xef, 0xbb, 0xbf};

struct sse {
	sse_event_cb cb;
	void *ud;
	size_t max;         /* bound on line + data + name of one event */
	struct buf line;    /* a line cut by the end of the previous piece */
	struct buf data;    /* the data buffer: data lines, each with its LF */
	struct buf name;    /* the event type buffer */
	struct buf id;      /* the last event ID buffer (survives dispatch) */
	struct buf last_id; /* the last event ID string, set at dispatch */
	long long retry_ms; /* -1 until a valid retry: */
	unsigned bom_seen;  /* BOM bytes matched so far; 3 once decided */
	bool after_cr;      /* the last line ended with CR: skip one LF */
	bool dead;          /* SSE_E_LIMIT was returned */
};

struct sse *sse_new(size_t max_event, sse_event_cb cb, void *ud)
{
	struct sse *s = xcalloc(1, sizeof *s);
	s->cb = cb;
	s->ud = ud;
	s->max = max_event ? max_event : SSE_EVENT_MAX;
	s->retry_ms = -1;
	buf_adds(&s->last_id, "");
	return s;
}

void sse_free(struct sse *s)
{
	if (!s)
		return;
	buf_release(&s->line);
	buf_release(&s->data);
	buf_release(&s->name);
	buf_release(&s->id);
	buf_release(&s->last_id);
	free(s);
}

/* The spec's "dispatch the event". */
static int dispatch(struct sse *s)
{
	buf_reset(&s->last_id);
	buf_add(&s->last_id, s->id.p ? s->id.p : "", s->id.len);
	int rc = 0;
	if (s->data.len > 0) {
		/* Drop the LF the last data line added; data stays NUL-terminated. */
		size_t len = s->data.len - 1;
		s->data.p[len] = '\0';
		rc = s->cb(s->ud, s->name.len ? s->name.p : "message", s->data.p, len);
	}
	buf_reset(&s->data);
	buf_reset(&s->name);
	return rc;
}

static bool field_is(const char *f, size_t n, const char *name)
{
	return n == strlen(name) && memcmp(f, name, n) == 0;
}

/* One complete line, without its terminator. */
static int process_line(struct sse *s, const char *l, size_t len)
{
	if (len == 0)
		return dispatch(s);
	if (l[0] == ':')
		return 0; /* a comment, e.g. a keep-alive */
	const char *colon = memchr(l, ':', len);
	size_t flen = colon ? (size_t)(colon - l) : len;
	const char *v = colon ? colon + 1 : l + len;
	size_t vlen = (size_t)(l + len - v);
	if (vlen > 0 && *v == ' ') {
		v++;
		vlen--;
	}
	if (field_is(l, flen, "event")) {
		buf_reset(&s->name);
		buf_add(&s->name, v, vlen);
	} else if (field_is(l, flen, "data")) {
		buf_add(&s->data, v, vlen);
		buf_addc(&s->data, '\n');
	} else if (field_is(l, flen, "id")) {
		if (!memchr(v, '\0', vlen)) {
			buf_reset(&s->id);
			buf_add(&s->id, v, vlen);
		}
	} else if (field_is(l, flen, "retry")) {
		long long ms = 0;
		size_t i = 0;
		for (; i < vlen && v[i] >= '0' && v[i] <= '9'; i++)
			ms = ms > (INT64_MAX - 9) / 10 ? INT64_MAX : ms * 10 + (v[i] - '0');
		if (vlen > 0 && i == vlen)
			s->retry_ms = ms;
	}
	/* Any other field is ignored, as the spec says. */
	return 0;
}

/* Would holding `more` bytes of line on top of the event exceed the bound? */
static bool over(const struct sse *s, size_t more)
{
	size_t held = s->line.len + s->data.len + s->name.len;
	return more > s->max || held > s->max - more;
}

/* The length of the line at p[0..n): up to its first CR or LF, or n.
 * memchr twice, not a byte-at-a-time loop: this scan is over every byte
 * a model streams. */
static size_t line_len(const char *p, size_t n)
{
	const char *lf = memchr(p, '\n', n);
	size_t i = lf ? (size_t)(lf - p) : n;
	const char *cr = memchr(p, '\r', i);
	return cr ? (size_t)(cr - p) : i;
}

static int feed_lines(struct sse *s, const char *p, size_t n)
{
	while (n > 0) {
		if (s->after_cr) {
			s->after_cr = false;
			if (*p == '\n') {
				p++;
				n--;
				continue;
			}
		}
		size_t i = line_len(p, n);
		if (over(s, i)) {
			s->dead = true;
			return SSE_E_LIMIT;
		}
		if (i == n) {
			buf_add(&s->line, p, n);
			return 0;
		}
		int rc;
		if (s->line.len) {
			buf_add(&s->line, p, i);
			rc = process_line(s, s->line.p, s->line.len);
			buf_reset(&s->line);
		} else {
			rc = process_line(s, p, i);
		}
		s->after_cr = p[i] == '\r';
		p += i + 1;
		n -= i + 1;
		if (rc)
			return rc;
	}
	return 0;
}

int sse_feed(struct sse *s, const void *buf, size_t n)
{
	const char *p = buf;
	if (s->dead)
		return SSE_E_LIMIT;
	/* A BOM is skipped once, at the very start, even when split. */
	while (s->bom_seen < 3 && n > 0) {
		if ((unsigned char)*p == bom[s->bom_seen]) {
			s->bom_seen++;
			p++;
			n--;
			continue;
		}
		unsigned matched = s->bom_seen;
		s->bom_seen = 3;
		if (matched) {
			int rc = feed_lines(s, (const char *)bom, matched);
			if (rc)
				return rc;
		}
	}
	return feed_lines(s, p, n);
}

bool sse_pending(const struct sse *s)
{
	return s->line.len || s->data.len || s->name.len || (s->bom_seen > 0 && s->bom_seen < 3);
}

const char *sse_last_id(const struct sse *s)
{
	return s->last_id.p;
}

long long sse_retry_ms(const struct sse *s)
{
	return s->retry_ms;
}
