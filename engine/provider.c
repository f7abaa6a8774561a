/* provider.c — the request shape both wire formats share, error bodies. */
#include "engine/provider.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "engine/textfix.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int provider_build(enum provider_kind kind, const struct provider_params *p,
		   const struct ctx_message *msgs, size_t n, struct provider_request *out,
		   struct cerr *err)
{
	if (!p->model || !*p->model)
		return cerr_set(err, CERR_USAGE, 0, "no model to ask");
	if (kind != PROVIDER_OFFLINE && (!p->base_url || !*p->base_url))
		return cerr_set(err, CERR_USAGE, 0, "no base URL for the provider");
	switch (kind) {
	case PROVIDER_OPENAI: return provider_openai_build(p, msgs, n, out, err);
	case PROVIDER_ANTHROPIC: return provider_anthropic_build(p, msgs, n, out, err);
	case PROVIDER_OFFLINE: break;
	}
	return cerr_set(err, CERR_USAGE, 0, "the offline provider makes no HTTP request");
}

void provider_request_release(struct provider_request *r)
{
	free(r->url);
	for (size_t i = 0; i < r->nheaders; i++)
		free(r->headers[i]);
	free(r->headers);
	free(r->body);
	*r = (struct provider_request)PROVIDER_REQUEST_INIT;
}

void provider_add_header(struct provider_request *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = NULL;
	if (vasprintf(&line, fmt, ap) < 0)
		abort();
	va_end(ap);
	r->headers = xreallocarray(r->headers, r->nheaders + 2, sizeof *r->headers);
	r->headers[r->nheaders++] = line;
	r->headers[r->nheaders] = NULL;
}

const char *provider_header(const struct provider_request *r, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < r->nheaders; i++)
		if (strncasecmp(r->headers[i], name, n) == 0 && r->headers[i][n] == ':')
			return r->headers[i];
	return NULL;
}

void provider_request_begin(struct provider_request *r, const char *base, const char *path)
{
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	*r = (struct provider_request)PROVIDER_REQUEST_INIT;
	r->url = xasprintf("%.*s%s", (int)n, base, path);
	provider_add_header(r, "Content-Type: application/json");
	provider_add_header(r, "Accept: text/event-stream");
}

void provider_set_body(struct provider_request *r, cJSON *root)
{
	r->body = json_print(root);
	r->body_len = strlen(r->body);
	cJSON_Delete(root);
}

const cJSON *provider_tool_schema(const cJSON *tool, const char **name, const char **description)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(tool, "name");
	*name = cJSON_IsString(v) ? v->valuestring : "";
	v = cJSON_GetObjectItemCaseSensitive(tool, "description");
	*description = cJSON_IsString(v) ? v->valuestring : NULL;
	v = cJSON_GetObjectItemCaseSensitive(tool, "parameters");
	return cJSON_IsObject(v) ? v : NULL;
}

void provider_error_body(const char *body, size_t len, long status, char **message, char **code)
{
	*message = *code = NULL;
	struct buf fixed = BUF_INIT;
	if (body && textfix_json_escapes(body, len, &fixed))
		body = fixed.p, len = fixed.len;
	cJSON *j = body ? cJSON_ParseWithLength(body, len) : NULL;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	const char *msg = NULL, *c = NULL;
	if (cJSON_IsString(e)) {
		msg = e->valuestring;
	} else if (cJSON_IsObject(e)) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "message");
		msg = cJSON_IsString(v) ? v->valuestring : NULL;
		v = cJSON_GetObjectItemCaseSensitive(e, "code");
		c = cJSON_IsString(v) ? v->valuestring : NULL;
		if (!c) {
			v = cJSON_GetObjectItemCaseSensitive(e, "type");
			c = cJSON_IsString(v) ? v->valuestring : NULL;
		}
	}
	if (msg && *msg) {
		*message = textfix_string(msg, strlen(msg));
	} else if (!j && body && len) {
		/* Not JSON (a proxy's HTML page): its first line, kept short. */
		size_t k = 0;
		while (k < len && k < 200 && body[k] != '\n' && body[k] != '\r')
			k++;
		*message = textfix_string(body, k);
	}
	if (!*message || !**message) {
		free(*message);
		*message = xasprintf("HTTP %ld", status);
	}
	if (c)
		*code = textfix_string(c, strlen(c));
	cJSON_Delete(j);
	buf_release(&fixed);
}
