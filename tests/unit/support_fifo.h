/* support_fifo.h — the fixture of the FIFO tests (persist/fifo.h with real
 * files in a mkdtemp root, a real libuv loop and the real writer thread): a
 * fresh root, loop and FIFO per test, completions recorded per item, items
 * of numbered messages, and the log and the catalog read back. Helpers that
 * check fail the running cmocka test.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_FIFO_H
#define CAIRN_SUPPORT_FIFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/err.h"
#include "persist/catalog.h"
#include "persist/fifo.h"
#include "persist/pathkey.h"

struct scan;

/* The fixture every FIFO test gets in *state. */
struct fx {
	char dir[64];
	char root[128];
	struct store *st;    /* the test's own view of the root */
	struct catalog *cat; /* the test's own connection */
	uv_loop_t loop;
	struct fifo *f;
};

/* What the completion of one item recorded. */
struct rec {
	int calls, order;
	bool on_loop, ok, both_or_none;
	struct fifo_receipt r;
	struct cerr err;
	enum fifo_kind kind;
	char session[SESSION_ID_MAX + 1];
};

/* cmocka setup: *state = a fixture with a store, a catalog connection, a loop and a FIFO; 0. */
int fifofx_setup(void **state);
/* cmocka teardown: close the FIFO and run the loop to completion (a forgotten
 * handle fails), free *state. */
int fifofx_teardown(void **state);
/* A cmocka test run with this fixture. */
#define FIFOFX_TEST(fn) cmocka_unit_test_setup_teardown(fn, fifofx_setup, fifofx_teardown)

/* The completion callback post gives fifo_post: records into the struct rec ctx. */
void done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
	     const struct cerr *err);
/* Post it (ownership passes to the FIFO) with c cleared to record its completion. */
void post(struct fx *x, struct fifo_item *it, struct rec *c);
/* Flush, then run the loop until c[0..n) each completed exactly once on the loop (10 s at most). */
void wait_all(struct fx *x, struct rec *c, size_t n);
/* Fail unless c completed without an error. */
void want_ok(const struct rec *c, const char *what);
/* Fail unless c completed with an error of class cls. */
void want_err(const struct rec *c, enum cerr_class cls, const char *what);
/* Post one item and wait for it. */
void step(struct fx *x, struct fifo_item *it, struct rec *c);
/* step, then want_ok. */
void step_ok(struct fx *x, struct fifo_item *it, struct rec *c, const char *what);
/* step, then want_err. */
void step_err(struct fx *x, struct fifo_item *it, struct rec *c, enum cerr_class cls,
	      const char *what);

/* n events of type, data {"text": "<tag> <i>"}; the caller owns the array. */
cJSON *msgs_typed(const char *type, const char *tag, int n);
/* A history item of n user messages at seq; the caller owns it until posted. */
struct fifo_item *hist(const char *id, uint64_t seq, const char *tag, int n);
/* hist at seq 1 with the create flag for cwd (NULL: none); the caller owns it until posted. */
struct fifo_item *create(const char *id, const char *cwd, const char *tag, int n);
/* A full save of n assistant texts at seq and version; the caller owns it until posted. */
struct fifo_item *full(const char *id, uint64_t seq, uint64_t version, const char *tag, int n);
/* A meta item of session "A" with the JSON object json; the caller owns it until posted. */
struct fifo_item *meta(const char *json);

/* <root>/<area>/<key of cwd>/<id>/<log file>; the caller frees it. */
char *file_of(const struct fx *x, const char *area, const char *cwd, const char *id);
/* The log at path as read now, which must be there and ok (frees path); the
 * caller frees it with scan_free. */
struct scan *scan_file(char *path);
/* The live log of session id scanned; the caller frees it with scan_free. */
struct scan *scan_of(const struct fx *x, const char *id);
/* The next seq of session id's live log. */
uint64_t next_seq_of(const struct fx *x, const char *id);
/* The "text" of event i of s (owned by s), "" when it has none. */
const char *text_at(const struct scan *s, size_t i);
/* The bytes of session id's live log, *n their length; the caller frees them. */
uint8_t *log_bytes(const struct fx *x, const char *id, size_t *n);
/* Fail unless session id's live log holds exactly before[0..n) (still the caller's). */
void assert_same_bytes(const struct fx *x, const char *id, const uint8_t *before, size_t n);
/* Session id's catalog row, which must be there; the caller releases it (cat_session_release). */
struct cat_session row_of(struct fx *x, const char *id);
/* Session id's content version in the catalog. */
uint64_t version_of(struct fx *x, const char *id);
/* Fail unless c succeeded with next seq want_next and the log and the catalog match it now. */
void check_receipt(struct fx *x, const char *id, const struct rec *c, uint64_t want_next);

#endif
