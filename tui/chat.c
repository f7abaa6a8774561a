/* chat.c — the chat screen's life: the terminal taken and given back, the
 * sink applied, the session shown, the draft saved (chat.h). Keys are
 * chat_keys.c's, the frame chatview.c's. */
#include "tui/chat_int.h"

#include <assert.h>
#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"


void chat_to(struct chat *c, enum chat_phase to)
{
	assert(chat_phase_allows(c->phase, to));
	if (to == CHAT_CLOSING)
		c->closed_in = c->phase;
	c->phase = to;
}

void chat_mode_to(struct chat *c, enum chat_mode m)
{
	assert((unsigned)m < CHAT_MODE_COUNT);
	c->mode = m;
}

void chat_sayf(struct chat *c, bool error, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->note, sizeof c->note, fmt, ap);
	va_end(ap);
	c->note_error = error;
	if (c->ui)
		uiloop_dirty(c->ui);
}

void chat_say(struct chat *c, bool error, const char *msg)
{
	chat_sayf(c, error, "%s", msg);
}

/* ---- the draft ---- */

#define DRAFT_DELAY_MS 700 /* after the last edit; typing never waits on it */

static void save_draft(struct chat *c)
{
	size_t n;
	char *text = composer_text(c->comp, &n);
	if (c->draft_saved && strcmp(text, c->draft_saved) == 0) {
		free(text);
		return;
	}
	struct cerr err;
	if (host_save_draft(c->d.host, c->cwd, text, NULL, NULL, &err) < 0) {
		free(text);
		return; /* closing: the draft stays as last saved */
	}
	free(c->draft_saved);
	c->draft_saved = text;
}

static void draft_cb(uv_timer_t *t)
{
	save_draft(t->data);
}

void chat_draft_touch(struct chat *c)
{
	size_t n;
	char *text = composer_text(c->comp, &n);
	bool changed = !c->draft_saved || strcmp(text, c->draft_saved) != 0;
	free(text);
	if (changed)
		uv_timer_start(&c->draft_timer, draft_cb, DRAFT_DELAY_MS, 0);
}

/* ---- the sink ---- */

static void keep_last_answer(struct chat *c)
{
	for (size_t k = transcript_end(c->tr); k-- > transcript_dropped(c->tr);) {
		const struct transcript_turn *t = transcript_turn(c->tr, k);
		for (size_t i = transcript_turn_blocks(t); i-- > 0;) {
			const struct transcript_block *b = transcript_turn_block(t, i);
			size_t n;
			const char *s = transcript_block_text(b, &n);
			if (transcript_block_kind(b) == TR_TEXT && s && n) {
				free(c->last_answer);
				c->last_answer = xstrdup(s);
				return;
			}
		}
	}
}

void chat_give_back(struct chat *c, const char *text, const char *why)
{
	if (composer_edited(c->comp) || !composer_empty(c->comp)) {
		composer_history_add(c->comp, text, strlen(text));
		chat_sayf(c, true, "not sent (in history: Up): %s", why);
	} else {
		composer_restore(c->comp, text, strlen(text));
		chat_sayf(c, true, "not sent: %s", why); /* the composer shows it */
	}
	chat_draft_touch(c);
}

/* A prompt whose turn never started (its save failed: the session is
 * unsaved, the disk full, ...) is not in the log: it is given back. */
static void give_back(struct chat *c, const cJSON *done)
{
	const cJSON *o = cJSON_GetObjectItem(done, "outcome");
	const cJSON *text = cJSON_GetObjectItem(done, "text");
	if (!cJSON_IsString(o) || strcmp(o->valuestring, "not_started") != 0 ||
	    !cJSON_IsString(text) || cJSON_GetObjectItem(done, "input_id"))
		return; /* started (in the log), or queued input: it stays queued */
	const cJSON *msg = cJSON_GetObjectItem(cJSON_GetObjectItem(done, "error"), "message");
	chat_give_back(c, text->valuestring, cJSON_IsString(msg) ? msg->valuestring : "its save failed");
}

