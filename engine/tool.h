/* tool.h — the tools a model may call, run on the loop (issue: tools,
 * approvals and spawn groups; docs/tools.md).
 *
 * A tool run takes the call's arguments (a JSON object as the model sent
 * it) and completes exactly once, through its callback on the loop, with a
 * result: a status, the text the model reads (valid UTF-8, capped: head and
 * tail kept with a note of what was cut), and the fuller output kept for a
 * blob. Nothing blocks the loop: `shell` runs a child process through
 * uv_spawn; the file tools do their disk work on a uv worker.
 *
 * Tool bodies know nothing of persistence, approvals or the turn: the
 * runner makes tool/call, the approval and tool/started durable before it
 * calls tool_start (intent before effect), and captures the result.
 *
 * Paths in arguments resolve against ctx->cwd. Output and arguments are
 * made valid UTF-8 (invalid bytes and NUL become U+FFFD) before they reach
 * a result. Errors the model can act on (a missing file, an ambiguous edit,
 * a non-zero exit) are results with status TOOL_ERROR, never a failure of
 * the turn; tool_start itself fails only for an unknown tool name (then
 * the caller answers with an error result of its own). */
#ifndef CAIRN_TOOL_H
#define CAIRN_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/err.h"

/* tool/result.status (docs/format.md) for what a body can end with. */
enum tool_status {
	TOOL_OK,
	TOOL_ERROR,    /* the tool ran and failed, or its arguments were wrong */
	TOOL_CANCELED, /* tool_cancel: the process group got TERM, then KILL */
};

/* Limits; 0 in a field means its default. */
struct tool_limits {
	size_t result_max;   /* bytes of output the model reads (30 KB) */
	size_t full_max;     /* bytes of output kept for the blob (8 MiB) */
	unsigned timeout_ms; /* shell: default timeout (120 s); the model may ask up to 600 s */
	size_t read_max;     /* read_file: bytes read at most (256 KiB) */
	size_t grep_max;     /* grep: matching lines reported at most (200) */
};

struct tool_ctx {
	uv_loop_t *loop;
	const char *cwd;          /* the session's cwd: paths resolve against it */
	char *const *env;         /* the tools' environment, NULL-terminated
				   * (tool_env builds it); borrowed for the run */
	struct tool_limits limits;
};

struct tool_result {
	enum tool_status status;
	char *output;     /* what the model reads: valid UTF-8, capped (owned) */
	char *full;       /* the output up to full_max when output was cut, else NULL (owned) */
	bool truncated;   /* output is not the whole of it */
	int exit_code;    /* shell: the exit status; -1 when killed by a signal or not run */
	int signal;       /* shell: the signal that ended it (0: none) */
	cJSON *extra;     /* fields for tool/result beyond these (e.g. edit_file's diff); owned */
};

struct tool_run;
/* Called once per run on the loop, never from inside tool_start; what r
 * holds is the receiver's (move it out or tool_result_release it; r itself
 * lives for the call). run is freed when the callback
 * returns: it must not be used (nor canceled) after that. */
typedef void (*tool_done_fn)(void *ctx, struct tool_run *run, struct tool_result *r);

/* Start tool name with args (borrowed for the call; copied as needed).
 * ctx is read during the call; ctx->env and ctx->cwd must stay valid for
 * the run.
 * -1 (cb never runs): an unknown name (CERR_USAGE). Arguments that are
 * wrong for the tool complete with TOOL_ERROR saying what is wrong. */
struct tool_run *tool_start(const struct tool_ctx *ctx, const char *name, const cJSON *args,
			    tool_done_fn cb, void *cb_ctx, struct cerr *err);
/* Cancel a run: a shell's process group gets TERM, then KILL after 2 s,
 * and is joined; a file tool not yet finished completes TOOL_CANCELED
 * (one that already wrote keeps its effect and says so). The callback
 * still runs once. */
void tool_cancel(struct tool_run *run);

void tool_result_release(struct tool_result *r);

/* The tools' JSON Schemas as the providers take them: a new array the
 * caller owns of {"name","description","parameters"}. */
cJSON *tool_schemas(void);
/* Is name a tool that only reads (read_file, list_dir, grep)? */
bool tool_is_read_only(const char *name);

/* The environment tools run with: environ minus the variables matching
 * any of strip (NULL-terminated shell patterns, e.g. "*_API_KEY"), plus
 * PAGER=cat GIT_PAGER=cat GIT_TERMINAL_PROMPT=0. A new NULL-terminated
 * array the caller frees with tool_env_free. */
char **tool_env(char *const *environ_, const char *const *strip);
void tool_env_free(char **env);

#endif
