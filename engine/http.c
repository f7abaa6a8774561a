/* http.c — libcurl's multi interface on the libuv loop (after libcurl's
 * multi-uv example): libcurl says which sockets to watch (socket_cb → one
 * uv_poll each) and when to call it back (multi_timer_fn → one uv_timer);
 * both feed curl_multi_socket_action, and finished transfers are collected
 * after each call. Each transfer has its own uv_timer for the phase it is
 * in (connecting, waiting for the first progress, receiving), set to the
 * phase's timeout or what is left of the total, whichever ends first; it
 * also defers a cancel to the loop, outside libcurl's callbacks, where
 * libcurl may be called again. */
#include "engine/http.h"

#include "base/buf.h"
#include "base/xalloc.h"

#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* CURLOPT_PROTOCOLS_STR and CURLOPT_REDIR_PROTOCOLS_STR came in 7.85.0. */
#if LIBCURL_VERSION_NUM < 0x075500
#error "libcurl 7.85.0 or later is needed"
#endif

/* The only schemes a transfer may use, for its URL and any redirect:
 * libcurl would otherwise read file:// as a reply or speak FTP. */
#define HTTP_PROTOCOLS "http,https"

/* One socket libcurl asked us to watch. */
struct poll_ctx {
	uv_poll_t poll; /* first: the handle is the context */
	curl_socket_t fd;
	struct http *h;
	struct poll_ctx *next;
};

struct http {
	uv_loop_t *loop;
	CURLM *multi;            /* NULL once torn down */
	uv_timer_t timer;        /* libcurl's one timeout */
	struct poll_ctx *polls;  /* sockets being watched */
	struct http_xfer *xfers; /* transfers whose on_done has not run */
	char *ca_file, *ca_dir;  /* from the environment at http_new */
	unsigned handles;        /* open uv handles: timer, polls, transfer timers */
	bool closing;
	void (*close_cb)(void *ud);
	void *close_ud;
};

/* Phases, with their transitions:
 *   CONNECTING --prereq_cb (connected)------------------> WAITING
 *   WAITING    --progress (a byte, or http_xfer_progress)--> RECEIVING
 *   RECEIVING  --progress--------------------------------> RECEIVING (the gap again)
 *   WAITING, RECEIVING --on_body pauses--------------------> PAUSED
 *   PAUSED     --http_xfer_resume-------------------------> WAITING or RECEIVING
 *   any        --libcurl done, timer, cancel---------------> DONE */
enum xfer_phase {
	X_CONNECTING, /* resolving, connecting, TLS: the connect timeout runs */
	X_WAITING,    /* connected, the request goes out, no progress yet: the first-byte timeout runs */
	X_RECEIVING,  /* the response progressed: the gap timeout runs */
	X_PAUSED,     /* the receiver paused: no timeout, the total stands still */
	X_DONE,       /* removed from the multi; on_done ran or runs now */
};

struct http_xfer {
	struct http *h;
	CURL *easy;
	struct curl_slist *hdrs;
	uv_timer_t timer;
	enum xfer_phase phase;
	struct http_timeouts t;
	bool receiver_progress; /* only http_xfer_progress is progress */
	bool progressed;        /* progress came: the gap, not the first byte, applies */
	bool deadline_armed;    /* the timer runs to the total's end, not the phase's */
	uint64_t run_ms;        /* time not paused before run_since */
	uint64_t run_since;     /* loop time the transfer last started or resumed */
	struct buf head;        /* "name\0value\0" of the final header block */
	bool response_started;
	bool refused_resend;    /* libcurl wanted to send the request again */
	int forced;             /* an outcome decided here (timeout, cancel), or -1 */
	char forced_msg[128];
	void (*on_head)(void *, struct http_xfer *, long);
	int (*on_body)(void *, struct http_xfer *, const char *, size_t);
	void (*on_done)(void *, struct http_xfer *, const struct http_result *);
	void *ud;
	char errbuf[CURL_ERROR_SIZE];
	struct http_xfer *next, *prev;
};

/* ---- process-wide set-up ---- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	/* libcurl (NOSIGNAL) raises no signal, but OpenSSL writes to a socket
	 * the peer closed with plain write(): SIGPIPE would kill the process.
	 * Ignored process-wide, a closed stdout becomes EPIPE too. */
	signal(SIGPIPE, SIG_IGN);
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *env_dup(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? xstrdup(v) : NULL;
}

