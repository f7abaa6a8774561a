/* support_catalog.h — the fixture of the catalog tests (persist/catalog.h on
 * real files and real SQLite): a store and a catalog in a private temporary
 * directory, sessions written from batches in JSON with single quotes for
 * double ones, event times from a fixed origin, and checks of catalog rows
 * and of the database file. Helpers that check fail the running cmocka test.
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_CATALOG_H
#define CAIRN_SUPPORT_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "persist/catalog.h"
#include "persist/log.h"

/* The fixture every catalog test gets in *state. */
struct fx {
	char dir[64], root[128];
	struct store *st;
	struct catalog *cat; /* opened on first use (tests that fork open it late) */
};

/* Event times: catfx_t0 + an event's explicit "t", else catfx_t0 + a
 * counter counting up from 1 in each test. catfx_t0 is after every header's
 * created_at. */
extern int64_t catfx_t0;

/* A batch: a JSON array of {type, turn?, ign?, t?, data?}. */
struct batch {
	cJSON *arr;
	struct log_event *evs;
	size_t n;
};

/* Batches for make: B("[...]", "[...]") is a NULL-terminated array. */
#define B(...) ((const char *const[]){__VA_ARGS__, NULL})
#define USER(text) "{'type':'user/message','data':{'text':'" text "'}}"
#define META(json) "{'type':'session/meta','data':" json "}"
#define START(t) "{'type':'turn/start','turn':'" t "'}"
#define END(t, o) "{'type':'turn/end','turn':'" t "','data':{'outcome':'" o "'}}"

/* cmocka setup: *state = a fixture with a store at /tmp/<name>-XXXXXX/root, no catalog; 0 or -1. */
int catfx_setup(void **state, const char *name);
/* cmocka teardown: close the catalog and the store, remove the directory, free *state. */
int catfx_teardown(void **state);
/* f's catalog connection, opened on first use; owned by f (closed by catfx_teardown). */
struct catalog *cat(struct fx *f);
/* s (JSON with single quotes for double ones) parsed; the caller frees it with cJSON_Delete. */
cJSON *J(const char *s);
/* Parse a batch into b (events point into b->arr, times as above); b is freed with batch_free. */
void batch_parse(struct batch *b, const char *json);
/* Free what batch_parse allocated in b (not b itself). */
void batch_free(struct batch *b);
/* Create session id in cwd with header extras (JSON or NULL), append batches, close it. */
void make(struct fx *f, const char *id, const char *cwd, const char *extra,
	  const char *const *batches);
/* Open session id, append the batch json, close it. */
void append_to(struct fx *f, const char *id, const char *json);
/* append_to, then sync_ok. */
void append_sync(struct fx *f, const char *id, const char *json);
/* The path <root>/<area>/<key of cwd>/<id>[/<file>] into the caller's out[n]. */
void path_of(struct fx *f, const char *area, const char *cwd, const char *id, const char *file,
	     char *out, size_t n);
/* catalog_sync, which must succeed; returns how many sessions it changed. */
size_t sync_ok(struct fx *f);
/* Fail unless catalog_list's ids, space separated, are expect. */
void list(struct fx *f, bool with_del, bool only_del, const char *project, size_t limit,
	  const char *expect);
/* Check fields of session id: want is "k=v|k=v" (k~v: the value contains v), times +ms. */
void expect_row(struct fx *f, const char *id, const char *want);
/* The watermark to record after an append: what log_durable vouches for (a value). */
struct cat_watermark wm_of(struct log_mark d);
/* Take session id's writer lock, as a writer running a turn holds it;
 * returns the lock fd (release with lock_release), else the test fails. */
int hold_lock(struct fx *f, const char *id);
/* A plain SQLite connection to root's catalog file; the caller closes it (sqlite3_close). */
sqlite3 *raw_open(const char *root);
/* Fail unless the first column of sql's first row on root's catalog reads want (or "NULL"). */
void raw_expect(const char *root, const char *sql, const char *want);

#endif
