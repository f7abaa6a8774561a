/* context.h — the provider-neutral conversation the model sees.
 *
 * Built from a session's events in log order (context_add), then read as
 * the messages along one branch: the chain of parent turns from the root
 * to a leaf turn (context_messages). Parents and the active leaf are the
 * turn tree's (persist/tree.h, as prepare reads them): each turn/start is
 * a turn, a name means its latest turn so far, branch/rewind moves the
 * active leaf. Within a turn, a user/message is a
 * user message; assistant/reasoning, assistant/text and tool/call join
 * one assistant message until a tool/result, a step/end or a user message
 * closes it; each tool/result is a tool message. Consecutive text pieces
 * (captured in batches) join into one text part, and consecutive reasoning
 * pieces into one block closed by the piece that carries its signature.
 *
 * What context_messages guarantees the wire encoders: no empty text part,
 * every tool call followed by its result (a synthetic not_executed one
 * when the log has none), no result without its call. An assistant message
 * may still hold only reasoning: each encoder drops the reasoning its
 * provider must not get and then omits a message left empty. */
#ifndef CAIRN_CONTEXT_H
#define CAIRN_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "persist/vocab.h"

enum ctx_role { CTX_USER, CTX_ASSISTANT, CTX_TOOL };

enum ctx_part_kind {
	CTX_TEXT,        /* text */
	CTX_REASONING,   /* text, signature (NULL: none), redacted (text is the opaque data) */
	CTX_TOOL_CALL,   /* call_id, name, args (JSON text), incomplete */
	CTX_TOOL_RESULT, /* call_id, text (what the model reads), is_error */
};

struct ctx_part {
	enum ctx_part_kind kind;
	char *text;
	/* text's length and allocation while pieces are appended to it (0:
	 * not known yet, set from text at the first append), so a long
	 * streamed answer costs what each piece holds */
	size_t text_len, text_cap;
	char *signature;
	bool redacted;
	char *call_id, *name;
	/* The log keeps cairn's own call_id and the provider's id beside it
	 * (tool/call.provider_id); a view (context_messages) gives call_id as
	 * the provider knows it, and ref as the log's. */
	char *wire_id, *ref;
	char *args;      /* "{}" for a call cut off before its arguments were whole */
	bool incomplete; /* a call cut off (max_tokens): never executed, replayed with {} */
	bool is_error;   /* a result whose status is not ok */
};

struct ctx_message {
	enum ctx_role role;
	struct ctx_part *parts;
	size_t nparts;
};

struct context;

/* A new, empty context; free with context_free. */
struct context *context_new(void);
void context_free(struct context *c);
/* Read the whole text of events whose content went to a blob (a long
 * prompt, a tool's long output) from the session directory dirfd
 * (borrowed; it must stay open while events are added). Without it the
 * model gets the head and tail the event keeps inline. */
void context_set_blob_dir(struct context *c, int dirfd);
/* What the model reads of one tool result is capped to max bytes, head
 * and tail with a note of what was cut (0: CONTEXT_RESULT_MAX); the log
 * keeps the whole output (up to the tool's own limit, in a blob when
 * large). */
#define CONTEXT_RESULT_MAX (30u * 1024u)
void context_set_result_max(struct context *c, size_t max);
/* Add one event (type t, envelope turn or NULL, data) in log order; types
 * the model does not see are ignored. Fails (CERR_CORRUPT) for data a
 * reader should have refused (a field of the wrong kind), and as
 * blob_read for a blob that cannot be read whole: the model never gets a
 * prompt or an output cut short silently. */
int context_add(struct context *c, enum vocab_type t, const char *turn, const cJSON *data,
		struct cerr *err);
/* The messages along the branch ending at turn leaf (its latest turn
 * with that id; NULL: the active leaf, nothing when rewound before the
 * first turn). Owned by c, valid until the next context_add,
 * context_messages or context_free. *n is 0 for an empty context or an
 * unknown leaf. */
const struct ctx_message *context_messages(struct context *c, const char *leaf, size_t *n);
/* The text of the last user message along the branch (NULL: none); owned
 * by c, valid as context_messages' result. */
const char *context_last_user_text(struct context *c, const char *leaf);

#endif
