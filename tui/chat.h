/* chat.h — the chat screen: one session's transcript, its queued prompts,
 * the composer and the status line, on the engine's loop. It is one more
 * consumer of the sink and client of the host, exactly like headless
 * mode: it applies the sink's items in order to its transcript model
 * (tui/transcript.h), and only once everything before a turn's completion
 * marker is applied does it tell the host (host_applied). It reads no
 * file: what it shows of a log comes from the host (host_open_history,
 * host_page_read), and the files it has written and read are the
 * application's (struct chat_files).
 *
 * Calling sequence (app/cmd_chat.c):
 *	c = chat_new(&deps);                 signals handled from here on
 *	chat_start(c, &err);                 the terminal taken, first frame;
 *	                                     keys typed now are kept in order
 *	chat_page_preview(c, id);            the log's end shown meanwhile
 *	host_open_history(host, id, chat_history, chat_history_ctx(c), opened, ...)
 *	  or host_create(...); then, the session ready:
 *	chat_ready(c, id, &settings);        an Enter typed meanwhile sends now
 *	... deps.quit(ctx) when the user quits or SIGTERM/SIGHUP came ...
 *	chat_close(c, closed_cb, ctx);       the terminal given back, then cb
 *	chat_free(c); */
#ifndef CAIRN_CHAT_H
#define CAIRN_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/err.h"
#include "engine/host.h"
#include "sink/sink.h"
#include "tui/tty.h"

/* Bytes of a prompt read back from the external editor, at most. */
#define CHAT_EDIT_MAX (8u * 1024u * 1024u)

/* What a file operation of chat_files completed with, on the loop: the
 * file's path (the new temporary file, or the clipboard file) and, for a
 * read, its text (NUL terminated, n bytes), all borrowed for the call;
 * or err. */
typedef void (*chat_file_cb)(void *ctx, const char *path, const char *text, size_t n,
			     const struct cerr *err);

/* The files the screen has written and read for it, since the screen
 * reads and writes no file itself: the application's (app/chat_files.c),
 * done off the loop. Each operation completes through cb on the loop,
 * never from inside the call, or returns -1 with err when it cannot be
 * queued (then cb never runs); text and path are copied. */
struct chat_files {
	/* Replace the clipboard file with text (what OSC 52 may not have
	 * put on the clipboard); cb gets its path. */
	int (*clip_write)(void *fctx, const char *text, size_t n, chat_file_cb cb, void *ctx,
			  struct cerr *err);
	/* A new private file holding text for the external editor; cb gets
	 * its path. */
	int (*edit_write)(void *fctx, const char *text, size_t n, chat_file_cb cb, void *ctx,
			  struct cerr *err);
	/* Read the editor's file at path back (at most max bytes: more is
	 * CERR_USAGE, nothing read) and remove it; cb gets its text. */
	int (*edit_read)(void *fctx, const char *path, size_t max, chat_file_cb cb, void *ctx,
			 struct cerr *err);
	/* Remove the editor's file at path (no read follows); nothing to report. */
	void (*edit_remove)(void *fctx, const char *path);
	void *fctx;
};

struct chat_deps {
	uv_loop_t *loop;
	struct host *host;  /* borrowed; outlives the screen */
	struct sink *sink;  /* borrowed; the screen reads it */
	const struct chat_files *files; /* borrowed; outlives the screen */
	const char *cwd;    /* the project: its composer draft is saved (copied) */
	const char *draft;  /* the draft to start with (NULL: none; copied) */
	/* When a turn ends or an approval waits and nobody typed for a
	 * while: nothing, BEL, or an OSC 9 notification (tty_bell_kind). */
	enum tty_bell ringer;
	/* /new and /model (arg: the name, NULL to show it): what the
	 * application does. 0, or -1 with err (shown on the status line). */
	int (*command)(void *ctx, const char *name, const char *arg, struct cerr *err);
	/* The user asked to quit (or SIGTERM, SIGHUP): the caller closes the
	 * screen (chat_close), then what it runs on. Called once. */
	void (*quit)(void *ctx);
	void *ctx;
};

struct chat;

/* A new screen (owned by the caller: chat_free after chat_close). */
struct chat *chat_new(const struct chat_deps *d);
/* Take the terminal on descriptors 0 and 1 and draw the first frame. -1
 * with err when they are not a terminal. */
int chat_start(struct chat *c, struct cerr *err);
/* For host_open_history: feeds the model being loaded (on the worker). */
void chat_history(void *ctx, enum vocab_type type, const char *turn, uint64_t seq, int64_t t_ms,
		  const cJSON *data);
void *chat_history_ctx(struct chat *c, const char *id);
/* The session is open (or created): its id and what its turns are sent
 * with, for the status line. A note for the status line may be given
 * (NULL: none), e.g. "no session here yet: a new one". */
void chat_ready(struct chat *c, const char *id, const char *provider, const char *model,
		const char *note);
/* The session cannot be written (held by another process, damaged): the
 * model fed through chat_history_ctx is shown with a banner saying why,
 * and nothing is sent or written. */
void chat_view_only(struct chat *c, const char *id, const struct cerr *why);
/* Before host_open_history of id: its log's last events are read by the
 * host on a worker (host_page_read) and shown until the session is ready
 * (chat_page.c), so a long session shows its end at once. */
void chat_page_preview(struct chat *c, const char *id);
/* The session cannot be written: its log is read by the host (held by another
 * process: only its end, earlier turns paging in as the view reaches them;
 * damaged: whole, as far as valid) and shown by chat_view_only. */
void chat_page_view_only(struct chat *c, const char *id, const struct cerr *why);
/* Opening failed: say so on the screen; the screen stays until quit. */
void chat_failed(struct chat *c, const struct cerr *err);
/* A message on the status line (copied). */
void chat_say(struct chat *c, bool error, const char *msg);
/* The session shown ("" before chat_ready or chat_page_preview); borrowed. */
const char *chat_id(const struct chat *c);
/* Give the terminal back; cb runs once the screen's handles are closed. */
void chat_close(struct chat *c, void (*cb)(void *ctx), void *ctx);
/* The last answer's text, for printing to the normal screen on exit
 * (NULL: none); borrowed from c until chat_free. From chat_close on, a
 * turn still running counts with what streamed of it so far. */
const char *chat_last_answer(const struct chat *c);
/* The session shown is ready and has turns (opened with some, or a
 * prompt sent since): it has a log that `cairn -r ID` resumes. */
bool chat_has_turns(const struct chat *c);
void chat_free(struct chat *c);

#endif
