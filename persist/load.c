/* load.c — the compact load: decoded frames in one buffer, a 32-byte
 * index per event, trees only on demand; and the tail read from the end. */
#include "persist/load.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/fsops.h"
#include "persist/scan_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

_Static_assert(sizeof(struct load_event) == 32, "an index entry is 32 bytes");
_Static_assert(EVENT_MAX_LINE < (1u << 21), "a line's length fits load_event.len");
_Static_assert(FRAME_MAX_CONTENT <= UINT32_MAX, "an offset in a frame fits load_event.off");
_Static_assert(VT_UNKNOWN < 256, "a type fits load_event.type");

struct turn {
	char *id;
	size_t n;
	uint64_t hash;
};

struct load {
	struct scan st;           /* status fields; its arrays stay empty */
	char *buf;                /* decoded frames back to back */
	size_t buf_len, buf_cap;
	struct load_frame *frames;
	size_t n_frames, cap_frames;
	struct load_event *ev;
	size_t n_ev, cap_ev;
	struct turn *turns;       /* turns[k - 1] is turn k */
	size_t n_turns, cap_turns;
	uint32_t *slots;          /* open addressing: turn numbers, 0 empty */
	size_t n_slots;
	uint32_t last_turn;       /* most events share their predecessor's turn */
	size_t cur_content;       /* buf offset of the frame being interpreted */
	bool tail;
	struct json_check jc;     /* only while loading */
};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static void slots_grow(struct load *l)
{
	size_t n = l->n_slots ? l->n_slots * 2 : 64;
	uint32_t *slots = xcalloc(n, sizeof *slots);
	for (size_t k = 1; k <= l->n_turns; k++) {
		size_t i = l->turns[k - 1].hash & (n - 1);
		while (slots[i])
			i = (i + 1) & (n - 1);
		slots[i] = (uint32_t)k;
	}
	free(l->slots);
	l->slots = slots;
	l->n_slots = n;
}

/* The number of turn id s[0..n), added when new. */
static uint32_t turn_intern(struct load *l, const char *s, size_t n)
{
	if (l->last_turn) {
		const struct turn *t = &l->turns[l->last_turn - 1];
		if (t->n == n && memcmp(t->id, s, n) == 0)
			return l->last_turn;
	}
	if (2 * (l->n_turns + 1) > l->n_slots)
		slots_grow(l);
	uint64_t h = fnv(s, n);
	size_t i = h & (l->n_slots - 1);
	for (; l->slots[i]; i = (i + 1) & (l->n_slots - 1)) {
		const struct turn *t = &l->turns[l->slots[i] - 1];
		if (t->hash == h && t->n == n && memcmp(t->id, s, n) == 0)
			return l->last_turn = l->slots[i];
	}
	if (l->n_turns == l->cap_turns) {
		l->cap_turns = l->cap_turns ? l->cap_turns * 2 : 16;
		l->turns = xreallocarray(l->turns, l->cap_turns, sizeof *l->turns);
	}
	l->turns[l->n_turns++] = (struct turn){xstrndup(s, n), n, h};
	l->slots[i] = (uint32_t)l->n_turns;
	return l->last_turn = (uint32_t)l->n_turns;
}

static struct load_event *push(struct load *l)
{
	if (l->n_ev == l->cap_ev) {
		l->cap_ev = l->cap_ev ? l->cap_ev * 2 : 64;
		l->ev = xreallocarray(l->ev, l->cap_ev, sizeof *l->ev);
	}
	return &l->ev[l->n_ev++];
}

/* ---- the sink scan_walk fills ---- */

static int sink_line(void *ctx, const char *p, size_t n, size_t at, uint64_t expect,
		     uint64_t *seq, enum vocab_type *vt, struct cerr *e)
{
	struct load *l = ctx;
	struct event_ref r;
	if (event_check(&l->jc, p, n, expect, &r, e) < 0)
		return -1;
	uint32_t turn = 0;
	if (r.turn.kind) {
		char dec[6 * TURN_ID_MAX + 1];
		if (r.turn.esc)
			turn = turn_intern(l, dec, json_check_unescape(&r.turn, dec));
		else
			turn = turn_intern(l, r.turn.p, r.turn.n);
	}
	*push(l) = (struct load_event){.seq = r.seq, .t = r.t, .frame = (uint32_t)l->n_frames,
				       .off = (uint32_t)at, .len = (uint32_t)n,
				       .type = (uint32_t)r.vtype, .ignorable = r.ignorable,
				       .turn = turn};
	*seq = r.seq;
	*vt = r.vtype;
	return 0;
}

