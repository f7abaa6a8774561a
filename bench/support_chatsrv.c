/* support_chatsrv.c — a Chat Completions streaming server for benches
 * (support_chatsrv.h). */
#include "bench/support_chatsrv.h"

#include "base/clock.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

struct chatsrv {
	int lfd, port;
	pthread_t th;
	atomic_int stop;
	pthread_mutex_t mu;
	const struct buf *reply; /* under mu */
	unsigned pace;           /* HTTP chunks a second, 0: at once; under mu */
	size_t n_req;            /* under mu */
	struct chatsrv_request first;
};

/* ---- the reply ---------------------------------------------------------- */

/* An SSE event "data: JSON\n\n" as one HTTP chunk. */
static void add_event(struct buf *body, const char *json, size_t n)
{
	char head[32];
	int hn = snprintf(head, sizeof head, "%zx\r\n", n + 8);
	buf_add(body, head, (size_t)hn);
	buf_adds(body, "data: ");
	buf_add(body, json, n);
	buf_adds(body, "\n\n\r\n");
}

/* What OpenAI sends with stream_options.include_usage: every chunk has
 * "usage": null until the last. */
#define CHUNK_HEAD "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\"," \
		   "\"created\":1700000000,\"model\":\"bench\",\"system_fingerprint\":null,"

static void add_delta(struct buf *body, struct buf *ev, const char *delta, const char *finish)
{
	buf_reset(ev);
	buf_adds(ev, CHUNK_HEAD "\"choices\":[{\"index\":0,\"delta\":");
	buf_adds(ev, delta);
	buf_adds(ev, ",\"logprobs\":null,\"finish_reason\":");
	buf_adds(ev, finish);
	buf_adds(ev, "}],\"usage\":null}");
	add_event(body, ev->p, ev->len);
}

void chatsrv_render(struct buf *body, struct buf *text, size_t n_words)
{
	struct buf ev = BUF_INIT, delta = BUF_INIT, word = BUF_INIT;
	buf_reset(body);
	buf_reset(text);
	add_delta(body, &ev, "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}", "null");
	for (size_t i = 0; i < n_words; i++) {
		buf_reset(&word);
		buf_adds(&word, bench_words[rnd() % BENCH_N_WORDS]);
		unsigned r = rnd_in(0, 99);
		buf_adds(&word, i + 1 == n_words || r < 4 ? "\n" : r < 5 ? "\t" : " ");
		buf_add(text, word.p, word.len);
		buf_reset(&delta);
		buf_adds(&delta, "{\"content\":");
		buf_add_json_string(&delta, word.p);
		buf_addc(&delta, '}');
		add_delta(body, &ev, delta.p, "null");
	}
	add_delta(body, &ev, "{}", "\"stop\"");
	buf_reset(&ev);
	char usage[256];
	int un = snprintf(usage, sizeof usage,
			  CHUNK_HEAD "\"choices\":[],\"usage\":{\"prompt_tokens\":40,"
			  "\"completion_tokens\":%zu,\"total_tokens\":%zu}}", n_words, n_words + 40);
	add_event(body, usage, (size_t)un);
	add_event(body, "[DONE]", 6);
	buf_adds(body, "0\r\n\r\n");
	buf_release(&ev);
	buf_release(&delta);
	buf_release(&word);
}

void chatsrv_render_long(struct buf *body, struct buf *text, size_t bytes, size_t piece)
{
	struct buf ev = BUF_INIT, delta = BUF_INIT;
	buf_reset(body);
	buf_reset(text);
	for (unsigned w = 0; text->len < bytes; w++)
		buf_printf(text, "w%u ", w);
	add_delta(body, &ev, "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}", "null");
	char *part = xmalloc(piece + 1);
	for (size_t at = 0; at < text->len; at += piece) {
		size_t n = text->len - at < piece ? text->len - at : piece;
		memcpy(part, text->p + at, n); /* ASCII: any cut is between characters */
		part[n] = 0;
		buf_reset(&delta);
		buf_adds(&delta, "{\"content\":");
		buf_add_json_string(&delta, part);
		buf_addc(&delta, '}');
		add_delta(body, &ev, delta.p, "null");
	}
	free(part);
	add_delta(body, &ev, "{}", "\"stop\"");
	add_event(body, "[DONE]", 6);
	buf_adds(body, "0\r\n\r\n");
	buf_release(&ev);
	buf_release(&delta);
}

/* ---- serving ------------------------------------------------------------ */

static bool write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static void check_request(const char *head, const char *body, size_t len,
			  struct chatsrv_request *rq)
{
	rq->ok = false;
	if (strncmp(head, "POST /v1/chat/completions ", 26) != 0) {
		snprintf(rq->why, sizeof rq->why, "request line '%.60s'", head);
		return;
	}
	cJSON *j = cJSON_ParseWithLength(body, len);
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(j, "messages");
	rq->body_len = len;
	rq->messages = cJSON_GetArraySize(msgs);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "stream")) ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "model")) ||
	    cJSON_GetArraySize(msgs) < 1)
		snprintf(rq->why, sizeof rq->why, "a body without model, messages or stream: true");
	else
		rq->ok = true;
	cJSON_Delete(j);
}

