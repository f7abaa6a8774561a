/* uiloop.h — a screen on the engine's libuv loop: keys read through
 * uv_poll (ncurses decodes them), SIGWINCH, SIGCONT and the quitting
 * signals through uv_signal, and frames paced through one uv_timer: a
 * change marks the screen dirty, and it is drawn at most 60 times a
 * second. Idle, nothing is armed: no timer runs and the process sleeps in
 * the loop.
 *
 * Calling sequence:
 *	u = uiloop_new(loop, &hooks);       signals handled from here on
 *	t = tty_open(0, 1, &err);           (tty.h: after the signals)
 *	uiloop_start(u, t);                 keys read, first frame drawn
 *	... uiloop_dirty(u) after each change ...
 *	uiloop_close(u, closed_cb, ctx);    handles closed, then the callback
 *	tty_close(t);
 *
 * The hooks run on the loop, never from inside a uiloop call. */
#ifndef CAIRN_UILOOP_H
#define CAIRN_UILOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <wchar.h>

#include <uv.h>

#include "tui/tty.h"

struct uiloop_hooks {
	/* Keys can be read: read them with uiloop_getkey until it gives
	 * ERR. */
	void (*input)(void *ctx);
	/* Draw the whole frame into stdscr (ncurses writes only what changed). */
	void (*draw)(void *ctx);
	/* SIGINT, SIGTERM or SIGHUP arrived. */
	void (*signal)(void *ctx, int signum);
	void *ctx;
};

struct uiloop;

/* A new loop driver; handles SIGINT, SIGTERM, SIGHUP, SIGWINCH and
 * SIGCONT from now on. Free with uiloop_close. */
struct uiloop *uiloop_new(uv_loop_t *loop, const struct uiloop_hooks *hk);
/* Read keys from t's input and draw the first frame. 0, or -1 when the
 * input cannot be polled (err set). */
int uiloop_start(struct uiloop *u, struct tty *t, struct cerr *err);
/* One key as ncurses' wget_wch gives it: OK (*ch a character or a
 * control code), KEY_CODE_YES (*ch a KEY_* code), or ERR when none is
 * waiting (after an ESC ncurses waits the escape delay for the rest of a
 * sequence first). */
int uiloop_getkey(struct uiloop *u, wint_t *ch);
/* Let ncurses turn key sequences into KEY_* codes (on) or not (off: while
 * a bracketed paste lasts, so pasted bytes stay text). */
void uiloop_keypad(struct uiloop *u, bool on);
/* Draw a frame now, outside the pacing: for what the user typed, so a key
 * never waits for the stream's next frame. */
void uiloop_draw_now(struct uiloop *u);
/* Another program has the terminal (paused: no keys read, no frames
 * drawn) or gave it back (a full frame drawn). */
void uiloop_pause(struct uiloop *u, bool paused);
/* Something changed: draw a frame soon (at once when the last frame is
 * older than a frame's time, else when it is due). */
void uiloop_dirty(struct uiloop *u);
/* Ctrl-Z: suspend now (tty_suspend), redraw everything on return. */
void uiloop_suspend(struct uiloop *u);
/* Frames drawn so far (for tests and the bench). */
uint64_t uiloop_frames(const struct uiloop *u);
/* Stop reading keys and drawing; cb runs once every handle is closed,
 * then u is freed. */
void uiloop_close(struct uiloop *u, void (*cb)(void *ctx), void *ctx);

#endif
