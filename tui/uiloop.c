/* uiloop.c — keys, signals and paced frames on the loop (uiloop.h). */
#include "tui/uiloop.h"

#include <curses.h>
#include <signal.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/xalloc.h"

#define FRAME_MS 16 /* at most 60 frames a second */

enum { SIG_INT, SIG_TERM, SIG_HUP, SIG_WINCH, SIG_CONT, N_SIGNALS };
static const int signums[N_SIGNALS] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGCONT};

struct uiloop {
	uv_loop_t *loop;
	struct uiloop_hooks hk;
	struct tty *tty;
	WINDOW *keys; /* read from: never drawn, so reading never refreshes */
	uv_poll_t poll;
	uv_timer_t timer;
	uv_signal_t sig[N_SIGNALS];
	bool polling, dirty, closing, paused;
	bool keypad_off; /* keypad(FALSE) in effect (a paste) */
	uint64_t last_ms, frames;
	unsigned open_handles;
	void (*closed)(void *ctx);
	void *closed_ctx;
};

static void draw(struct uiloop *u)
{
	if (!u->tty || u->closing || u->paused)
		return;
	u->dirty = false;
	u->hk.draw(u->hk.ctx);
	wnoutrefresh(stdscr);
	doupdate();
	u->last_ms = clock_mono_ns() / 1000000;
	u->frames++;
}

static void timer_cb(uv_timer_t *t)
{
	draw(t->data);
}

void uiloop_dirty(struct uiloop *u)
{
	if (u->closing || !u->tty)
		return;
	u->dirty = true;
	if (uv_is_active((uv_handle_t *)&u->timer))
		return;
	uint64_t now = clock_mono_ns() / 1000000;
	uint64_t due = u->last_ms + FRAME_MS;
	/* Drawn from the timer even when due now: the change's handler may
	 * make more changes before control returns to the loop. */
	uv_timer_start(&u->timer, timer_cb, due > now ? due - now : 0, 0);
}

void uiloop_draw_now(struct uiloop *u)
{
	if (u->closing || !u->tty)
		return;
	uv_timer_stop(&u->timer);
	draw(u);
}

static void poll_cb(uv_poll_t *p, int status, int events)
{
	struct uiloop *u = p->data;
	(void)events;
	if (status < 0 || u->closing)
		return;
	u->hk.input(u->hk.ctx);
}

int uiloop_getkey(struct uiloop *u, wint_t *ch)
{
	/* ncurses reads a byte per read(2): nothing is left buffered in it
	 * once this gives ERR. */
	return u->closing || !u->keys ? ERR : wget_wch(u->keys, ch);
}

void uiloop_keypad(struct uiloop *u, bool on)
{
	/* Only on a change: ncurses writes the terminal's keypad mode each
	 * time it is set. */
	if (u->keys && u->keypad_off == on) {
		keypad(u->keys, on ? TRUE : FALSE);
		u->keypad_off = !on;
	}
}

static void signal_cb(uv_signal_t *s, int signum)
{
	struct uiloop *u = s->data;
	if (signum == SIGWINCH || signum == SIGCONT) {
		if (u->tty) {
			if (signum == SIGWINCH)
				tty_resize(u->tty);
			clearok(curscr, TRUE);
			uiloop_dirty(u);
		}
		return;
	}
	u->hk.signal(u->hk.ctx, signum);
}

struct uiloop *uiloop_new(uv_loop_t *loop, const struct uiloop_hooks *hk)
{
	struct uiloop *u = xcalloc(1, sizeof *u);
	u->loop = loop;
	u->hk = *hk;
	uv_timer_init(loop, &u->timer);
	u->timer.data = u;
	for (int i = 0; i < N_SIGNALS; i++) {
		uv_signal_init(loop, &u->sig[i]);
		u->sig[i].data = u;
		uv_signal_start(&u->sig[i], signal_cb, signums[i]);
	}
	return u;
}

int uiloop_start(struct uiloop *u, struct tty *t, struct cerr *err)
{
	u->tty = t;
	u->keys = newwin(1, 1, 0, 0);
	keypad(u->keys, TRUE);
	meta(u->keys, TRUE);
	nodelay(u->keys, TRUE);
	int rc = uv_poll_init(u->loop, &u->poll, tty_infd(t));
	if (rc == 0) {
		u->polling = true; /* a handle to close */
		u->poll.data = u;
		rc = uv_poll_start(&u->poll, UV_READABLE, poll_cb);
	}
	if (rc < 0) {
		cerr_set(err, CERR_IO, 0, "cannot watch the terminal's input: %s", uv_strerror(rc));
		return -1;
	}
	uiloop_dirty(u);
	/* Keys typed before the first frame are in the terminal's queue:
	 * read them now, in order, after the screen exists. */
	poll_cb(&u->poll, 0, UV_READABLE);
	return 0;
}

void uiloop_suspend(struct uiloop *u)
{
	if (!u->tty)
		return;
	tty_suspend(u->tty);
	uiloop_dirty(u);
}

void uiloop_pause(struct uiloop *u, bool paused)
{
	u->paused = paused;
	if (!u->polling)
		return;
	if (paused)
		uv_poll_stop(&u->poll);
	else
		uv_poll_start(&u->poll, UV_READABLE, poll_cb);
	if (!paused)
		uiloop_dirty(u);
}

uint64_t uiloop_frames(const struct uiloop *u)
{
	return u->frames;
}

static void closed_cb(uv_handle_t *h)
{
	struct uiloop *u = h->data;
	if (--u->open_handles)
		return;
	if (u->keys)
		delwin(u->keys);
	void (*cb)(void *) = u->closed;
	void *ctx = u->closed_ctx;
	free(u);
	if (cb)
		cb(ctx);
}

void uiloop_close(struct uiloop *u, void (*cb)(void *ctx), void *ctx)
{
	if (u->closing)
		return;
	u->closing = true;
	u->closed = cb;
	u->closed_ctx = ctx;
	u->open_handles = 1 + N_SIGNALS + (u->polling ? 1 : 0);
	uv_close((uv_handle_t *)&u->timer, closed_cb);
	for (int i = 0; i < N_SIGNALS; i++)
		uv_close((uv_handle_t *)&u->sig[i], closed_cb);
	if (u->polling)
		uv_close((uv_handle_t *)&u->poll, closed_cb);
}
