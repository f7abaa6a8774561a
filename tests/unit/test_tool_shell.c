/* test_tool_shell.c — the shell tool on real processes (engine/tool_shell.c)
 * and what tool.c adds around it: output and exit status, stderr in order,
 * stdin at EOF, timeouts with TERM and then KILL, a background grandchild
 * that holds the pipe, caps, invalid bytes, descriptors and environment
 * the child sees, cancel, arguments, the schemas and unknown names. Each
 * run's loop must close with no handle left (the run is joined). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/utf8.h"
#include "base/xalloc.h"
#include "engine/tool.h"
#include "engine/tool_reaper.h"

#define FFFD "\xef\xbf\xbd"

extern char **environ;

struct got {
	int calls;
	struct tool_result r;
	double elapsed; /* seconds from start to the callback */
	double t0;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void done_cb(void *ctx, struct tool_run *run, struct tool_result *r)
{
	struct got *g = ctx;
	g->calls++;
	g->r = *r; /* the contents are ours now */
	g->elapsed = now_s() - g->t0;
}

struct canceler {
	uv_timer_t t;
	struct tool_run *run;
};

static void cancel_cb(uv_timer_t *t)
{
	struct canceler *c = t->data;
	tool_cancel(c->run);
}

/* Run tool name with args (JSON text) on a fresh loop until it completes;
 * cancel it after cancel_ms when that is not 0. The loop must close with
 * nothing left open. */
