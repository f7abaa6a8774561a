/* support_catalog.c — the catalog tests' fixture (see support_catalog.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/support_catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "persist/lock.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"

int64_t catfx_t0;
static int64_t tick;

int catfx_setup(void **state, const char *name)
{
	struct fx *f = calloc(1, sizeof *f);
	struct cerr err;
	if (tmp_root(name, f->dir, sizeof f->dir, f->root, sizeof f->root) < 0)
		return -1;
	if (store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	catfx_t0 = clock_unix_ms() + 86400000; /* after every header's created_at */
	tick = 0;
	*state = f;
	return 0;
}

int catfx_teardown(void **state)
{
	struct fx *f = *state;
	catalog_close(f->cat);
	store_close(f->st);
	rm_rf(f->dir);
	free(f);
	return 0;
}

int hold_lock(struct fx *f, const char *id)
{
	struct session_ref ref;
	struct cerr err;
	int keyfd = -1, dirfd = -1;
	if (store_resolve(f->st, id, &ref, &err) < 0 ||
	    store_open_session_dir(f->st, &ref, false, &keyfd, &dirfd, &err) < 0)
		fail_msg("open session %s: %s", id, err.msg);
	int fd = lock_take(keyfd, id, dirfd, &err);
	close(keyfd);
	close(dirfd);
	if (fd < 0)
		fail_msg("lock %s: %s", id, err.msg);
	return fd;
}

struct catalog *cat(struct fx *f)
{
	struct cerr err;
	if (!f->cat && catalog_open(f->st, &f->cat, &err) < 0)
		fail_msg("catalog_open: %s", err.msg);
	return f->cat;
}

/* JSON written with single quotes. */
cJSON *J(const char *s)
{
	char *d = strdup(s);
	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	cJSON *v = cJSON_Parse(d);
	if (!v)
		fail_msg("bad test JSON: %s", d);
	free(d);
	return v;
}

void batch_parse(struct batch *b, const char *json)
{
	b->arr = J(json);
	b->n = (size_t)cJSON_GetArraySize(b->arr);
	b->evs = calloc(b->n + 1, sizeof *b->evs);
	size_t i = 0;
	for (const cJSON *c = b->arr->child; c; c = c->next, i++) {
		struct log_event *e = &b->evs[i];
		const cJSON *t = cJSON_GetObjectItem(c, "turn"), *at = cJSON_GetObjectItem(c, "t");
		e->type = cJSON_GetObjectItem(c, "type")->valuestring;
		e->turn = cJSON_IsString(t) ? t->valuestring : NULL;
		e->ignorable = cJSON_IsTrue(cJSON_GetObjectItem(c, "ign"));
		e->data = cJSON_GetObjectItem(c, "data");
		e->t = catfx_t0 + (at ? (int64_t)at->valuedouble : ++tick);
	}
}

void batch_free(struct batch *b)
{
	cJSON_Delete(b->arr);
	free(b->evs);
}

/* Append a batch to lg at its next seq, which must succeed. */
static void add(struct log *lg, const char *json)
{
	struct batch b;
	struct cerr err;
	uint64_t first = log_next_seq(lg), next;
	batch_parse(&b, json);
	if (log_append(lg, first, b.evs, b.n, &next, &err) < 0)
		fail_msg("append at %llu: %s", (unsigned long long)first, err.msg);
	assert_int_equal(next, first + b.n);
	batch_free(&b);
}

/* Session id in cwd with header extras and batches. */
void make(struct fx *f, const char *id, const char *cwd, const char *extra,
	  const char *const *batches)
{
	cJSON *x = extra ? J(extra) : NULL;
	struct log *lg;
	struct cerr err;
	if (log_create(f->st, id, cwd, x, &lg, &err) < 0)
		fail_msg("log_create %s: %s", id, err.msg);
	for (; *batches; batches++)
		add(lg, *batches);
	log_close(lg);
	cJSON_Delete(x);
}

void append_to(struct fx *f, const char *id, const char *json)
{
	struct log *lg;
	struct cerr err;
	if (log_open(f->st, id, &lg, &err) < 0)
		fail_msg("log_open %s: %s", id, err.msg);
	add(lg, json);
	log_close(lg);
}

