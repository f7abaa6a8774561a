/* transcript_int.h — what the transcript's files share (not a public
 * header: the screen uses transcript.h). transcript.c holds the model's
 * storage, turns, text, queue and status; transcript_tool.c the tool
 * blocks (a call, its approval, run and result). */
#ifndef CAIRN_TRANSCRIPT_INT_H
#define CAIRN_TRANSCRIPT_INT_H

#include "base/buf.h"
#include "base/strmap.h"
#include "tui/transcript.h"

enum tr_source { TR_LIVE, TR_DURABLE };

struct transcript_block {
	enum transcript_kind kind;
	uint64_t version;
	struct transcript_turn *turn;
	struct buf text;
	bool expanded;
	bool in_blob;               /* TR_PROMPT */
	uint64_t blob_size;
	struct transcript_tool tool; /* TR_TOOL: its strings owned here */
	bool pending;               /* TR_TOOL announced by a notice, no tool/call yet */
	int64_t since_ms;           /* TR_TOOL: when it began to wait for the user */
};

struct transcript_turn {
	char *id;
	uint64_t version;
	uint64_t first_seq;         /* of its first event fed (0: none known) */
	struct transcript_block **b;
	size_t n, cap;
	int64_t started_ms, ended_ms;
	enum transcript_outcome outcome;
	const char *err_class, *err_msg; /* owned */
	int64_t http_status;        /* 0: none */
	int64_t out_tokens;         /* -1: not reported */
	/* Bytes of each stream (answer, reasoning) brought by each source,
	 * and shown: a source's bytes past `shown` are new. */
	size_t at[2][2];            /* [stream][source] */
	size_t shown[2];
	/* The stream phase, for the status line. */
	enum transcript_activity phase;
	int64_t phase_ms;
	size_t step_chars;
};

struct tr_queued {
	char *id, *text;
	bool in_blob;
};

struct transcript {
	char *session;
	uint64_t clock;
	struct transcript_turn **turns;
	size_t n, cap;
	size_t dropped, window;
	struct strmap ids;          /* turn id -> absolute index of the latest turn with it */
	uint64_t last_seq;          /* the last durable seq applied */
	uint64_t begin_seq;         /* what was fed began here (transcript_begin_at) */
	uint64_t first_fed;         /* the first durable seq applied */
	struct tr_queued *q;
	size_t nq, capq;
	uint64_t q_version;
	bool unsaved;
	const char *unsaved_err, *title, *provider, *model; /* owned */
	const char *first_title; /* owned: the title the first prompt gives (as the catalog's) */
};

/* transcript.c */
/* Raise the clock and mark block b (may be NULL) and its turn changed. */
void transcript_touch(struct transcript *tr, struct transcript_turn *t, struct transcript_block *b);
/* A new block of kind at the end of turn t (owned by t). */
struct transcript_block *transcript_block_add(struct transcript *tr, struct transcript_turn *t,
					      enum transcript_kind kind);
/* Remove and free block i of turn t. */
void transcript_block_remove(struct transcript *tr, struct transcript_turn *t, size_t i);
/* Set *slot to a copy of v (NULL: none); true when it changed. */
bool transcript_set_str(const char **slot, const char *v);
/* data[k] when a string, else NULL (borrowed). */
const char *transcript_str(const cJSON *data, const char *k);

/* transcript_tool.c */
/* The model began a tool call ("tool_call" notice {provider_id, name}). */
bool transcript_tool_notice(struct transcript *tr, struct transcript_turn *t, const cJSON *data);
/* The user is asked ("interaction" notice {request_id, call_id, tool, summary}). */
bool transcript_tool_asked(struct transcript *tr, struct transcript_turn *t, const cJSON *data,
			   int64_t now_ms);
/* A tool event of turn t: tool/call, interaction/request and /answer,
 * tool/started, tool/result. */
bool transcript_tool_event(struct transcript *tr, struct transcript_turn *t,
			   enum vocab_type type, int64_t t_ms, const cJSON *data);
/* The turn ended: calls announced whose tool/call never came are gone. */
bool transcript_tool_drop_pending(struct transcript *tr, struct transcript_turn *t);
/* Free what a tool block owns. */
void transcript_tool_release(struct transcript_block *b);

#endif