static void sink_header(void *ctx, struct event *ev, size_t at)
{
	struct load *l = ctx;
	*push(l) = (struct load_event){.seq = ev->seq, .t = ev->t, .frame = (uint32_t)l->n_frames,
				       .off = (uint32_t)at, .len = (uint32_t)ev->line_len,
				       .type = VT_SESSION_HEADER};
	event_release(ev);
}

static void sink_drop(void *ctx, size_t from)
{
	((struct load *)ctx)->n_ev = from;
}

static size_t sink_count(void *ctx)
{
	return ((struct load *)ctx)->n_ev;
}

static char *sink_decode(void *ctx, struct frame_codec *fc, const uint8_t *p,
			 const struct frame_info *fi, const char **why)
{
	struct load *l = ctx;
	if (fi->content_size > FRAME_MAX_CONTENT) {
		*why = "frame content larger than the maximum";
		return NULL;
	}
	size_t size = (size_t)fi->content_size;
	if (l->buf_len + size + 1 > l->buf_cap) { /* not reached: sized beforehand */
		l->buf_cap = (l->buf_len + size + 1) * 2;
		l->buf = xrealloc(l->buf, l->buf_cap);
	}
	char *out = l->buf + l->buf_len;
	if (frame_decode_into(fc, p, fi, out, why) < 0)
		return NULL;
	l->cur_content = l->buf_len;
	l->buf_len += size;
	return out;
}

static void sink_frame(void *ctx, const struct scan_frame *fr, char *content)
{
	struct load *l = ctx;
	(void)content;
	if (l->n_frames == l->cap_frames) {
		l->cap_frames = l->cap_frames ? l->cap_frames * 2 : 64;
		l->frames = xreallocarray(l->frames, l->cap_frames, sizeof *l->frames);
	}
	l->frames[l->n_frames++] = (struct load_frame){
		.offset = fr->offset, .content = l->cur_content, .len = (uint32_t)fr->len,
		.content_len = (uint32_t)(l->buf_len - l->cur_content),
		.first_event = fr->first_event, .n_events = fr->n_events};
}

static const struct scan_sink index_all = {sink_line, sink_header, sink_drop, sink_count,
					   sink_decode, sink_frame};

/* ---- loading ---- */

/* The decoded size of the complete frames p[0..n) starts with: the buffer
 * a load needs, known before decoding anything. */
static size_t content_total(const uint8_t *p, size_t n)
{
	size_t pos = 0, total = 0;
	struct frame_info fi;
	while (pos < n && frame_walk(p + pos, n - pos, &fi) == FRAME_COMPLETE) {
		total += (size_t)fi.content_size;
		pos += fi.frame_len;
	}
	return total;
}

static struct load *load_new(void)
{
	struct load *l = xcalloc(1, sizeof *l);
	json_check_init(&l->jc, "data");
	return l;
}

/* Walk p[0..n) (the file from base) into l, with a buffer sized for it. */
static void load_walk(struct load *l, const uint8_t *p, size_t n, uint64_t base,
		      uint64_t first_seq, const struct scan_opts *o)
{
	size_t need = l->buf_len + content_total(p, n) + 1;
	if (need > l->buf_cap) {
		l->buf = xrealloc(l->buf, need);
		l->buf_cap = need;
	}
	scan_walk(&l->st, p, n, base, first_seq, o, &index_all, l);
}

/* Done loading: drop the checker and the slack of the arrays. */
static void load_finish(struct load *l)
{
	json_check_release(&l->jc);
	if (l->cap_ev > l->n_ev) {
		l->cap_ev = l->n_ev;
		l->ev = l->n_ev ? xreallocarray(l->ev, l->n_ev, sizeof *l->ev) : (free(l->ev), NULL);
	}
	if (l->cap_frames > l->n_frames) {
		l->cap_frames = l->n_frames;
		l->frames = l->n_frames ? xreallocarray(l->frames, l->n_frames, sizeof *l->frames)
					: (free(l->frames), NULL);
	}
	free(l->slots); /* turn lookups are done */
	l->slots = NULL;
	l->n_slots = 0;
}

struct load *load_buffer(const uint8_t *p, size_t n, const struct scan_opts *o)
{
	struct load *l = load_new();
	l->st.head_known = scan_head(p, n, l->st.head);
	load_walk(l, p, n, 0, 0, o);
	load_finish(l);
	return l;
}

int load_fd(int fd, const struct scan_opts *o, struct load **out, struct cerr *err)
{
	struct stat st;
	uint8_t *p;
	size_t n;
	if (scan_read_all(fd, &p, &n, &st, err) < 0)
		return -1;
	struct load *l = load_buffer(p, n, o);
	free(p);
	scan_set_file(&l->st, &st);
	*out = l;
	return 0;
}

