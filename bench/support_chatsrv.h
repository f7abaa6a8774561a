/* support_chatsrv.h — a Chat Completions streaming server for benches, in a
 * thread of the bench on 127.0.0.1 (an ephemeral port). Its reply is
 * rendered in full beforehand (chatsrv_render) and written as fast as the
 * socket takes it, so the server is never what a client waits for. It
 * notes when each request arrived (CLOCK_MONOTONIC, once headers and body
 * are read), which clients measure their start-up against.
 *
 * Calling sequence: chatsrv_start(), then per run chatsrv_set_reply() (no
 * client connected), the client, chatsrv_take(); chatsrv_stop() at the
 * end. Requests are served one connection at a time. */
#ifndef CAIRN_SUPPORT_CHATSRV_H
#define CAIRN_SUPPORT_CHATSRV_H

#include "base/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct chatsrv;

/* What the server saw of the first request since the last take. */
struct chatsrv_request {
	uint64_t arrived_ns; /* clock_mono_ns() once the whole request was read */
	bool ok;             /* POST /v1/chat/completions, a JSON body asking to stream */
	size_t body_len;     /* the request body's bytes */
	int messages;        /* the messages it carries (the system prompt included) */
	char why[128];       /* when not ok: what was wrong */
};

/* Renders an OpenAI streaming reply of n_words words, one word per
 * `data:` chunk (then a finish_reason chunk, a usage chunk and
 * `data: [DONE]`), each event its own HTTP chunk, into body; the text
 * the chunks carry, concatenated, goes into text (ending with a newline).
 * Words come from bench_words via rnd(). Both bufs stay the caller's. */
void chatsrv_render(struct buf *body, struct buf *text, size_t n_words);

/* Renders a long answer of about `bytes` bytes of numbered words
 * ("w0 w1 ..."), `piece` bytes per `data:` chunk, as chatsrv_render does
 * otherwise; the text into text. Both bufs stay the caller's. */
void chatsrv_render_long(struct buf *body, struct buf *text, size_t bytes, size_t piece);

/* Listens on 127.0.0.1:0 and serves from a new thread; dies on failure.
 * The server is the caller's, to chatsrv_stop(). */
struct chatsrv *chatsrv_start(void);

/* The port it listens on. */
int chatsrv_port(const struct chatsrv *s);

/* The chunked body (from chatsrv_render) every request gets from now on;
 * body is borrowed until the next call or chatsrv_stop. */
void chatsrv_set_reply(struct chatsrv *s, const struct buf *body);

/* From now on the reply is written at per_sec HTTP chunks (one word each,
 * from chatsrv_render) a second instead of at once; 0 goes back to at
 * once. */
void chatsrv_set_pace(struct chatsrv *s, unsigned per_sec);

/* The number of requests since the last take, the first of them in *first
 * (untouched when none), and resets the count. */
size_t chatsrv_take(struct chatsrv *s, struct chatsrv_request *first);

/* Stops the thread, closes the socket, frees s. */
void chatsrv_stop(struct chatsrv *s);

#endif