static void ring(struct chat *c, const char *why)
{
	/* Only when nobody typed for a while: someone watching needs no bell. */
	if (clock_unix_ms() - c->last_key_ms <= 5000)
		return;
	if (c->ringer == TTY_BELL_BEL) {
		tty_write(c->tty, "\a", 1);
	} else if (c->ringer == TTY_BELL_OSC9) {
		char osc[160]; /* why is a constant of ours: nothing to make safe */
		int n = snprintf(osc, sizeof osc, "\033]9;cairn: %s\a", why);
		tty_write(c->tty, osc, (size_t)n);
	}
}

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	(void)s;
	struct chat *c = ctx;
	if (transcript_apply_sink(c->tr, it, clock_unix_ms()) && c->ui)
		uiloop_dirty(c->ui);
	if (c->phase == CHAT_CLOSING) {
		if (it->kind == SINK_MARKER && it->marker == SINK_MARKER_TURN_DONE) {
			struct cerr err;
			keep_last_answer(c);
			(void)host_applied(c->d.host, it, &err); /* nobody to tell: the screen is gone */
		}
		return;
	}
	if (it->kind == SINK_NOTICE && it->notice == SINK_NOTICE_INTERACTION) {
		c->asked_at_batch = c->batch;
		ring(c, "a tool call waits for your approval");
	} else if (it->kind == SINK_NOTICE && it->notice == SINK_NOTICE_UNSAVED) {
		chat_sayf(c, true, "a save failed: the session is unsaved (/save retries)");
	} else if (it->kind == SINK_MARKER && it->marker == SINK_MARKER_TURN_DONE) {
		/* Everything before it is applied to the model: settle. */
		struct cerr err;
		keep_last_answer(c);
		give_back(c, it->data);
		if (host_applied(c->d.host, it, &err) < 0)
			chat_sayf(c, true, "%s", err.msg);
		ring(c, "the turn has ended");
	}
}

/* ---- life ---- */

static void draw_cb(void *ctx)
{
	chatview_draw(ctx);
}

static void signal_cb(void *ctx, int signum)
{
	struct chat *c = ctx;
	if (signum == SIGINT)
		chat_interrupt(c);
	else
		chat_quit(c); /* SIGTERM, SIGHUP: drain and go */
}

struct chat *chat_new(const struct chat_deps *d)
{
	struct chat *c = xcalloc(1, sizeof *c);
	c->d = *d;
	c->cwd = d->cwd ? xstrdup(d->cwd) : NULL;
	uv_timer_init(d->loop, &c->draft_timer);
	c->draft_timer.data = c;
	uv_timer_init(d->loop, &c->paste_timer);
	c->paste_timer.data = c;
	c->tr = transcript_new("");
	c->comp = composer_new();
	if (d->draft && *d->draft) {
		composer_set(c->comp, d->draft, strlen(d->draft));
		c->draft_saved = xstrdup(d->draft);
	}
	c->kd = keydec_new();
	c->follow = true;
	c->ringer = d->ringer;
	buf_init(&c->typed);
	struct uiloop_hooks hk = {chat_keys_cb, draw_cb, signal_cb, c};
	c->ui = uiloop_new(d->loop, &hk);
	return c;
}

static int code_of(const char *cap, void *arg)
{
	(void)arg;
	char *s = tigetstr(cap);
	if (!s || s == (char *)-1)
		return 0;
	return key_defined(s);
}

int chat_start(struct chat *c, struct cerr *err)
{
	if (!(c->tty = tty_open(0, 1, err)))
		return -1;
	keydec_bind_terminfo(c->kd, code_of, NULL);
	/* What was typed before the screen came first, in order. */
	size_t n;
	const char *ahead = tty_typeahead(c->tty, &n);
	chat_keys_feed(c, ahead, n);
	chat_keys_drain(c);
	sink_read_start(c->d.sink, read_cb, c);
	c->last_key_ms = clock_unix_ms();
	return uiloop_start(c->ui, c->tty, err);
}

void chat_history(void *ctx, enum vocab_type type, const char *turn, uint64_t seq, int64_t t_ms,
		  const cJSON *data)
{
	transcript_apply_event(ctx, type, turn, seq, t_ms, data);
}

void *chat_history_ctx(struct chat *c, const char *id)
{
	transcript_free(c->loading);
	c->loading = transcript_new(id);
	/* Only the end is held: earlier turns page in as the view needs them. */
	transcript_set_window(c->loading, CHAT_WINDOW_TURNS);
	return c->loading;
}

