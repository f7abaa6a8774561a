/* closer_text.c — the words of results cairn writes itself (closer_text.h). */
#include "persist/closer_text.h"

#include "base/xalloc.h"

static const struct {
	enum vocab_status status;
	const char *lead, *what, *next;
} T[] = {
	[CLOSER_OUTCOME_UNKNOWN] = {VS_OUTCOME_UNKNOWN, "outcome unknown",
				    "the session stopped while this tool was running, so it may "
				    "or may not have taken effect",
				    "Retry only read-only or idempotent operations; otherwise check "
				    "the external state first or ask the user."},
	[CLOSER_NOT_EXECUTED] = {VS_NOT_EXECUTED, "not executed", "this tool call did not run",
				 "It had no effect; call it again if it is still needed."},
	[CLOSER_CANCELED] = {VS_CANCELED, "canceled",
			     "the user canceled this tool while it ran; it may have partly "
			     "taken effect",
			     "Do not repeat it unless the user asks; check its effect first."},
	[CLOSER_CANCELED_NOT_RUN] = {VS_CANCELED, "canceled",
				     "not run: the user canceled before it started",
				     "It had no effect; do not repeat it unless the user asks."},
	[CLOSER_DENIED] = {VS_DENIED, "denied", "the user did not allow this call",
			   "Do not retry it as it is; take another approach or ask the user."},
};

char *closer_text(enum closer_kind k, const char *why)
{
	if (why && *why)
		return xasprintf("%s: %s (%s). %s", T[k].lead, T[k].what, why, T[k].next);
	return xasprintf("%s: %s. %s", T[k].lead, T[k].what, T[k].next);
}

enum vocab_status closer_status(enum closer_kind k)
{
	return T[k].status;
}