/* Descriptors >= 3 without FD_CLOEXEC, as a bitmap over the first
 * CLOEXEC_SCAN numbers. */
#define CLOEXEC_SCAN 4096
static void fds_inheritable(unsigned char *map)
{
	memset(map, 0, CLOEXEC_SCAN / 8);
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		if (fd < 3 || fd >= CLOEXEC_SCAN || fd == dirfd(d))
			continue;
		int fl = fcntl(fd, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			map[fd / 8] |= (unsigned char)(1u << (fd % 8));
	}
	closedir(d);
}

/* curl_multi_init makes a wakeup socket pair without SOCK_CLOEXEC: mark
 * the descriptors that became inheritable during it. */
static CURLM *multi_init_cloexec(void)
{
	unsigned char before[CLOEXEC_SCAN / 8], after[CLOEXEC_SCAN / 8];
	fds_inheritable(before);
	CURLM *m = curl_multi_init();
	fds_inheritable(after);
	for (int fd = 3; fd < CLOEXEC_SCAN; fd++) {
		unsigned char bit = (unsigned char)(1u << (fd % 8));
		if ((after[fd / 8] & bit) && !(before[fd / 8] & bit))
			(void)fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
	}
	return m;
}

/* ---- the engine's lifetime ---- */

/* One of h's uv handles finished closing: free h once closing is done. */
static void handle_closed(struct http *h)
{
	if (--h->handles || !h->closing || h->multi)
		return;
	void (*cb)(void *) = h->close_cb;
	void *ud = h->close_ud;
	free(h->ca_file);
	free(h->ca_dir);
	free(h);
	if (cb)
		cb(ud);
}

static void timer_closed_cb(uv_handle_t *hd)
{
	handle_closed(hd->data);
}

static void poll_closed_cb(uv_handle_t *hd)
{
	struct poll_ctx *c = hd->data;
	struct http *h = c->h;
	free(c);
	handle_closed(h);
}

/* Stop watching a socket, before libcurl closes it. */
static void poll_detach(struct poll_ctx *c)
{
	struct poll_ctx **pp = &c->h->polls;
	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
	uv_poll_stop(&c->poll);
	uv_close((uv_handle_t *)&c->poll, poll_closed_cb);
}

/* Once closing and every transfer has reported: free libcurl's state
 * (which closes its cached connections) and close the handles. Only ever
 * called outside libcurl's callbacks. */
static void after_curl(struct http *h)
{
	if (!h->closing || h->xfers || !h->multi)
		return;
	CURLM *m = h->multi;
	h->multi = NULL;
	curl_multi_cleanup(m);
	while (h->polls)
		poll_detach(h->polls);
	uv_timer_stop(&h->timer);
	uv_close((uv_handle_t *)&h->timer, timer_closed_cb);
}

/* ---- one transfer ---- */

static const unsigned *phase_timeout(const struct http_xfer *x, enum xfer_phase p)
{
	return p == X_CONNECTING ? &x->t.connect_ms
	       : p == X_WAITING  ? &x->t.first_byte_ms
				 : &x->t.gap_ms;
}

static void xfer_timer_cb(uv_timer_t *t);

/* Milliseconds left of the total: the time not paused counts. */
static uint64_t total_left(const struct http_xfer *x)
{
	uint64_t used = x->run_ms + (uv_now(x->h->loop) - x->run_since);
	return used >= x->t.total_ms ? 0 : x->t.total_ms - used;
}

/* Enter phase p and (re)start its timeout, or what is left of the total
 * when that ends first; nothing once an outcome is decided, so a deferred
 * cancel is never pushed back. */
static void arm(struct http_xfer *x, enum xfer_phase p)
{
	if (x->forced >= 0 || x->phase == X_DONE)
		return;
	x->phase = p;
	uint64_t ms = *phase_timeout(x, p), left = total_left(x);
	x->deadline_armed = left <= ms;
	uv_timer_start(&x->timer, xfer_timer_cb, x->deadline_armed ? left : ms, 0);
}

