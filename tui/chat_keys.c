/* chat_keys.c — the chat screen's keys and what they ask of the host:
 * sending and queueing, the waiting queue, approvals, search, copy, the
 * key table's dispatch by active context (chat_int.h). */
#include "tui/chat_int.h"

#include <curses.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "tui/chat_cmd.h"
#include "tui/keytab.h"

#define CTRL_C_MS 2000 /* a second Ctrl-C within this quits */
#define WHEEL_LINES 3


/* ---- the host's answers ---- */

/* What a send that went through says. */
static void say_sent(struct chat *c, const struct host_result *r)
{
	if (r && r->queued)
		chat_sayf(c, false, "queued: it runs once the turn before it completed and was saved");
	else if (r && r->replayed)
		chat_sayf(c, false, "already sent (turn %s)", r->turn ? r->turn : "?");
}

/* A queued input sent: on failure it stays queued (it is in the log). */
static void input_sent_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct chat *c = ctx;
	if (err)
		chat_sayf(c, true, "not sent: %s", err->msg);
	else
		say_sent(c, r);
}

/* A prompt under way from the composer: given back if it fails. */
struct sending {
	struct chat *c;
	char *text;
};

static void sent_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct sending *sd = ctx;
	if (err)
		chat_give_back(sd->c, sd->text, err->msg);
	else
		say_sent(sd->c, r);
	free(sd->text);
	free(sd);
}

static void send_text(struct chat *c, char *text)
{
	struct cerr err;
	struct host_send s = {.text = text};
	composer_history_add(c->comp, text, strlen(text));
	struct sending *sd = xcalloc(1, sizeof *sd);
	sd->c = c;
	sd->text = text;
	if (host_send(c->d.host, c->id, &s, sent_cb, sd, &err) < 0) {
		chat_give_back(c, text, err.msg);
		free(sd);
		free(text);
	} else {
		*c->note = '\0';
	}
	c->follow = true;
}

void chat_send_composer(struct chat *c)
{
	size_t n;
	if (composer_empty(c->comp))
		return;
	if (c->phase == CHAT_VIEW_ONLY) {
		chat_sayf(c, true, "view-only: nothing is sent");
		return;
	}
	if (c->phase != CHAT_READY) {
		/* Typed before the session was open: it goes once it is. */
		c->send_pending = true;
		chat_sayf(c, false, "opening the session: the prompt goes once it is open");
		return;
	}
	char *text = composer_take(c->comp, &n);
	if (text[0] == '/') {
		composer_history_add(c->comp, text, n);
		chat_cmd_run(c, text);
		free(text);
		return;
	}
	send_text(c, text);
}

/* A queued prompt removed (pulled: taken back). */
static void input_done(struct chat *c, const struct host_result *r, const struct cerr *err, bool pulled)
{
	if (err) {
		chat_sayf(c, true, "%s", err->msg);
		return;
	}
	if (r && r->input_id)
		transcript_input_removed(c->tr, r->input_id);
	/* Pulled back: into the composer, never over unsent text. */
	if (r && r->text && pulled) {
		if (composer_edited(c->comp) || !composer_empty(c->comp)) {
			chat_sayf(c, true, "the composer has unsent text: the queued prompt was put in history");
		} else {
			composer_set(c->comp, r->text, strlen(r->text));
			chat_sayf(c, false, "pulled back from the queue");
		}
		composer_history_add(c->comp, r->text, strlen(r->text));
	} else if (r) {
		chat_sayf(c, false, "removed from the queue");
	}
	if (c->ui)
		uiloop_dirty(c->ui);
}

static void pulled_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	input_done(ctx, r, err, true);
}

static void dropped_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	input_done(ctx, r, err, false);
}

static void queued_op(struct chat *c, enum keyact act)
{
	size_t q = transcript_queued(c->tr);
	if (!q)
		return;
	const char *id;
	transcript_queued_text(c->tr, act == KEYACT_SEND_WAITING ? 0 : q - 1, &id, NULL);
	struct cerr err;
	int rc;
	if (act == KEYACT_SEND_WAITING) {
		rc = host_input_send(c->d.host, c->id, id, input_sent_cb, c, &err);
	} else {
		rc = host_input_take(c->d.host, c->id, id,
				     act == KEYACT_PULL_QUEUED ? pulled_cb : dropped_cb, c, &err);
	}
	if (rc < 0)
		chat_sayf(c, true, "%s", err.msg);
}