static struct got run_tool(const char *name, const char *args_json, struct tool_limits lim,
			   char *const *env, const char *cwd, unsigned cancel_ms)
{
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	struct tool_ctx ctx = {.loop = &loop, .cwd = cwd ? cwd : ".", .env = env, .limits = lim};
	cJSON *args = cJSON_Parse(args_json);
	assert_non_null(args);
	struct got g = {.t0 = now_s()};
	struct cerr err;
	struct tool_run *run = tool_start(&ctx, name, args, done_cb, &g, &err);
	cJSON_Delete(args);
	assert_non_null(run);
	assert_int_equal(g.calls, 0); /* never from inside tool_start */
	struct canceler c = {.run = run};
	if (cancel_ms) {
		uv_timer_init(&loop, &c.t);
		c.t.data = &c;
		uv_timer_start(&c.t, cancel_cb, cancel_ms, 0);
	}
	while (g.calls == 0)
		uv_run(&loop, UV_RUN_ONCE);
	if (cancel_ms)
		uv_close((uv_handle_t *)&c.t, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(g.calls, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
	assert_non_null(g.r.output);
	size_t bad;
	assert_true(utf8_valid(g.r.output, strlen(g.r.output), &bad));
	return g;
}

static struct got run_shell(const char *command, unsigned timeout_ms, unsigned cancel_ms)
{
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "command", command);
	if (timeout_ms)
		cJSON_AddNumberToObject(a, "timeout_ms", timeout_ms);
	char *json = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	struct got g = run_tool("shell", json, (struct tool_limits){0}, NULL, NULL, cancel_ms);
	free(json);
	return g;
}

/* Alive, and not a zombie left for an init that may never reap it. */
static bool pid_alive(pid_t pid)
{
	if (kill(pid, 0) != 0)
		return false;
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(line, 1, sizeof line - 1, f);
	fclose(f);
	line[n] = '\0';
	char *rp = strrchr(line, ')');
	return !(rp && (rp[2] == 'Z' || rp[2] == 'X'));
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && strcmp(s + n - k, tail) == 0;
}

static void test_echo_ok_adds_nothing(void **state)
{
	struct got g = run_shell("echo ok", 0, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_string_equal(g.r.output, "ok\n");
	assert_int_equal(g.r.exit_code, 0);
	assert_int_equal(g.r.signal, 0);
	assert_false(g.r.truncated);
	assert_null(g.r.full);
	tool_result_release(&g.r);
}

static void test_exit_code_and_stderr_combined_in_order(void **state)
{
	struct got g = run_shell("echo one; echo two >&2; echo three; echo four >&2; exit 3", 0, 0);
	assert_int_equal(g.r.status, TOOL_ERROR);
	assert_string_equal(g.r.output, "one\ntwo\nthree\nfour\n[exit 3]\n");
	assert_int_equal(g.r.exit_code, 3);
	tool_result_release(&g.r);
	/* No newline at the end of the output: the status line gets its own. */
	g = run_shell("printf x; kill -9 $$", 0, 0);
	assert_int_equal(g.r.status, TOOL_ERROR);
	assert_string_equal(g.r.output, "x\n[killed by signal 9]\n");
	assert_int_equal(g.r.exit_code, -1);
	assert_int_equal(g.r.signal, 9);
	tool_result_release(&g.r);
	/* The reaper between cairn and the shell ends as the shell did: a
	 * command that signals its whole group (the reaper is in it) and
	 * survives exits with its own code; one killed by a signal reports it. */
	g = run_shell("trap 'echo hup' HUP; kill -HUP 0; exit 4", 0, 0);
	assert_string_equal(g.r.output, "hup\n[exit 4]\n");
	assert_int_equal(g.r.exit_code, 4);
	tool_result_release(&g.r);
	g = run_shell("kill -USR1 $$", 0, 0);
	char want[64];
	snprintf(want, sizeof want, "[killed by signal %d]\n", SIGUSR1);
	assert_string_equal(g.r.output, want);
	assert_int_equal(g.r.signal, SIGUSR1);
	tool_result_release(&g.r);
}

static void test_stdin_is_at_eof(void **state)
{
	struct got g = run_shell("cat; echo after", 5000, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_string_equal(g.r.output, "after\n");
	assert_true(g.elapsed < 2.0);
	tool_result_release(&g.r);
}

static void test_timeout_terms_the_group(void **state)
{
	/* 1.5 s: the command has started by then (its reaper, this program
	 * run again, starts first), on a busy machine too. */
	struct got g = run_shell("echo started; sleep 30", 1500, 0);
	assert_int_equal(g.r.status, TOOL_ERROR);
	assert_string_equal(g.r.output, "started\n[timed out after 1500 ms]\n");
	assert_int_equal(g.r.signal, SIGTERM);
	assert_true(g.elapsed >= 1.49);
	assert_true(g.elapsed < 3.3); /* TERM was enough: no wait for KILL */
	tool_result_release(&g.r);
}

static void test_term_ignoring_group_killed_after_2s(void **state)
{
	/* Ignored signals stay ignored across exec: sleep ignores TERM too. */
	struct got g = run_shell("trap '' TERM; sleep 30 & echo $!; wait", 1000, 0);
	assert_int_equal(g.r.status, TOOL_ERROR);
	assert_non_null(strstr(g.r.output, "[timed out after 1 s]\n"));
	assert_int_equal(g.r.signal, SIGKILL);
	assert_true(g.elapsed >= 2.95);
	assert_true(g.elapsed < 5.0);
	pid_t pid = (pid_t)atoi(g.r.output);
	assert_true(pid > 1);
	assert_false(pid_alive(pid));
	tool_result_release(&g.r);
}

static void test_grandchild_holding_the_pipe_does_not_hang(void **state)
{
	struct got g = run_shell("sleep 30 & echo $!", 0, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_int_equal(g.r.exit_code, 0);
	assert_true(g.elapsed < 2.5);
	pid_t pid = (pid_t)atoi(g.r.output);
	assert_true(pid > 1);
	assert_false(pid_alive(pid));
	tool_result_release(&g.r);
	/* One that ignores TERM holds on until KILL. */
	g = run_shell("(trap '' TERM; exec sleep 30) & echo $!", 0, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_true(g.elapsed >= 2.0);
	assert_true(g.elapsed < 4.0);
	pid = (pid_t)atoi(g.r.output);
	assert_false(pid_alive(pid));
	tool_result_release(&g.r);
	/* A background job that does not hold the pipe is ended too. */
	g = run_shell("sleep 30 >/dev/null 2>&1 & echo $!", 0, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_true(g.elapsed < 2.5);
	assert_false(pid_alive((pid_t)atoi(g.r.output)));
	tool_result_release(&g.r);
}

static void test_descendant_outside_the_group_does_not_hang(void **state)
{
	/* setsid: a group of its own, beyond reach; it holds the pipe open. */
	struct got g = run_shell("setsid sleep 30 & echo $!", 0, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_true(g.elapsed < 1.5);
	pid_t pid = (pid_t)atoi(g.r.output);
	assert_true(pid > 1);
	assert_true(pid_alive(pid)); /* the documented limit */
	kill(pid, SIGKILL);
	tool_result_release(&g.r);
}

static void test_output_capped_full_kept(void **state)
{
	/* 5 MB: the model reads its head and tail; the blob has all of it. */
	struct got g = run_shell("head -c 5000000 /dev/zero | tr '\\0' a; echo; echo end", 0, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_true(g.r.truncated);
	assert_true(strlen(g.r.output) <= 30000 + 64);
	assert_non_null(strstr(g.r.output, "bytes cut ...]\n"));
	assert_memory_equal(g.r.output, "aaaa", 4);
	assert_true(ends_with(g.r.output, "\nend\n"));
	assert_non_null(g.r.full);
	assert_int_equal(strlen(g.r.full), 5000000 + 5);
	tool_result_release(&g.r);

	/* Over full_max: the blob keeps its head and tail too. */
	struct tool_limits lim = {.result_max = 1000, .full_max = 100000};
	g = run_tool("shell", "{\"command\":\"seq 1 100000; exit 1\"}", lim, NULL, NULL, 0);
	assert_int_equal(g.r.status, TOOL_ERROR);
	assert_true(strlen(g.r.output) <= 1000 + 64 + 16);
	assert_memory_equal(g.r.output, "1\n2\n3\n", 6);
	assert_true(ends_with(g.r.output, "\n99999\n100000\n[exit 1]\n"));
	assert_non_null(g.r.full);
	assert_true(strlen(g.r.full) <= 100000 + 16); /* full_max and the status line */
	assert_true(strlen(g.r.full) > 90000);
	assert_memory_equal(g.r.full, "1\n2\n3\n", 6);
	assert_non_null(strstr(g.r.full, "bytes cut ...]\n"));
	assert_true(ends_with(g.r.full, "\n99999\n100000\n[exit 1]\n"));
	tool_result_release(&g.r);
}

static void test_invalid_bytes_become_fffd(void **state)
{
	struct got g = run_shell("printf 'a\\377b\\000c\\342\\202'", 0, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_string_equal(g.r.output, "a" FFFD "b" FFFD "c" FFFD);
	tool_result_release(&g.r);
}

static void test_no_descriptor_leaks_into_the_child(void **state)
{
	/* Descriptors like cairn's own: a file, a SQLite database, the loop's. */
	int fd = open("leak-check", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open("leak-check.db", &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS t(x)", NULL, NULL, NULL),
			 SQLITE_OK);
	/* ls lists its own directory descriptor too: the one above 2 that
	 * `ls -l` shows pointing into /proc/<pid>/fd. */
	struct got g = run_shell("ls /proc/self/fd | sort -n | tr '\\n' ' '", 0, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_string_equal(g.r.output, "0 1 2 3 ");
	tool_result_release(&g.r);
	g = run_shell("readlink /proc/self/fd/0", 0, 0);
	assert_string_equal(g.r.output, "/dev/null\n");
	tool_result_release(&g.r);
	sqlite3_close(db);
	close(fd);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

static void test_environment_without_keys(void **state)
{
	char e1[] = "FOO_API_KEY=secret", e2[] = "PATH=/usr/bin:/bin", e3[] = "PAGER=less",
	     e4[] = "CAIRN_TEST_KEEP=1", e5[] = "MY_API_KEYS=kept";
	char *base[] = {e1, e2, e3, e4, e5, NULL};
	char **env = tool_env(base, NULL);
	struct got g = run_tool("shell", "{\"command\":\"env\"}", (struct tool_limits){0}, env,
				NULL, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	assert_null(strstr(g.r.output, "secret"));
	assert_true(has_line(g.r.output, "PAGER=cat"));
	assert_true(has_line(g.r.output, "GIT_PAGER=cat"));
	assert_true(has_line(g.r.output, "GIT_TERMINAL_PROMPT=0"));
	assert_true(has_line(g.r.output, "CAIRN_TEST_KEEP=1"));
	assert_true(has_line(g.r.output, "MY_API_KEYS=kept"));
	assert_false(has_line(g.r.output, "PAGER=less"));
	tool_result_release(&g.r);
	tool_env_free(env);

	/* Another strip list replaces the default. */
	const char *strip[] = {"CAIRN_*", NULL};
	env = tool_env(base, strip);
	bool foo = false, keep = false;
	for (char **e = env; *e; e++) {
		foo |= strcmp(*e, "FOO_API_KEY=secret") == 0;
		keep |= strncmp(*e, "CAIRN_TEST_KEEP=", 16) == 0;
	}
	assert_true(foo);
	assert_false(keep);
	tool_env_free(env);

	/* No environment given: the process's, stripped the default way. */
	setenv("BAR_API_KEY", "hidden", 1);
	g = run_shell("env", 0, 0);
	assert_null(strstr(g.r.output, "BAR_API_KEY"));
	assert_true(has_line(g.r.output, "PAGER=cat"));
	tool_result_release(&g.r);
	unsetenv("BAR_API_KEY");
}

static void test_cancel_ends_the_group(void **state)
{
	struct got g = run_shell("sleep 30 & echo $!; wait", 0, 1000);
	assert_int_equal(g.r.status, TOOL_CANCELED);
	assert_non_null(strstr(g.r.output, "[canceled by the user]\n"));
	assert_true(g.elapsed < 2.8);
	pid_t pid = (pid_t)atoi(g.r.output);
	assert_true(pid > 1);
	assert_false(pid_alive(pid));
	tool_result_release(&g.r);
	/* A group that ignores TERM gets KILL 2 s later. */
	g = run_shell("trap '' TERM; sleep 30 & echo $!; wait", 0, 1000);
	assert_int_equal(g.r.status, TOOL_CANCELED);
	assert_non_null(strstr(g.r.output, "[canceled by the user]\n"));
	assert_int_equal(g.r.signal, SIGKILL);
	assert_true(g.elapsed >= 2.95);
	assert_true(g.elapsed < 5.0);
	pid = (pid_t)atoi(g.r.output);
	assert_false(pid_alive(pid));
	tool_result_release(&g.r);
}

static void test_cwd_and_wrong_arguments(void **state)
{
	char dir[] = "/tmp/tool-shell-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct got g = run_tool("shell", "{\"command\":\"pwd\"}", (struct tool_limits){0}, NULL,
				dir, 0);
	char want[64];
	snprintf(want, sizeof want, "%s\n", dir);
	assert_string_equal(g.r.output, want);
	tool_result_release(&g.r);
	rmdir(dir);
	/* The directory is gone: an error result, not a failure. */
	g = run_tool("shell", "{\"command\":\"pwd\"}", (struct tool_limits){0}, NULL, dir, 0);
	assert_int_equal(g.r.status, TOOL_ERROR);
	assert_non_null(strstr(g.r.output, "cannot run the command"));
	tool_result_release(&g.r);

	const char *wrong[] = {
		"{}", "{\"command\":3}", "{\"command\":\"\"}", "[]",
		"{\"command\":\"true\",\"timeout_ms\":600001}",
		"{\"command\":\"true\",\"timeout_ms\":0}",
		"{\"command\":\"true\",\"timeout_ms\":1.5}",
		"{\"command\":\"true\",\"timeout_ms\":\"9\"}",
	};
	for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
		g = run_tool("shell", wrong[i], (struct tool_limits){0}, NULL, NULL, 0);
		assert_int_equal(g.r.status, TOOL_ERROR);
		assert_memory_equal(g.r.output, "shell: ", 7);
		tool_result_release(&g.r);
	}
	g = run_tool("shell", "{\"command\":\"true\",\"timeout_ms\":600000}",
		     (struct tool_limits){0}, NULL, NULL, 0);
	assert_int_equal(g.r.status, TOOL_OK);
	tool_result_release(&g.r);
}

static void test_unknown_tool_is_a_usage_error(void **state)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct tool_ctx ctx = {.loop = &loop, .cwd = "."};
	struct got g = {0};
	struct cerr err;
	cJSON *args = cJSON_Parse("{\"command\":\"touch ran\"}");
	assert_null(tool_start(&ctx, "shel", args, done_cb, &g, &err));
	assert_int_equal(err.cls, CERR_USAGE);
	assert_non_null(strstr(err.msg, "'shel'"));
	assert_null(tool_start(&ctx, NULL, args, done_cb, &g, &err));
	assert_int_equal(err.cls, CERR_USAGE);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(g.calls, 0);
	assert_int_equal(access("ran", F_OK), -1);
	cJSON_Delete(args);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static const cJSON *schema_of(const cJSON *a, const char *name)
{
	const cJSON *t;
	cJSON_ArrayForEach(t, a)
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return t;
	}
	fail_msg("no schema for '%s'", name);
	return NULL;
}

/* The tool's required parameters, joined by commas, and that every one
 * of props is among its properties with a type. */
static void expect_params(const cJSON *a, const char *name, const char *required,
			  const char *const *props)
{
	const cJSON *t = schema_of(a, name);
	assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "description")));
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "parameters");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(p, "type")->valuestring, "object");
	const cJSON *pr = cJSON_GetObjectItemCaseSensitive(p, "properties");
	assert_true(cJSON_IsObject(pr));
	for (; *props; props++) {
		const cJSON *one = cJSON_GetObjectItemCaseSensitive(pr, *props);
		if (!one)
			fail_msg("%s has no parameter '%s'", name, *props);
		assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(one, "type")));
	}
	char got[128] = "";
	const cJSON *r;
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(p, "required"))
	{
		if (got[0])
			strcat(got, ",");
		strcat(got, r->valuestring);
		assert_non_null(cJSON_GetObjectItemCaseSensitive(pr, r->valuestring));
	}
	assert_string_equal(got, required);
}

static void test_schemas_name_the_parameters(void **state)
{
	cJSON *a = tool_schemas();
	assert_true(cJSON_IsArray(a));
	assert_int_equal(cJSON_GetArraySize(a), 6);
	expect_params(a, "shell", "command", (const char *[]){"command", "timeout_ms", NULL});
	expect_params(a, "read_file", "path",
		      (const char *[]){"path", "start_line", "end_line", NULL});
	expect_params(a, "write_file", "path,content", (const char *[]){"path", "content", NULL});
	expect_params(a, "edit_file", "path,old_string,new_string",
		      (const char *[]){"path", "old_string", "new_string", NULL});
	expect_params(a, "list_dir", "", (const char *[]){"path", NULL});
	expect_params(a, "grep", "pattern", (const char *[]){"pattern", "path", "glob", NULL});
	const cJSON *to = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(schema_of(a, "shell"), "parameters"),
			"properties"),
		"timeout_ms");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(to, "maximum")->valueint, 600000);
	cJSON_Delete(a);

	assert_true(tool_is_read_only("read_file"));
	assert_true(tool_is_read_only("list_dir"));
	assert_true(tool_is_read_only("grep"));
	assert_false(tool_is_read_only("shell"));
	assert_false(tool_is_read_only("write_file"));
	assert_false(tool_is_read_only("edit_file"));
	assert_false(tool_is_read_only(NULL));
}

int main(int argc, char **argv)
{
	/* Shell commands run under a reaper: this program, again. */
	tool_reaper_dispatch(argc, argv);
	/* The runs here spawn /bin/sh; SIGPIPE from a closed pipe is not ours. */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_echo_ok_adds_nothing),
		cmocka_unit_test(test_exit_code_and_stderr_combined_in_order),
		cmocka_unit_test(test_stdin_is_at_eof),
		cmocka_unit_test(test_timeout_terms_the_group),
		cmocka_unit_test(test_term_ignoring_group_killed_after_2s),
		cmocka_unit_test(test_grandchild_holding_the_pipe_does_not_hang),
		cmocka_unit_test(test_descendant_outside_the_group_does_not_hang),
		cmocka_unit_test(test_output_capped_full_kept),
		cmocka_unit_test(test_invalid_bytes_become_fffd),
		cmocka_unit_test(test_no_descriptor_leaks_into_the_child),
		cmocka_unit_test(test_environment_without_keys),
		cmocka_unit_test(test_cancel_ends_the_group),
		cmocka_unit_test(test_cwd_and_wrong_arguments),
		cmocka_unit_test(test_unknown_tool_is_a_usage_error),
		cmocka_unit_test(test_schemas_name_the_parameters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
