/* scan.c — whole-log reader: frame integrity first, then lines, then the
 * turn summary (open turns, unmatched tool calls). */
#include "persist/scan.h"
#include "persist/scan_int.h"
#include "base/json.h"
#include "base/strmap.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "persist/frame.h"
#include "persist/fsops.h"
#include "persist/pathkey.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t zstd_magic[4] = {0x28, 0xB5, 0x2F, 0xFD};

const char *scan_status_name(enum scan_status st)
{
	switch (st) {
	case SCAN_OK: return "ok";
	case SCAN_TORN: return "torn";
	case SCAN_CORRUPT: return "corrupt";
	case SCAN_UNSUPPORTED: return "unsupported";
	}
	return "corrupt";
}

enum cerr_class scan_class(const struct scan *s)
{
	switch (s->status) {
	case SCAN_OK:
	case SCAN_TORN: return CERR_OK;
	case SCAN_CORRUPT: return CERR_CORRUPT;
	case SCAN_UNSUPPORTED: return CERR_UNSUPPORTED;
	}
	return CERR_CORRUPT;
}

static void corrupt(struct scan *s, uint64_t at, const char *why)
{
	s->status = SCAN_CORRUPT;
	s->damage_at = at;
	cerr_set(&s->err, CERR_CORRUPT, 0, "frame at offset %llu: %s", (unsigned long long)at, why);
}

/* Is there a complete frame that decodes and passes its checksum anywhere
 * in p[from..n)? A crash leaves only a prefix of the last write, so such a
 * frame means the region is not a torn tail. */
static bool complete_frame_inside(const uint8_t *p, size_t from, size_t n, struct frame_codec *fc,
				  size_t *where)
{
	size_t q = from;
	while (q + 4 <= n) {
		const uint8_t *m = memmem(p + q, n - q, zstd_magic, 4);
		if (!m)
			break;
		q = (size_t)(m - p);
		struct frame_info fi;
		if (frame_walk(p + q, n - q, &fi) == FRAME_COMPLETE) {
			const char *why;
			char *c = frame_decode(fc, p + q, &fi, &why);
			if (c) {
				free(c);
				*where = q;
				return true;
			}
		}
		q++;
	}
	return false;
}

/* Arrays grow by doubling: the capacity is the next power of two. */
static bool full(size_t n)
{
	return n == 0 || (n >= 16 && (n & (n - 1)) == 0);
}

static void push_event(struct scan *s, const struct event *ev)
{
	if (full(s->n_events))
		s->events = xreallocarray(s->events, s->n_events ? s->n_events * 2 : 16,
					  sizeof *s->events);
	s->events[s->n_events++] = *ev;
}

static void drop_events_from(void *ctx, size_t from)
{
	struct scan *s = ctx;
	while (s->n_events > from)
		event_release(&s->events[--s->n_events]);
}

/* The header line: format first (so another version is "unsupported", not
 * a shape error), then the usual validation, then the id. */
