/* offline.h — the built-in offline provider: no network, deterministic.
 *
 * It answers every prompt with the same markdown reply (a heading, a
 * list, a table, a code block) that quotes the prompt, cut into tokens
 * (a word with the spaces after it). When tools are offered it also
 * proposes tool calls, so the agent loop can be tried without a network:
 * a prompt "run CMD", "read PATH" or "list [PATH]" gets one call of
 * shell, read_file or list_dir (finish reason tool_calls); a conversation
 * that ends with a tool's result gets "done: " and the result's first
 * line. The runner paces the tokens, one
 * every offline.pace_ms (config.h); this file only generates them, as the
 * same stream events a network provider's decoder emits:
 *
 *     o = offline_new(prompt);
 *     while (offline_step(o, emit, arg)) wait pace_ms;
 *     offline_free(o);
 */
#ifndef CAIRN_OFFLINE_H
#define CAIRN_OFFLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/stream.h"

#define OFFLINE_NAME "offline"  /* the provider's name and its only model */

struct offline;

/* What the offline provider is asked (strings borrowed for offline_new_ask). */
struct offline_ask {
	const char *prompt;      /* the last user text (NULL: none) */
	const char *tool_result; /* the conversation ends with this tool result's text (NULL: not) */
	bool tools;              /* tools are offered */
};

/* The reply to a (everything it needs copied). Free with offline_free. */
struct offline *offline_new_ask(const struct offline_ask *a);
/* The reply to prompt without tools (borrowed; NULL: no prompt). */
struct offline *offline_new(const char *prompt);
void offline_free(struct offline *o);
/* Emit the next token (STREAM_TEXT) or the proposed call (STREAM_TOOL_START
 * and STREAM_TOOL_END); after the last one, STREAM_USAGE, STREAM_FINISH
 * (stop, or tool_calls) and STREAM_DONE in one call. Returns false once
 * STREAM_DONE was emitted (and for every later call, which emits nothing). */
bool offline_step(struct offline *o, stream_emit_fn emit, void *arg);
/* The whole reply (what the steps emit, joined); owned by o. */
const char *offline_reply(const struct offline *o);

#endif
