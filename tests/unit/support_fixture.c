/* support_fixture.c — temporary directories, whole files and paths for the
 * unit tests (see support_fixture.h). Plain system calls, never fsops. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/support_fixture.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/pathkey.h"
#include "persist/scan.h"

uint64_t deadline(int64_t ms)
{
	return (uint64_t)((int64_t)(clock_mono_ns() / 1000000) + ms);
}

int tmp_root(const char *name, char *dir, size_t dn, char *root, size_t rn)
{
	snprintf(dir, dn, "/tmp/%s-XXXXXX", name);
	if (!mkdtemp(dir))
		return -1;
	snprintf(root, rn, "%s/root", dir);
	return 0;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

void rm_rf(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

uint8_t *slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t *p = malloc((size_t)st.st_size + 1);
	assert_int_equal(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*n = (size_t)st.st_size;
	return p;
}

void spit(const char *path, const void *p, size_t n, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

const char *path_in(const char *dir, const char *fmt, ...)
{
	static char pbuf[8][1024];
	static int pnext;
	char rel[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof rel, fmt, ap);
	va_end(ap);
	char *out = pbuf[pnext++ % 8];
	snprintf(out, sizeof pbuf[0], "%s/%s", dir, rel);
	return out;
}

char *session_path(const char *root, const char *area, const char *cwd, const char *id,
		   const char *file)
{
	char *key = pathkey_project(cwd);
	char *p = xasprintf("%s/%s/%s/%s%s%s", root, area, key, id, file ? "/" : "", file ? file : "");
	free(key);
	return p;
}

struct scan *scan_path(const char *path)
{
	size_t n;
	uint8_t *p = slurp(path, &n);
	struct scan *s = scan_buffer(p, n);
	free(p);
	return s;
}

void assert_same_file(const char *path, const uint8_t *before, size_t n)
{
	size_t m;
	uint8_t *now = slurp(path, &m);
	assert_int_equal(m, n);
	assert_memory_equal(now, before, n);
	free(now);
}
