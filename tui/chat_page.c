/* chat_page.c — a long session on the screen without all of it in memory.
 *
 * Opening: the end of the log is read first (host_page_read, HOST_PAGE_END:
 * a few frames, whatever the log's length) and shown at once, while the host
 * opens the session, which reads it whole. The host's model of it is fed
 * with a window of turns (CHAT_WINDOW_TURNS), so it holds the end only;
 * once the session is ready it replaces the preview, the view at the end
 * either way. A session shown view-only is read the same way.
 *
 * Paging: when the view reaches the first turn held and the log has
 * earlier ones, the log's end is read again with PAGE_EVENTS more events
 * and the model rebuilt from it; the session's own facts (the queue, the
 * title, the settings) move over from the model it replaces, and the
 * view stays on the turn it showed. Only while nothing changes the log:
 * no turn running and nothing unsaved, and the read must end at the last
 * seq shown, or it is dropped and asked again later. The cost is that of
 * what is read, never of the whole log, and it is paid on a worker: the
 * model is built there from the page, and the loop only swaps it in. A
 * page that finds the log damaged is refused with the host's classified
 * error, said on the status line. */
#include "tui/chat_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

/* Events read at open: more than a screen of turns. */
#define PREVIEW_EVENTS 400
/* Events read in addition to those held, per page back. */
#define PAGE_EVENTS 2000

/* A model of what p holds (a tail, or all of it), made on the worker
 * that read it (host_page_read): the loop only swaps it in. */
static void *from_page(void *ctx, const char *id, const struct host_page *p)
{
	(void)ctx;
	struct transcript *tr = transcript_new(id);
	bool first = true;
	for (size_t i = 0; i < host_page_count(p); i++) {
		struct host_page_event ev;
		cJSON *line = host_page_event(p, i, &ev);
		if (ev.type != VT_UNKNOWN && ev.type != VT_SESSION_HEADER) {
			if (first && host_page_is_tail(p))
				transcript_begin_at(tr, ev.seq);
			first = false;
			transcript_apply_event(tr, ev.type, ev.turn, ev.seq, ev.t_ms, ev.data);
		}
		cJSON_Delete(line);
	}
	return tr;
}

static void preview_done(void *ctx, void *made, const struct cerr *err, bool canceled)
{
	(void)err;
	(void)canceled;
	struct chat *c = ctx;
	struct transcript *tr = made;
	c->page_req = NULL;
	/* The session opened first (or failed, or the screen closes): the
	 * preview has nothing to add. */
	if (tr && c->phase == CHAT_OPENING) {
		transcript_free(c->tr);
		c->tr = tr;
		tr = NULL;
		chatview_reset(c);
		c->follow = true;
		c->selected = false;
		chat_to(c, CHAT_PREVIEW);
		if (c->ui)
			uiloop_dirty(c->ui);
	}
	transcript_free(tr);
}

void chat_page_preview(struct chat *c, const char *id)
{
	struct cerr err;
	snprintf(c->id, sizeof c->id, "%s", id);
	/* Best effort (only an undamaged end is worth showing): without it
	 * the screen waits for the open. */
	(void)host_page_read(c->d.host, id, HOST_PAGE_END, PREVIEW_EVENTS, from_page, preview_done, c,
			     &c->page_req, &err);
}

/* Nothing but the log changes the model while the page is read. */
static bool quiet(struct chat *c)
{
	struct transcript_state st;
	transcript_state(c->tr, &st);
	if (c->phase == CHAT_VIEW_ONLY)
		return true;
	return c->phase == CHAT_READY && !st.unsaved && host_state(c->d.host, c->id) == HOST_IDLE;
}

static void page_done(void *ctx, void *made, const struct cerr *err, bool canceled)
{
	struct chat *c = ctx;
	struct transcript *nt = made;
	c->page_req = NULL;
	if (!nt || c->phase == CHAT_CLOSING) {
		if (!nt && err && c->phase != CHAT_CLOSING)
			chat_sayf(c, true, "cannot read earlier turns: %s", err->msg);
		transcript_free(nt);
		return;
	}
	if (!quiet(c) || transcript_last_seq(nt) != transcript_last_seq(c->tr) ||
	    transcript_first_seq(nt) >= transcript_first_seq(c->tr)) {
		transcript_free(nt);
		chat_sayf(c, false, "earlier turns: scroll up again to load them");
		return;
	}
	/* The turn at the top of the view, found again in the new model. */
	const struct transcript_turn *top = transcript_turn(c->tr, c->top_turn);
	char *anchor = top ? xstrdup(transcript_turn_id(top)) : NULL;
	size_t line = c->top_line;
	transcript_adopt_session(nt, c->tr);
	transcript_free(c->tr);
	c->tr = nt;
	chatview_reset(c);
	c->selected = false;
	c->follow = true;
	for (size_t k = transcript_end(nt); anchor && k-- > transcript_dropped(nt);) {
		if (strcmp(transcript_turn_id(transcript_turn(nt, k)), anchor) == 0) {
			c->follow = false;
			c->top_turn = k;
			c->top_line = line;
			break;
		}
	}
	free(anchor);
	chat_sayf(c, false, "%s", transcript_has_earlier(nt) ? "earlier turns loaded" :
							       "earlier turns loaded: the whole session");
	if (c->ui)
		uiloop_dirty(c->ui);
}

void chat_page_earlier(struct chat *c)
{
	/* A preview (or what a failed open left) is not paged: only a
	 * session shown for good is. */
	if (c->page_req || (c->phase != CHAT_READY && c->phase != CHAT_VIEW_ONLY) ||
	    !transcript_has_earlier(c->tr))
		return;
	if (!quiet(c)) {
		chat_sayf(c, false, "earlier turns load once the turn has ended");
		return;
	}
	uint64_t first = transcript_first_seq(c->tr), last = transcript_last_seq(c->tr);
	size_t held = last >= first && first ? (size_t)(last - first + 1) : 0;
	struct cerr err;
	if (host_page_read(c->d.host, c->id, HOST_PAGE_EARLIER, held + PAGE_EVENTS, from_page,
			   page_done, c, &c->page_req, &err) < 0) {
		chat_sayf(c, true, "cannot read earlier turns: %s", err.msg);
		return;
	}
	chat_sayf(c, false, "loading earlier turns...");
}

static void viewed(void *ctx, void *made, const struct cerr *err, bool canceled)
{
	struct chat *c = ctx;
	if (!made) {
		if (!canceled && c->phase != CHAT_CLOSING)
			chat_failed(c, err);
		return;
	}
	transcript_free(c->loading);
	c->loading = made;
	char id[sizeof c->id]; /* chat_view_only copies it into c->id */
	snprintf(id, sizeof id, "%s", c->id);
	chat_view_only(c, id, &c->page_why);
}

void chat_page_view_only(struct chat *c, const char *id, const struct cerr *why)
{
	snprintf(c->id, sizeof c->id, "%s", id);
	c->page_why = *why;
	struct cerr err;
	/* Damaged: read whole, shown as far as it is valid (a tail says
	 * nothing of damage before it). */
	if (host_page_read(c->d.host, id, HOST_PAGE_VALID, why->cls == CERR_LOCKED ? PREVIEW_EVENTS : 0,
			   from_page, viewed, c, NULL, &err) < 0)
		chat_failed(c, &err);
}
