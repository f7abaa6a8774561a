/* chat.c — the chat screen's life, its keys and what it asks of the host
 * (chat.h). The frame itself is chatview.c's. */
#include "tui/chat_int.h"

#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <strings.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "tui/keytab.h"
#include "tui/chat_cmd.h"

#define CTRL_C_MS 2000 /* a second Ctrl-C within this quits */
#define WHEEL_LINES 3

static void say(struct chat *c, bool error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct chat *c, bool error, const char *fmt, ...)
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
	say(c, error, "%s", msg);
}

/* ---- the host's answers ---- */

static void sent_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct chat *c = ctx;
	if (err)
		say(c, true, "not sent: %s", err->msg);
	else if (r && r->queued)
		say(c, false, "queued: it runs once the turn before it completed and was saved");
	else if (r && r->replayed)
		say(c, false, "already sent (turn %s)", r->turn ? r->turn : "?");
}

static void send_text(struct chat *c, char *text)
{
	struct cerr err;
	struct host_send s = {.text = text};
	composer_history_add(c->comp, text, strlen(text));
	if (host_send(c->d.host, c->id, &s, sent_cb, c, &err) < 0)
		say(c, true, "not sent: %s", err.msg);
	else
		*c->note = '\0';
	c->follow = true;
	free(text);
}

static void send_composer(struct chat *c)
{
	size_t n;
	if (composer_empty(c->comp))
		return;
	if (c->view_only) {
		say(c, true, "view-only: nothing is sent");
		return;
	}
	if (!c->ready) {
		/* Typed before the session was open: it goes once it is. */
		c->send_pending = true;
		say(c, false, "opening the session: the prompt goes once it is open");
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

static void input_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct chat *c = ctx;
	if (err) {
		say(c, true, "%s", err->msg);
		return;
	}
	if (r && r->input_id)
		transcript_input_removed(c->tr, r->input_id);
	/* Pulled back: into the composer, never over unsent text. */
	if (r && r->text && c->pulling) {
		if (composer_edited(c->comp) || !composer_empty(c->comp)) {
			say(c, true, "the composer has unsent text: the queued prompt was put in history");
		} else {
			composer_set(c->comp, r->text, strlen(r->text));
			say(c, false, "pulled back from the queue");
		}
		composer_history_add(c->comp, r->text, strlen(r->text));
	} else if (r) {
		say(c, false, "removed from the queue");
	}
	c->pulling = false;
	if (c->ui)
		uiloop_dirty(c->ui);
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
		rc = host_input_send(c->d.host, c->id, id, sent_cb, c, &err);
	} else if (act == KEYACT_PULL_QUEUED) {
		c->pulling = true;
		rc = host_input_take(c->d.host, c->id, id, input_cb, c, &err);
	} else {
		rc = host_input_remove(c->d.host, c->id, id, input_cb, c, &err);
	}
	if (rc < 0)
		say(c, true, "%s", err.msg);
}

/* ---- approvals ---- */

static const struct transcript_tool *waiting_tool(const struct chat *c)
{
	struct transcript_state st;
	transcript_state(c->tr, &st);
	if (st.activity != TR_APPROVAL || !transcript_end(c->tr))
		return NULL;
	const struct transcript_turn *t = transcript_turn(c->tr, transcript_end(c->tr) - 1);
	for (size_t i = transcript_turn_blocks(t); i-- > 0;) {
		const struct transcript_tool *tt = transcript_block_tool(transcript_turn_block(t, i));
		if (tt && tt->approval == TR_APPROVAL_WAITING && tt->request_id)
			return tt;
	}
	return NULL;
}

static void respond(struct chat *c, const char *request_id, const char *decision, const char *note)
{
	struct cerr err;
	if (host_respond(c->d.host, c->id, request_id, decision, note, NULL, NULL, &err) < 0)
		say(c, true, "%s", err.msg);
}

static void approval_key(struct chat *c, enum keyact act)
{
	const struct transcript_tool *t = waiting_tool(c);
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
		c->noting = true;
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
				say(c, false, "search: '%s' in turn %zu", c->typed.p, k + 1);
				return;
			}
		}
	}
	say(c, true, "search: no more '%s'", c->typed.p);
}

/* ---- copy ---- */

