/* tty.h — the terminal while a screen owns it: ncursesw on the given
 * descriptors (raw keys, no echo, a 25 ms escape delay, bracketed paste
 * and the mouse wheel on), and the terminal restored on every way out:
 * tty_close, tty_suspend (Ctrl-Z), and a fatal signal (SIGSEGV, SIGABRT,
 * SIGBUS, SIGFPE, SIGILL), whose handler writes bytes computed at open
 * time with write(2), puts back the saved termios with tcsetattr, and
 * re-raises the signal to whatever handled it before.
 *
 * Calling sequence (one terminal per process):
 *	start the loop's uv_signal handlers for SIGINT, SIGTERM, SIGHUP,
 *	SIGWINCH and SIGCONT first: ncurses installs its own only where the
 *	disposition is still the default, and these are the application's;
 *	t = tty_open(0, 1, &err);
 *	... draw with ncurses; on SIGWINCH tty_resize(t); ...
 *	tty_close(t);
 *
 * Errors follow base/err.h: a descriptor that is not a terminal is
 * CERR_USAGE; a terminal type ($TERM) terminfo does not know, or one that
 * cannot address the cursor (dumb), is CERR_UNSUPPORTED, its message
 * naming the variable and its value. */
#ifndef CAIRN_TTY_H
#define CAIRN_TTY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct tty;

/* Take the terminal on infd/outfd (both stay open and the caller's). NULL
 * with err when they are not a terminal or it cannot be set up. */
struct tty *tty_open(int infd, int outfd, struct cerr *err);
/* Restore the terminal as it was (normal screen, modes, cursor) and free
 * t. NULL is fine. */
void tty_close(struct tty *t);

/* Give the terminal to another program (an editor) as it was before
 * tty_open, and take it back with everything to be redrawn. */
void tty_release(struct tty *t);
void tty_retake(struct tty *t);
/* Ctrl-Z: restore the terminal, stop the process group, and once it is
 * continued take the terminal again with everything to be redrawn. */
void tty_suspend(struct tty *t);
/* The window changed size: read it and resize ncurses' screens. */
void tty_resize(struct tty *t);

/* The bytes typed before tty_open took the terminal (Enter as CR), for
 * the screen to handle before any key read after; borrowed from t. */
const char *tty_typeahead(const struct tty *t, size_t *n);
/* The input descriptor tty_open was given. */
int tty_infd(const struct tty *t);
/* Colours are in use: the terminal has them and NO_COLOR is unset or
 * empty. */
bool tty_colors(const struct tty *t);
/* Write bytes straight to the terminal, outside ncurses (a bell, OSC
 * 52): between frames, never inside one. 0, or -1 when the terminal is
 * gone. */
int tty_write(struct tty *t, const char *p, size_t n);

/* How to ring the user: not at all, BEL, or an OSC 9 notification (a
 * desktop notification in the terminals that show one). */
enum tty_bell { TTY_BELL_NONE, TTY_BELL_BEL, TTY_BELL_OSC9 };
/* OSC 9 where the environment names a terminal known to show it
 * (TERM_PROGRAM iTerm.app, WezTerm, ghostty; not inside tmux or screen,
 * which would swallow it), else BEL. */
enum tty_bell tty_bell_auto(void);

#endif
