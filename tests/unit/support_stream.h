/* support_stream.h — provider tests' shared pieces: a context built from
 * event lines, and a decoder fed SSE payloads whose stream events are
 * written down as one line of text to compare.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_STREAM_H
#define CAIRN_SUPPORT_STREAM_H

#include "engine/context.h"
#include "engine/stream.h"

/* A context from lines {"type":…,"turn"?:…,"data":{…}} (NULL-terminated),
 * added in order; a line context_add refuses fails the test. Caller frees. */
struct context *support_context(const char *const *lines);

/* One SSE event: its name (NULL: none) and data. */
struct sse {
	const char *name, *data;
};

/* An event named SSE_CUT is not fed: the reply is cut there
 * (stream_decoder_cut), as a cancel or a broken connection does. */
#define SSE_CUT "!cut"

/* Feed events[0..n) to a new decoder of kind; the stream events as text:
 * T(text) R(text) RE(signature) X(redacted) TS(id,name) TA(id,args)
 * TE(id,name,args[,incomplete]) U(in,out,cache_read,cache_write,reasoning)
 * F(finish,raw) E(type,message) D, separated by spaces; then "|closed" or
 * "|open". Tool ids the decoder made up show as "call_*". Caller frees. */
char *support_decode(enum provider_kind kind, const struct sse *events, size_t n);



/* One conversation of five turns for the exact-body tests: a reasoning
 * block in two pieces with its signature, a redacted block, an unsigned
 * block, text, a tool call and its result, a second step; an interrupted
 * answer (partial text); a failed turn whose assistant message is empty
 * but for unsigned reasoning; a call cut off by max_tokens with its
 * not_executed result; a last prompt. */
extern const char *const support_conversation[];
#endif