static int check_header(struct scan *s, const char *line, size_t len, struct event *ev)
{
	const char *why;
	cJSON *pre = json_parse_strict(line, len, &why);
	if (pre) {
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(pre, "data");
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(pre, "type");
		int64_t fmt;
		bool is_header = cJSON_IsString(type) && vocab_type_of(type->valuestring) == VT_SESSION_HEADER;
		if (is_header &&
		    json_get_int(cJSON_GetObjectItemCaseSensitive(data, "format"), INT64_MIN + 1,
				 INT64_MAX, &fmt) &&
		    fmt != VOCAB_FORMAT) {
			cJSON_Delete(pre);
			s->status = SCAN_UNSUPPORTED;
			s->format = fmt;
			cerr_set(&s->err, CERR_UNSUPPORTED, 0, "log format %lld is not supported (this cairn reads format %d)",
				 (long long)fmt, VOCAB_FORMAT);
			return -1;
		}
		cJSON_Delete(pre);
		if (!is_header) {
			corrupt(s, 0, "first event is not a session/header");
			return -1;
		}
	}
	struct cerr e;
	if (event_parse(line, len, 0, ev, &e) < 0) {
		s->status = e.cls == CERR_UNSUPPORTED ? SCAN_UNSUPPORTED : SCAN_CORRUPT;
		s->err = e;
		cerr_prefix(&s->err, "header");
		return -1;
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(ev->data, "id");
	if (!pathkey_valid_id(id->valuestring)) {
		event_release(ev);
		corrupt(s, 0, "header has an invalid session id");
		return -1;
	}
	const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(ev->data, "cwd");
	int64_t created = 0;
	json_get_int(cJSON_GetObjectItemCaseSensitive(ev->data, "created_at"), -JSON_MAX_SAFE_INT,
		     JSON_MAX_SAFE_INT, &created);
	s->id = xstrdup(id->valuestring);
	s->cwd = cJSON_IsString(cwd) ? xstrdup(cwd->valuestring) : NULL;
	s->created_at = created;
	s->format = VOCAB_FORMAT;
	return 0;
}

/* Interpret one decoded frame through the sink k. Returns 0, or -1 having
 * set s->status. */
static int interpret(struct scan *s, const struct scan_sink *k, void *ctx, char *content,
		     size_t size, uint64_t offset, struct scan_frame *fr)
{
	size_t bad;
	if (!utf8_valid(content, size, &bad)) {
		corrupt(s, offset, "invalid UTF-8");
		return -1;
	}
	if (size == 0 || content[size - 1] != '\n') {
		corrupt(s, offset, "content does not end with a newline");
		return -1;
	}
	size_t first = k->count(ctx);
	fr->first_event = first;
	fr->first_seq = s->rev.next_seq;
	uint64_t seq = s->rev.next_seq;
	const char *p = content, *end = content + size;
	size_t lines = 0;
	struct cerr unsupported = {0}; /* the first unknown line, if any */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)(nl - p);
		lines++;
		if (len == 0) {
			corrupt(s, offset, "empty line");
			goto fail;
		}
		if (offset == 0 && lines > 1) {
			corrupt(s, 0, "header frame holds more than one line");
			goto fail;
		}
		if (offset == 0) {
			struct event ev;
			if (check_header(s, p, len, &ev) < 0)
				goto fail;
			k->header(ctx, &ev, (size_t)(p - content));
			seq = 1;
			p = nl + 1;
			continue;
		}
		struct cerr e;
		uint64_t got;
		enum vocab_type vt;
		if (k->line(ctx, p, len, (size_t)(p - content), seq, &got, &vt, &e) < 0) {
			if (e.cls != CERR_UNSUPPORTED) {
				s->status = SCAN_CORRUPT;
				s->damage_at = offset;
				s->err = e;
				cerr_prefix(&s->err, "frame at offset %llu", (unsigned long long)offset);
				goto fail;
			}
			/* Integrity first: the rest of the frame must still be
			 * valid lines before the frame counts as merely
			 * unsupported. */
			if (unsupported.cls == CERR_OK)
				unsupported = e;
			if (seq == EVENT_ANY_SEQ)
				goto fail_unsupported; /* no seq to go on from */
			seq++;
			p = nl + 1;
			continue;
		}
		if (vt == VT_SESSION_HEADER) {
			corrupt(s, offset, "session/header after frame 0");
			goto fail;
		}
		if (seq == EVENT_ANY_SEQ) /* a tail's first line sets the seq */
			fr->first_seq = seq = got;
		seq++;
		p = nl + 1;
	}
	if (unsupported.cls != CERR_OK) {
fail_unsupported:
		s->status = SCAN_UNSUPPORTED;
		s->damage_at = offset;
		s->err = unsupported;
		cerr_prefix(&s->err, "frame at offset %llu", (unsigned long long)offset);
		goto fail;
	}
	fr->n_events = k->count(ctx) - first;
	fr->end_seq = seq;
	s->rev.next_seq = seq;
	return 0;
