/* support_fixture.h — fixture pieces the unit tests share: a private
 * temporary directory with a data root path inside, removing a tree, whole
 * files read and written with plain system calls, and paths. The helpers
 * that check fail the running cmocka test; nothing here goes through fsops.
 *
 * Include it after <cmocka.h> (FAILS expands to cmocka assertions). */
#ifndef CAIRN_SUPPORT_FIXTURE_H
#define CAIRN_SUPPORT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct scan;

/* expr fails with class c (in the caller's `err`). */
#define FAILS(expr, c)                                  \
	do {                                            \
		assert_int_equal((expr), -1);           \
		assert_int_equal(err.cls, (c));         \
	} while (0)

/* mkdtemp /tmp/<name>-XXXXXX into dir, <dir>/root into root; 0 or -1. Caller owns both. */
int tmp_root(const char *name, char *dir, size_t dn, char *root, size_t rn);
/* rm -rf path: symlinks not followed, errors ignored. */
void rm_rf(const char *path);
/* The whole file at path (else the test fails), *n its length; the caller frees it. */
uint8_t *slurp(const char *path, size_t *n);
/* Write p[0..n) to path opened O_WRONLY|O_CREAT|flags (0600 when created), else the test fails. */
void spit(const char *path, const void *p, size_t n, int flags);
/* The monotonic clock in ms plus ms: a deadline as the FIFO's waits take it (a value). */
uint64_t deadline(int64_t ms);
/* True when path exists (lstat: a dangling symlink counts). */
bool exists(const char *path);
/* "<dir>/<fmt ...>" in one of 8 rotating static buffers: owned here, valid for 7 more calls. */
const char *path_in(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* <root>/<area>/<project key of cwd>/<id>[/<file> unless NULL]; the caller frees it. */
char *session_path(const char *root, const char *area, const char *cwd, const char *id,
		   const char *file);
/* The file at path read whole and scanned in memory; the caller frees it with scan_free. */
struct scan *scan_path(const char *path);
/* Fail the test unless the file at path holds exactly before[0..n) (still the caller's). */
void assert_same_file(const char *path, const uint8_t *before, size_t n);

#endif
