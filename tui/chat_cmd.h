/* chat_cmd.h — the chat screen's slash commands (/new, /model, /approve,
 * /title, /save, /help, /quit), their completion with Tab, and Ctrl-G's
 * external editor. An unknown command is an error on the status line and
 * is never sent to the model. One table (chat_cmd_entries) drives the
 * dispatch, the completion, the help screen (chat_cmd_help, after the
 * keys) and docs/keys.md's last part (chat_cmd_markdown), as keytab.h's
 * does for keys. */
#ifndef CAIRN_CHAT_CMD_H
#define CAIRN_CHAT_CMD_H

#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"

struct chat;

struct chat_command {
	const char *name; /* "/title" */
	const char *args; /* its argument's words ("[TEXT]"), NULL: none */
	const char *help; /* what it does, lowercase, no final period */
	/* Run it with arg (NULL: none; name is the table's): 0, or -1 and
	 * *err (said on the status line). */
	int (*run)(struct chat *c, const char *name, const char *arg, struct cerr *err);
};

/* The table, in the order completion, help and docs show it; static. */
const struct chat_command *chat_cmd_entries(size_t *n);
/* The entry named name exactly ("/save"), or NULL; the table's. */
const struct chat_command *chat_cmd_find(const char *name);
/* Run the command line (starts with '/'; borrowed). */
void chat_cmd_run(struct chat *c, const char *line);
/* Tab: complete the command name being typed in the composer. */
void chat_cmd_complete(struct chat *c);
/* Append the help screen's part for the commands to out (as keytab_help
 * does for keys: the same column and wrapping). */
void chat_cmd_help(struct buf *out, int keys_width, int width);
/* Append docs/keys.md's part for the commands to out. */
void chat_cmd_markdown(struct buf *out);
/* Ctrl-G: edit the composer's text in $VISUAL or $EDITOR (vi when
 * neither is set); the screen gives the terminal to it meanwhile. */
void chat_cmd_editor(struct chat *c);

#endif
