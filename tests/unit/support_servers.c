/* support_servers.c — servers for tests of network code: the fake model
 * server (tests/fake/fake_model.py) as a child process, and raw HTTP
 * servers in a thread on 127.0.0.1 for exact misbehaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "support_fixture.h"
#include "support_servers.h"

extern char **environ;

/* ---- the fake model server ---- */

/* tests/fake/fake_model.py, found from this binary: <root>/<build>/tests/. */
const char *fake_path(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	char *d = dirname(dirname(dirname(exe)));
	snprintf(path, sizeof path, "%s/tests/fake/fake_model.py", d);
	return path;
}

/* Start the server with script (JSON text) and extra arguments (NULL-ended). */
void fake_start(struct fake *f, const char *script, const char *const *extra)
{
	char root[64];
	assert_int_equal(tmp_root("http", f->dir, sizeof f->dir, root, sizeof root), 0);
	const char *sp = path_in(f->dir, "script.json");
	spit(sp, script, strlen(script), O_TRUNC);
	snprintf(f->record, sizeof f->record, "%s/record.jsonl", f->dir);
	const char *argv[24] = {"python3", fake_path(), "--script", sp, "--record", f->record,
				"--watch-stdin"};
	int a = 7;
	for (; extra && *extra; extra++)
		argv[a++] = *extra;
	argv[a] = NULL;
	int pfd[2], ifd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ifd, O_CLOEXEC), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, ifd[0], 0);
	assert_int_equal(posix_spawnp(&f->pid, "python3", &fa, NULL, (char *const *)argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	close(ifd[0]);
	f->stdin_fd = ifd[1];
	char line[32] = {0};
	size_t got = 0;
	while (got < sizeof line - 1 && !memchr(line, '\n', got)) {
		ssize_t r = read(pfd[0], line + got, sizeof line - 1 - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
	close(pfd[0]);
	f->port = atoi(line);
	assert_true(f->port > 0);
}

void fake_stop(struct fake *f)
{
	close(f->stdin_fd); /* python3 may be a wrapper: this reaches the server itself */
	waitpid(f->pid, NULL, 0);
	rm_rf(f->dir);
}

/* The recorded requests, one JSON object each; the caller frees it. */
cJSON *fake_requests(const struct fake *f)
{
	cJSON *all = cJSON_CreateArray();
	FILE *fp = fopen(f->record, "r");
	if (!fp)
		return all;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, fp) > 0)
		cJSON_AddItemToArray(all, cJSON_Parse(line));
	free(line);
	fclose(fp);
	return all;
}

char *url(int port, const char *path)
{
	return xasprintf("http://127.0.0.1:%d%s", port, path);
}

/* ---- raw servers on 127.0.0.1 ---- */

/* A listening socket on an ephemeral port; *port set. */
int listen_any(int *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s, 8), 0);
	socklen_t len = sizeof a;
	getsockname(s, (struct sockaddr *)&a, &len);
	*port = ntohs(a.sin_port);
	return s;
}



/* Read until the end of the request headers (and a Content-Length body). */
static void read_request(int c, char *first, size_t fn)
{
	struct buf b = BUF_INIT;
	char tmp[4096];
	size_t need = SIZE_MAX;
	while (b.len < need) {
		ssize_t r = read(c, tmp, sizeof tmp);
		if (r <= 0)
			break;
		buf_add(&b, tmp, (size_t)r);
		char *end = strstr(b.p, "\r\n\r\n");
		if (end && need == SIZE_MAX) {
			char *cl = strcasestr(b.p, "\ncontent-length:");
			need = (size_t)(end - b.p) + 4 + (cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0);
		}
	}
	if (first) {
		size_t k = strcspn(b.p ? b.p : "", "\r");
		snprintf(first, fn, "%.*s", (int)k, b.p ? b.p : "");
	}
	buf_release(&b);
}

static void *raw_main(void *arg)
{
	struct raw *r = arg;
	int c = accept(r->lfd, NULL, NULL);
	if (c < 0)
		return NULL;
	read_request(c, r->first_line, sizeof r->first_line);
	if (r->mode == RAW_SILENT) {
		while (!atomic_load(&r->stop))
			usleep(10000);
	} else if (r->mode == RAW_PROXY) {
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nproxied";
		(void)!write(c, ok, sizeof ok - 1);
	} else if (r->mode == RAW_FLOOD) {
		int small = 64 * 1024;
		setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
		char head[128];
		int hn = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
				  r->flood_len);
		(void)!write(c, head, (size_t)hn);
		static char chunk[16384];
		memset(chunk, 'z', sizeof chunk);
		while (atomic_load(&r->sent) < r->flood_len) {
			size_t k = r->flood_len - atomic_load(&r->sent);
			ssize_t w = write(c, chunk, k < sizeof chunk ? k : sizeof chunk);
			if (w <= 0)
				break;
			atomic_fetch_add(&r->sent, (size_t)w);
		}
	}
	close(c);
	return NULL;
}

void raw_start(struct raw *r, enum raw_mode mode)
{
	memset(r, 0, sizeof *r);
	r->mode = mode;
	r->lfd = listen_any(&r->port);
	assert_int_equal(pthread_create(&r->th, NULL, raw_main, r), 0);
}

void raw_stop(struct raw *r)
{
	atomic_store(&r->stop, 1);
	shutdown(r->lfd, SHUT_RDWR); /* an accept() still waiting returns */
	pthread_join(r->th, NULL);
	close(r->lfd);
}