static bool setup_error(CURLcode rc)
{
	return rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL ||
	       rc == CURLE_NOT_BUILT_IN || rc == CURLE_BAD_FUNCTION_ARGUMENT ||
	       rc == CURLE_FAILED_INIT || rc == CURLE_OUT_OF_MEMORY;
}

static void classify(struct http_xfer *x, CURLcode rc, struct http_result *res)
{
	long sent = 0, status = 0;
	curl_easy_getinfo(x->easy, CURLINFO_REQUEST_SIZE, &sent);
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	memset(res, 0, sizeof *res);
	/* REQUEST_SIZE counts bytes libcurl managed to write (TLS: whole
	 * records handed to the socket). */
	res->request_sent = sent > 0 || x->refused_resend;
	res->response_started = x->response_started;
	res->status = status;
	res->curl_code = (int)rc;
	if (x->forced >= 0) {
		res->outcome = (enum http_outcome)x->forced;
		snprintf(res->msg, sizeof res->msg, "%s", x->forced_msg);
		return;
	}
	if (rc == CURLE_OK) {
		res->outcome = HTTP_COMPLETE;
		return;
	}
	snprintf(res->msg, sizeof res->msg, "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
	bool timeout = rc == CURLE_OPERATION_TIMEDOUT;
	if (setup_error(rc))
		res->outcome = HTTP_E_SETUP;
	else if (!res->request_sent)
		res->outcome = timeout ? HTTP_E_TIMEOUT_CONNECT : HTTP_E_CONNECT;
	else if (!res->response_started)
		res->outcome = timeout ? HTTP_E_TIMEOUT_FIRST_BYTE : HTTP_E_NO_RESPONSE;
	else
		res->outcome = timeout ? HTTP_E_TIMEOUT_GAP : HTTP_E_BROKEN;
}

static void xfer_closed_cb(uv_handle_t *hd)
{
	struct http_xfer *x = hd->data;
	struct http *h = x->h;
	free(x);
	handle_closed(h);
}

static void free_headers(struct curl_slist *l)
{
	/* Our copy of the keys does not linger in freed memory. */
	for (struct curl_slist *s = l; s; s = s->next)
		explicit_bzero(s->data, strlen(s->data));
	curl_slist_free_all(l);
}

/* Remove the transfer, report, release. Outside libcurl's callbacks only. */
static void finish(struct http_xfer *x, CURLcode rc)
{
	if (x->phase == X_DONE)
		return;
	struct http *h = x->h;
	struct http_result res;
	classify(x, rc, &res);
	x->phase = X_DONE;
	uv_timer_stop(&x->timer);
	curl_multi_remove_handle(h->multi, x->easy);
	if (x->prev)
		x->prev->next = x->next;
	else
		h->xfers = x->next;
	if (x->next)
		x->next->prev = x->prev;
	x->on_done(x->ud, x, &res);
	curl_easy_cleanup(x->easy);
	free_headers(x->hdrs);
	buf_release(&x->head);
	uv_close((uv_handle_t *)&x->timer, xfer_closed_cb);
}

static void xfer_timer_cb(uv_timer_t *t)
{
	struct http_xfer *x = t->data;
	struct http *h = x->h;
	if (x->forced >= 0) {
		/* a deferred cancel */
	} else if (x->phase == X_CONNECTING) {
		unsigned ms = x->deadline_armed ? x->t.total_ms : x->t.connect_ms;
		x->forced = HTTP_E_TIMEOUT_CONNECT;
		snprintf(x->forced_msg, sizeof x->forced_msg, "no connection within %u ms", ms);
	} else if (x->deadline_armed) {
		x->forced = HTTP_E_TIMEOUT_TOTAL;
		snprintf(x->forced_msg, sizeof x->forced_msg, "not done within the deadline of %u ms",
			 x->t.total_ms);
	} else {
		bool waiting = x->phase == X_WAITING;
		const char *what = x->receiver_progress ? (waiting ? "nothing within" : "nothing more for")
				   : waiting		? "no response within"
							: "the response stalled for";
		x->forced = waiting ? HTTP_E_TIMEOUT_FIRST_BYTE : HTTP_E_TIMEOUT_GAP;
		snprintf(x->forced_msg, sizeof x->forced_msg, "%s %u ms", what, *phase_timeout(x, x->phase));
	}
	finish(x, CURLE_OK);
	after_curl(h);
}

/* ---- libcurl's callbacks on a transfer ---- */

static size_t write_cb(char *p, size_t size, size_t nmemb, void *ud)
{
	struct http_xfer *x = ud;
	size_t n = size * nmemb;
	if (x->forced >= 0)
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	x->response_started = true;
	int r = x->on_body(x->ud, x, p, n);
	if (x->forced >= 0)
		return 0;
	if (r == HTTP_BODY_PAUSE) {
		x->phase = X_PAUSED;
		x->run_ms += uv_now(x->h->loop) - x->run_since;
		uv_timer_stop(&x->timer);
		return CURL_WRITEFUNC_PAUSE;
	}
	if (!x->receiver_progress) {
		x->progressed = true;
		arm(x, X_RECEIVING);
	}
	return n;
}

static bool header_name_is(const char *p, size_t n, const char *name)
{
	return strlen(name) == n && strncasecmp(p, name, n) == 0;
}

static size_t header_cb(char *p, size_t size, size_t nitems, void *ud)
{
	struct http_xfer *x = ud;
	size_t n = size * nitems;
	if (x->forced >= 0)
		return 0;
	x->response_started = true;
	if (!x->receiver_progress) {
		x->progressed = true;
		arm(x, X_RECEIVING);
	}
	size_t len = n;
	while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		len--;
	if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
		buf_reset(&x->head); /* a new block: after a 1xx, the final one */
		return n;
	}
	if (len == 0) {
		long status = 0;
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && x->on_head)
			x->on_head(x->ud, x, status);
		return x->forced >= 0 ? 0 : n;
	}
	const char *colon = memchr(p, ':', len);
	if (!colon || x->head.len + len + 2 > HTTP_HEAD_MAX)
		return n; /* a folded line, or past what is kept */
	size_t nlen = (size_t)(colon - p);
	const char *v = colon + 1;
	while (v < p + len && (*v == ' ' || *v == '\t'))
		v++;
	size_t vlen = (size_t)(p + len - v);
	while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	buf_add(&x->head, p, nlen);
	buf_addc(&x->head, '\0');
	buf_add(&x->head, v, vlen);
	buf_addc(&x->head, '\0');
	return n;
}

