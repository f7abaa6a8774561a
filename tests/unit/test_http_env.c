/* test_http_env.c — what engine/http.c takes from and leaves to the
 * process (the fixture: support_http.h): its sockets are close-on-exec (a
 * child spawned mid-transfer holds none), SIGPIPE is ignored, a proxy comes
 * from the environment, and so does the CA bundle (SSL_CERT_FILE,
 * CURL_CA_BUNDLE first) against a TLS fake server with a self-signed
 * certificate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "base/xalloc.h"
#include "engine/http.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_http.h"
#include "tests/unit/support_servers.h"

extern char **environ;

struct cloexec_probe {
	int checked;
	int sockets;
};

/* Sockets the child of a spawn would inherit, counted from /proc. */
static int inherited_sockets(pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char link[PATH_MAX], target[PATH_MAX];
		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		ssize_t k = readlink(link, target, sizeof target - 1);
		if (k > 0 && (target[k] = '\0', strncmp(target, "socket:", 7) == 0))
			n++;
	}
	closedir(d);
	return n;
}

static void cloexec_head(void *ud, struct http_xfer *x, long status)
{
	struct cloexec_probe *c = ud;
	/* Our own sockets: the transfer's, libcurl's wakeup pair. */
	int own = 0;
	for (int fd = 3; fd < 1024; fd++) {
		int fl = fcntl(fd, F_GETFD);
		char link[64], target[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t k = readlink(link, target, sizeof target - 1);
		if (fl < 0 || k <= 0)
			continue;
		target[k] = '\0';
		if (strncmp(target, "socket:", 7) == 0) {
			own++;
			if (!(fl & FD_CLOEXEC))
				fail_msg("socket fd %d is inherited by children", fd);
		}
	}
	assert_true(own >= 1);
	/* A child started now holds none of them. */
	pid_t pid;
	const char *argv[] = {"sleep", "5", NULL};
	assert_int_equal(posix_spawnp(&pid, "sleep", NULL, NULL, (char *const *)argv, environ), 0);
	for (int i = 0; i < 100; i++) { /* until it has exec'd */
		char exe[PATH_MAX] = "", link[64];
		snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
		ssize_t k = readlink(link, exe, sizeof exe - 1);
		if (k > 0 && (exe[k] = '\0', strstr(exe, "sleep")))
			break;
		usleep(10000);
	}
	c->sockets = inherited_sockets(pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	c->checked = 1;
}

static int cloexec_body(void *ud, struct http_xfer *x, const char *p, size_t n)
{
	return HTTP_BODY_OK;
}

static void cloexec_done(void *ud, struct http_xfer *x, const struct http_result *res)
{
	assert_int_equal(res->outcome, HTTP_COMPLETE);
	((struct cloexec_probe *)ud)->checked |= 2;
}

static void test_transfer_sockets_are_close_on_exec(void **state)
{
	setup_env();
	struct fake f;
	fake_start(&f, "{\"replies\":[{\"text\":\"x\",\"stall_after_head_ms\":300}]}", NULL);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct http *h = http_new(&loop, NULL);
	struct cloexec_probe c = {0};
	char *u = url(f.port, "/v1/chat/completions");
	struct http_request req = {.method = "POST", .url = u, .headers = auth_headers, .body = chat,
				   .body_len = strlen(chat), .on_head = cloexec_head,
				   .on_body = cloexec_body, .on_done = cloexec_done, .ud = &c};
	assert_non_null(http_start(h, &req, NULL));
	while (c.checked != 3)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(c.sockets, 0);
	free(u);
	close_all(&loop, h);
	fake_stop(&f);
}

static void test_proxy_from_the_environment(void **state)
{
	setup_env();
	struct raw r;
	raw_start(&r, RAW_PROXY);
	char proxy[64];
	snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", r.port);
	setenv("http_proxy", proxy, 1);
	struct got g;
	got_init(&g);
	one_transfer(&g, "http://model.invalid/v1/chat/completions", chat, auth_headers,
	      (struct http_timeouts){0});
	unsetenv("http_proxy");
	assert_int_equal(g.res.outcome, HTTP_COMPLETE);
	assert_string_equal(g.body.p, "proxied");
	assert_string_equal(r.first_line, "POST http://model.invalid/v1/chat/completions HTTP/1.1");
	got_release(&g);
	raw_stop(&r);
}

/* A self-signed certificate for 127.0.0.1 in dir; false without openssl. */
static bool make_cert(const char *dir)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
		 "-addext subjectAltName=IP:127.0.0.1 -keyout %s/key.pem -out %s/cert.pem "
		 ">/dev/null 2>&1",
		 dir, dir);
	return system(cmd) == 0;
}

