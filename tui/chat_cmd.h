/* chat_cmd.h — the chat screen's slash commands (/new, /model, /approve,
 * /title, /save, /help, /quit), their completion with Tab, and Ctrl-G's
 * external editor. An unknown command is an error on the status line and
 * is never sent to the model. */
#ifndef CAIRN_CHAT_CMD_H
#define CAIRN_CHAT_CMD_H

struct chat;

/* Run the command line (starts with '/'; borrowed). */
void chat_cmd_run(struct chat *c, const char *line);
/* Tab: complete the command name being typed in the composer. */
void chat_cmd_complete(struct chat *c);
/* Ctrl-G: edit the composer's text in $VISUAL or $EDITOR (vi when
 * neither is set); the screen gives the terminal to it meanwhile. */
void chat_cmd_editor(struct chat *c);

#endif