/* Connected (and tunnelled, TLS done): the request is about to go out.
 * libcurl calls this again before re-sending on a fresh connection when a
 * reused one died with no answer; once a byte went out, that is refused. */
static int prereq_cb(void *ud, char *ip, char *local_ip, int port, int local_port)
{
	struct http_xfer *x = ud;
	long sent = 0;
	curl_easy_getinfo(x->easy, CURLINFO_REQUEST_SIZE, &sent);
	if (sent > 0) {
		x->refused_resend = true;
		x->forced = HTTP_E_NO_RESPONSE;
		snprintf(x->forced_msg, sizeof x->forced_msg,
			 "the connection closed before a response; the request is not sent again");
		return CURL_PREREQFUNC_ABORT;
	}
	arm(x, X_WAITING);
	return CURL_PREREQFUNC_OK;
}

static curl_socket_t open_socket_cb(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int close_socket_cb(void *ud, curl_socket_t fd)
{
	struct http *h = ud;
	/* libcurl normally says CURL_POLL_REMOVE first; if not (its cached
	 * connections at cleanup), stop watching before the number is freed. */
	for (struct poll_ctx *c = h->polls; c; c = c->next)
		if (c->fd == fd) {
			poll_detach(c);
			break;
		}
	return close(fd);
}

/* ---- libcurl's callbacks on the multi ---- */

static void check_done(struct http *h)
{
	CURLMsg *m;
	int left;
	while (h->multi && (m = curl_multi_info_read(h->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct http_xfer *x = NULL;
		CURLcode rc = m->data.result;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		finish(x, rc);
	}
}

static void action(struct http *h, curl_socket_t fd, int flags)
{
	int running;
	if (!h->multi)
		return;
	curl_multi_socket_action(h->multi, fd, flags, &running);
	check_done(h);
	after_curl(h);
}

static void poll_cb(uv_poll_t *p, int status, int events)
{
	struct poll_ctx *c = p->data;
	int flags = 0;
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	action(c->h, c->fd, flags);
}

static void multi_timer_cb(uv_timer_t *t)
{
	action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int multi_timer_fn(CURLM *m, long ms, void *ud)
{
	struct http *h = ud;
	if (ms < 0)
		uv_timer_stop(&h->timer);
	else /* 0: as soon as possible, but never inside this call */
		uv_timer_start(&h->timer, multi_timer_cb, (uint64_t)ms, 0);
	return 0;
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *ud, void *socketp)
{
	struct http *h = ud;
	struct poll_ctx *c = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (c) {
			poll_detach(c);
			if (h->multi)
				curl_multi_assign(h->multi, fd, NULL);
		}
		return 0;
	}
	if (!c) {
		c = xcalloc(1, sizeof *c);
		if (uv_poll_init_socket(h->loop, &c->poll, fd) != 0) {
			free(c);
			return -1;
		}
		c->fd = fd;
		c->h = h;
		c->poll.data = c;
		c->next = h->polls;
		h->polls = c;
		h->handles++;
		curl_multi_assign(h->multi, fd, c);
	}
	int events = 0;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= UV_READABLE;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= UV_WRITABLE;
	uv_poll_start(&c->poll, events, poll_cb);
	return 0;
}

/* ---- public ---- */

struct http *http_new(uv_loop_t *loop, struct cerr *err)
{
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK) {
		cerr_set(err, CERR_IO, 0, "cannot initialise libcurl: %s", curl_easy_strerror(global_rc));
		return NULL;
	}
	CURLM *m = multi_init_cloexec();
	if (!m) {
		cerr_set(err, CERR_IO, 0, "cannot initialise libcurl's multi interface");
		return NULL;
	}
	struct http *h = xcalloc(1, sizeof *h);
	h->loop = loop;
	h->multi = m;
	uv_timer_init(loop, &h->timer);
	h->timer.data = h;
	h->handles = 1;
	/* libcurl reads no CA variable itself (the curl tool does). */
	h->ca_file = env_dup("CURL_CA_BUNDLE");
	if (!h->ca_file)
		h->ca_file = env_dup("SSL_CERT_FILE");
	h->ca_dir = env_dup("SSL_CERT_DIR");
	curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(m, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, multi_timer_fn);
	curl_multi_setopt(m, CURLMOPT_TIMERDATA, h);
	return h;
}

void http_close(struct http *h, void (*cb)(void *ud), void *ud)
{
	h->closing = true;
	h->close_cb = cb;
	h->close_ud = ud;
	for (struct http_xfer *x = h->xfers; x; x = x->next)
		http_xfer_cancel(x);
	after_curl(h);
}

static void set_body(CURL *e, const struct http_request *req)
{
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, req->body ? (const char *)req->body : "");
}

struct http_xfer *http_start(struct http *h, const struct http_request *req, struct cerr *err)
{
	if (h->closing || !req->method || !req->url || !req->on_body || !req->on_done) {
		cerr_set(err, CERR_USAGE, 0, "%s", h->closing ? "the HTTP engine is closing"
							       : "incomplete HTTP request");
		return NULL;
	}
	CURL *e = curl_easy_init();
	if (!e) {
		cerr_set(err, CERR_IO, 0, "cannot start an HTTP transfer");
		return NULL;
	}
	struct http_xfer *x = xcalloc(1, sizeof *x);
	x->h = h;
	x->easy = e;
	x->forced = -1;
	x->phase = X_CONNECTING;
	x->t = req->timeouts;
	if (!x->t.connect_ms)
		x->t.connect_ms = HTTP_CONNECT_MS;
	if (!x->t.first_byte_ms)
		x->t.first_byte_ms = HTTP_FIRST_BYTE_MS;
	if (!x->t.gap_ms)
		x->t.gap_ms = HTTP_GAP_MS;
	if (!x->t.total_ms)
		x->t.total_ms = HTTP_TOTAL_MS;
	x->receiver_progress = req->receiver_progress;
	uv_update_time(h->loop);
	x->run_since = uv_now(h->loop);
	x->on_head = req->on_head;
	x->on_body = req->on_body;
	x->on_done = req->on_done;
	x->ud = req->ud;
	buf_init(&x->head);

	for (const char *const *hd = req->headers; hd && *hd; hd++)
		if (!(x->hdrs = curl_slist_append(x->hdrs, *hd)))
			abort(); /* out of memory */
	/* No "Expect: 100-continue" round trip before a large body. */
	if (!(x->hdrs = curl_slist_append(x->hdrs, "Expect:")))
		abort();

	curl_easy_setopt(e, CURLOPT_URL, req->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, HTTP_PROTOCOLS);
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, HTTP_PROTOCOLS);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L); /* a 3xx is the reply */
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)x);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* HTTP/2 would buffer up to its stream window while paused. */
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, prereq_cb);
	curl_easy_setopt(e, CURLOPT_PREREQDATA, x);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket_cb);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, h);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, close_socket_cb);
	curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, h);
	if (h->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file);
	if (h->ca_dir)
		curl_easy_setopt(e, CURLOPT_CAPATH, h->ca_dir);
	if (strcmp(req->method, "GET") == 0) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(req->method, "POST") == 0) {
		set_body(e, req);
	} else {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
		if (req->body)
			set_body(e, req);
	}

	uv_timer_init(h->loop, &x->timer);
	x->timer.data = x;
	h->handles++;
	x->next = h->xfers;
	if (h->xfers)
		h->xfers->prev = x;
	h->xfers = x;
	arm(x, X_CONNECTING);
	CURLMcode mc = curl_multi_add_handle(h->multi, e);
	if (mc != CURLM_OK) {
		cerr_set(err, CERR_IO, 0, "cannot start an HTTP transfer: %s", curl_multi_strerror(mc));
		h->xfers = x->next;
		if (x->next)
			x->next->prev = NULL;
		x->phase = X_DONE;
		uv_timer_stop(&x->timer);
		curl_easy_cleanup(e);
		free_headers(x->hdrs);
		uv_close((uv_handle_t *)&x->timer, xfer_closed_cb);
		return NULL;
	}
	return x;
}