void append_sync(struct fx *f, const char *id, const char *json)
{
	append_to(f, id, json);
	sync_ok(f);
}

void path_of(struct fx *f, const char *area, const char *cwd, const char *id, const char *file,
	     char *out, size_t n)
{
	char *p = session_path(f->root, area, cwd, id, file);
	snprintf(out, n, "%s", p);
	free(p);
}

size_t sync_ok(struct fx *f)
{
	size_t changed = 12345;
	struct cerr err;
	if (catalog_sync(cat(f), f->st, &changed, &err) < 0)
		fail_msg("catalog_sync: %s", err.msg);
	return changed;
}

/* The ids catalog_list returns, space separated. */
void list(struct fx *f, bool with_del, bool only_del, const char *project, size_t limit,
	  const char *expect)
{
	struct cat_session *v;
	size_t n;
	struct cerr err;
	if (catalog_list(cat(f), with_del, only_del, project, limit, &v, &n, &err) < 0)
		fail_msg("catalog_list: %s", err.msg);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s%s", i ? " " : "", v[i].id);
	assert_string_equal(b.p ? b.p : "", expect);
	buf_release(&b);
	cat_sessions_free(v, n);
}

/* Check fields of a session: want is "k=v|k=v" (k~v: the value contains
 * v); times from catfx_t0 on read "+offset", a live session has deleted=0. */
void expect_row(struct fx *f, const char *id, const char *want)
{
	struct cat_session s;
	struct cerr err;
	if (catalog_get(cat(f), id, &s, &err) < 0)
		fail_msg("catalog_get %s: %s", id, err.msg);
	struct buf h = BUF_INIT;
#define N(x) ((x) ? (x) : "NULL")
	buf_printf(&h, "|id=%s|key=%s|cwd=%s|title=%s|explicit=%d|prompt=%s|provider=%s|model=%s"
		       "|status=%s|error=%s|fork=%s/%s|turns=%lld|pinned=%d|version=%llu|wm=%llu/%llu|",
		   s.id, s.project_key, N(s.cwd), N(s.title), s.title_explicit, N(s.last_prompt),
		   N(s.provider), N(s.model), s.status, N(s.error), N(s.forked_from), N(s.forked_turn),
		   (long long)s.turns, s.pinned, (unsigned long long)s.content_version,
		   (unsigned long long)s.durable_len, (unsigned long long)s.durable_seq);
	if (s.updated_at >= catfx_t0)
		buf_printf(&h, "updated=+%lld|", (long long)(s.updated_at - catfx_t0));
	buf_printf(&h, "deleted=%lld|", (long long)s.deleted_at);
	char *w = strdup(want), *save = NULL;
	for (char *frag = strtok_r(w, "|", &save); frag; frag = strtok_r(NULL, "|", &save)) {
		char pat[512], *tilde = strchr(frag, '~');
		bool ok;
		if (tilde) {
			snprintf(pat, sizeof pat, "|%.*s=", (int)(tilde - frag), frag);
			const char *at = strstr(h.p, pat), *v = at ? strstr(at, tilde + 1) : NULL;
			ok = v && !memchr(at + 1, '|', (size_t)(v - at - 1));
		} else {
			snprintf(pat, sizeof pat, "|%s|", frag);
			ok = strstr(h.p, pat) != NULL;
		}
		if (!ok)
			fail_msg("%s: want %s in %s", id, frag, h.p);
	}
	free(w);
	buf_release(&h);
	cat_session_release(&s);
}

/* The watermark to record after an append: what log_durable vouches for. */
struct cat_watermark wm_of(struct log_mark d)
{
	struct cat_watermark wm = catalog_watermark_of(d);
	wm.known = true;
	return wm;
}

sqlite3 *raw_open(const char *root)
{
	char p[256];
	sqlite3 *db;
	snprintf(p, sizeof p, "%s/%s", root, CATALOG_FILE);
	assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

void raw_expect(const char *root, const char *sql, const char *want)
{
	sqlite3 *db = raw_open(root);
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	const unsigned char *t = sqlite3_column_text(q, 0);
	assert_string_equal(t ? (const char *)t : "NULL", want);
	sqlite3_finalize(q);
	sqlite3_close(db);
}
