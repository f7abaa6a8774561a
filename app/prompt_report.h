/* prompt_report.h — what `cairn -p` reports: each turn's outcome, text,
 * usage and duration as its markers arrive, the exit code the first
 * failing turn decides, and the --json result line (docs/cairn.1,
 * "HEADLESS MODE"). */
#ifndef CAIRN_PROMPT_REPORT_H
#define CAIRN_PROMPT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/err.h"

/* Exit codes of turns, beyond the persistence classes 1-8. */
enum {
	EXIT_PROVIDER = 10,  /* the provider refused or failed */
	EXIT_CANCELED = 11,  /* canceled (a signal, EPIPE on stdout) */
	EXIT_DELIVERY = 12,  /* sent, the answer lost: never re-sent */
	EXIT_UNCERTAIN = 13, /* a capture or the full save failed after dispatch */
	EXIT_STEP_LIMIT = 14, /* the turn reached its step limit */
};

struct prompt_report {
	cJSON *turns;         /* [{"turn","outcome","text","usage","error"?,"duration_ms"}] */
	struct buf text;      /* the running turn's streamed answer */
	int64_t turn_started; /* ms, for its duration */
	int exit_code;        /* the first failing turn's (0 while none failed) */
	size_t settled;       /* turns settled */
};

void prompt_report_init(struct prompt_report *r);
void prompt_report_release(struct prompt_report *r);
/* A turn's "turn_done" marker payload: recorded (with the text streamed
 * since the last one). Returns whether it completed. */
bool prompt_report_done(struct prompt_report *r, const cJSON *done, int64_t now_ms);
/* Its "settled" marker: ok, or the full save failed (the turn's exit code
 * becomes EXIT_UNCERTAIN unless a persistence class says more). Returns
 * ok. message is stored for the result (may be NULL). */
bool prompt_report_settled(struct prompt_report *r, bool ok, const char *message);
/* A failure outside any turn (a send refused): it decides the exit code
 * when nothing failed before it. */
void prompt_report_fail(struct prompt_report *r, const struct cerr *err);
/* The exit code a turn's done payload means (not_started: its class). */
int prompt_report_exit_of(const cJSON *done, bool settled_ok);
/* The --json result line for session (a new object the caller frees). */
cJSON *prompt_report_result(const struct prompt_report *r, const char *session);

#endif