fail:
	k->drop(ctx, first);
	return -1;
}

static void remove_open(struct scan *s, const char *turn)
{
	for (size_t i = s->n_open_turns; i-- > 0;) {
		if (strcmp(s->open_turns[i], turn) == 0) {
			memmove(&s->open_turns[i], &s->open_turns[i + 1],
				(s->n_open_turns - i - 1) * sizeof *s->open_turns);
			s->n_open_turns--;
			return;
		}
	}
}

static void summarize(struct scan *s)
{
	struct strmap calls;
	strmap_init(&calls);
	size_t call_cap = 0, open_cap = 0;
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		const char *id = NULL;
		size_t k;
		switch (ev->vtype) {
		case VT_UNKNOWN:
			s->n_skipped++; /* unknown ignorable event: skipped by readers */
			break;
		case VT_SESSION_HEADER: /* nothing that is open or unmatched */
		case VT_SESSION_META:
		case VT_SESSION_SETTINGS:
		case VT_USER_MESSAGE:
		case VT_REQUEST_PREPARED:
		case VT_ASSISTANT_TEXT:
		case VT_ASSISTANT_REASONING:
		case VT_INTERACTION_REQUEST: {
			/* Their fields are not checked: only well-formed ones count. */
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(ev->data, "call_id");
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(ev->data, "request_id");
			if (cJSON_IsString(c) && cJSON_IsString(r) && strmap_get(&calls, c->valuestring, &k))
				s->calls[k].pending = r->valuestring;
			break;
		}
		case VT_INTERACTION_ANSWER: {
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(ev->data, "request_id");
			for (size_t j = s->n_calls; cJSON_IsString(r) && j-- > 0;)
				if (s->calls[j].pending && strcmp(s->calls[j].pending, r->valuestring) == 0) {
					s->calls[j].pending = NULL;
					break;
				}
			break;
		}
		case VT_STEP_END:
		case VT_BRANCH_REWIND:
		case VT_INPUT_QUEUED:
		case VT_INPUT_DEQUEUED:
			break;
		case VT_TURN_START:
			s->turns++;
			remove_open(s, ev->turn); /* a restarted id counts once */
			if (s->n_open_turns == open_cap) {
				open_cap = open_cap ? open_cap * 2 : 4;
				s->open_turns =
					xreallocarray(s->open_turns, open_cap, sizeof *s->open_turns);
			}
			s->open_turns[s->n_open_turns++] = ev->turn;
			break;
		case VT_TURN_END:
			remove_open(s, ev->turn);
			break;
		case VT_TOOL_CALL:
			id = cJSON_GetObjectItemCaseSensitive(ev->data, "call_id")->valuestring;
			if (s->n_calls == call_cap) {
				call_cap = call_cap ? call_cap * 2 : 8;
				s->calls = xreallocarray(s->calls, call_cap, sizeof *s->calls);
			}
			s->calls[s->n_calls] = (struct scan_call){id, ev->turn, ev->seq, false, false, NULL};
			strmap_put(&calls, id, s->n_calls++);
			break;
		case VT_TOOL_STARTED:
			id = cJSON_GetObjectItemCaseSensitive(ev->data, "call_id")->valuestring;
			if (strmap_get(&calls, id, &k))
				s->calls[k].started = true;
			break;
		case VT_TOOL_RESULT:
			id = cJSON_GetObjectItemCaseSensitive(ev->data, "call_id")->valuestring;
			if (strmap_get(&calls, id, &k))
				s->calls[k].resulted = true;
			break;
		}
	}
	strmap_release(&calls);
}

/* The frame at pos failed (incomplete: it ran out of bytes). Decide between
 * a torn tail and corruption. Below a durable watermark everything is
 * corruption; above it (or, without one, for an incomplete final frame) it
 * is a torn tail unless a complete valid frame follows in the region.
 * p[0..n) holds the file from offset base; pos is relative to p. */
