/* support_fake.c — the fake model server as a test's child (support_fake.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "tests/unit/support_fake.h"
#include "tests/unit/support_fixture.h"

extern char **environ;

const char *fake_script_path(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(path, sizeof path, "%s/tests/fake/fake_model.py", dirname(dirname(dirname(exe))));
	return path;
}

void fake_start(struct fake *f, const char *script, const char *const *extra)
{
	char root[64];
	assert_int_equal(tmp_root("cairn-fake", f->dir, sizeof f->dir, root, sizeof root), 0);
	const char *sp = path_in(f->dir, "script.json");
	spit(sp, script, strlen(script), O_TRUNC);
	snprintf(f->record, sizeof f->record, "%s/record.jsonl", f->dir);
	const char *argv[32] = {"python3", fake_script_path(), "--script", sp, "--record", f->record};
	int a = 6;
	for (; extra && *extra && a < 31; extra++)
		argv[a++] = *extra;
	argv[a] = NULL;
	int pfd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	assert_int_equal(posix_spawnp(&f->pid, "python3", &fa, NULL, (char *const *)argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
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
	kill(f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	rm_rf(f->dir);
}

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

char *fake_url(const struct fake *f, const char *path)
{
	return xasprintf("http://127.0.0.1:%d%s", f->port, path);
}
