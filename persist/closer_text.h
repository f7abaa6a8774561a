/* closer_text.h — the words of a tool result cairn writes itself (repair
 * closing an interrupted turn, the runner answering a call it did not run
 * or that was denied or canceled). The text the model reads starts with
 * the status, then says what happened and what the model may safely do
 * next; docs/format.md §11.2 quotes them. */
#ifndef CAIRN_CLOSER_TEXT_H
#define CAIRN_CLOSER_TEXT_H

#include "persist/vocab.h"

enum closer_kind {
	CLOSER_OUTCOME_UNKNOWN, /* it started and no result was saved (a crash) */
	CLOSER_NOT_EXECUTED,    /* it never ran */
	CLOSER_CANCELED,        /* the user canceled it while it ran */
	CLOSER_CANCELED_NOT_RUN,/* the user canceled before it started */
	CLOSER_DENIED,          /* the user (or the policy) did not allow it */
};

/* "<status>: <what happened>[ (<why>)]. <what to do next>" — why (may be
 * NULL) names the cause, e.g. "the step limit was reached". Caller frees. */
char *closer_text(enum closer_kind k, const char *why);
/* The tool/result.status of k (VS_OUTCOME_UNKNOWN, VS_NOT_EXECUTED,
 * VS_CANCELED, VS_DENIED). */
enum vocab_status closer_status(enum closer_kind k);

#endif
