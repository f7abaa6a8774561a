/* stream_int.h — the decoder core shared by the wire formats (stream.c)
 * and what each format implements. Not for use outside engine/stream*.c
 * and engine/provider_*.c. */
#ifndef CAIRN_STREAM_INT_H
#define CAIRN_STREAM_INT_H

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "engine/stream.h"
#include "engine/textfix.h"

struct stream_tool {
	long index;     /* the provider's index of the call; -1: none given */
	char *id, *name;
	struct buf args; /* valid UTF-8 so far */
	struct textfix fix;
	bool announced;  /* its TOOL_START was emitted */
};

/* An Anthropic content block by its index. */
enum stream_block { BLOCK_OTHER, BLOCK_TEXT, BLOCK_THINKING, BLOCK_REDACTED, BLOCK_TOOL };

struct stream_decoder {
	enum provider_kind kind;
	stream_emit_fn emit;
	void *arg;
	struct textfix text_fix, reasoning_fix;
	struct stream_tool *tools;
	size_t ntools;
	struct stream_usage usage;
	bool finished, closed, failed;
	enum stream_block block; /* Anthropic: the open block */
	size_t block_tool;       /* its tool, when BLOCK_TOOL */
	struct buf signature;    /* Anthropic: the open thinking block's signature */
	struct buf scratch;
};

/* Parse data as JSON (lone surrogate escapes made parseable); on failure
 * emits the malformed error and returns NULL. Caller frees the tree. */
cJSON *stream_parse(struct stream_decoder *d, const char *data, size_t len);
/* Emit text / reasoning deltas, made valid UTF-8. */
void stream_text(struct stream_decoder *d, const char *s, size_t n);
void stream_reasoning(struct stream_decoder *d, const char *s, size_t n);
/* Close the reasoning block (sig NULL: unsigned). */
void stream_reasoning_end(struct stream_decoder *d, const char *sig);
void stream_redacted(struct stream_decoder *d, const char *data);
/* A new tool call (id NULL: one is made up); returns its slot. */
size_t stream_tool_new(struct stream_decoder *d, long index, const char *id, const char *name);
void stream_tool_args(struct stream_decoder *d, size_t slot, const char *s, size_t n);
/* The step ended for reason (raw: the provider's word): end every tool
 * call, then emit FINISH. Only the first call counts. */
void stream_finish(struct stream_decoder *d, enum stream_finish reason, const char *raw);
void stream_emit_usage(struct stream_decoder *d);
void stream_error(struct stream_decoder *d, const char *type, const char *msg);
void stream_done(struct stream_decoder *d);

/* Each format's handling of one event (provider_openai.c, provider_anthropic.c). */
void provider_openai_feed(struct stream_decoder *d, const char *name, const char *data, size_t len);
void provider_anthropic_feed(struct stream_decoder *d, const char *name, const char *data, size_t len);

/* A provider's word for why a reply stopped, and what it means. */
struct stream_word {
	const char *word;
	enum stream_finish finish;
};
/* r looked up in table (ended by a NULL word); FINISH_OTHER when absent. */
enum stream_finish stream_finish_of(const struct stream_word *table, const char *r);

/* Helpers for reading provider JSON. */
const char *stream_str(const cJSON *o, const char *key);
/* An integer field, or -1. */
int64_t stream_int(const cJSON *o, const char *key);

#endif
