/* support_logbytes.c — logs made in memory, and load versus scan (see
 * support_logbytes.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/support_logbytes.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/load.h"
#include "persist/scan.h"

void lbytes_init(struct logbytes *l)
{
	memset(l, 0, sizeof *l);
	lbytes_event(l, "session/header", NULL,
		     "{\"format\":1,\"id\":\"" LB_SID "\",\"created_at\":1700000000000,\"cwd\":\"/w\"}");
	lbytes_commit(l);
}

void lbytes_release(struct logbytes *l)
{
	buf_release(&l->bytes);
	buf_release(&l->batch);
	free(l->frame_at);
}

void lbytes_event(struct logbytes *l, const char *type, const char *turn, const char *data)
{
	cJSON *d = NULL;
	if (data) {
		const char *why;
		d = json_parse_strict(data, strlen(data), &why);
		if (!d)
			fail_msg("bad test data %s: %s", data, why);
	}
	uint64_t seq = l->seq++;
	event_format(&l->batch, seq, 1700000000000LL + (int64_t)seq, type, turn, false, d);
	cJSON_Delete(d);
}

void lbytes_raw(struct logbytes *l, const char *line)
{
	buf_adds(&l->batch, line);
	buf_addc(&l->batch, '\n');
	l->seq++;
}

void lbytes_commit(struct logbytes *l)
{
	struct frame_codec *fc = frame_codec_new();
	l->frame_at = xreallocarray(l->frame_at, l->n_frames + 1, sizeof *l->frame_at);
	l->frame_at[l->n_frames++] = l->bytes.len;
	assert_int_equal(frame_encode(fc, l->batch.p ? l->batch.p : "", l->batch.len, &l->bytes), 0);
	frame_codec_free(fc);
	buf_reset(&l->batch);
}

void assert_same_events(const struct load *ld, size_t from, const struct scan *sc, size_t sfrom,
			size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		const struct load_event *e = load_event(ld, from + i);
		const struct event *r = &sc->events[sfrom + i];
		size_t len;
		const char *line = load_line(ld, from + i, &len);
		if (e->seq != r->seq || e->type != (unsigned)r->vtype || len != r->line_len ||
		    memcmp(line, r->line, len) != 0 || e->ignorable != r->ignorable ||
		    (load_turn(ld, from + i) == NULL) != (r->turn == NULL) ||
		    (r->turn && strcmp(load_turn(ld, from + i), r->turn) != 0))
			fail_msg("%s: event %zu differs from the scan's event %zu", what, from + i,
				 sfrom + i);
	}
}

void assert_load_is_scan(const struct load *ld, const struct scan *sc, const char *what)
{
	const struct scan *s = load_scan(ld);
	if (s->status != sc->status || s->err.cls != sc->err.cls || s->good_len != sc->good_len ||
	    s->damage_at != sc->damage_at || !revision_same(&s->rev, &sc->rev) ||
	    s->wm_applied != sc->wm_applied || s->head_known != sc->head_known ||
	    load_count(ld) != sc->n_events || load_n_frames(ld) != sc->n_frames)
		fail_msg("%s: load %s at %llu (%s), %zu events; scan %s at %llu (%s), %zu events",
			 what, scan_status_name(s->status), (unsigned long long)s->damage_at,
			 s->err.msg, load_count(ld), scan_status_name(sc->status),
			 (unsigned long long)sc->damage_at, sc->err.msg, sc->n_events);
	if ((s->id == NULL) != (sc->id == NULL) || (s->id && strcmp(s->id, sc->id) != 0) ||
	    s->created_at != sc->created_at || s->format != sc->format)
		fail_msg("%s: header fields differ", what);
	assert_same_events(ld, 0, sc, 0, sc->n_events, what);
	for (size_t k = 0; k < sc->n_frames; k++) {
		const struct load_frame *f = load_frame(ld, k);
		if (f->offset != sc->frames[k].offset || f->len != sc->frames[k].len ||
		    f->first_event != sc->frames[k].first_event ||
		    f->n_events != sc->frames[k].n_events)
			fail_msg("%s: frame %zu differs", what, k);
	}
}
