/* support_store.c — the store tests' fixture (see support_store.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/support_store.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "persist/log.h"
#include "tests/unit/support_fixture.h"

static char *saved_env[3];
static const char *const env_names[3] = {"CAIRN_HOME", "XDG_DATA_HOME", "HOME"};

int storefx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	f->umask = umask(022);
	if (tmp_root("cairn-test-store", f->dir, sizeof f->dir, f->root, sizeof f->root) < 0)
		return -1;
	struct cerr err;
	if (store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(env_names[i]);
		saved_env[i] = v ? strdup(v) : NULL;
	}
	*state = f;
	return 0;
}

int storefx_teardown(void **state)
{
	struct fx *f = *state;
	umask(f->umask);
	for (int i = 0; i < 3; i++) {
		if (saved_env[i])
			setenv(env_names[i], saved_env[i], 1);
		else
			unsetenv(env_names[i]);
		free(saved_env[i]);
		saved_env[i] = NULL;
	}
	store_close(f->st);
	rm_rf(f->dir);
	free(f);
	return 0;
}

void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
}

/* Permission bits; -1 when the path is missing. */
int mode_of(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* A published session with one user/message; returns 0 or the class. */
int mk(struct store *st, const char *id, const char *cwd)
{
	struct log *lg;
	struct cerr err;
	if (log_create(st, id, cwd, NULL, &lg, &err) < 0)
		return err.cls;
	cJSON *d = cJSON_Parse("{\"text\":\"x\"}");
	struct log_event ev = {.type = "user/message", .data = d};
	int r = log_append(lg, 1, &ev, 1, NULL, &err);
	cJSON_Delete(d);
	log_close(lg);
	return r < 0 ? (int)err.cls : 0;
}

void mk_ok(struct store *st, const char *id, const char *cwd)
{
	assert_int_equal(mk(st, id, cwd), 0);
}