/* ---- approvals ---- */

static void respond(struct chat *c, const char *request_id, const char *decision, const char *note)
{
	struct cerr err;
	if (host_respond(c->d.host, c->id, request_id, decision, note, NULL, NULL, &err) < 0)
		chat_sayf(c, true, "%s", err.msg);
}

static void approval_key(struct chat *c, enum keyact act)
{
	const struct transcript_tool *t = transcript_pending_approval(c->tr);
	if (!t)
		return;
	switch (act) {
	case KEYACT_ALLOW_ONCE:
		respond(c, t->request_id, "allow_once", NULL);
		break;
	case KEYACT_ALLOW_SESSION:
		respond(c, t->request_id, "allow_session", NULL);
		break;
	case KEYACT_DENY:
		respond(c, t->request_id, "deny", NULL);
		break;
	case KEYACT_DENY_NOTE:
		chat_mode_to(c, CHAT_NOTE);
		free(c->noting_request);
		c->noting_request = xstrdup(t->request_id);
		buf_reset(&c->typed);
		break;
	default:
		break;
	}
}

/* ---- search ---- */

static bool has_ci(const char *hay, size_t n, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = 0; m && i + m <= n; i++)
		if (strncasecmp(hay + i, needle, m) == 0)
			return true;
	return false;
}

/* The next turn holding the query, from the view's top towards the start
 * (back) or the end. */
static void search_step(struct chat *c, bool back)
{
	if (!c->typed.len)
		return;
	size_t first = transcript_dropped(c->tr), end = transcript_end(c->tr);
	size_t from = c->follow ? end : c->top_turn;
	for (size_t step = 1; step <= end - first; step++) {
		size_t k;
		if (back) {
			if (from < first + step)
				break;
			k = from - step;
		} else {
			k = from + step;
			if (k >= end)
				break;
		}
		const struct transcript_turn *t = transcript_turn(c->tr, k);
		for (size_t i = 0; t && i < transcript_turn_blocks(t); i++) {
			size_t n;
			const char *s = transcript_block_text(transcript_turn_block(t, i), &n);
			if (s && has_ci(s, n, c->typed.p)) {
				c->follow = false;
				c->top_turn = k;
				c->top_line = 0;
				chat_sayf(c, false, "search: '%s' in turn %zu", c->typed.p, k + 1);
				return;
			}
		}
	}
	chat_sayf(c, true, "search: no more '%s'", c->typed.p);
}

/* ---- copy ---- */

/* A copy whose clipboard file is being written. */
struct copying {
	struct chat *c;
	const char *what; /* what was copied, in words (a constant) */
};

/* The clipboard file written (on a worker): said on the status line. */
static void copied(void *ctx, const char *path, const char *text, size_t n, const struct cerr *err)
{
	(void)text;
	(void)n;
	struct copying *cp = ctx;
	struct chat *c = cp->c;
	if (c->phase == CHAT_CLOSING)
		; /* the screen is gone: nothing to say */
	else if (err)
		chat_sayf(c, true, "copied through the terminal; %s", err->msg);
	else
		chat_sayf(c, false, "copied %s (and to %s)", cp->what, path);
	free(cp);
}

static void copy_last(struct chat *c)
{
	const char *what = "the last answer";
	char *sel = chat_select_text(c, &what);
	const char *text = sel ? sel : c->last_answer;
	if (!text) {
		chat_sayf(c, true, "nothing to copy yet");
		return;
	}
	size_t n = strlen(text);
	/* OSC 52: the terminal (or tmux) puts it on the clipboard; whether it
	 * did cannot be known, so the file is written too. */
	struct buf b = BUF_INIT;
	buf_adds(&b, "\033]52;c;");
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)text[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)text[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)text[i + 2];
		buf_addc(&b, b64[(v >> 18) & 63]);
		buf_addc(&b, b64[(v >> 12) & 63]);
		buf_addc(&b, i + 1 < n ? b64[(v >> 6) & 63] : '=');
		buf_addc(&b, i + 2 < n ? b64[v & 63] : '=');
	}
	buf_adds(&b, "\a");
	tty_write(c->tty, b.p, b.len);
	buf_release(&b);
	struct cerr err;
	struct copying *cp = xmalloc(sizeof *cp);
	*cp = (struct copying){c, what};
	if (c->d.files->clip_write(c->d.files->fctx, text, n, copied, cp, &err) < 0) {
		chat_sayf(c, true, "copied through the terminal; %s", err.msg);
		free(cp);
	}
	free(sel);
}

