/* composer.h — the chat screen's prompt editor: a multi-line UTF-8 text
 * with a cursor, Emacs-style editing and kills, prompt history, and a
 * layout of its text wrapped to a width. No terminal calls: the screen
 * maps keys to these functions (tui/keytab.h) and draws what
 * composer_layout returns.
 *
 * The text is always valid UTF-8 with newlines and tabs as its only
 * controls: what is inserted is cleaned first (invalid bytes and NUL
 * become U+FFFD; CR LF and CR become LF; other controls and bidi
 * overrides become the visible, inert text base/termsafe.h shows for
 * them, e.g. ESC as "^["), so what is shown is what is sent and nothing
 * drawn from it can act on the terminal. The cursor moves by grapheme
 * cluster (tui/grapheme.h) and an edit never splits one.
 *
 * Kills: Ctrl-K, Ctrl-U and Ctrl-W put what they remove in the kill buffer;
 * consecutive kills add to it (forward ones after, backward ones before)
 * and Ctrl-Y inserts it, as in Emacs and readline.
 *
 * History: the caller adds past prompts (composer_history_add, oldest
 * first). composer_up on the first visual row shows the previous entry,
 * composer_down on the last row the next one; past the newest comes back
 * the draft that was being typed. An entry edited while shown keeps its
 * edit until the next composer_take or composer_set; the history itself is
 * never changed. */
#ifndef CAIRN_TUI_COMPOSER_H
#define CAIRN_TUI_COMPOSER_H

#include <stdbool.h>
#include <stddef.h>

#include "tui/key.h"

struct composer;

/* ---- lifecycle ---- */

/* An empty composer; the caller frees it with composer_free (NULL is fine). */
struct composer *composer_new(void);
void composer_free(struct composer *c);

/* ---- the whole text ---- */

/* A copy of the text (lines joined by LF, NUL-terminated); the caller
 * frees it. */
char *composer_text(const struct composer *c, size_t *len);
/* The text, for sending: the caller owns it; the composer is left empty,
 * its history at the draft, its per-entry edits dropped. */
char *composer_take(struct composer *c, size_t *len);
/* Replace the text with s[0..n) (cleaned as any insert), cursor at its end;
 * the composer counts as not edited. Pulling a queued prompt back should
 * first check composer_edited, or the user's draft is lost. */
void composer_set(struct composer *c, const char *s, size_t n);
/* composer_set for a draft the user typed earlier (the one saved for the
 * project, back after a restart): it counts as edited, so nothing pulled
 * back over it goes unnoticed. */
void composer_restore(struct composer *c, const char *s, size_t n);
/* True when the text is empty. */
bool composer_empty(const struct composer *c);
/* True when the user has unsent edits: the text was changed by editing
 * since the last composer_set or composer_take and is not empty, or a
 * draft or an edited history entry is kept aside while history is shown. */
bool composer_edited(const struct composer *c);
/* The cursor as a byte offset into the text composer_text returns. */
size_t composer_cursor(const struct composer *c);
/* Put the cursor at byte offset off (clamped to the text, moved back to the
 * start of the cluster that contains it). */
void composer_set_cursor(struct composer *c, size_t off);

/* ---- editing (each returns true when the text or cursor changed) ---- */

/* Insert s[0..n) at the cursor, cleaned; the cursor ends after it. O(n)
 * plus the text after the cursor on its line. */
bool composer_insert(struct composer *c, const char *s, size_t n);
bool composer_newline(struct composer *c);
/* Delete the cluster before / after the cursor (a newline joins lines). */
bool composer_backspace(struct composer *c);
bool composer_delete(struct composer *c);
/* Kill to the end of the line (at its end: the newline), to its start (at
 * its start: the newline before), the word before the cursor (back over
 * white space, then back to the previous white space); Ctrl-K, Ctrl-U,
 * Ctrl-W. */
bool composer_kill_to_end(struct composer *c);
bool composer_kill_to_start(struct composer *c);
bool composer_kill_word_back(struct composer *c);
/* Insert the kill buffer at the cursor (Ctrl-Y). */
bool composer_yank(struct composer *c);

/* ---- moving ---- */

bool composer_left(struct composer *c);
bool composer_right(struct composer *c);
/* To the start of the previous word / the end of the next word (a word is
 * letters, digits and '_'); Alt-B, Alt-F. */
bool composer_word_left(struct composer *c);
bool composer_word_right(struct composer *c);
/* To the start / end of the line (Ctrl-A, Ctrl-E). */
bool composer_line_start(struct composer *c);
bool composer_line_end(struct composer *c);
/* Up / down one visual row at the width of the last composer_layout (no
 * wrapping before the first), keeping the goal column across rows; on the
 * first / last row, the previous / next history entry (the previous one
 * shown with the cursor at its start, the next one at its end, so that
 * repeated presses keep walking). */
bool composer_up(struct composer *c);
bool composer_down(struct composer *c);

/* ---- keys ---- */

/* Do what the key table's action act (enum keyact, tui/keytab.h) does to
 * the composer: the editing and moving actions call the functions above.
 * Returns false, doing nothing, for an action that is not the composer's
 * (send, search, scrolling, ...), which the screen handles. */
bool composer_apply(struct composer *c, int act);
/* Insert the character of a key the table does not bind (a KEYSYM_CHAR
 * without Ctrl or Alt: text typed). False, doing nothing, for any other. */
bool composer_type(struct composer *c, struct key k);

/* ---- history ---- */

/* Append s[0..n) as the newest history entry (copied). An entry equal to
 * the newest one is not added twice. */
void composer_history_add(struct composer *c, const char *s, size_t n);
/* Entries held; 0 after composer_new. */
size_t composer_history_len(const struct composer *c);

/* ---- layout ---- */

struct composer_row {
	const char *text; /* what to draw: UTF-8, no controls; owned by the
			   * composer, valid until its next call */
	size_t len;
	int cells; /* <= width, except a row holding one cluster wider than it */
	bool wrapped; /* a soft wrap continues this row's line on the next */
};

struct composer_view {
	size_t rows;   /* visual rows of the whole text at this width */
	size_t top;    /* the first row returned */
	size_t shown;  /* rows returned (min(height, rows - top)) */
	size_t cursor_y; /* the cursor's row, counted from top (< shown) */
	int cursor_x;    /* its cell column (< width) */
};

/* Lay the text out at width cells (>= 1) and return the height rows
 * (>= 1) around the cursor in rows[0..view->shown) (rows has room for
 * height; their text is the composer's, valid until its next call): rows
 * break between
 * clusters, so a wide character is never split, and a line that fills a
 * row exactly gets one more (empty) row so the cursor at its end stays
 * inside the width. The window scrolls only as far as needed to keep the
 * cursor inside. Rows of unchanged lines are cached; an edit lays out again
 * only its own line. */
void composer_layout(struct composer *c, int width, int height, struct composer_row *rows,
		     struct composer_view *view);

#endif