static void tail_or_corrupt(struct scan *s, const struct scan_opts *o, const uint8_t *p, size_t n,
			    uint64_t base, size_t pos, struct frame_codec *fc, bool incomplete,
			    const char *why)
{
	bool wm = o && o->watermark;
	uint64_t at = base + pos, len = base + n;
	size_t where;
	if (wm && at < o->wm_len && incomplete && len < o->wm_len) {
		char msg[128];
		snprintf(msg, sizeof msg, "log is %llu bytes, shorter than its durable watermark of %llu",
			 (unsigned long long)len, (unsigned long long)o->wm_len);
		corrupt(s, at, msg);
	} else if (wm && at < o->wm_len) {
		corrupt(s, at, incomplete ? "incomplete frame below the durable watermark" : why);
	} else if (!wm && !incomplete) {
		corrupt(s, at, why);
	} else if (at == 0) {
		corrupt(s, 0, incomplete ? "incomplete header frame" : why);
	} else if (complete_frame_inside(p, pos + 1, n, fc, &where)) {
		char msg[96];
		snprintf(msg, sizeof msg, "complete frame at offset %llu inside the torn tail",
			 (unsigned long long)(base + where));
		corrupt(s, at, msg);
	} else if (s->status == SCAN_OK) {
		s->status = SCAN_TORN;
	}
}

static void wm_seq_mismatch(struct scan *s, uint64_t at, uint64_t wm_seq)
{
	char msg[128];
	snprintf(msg, sizeof msg, "seq %llu at the durable watermark, where %llu was acknowledged",
		 (unsigned long long)s->rev.next_seq, (unsigned long long)wm_seq);
	corrupt(s, at, msg);
}

void scan_walk(struct scan *s, const uint8_t *p, size_t n, uint64_t base, uint64_t first_seq,
	       const struct scan_opts *o, const struct scan_sink *k, void *ctx)
{
	struct frame_codec *fc = frame_codec_new();
	bool interpreting = true;
	s->rev.len = base + n;
	s->rev.next_seq = first_seq;
	s->status = SCAN_OK;
	size_t pos = 0;
	struct scan_opts none = {0};
	if (o && o->watermark && (!s->head_known || memcmp(o->head, s->head, SHA256_LEN) != 0))
		o = &none; /* another log's watermark: structural rules only */
	bool wm = o && o->watermark;
	s->wm_applied = wm;
	s->wm_len = wm ? o->wm_len : 0;
	uint64_t len = base + n;
	while (pos < n && s->status != SCAN_CORRUPT) {
		uint64_t at = base + pos;
		if (wm && at == o->wm_len && s->rev.next_seq != o->wm_seq &&
		    s->rev.next_seq != EVENT_ANY_SEQ && s->status == SCAN_OK) {
			wm_seq_mismatch(s, at, o->wm_seq);
			break;
		}
		struct frame_info fi;
		enum frame_walk w = frame_walk(p + pos, n - pos, &fi);
		if (w != FRAME_COMPLETE) {
			tail_or_corrupt(s, o, p, n, base, pos, fc, w == FRAME_INCOMPLETE, fi.why);
			break;
		}
		if (wm && at < o->wm_len && at + fi.frame_len > o->wm_len) {
			corrupt(s, at, "frame crosses the durable watermark");
			break;
		}
		const char *why;
		if (!interpreting) { /* integrity only, after "unsupported" */
			char *content = frame_decode(fc, p + pos, &fi, &why);
			if (!content) {
				tail_or_corrupt(s, o, p, n, base, pos, fc, false, why);
				break;
			}
			free(content);
			pos += fi.frame_len;
			continue;
		}
		char *content = k->decode(ctx, fc, p + pos, &fi, &why);
		if (!content) {
			tail_or_corrupt(s, o, p, n, base, pos, fc, false, why);
			break;
		}
		struct scan_frame fr = {.offset = at, .len = fi.frame_len};
		if (interpret(s, k, ctx, content, (size_t)fi.content_size, at, &fr) < 0) {
			if (s->status == SCAN_CORRUPT) {
				if (wm && at >= o->wm_len) {
					/* Above the watermark a bad frame is where the
					 * torn tail starts, not committed damage. */
					s->status = SCAN_OK;
					cerr_clear(&s->err);
					tail_or_corrupt(s, o, p, n, base, pos, fc, false, "");
				}
				break;
			}
			interpreting = false; /* unsupported: keep checking integrity */
			pos += fi.frame_len;
			continue;
		}
		k->frame(ctx, &fr, content);
		s->good_len = at + fi.frame_len;
		pos += fi.frame_len;
	}
	/* The loop checks the seq at the watermark only while bytes follow
	 * it; a watermark at the very end is checked here. */
	if (wm && n > 0 && pos == n && len == o->wm_len && s->status == SCAN_OK &&
	    s->rev.next_seq != o->wm_seq && s->rev.next_seq != EVENT_ANY_SEQ)
		wm_seq_mismatch(s, len, o->wm_seq);
	/* A file that ends (on a frame boundary) before its watermark lost
	 * acknowledged data; its valid prefix is still read above, so the
	 * catalog keeps what can be known. */
	if (wm && len < o->wm_len && s->status != SCAN_CORRUPT) {
		char msg[128];
		snprintf(msg, sizeof msg, "log is %llu bytes, shorter than its durable watermark of %llu",
			 (unsigned long long)len, (unsigned long long)o->wm_len);
		s->status = SCAN_OK; /* not "unsupported" or "torn": damage */
		corrupt(s, len, msg);
	}
	if (len == 0)
		corrupt(s, 0, "empty file");
	if (s->rev.next_seq == EVENT_ANY_SEQ)
		s->rev.next_seq = 0; /* a tail that read no line */
	frame_codec_free(fc);
}

