/* call.h — one model call: the request a provider builds, sent over HTTP
 * (engine/http.h) or answered by the offline provider, its reply decoded
 * as it streams (engine/sse.h, engine/stream.h), and the retries the
 * failure table of docs/providers.md allows:
 *
 * - nothing of the request sent (DNS, connect, TLS failed or timed out):
 *   tried again after a backoff;
 * - HTTP 429 (except insufficient_quota), 5xx or 529 before any reply
 *   stream: tried again, Retry-After honoured up to its cap, else backoff;
 * - any other HTTP error, an error inside the stream, a request that
 *   cannot be built: CALL_PROVIDER_ERROR with the server's message;
 * - the request sent and the reply lost, cut off, or timed out before its
 *   closing event (no content within first_byte, none for gap, not done
 *   by total; comments and pings are not content): CALL_DELIVERY_UNKNOWN,
 *   never sent again;
 * - the closing event came: CALL_COMPLETE, however the connection ends (a
 *   server holding it open after an OpenAI finish_reason is given a short
 *   grace for the usage chunk, then the transfer is ended).
 * At most retry.max_retries attempts follow the first. Before every
 * attempt the caller is asked (before_attempt) and answers with
 * call_proceed once its request/prepared for that attempt is durable, or
 * with call_cancel.
 *
 * Everything runs on the loop thread; every callback comes from the loop,
 * never from inside a call_* function. The call is freed after on_done
 * returns. A slow consumer pauses the reply (call_pause: the transfer
 * stops reading its socket; the offline provider stops its timer). */
#ifndef CAIRN_CALL_H
#define CAIRN_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "base/err.h"
#include "engine/context.h"
#include "engine/http.h"
#include "engine/provider.h"
#include "engine/stream.h"

struct call;

enum call_outcome {
	CALL_COMPLETE,         /* the reply's closing event came */
	CALL_PROVIDER_ERROR,   /* the provider refused or failed the request */
	CALL_DELIVERY_UNKNOWN, /* sent; its reply lost or cut off: never re-sent */
	CALL_CANCELED,         /* call_cancel */
};

struct call_result {
	enum call_outcome outcome;
	long http_status;       /* of the last attempt; 0 when none came */
	char message[512];      /* why, for every outcome but COMPLETE; never a header */
	char code[64];          /* the provider's error type or code, or "" */
	unsigned attempts;      /* requests sent or tried (offline: 1) */
	bool have_finish;       /* the reply said why it stopped: */
	enum stream_finish finish;
	struct stream_usage usage; /* the reply's usage (-1: not reported) */
};

struct call_retry {
	unsigned max_retries;       /* 3 */
	unsigned backoff_min_ms;    /* 1000: the first wait, doubled each time ... */
	unsigned backoff_max_ms;    /* 8000: ... up to this */
	unsigned retry_after_max_ms; /* 60000: a longer Retry-After is not waited for */
};

extern const struct call_retry CALL_RETRY_DEFAULT;

struct call_spec {
	enum provider_kind kind;
	struct provider_params params; /* OPENAI, ANTHROPIC; borrowed during call_start */
	const struct ctx_message *msgs; /* borrowed during call_start */
	size_t n;
	const char *prompt;             /* OFFLINE: what it answers (borrowed during call_start) */
	unsigned pace_ms;               /* OFFLINE: per token */
	struct http_timeouts timeouts;
	struct call_retry retry;
};

struct call_hooks {
	/* Attempt (1, 2, ...) is about to be sent: answer with call_proceed
	 * or call_cancel, now or later. */
	void (*before_attempt)(void *ud, struct call *c, unsigned attempt);
	/* A decoded piece of the reply (stream.h), in order. */
	void (*on_event)(void *ud, struct call *c, const struct stream_event *ev);
	/* Once, last; r borrowed for the call; c is freed when it returns. */
	void (*on_done)(void *ud, struct call *c, const struct call_result *r);
	void *ud;
};

/* Start a call: builds the request now (a request that cannot be built
 * ends the call with CALL_PROVIDER_ERROR, from the loop) and asks
 * before_attempt for the first attempt. http may be NULL for OFFLINE.
 * The handle is borrowed: valid until on_done returns. */
struct call *call_start(uv_loop_t *loop, struct http *http, const struct call_spec *spec,
			const struct call_hooks *hooks);
/* The attempt asked for may go. */
void call_proceed(struct call *c);
/* Stop now: a transfer is aborted (what streamed so far stays with the
 * caller), a wait ends; on_done follows with CALL_CANCELED. */
void call_cancel(struct call *c);
/* Stop reading the reply until call_resume (backpressure). */
void call_pause(struct call *c);
void call_resume(struct call *c);
/* The attempt under way (0 before the first). */
unsigned call_attempt(const struct call *c);
/* "complete", "provider", "delivery_unknown", "canceled": static. */
const char *call_outcome_name(enum call_outcome o);

#endif