void load_free(struct load *l)
{
	if (!l)
		return;
	json_check_release(&l->jc);
	free(l->buf);
	free(l->frames);
	free(l->ev);
	for (size_t k = 0; k < l->n_turns; k++)
		free(l->turns[k].id);
	free(l->turns);
	free(l->slots);
	free(l->st.id);
	free(l->st.cwd);
	free(l);
}

/* ---- the tail ---- */

static const uint8_t zstd_magic[4] = {0x28, 0xB5, 0x2F, 0xFD};

struct cand {
	size_t at;  /* a magic number in the window */
	size_t end; /* where walking whole frames from it stops */
};

static int cand_find(const void *key, const void *elem)
{
	size_t at = *(const size_t *)key, c = ((const struct cand *)elem)->at;
	return (at > c) - (at < c);
}

/* Frame-start candidates of w[0..n) with the end each one's chain of
 * complete frames reaches; walked from the last so a chain stops at the
 * first candidate it lands on whose end is known. *out is the caller's. */
static size_t candidates(const uint8_t *w, size_t n, struct cand **out)
{
	struct cand *c = NULL;
	size_t nc = 0, cap = 0;
	for (size_t q = 0; q + 4 <= n;) {
		const uint8_t *m = memmem(w + q, n - q, zstd_magic, 4);
		if (!m)
			break;
		if (nc == cap) {
			cap = cap ? cap * 2 : 64;
			c = xreallocarray(c, cap, sizeof *c);
		}
		c[nc++] = (struct cand){(size_t)(m - w), 0};
		q = (size_t)(m - w) + 1;
	}
	for (size_t i = nc; i-- > 0;) {
		size_t pos = c[i].at;
		for (;;) {
			struct frame_info fi;
			if (frame_walk(w + pos, n - pos, &fi) != FRAME_COMPLETE)
				break;
			pos += fi.frame_len;
			if (pos >= n)
				break;
			const struct cand *known = bsearch(&pos, c + i + 1, nc - i - 1, sizeof *c, cand_find);
			if (known) {
				pos = known->end;
				break;
			}
		}
		c[i].end = pos;
	}
	*out = c;
	return nc;
}

/* The end most candidates reach (ties: the furthest). */
static size_t common_end(const struct cand *c, size_t nc)
{
	size_t best = 0, best_n = 0;
	for (size_t i = 0; i < nc; i++) {
		size_t k = 0;
		for (size_t j = 0; j < nc; j++)
			k += c[j].end == c[i].end;
		if (k > best_n || (k == best_n && c[i].end > best)) {
			best = c[i].end;
			best_n = k;
		}
	}
	return best;
}

/* Validate frame 0 alone into l's header fields, *head_len its length:
 * 0, -1 when the header itself is damaged (l's status says how), -2 with
 * CERR_IO in err. */
static int tail_header(struct load *l, int fd, size_t *head_len, struct cerr *err)
{
	uint8_t *h;
	size_t hn;
	if (scan_head_read(fd, &h, &hn, err) < 0)
		return -2;
	*head_len = hn;
	struct load *hl = load_new();
	if (h) {
		hl->st.head_known = scan_head(h, hn, hl->st.head);
		load_walk(hl, h, hn, 0, 0, NULL);
	} else {
		hl->st.status = SCAN_CORRUPT;
		cerr_set(&hl->st.err, CERR_CORRUPT, 0, "frame at offset 0: incomplete header frame");
	}
	free(h);
	l->st.head_known = hl->st.head_known;
	memcpy(l->st.head, hl->st.head, sizeof l->st.head);
	int r = 0;
	if (hl->st.status != SCAN_OK) {
		l->st.status = hl->st.status;
		l->st.err = hl->st.err;
		l->st.damage_at = hl->st.damage_at;
		l->st.format = hl->st.format;
		r = -1;
	} else {
		l->st.id = hl->st.id;
		l->st.cwd = hl->st.cwd;
		l->st.created_at = hl->st.created_at;
		l->st.format = hl->st.format;
		hl->st.id = hl->st.cwd = NULL;
	}
	load_free(hl);
	return r;
}

/* Load file bytes w[0..n) (from offset base to the end) starting at the
 * frame start `at`. */
static void tail_walk(struct load *l, const uint8_t *w, size_t n, uint64_t base, size_t at,
		      const struct scan_opts *o)
{
	l->buf_len = l->n_frames = l->n_ev = 0;
	l->last_turn = 0;
	load_walk(l, w + at, n - at, base + at, EVENT_ANY_SEQ, o);
}