/* scan's sink: every event kept with its tree, every content kept. */
static int keep_line(void *ctx, const char *p, size_t n, size_t at, uint64_t expect,
		     uint64_t *seq, enum vocab_type *vt, struct cerr *e)
{
	struct scan *s = ctx;
	struct event ev;
	(void)at;
	if (event_parse(p, n, expect, &ev, e) < 0)
		return -1;
	*seq = ev.seq;
	*vt = ev.vtype;
	push_event(s, &ev); /* unknown ignorable ones too (kind NULL) */
	return 0;
}

static void keep_header(void *ctx, struct event *ev, size_t at)
{
	(void)at;
	push_event(ctx, ev);
}

static size_t keep_count(void *ctx)
{
	return ((struct scan *)ctx)->n_events;
}

static char *keep_decode(void *ctx, struct frame_codec *fc, const uint8_t *p,
			 const struct frame_info *fi, const char **why)
{
	struct scan *s = ctx;
	char *content = frame_decode(fc, p, fi, why);
	if (content) {
		if (full(s->n_contents))
			s->contents = xreallocarray(s->contents, s->n_contents ? s->n_contents * 2 : 16,
						    sizeof *s->contents);
		s->contents[s->n_contents++] = content;
	}
	return content;
}

static void keep_frame(void *ctx, const struct scan_frame *fr, char *content)
{
	struct scan *s = ctx;
	(void)content;
	if (full(s->n_frames))
		s->frames = xreallocarray(s->frames, s->n_frames ? s->n_frames * 2 : 16,
					  sizeof *s->frames);
	s->frames[s->n_frames++] = *fr;
}

static const struct scan_sink keep_all = {keep_line, keep_header, drop_events_from, keep_count,
					  keep_decode, keep_frame};

struct scan *scan_buffer(const uint8_t *p, size_t n)
{
	return scan_buffer_opts(p, n, NULL);
}

struct scan *scan_buffer_opts(const uint8_t *p, size_t n, const struct scan_opts *o)
{
	struct scan *s = xcalloc(1, sizeof *s);
	s->head_known = scan_head(p, n, s->head);
	scan_walk(s, p, n, 0, 0, o, &keep_all, s);
	summarize(s);
	return s;
}

