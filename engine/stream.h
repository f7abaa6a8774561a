/* stream.h — what a provider's reply stream says, provider-neutral.
 *
 * A decoder is fed the SSE events of one response, in order, as the
 * network layer parses them (event name, data), and calls back with
 * stream events. Text is valid UTF-8 (engine/textfix.h) by the time it is
 * emitted. Calling sequence:
 *
 *     d = stream_decoder_new(kind, emit, arg);
 *     for each SSE event: stream_decoder_feed(d, name, data, len);
 *     closed = stream_decoder_closed(d);   // false: delivery unknown
 *     stream_decoder_free(d);
 *
 * emit must not free the decoder. */
#ifndef CAIRN_STREAM_H
#define CAIRN_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum stream_kind {
	STREAM_TEXT,          /* text: a delta of the answer */
	STREAM_REASONING,     /* text: a delta of reasoning */
	STREAM_REASONING_END, /* a reasoning block ended; text: its signature or NULL */
	STREAM_REDACTED,      /* text: a redacted reasoning block, verbatim */
	STREAM_TOOL_START,    /* id, name: a tool call begins */
	STREAM_TOOL_ARGS,     /* id, text: a delta of its JSON arguments */
	STREAM_TOOL_END,      /* id, name, text: the whole arguments; incomplete */
	STREAM_USAGE,         /* usage: the totals so far */
	STREAM_FINISH,        /* finish, text: the provider's own reason */
	STREAM_ERROR,         /* text: the message, error_type: the provider's type or code */
	STREAM_DONE,          /* the closing event: the reply is whole */
};

enum stream_finish {
	FINISH_STOP,       /* the answer is complete */
	FINISH_TOOL_CALLS, /* the model waits for tool results */
	FINISH_LENGTH,     /* cut off by the output limit */
	FINISH_FILTER,     /* stopped by a content filter or a refusal */
	FINISH_OTHER,
};

struct stream_usage {
	int64_t input, output;            /* tokens; -1: not reported */
	int64_t cache_read, cache_write;  /* input tokens read from / written to a cache */
	int64_t reasoning;                /* output tokens spent reasoning */
};

struct stream_event {
	enum stream_kind kind;
	const char *text; /* borrowed for the call; NUL-terminated */
	size_t len;
	const char *id, *name;
	bool incomplete; /* TOOL_END: cut off, never to be executed */
	enum stream_finish finish;
	const char *error_type;
	const struct stream_usage *usage;
};

typedef void (*stream_emit_fn)(void *arg, const struct stream_event *ev);

enum provider_kind { PROVIDER_OPENAI, PROVIDER_ANTHROPIC, PROVIDER_OFFLINE };

/* What the decoder keeps of a tool call's id and name, JSON-escaped: a
 * longer id is replaced by one made up (as when none is sent), a longer
 * name cut (no tool has one). Everything a reply says must fit the log:
 * a reasoning signature too long for one event is dropped (the block is
 * then unsigned, never sent back), as is redacted reasoning. */
#define STREAM_ID_MAX 4096u

struct stream_decoder;

/* A decoder for kind's wire format (OPENAI or ANTHROPIC) calling emit
 * with arg; free with stream_decoder_free. */
struct stream_decoder *stream_decoder_new(enum provider_kind kind, stream_emit_fn emit, void *arg);
void stream_decoder_free(struct stream_decoder *d);
/* Feed one SSE event: name (NULL or "" when the event had none) and its
 * data. A payload that is not the JSON expected emits STREAM_ERROR with
 * error_type "malformed". Nothing is emitted after STREAM_ERROR or
 * STREAM_DONE (but what stream_decoder_cut ends). */
void stream_decoder_feed(struct stream_decoder *d, const char *name, const char *data, size_t len);
/* True once the stream's closing event came (OpenAI: a finish_reason or
 * [DONE]; Anthropic: message_stop). A stream that ends before is delivery
 * unknown. */
bool stream_decoder_closed(const struct stream_decoder *d);
/* The reply was cut short before its finish (a cancel, a broken
 * connection, an error): every tool call that began (TOOL_START) ends now
 * with TOOL_END, incomplete — it is recorded and answered unrun, never
 * executed. Nothing once the finish came; the only thing emitted after
 * STREAM_ERROR. */
void stream_decoder_cut(struct stream_decoder *d);
/* True once the stream carried an error (in-stream error or malformed). */
bool stream_decoder_failed(const struct stream_decoder *d);
/* The usage reported so far (fields -1 when not reported). */
const struct stream_usage *stream_decoder_usage(const struct stream_decoder *d);
/* True when ev carries what the model produced — text, reasoning, a tool
 * call's start or arguments — the progress a reply's timeouts wait for
 * (usage, finish, errors and the closing event are not). */
bool stream_event_content(const struct stream_event *ev);
/* The name of a finish reason ("stop", "tool_calls", ...); static. */
const char *stream_finish_name(enum stream_finish f);

#endif