/* load_tail and load_last: the window starts at win bytes. */
static int tail_from(int fd, size_t min_events, size_t win, const struct scan_opts *o,
		     struct load **out, struct cerr *err)
{
	struct stat st;
	if (fsops->fstat(fd, &st) < 0)
		return cerr_set(err, CERR_IO, errno, "cannot stat log");
	uint64_t size = (uint64_t)st.st_size;
	struct load *l = load_new();
	size_t head_len = 0;
	int h = tail_header(l, fd, &head_len, err);
	if (h == -2) {
		load_free(l);
		return -1;
	}
	uint8_t *w = NULL;
	while (h == 0) {
		if (win >= size || size - win <= head_len) {
			/* The window reaches the header: read it all. */
			free(w);
			load_free(l);
			return load_fd(fd, o, out, err);
		}
		uint64_t base = size - win;
		w = xrealloc(w, win);
		ssize_t got = fs_pread_all(fd, w, win, (off_t)base);
		if (got < 0) {
			free(w);
			load_free(l);
			return cerr_set(err, CERR_IO, errno, "cannot read log");
		}
		size_t n = (size_t)got;
		struct cand *c;
		size_t nc = candidates(w, n, &c), end = common_end(c, nc);
		bool done = false;
		for (size_t i = 0; i < nc && !done; i++) {
			if (c[i].end != end)
				continue;
			tail_walk(l, w, n, base, c[i].at, o);
			/* A false start fails at once; a true one reads on. */
			bool first_failed = l->st.status == SCAN_CORRUPT &&
					    l->st.damage_at == base + c[i].at && l->n_frames == 0;
			done = !first_failed;
		}
		free(c);
		if (done && l->n_ev >= min_events)
			break;
		/* Nothing found may only mean that the window starts inside a
		 * frame longer than it: widen it (at frame 0 it becomes a full
		 * load, which classifies whatever is there). */
		win *= 2;
	}
	free(w);
	if (h != 0)
		l->st.rev.len = size; /* nothing walked: the header is damaged */
	l->tail = true;
	scan_set_file(&l->st, &st);
	load_finish(l);
	*out = l;
	return 0;
}

int load_tail(int fd, size_t min_events, const struct scan_opts *o, struct load **out,
	      struct cerr *err)
{
	/* About 256 bytes of file per event to begin with, at least 64 KiB. */
	return tail_from(fd, min_events, min_events < 256 ? 65536 : min_events * 256, o, out, err);
}

int load_last(int fd, const struct scan_opts *o, struct load **out, struct cerr *err)
{
	return tail_from(fd, 1, 4096, o, out, err);
}

/* ---- reading a load ---- */

const struct scan *load_scan(const struct load *l)
{
	return &l->st;
}

struct scan *load_scan_copy(const struct load *l)
{
	struct scan *s = xcalloc(1, sizeof *s);
	*s = l->st;
	s->id = l->st.id ? xstrdup(l->st.id) : NULL;
	s->cwd = l->st.cwd ? xstrdup(l->st.cwd) : NULL;
	return s;
}

size_t load_count(const struct load *l)
{
	return l->n_ev;
}

const struct load_event *load_event(const struct load *l, size_t i)
{
	return &l->ev[i];
}

const char *load_line(const struct load *l, size_t i, size_t *len)
{
	const struct load_event *e = &l->ev[i];
	*len = e->len;
	return l->buf + l->frames[e->frame].content + e->off;
}

cJSON *load_json(const struct load *l, size_t i)
{
	size_t n;
	const char *line = load_line(l, i, &n);
	/* Checked strictly when loaded (event_check): parsed without the
	 * checks again, into the tree a strict parse gives. */
	return cJSON_ParseWithLength(line, n);
}

const char *load_turn(const struct load *l, size_t i)
{
	return load_turn_name(l, l->ev[i].turn);
}

size_t load_n_turns(const struct load *l)
{
	return l->n_turns;
}

const char *load_turn_name(const struct load *l, uint32_t k)
{
	return k && k <= l->n_turns ? l->turns[k - 1].id : NULL;
}

size_t load_n_frames(const struct load *l)
{
	return l->n_frames;
}

const struct load_frame *load_frame(const struct load *l, size_t k)
{
	return &l->frames[k];
}

bool load_is_tail(const struct load *l)
{
	return l->tail;
}

size_t load_memory(const struct load *l)
{
	size_t m = sizeof *l + l->buf_cap + l->cap_frames * sizeof *l->frames +
		   l->cap_ev * sizeof *l->ev + l->cap_turns * sizeof *l->turns +
		   l->n_slots * sizeof *l->slots;
	for (size_t k = 0; k < l->n_turns; k++)
		m += l->turns[k].n + 1;
	return m;
}
