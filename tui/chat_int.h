/* chat_int.h — what chat.c (keys, the sink, the host) and chatview.c (the
 * rendering and the frame) share of the chat screen. */
#ifndef CAIRN_CHAT_INT_H
#define CAIRN_CHAT_INT_H

#include "base/buf.h"
#include "tui/chat.h"
#include "tui/chat_phase.h"
#include "tui/composer.h"
#include "tui/key.h"
#include "tui/textmsg.h"
#include "tui/transcript.h"
#include "tui/tty.h"
#include "tui/uiloop.h"

/* The turns the model of an opened session holds at first (the end of
 * the log); earlier ones page in (chat_page.c). */
#define CHAT_WINDOW_TURNS 200

/* A block as rendered: a head (the prompt, the answer, a tool's title
 * line, an outcome) and a body (a tool's output, expanded reasoning), each
 * a textmsg laid out at the screen's width less the gutter. */
struct bview {
	uint64_t version;   /* the block's clock when rendered */
	size_t head_src;    /* bytes of the head's source appended so far */
	struct textmsg *head, *body;
	bool collapsed;     /* body shown only in part */
};

/* A turn as rendered: one view per block. */
struct tview {
	uint64_t version; /* the turn's clock when rendered */
	int width;
	size_t n;
	struct bview *v;
	size_t lines; /* display lines of the whole turn */
};

/* One display line of the transcript, as drawn. */
struct vline {
	const char *gutter;       /* drawn first (constant, ASCII or box drawing) */
	unsigned gutter_style;
	struct tline line;        /* n == 0: an empty line, or literal */
	const char *literal;      /* constant text instead of line (NULL: none) */
	unsigned style;           /* the literal's style */
};

/* Where the external editor is (chat_cmd.c):
 *   NONE --Ctrl-G--> WRITING --file written--> RUNNING --exit--> READING --read--> NONE
 * a failure at any step, or the screen closing, goes back to NONE (the
 * file removed). */
enum chat_edit { CHAT_EDIT_NONE, CHAT_EDIT_WRITING, CHAT_EDIT_RUNNING, CHAT_EDIT_READING };

struct chat {
	struct chat_deps d;
	struct uiloop *ui;
	struct tty *tty;
	struct transcript *tr;      /* what the screen shows */
	struct transcript *loading; /* the opened log's model, filled on the worker */
	struct composer *comp;
	struct keydec *kd;
	char id[SESSION_ID_MAX + 1];
	char *provider, *model;
	enum chat_phase phase;   /* changed only by chat_to (the diagram: chat_phase.c) */
	enum chat_phase closed_in; /* the phase chat_close ended */
	enum chat_mode mode;     /* what the input line takes (chat_mode_to) */
	bool quit_asked;
	struct host_page_req *page_req; /* the log's end being read (chat_page.c) */
	struct cerr page_why;      /* why a session read by chat_page_view_only is view-only */
	char banner[600];
	bool send_pending;   /* Enter typed before the session was ready */
	char note[512];      /* a message for the status line ("" none) */
	bool note_error;
	/* the transcript's views, by absolute turn index */
	struct tview *views;
	size_t nviews;
	size_t evicted;      /* views below this turn were released */
	int width;           /* the transcript's text width */
	/* scrolling: following the end, or a top line anchored at a turn */
	bool follow;
	size_t top_turn, top_line;
	bool selected;       /* a message is selected (for copy): sel_turn, sel_block */
	size_t sel_turn, sel_block;
	long sel_code;       /* -1: the whole message; else its code block (chat_select.c) */
	int help_top;
	uint64_t last_ctrl_c_ms;
	int64_t rung_at;     /* the last bell */
	char *last_answer;
	/* an approval's note being typed (deny with a note), or a search */
	char *noting_request;
	struct buf typed;
	char paste_carry[4];    /* an unfinished character between two paste reads */
	size_t paste_carry_len;
	uint64_t batch;         /* input batches read so far */
	uint64_t asked_at_batch; /* the batch during which the approval came */
	enum tty_bell ringer;
	int64_t last_key_ms;
	/* the draft: saved a moment after the last edit, and on quit */
	char *cwd;
	char *draft_saved;      /* the text last saved */
	uv_timer_t draft_timer;
	uv_timer_t paste_timer; /* a paste's end marker is final when it fires */
	/* the external editor: its file written, the editor run on it, the
	 * file read back (chat_cmd.c); edit_path is set while it runs */
	enum chat_edit edit;
	char *edit_path;
	uv_process_t editor;
};

/* chat.c */
/* The one change of phase: to must follow c->phase in the diagram
 * (chat_phase.c); any other is a bug, and asserts. */
void chat_to(struct chat *c, enum chat_phase to);
/* The input line takes mode m from now (CHAT_COMPOSE: the composer). */
void chat_mode_to(struct chat *c, enum chat_mode m);
/* A message on the status line. */
void chat_sayf(struct chat *c, bool error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The composer changed (maybe): its draft is saved a moment later. */
void chat_draft_touch(struct chat *c);
/* A prompt that was not sent (why): back into the composer, or into its
 * history when the composer holds unsent text; said on the status line. */
void chat_give_back(struct chat *c, const char *text, const char *why);

/* chat_keys.c */
/* uiloop's input hook: read, decode and act on every key waiting. */
void chat_keys_cb(void *ctx);
/* Feed the key decoder bytes read from the terminal (UTF-8, sequences
 * parsed by the decoder); returns the bytes used: all but an unfinished
 * last character. */
size_t chat_keys_feed(struct chat *c, const char *s, size_t n);
/* Act on every key the decoder has ready. */
void chat_keys_drain(struct chat *c);
/* Enter: the composer's text sent, queued, or run as a slash command. */
void chat_send_composer(struct chat *c);
/* Ctrl-C (and SIGINT): cancel a running turn; a second within 2 s quits. */
void chat_interrupt(struct chat *c);
/* Ask the application to quit (once). */
void chat_quit(struct chat *c);

/* chat_page.c */
/* The view is at the first turn held: read earlier turns from the log
 * when there are some and nothing else changes it. */
void chat_page_earlier(struct chat *c);

/* chatview.c */
void chatview_draw(struct chat *c);
/* Lines of turn k (rendered as needed). */
size_t chatview_turn_lines(struct chat *c, size_t k);
/* Page the view by delta lines (negative: up); stops at the ends. */
void chatview_scroll(struct chat *c, long delta);
void chatview_home(struct chat *c);
/* The transcript's height in rows for the current layout. */
int chatview_area(const struct chat *c);
/* Drop every rendered view (a width change or a new model). */
void chatview_reset(struct chat *c);
/* The latest tool or reasoning block: toggle its body. */
void chatview_toggle_expand(struct chat *c);
/* Scroll block i of turn k into view. */
void chatview_show_block(struct chat *c, size_t k, size_t i);

/* chat_select.c */
/* Select the item (a message, or a code block of an answer) before or
 * after the selected one (none selected: the last) and show it. */
void chat_select_move(struct chat *c, bool back);
/* The selected item's text (NULL when none; the caller frees it) and
 * *what it is, in words. */
char *chat_select_text(struct chat *c, const char **what);

#endif