/* Reads one request (headers, then Content-Length bytes of body) into in;
 * returns the body's offset, 0 at end of stream or on error. */
static size_t read_request(int fd, struct buf *in)
{
	buf_reset(in);
	size_t body_at = 0, want = 0;
	char chunk[16384];
	for (;;) {
		if (body_at && in->len >= body_at + want)
			return body_at;
		ssize_t r = recv(fd, chunk, sizeof chunk, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		buf_add(in, chunk, (size_t)r);
		if (!body_at) {
			const char *e = memmem(in->p, in->len, "\r\n\r\n", 4);
			if (!e)
				continue;
			body_at = (size_t)(e - in->p) + 4;
			for (const char *l = in->p; l < e; l = strstr(l, "\r\n") + 2)
				if (strncasecmp(l, "content-length:", 15) == 0)
					want = strtoull(l + 15, NULL, 10);
		}
	}
}

/* Writes the chunked body at pace HTTP chunks a second: every chunk due
 * by now, then a sleep of a millisecond (so a client sees a steady stream,
 * not one burst). Stops, false, when the client went away. */
static bool write_paced(int fd, const struct buf *body, unsigned pace)
{
	uint64_t t0 = clock_mono_ns();
	size_t at = 0, sent = 0;
	while (at < body->len) {
		uint64_t due = (clock_mono_ns() - t0) * pace / 1000000000u + 1;
		size_t from = at;
		for (; sent < due && at < body->len; sent++) {
			size_t n = strtoull(body->p + at, NULL, 16);
			const char *data = strstr(body->p + at, "\r\n");
			at = (size_t)(data - body->p) + 2 + n + 2;
			if (n == 0)
				at = body->len; /* the last chunk and its CRLF */
		}
		if (at > from && !write_all(fd, body->p + from, at - from))
			return false;
		if (at < body->len)
			usleep(1000);
	}
	return true;
}

static void serve(struct chatsrv *s, int fd)
{
	static const char ok_head[] = "HTTP/1.1 200 OK\r\n"
				      "Content-Type: text/event-stream; charset=utf-8\r\n"
				      "Cache-Control: no-cache\r\n"
				      "Transfer-Encoding: chunked\r\n\r\n";
	static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
				  "Content-Length: 67\r\n\r\n"
				  "{\"error\":{\"message\":\"bad request\",\"type\":\"invalid_request_error\"}}\n";
	struct buf in = BUF_INIT;
	size_t at;
	while ((at = read_request(fd, &in)) > 0) {
		struct chatsrv_request rq = {.arrived_ns = clock_mono_ns()};
		check_request(in.p, in.p + at, in.len - at, &rq);
		pthread_mutex_lock(&s->mu);
		if (s->n_req++ == 0)
			s->first = rq;
		const struct buf *reply = s->reply;
		unsigned pace = s->pace;
		pthread_mutex_unlock(&s->mu);
		bool sent = rq.ok && reply ? write_all(fd, ok_head, sizeof ok_head - 1) &&
						     (pace ? write_paced(fd, reply, pace)
							   : write_all(fd, reply->p, reply->len))
					   : write_all(fd, bad, sizeof bad - 1);
		if (!sent)
			break;
	}
	buf_release(&in);
}

static void *server_main(void *arg)
{
	struct chatsrv *s = arg;
	while (!atomic_load(&s->stop)) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* shut down */
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		serve(s, fd);
		close(fd);
	}
	return NULL;
}

struct chatsrv *chatsrv_start(void)
{
	struct chatsrv *s = xcalloc(1, sizeof *s);
	pthread_mutex_init(&s->mu, NULL);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    listen(s->lfd, 16) < 0 || getsockname(s->lfd, (struct sockaddr *)&a, &al) < 0)
		die("cannot listen on 127.0.0.1: %s", strerror(errno));
	s->port = ntohs(a.sin_port);
	if (pthread_create(&s->th, NULL, server_main, s) != 0)
		die("cannot start the server thread");
	return s;
}

int chatsrv_port(const struct chatsrv *s)
{
	return s->port;
}

void chatsrv_set_reply(struct chatsrv *s, const struct buf *body)
{
	pthread_mutex_lock(&s->mu);
	s->reply = body;
	pthread_mutex_unlock(&s->mu);
}

void chatsrv_set_pace(struct chatsrv *s, unsigned per_sec)
{
	pthread_mutex_lock(&s->mu);
	s->pace = per_sec;
	pthread_mutex_unlock(&s->mu);
}

size_t chatsrv_take(struct chatsrv *s, struct chatsrv_request *first)
{
	pthread_mutex_lock(&s->mu);
	size_t n = s->n_req;
	if (n)
		*first = s->first;
	s->n_req = 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void chatsrv_stop(struct chatsrv *s)
{
	atomic_store(&s->stop, 1);
	shutdown(s->lfd, SHUT_RDWR); /* wakes accept() */
	pthread_join(s->th, NULL);
	close(s->lfd);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
