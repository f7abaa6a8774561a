/* http.h — HTTP transfers on the libuv loop, through libcurl's multi
 * interface (curl_multi_socket_action driven by one uv_poll per socket and
 * one uv_timer); nothing blocks the loop.
 *
 * A transfer reports on the loop: the response's status and headers, its
 * body in pieces (the receiver may pause it: libcurl then stops reading the
 * socket, so a slow consumer never grows a buffer), and one completion that
 * says precisely how far it got — what a caller needs to decide whether a
 * request may be sent again. Request headers (keys) are never logged and
 * never appear in a message.
 *
 * Every descriptor is close-on-exec; SIGPIPE is ignored for the whole
 * process from the first http_new (OpenSSL writes to sockets without
 * MSG_NOSIGNAL); HTTP/1.1 only, so a paused transfer holds at most one
 * receive buffer; http:// and https:// only (any other scheme is
 * HTTP_E_SETUP, never attempted); no redirects (a 3xx is the reply);
 * proxies from the standard variables (http_proxy, https_proxy,
 * all_proxy, no_proxy, read by libcurl); CA
 * bundle from CURL_CA_BUNDLE, else SSL_CERT_FILE (and SSL_CERT_DIR), read
 * at http_new. libcurl's silent re-send of a request on a reused connection
 * that died is refused: a request goes out at most once.
 *
 * Calling sequence: http_new; http_start per request (each ends with one
 * on_done); http_close (asynchronous, like uv_close). Callbacks run on the
 * loop. From inside on_head or on_body only http_xfer_cancel and
 * http_xfer_progress may be called; http_start, http_xfer_resume and
 * http_close wait until outside them. */
#ifndef CAIRN_HTTP_H
#define CAIRN_HTTP_H

#include "base/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#define HTTP_CONNECT_MS 10000u     /* DNS, connect, proxy and TLS handshake */
#define HTTP_FIRST_BYTE_MS 600000u /* connected to the first progress */
#define HTTP_GAP_MS 120000u        /* between two progresses */
#define HTTP_TOTAL_MS 3600000u     /* the whole transfer */
#define HTTP_HEAD_MAX (64u * 1024u) /* response header bytes kept for lookup */

/* Timeouts in milliseconds; 0 takes the default above. Progress is a
 * response byte, or what the receiver says it is (receiver_progress).
 * While a transfer is paused no timeout runs and the total does not
 * count: the receiver, not the server, is slow. */
struct http_timeouts {
	unsigned connect_ms;
	unsigned first_byte_ms;
	unsigned gap_ms;
	unsigned total_ms;
};

/* How a transfer ended. */
enum http_outcome {
	HTTP_COMPLETE,             /* the whole response arrived (any status) */
	HTTP_E_CONNECT,            /* DNS, connect, proxy or TLS failed: no byte of the request was sent */
	HTTP_E_NO_RESPONSE,        /* the request was (partly) sent, then the connection failed before any response byte */
	HTTP_E_BROKEN,             /* the response began, then the connection failed (closed mid-body, reset) */
	HTTP_E_TIMEOUT_CONNECT,    /* not connected within connect_ms: no byte of the request was sent */
	HTTP_E_TIMEOUT_FIRST_BYTE, /* connected, no progress within first_byte_ms */
	HTTP_E_TIMEOUT_GAP,        /* no progress for gap_ms after the first */
	HTTP_E_TIMEOUT_TOTAL,      /* connected, not done within total_ms */
	HTTP_E_CANCELED,           /* http_xfer_cancel or http_close */
	HTTP_E_SETUP,              /* refused before any attempt: a malformed URL, an unsupported scheme */
};

struct http_result {
	enum http_outcome outcome;
	bool request_sent;     /* at least one byte of the request was written */
	bool response_started; /* at least one byte of the response arrived */
	long status;           /* the final HTTP status, 0 before one arrived */
	int curl_code;         /* the CURLcode, 0 when libcurl reported none */
	char msg[256];         /* libcurl's error text or ours; "" when complete; never a header */
};

/* on_body's answers. */
#define HTTP_BODY_OK 0    /* the bytes were consumed */
#define HTTP_BODY_PAUSE 1 /* not consumed: they come again after http_xfer_resume */

struct http;
struct http_xfer;

struct http_request {
	const char *method;          /* "GET", "POST", ... */
	const char *url;             /* http:// or https:// */
	const char *const *headers;  /* "Name: value" each, NULL-terminated; may be NULL */
	const void *body;            /* copied; may be NULL */
	size_t body_len;
	struct http_timeouts timeouts;
	/* What counts as progress (the end of the first-byte wait, a new gap):
	 * false, every response byte; true, only http_xfer_progress — the
	 * receiver decides, so bytes that carry nothing (keep-alive comments,
	 * a trickle, a partial line) never hold a transfer open. */
	bool receiver_progress;
	/* The final (non-1xx) status and its headers arrived; look them up
	 * with http_xfer_header. Optional. */
	void (*on_head)(void *ud, struct http_xfer *x, long status);
	/* Response body bytes, in order; HTTP_BODY_OK or HTTP_BODY_PAUSE. */
	int (*on_body)(void *ud, struct http_xfer *x, const char *p, size_t n);
	/* Once, last; res is borrowed for the call. The transfer is freed when
	 * it returns: drop every pointer to it. */
	void (*on_done)(void *ud, struct http_xfer *x, const struct http_result *res);
	void *ud;
};

/* Start the HTTP engine on loop; NULL with err on failure. The caller
 * closes it with http_close. */
struct http *http_new(uv_loop_t *loop, struct cerr *err);
/* Cancel every transfer (their on_done report HTTP_E_CANCELED), close the
 * handles, free h, then call cb(ud) (may be NULL) on the loop. */
void http_close(struct http *h, void (*cb)(void *ud), void *ud);

/* Start a transfer; req is copied (strings, headers and body). The returned
 * handle is borrowed: valid until on_done returns. On failure NULL with err,
 * and no callback runs. */
struct http_xfer *http_start(struct http *h, const struct http_request *req, struct cerr *err);
/* Abort the transfer now: no more on_head/on_body; on_done follows on the
 * loop with HTTP_E_CANCELED (never from inside this call). No-op once
 * on_done has been scheduled. */
void http_xfer_cancel(struct http_xfer *x);
/* Resume a transfer on_body paused: the held bytes come again first. */
void http_xfer_resume(struct http_xfer *x);
/* The reply progressed (receiver_progress): the first-byte wait ends, the
 * gap timeout starts again. May be called from inside on_head or on_body. */
void http_xfer_progress(struct http_xfer *x);
/* The value of response header name (any case) of the final status, or
 * NULL; owned by the transfer, valid until on_done returns. */
const char *http_xfer_header(const struct http_xfer *x, const char *name);
/* A short name of an outcome ("complete", "connect", ...); static storage. */
const char *http_outcome_name(enum http_outcome o);

#endif