void chat_ready(struct chat *c, const char *id, const char *provider, const char *model,
		const char *note)
{
	snprintf(c->id, sizeof c->id, "%s", id);
	free(c->provider);
	free(c->model);
	c->provider = provider ? xstrdup(provider) : NULL;
	c->model = model ? xstrdup(model) : NULL;
	/* The opened log's model replaces the empty one: nothing of this
	 * session came through the sink before it was open. */
	transcript_free(c->tr);
	c->tr = c->loading ? c->loading : transcript_new(id);
	c->loading = NULL;
	transcript_set_window(c->tr, 0); /* live turns never push out what is viewed */
	c->selected = false; /* its indices were the old model's */
	chatview_reset(c);
	c->follow = true;
	if (c->phase != CHAT_CLOSING) /* opened after the screen closed: it stays closing */
		chat_to(c, CHAT_READY);
	keep_last_answer(c);
	for (size_t k = 0; k < transcript_end(c->tr); k++) {
		const struct transcript_turn *t = transcript_turn(c->tr, k);
		for (size_t i = 0; t && i < transcript_turn_blocks(t); i++) {
			const struct transcript_block *b = transcript_turn_block(t, i);
			size_t n;
			const char *s = transcript_block_text(b, &n);
			if (transcript_block_kind(b) == TR_PROMPT && s)
				composer_history_add(c->comp, s, n);
		}
	}
	if (note)
		chat_sayf(c, false, "%s", note);
	if (c->send_pending) {
		c->send_pending = false;
		chat_send_composer(c);
	}
	if (c->ui)
		uiloop_dirty(c->ui);
}

void chat_view_only(struct chat *c, const char *id, const struct cerr *why)
{
	snprintf(c->id, sizeof c->id, "%s", id);
	transcript_free(c->tr);
	c->tr = c->loading ? c->loading : transcript_new(id);
	c->loading = NULL;
	transcript_set_window(c->tr, 0);
	c->selected = false; /* its indices were the old model's */
	chatview_reset(c);
	c->follow = true;
	if (c->phase != CHAT_CLOSING)
		chat_to(c, CHAT_VIEW_ONLY);
	if (why->cls == CERR_LOCKED) {
		snprintf(c->banner, sizeof c->banner, "view-only: the session is open in another cairn");
	} else {
		/* The class first (the line is narrow), without the log's path. */
		const char *msg = why->msg, *past = msg[0] == '\'' ? strstr(msg, "': ") : NULL;
		snprintf(c->banner, sizeof c->banner, "view-only: the log is %s: %s",
			 cerr_class_name(why->cls), past ? past + 3 : msg);
	}
	keep_last_answer(c);
	if (c->ui)
		uiloop_dirty(c->ui);
}

void chat_failed(struct chat *c, const struct cerr *err)
{
	if (c->phase != CHAT_CLOSING && c->phase != CHAT_FAILED)
		chat_to(c, CHAT_FAILED);
	chat_sayf(c, true, "cannot open the session: %s", err->msg);
}

const char *chat_id(const struct chat *c)
{
	return c->id;
}

const char *chat_last_answer(const struct chat *c)
{
	return c->last_answer;
}

bool chat_has_turns(const struct chat *c)
{
	enum chat_phase p = c->phase == CHAT_CLOSING ? c->closed_in : c->phase;
	return p == CHAT_READY && transcript_end(c->tr) > 0;
}

struct close_wait {
	struct chat *c;
	void (*cb)(void *ctx);
	void *ctx;
};

static void ui_closed(void *arg)
{
	struct close_wait *w = arg;
	struct chat *c = w->c;
	tty_close(c->tty);
	c->tty = NULL;
	void (*cb)(void *) = w->cb;
	void *ctx = w->ctx;
	free(w);
	if (cb)
		cb(ctx);
}

void chat_close(struct chat *c, void (*cb)(void *ctx), void *ctx)
{
	if (c->phase == CHAT_CLOSING)
		return;
	chat_to(c, CHAT_CLOSING);
	/* What the screen shows now is what is printed on the normal screen:
	 * a turn still streaming (SIGTERM, SIGHUP mid-answer) is canceled
	 * only after the terminal is given back, and its partial answer is
	 * the last answer. */
	keep_last_answer(c);
	if (c->page_req)
		host_page_cancel(c->page_req); /* its callback still runs, and drops it */
	uv_timer_stop(&c->draft_timer);
	save_draft(c);
	uv_close((uv_handle_t *)&c->draft_timer, NULL);
	uv_close((uv_handle_t *)&c->paste_timer, NULL); /* closing stops it */
	/* The sink is still read and applied until the host has closed: a
	 * canceled turn's completion marker must be handled for its save. */
	struct close_wait *w = xcalloc(1, sizeof *w);
	*w = (struct close_wait){c, cb, ctx};
	struct uiloop *u = c->ui;
	c->ui = NULL;
	uiloop_close(u, ui_closed, w);
}

void chat_free(struct chat *c)
{
	if (!c)
		return;
	chatview_reset(c);
	transcript_free(c->tr);
	transcript_free(c->loading);
	composer_free(c->comp);
	keydec_free(c->kd);
	buf_release(&c->typed);
	free(c->provider);
	free(c->model);
	free(c->last_answer);
	free(c->noting_request);
	free(c->draft_saved);
	free(c->cwd);
	free(c);
}