/* ---- keys ---- */

static unsigned active_contexts(struct chat *c)
{
	unsigned a = KEYCTX_BIT(KEYCTX_GLOBAL) | KEYCTX_BIT(KEYCTX_COMPOSER);
	struct transcript_state st;
	transcript_state(c->tr, &st);
	/* Keys typed before the question appeared never answer it. */
	if (transcript_pending_approval(c->tr) && c->mode != CHAT_NOTE && c->asked_at_batch < c->batch)
		a |= KEYCTX_BIT(KEYCTX_APPROVAL);
	if (c->mode == CHAT_HELP)
		a |= KEYCTX_BIT(KEYCTX_HELP);
	if (c->mode == CHAT_SEARCH)
		a |= KEYCTX_BIT(KEYCTX_SEARCH);
	if (composer_empty(c->comp)) {
		a |= KEYCTX_BIT(KEYCTX_EMPTY);
		if (st.queued && st.activity == TR_IDLE)
			a |= KEYCTX_BIT(KEYCTX_QUEUED);
	}
	if (st.activity != TR_IDLE)
		a |= KEYCTX_BIT(KEYCTX_TURN);
	return a;
}

void chat_quit(struct chat *c)
{
	if (c->quit_asked)
		return;
	c->quit_asked = true;
	c->d.quit(c->d.ctx);
}

void chat_interrupt(struct chat *c)
{
	uint64_t now = clock_mono_ns() / 1000000;
	if (c->last_ctrl_c_ms && now - c->last_ctrl_c_ms < CTRL_C_MS) {
		chat_quit(c);
		return;
	}
	c->last_ctrl_c_ms = now;
	struct transcript_state st;
	transcript_state(c->tr, &st);
	if (st.activity != TR_IDLE && *c->id) {
		host_cancel(c->d.host, c->id);
		chat_sayf(c, false, "canceling; Ctrl-C again within 2 s quits");
	} else {
		chat_sayf(c, false, "Ctrl-C again within 2 s quits");
	}
}

/* A line typed into the note, the search or the composer. */
static void typed_text(struct chat *c, const char *s, size_t n)
{
	if (c->mode == CHAT_NOTE || c->mode == CHAT_SEARCH)
		buf_add(&c->typed, s, n);
	else
		composer_insert(c->comp, s, n);
}

static void act(struct chat *c, enum keyact a)
{
	struct composer *m = c->comp;
	int page = chatview_area(c) > 2 ? chatview_area(c) - 2 : 1;
	switch (a) {
	case KEYACT_SEND:
		chat_send_composer(c);
		break;
	case KEYACT_NEWLINE:
		composer_newline(m);
		break;
	case KEYACT_COMPLETE:
		chat_cmd_complete(c);
		break;
	case KEYACT_LEFT: composer_left(m); break;
	case KEYACT_RIGHT: composer_right(m); break;
	case KEYACT_WORD_LEFT: composer_word_left(m); break;
	case KEYACT_WORD_RIGHT: composer_word_right(m); break;
	case KEYACT_LINE_START: composer_line_start(m); break;
	case KEYACT_LINE_END: composer_line_end(m); break;
	case KEYACT_UP: composer_up(m); break;
	case KEYACT_DOWN: composer_down(m); break;
	case KEYACT_BACKSPACE: composer_backspace(m); break;
	case KEYACT_DELETE: composer_delete(m); break;
	case KEYACT_KILL_TO_END: composer_kill_to_end(m); break;
	case KEYACT_KILL_TO_START: composer_kill_to_start(m); break;
	case KEYACT_KILL_WORD_BACK: composer_kill_word_back(m); break;
	case KEYACT_YANK: composer_yank(m); break;
	case KEYACT_EDITOR:
		chat_cmd_editor(c);
		break;
	case KEYACT_SEND_WAITING:
	case KEYACT_PULL_QUEUED:
	case KEYACT_DROP_QUEUED:
		queued_op(c, a);
		break;
	case KEYACT_QUIT:
		chat_quit(c);
		break;
	case KEYACT_HELP:
		chat_mode_to(c, CHAT_HELP);
		c->help_top = 0;
		break;
	case KEYACT_CANCEL:
		if (*c->id)
			host_cancel(c->d.host, c->id);
		break;
	case KEYACT_SEARCH:
		chat_mode_to(c, CHAT_SEARCH);
		buf_reset(&c->typed);
		chat_sayf(c, false, "search: type, Enter finds (towards the start), Esc closes");
		break;
	case KEYACT_SCROLL_PAGE_UP:
		if (c->mode == CHAT_HELP)
			c->help_top -= page;
		else
			chatview_scroll(c, -page);
		break;
	case KEYACT_SCROLL_PAGE_DOWN:
		if (c->mode == CHAT_HELP)
			c->help_top += page;
		else
			chatview_scroll(c, page);
		break;
	case KEYACT_SCROLL_TOP:
		chatview_home(c);
		break;
	case KEYACT_SCROLL_BOTTOM:
		c->follow = true;
		break;
	case KEYACT_SELECT_PREV:
		chat_select_move(c, true);
		break;
	case KEYACT_SELECT_NEXT:
		chat_select_move(c, false);
		break;
	case KEYACT_COPY:
		copy_last(c);
		break;
	case KEYACT_EXPAND:
		chatview_toggle_expand(c);
		break;
	case KEYACT_INTERRUPT:
		chat_interrupt(c);
		break;
	case KEYACT_SUSPEND:
		uiloop_suspend(c->ui);
		break;
	case KEYACT_REDRAW:
		clearok(curscr, TRUE);
		break;
	case KEYACT_ALLOW_ONCE:
	case KEYACT_ALLOW_SESSION:
	case KEYACT_DENY:
	case KEYACT_DENY_NOTE:
		approval_key(c, a);
		break;
	case KEYACT_SEARCH_NEXT:
	case KEYACT_SEARCH_PREV:
		search_step(c, a == KEYACT_SEARCH_NEXT);
		break;
	case KEYACT_CLOSE:
		if (c->mode == CHAT_SEARCH)
			*c->note = '\0';
		chat_mode_to(c, CHAT_COMPOSE);
		break;
	case KEYACT_NONE:
	case KEYACT_COUNT:
		break;
	}
}

