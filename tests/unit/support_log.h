/* support_log.h — the fixture of the session log writer's tests
 * (persist/log.h and persist/lock.h against real files): a store in a
 * private temporary directory, batches appended from JSON, and published
 * sessions made in one call. Helpers that check fail the running cmocka
 * test.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_LOG_H
#define CAIRN_SUPPORT_LOG_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "persist/log.h"
#include "persist/store.h"

/* The fixture every log test gets in *state. */
struct fx {
	char dir[64];
	char root[128];
	struct store *st;
};

/* A path under the fixture dir, in one of a few rotating buffers. */
#define P(f, ...) path_in((f)->dir, __VA_ARGS__)

/* cmocka setup: *state = a fixture with a store at /tmp/cairn-test-log-XXXXXX/root; 0 or -1. */
int logfx_setup(void **state);
/* cmocka teardown: put back the real fsops, close the store, remove the directory, free *state. */
int logfx_teardown(void **state);
/* A cmocka test run with this fixture. */
#define LOGFX_TEST(fn) cmocka_unit_test_setup_teardown(fn, logfx_setup, logfx_teardown)

/* Append a batch written as a JSON array of {"type","turn"?,"ignorable"?,
 * "t"?,"data"?} objects. Returns log_append's result. */
int add(struct log *lg, uint64_t expect, const char *batch, uint64_t *next, struct cerr *err);
/* add, which must succeed with next seq want_next. */
void add_ok(struct log *lg, uint64_t expect, const char *batch, uint64_t want_next);

#define B_TURN "[{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{}}," \
	       "{\"type\":\"user/message\",\"data\":{\"text\":\"hi\"}}]"
#define B_TEXT "[{\"type\":\"assistant/text\",\"data\":{\"text\":\"hello\"}}]"

/* A published session `id` (key _no-cwd) holding header + `frames` batches of
 * B_TEXT after B_TURN; returns its log path (a P buffer). The handle is closed. */
const char *make_session(struct fx *f, const char *id, int frames);
/* log_open of session id, which must succeed; the caller closes it (log_close). */
struct log *open_ok(struct fx *f, const char *id);
/* Append to out the bytes of one frame holding an assistant/text event with seq. */
void text_frame(struct buf *out, uint64_t seq);

#endif