static void copy_last(struct chat *c)
{
	const char *sel = chatview_selected_text(c);
	const char *text = sel ? sel : c->last_answer;
	const char *what = sel ? "the selected message" : "the last answer";
	if (!text) {
		say(c, true, "nothing to copy yet");
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
	char *path = xasprintf("%s/clipboard.txt", c->root);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
	if (fd >= 0)
		close(fd);
	if (ok)
		say(c, false, "copied %s (and to %s)", what, path);
	else
		say(c, true, "copied through the terminal; cannot write %s: %s", path, strerror(errno));
	free(path);
}

/* ---- keys ---- */

static unsigned active_contexts(struct chat *c)
{
	unsigned a = KEYCTX_BIT(KEYCTX_GLOBAL) | KEYCTX_BIT(KEYCTX_COMPOSER);
	struct transcript_state st;
	transcript_state(c->tr, &st);
	/* Keys typed before the question appeared never answer it. */
	if (waiting_tool(c) && !c->noting && c->asked_at_batch < c->batch)
		a |= KEYCTX_BIT(KEYCTX_APPROVAL);
	if (c->help)
		a |= KEYCTX_BIT(KEYCTX_HELP);
	if (c->searching)
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

static void quit(struct chat *c)
{
	if (c->quit_asked)
		return;
	c->quit_asked = true;
	c->d.quit(c->d.ctx);
}

static void interrupt(struct chat *c)
{
	uint64_t now = clock_mono_ns() / 1000000;
	if (c->last_ctrl_c_ms && now - c->last_ctrl_c_ms < CTRL_C_MS) {
		quit(c);
		return;
	}
	c->last_ctrl_c_ms = now;
	struct transcript_state st;
	transcript_state(c->tr, &st);
	if (st.activity != TR_IDLE && *c->id) {
		host_cancel(c->d.host, c->id);
		say(c, false, "canceling; Ctrl-C again within 2 s quits");
	} else {
		say(c, false, "Ctrl-C again within 2 s quits");
	}
}

/* A line typed into the note, the search or the composer. */
static void typed_text(struct chat *c, const char *s, size_t n)
{
	if (c->noting || c->searching)
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
		send_composer(c);
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
		quit(c);
		break;
	case KEYACT_HELP:
		c->help = true;
		c->help_top = 0;
		break;
	case KEYACT_CANCEL:
		if (*c->id)
			host_cancel(c->d.host, c->id);
		break;
	case KEYACT_SEARCH:
		c->searching = true;
		buf_reset(&c->typed);
		say(c, false, "search: type, Enter finds (towards the start), Esc closes");
		break;
	case KEYACT_SCROLL_PAGE_UP:
		if (c->help)
			c->help_top -= page;
		else
			chatview_scroll(c, -page);
		break;
	case KEYACT_SCROLL_PAGE_DOWN:
		if (c->help)
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
		chatview_select(c, true);
		break;
	case KEYACT_SELECT_NEXT:
		chatview_select(c, false);
		break;
	case KEYACT_COPY:
		copy_last(c);
		break;
	case KEYACT_EXPAND:
		chatview_toggle_expand(c);
		break;
	case KEYACT_INTERRUPT:
		interrupt(c);
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
		if (c->searching)
			c->searching = false, *c->note = '\0';
		else
			c->help = false;
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
	if (!c->noting && !c->searching)
		return false;
	if (k.sym == KEYSYM_BACKSPACE) {
		while (c->typed.len && ((unsigned char)c->typed.p[c->typed.len - 1] & 0xc0) == 0x80)
			c->typed.len--;
		if (c->typed.len)
			c->typed.len--;
		c->typed.p[c->typed.len] = '\0';
		return true;
	}
	if (c->noting && k.sym == KEYSYM_ENTER) {
		respond(c, c->noting_request, "deny", c->typed.p ? c->typed.p : "");
		c->noting = false;
		return true;
	}
	if (c->noting && k.sym == KEYSYM_ESC) {
		c->noting = false;
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
		if (c->help && b->ctx != KEYCTX_HELP && b->act != KEYACT_SCROLL_PAGE_UP &&
		    b->act != KEYACT_SCROLL_PAGE_DOWN) {
			c->help = false; /* any other key closes the help first */
		}
		act(c, b->act);
		return;
	}
	if (k.sym == KEYSYM_CHAR && !(k.mods & (KEYMOD_CTRL | KEYMOD_ALT))) {
		char u[4];
		size_t n = 0;
		uint32_t cp = k.cp;
		if (cp < 0x80) {
			u[n++] = (char)cp;
		} else if (cp < 0x800) {
			u[n++] = (char)(0xc0 | (cp >> 6));
			u[n++] = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			u[n++] = (char)(0xe0 | (cp >> 12));
			u[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			u[n++] = (char)(0x80 | (cp & 0x3f));
		} else {
			u[n++] = (char)(0xf0 | (cp >> 18));
			u[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
			u[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			u[n++] = (char)(0x80 | (cp & 0x3f));
		}
		c->help = false;
		typed_text(c, u, n);
	}
}

static void drain_keys(struct chat *c)
{
	struct key k;
	while (!c->closing && keydec_next(c->kd, &k))
		on_key(c, k);
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

static void draft_touch(struct chat *c)
{
	size_t n;
	char *text = composer_text(c->comp, &n);
	bool changed = !c->draft_saved || strcmp(text, c->draft_saved) != 0;
	free(text);
	if (changed)
		uv_timer_start(&c->draft_timer, draft_cb, DRAFT_DELAY_MS, 0);
}

static void keys_cb(void *ctx)
{
	struct chat *c = ctx;
	c->batch++;
	wint_t ch;
	int rc;
	/* A key may close the screen (quit): then nothing more is read. */
	while (!c->closing && (rc = uiloop_getkey(c->ui, &ch)) != ERR) {
		keydec_feed(c->kd, rc == KEY_CODE_YES, (uint32_t)ch);
		uiloop_keypad(c->ui, !keydec_pasting(c->kd));
		drain_keys(c);
	}
	if (c->closing)
		return;
	if (keydec_waiting(c->kd))
		keydec_expire(c->kd);
	drain_keys(c);
	if (!c->closing) {
		draft_touch(c);
		uiloop_dirty(c->ui);
	}
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

static void ring(struct chat *c)
{
	/* Only when nobody typed for a while: someone watching needs no bell. */
	if (c->ring_bell && clock_unix_ms() - c->last_key_ms > 5000)
		tty_write(c->tty, "\a", 1);
}

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	(void)s;
	struct chat *c = ctx;
	if (transcript_apply_sink(c->tr, it, clock_unix_ms()) && c->ui)
		uiloop_dirty(c->ui);
	if (c->closing) {
		if (it->kind == SINK_MARKER && strcmp(it->name, "turn_done") == 0) {
			struct cerr err;
			keep_last_answer(c);
			(void)host_applied(c->d.host, it, &err); /* nobody to tell: the screen is gone */
		}
		return;
	}
	if (it->kind == SINK_NOTICE && strcmp(it->name, "interaction") == 0) {
		c->asked_at_batch = c->batch;
		ring(c);
	} else if (it->kind == SINK_NOTICE && strcmp(it->name, "unsaved") == 0) {
		say(c, true, "a save failed: the session is unsaved (/save retries)");
	} else if (it->kind == SINK_MARKER && strcmp(it->name, "turn_done") == 0) {
		/* Everything before it is applied to the model: settle. */
		struct cerr err;
		keep_last_answer(c);
		if (host_applied(c->d.host, it, &err) < 0)
			say(c, true, "%s", err.msg);
		ring(c);
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
		interrupt(c);
	else
		quit(c); /* SIGTERM, SIGHUP: drain and go */
}

struct chat *chat_new(const struct chat_deps *d)
{
	struct chat *c = xcalloc(1, sizeof *c);
	c->d = *d;
	c->root = xstrdup(d->root ? d->root : ".");
	c->cwd = d->cwd ? xstrdup(d->cwd) : NULL;
	uv_timer_init(d->loop, &c->draft_timer);
	c->draft_timer.data = c;
	c->tr = transcript_new("");
	c->comp = composer_new();
	if (d->draft && *d->draft) {
		composer_set(c->comp, d->draft, strlen(d->draft));
		c->draft_saved = xstrdup(d->draft);
	}
	c->kd = keydec_new();
	c->follow = true;
	c->ring_bell = d->ring_bell;
	buf_init(&c->typed);
	struct uiloop_hooks hk = {keys_cb, draw_cb, signal_cb, c};
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
	const unsigned char *p = (const unsigned char *)tty_typeahead(c->tty, &n);
	for (size_t i = 0; i < n;) {
		uint32_t cp = p[i];
		size_t len = cp < 0x80 ? 1 : cp >= 0xf0 ? 4 : cp >= 0xe0 ? 3 : cp >= 0xc0 ? 2 : 1;
		if (len > 1 && i + len <= n) {
			cp &= 0xffu >> (len + 1);
			for (size_t k = 1; k < len; k++)
				cp = (cp << 6) | (p[i + k] & 0x3f);
		} else {
			len = 1;
		}
		keydec_feed(c->kd, false, cp);
		i += len;
	}
	drain_keys(c);
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
	chatview_reset(c);
	c->follow = true;
	c->ready = true;
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
		say(c, false, "%s", note);
	if (c->send_pending) {
		c->send_pending = false;
		send_composer(c);
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
	chatview_reset(c);
	c->follow = true;
	c->view_only = true;
	snprintf(c->banner, sizeof c->banner, "view-only: %s",
		 why->cls == CERR_LOCKED ? "the session is open in another cairn" : why->msg);
	keep_last_answer(c);
	if (c->ui)
		uiloop_dirty(c->ui);
}

void chat_failed(struct chat *c, const struct cerr *err)
{
	c->failed = true;
	say(c, true, "cannot open the session: %s", err->msg);
}

const char *chat_id(const struct chat *c)
{
	return c->id;
}

const char *chat_last_answer(const struct chat *c)
{
	return c->last_answer;
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
	if (c->closing)
		return;
	c->closing = true;
	uv_timer_stop(&c->draft_timer);
	save_draft(c);
	uv_close((uv_handle_t *)&c->draft_timer, NULL);
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
	free(c->renaming);
	free(c->cwd);
	free(c->root);
	free(c);
}