static void wheel(struct chat *c)
{
	MEVENT ev;
	if (getmouse(&ev) != OK)
		return;
	if (ev.bstate & BUTTON4_PRESSED)
		chatview_scroll(c, -WHEEL_LINES);
#ifdef BUTTON5_PRESSED
	else if (ev.bstate & BUTTON5_PRESSED)
		chatview_scroll(c, WHEEL_LINES);
#endif
}

/* The note or the search query takes Enter, Esc and Backspace itself. */
static bool line_entry_key(struct chat *c, struct key k)
{
	if (c->mode != CHAT_NOTE && c->mode != CHAT_SEARCH)
		return false;
	if (k.sym == KEYSYM_BACKSPACE) {
		while (c->typed.len && ((unsigned char)c->typed.p[c->typed.len - 1] & 0xc0) == 0x80)
			c->typed.len--;
		if (c->typed.len)
			c->typed.len--;
		c->typed.p[c->typed.len] = '\0';
		return true;
	}
	if (c->mode == CHAT_NOTE && k.sym == KEYSYM_ENTER) {
		respond(c, c->noting_request, "deny", c->typed.p ? c->typed.p : "");
		chat_mode_to(c, CHAT_COMPOSE);
		return true;
	}
	if (c->mode == CHAT_NOTE && k.sym == KEYSYM_ESC) {
		chat_mode_to(c, CHAT_COMPOSE);
		return true;
	}
	return false;
}

static void on_key(struct chat *c, struct key k)
{
	c->last_key_ms = clock_unix_ms();
	if (k.sym == KEYSYM_PASTE_END) {
		size_t n;
		const char *s = keydec_text(c->kd, &n);
		typed_text(c, s, n);
		return;
	}
	if (k.sym == KEYSYM_PASTE_BEGIN || k.sym == KEYSYM_RESIZE)
		return;
	if (k.sym == KEYSYM_MOUSE) {
		wheel(c);
		return;
	}
	if (line_entry_key(c, k))
		return;
	const struct keybinding *b = keytab_find(k, active_contexts(c));
	if (b) {
		if (c->mode == CHAT_HELP && b->ctx != KEYCTX_HELP && b->act != KEYACT_SCROLL_PAGE_UP &&
		    b->act != KEYACT_SCROLL_PAGE_DOWN) {
			chat_mode_to(c, CHAT_COMPOSE); /* any other key closes the help first */
		}
		act(c, b->act);
		return;
	}
	if (k.sym == KEYSYM_CHAR && !(k.mods & (KEYMOD_CTRL | KEYMOD_ALT))) {
		char u[4];
		size_t n = utf8_encode(k.cp, u);
		if (c->mode == CHAT_HELP)
			chat_mode_to(c, CHAT_COMPOSE);
		typed_text(c, u, n);
	}
}