static void tls_once(const char *u, enum http_outcome want, bool sent)
{
	struct got g;
	got_init(&g);
	one_transfer(&g, u, chat, auth_headers, (struct http_timeouts){0});
	if (g.res.outcome != want)
		fail_msg("outcome %s (%s), want %s", http_outcome_name(g.res.outcome), g.res.msg,
			 http_outcome_name(want));
	assert_int_equal(g.res.request_sent, sent);
	got_release(&g);
}

static void test_ca_bundle_from_the_environment(void **state)
{
	setup_env();
	char dir[64], root[64];
	assert_int_equal(tmp_root("cert", dir, sizeof dir, root, sizeof root), 0);
	if (!make_cert(dir)) {
		rm_rf(dir);
		skip();
	}
	char cert[128], key[128];
	snprintf(cert, sizeof cert, "%s/cert.pem", dir);
	snprintf(key, sizeof key, "%s/key.pem", dir);
	struct fake f;
	const char *const tls[] = {"--tls", cert, key, NULL};
	fake_start(&f, "{\"replies\":[{\"text\":\"a\"},{\"text\":\"b\"}]}", tls);
	char *u = xasprintf("https://127.0.0.1:%d/v1/chat/completions", f.port);
	char *old_bundle = getenv("CURL_CA_BUNDLE") ? xstrdup(getenv("CURL_CA_BUNDLE")) : NULL;
	char *old_file = getenv("SSL_CERT_FILE") ? xstrdup(getenv("SSL_CERT_FILE")) : NULL;
	char *old_dir = getenv("SSL_CERT_DIR") ? xstrdup(getenv("SSL_CERT_DIR")) : NULL;
	unsetenv("SSL_CERT_DIR");
	/* SSL_CERT_FILE names the bundle. */
	unsetenv("CURL_CA_BUNDLE");
	setenv("SSL_CERT_FILE", cert, 1);
	tls_once(u, HTTP_COMPLETE, true);
	/* CURL_CA_BUNDLE comes first; without the certificate, the handshake
	 * fails before any byte of the request. */
	setenv("CURL_CA_BUNDLE", "/dev/null", 1);
	tls_once(u, HTTP_E_CONNECT, false);
	setenv("CURL_CA_BUNDLE", cert, 1);
	setenv("SSL_CERT_FILE", "/dev/null", 1);
	tls_once(u, HTTP_COMPLETE, true);
	if (old_bundle)
		setenv("CURL_CA_BUNDLE", old_bundle, 1);
	else
		unsetenv("CURL_CA_BUNDLE");
	if (old_file)
		setenv("SSL_CERT_FILE", old_file, 1);
	else
		unsetenv("SSL_CERT_FILE");
	if (old_dir)
		setenv("SSL_CERT_DIR", old_dir, 1);
	free(old_bundle);
	free(old_file);
	free(old_dir);
	free(u);
	fake_stop(&f);
	rm_rf(dir);
}

static void test_http_new_ignores_sigpipe(void **state)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct http *h = http_new(&loop, NULL);
	struct sigaction sa;
	sigaction(SIGPIPE, NULL, &sa);
	assert_true(sa.sa_handler == SIG_IGN);
	close_all(&loop, h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transfer_sockets_are_close_on_exec),
		cmocka_unit_test(test_proxy_from_the_environment),
		cmocka_unit_test(test_ca_bundle_from_the_environment),
		cmocka_unit_test(test_http_new_ignores_sigpipe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
