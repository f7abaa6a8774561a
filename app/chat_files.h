/* chat_files.h — the files the chat screen has written and read for it
 * (tui/chat.h, struct chat_files), each on a libuv worker: the clipboard
 * file and the external editor's temporary files, under the data root. */
#ifndef CAIRN_CHAT_FILES_H
#define CAIRN_CHAT_FILES_H

#include <uv.h>

#include "tui/chat.h"

/* The operations on loop for files under root (copied); the caller frees
 * them with chat_files_free once the loop ran every callback. */
struct chat_files *chat_files_new(uv_loop_t *loop, const char *root);
void chat_files_free(struct chat_files *f);

#endif