void chat_keys_drain(struct chat *c)
{
	struct key k;
	while (c->phase != CHAT_CLOSING && keydec_next(c->kd, &k))
		on_key(c, k);
}

size_t chat_keys_feed(struct chat *c, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		uint32_t cp = p[i];
		size_t len = cp < 0xc0 ? 1 : cp >= 0xf0 ? 4 : cp >= 0xe0 ? 3 : 2;
		if (len > 1 && i + len > n)
			break; /* the rest of this character comes with the next read */
		if (len > 1) {
			cp &= 0xffu >> (len + 1);
			for (size_t k = 1; k < len; k++)
				cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		keydec_feed(c->kd, false, cp);
		i += len;
	}
	return i;
}

/* After a paste's end marker, how long the input may stay quiet with more
 * of the same paste still to come: the terminal (or tmux) writes a paste
 * in one go, but a long one reaches us in pieces, and the writer may not
 * have been scheduled yet when we drained the last piece. Nobody types
 * this soon after a paste. The loop does not wait for it: a timer
 * (paste_timer) ends the paste unless more input comes first. */
#define PASTE_SETTLE_MS 10

/* A bracketed paste is read straight from the terminal in large chunks:
 * through ncurses it would be one read(2) per byte. ncurses holds nothing
 * read ahead (it reads a byte at a time), so nothing is skipped. Never
 * waits. True when bytes were read. */
static bool read_paste(struct chat *c)
{
	struct pollfd pfd = {.fd = tty_infd(c->tty), .events = POLLIN};
	if (poll(&pfd, 1, 0) != 1)
		return false;
	char chunk[65536];
	size_t have = c->paste_carry_len;
	memcpy(chunk, c->paste_carry, have);
	ssize_t r = read(pfd.fd, chunk + have, sizeof chunk - have);
	if (r <= 0)
		return false;
	have += (size_t)r;
	size_t used = chat_keys_feed(c, chunk, have);
	c->paste_carry_len = have - used;
	memcpy(c->paste_carry, chunk + used, c->paste_carry_len);
	return true;
}

/* What the keys did is applied and drawn at once (the stream is paced). */
static void keys_done(struct chat *c)
{
	if (keydec_waiting(c->kd))
		keydec_expire(c->kd);
	chat_keys_drain(c);
	if (c->phase != CHAT_CLOSING) {
		chat_draft_touch(c);
		uiloop_draw_now(c->ui);
	}
}

static void paste_settled(uv_timer_t *t)
{
	struct chat *c = t->data;
	if (c->phase == CHAT_CLOSING || !keydec_paste_ending(c->kd))
		return;
	/* Nothing came right behind a paste's end: it was the terminal's.
	 * What did come before this pause (a CR after an end marker faked
	 * inside the pasted text) was pasted, and never sends. */
	keydec_pause(c->kd);
	uiloop_keypad(c->ui, !keydec_pasting(c->kd));
	keys_done(c);
}

void chat_keys_cb(void *ctx)
{
	struct chat *c = ctx;
	c->batch++;
	uv_timer_stop(&c->paste_timer); /* more input: the pause is not yet */
	wint_t ch;
	int rc;
	/* A key may close the screen (quit): then nothing more is read. */
	while (c->phase != CHAT_CLOSING) {
		if (keydec_pasting(c->kd)) {
			if (read_paste(c)) {
				/* read and fed */
			} else {
				/* A paste in progress: the rest comes later. After
				 * its end marker, it ends if nothing comes soon. */
				if (keydec_paste_ending(c->kd))
					uv_timer_start(&c->paste_timer, paste_settled,
						       PASTE_SETTLE_MS, 0);
				break;
			}
		} else {
			if ((rc = uiloop_getkey(c->ui, &ch)) == ERR)
				break;
			keydec_feed(c->kd, rc == KEY_CODE_YES, (uint32_t)ch);
		}
		uiloop_keypad(c->ui, !keydec_pasting(c->kd));
		chat_keys_drain(c);
	}
	if (c->phase == CHAT_CLOSING)
		return;
	keys_done(c);
}

