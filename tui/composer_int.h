/* composer_int.h — the composer's insides, shared by composer.c (text,
 * editing, kills, history) and composer_layout.c (rows, the cursor on
 * them, vertical moves). Not for other files. */
#ifndef CAIRN_TUI_COMPOSER_INT_H
#define CAIRN_TUI_COMPOSER_INT_H

#include "base/buf.h"

#include <stddef.h>
#include <stdint.h>
#include "tui/composer.h"

/* One logical line (no LF inside) and its rows at the width laid out last. */
struct cline {
	char *p;
	size_t len, cap;
	int rows_width;	  /* the width rows[] is for; -1: not laid out */
	size_t *rows;	  /* byte offset where each visual row starts; rows[0] 0 */
	size_t n_rows, rows_cap;
	/* Edits since the rows were laid out: rows before the first changed
	 * byte stay; with one edit, rows after it are the old ones shifted
	 * once the wrap meets them again. */
	size_t dirty;	  /* first byte changed; SIZE_MAX: none */
	size_t edit_end;  /* one edit: where it ends in the new text */
	ptrdiff_t delta;  /* one edit: bytes added minus bytes removed */
	bool one_edit;
};

struct composer {
	struct cline *lines; /* at least one */
	size_t n_lines, lines_cap;
	size_t cl, co;	     /* the cursor: line, byte offset in it */
	int goal;	     /* column Up/Down aim for; -1: the cursor's own */
	int width;	     /* of the last layout; 0: none yet, no wrapping */
	size_t top;	     /* first row shown by the last layout */
	struct buf killed;   /* the kill buffer */
	bool killing;	     /* the last command was a kill */
	bool edited;	     /* changed by editing since the last set or take */
	char **hist;	     /* history, oldest first */
	size_t n_hist;
	size_t hpos;	     /* entry shown; n_hist: the draft */
	char **kept;	     /* [0..n_hist]: the edited text of an entry or the
			      * draft while another entry is shown; NULL: none */
	struct buf show;     /* the text of the rows of the last layout */
};

/* The line's rows at width (0: one row), laid out if needed. */
void composer_line_rows(struct composer *c, struct cline *l, int width);
/* Line l lost removed bytes and gained added ones at offset at: its rows
 * from there are laid out again when next needed. */
void composer_line_edited(struct cline *l, size_t at, size_t removed, size_t added);
/* Called by every command that is not a kill or a vertical move: ends a
 * run of kills and forgets the goal column. */
void composer_plain_command(struct composer *c);
/* Show history entry i (n_hist: the draft), keeping what is shown now. The
 * cursor goes to the start (at_end false) or the end. */
void composer_history_show(struct composer *c, size_t i, bool at_end);

#endif
