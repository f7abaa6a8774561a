/* provider.h — what the network layer needs from a provider: one HTTP
 * request (URL, headers, body) built from the context, and a decoder for
 * the reply stream (engine/stream.h). Nothing here does I/O.
 *
 *     struct provider_request rq = PROVIDER_REQUEST_INIT;
 *     provider_build(kind, &params, msgs, n, &rq, &err);   // POST rq.url
 *     d = stream_decoder_new(kind, emit, arg);              // per SSE event
 *     provider_request_release(&rq);
 *
 * A non-2xx reply carries a JSON error body: provider_error_body reads it. */
#ifndef CAIRN_PROVIDER_H
#define CAIRN_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "engine/context.h"
#include "engine/stream.h"

struct provider_request {
	char *url;      /* owned */
	char **headers; /* owned, "Name: value" lines, NULL-terminated */
	size_t nheaders;
	char *body;     /* owned, JSON */
	size_t body_len;
};

#define PROVIDER_REQUEST_INIT {NULL, NULL, 0, NULL, 0}

/* Borrowed inputs of one request. */
struct provider_params {
	const char *model;
	const char *base_url; /* OpenAI: with its version path (…/v1); Anthropic: the server root */
	const char *api_key;  /* NULL or "": no key header (local servers need none) */
	const char *system;   /* the system prompt; NULL or "": none */
	const cJSON *tools;   /* array of {name, description, parameters}; NULL or []: none sent */
	int64_t max_tokens;   /* Anthropic: 0 for the model's entry in the table */
};

/* Build the request for kind (OPENAI or ANTHROPIC) from msgs[0..n) (as
 * context_messages returns them). Fills *out (release with
 * provider_request_release). Fails with CERR_USAGE for a missing model or
 * base URL, or a kind that has no wire format. */
int provider_build(enum provider_kind kind, const struct provider_params *p,
		   const struct ctx_message *msgs, size_t n, struct provider_request *out,
		   struct cerr *err);
void provider_request_release(struct provider_request *r);
/* The header line of a request named name (case-insensitive, e.g.
 * "Authorization"), or NULL; borrowed from r. */
const char *provider_header(const struct provider_request *r, const char *name);

/* The message and code of an error body (OpenAI {"error":{"message",
 * "type","code"}}, Anthropic {"type":"error","error":{"type","message"}}),
 * for an HTTP status. *message gets the server's message, or the body's
 * first line when it is not such JSON, or "HTTP <status>"; *code the
 * error's code or type, or NULL (e.g. "insufficient_quota"). Both are valid
 * UTF-8 and owned by the caller. */
void provider_error_body(const char *body, size_t len, long status, char **message, char **code);

/* Parts shared by the two encoders (provider.c). */
void provider_add_header(struct provider_request *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Start *r (fresh): its URL, base without trailing slashes then path, and
 * the headers every request carries (JSON body, event-stream reply). */
void provider_request_begin(struct provider_request *r, const char *base, const char *path);
/* Take the printed body of root (which is freed) into r. */
void provider_set_body(struct provider_request *r, cJSON *root);
/* The tool schemas as fields: name, description, parameters (an object,
 * {"type":"object"} when missing). */
const cJSON *provider_tool_schema(const cJSON *tool, const char **name, const char **description);

int provider_openai_build(const struct provider_params *p, const struct ctx_message *msgs,
			  size_t n, struct provider_request *out, struct cerr *err);
int provider_anthropic_build(const struct provider_params *p, const struct ctx_message *msgs,
			     size_t n, struct provider_request *out, struct cerr *err);
/* Anthropic's max_tokens for model: the longest matching prefix in the
 * table, else the default (docs/configuration.md). */
int64_t provider_anthropic_max_tokens(const char *model);

#endif