int scan_fd(int fd, struct scan **out, struct cerr *err)
{
	return scan_fd_opts(fd, NULL, out, err);
}

int scan_read_all(int fd, uint8_t **bytes, size_t *len, struct stat *st, struct cerr *err)
{
	if (fsops->fstat(fd, st) < 0)
		return cerr_set(err, CERR_IO, errno, "cannot stat log");
	size_t n = (size_t)st->st_size;
	uint8_t *p = xmalloc(n ? n : 1);
	ssize_t got = fs_pread_all(fd, p, n, 0);
	if (got < 0) {
		free(p);
		return cerr_set(err, CERR_IO, errno, "cannot read log");
	}
	/* A file that shrank while we read is scanned as what we got. */
	*bytes = p;
	*len = (size_t)got;
	return 0;
}

void scan_set_file(struct scan *s, const struct stat *st)
{
	s->rev.dev = st->st_dev;
	s->rev.ino = st->st_ino;
	s->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

int scan_fd_opts(int fd, const struct scan_opts *o, struct scan **out, struct cerr *err)
{
	struct stat st;
	uint8_t *p;
	size_t n;
	if (scan_read_all(fd, &p, &n, &st, err) < 0)
		return -1;
	struct scan *s = scan_buffer_opts(p, n, o);
	free(p);
	scan_set_file(s, &st);
	*out = s;
	return 0;
}

bool scan_wm_lags(const struct scan *s)
{
	return !s->wm_applied || s->wm_len < s->good_len;
}

bool scan_head(const uint8_t *p, size_t n, uint8_t head[SHA256_LEN])
{
	struct frame_info fi;
	if (!p || frame_walk(p, n, &fi) != FRAME_COMPLETE)
		return false;
	sha256(p, fi.frame_len, head);
	return true;
}

int scan_head_read(int fd, uint8_t **bytes, size_t *len, struct cerr *err)
{
	struct stat st;
	*bytes = NULL;
	*len = 0;
	if (fsops->fstat(fd, &st) < 0)
		return cerr_set(err, CERR_IO, errno, "cannot stat log");
	/* A header frame is small; read more only while it is incomplete. */
	size_t want = 4096, size = (size_t)st.st_size;
	uint8_t *p = NULL;
	for (;;) {
		size_t n = want < size ? want : size;
		p = xrealloc(p, n ? n : 1);
		ssize_t got = fs_pread_all(fd, p, n, 0);
		if (got < 0) {
			free(p);
			return cerr_set(err, CERR_IO, errno, "cannot read log");
		}
		struct frame_info fi;
		enum frame_walk w = frame_walk(p, (size_t)got, &fi);
		if (w == FRAME_COMPLETE) {
			*bytes = p;
			*len = fi.frame_len;
			return 0;
		}
		if (w != FRAME_INCOMPLETE || (size_t)got < n || n == size)
			break;
		want *= 4;
	}
	free(p);
	return 0;
}

int scan_head_fd(int fd, uint8_t head[SHA256_LEN], bool *found, struct cerr *err)
{
	uint8_t *p;
	size_t n;
	if (scan_head_read(fd, &p, &n, err) < 0)
		return -1;
	*found = p != NULL;
	if (p)
		sha256(p, n, head);
	free(p);
	return 0;
}

const char *scan_open_turn(const struct scan *s)
{
	return s->n_open_turns ? s->open_turns[s->n_open_turns - 1] : NULL;
}

void scan_free(struct scan *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_events; i++)
		event_release(&s->events[i]);
	free(s->events);
	free(s->frames);
	for (size_t i = 0; i < s->n_contents; i++)
		free(s->contents[i]);
	free(s->contents);
	free(s->open_turns);
	free(s->calls);
	free(s->id);
	free(s->cwd);
	free(s);
}
