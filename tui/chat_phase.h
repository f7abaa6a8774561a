/* chat_phase.h — the chat screen's phases and the transitions between
 * them (the diagram is in chat_phase.c), and the modes of its input line.
 * struct chat holds one of each; chat_to() (chat_int.h) is the only
 * change of phase, and it checks chat_phase_allows(). */
#ifndef CAIRN_CHAT_PHASE_H
#define CAIRN_CHAT_PHASE_H

#include <stdbool.h>

enum chat_phase {
	CHAT_OPENING,   /* the session asked for; the screen empty */
	CHAT_PREVIEW,   /* the log's end shown, read ahead of the open (chat_page.c) */
	CHAT_READY,     /* the session open: prompts are sent */
	CHAT_VIEW_ONLY, /* the log shown, never written (the banner says why) */
	CHAT_FAILED,    /* the session could not be opened */
	CHAT_CLOSING,   /* the terminal being given back: no key is read */
	CHAT_PHASE_COUNT,
};

/* What the input line takes, one at a time (chat_mode_to). A tool call's
 * question is not one of them: it is the session's state (a tool waits),
 * and its keys come first in every mode but CHAT_NOTE (keytab.h). */
enum chat_mode {
	CHAT_COMPOSE, /* the composer */
	CHAT_HELP,    /* the help screen is shown (a character typed closes it) */
	CHAT_SEARCH,  /* the search's query is typed */
	CHAT_NOTE,    /* the note of a denial is typed */
	CHAT_MODE_COUNT,
};

/* True when the diagram has an arrow from `from` to `to`. */
bool chat_phase_allows(enum chat_phase from, enum chat_phase to);
/* The phase's name in lowercase ("view-only"); a static string. */
const char *chat_phase_name(enum chat_phase p);

#endif
