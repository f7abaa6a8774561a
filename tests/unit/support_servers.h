/* support_servers.h — servers for tests of network code: the fake model
 * server as a child process (tests/fake/fake_model.py: both wire protocols,
 * scripted per test, every request recorded), and raw HTTP servers in a
 * thread on 127.0.0.1 for exact misbehaviour. The helpers fail the running
 * cmocka test when a server cannot start.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_SERVERS_H
#define CAIRN_SUPPORT_SERVERS_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

struct fake {
	pid_t pid;
	int port;
	int stdin_fd; /* its stdin: closing it ends the server */
	char dir[64];
	char record[128];
};

/* tests/fake/fake_model.py, found from this binary (<root>/<build>/tests/);
 * static storage. */
const char *fake_path(void);
/* Start the fake server with script (JSON text) and extra arguments
 * (NULL-terminated, may be NULL); it exits when the test does. */
void fake_start(struct fake *f, const char *script, const char *const *extra);
/* Stop the server, wait for it, remove its directory. */
void fake_stop(struct fake *f);
/* The requests it recorded, a JSON array; the caller frees it. */
cJSON *fake_requests(const struct fake *f);
/* "http://127.0.0.1:<port><path>"; the caller frees it. */
char *url(int port, const char *path);

/* A listening socket on an ephemeral port of 127.0.0.1; *port set. */
int listen_any(int *port);

enum raw_mode {
	RAW_SILENT,     /* read the request, never answer */
	RAW_CLOSE,      /* read the request, close */
	RAW_FLOOD,      /* answer 200 with a huge body, sent as fast as it is taken */
	RAW_PROXY,      /* check a proxied request line, answer 200 */
};

struct raw {
	int lfd, port;
	enum raw_mode mode;
	pthread_t th;
	atomic_size_t sent;  /* RAW_FLOOD: body bytes the kernel took */
	atomic_int stop;
	size_t flood_len;
	char first_line[256];
};

/* Serve one connection in mode from a thread; r->port is where. */
void raw_start(struct raw *r, enum raw_mode mode);
/* Stop (a silent server lets go), join, close. */
void raw_stop(struct raw *r);

#endif
