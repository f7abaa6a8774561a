/* keytab.h — the chat screen's key table: every key, the context it acts
 * in, the action it names and the words that explain it. The screen's
 * dispatch (keytab_find), its help screen (keytab_help) and docs/keys.md
 * (keytab_markdown; tests/cli/test_keys_doc.sh fails when the page is out of
 * date) all come from this one table, so they cannot disagree.
 *
 * Contexts: the screen says which apply at the moment (a bit set of
 * KEYCTX_*) and keytab_find takes the first entry for the key in the order
 * of precedence below: a modal context first (approval, help, search),
 * then the composer's state (empty, waiting prompts, a running turn), then
 * the composer, then the whole screen. An action's conditions beyond the
 * context (a second Ctrl-C within 2 s, Up on the first row) are the
 * screen's and the composer's to check, and the help text says them. */
#ifndef CAIRN_TUI_KEYTAB_H
#define CAIRN_TUI_KEYTAB_H

#include <stddef.h>

#include "base/buf.h"
#include "tui/key.h"

/* In order of precedence. */
enum keyctx {
	KEYCTX_APPROVAL, /* a tool call waits for an answer */
	KEYCTX_HELP,	 /* the help screen is shown */
	KEYCTX_SEARCH,	 /* searching the transcript */
	KEYCTX_EMPTY,	 /* the composer is empty */
	KEYCTX_QUEUED,	 /* queued prompts wait (after a canceled or failed turn or save) */
	KEYCTX_TURN,	 /* a turn is running */
	KEYCTX_COMPOSER, /* the composer takes typing */
	KEYCTX_GLOBAL,	 /* anywhere on the chat screen */
	KEYCTX_COUNT,
};

#define KEYCTX_BIT(c) (1u << (c))

enum keyact {
	KEYACT_NONE = 0,
	/* composer */
	KEYACT_SEND,
	KEYACT_NEWLINE,
	KEYACT_COMPLETE,
	KEYACT_LEFT,
	KEYACT_RIGHT,
	KEYACT_WORD_LEFT,
	KEYACT_WORD_RIGHT,
	KEYACT_LINE_START,
	KEYACT_LINE_END,
	KEYACT_UP,
	KEYACT_DOWN,
	KEYACT_BACKSPACE,
	KEYACT_DELETE,
	KEYACT_KILL_TO_END,
	KEYACT_KILL_TO_START,
	KEYACT_KILL_WORD_BACK,
	KEYACT_YANK,
	KEYACT_EDITOR,
	/* composer empty, queue */
	KEYACT_SEND_WAITING,
	KEYACT_PULL_QUEUED,
	KEYACT_DROP_QUEUED,
	KEYACT_QUIT,
	KEYACT_HELP,
	/* turn */
	KEYACT_CANCEL,
	/* transcript */
	KEYACT_SEARCH,
	KEYACT_SCROLL_PAGE_UP,
	KEYACT_SCROLL_PAGE_DOWN,
	KEYACT_SCROLL_TOP,
	KEYACT_SCROLL_BOTTOM,
	KEYACT_SELECT_PREV,
	KEYACT_SELECT_NEXT,
	KEYACT_COPY,
	KEYACT_EXPAND,
	/* screen */
	KEYACT_INTERRUPT,
	KEYACT_SUSPEND,
	KEYACT_REDRAW,
	/* approval */
	KEYACT_ALLOW_ONCE,
	KEYACT_ALLOW_SESSION,
	KEYACT_DENY,
	KEYACT_DENY_NOTE,
	/* search, help */
	KEYACT_SEARCH_NEXT,
	KEYACT_SEARCH_PREV,
	KEYACT_CLOSE,
	KEYACT_COUNT,
};

struct keybinding {
	struct key key;
	enum keyctx ctx;
	enum keyact act;
	const char *help; /* what it does, lowercase, no final period */
};

/* The table, in the order the help screen and docs/keys.md show it; static,
 * owned by this module. */
const struct keybinding *keytab_entries(size_t *n);
/* The entry for k in the first active context (a KEYCTX_BIT set) that binds
 * it, or NULL: a character key with no entry is text for the composer. The
 * entry is the table's. */
const struct keybinding *keytab_find(struct key k, unsigned active);
/* A context's heading and one-line description ("Composer", "editing the
 * prompt"); static strings. */
const char *keytab_ctx_title(enum keyctx ctx);
const char *keytab_ctx_about(enum keyctx ctx);
/* Append the help screen's text to out: per context a heading, then one
 * line per action with its keys ("  Alt-Enter, Ctrl-J   insert a newline"),
 * the key column keys_width cells wide. Lines longer than width cells
 * (<= 0: no limit) wrap at spaces, each line after the first indented
 * to where its text began (an action's under the text column, a
 * heading's under the words after its title). */
void keytab_help(struct buf *out, int keys_width, int width);
/* The pieces of that text, for another table shown the same way (the
 * slash commands, chat_cmd.h): a heading ("Title: about", wrapped under
 * the about), and a row ("  keys   help", wrapped under the help). */
void keytab_help_heading(struct buf *out, const char *title, const char *about, int width);
void keytab_help_row(struct buf *out, const char *keys, const char *help, int keys_width, int width);
/* Append docs/keys.md to out, up to its last part: the slash commands
 * (chat_cmd_markdown) follow it. */
void keytab_markdown(struct buf *out);

#endif