void http_xfer_cancel(struct http_xfer *x)
{
	if (x->phase == X_DONE || x->forced >= 0)
		return;
	x->forced = HTTP_E_CANCELED;
	snprintf(x->forced_msg, sizeof x->forced_msg, "canceled");
	/* Deferred: this may run inside libcurl's callbacks, where the
	 * transfer cannot be removed. */
	uv_timer_start(&x->timer, xfer_timer_cb, 0, 0);
}

void http_xfer_resume(struct http_xfer *x)
{
	if (x->phase != X_PAUSED || x->forced >= 0)
		return;
	x->run_since = uv_now(x->h->loop);
	arm(x, x->progressed ? X_RECEIVING : X_WAITING);
	/* May hand the held bytes to on_body at once (which may pause again). */
	curl_easy_pause(x->easy, CURLPAUSE_CONT);
}

void http_xfer_progress(struct http_xfer *x)
{
	if (x->forced >= 0 || x->phase == X_DONE || x->phase == X_CONNECTING)
		return;
	x->progressed = true;
	if (x->phase != X_PAUSED)
		arm(x, X_RECEIVING);
}

const char *http_xfer_header(const struct http_xfer *x, const char *name)
{
	const char *p = x->head.p, *end = x->head.p + x->head.len;
	while (p && p < end) {
		size_t nlen = strlen(p);
		const char *v = p + nlen + 1;
		if (header_name_is(p, nlen, name))
			return v;
		p = v + strlen(v) + 1;
	}
	return NULL;
}

const char *http_outcome_name(enum http_outcome o)
{
	switch (o) {
	case HTTP_COMPLETE:
		return "complete";
	case HTTP_E_CONNECT:
		return "connect";
	case HTTP_E_NO_RESPONSE:
		return "no response";
	case HTTP_E_BROKEN:
		return "broken";
	case HTTP_E_TIMEOUT_CONNECT:
		return "connect timeout";
	case HTTP_E_TIMEOUT_FIRST_BYTE:
		return "first byte timeout";
	case HTTP_E_TIMEOUT_GAP:
		return "gap timeout";
	case HTTP_E_TIMEOUT_TOTAL:
		return "deadline";
	case HTTP_E_CANCELED:
		return "canceled";
	case HTTP_E_SETUP:
		return "setup";
	}
	return "unknown";
}
