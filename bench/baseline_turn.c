/* baseline_turn.c — the least a client of a streaming Chat Completions
 * server must do, as the baseline of bench_turn: POST the request with
 * libcurl, split the stream into SSE lines, parse every `data:` line with
 * cJSON, append choices[0].delta.content to a buffer and write it to
 * standard output as it arrives. No persistence, no event loop of its own.
 *
 * Usage: baseline_turn BASE_URL PROMPT (BASE_URL includes /v1). Exit 0
 * when the stream ended with `data: [DONE]` after a finish_reason, 1 on
 * any failure. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

struct bytes {
	char *p;
	size_t len, cap;
};

static void add(struct bytes *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

struct stream {
	struct bytes line; /* the incomplete line carried over between reads */
	struct bytes text; /* the answer so far */
	bool finished, done, failed;
};

static void on_data(struct stream *st, const char *d, size_t n)
{
	if (n == 6 && memcmp(d, "[DONE]", 6) == 0) {
		st->done = true;
		return;
	}
	cJSON *j = cJSON_ParseWithLength(d, n);
	if (!j) {
		st->failed = true;
		return;
	}
	const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ch, "delta"),
							  "content");
	if (cJSON_IsString(c) && *c->valuestring) {
		size_t len = strlen(c->valuestring);
		add(&st->text, c->valuestring, len);
		if (write(1, c->valuestring, len) != (ssize_t)len)
			st->failed = true;
	}
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ch, "finish_reason")))
		st->finished = true;
	cJSON_Delete(j);
}

static size_t write_cb(char *p, size_t size, size_t nmemb, void *ud)
{
	struct stream *st = ud;
	size_t n = size * nmemb;
	add(&st->line, p, n);
	char *s = st->line.p, *end = s + st->line.len, *nl;
	while ((nl = memchr(s, '\n', (size_t)(end - s)))) {
		size_t len = (size_t)(nl - s);
		if (len && s[len - 1] == '\r')
			len--;
		if (len >= 5 && memcmp(s, "data:", 5) == 0) {
			size_t skip = len > 5 && s[5] == ' ' ? 6 : 5;
			on_data(st, s + skip, len - skip);
		}
		s = nl + 1;
	}
	st->line.len = (size_t)(end - s);
	memmove(st->line.p, s, st->line.len);
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: baseline_turn BASE_URL PROMPT\n");
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURL *e = curl_easy_init();
	char url[1024];
	snprintf(url, sizeof url, "%s/chat/completions", argv[1]);
	cJSON *req = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(req, "messages");
	cJSON_AddStringToObject(req, "model", "bench");
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddStringToObject(m, "content", argv[2]);
	cJSON_AddItemToArray(msgs, m);
	cJSON_AddTrueToObject(req, "stream");
	cJSON_AddTrueToObject(cJSON_AddObjectToObject(req, "stream_options"), "include_usage");
	char *body = cJSON_PrintUnformatted(req);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	h = curl_slist_append(h, "Expect:");
	struct stream st = {0};
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &st);
	CURLcode rc = curl_easy_perform(e);
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	bool ok = rc == CURLE_OK && status == 200 && st.finished && st.done && !st.failed;
	if (!ok)
		fprintf(stderr, "baseline_turn: %s, HTTP %ld%s\n", curl_easy_strerror(rc), status,
			st.done ? "" : ", no [DONE]");
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	curl_global_cleanup();
	cJSON_Delete(req);
	free(body);
	free(st.line.p);
	free(st.text.p);
	return ok ? 0 : 1;
}
