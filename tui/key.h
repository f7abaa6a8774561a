/* key.h — one key press as the chat screen sees it, and the decoder that
 * makes it from what ncurses' get_wch returns.
 *
 * A key is a code point (sym KEYSYM_CHAR) or a named key, plus modifiers.
 * Ctrl with a letter is the lowercase letter with KEYMOD_CTRL (Ctrl-A is
 * {'a', CTRL}); Alt is KEYMOD_ALT whether the terminal sent an ESC prefix
 * or a CSI sequence with a modifier parameter. A bracketed paste arrives
 * as KEYSYM_PASTE_BEGIN, then KEYSYM_PASTE_END whose text is the paste
 * (keydec_text), never as keys that could send or edit.
 *
 * A paste that holds the end marker itself (ESC [ 201 ~, which tmux and
 * others pass through) cannot be told from the terminal's own end by its
 * bytes: "text ESC[201~ CR more" would end the paste and send with the CR.
 * What tells them apart is time: the terminal writes a paste in one go,
 * its end marker last, and nothing of its own right behind it. So an end
 * marker is final only once the input pauses after it (keydec_pause);
 * whatever arrives before that pause is pasted text as well, given as one
 * more KEYSYM_PASTE_END (a CR in it a newline), never as keys.
 *
 * The decoder makes no ncurses call. It expects the terminal set up with
 * raw(), nonl() (so Enter is CR and Ctrl-J is LF), keypad(TRUE) and a
 * short ESCDELAY; with keypad on, ncurses turns the sequences terminfo
 * names into KEY_* codes, and passes every other sequence through one
 * character at a time (ESC, '[', '2', '0', '0', '~' for the start of a
 * paste), which the decoder parses itself. While a paste lasts the screen
 * turns keypad off, or ncurses would make keys of sequences in the pasted
 * text (its bytes would be lost).
 *
 * Calling sequence (the screen's read loop):
 *	keydec_bind_terminfo(d, code_of, arg);       once, after keypad()
 *	while ((rc = uiloop_getkey(u, &wc)) != ERR) {      get_wch
 *		keydec_feed(d, rc == KEY_CODE_YES, wc);
 *		uiloop_keypad(u, !keydec_pasting(d));      keypad()
 *	}
 *	if (keydec_waiting(d)) keydec_expire(d);   a lone Esc is the Esc key:
 *	    with keypad on, ncurses has already waited ESCDELAY after an ESC
 *	    for the rest of a sequence before returning it and then ERR
 *	if (keydec_paste_ending(d)) keydec_pause(d);   nothing more came (within
 *	    a moment) after a paste's end: it is final
 *	while (keydec_next(d, &k)) act on k (text of a paste: keydec_text). */
#ifndef CAIRN_TUI_KEY_H
#define CAIRN_TUI_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum keysym {
	KEYSYM_CHAR = 0, /* cp is the code point */
	KEYSYM_ENTER,
	KEYSYM_TAB,
	KEYSYM_BACKSPACE,
	KEYSYM_DELETE,
	KEYSYM_INSERT,
	KEYSYM_ESC,
	KEYSYM_UP,
	KEYSYM_DOWN,
	KEYSYM_LEFT,
	KEYSYM_RIGHT,
	KEYSYM_HOME,
	KEYSYM_END,
	KEYSYM_PGUP,
	KEYSYM_PGDN,
	KEYSYM_F, /* cp is the number, 1 to 12 */
	KEYSYM_PASTE_BEGIN,
	KEYSYM_PASTE_END, /* the pasted text: keydec_text */
	KEYSYM_RESIZE,    /* ncurses' KEY_RESIZE */
	KEYSYM_MOUSE,     /* ncurses' KEY_MOUSE: the screen calls getmouse */
	KEYSYM_COUNT,
};

/* The xterm modifier bits (a CSI modifier parameter is 1 + these). */
enum keymod {
	KEYMOD_SHIFT = 1,
	KEYMOD_ALT = 2,
	KEYMOD_CTRL = 4,
};

struct key {
	uint32_t cp;  /* the code point (KEYSYM_CHAR) or F-key number */
	uint8_t sym;  /* enum keysym */
	uint8_t mods; /* enum keymod bits */
};

/* ---- keys as values ---- */

/* A key value; key_char('a', KEYMOD_CTRL) is Ctrl-A. */
struct key key_char(uint32_t cp, unsigned mods);
struct key key_sym(enum keysym sym, unsigned mods);
bool key_equal(struct key a, struct key b);
/* Write the key's name as the help screen and docs/keys.md show it
 * ("Ctrl-A", "Alt-B", "Alt-Enter", "PgUp", "F1", "?", "Space"; a letter
 * with Ctrl or Alt by its capital) to out, NUL-ended; returns its length
 * (snprintf style: truncated to cap). */
size_t key_label(struct key k, char *out, size_t cap);

/* ---- the decoder ---- */

struct keydec;

/* A new decoder; the caller frees it with keydec_free (NULL is fine). */
struct keydec *keydec_new(void);
void keydec_free(struct keydec *d);
/* Map an ncurses key code beyond the standard KEY_* set (the extended
 * codes ncurses assigns to terminfo caps such as kUP3) to k. */
void keydec_bind(struct keydec *d, int code, struct key k);
/* Bind every extended terminfo key cap the decoder knows (kUP3, kDC5, ...,
 * the arrows, Home, End, PgUp, PgDn, Insert and Delete with modifiers):
 * code_of(cap, arg) returns the code ncurses uses for cap, or <= 0 for none
 * (with ncurses: key_defined(tigetstr(cap)) when tigetstr gives a string). */
void keydec_bind_terminfo(struct keydec *d, int (*code_of)(const char *cap, void *arg), void *arg);
/* Feed one get_wch result: is_code is true when it returned KEY_CODE_YES
 * (wc is then a KEY_* code), false for a character. */
void keydec_feed(struct keydec *d, bool is_code, uint32_t wc);
/* True between the start of a bracketed paste and the pause after its end
 * (keydec_pause): the input is pasted text, read with keypad off. */
bool keydec_pasting(const struct keydec *d);
/* True once a paste's end marker was read and until the pause after it:
 * the caller looks for more input (waiting a moment) and, finding none,
 * calls keydec_pause. */
bool keydec_paste_ending(const struct keydec *d);
/* The input paused: nothing more was waiting to be read. A paste's end
 * read before it is final, and what came between that end and the pause
 * is given as one more KEYSYM_PASTE_END. A paste without its end yet goes
 * on (a long one arrives in many reads); any other state is left as is. */
void keydec_pause(struct keydec *d);
/* True while an ESC or an unfinished sequence waits for what follows. */
bool keydec_waiting(const struct keydec *d);
/* Nothing more came within the escape delay: a pending ESC is the Esc key
 * (ESC ESC is two), an unfinished ESC [ or ESC O is Alt-[ or Alt-O. A
 * paste in progress is not ended by silence. */
void keydec_expire(struct keydec *d);
/* The next decoded key, in order; false when none is ready. */
bool keydec_next(struct keydec *d, struct key *k);
/* The text of the KEYSYM_PASTE_END just returned by keydec_next (UTF-8 as
 * the terminal sent it, CR and CR LF made LF); owned by the decoder, valid
 * until the next keydec_next. NULL with *len 0 for any other key. */
const char *keydec_text(const struct keydec *d, size_t *len);

#endif
