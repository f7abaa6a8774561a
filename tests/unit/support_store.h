/* support_store.h — the fixture of the store's tests (persist/store.h and
 * persist/safefs.h with real files): a store in a private temporary
 * directory under umask 022, the variables that choose the default root
 * saved and put back, and published sessions made in one call. Helpers that
 * check fail the running cmocka test.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_STORE_H
#define CAIRN_SUPPORT_STORE_H

#include <sys/types.h>

#include "persist/store.h"

/* The fixture every store test gets in *state. */
struct fx {
	char dir[64];
	char root[128];
	struct store *st;
	mode_t umask; /* the process's, put back by the teardown */
};

/* A path under the fixture dir, in one of a few rotating buffers. */
#define P(f, ...) path_in((f)->dir, __VA_ARGS__)

/* cmocka setup: umask 022, *state = a fixture with a store at
 * /tmp/cairn-test-store-XXXXXX/root; 0 or -1. */
int storefx_setup(void **state);
/* cmocka teardown: put back the umask and the root variables, close the store,
 * remove the directory, free *state. */
int storefx_teardown(void **state);
/* A cmocka test run with this fixture. */
#define STOREFX_TEST(fn) cmocka_unit_test_setup_teardown(fn, storefx_setup, storefx_teardown)

/* Create path (0600) if missing, else the test fails. */
void touch(const char *path);
/* Permission bits; -1 when the path is missing. */
int mode_of(const char *path);
/* A published session with one user/message; returns 0 or the class. */
int mk(struct store *st, const char *id, const char *cwd);
/* mk, which must succeed. */
void mk_ok(struct store *st, const char *id, const char *cwd);

#endif
