/* chat_phase.c — the chat screen's phases (chat_phase.h), changed only by
 * chat_to() in chat.c, which checks this table:
 *
 *   OPENING --(the log's end read ahead: chat_page_preview)--> PREVIEW
 *   OPENING | PREVIEW --(the host opened it, or made a new one:
 *                        chat_ready)--> READY
 *   OPENING | PREVIEW --(locked or damaged: chat_view_only)--> VIEW_ONLY
 *   OPENING | PREVIEW | READY --(cannot open, or no model for a new
 *                                session: chat_failed)--> FAILED
 *   READY --(/new: the next session is ready)--> READY
 *   any but CLOSING --(quit, SIGTERM, SIGHUP: chat_close)--> CLOSING
 *
 * CLOSING is the end: an open that completes after it still gives the
 * screen its model (the last answer is printed from it), but the phase
 * stays. Keys are read in every phase but CLOSING; a prompt is sent only
 * in READY (Enter before it waits for READY; VIEW_ONLY refuses it). */
#include "tui/chat_phase.h"

#define B(p) (1u << (p))

/* chat_next[from] has bit `to` set. */
static const unsigned chat_next[CHAT_PHASE_COUNT] = {
	[CHAT_OPENING] = B(CHAT_PREVIEW) | B(CHAT_READY) | B(CHAT_VIEW_ONLY) | B(CHAT_FAILED) |
			 B(CHAT_CLOSING),
	[CHAT_PREVIEW] = B(CHAT_READY) | B(CHAT_VIEW_ONLY) | B(CHAT_FAILED) | B(CHAT_CLOSING),
	[CHAT_READY] = B(CHAT_READY) | B(CHAT_FAILED) | B(CHAT_CLOSING),
	[CHAT_VIEW_ONLY] = B(CHAT_CLOSING),
	[CHAT_FAILED] = B(CHAT_CLOSING),
	[CHAT_CLOSING] = 0,
};

bool chat_phase_allows(enum chat_phase from, enum chat_phase to)
{
	if ((unsigned)from >= CHAT_PHASE_COUNT || (unsigned)to >= CHAT_PHASE_COUNT)
		return false;
	return (chat_next[from] & B(to)) != 0;
}

const char *chat_phase_name(enum chat_phase p)
{
	static const char *const names[CHAT_PHASE_COUNT] = {
		[CHAT_OPENING] = "opening", [CHAT_PREVIEW] = "preview",	  [CHAT_READY] = "ready",
		[CHAT_VIEW_ONLY] = "view-only", [CHAT_FAILED] = "failed", [CHAT_CLOSING] = "closing",
	};
	return (unsigned)p < CHAT_PHASE_COUNT ? names[p] : "?";
}
