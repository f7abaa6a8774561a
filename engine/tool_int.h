/* tool_int.h — what the tool bodies share behind tool.h: the run handle
 * each body embeds, the start functions tool_start dispatches to, the
 * limits' defaults and one way to fill a result's text. Not for callers of
 * tool.h. */
#ifndef CAIRN_TOOL_INT_H
#define CAIRN_TOOL_INT_H

#include "engine/tool.h"

#define TOOL_RESULT_MAX_DEFAULT ((size_t)30 * 1000)
#define TOOL_FULL_MAX_DEFAULT ((size_t)8 << 20)
#define TOOL_TIMEOUT_MS_DEFAULT 120000u
#define TOOL_TIMEOUT_MS_MAX 600000u
#define TOOL_READ_MAX_DEFAULT ((size_t)256 << 10)
#define TOOL_GREP_MAX_DEFAULT ((size_t)200)

/* The run handle a body embeds in its own state (container_of style) and
 * returns from its start function. The body sets cancel; tool_cancel
 * calls it. The handle stays valid until the body's tool_done_fn returns,
 * after which the body frees it: a body calls its callback last, once,
 * from the loop (never from inside its start function). */
struct tool_run {
	void (*cancel)(struct tool_run *run); /* asks the body to stop; cb still runs once */
};

/* shell (tool_shell.c). Never fails: wrong arguments or a command that
 * cannot be spawned complete with TOOL_ERROR. */
struct tool_run *tool_shell_start(const struct tool_ctx *ctx, const cJSON *args,
				  tool_done_fn cb, void *cb_ctx, struct cerr *err);

/* read_file, write_file, edit_file, list_dir and grep (tool_files.c,
 * tool_grep.c). tool_start calls it only with one of those five names;
 * like tool_start it returns NULL only for a name it does not know
 * (CERR_USAGE), and the callback then never runs. */
struct tool_run *tool_files_start(const struct tool_ctx *ctx, const char *name,
				  const cJSON *args, tool_done_fn cb, void *cb_ctx,
				  struct cerr *err);

/* l with every 0 field replaced by its default. */
struct tool_limits tool_limits_resolve(const struct tool_limits *l);

/* Set r->output (valid UTF-8, capped at l->result_max), r->truncated and,
 * when cut, r->full (the text capped at l->full_max) from text[0..n);
 * l is resolved. Frees what r held there before. */
void tool_result_text(struct tool_result *r, const char *text, size_t n,
		      const struct tool_limits *l);

#endif
