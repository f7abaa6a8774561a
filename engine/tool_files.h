/* tool_files.h — the file tools' bodies, entered from tool.c's dispatch:
 * read_file, write_file, edit_file, list_dir and grep. Every tool does its
 * disk work on a libuv worker and completes on the loop (docs/tools-files.md). */
#ifndef CAIRN_TOOL_FILES_H
#define CAIRN_TOOL_FILES_H

#include "engine/tool.h"

/* Start file tool name with args (borrowed for the call; what the worker
 * needs is copied). NULL (cb never runs): name is not a file tool
 * (CERR_USAGE) or the work could not be queued (CERR_IO). Otherwise cb
 * runs exactly once on ctx->loop, never from inside this call; wrong or
 * missing arguments complete with TOOL_ERROR naming the parameter. The
 * result r passed to cb is valid during the callback: the receiver takes
 * its fields (copying *r) or releases them (tool_result_release). The run
 * is freed once cb returns. */
struct tool_run *tool_files_start(const struct tool_ctx *ctx, const char *name, const cJSON *args,
				  tool_done_fn cb, void *cb_ctx, struct cerr *err);
/* Cancel a run whose callback has not run yet: it completes TOOL_CANCELED
 * (a write that already happened keeps its effect and the output says
 * so). Calling it again, or after the callback, is not allowed. */
void tool_files_cancel(struct tool_run *run);
/* Is name one of the file tools? */
bool tool_files_has(const char *name);

#endif
