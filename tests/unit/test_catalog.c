/* test_catalog.c — persist/catalog.h on real files and real SQLite: file
 * modes, schema version, concurrent connections and processes, the
 * projection of logs (fields, titles, statuses), listing, reconciliation
 * with the directories, incremental batches, submit claims, and rebuild
 * equivalence (an incrementally maintained catalog equals a rebuilt one). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/buf.h"
#include "base/clock.h"
#include "persist/catalog.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/log.h"
#include "persist/pathkey.h"
#include "persist/scan.h"
#include "persist/store.h"

struct fx {
	char dir[64], root[128];
	struct store *st;
	struct catalog *cat; /* opened on first use (tests that fork open it late) */
};

static int64_t T0, tick; /* event times: T0 + explicit "t", else T0 + ++tick */

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct cerr err;
	snprintf(f->dir, sizeof f->dir, "/tmp/cairn-test-catalog-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->root, sizeof f->root, "%s/root", f->dir);
	if (store_open(f->root, true, &f->st, &err) < 0)
		return -1;
	T0 = clock_unix_ms() + 86400000; /* after every header's created_at */
	tick = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	catalog_close(f->cat);
	store_close(f->st);
	nftw(f->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static struct catalog *cat(struct fx *f)
{
	struct cerr err;
	if (!f->cat && catalog_open(f->st, &f->cat, &err) < 0)
		fail_msg("catalog_open: %s", err.msg);
	return f->cat;
}

/* JSON written with single quotes. */
static cJSON *J(const char *s)
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

/* A batch: a JSON array of {type, turn?, ign?, t?, data?}. */
struct batch {
	cJSON *arr;
	struct log_event *evs;
	size_t n;
};

static void batch_parse(struct batch *b, const char *json)
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
		e->t = T0 + (at ? (int64_t)at->valuedouble : ++tick);
	}
}

static void batch_free(struct batch *b)
{
	cJSON_Delete(b->arr);
	free(b->evs);
}

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

#define B(...) ((const char *const[]){__VA_ARGS__, NULL})
#define USER(text) "{'type':'user/message','data':{'text':'" text "'}}"
#define META(json) "{'type':'session/meta','data':" json "}"
#define START(t) "{'type':'turn/start','turn':'" t "'}"
#define END(t, o) "{'type':'turn/end','turn':'" t "','data':{'outcome':'" o "'}}"

/* Session id in cwd with header extras and batches. */
static void make(struct fx *f, const char *id, const char *cwd, const char *extra,
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

static void append_to(struct fx *f, const char *id, const char *json)
{
	struct log *lg;
	struct cerr err;
	if (log_open(f->st, id, &lg, &err) < 0)
		fail_msg("log_open %s: %s", id, err.msg);
	add(lg, json);
	log_close(lg);
}

static size_t sync_ok(struct fx *f);

static void append_sync(struct fx *f, const char *id, const char *json)
{
	append_to(f, id, json);
	sync_ok(f);
}

static void path_of(struct fx *f, const char *area, const char *cwd, const char *id,
		    const char *file, char *out, size_t n)
{
	char *key = pathkey_project(cwd);
	snprintf(out, n, "%s/%s/%s/%s%s%s", f->root, area, key, id, file ? "/" : "", file ? file : "");
	free(key);
}

static size_t sync_ok(struct fx *f)
{
	size_t changed = 12345;
	struct cerr err;
	if (catalog_sync(cat(f), f->st, &changed, &err) < 0)
		fail_msg("catalog_sync: %s", err.msg);
	return changed;
}

/* The ids catalog_list returns, space separated. */
static void list(struct fx *f, bool with_del, bool only_del, const char *project, size_t limit,
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
 * v); times from T0 on read "+offset", a live session has deleted=0. */
static void expect_row(struct fx *f, const char *id, const char *want)
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
	if (s.updated_at >= T0)
		buf_printf(&h, "updated=+%lld|", (long long)(s.updated_at - T0));
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
static struct cat_watermark wm_of(struct log_revision d)
{
	return (struct cat_watermark){.known = true, .len = d.len, .next_seq = d.next_seq,
				      .dev = d.dev, .ino = d.ino, .ctime_ns = d.ctime_ns};
}

static sqlite3 *raw_open(const char *root)
{
	char p[256];
	sqlite3 *db;
	snprintf(p, sizeof p, "%s/%s", root, CATALOG_FILE);
	assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static void raw_expect(const char *root, const char *sql, const char *want)
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

static void expect_modes(const char *root)
{
	static const char *const names[] = {CATALOG_FILE, CATALOG_FILE "-wal", CATALOG_FILE "-shm"};
	for (size_t i = 0; i < 3; i++) {
		char p[512];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", root, names[i]);
		if (stat(p, &st) < 0)
			fail_msg("%s: %s", p, strerror(errno));
		assert_int_equal(st.st_mode & 07777, 0600);
	}
}

static uint8_t *slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t *p = malloc((size_t)st.st_size + 1);
	assert_int_equal(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*n = (size_t)st.st_size;
	return p;
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

/* ---- files, schema, connections ---- */

static void test_file_modes(void **state)
{
	struct fx *f = *state;
	static const mode_t masks[] = {0, 077, 022};
	for (size_t i = 0; i < 3; i++) {
		char root[192], p[256];
		struct store *st;
		struct catalog *c;
		struct cerr err;
		snprintf(root, sizeof root, "%s/umask%zu", f->dir, i);
		mode_t old = umask(masks[i]);
		assert_int_equal(store_open(root, true, &st, &err), 0);
		if (catalog_open(st, &c, &err) < 0)
			fail_msg("catalog_open: %s", err.msg);
		expect_modes(root); /* new: index 0600, and -wal, -shm while open */
		catalog_close(c);
		/* A loosened index and sidecars left 0644 are tightened. */
		static const char *const names[] = {CATALOG_FILE, CATALOG_FILE "-wal", CATALOG_FILE "-shm"};
		for (size_t k = 0; k < 3; k++) {
			snprintf(p, sizeof p, "%s/%s", root, names[k]);
			int fd = open(p, O_RDWR | O_CREAT, 0644);
			assert_true(fd >= 0);
			assert_int_equal(fchmod(fd, 0644), 0);
			close(fd);
		}
		if (catalog_open(st, &c, &err) < 0)
			fail_msg("catalog_open again: %s", err.msg);
		expect_modes(root);
		catalog_close(c);
		store_close(st);
		umask(old);
	}
}

static void test_schema(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" USER("x") "]"));
	assert_int_equal(sync_ok(f), 1);
	raw_expect(f->root, "PRAGMA journal_mode", "wal");
	raw_expect(f->root, "PRAGMA user_version", CATALOG_SCHEMA_STR);
	raw_expect(f->root, "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE"
			    " name IN ('sessions','docs','claims','fts_words') ORDER BY name)",
		   "claims,docs,fts_words,sessions");
	catalog_close(f->cat); /* reopened: kept */
	f->cat = NULL;
	expect_row(f, "s1", "title=x|status=idle");
	bool ok = false;
	char *msg = NULL;
	struct cerr err;
	assert_int_equal(catalog_integrity(f->cat, &ok, &msg, &err), 0);
	assert_true(ok);
	assert_string_equal(msg, "ok");
	free(msg);
	/* A newer schema is refused and left alone. */
	catalog_close(f->cat);
	f->cat = NULL;
	sqlite3 *db = raw_open(f->root);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(catalog_open(f->st, &f->cat, &err), -1);
	assert_int_equal(err.cls, CERR_UNSUPPORTED);
	assert_non_null(strstr(err.msg, "99"));
	f->cat = NULL;
	raw_expect(f->root, "PRAGMA user_version", "99");
	/* An older schema is dropped and rebuilt from the logs. */
	db = raw_open(f->root);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=1", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(catalog_open(f->st, &f->cat, &err), 0);
	raw_expect(f->root, "PRAGMA user_version", CATALOG_SCHEMA_STR);
	raw_expect(f->root, "SELECT count(*) FROM sessions", "0");
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "s1", "title=x|status=idle");
}

static void test_two_connections(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" START("t1") "]"));
	sync_ok(f);
	struct catalog *c2;
	struct cerr err;
	assert_int_equal(catalog_open(f->st, &c2, &err), 0);
	assert_int_equal(catalog_set_status(c2, "s1", "running", &err), 0);
	expect_row(f, "s1", "status=running");
	/* A write transaction on one connection does not block readers. */
	assert_int_equal(catalog_begin(c2, &err), 0);
	assert_int_equal(catalog_set_status(c2, "s1", NULL, &err), 0);
	expect_row(f, "s1", "status=running"); /* not committed yet */
	assert_int_equal(catalog_commit(c2, &err), 0);
	expect_row(f, "s1", "status=interrupted");
	catalog_close(c2);
}

/* In a forked child a crash ends it (cmocka's handlers would go on running
 * the tests there). Children fork before the parent opens any connection:
 * SQLite state must not cross a fork. */
static void child_init(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], SIG_DFL);
}

static void expect_exit0(pid_t pid)
{
	int ws;
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	if (WIFSIGNALED(ws))
		fail_msg("child killed by signal %d", WTERMSIG(ws));
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
}

/* A child opens the catalog, holds a write transaction for hold_ms, then
 * commits. Returns once it holds the lock. */
static pid_t child_holding(struct fx *f, int hold_ms)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_init();
		struct store *st;
		struct catalog *c;
		struct cerr e;
		int bad = store_open(f->root, false, &st, &e) < 0 || catalog_open(st, &c, &e) < 0 ||
			  catalog_sync(c, st, NULL, &e) < 0 || catalog_begin(c, &e) < 0 ||
			  catalog_set_status(c, "s1", "running", &e) < 0;
		if (bad)
			fprintf(stderr, "child: %s\n", e.msg);
		(void)!write(p[1], bad ? "x" : "k", 1);
		usleep((useconds_t)hold_ms * 1000);
		_exit(bad || catalog_commit(c, &e) < 0);
	}
	close(p[1]);
	char ch = 0;
	assert_int_equal(read(p[0], &ch, 1), 1);
	close(p[0]);
	assert_int_equal(ch, 'k');
	return pid;
}

static void test_busy_timeout_waits(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" START("t1") "]"));
	make(f, "s2", "/p", NULL, B("[" START("t1") "]"));
	pid_t pid = child_holding(f, 400);
	uint64_t t0 = clock_mono_ns();
	struct cerr err;
	if (catalog_set_status(cat(f), "s2", "unsaved", &err) < 0)
		fail_msg("set_status while another process writes: %s (class %d)", err.msg, err.cls);
	assert_true(clock_mono_ns() - t0 >= 250000000u); /* it waited for the other writer */
	expect_exit0(pid);
	expect_row(f, "s1", "status=running");
	expect_row(f, "s2", "status=unsaved");
}

static void test_busy_beyond_timeout_locked(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[" START("t1") "]"));
	pid_t pid = child_holding(f, 6500);
	uint64_t t0 = clock_mono_ns();
	struct cerr err;
	assert_int_equal(catalog_set_status(cat(f), "s1", "unsaved", &err), -1);
	assert_int_equal(err.cls, CERR_LOCKED);
	uint64_t waited = (clock_mono_ns() - t0) / 1000000;
	assert_true(waited >= 4500 && waited < 6400);
	expect_exit0(pid);
}

/* One of two processes on a fresh catalog: its own log appended and
 * projected batch by batch, status changes, listing and search. */
static int writer(const char *root, const char *id, int rounds)
{
	struct store *st;
	struct catalog *c;
	struct log *lg;
	struct cerr e;
	int bad = 0;
	if (store_open(root, false, &st, &e) < 0 || catalog_open(st, &c, &e) < 0 ||
	    log_open(st, id, &lg, &e) < 0)
		return fprintf(stderr, "%s: open: %s\n", id, e.msg), 100;
	struct session_ref ref = {"", "-p"};
	snprintf(ref.id, sizeof ref.id, "%s", id);
	struct log_revision d = log_revision_of(lg);
	struct cat_watermark wm = wm_of(d);
	if (catalog_project_scan(c, &ref, log_scan(lg), 0, &wm, &e) < 0)
		bad++, fprintf(stderr, "%s: project_scan: %s\n", id, e.msg);
	for (int i = 0; i < rounds && !bad; i++) {
		char text[64], turn[16];
		snprintf(text, sizeof text, "word%s round%d", id, i);
		snprintf(turn, sizeof turn, "t%d", i);
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "text", text);
		struct log_event evs[2] = {{"turn/start", turn, false, NULL, 0},
					   {"user/message", turn, false, data, 0}};
		uint64_t first = log_next_seq(lg), ver = 0;
		struct cat_session *v = NULL;
		struct cat_hit *h = NULL;
		size_t nv = 0, nh = 0;
		if (log_append(lg, first, evs, 2, NULL, &e) < 0)
			bad++, fprintf(stderr, "%s: append: %s\n", id, e.msg);
		d = log_durable(lg);
		wm = wm_of(d);
		if (!bad && (catalog_project_batch(c, id, first, clock_unix_ms(), evs, 2, &wm, &ver, &e) < 0 ||
			     catalog_set_status(c, id, i % 2 ? "running" : NULL, &e) < 0 ||
			     catalog_list(c, true, false, NULL, 0, &v, &nv, &e) < 0 ||
			     catalog_search(c, text, 0, false, &h, &nh, &e) < 0))
			bad++, fprintf(stderr, "%s: round %d: %s (class %d)\n", id, i, e.msg, e.cls);
		else if (!bad && (ver != first + 2 || nv < 1 || nv > 2 || nh != 1))
			bad++, fprintf(stderr, "%s: round %d: version %llu, %zu sessions, %zu hits\n", id, i,
				       (unsigned long long)ver, nv, nh);
		cJSON_Delete(data);
		cat_sessions_free(v, nv);
		cat_hits_free(h, nh);
	}
	log_close(lg);
	catalog_close(c);
	store_close(st);
	return bad;
}

static void test_concurrent_processes(void **state)
{
	struct fx *f = *state;
	make(f, "sA", "/p", NULL, B("[" META("{}") "]"));
	make(f, "sB", "/p", NULL, B("[" META("{}") "]"));
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_init();
		_exit(writer(f->root, "sA", 60) != 0);
	}
	int bad = writer(f->root, "sB", 60);
	expect_exit0(pid);
	assert_int_equal(bad, 0);
	expect_row(f, "sA", "turns=60|version=122|wm~/122|prompt=wordsA round59");
	expect_row(f, "sB", "turns=60|version=122|wm~/122|prompt=wordsB round59");
	assert_int_equal(sync_ok(f), 0); /* the batches recorded the files' identity */
}

/* ---- the projection ---- */

static void test_projection_fields(void **state)
{
	struct fx *f = *state;
	make(f, "sP", "/p/proj", "{'provider':'prov1','model':'m1','forked_from':{'session':'sOrig','turn':'t7'}}",
	     B("[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'c1'}},"
	       " {'type':'user/message','turn':'t1','data':{'text':'  Hello\\tworld\\n\\nhow are  you  '}}]",
	       "[{'type':'assistant/text','turn':'t1','data':{'text':'hi'}}," END("t1", "completed") "]",
	       "[{'type':'session/settings','data':{'model':'m2'}}," START("t2") ","
	       " {'type':'user/message','turn':'t2','data':{'text':'Second \\u0007  prompt'},'t':5000}]"));
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "sP", "id=sP|key=-p-proj|cwd=/p/proj|updated=+5000|turns=2|prompt=Second prompt"
			    "|title=Hello world how are you|explicit=0|provider=prov1|model=m2|fork=sOrig/t7"
			    "|status=interrupted|error=NULL|pinned=0|deleted=0|version=8|wm=0/0");
	char p[512];
	struct scan *sc;
	struct cat_session s;
	struct cerr err;
	path_of(f, STORE_SESSIONS, "/p/proj", "sP", LOG_FILE, p, sizeof p);
	int fd = open(p, O_RDONLY);
	assert_int_equal(scan_fd(fd, &sc, &err), 0);
	close(fd);
	assert_int_equal(catalog_get(cat(f), "sP", &s, &err), 0);
	assert_int_equal(s.created_at, sc->created_at); /* the header's */
	assert_true(s.created_at > 0 && s.created_at < T0);
	cat_session_release(&s);
	scan_free(sc);
	/* Settings may clear the provider; closing the turn makes it idle. */
	append_to(f, "sP", "[{'type':'session/settings','data':{'provider':null}}," END("t2", "failed") "]");
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "sP", "provider=NULL|model=m2|status=idle|version=10|turns=2");
}

static void test_titles_and_pins(void **state)
{
	struct fx *f = *state;
	char b1[512] = "[{'type':'user/message','data':{'text':'   ";
	for (int i = 0; i < 30; i++)
		strcat(b1, "word\\t\\n ");
	strcat(b1, "'}}]");
	make(f, "sT", "/p", NULL, B("[" USER(" \\n\\t ") "]", b1));
	/* The first non-blank prompt, cut after 79 characters at a word end. */
	const char *want = "title=word word word word word word word word word word word word word word "
			   "word word\xE2\x80\xA6|explicit=0";
	sync_ok(f);
	expect_row(f, "sT", want);
	expect_row(f, "sT", "pinned=0|prompt~word word");
	append_sync(f, "sT", "[" USER("a later prompt") "]");
	expect_row(f, "sT", want); /* the FIRST prompt sets it */
	append_sync(f, "sT", "[" META("{'title':'  My \\n  Title  '}") "]");
	expect_row(f, "sT", "title=My Title|explicit=1|pinned=0");
	append_sync(f, "sT", "[" META("{'pinned':true}") "," USER("another") "]");
	expect_row(f, "sT", "title=My Title|explicit=1|pinned=1|prompt=another");
	append_sync(f, "sT", "[" META("{'title':null,'pinned':false}") "]");
	expect_row(f, "sT", want);
	expect_row(f, "sT", "pinned=0");
	append_sync(f, "sT", "[" META("{'title':'Renamed'}") "," META("{'title':'  '}") "]");
	expect_row(f, "sT", want); /* a blank title is no title */
	make(f, "sN", "/p", NULL, B("[" START("t") "]"));
	sync_ok(f);
	expect_row(f, "sN", "title=NULL|prompt=NULL|explicit=0");
}

/* ---- statuses ---- */

static void test_statuses(void **state)
{
	struct fx *f = *state;
	const char *const *two = B("[" START("t1") "," USER("first words") "]", "[" END("t1", "completed") "]");
	static const char *const ids[] = {"sIdle", "sBad", "sUns", "sTorn", "sEmpty", "sOther"};
	for (size_t i = 0; i < 6; i++)
		make(f, ids[i], i == 2 ? "/p/u" : "/p", NULL, two);
	make(f, "sOpen", "/p", NULL, B(two[0]));
	char p[512], q[512];
	size_t n;
	/* sBad: a bit flipped in the checksum of its last frame. */
	path_of(f, STORE_SESSIONS, "/p", "sBad", LOG_FILE, p, sizeof p);
	uint8_t *b = slurp(p, &n);
	b[n - 1] ^= 0x10;
	write_file(p, b, n);
	free(b);
	/* sTorn: half of a copy of its last frame appended. */
	path_of(f, STORE_SESSIONS, "/p", "sTorn", LOG_FILE, p, sizeof p);
	b = slurp(p, &n);
	struct scan *sc = scan_buffer(b, n);
	const struct scan_frame *last = &sc->frames[sc->n_frames - 1];
	b = realloc(b, n + last->len);
	memcpy(b + n, b + last->offset, last->len / 2);
	write_file(p, b, n + last->len / 2);
	scan_free(sc);
	free(b);
	/* sUns: a header of format 2. */
	struct buf line = BUF_INIT, frame = BUF_INIT;
	cJSON *h = J("{'format':2,'id':'sUns','created_at':1,'cwd':'/p/u'}");
	event_format(&line, 0, 1, "session/header", NULL, false, h);
	struct frame_codec *fc = frame_codec_new();
	assert_int_equal(frame_encode(fc, line.p, line.len, &frame), 0);
	frame_codec_free(fc);
	path_of(f, STORE_SESSIONS, "/p/u", "sUns", LOG_FILE, p, sizeof p);
	write_file(p, frame.p, frame.len);
	cJSON_Delete(h);
	buf_release(&line);
	buf_release(&frame);
	/* sEmpty: zero bytes; sOther: holds sIdle's log. */
	path_of(f, STORE_SESSIONS, "/p", "sEmpty", LOG_FILE, p, sizeof p);
	write_file(p, "", 0);
	path_of(f, STORE_SESSIONS, "/p", "sIdle", LOG_FILE, q, sizeof q);
	b = slurp(q, &n);
	path_of(f, STORE_SESSIONS, "/p", "sOther", LOG_FILE, p, sizeof p);
	write_file(p, b, n);
	free(b);

	assert_int_equal(sync_ok(f), 7);
	expect_row(f, "sIdle", "status=idle|error=NULL");
	expect_row(f, "sOpen", "status=interrupted|error=NULL");
	/* What precedes the damage is still projected. */
	expect_row(f, "sBad", "status=corrupt|error~frame at offset|title=first words|cwd=/p|turns=1");
	expect_row(f, "sUns", "status=unsupported|error~format 2|key=-p-u");
	expect_row(f, "sTorn", "status=idle|error=NULL|turns=1"); /* a torn tail is no damage */
	expect_row(f, "sEmpty", "status=corrupt|error~empty");
	expect_row(f, "sOther", "status=corrupt|error~sIdle");
	/* One bad log never breaks a list: each is listed with its status. */
	list(f, false, false, NULL, 0, "sOpen sTorn sBad sOther sIdle sUns sEmpty");
	list(f, false, false, "/p/u", 0, "sUns"); /* no cwd known: found by its key */
	assert_int_equal(sync_ok(f), 0);
}

/* ---- listing and reconciliation ---- */

static void test_list_order_and_filters(void **state)
{
	struct fx *f = *state;
	make(f, "a", "/p/x", NULL, B("[" USER("a") ",{'type':'step/end','turn':'t','t':100}]"));
	make(f, "b", "/p/x", NULL, B("[{'type':'turn/start','turn':'t','t':300}]"));
	make(f, "c", "/p/y", NULL, B("[{'type':'turn/start','turn':'t','t':20}]",
				       "[{'type':'session/meta','data':{'pinned':true},'t':200}]"));
	make(f, "d", "/p/x", NULL, B("[{'type':'turn/start','turn':'t','t':400}]"));
	make(f, "e", "/p/y", NULL, B("[{'type':'session/meta','data':{'pinned':true},'t':150}]"));
	struct session_ref ref = {"d", "-p-x"};
	int64_t ms = 0;
	struct cerr err;
	assert_int_equal(store_trash(f->st, &ref, &ms, &err), 0);
	assert_int_equal(sync_ok(f), 5);
	list(f, false, false, NULL, 0, "c e b a");
	list(f, true, false, NULL, 0, "c e d b a");
	list(f, false, true, NULL, 0, "d");
	list(f, true, true, NULL, 0, "d");
	list(f, false, false, "/p/x", 0, "b a");
	list(f, true, false, "/p/x", 0, "d b a");
	list(f, false, false, "/p/y", 0, "c e");
	list(f, false, false, "/p/nothing", 0, "");
	list(f, false, false, NULL, 2, "c e");
	list(f, true, false, NULL, 3, "c e d");
	list(f, false, false, "/p/x", 1, "b");
	expect_row(f, "a", "updated=+100|deleted=0|pinned=0");
	expect_row(f, "c", "updated=+200|pinned=1");
	char w[64];
	snprintf(w, sizeof w, "updated=+400|deleted=%lld", (long long)ms); /* the ctime reported */
	expect_row(f, "d", w);
}

static void test_sync_lifecycle(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, B("[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'k1'}}," USER("one") "]"));
	assert_int_equal(sync_ok(f), 1);
	assert_int_equal(sync_ok(f), 0); /* nothing changed */
	append_to(f, "s1", "[" END("t1", "completed") "," START("t2") "," USER("grown") "]");
	assert_int_equal(sync_ok(f), 1); /* the log grew: re-projected */
	expect_row(f, "s1", "turns=2|prompt=grown|version=6|status=interrupted");
	assert_int_equal(sync_ok(f), 0);
	/* Trash: marked with the ctime the store reported. */
	struct session_ref ref = {"s1", "-p"};
	int64_t ms = 0;
	struct cerr err;
	struct cat_session s;
	char w[64];
	assert_int_equal(store_trash(f->st, &ref, &ms, &err), 0);
	assert_int_equal(sync_ok(f), 1);
	snprintf(w, sizeof w, "prompt=grown|deleted=%lld", (long long)ms);
	expect_row(f, "s1", w);
	list(f, false, false, NULL, 0, "");
	list(f, false, true, NULL, 0, "s1");
	assert_int_equal(sync_ok(f), 0);
	/* Restored by hand: live again. */
	char from[512], to[512];
	path_of(f, STORE_TRASH, "/p", "s1", NULL, from, sizeof from);
	path_of(f, STORE_SESSIONS, "/p", "s1", NULL, to, sizeof to);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "s1", "deleted=0|turns=2");
	/* Gone for good: the row, its text and its claims are forgotten. */
	nftw(to, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	assert_int_equal(sync_ok(f), 1);
	assert_int_equal(catalog_get(cat(f), "s1", &s, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	list(f, true, false, NULL, 0, "");
	raw_expect(f->root, "SELECT (SELECT count(*) FROM docs) + (SELECT count(*) FROM claims)", "0");
	assert_int_equal(sync_ok(f), 0);
}

/* Append json to lg and project it as the write path does: the header
 * first when this append published the log, then the batch with the new
 * durable watermark. Returns the new content version. */
static uint64_t add_projected(struct fx *f, struct log *lg, const char *key, const char *json)
{
	struct batch b;
	struct cerr err;
	uint64_t first = log_next_seq(lg), next, ver = 0;
	batch_parse(&b, json);
	if (log_append(lg, first, b.evs, b.n, &next, &err) < 0)
		fail_msg("append: %s", err.msg);
	if (first == 1) {
		struct session_ref ref = {"", ""};
		size_t n;
		snprintf(ref.id, sizeof ref.id, "%s", log_id(lg));
		snprintf(ref.key, sizeof ref.key, "%s", key);
		uint8_t *bytes = slurp(log_path(lg), &n);
		struct scan *all = scan_buffer(bytes, n);
		struct scan *hdr = scan_buffer(bytes, all->frames[0].len);
		assert_int_equal(hdr->status, SCAN_OK);
		assert_int_equal(hdr->next_seq, 1);
		if (catalog_project_scan(cat(f), &ref, hdr, 0, NULL, &err) < 0)
			fail_msg("project header: %s", err.msg);
		scan_free(hdr);
		scan_free(all);
		free(bytes);
	}
	struct log_revision d = log_durable(lg);
	assert_int_equal(d.next_seq, next);
	assert_true(d.len > 0);
	struct cat_watermark wm = wm_of(d);
	if (catalog_project_batch(cat(f), log_id(lg), first, 0, b.evs, b.n, &wm, &ver, &err) < 0)
		fail_msg("project batch at %llu: %s", (unsigned long long)first, err.msg);
	assert_int_equal(ver, next);
	batch_free(&b);
	return ver;
}

static void test_project_batch(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "sB", "/p", NULL, &lg, &err), 0);
	assert_int_equal(add_projected(f, lg, "-p", "[" START("t1") "," USER("hello batch") "]"), 3);
	assert_int_equal(add_projected(f, lg, "-p", "[" END("t1", "completed") "]"), 4);
	struct log_revision d = log_durable(lg);
	char w[128];
	snprintf(w, sizeof w, "version=4|wm=%llu/4|title=hello batch|status=idle|turns=1",
		 (unsigned long long)d.len);
	expect_row(f, "sB", w);
	/* Only at content_version == first_seq. */
	struct batch b;
	struct cat_watermark wm = wm_of(d);
	uint64_t ver = 77;
	batch_parse(&b, "[" USER("stale") "]");
	assert_int_equal(catalog_project_batch(cat(f), "sB", 3, 0, b.evs, b.n, &wm, &ver, &err), -1);
	assert_int_equal(err.cls, CERR_CONFLICT);
	assert_int_equal(catalog_project_batch(cat(f), "sB", 5, 0, b.evs, b.n, &wm, &ver, &err), -1);
	assert_int_equal(err.cls, CERR_CONFLICT);
	assert_int_equal(catalog_project_batch(cat(f), "nope", 4, 0, b.evs, b.n, &wm, &ver, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	/* In an explicit transaction that is rolled back: no trace. */
	assert_int_equal(catalog_begin(cat(f), &err), 0);
	assert_int_equal(catalog_project_batch(cat(f), "sB", 4, 0, b.evs, b.n, &wm, &ver, &err), 0);
	assert_int_equal(ver, 5);
	catalog_rollback(cat(f));
	expect_row(f, "sB", "version=4|prompt=hello batch");
	batch_free(&b);
	assert_int_equal(sync_ok(f), 0); /* the batches left the file's identity */
	log_close(lg);
}

/* A batch projected before its log is synced (wm NULL, as the FIFO does
 * while the sync runs) marks the row as not matching a durable file: a sync
 * reads the log again. catalog_set_durable then records the file and the
 * watermark, only at the version it names. */
static void test_project_before_sync(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "sD", "/p", NULL, &lg, &err), 0);
	add_projected(f, lg, "-p", "[" START("t1") "," USER("durable first") "]");
	assert_int_equal(sync_ok(f), 0);
	struct batch b;
	uint64_t ver = 0;
	batch_parse(&b, "[" USER("written, not yet synced") "]");
	assert_int_equal(log_write(lg, 3, b.evs, b.n, NULL, &err), 0);
	assert_int_equal(catalog_project_batch(cat(f), "sD", 3, 0, b.evs, b.n, NULL, &ver, &err), 0);
	assert_int_equal(ver, 4);
	raw_expect(f->root, "SELECT proj_len FROM sessions WHERE id = 'sD'", "-1");
	assert_int_equal(log_sync(lg, &err), 0);
	struct cat_watermark wm = wm_of(log_durable(lg));
	bool applied = true;
	assert_int_equal(catalog_set_durable(cat(f), "sD", 3, &wm, &applied, &err), 0);
	assert_false(applied); /* not the version this watermark is of */
	raw_expect(f->root, "SELECT proj_len FROM sessions WHERE id = 'sD'", "-1");
	/* Marked: a sync reads it again (and finds what was projected). */
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "sD", "version=4|prompt=written, not yet synced");
	batch_free(&b);

	batch_parse(&b, "[" END("t1", "completed") "]");
	assert_int_equal(log_write(lg, 4, b.evs, b.n, NULL, &err), 0);
	assert_int_equal(catalog_project_batch(cat(f), "sD", 4, 0, b.evs, b.n, NULL, &ver, &err), 0);
	assert_int_equal(log_sync(lg, &err), 0);
	wm = wm_of(log_durable(lg));
	assert_int_equal(catalog_set_durable(cat(f), "sD", 5, &wm, &applied, &err), 0);
	assert_true(applied);
	char w[64];
	snprintf(w, sizeof w, "version=5|wm=%llu/5", (unsigned long long)wm.len);
	expect_row(f, "sD", w);
	assert_int_equal(sync_ok(f), 0); /* clean: nothing to read again */
	batch_free(&b);
	log_close(lg);
}

static void expect_claim(struct fx *f, const char *id, const char *session, const char *turn,
			 const char *state)
{
	bool found = true;
	char *s, *t, *st;
	struct cerr err;
	assert_int_equal(catalog_claim(cat(f), id, &found, &s, &t, &st, &err), 0);
	assert_int_equal(found, session != NULL);
	if (session) {
		assert_string_equal(s, session);
		assert_string_equal(t, turn);
		assert_string_equal(st, state);
	}
	free(s), free(t), free(st);
}

static void test_claims_and_status(void **state)
{
	struct fx *f = *state;
	make(f, "sC", "/p", NULL, B("[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'sub-1'}}," USER("q") "]",
				    "[" END("t1", "canceled") ",{'type':'turn/start','turn':'t2','data':{'client_submit_id':'sub-2'}}]"));
	sync_ok(f);
	expect_claim(f, "sub-1", "sC", "t1", "canceled");
	expect_claim(f, "sub-2", "sC", "t2", "open");
	expect_claim(f, "sub-3", NULL, NULL, NULL);
	append_to(f, "sC", "[" END("t2", "completed") ",{'type':'turn/start','turn':'t3','data':{'client_submit_id':'sub-3'}}]");
	assert_int_equal(sync_ok(f), 1);
	expect_claim(f, "sub-2", "sC", "t2", "completed");
	expect_claim(f, "sub-3", "sC", "t3", "open");
	append_to(f, "sC", "[" END("t3", "interrupted") "]");
	sync_ok(f);
	expect_claim(f, "sub-3", "sC", "t3", "interrupted");
	/* Status override and clear. */
	struct cerr err;
	assert_int_equal(catalog_set_status(cat(f), "sC", "running", &err), 0);
	expect_row(f, "sC", "status=running");
	assert_int_equal(sync_ok(f), 0);
	expect_row(f, "sC", "status=running"); /* a sync keeps the override */
	assert_int_equal(catalog_set_status(cat(f), "sC", "unsaved", &err), 0);
	expect_row(f, "sC", "status=unsaved");
	assert_int_equal(catalog_set_status(cat(f), "sC", NULL, &err), 0);
	expect_row(f, "sC", "status=idle");
	assert_int_equal(catalog_set_status(cat(f), "nope", "running", &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	assert_int_equal(catalog_set_deleted(cat(f), "nope", 5, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
}

/* ---- rebuild equivalence ---- */

/* Every column of every table as text, rows ordered by key, docids left
 * out; checks that both full-text indexes agree with the documents. */
static char *dump(const char *root)
{
	static const char *const sql[] = {
		"SELECT * FROM sessions ORDER BY id",
		"SELECT session, turn, role, body FROM docs ORDER BY session, turn, role",
		"SELECT * FROM claims ORDER BY client_submit_id"};
	sqlite3 *db = raw_open(root);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < 3; i++) {
		sqlite3_stmt *q;
		assert_int_equal(sqlite3_prepare_v2(db, sql[i], -1, &q, NULL), SQLITE_OK);
		while (sqlite3_step(q) == SQLITE_ROW) {
			for (int c = 0; c < sqlite3_column_count(q); c++) {
				const unsigned char *t = sqlite3_column_text(q, c);
				buf_printf(&b, "%s=%s", sqlite3_column_name(q, c), t ? "" : "NULL");
				for (; t && *t; t++)
					buf_adds(&b, *t == '\n' ? "\\n" : (char[]){(char)*t, 0});
				buf_addc(&b, '|');
			}
			buf_addc(&b, '\n');
		}
		sqlite3_finalize(q);
		buf_adds(&b, "--\n");
	}
	sqlite3_close(db);
	/* The full-text index agrees with the documents (it needs the
	 * catalog's tokenizer, so through a catalog connection). */
	struct store *st;
	struct catalog *cat;
	struct cerr err;
	bool ok = false;
	char *msg = NULL;
	assert_int_equal(store_open(root, false, &st, &err), 0);
	assert_int_equal(catalog_open(st, &cat, &err), 0);
	assert_int_equal(catalog_integrity(cat, &ok, &msg, &err), 0);
	if (!ok)
		fail_msg("integrity: %s", msg);
	free(msg);
	catalog_close(cat);
	store_close(st);
	return buf_detach(&b, NULL);
}

static void same_dump(const char *a, const char *b)
{
	for (size_t line = 1; *a && *b; line++) {
		const char *ae = strchr(a, '\n'), *be = strchr(b, '\n');
		if (ae - a != be - b || memcmp(a, b, (size_t)(ae - a)) != 0)
			fail_msg("line %zu differs:\nincremental: %.*s\nrebuilt:     %.*s", line,
				 (int)(ae - a), a, (int)(be - b), b);
		a = ae + 1, b = be + 1;
	}
	assert_string_equal(a, b);
}

#define TOOL_CALL(t, k) "{'type':'tool/call','turn':'" t "','data':{'call_id':'" k "','name':'sh','args':{}}}"
#define TOOL_RESULT(t, k, out) "{'type':'tool/result','turn':'" t "','data':{'call_id':'" k "','status':'ok','output':" out "}}"

/* Three sessions written batch by batch and projected as they go. */
static void incremental_scenario(struct fx *f)
{
	struct log *lg;
	struct cerr err;
	cJSON *x = J("{'provider':'p1','model':'m1'}");
	assert_int_equal(log_create(f->st, "sA", "/p/a", x, &lg, &err), 0);
	cJSON_Delete(x);
	const char *const *a = B(
		"[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'ca1'}},"
		" {'type':'user/message','turn':'t1','data':{'text':'Plan the  schema\\nfor the catalog'}}]",
		"[{'type':'assistant/text','turn':'t1','data':{'text':'Sure, the sch'}}]",
		"[{'type':'assistant/text','turn':'t1','data':{'text':'ema has three tables.'}},"
		TOOL_CALL("t1", "k1") ",{'type':'tool/started','turn':'t1','data':{'call_id':'k1'}}]",
		"[" TOOL_RESULT("t1", "k1", "'created 3 files'") "," TOOL_CALL("t1", "k2") "]",
		"[" TOOL_RESULT("t1", "k2", "{'rows':[1,2.5,'x'],'ok':true,'nested':{'a':null}}") "]",
		"[" TOOL_CALL("t1", "k3") "]", "[" TOOL_RESULT("t1", "k3", "''") "]", /* no output */
		"[" END("t1", "completed") "," META("{'title':'Catalog design'}") "]",
		"[" META("{'pinned':true}") ",{'type':'session/settings','data':{'model':'m2'}},"
		" {'type':'x/future','ign':true,'data':{'a':1}}]",
		"[{'type':'turn/start','turn':'t2','data':{'client_submit_id':'ca2'}},"
		" {'type':'user/message','turn':'t2','data':{'text':'second prompt'}},"
		" {'type':'assistant/reasoning','turn':'t2','data':{'text':'thinking'}}]");
	for (; *a; a++)
		add_projected(f, lg, "-p-a", *a);
	log_close(lg);
	x = J("{'forked_from':{'session':'sA','turn':'t1'}}");
	assert_int_equal(log_create(f->st, "sB", "/p/b", x, &lg, &err), 0);
	cJSON_Delete(x);
	add_projected(f, lg, "-p-b", "[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'cb1'}},"
				     " {'type':'user/message','turn':'t1','data':{'text':'fork prompt'}},"
				     " {'type':'assistant/text','turn':'t1','data':{'text':'answer'}}]");
	add_projected(f, lg, "-p-b", "[" END("t1", "canceled") "," META("{'title':'Temp'}") "]");
	add_projected(f, lg, "-p-b", "[" META("{'title':null}") "," START("t2") ","
				     " {'type':'user/message','turn':'t2','data':{'text':'two'}}," TOOL_CALL("t2", "z") ","
				     TOOL_RESULT("t2", "z", "'boom'") "," END("t2", "failed") "]");
	log_close(lg);
	struct session_ref ref = {"sB", "-p-b"};
	int64_t ms = 0;
	assert_int_equal(store_trash(f->st, &ref, &ms, &err), 0);
	assert_int_equal(catalog_set_deleted(cat(f), "sB", ms, &err), 0);
	assert_int_equal(log_create(f->st, "sC", NULL, NULL, &lg, &err), 0);
	add_projected(f, lg, "_no-cwd", "[" USER("no cwd here") "]");
	add_projected(f, lg, "_no-cwd", "[" META("{'pinned':true}") "]");
	add_projected(f, lg, "_no-cwd", "[" META("{'pinned':false}") "," USER("again") "]");
	log_close(lg);
}

static void test_rebuild_equivalence(void **state)
{
	struct fx *f = *state;
	incremental_scenario(f);
	expect_row(f, "sA", "title=Catalog design|explicit=1|pinned=1|model=m2|provider=p1"
			    "|status=interrupted|turns=2|prompt=second prompt|version=20|wm~/20");
	expect_row(f, "sB", "title=fork prompt|explicit=0|deleted~1|status=idle|fork=sA/t1");
	expect_row(f, "sC", "key=_no-cwd|cwd=NULL|pinned=0|title=no cwd here|prompt=again|deleted=0");
	expect_claim(f, "ca1", "sA", "t1", "completed");
	expect_claim(f, "ca2", "sA", "t2", "open");
	expect_claim(f, "cb1", "sB", "t1", "canceled");
	assert_int_equal(sync_ok(f), 0); /* nothing on disk the projection lacks */
	char *inc = dump(f->root);
	/* The rebuild (doctor --reindex): watermarks are not in the logs, so
	 * they are carried over; a rebuild alone leaves them unknown. */
	static const char *const ids[] = {"sA", "sB", "sC"};
	struct cat_watermark wm[3], none;
	struct cerr err;
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(catalog_get_watermark(cat(f), ids[i], &wm[i], &err), 0);
		assert_true(wm[i].known);
	}
	assert_int_equal(catalog_clear(cat(f), &err), 0);
	list(f, true, false, NULL, 0, "");
	raw_expect(f->root, "SELECT (SELECT count(*) FROM docs) + (SELECT count(*) FROM claims)", "0");
	assert_int_equal(sync_ok(f), 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(catalog_get_watermark(cat(f), ids[i], &none, &err), 0);
		assert_false(none.known);
		assert_int_equal(catalog_set_watermark(cat(f), ids[i], &wm[i], &err), 0);
	}
	char *re = dump(f->root);
	same_dump(inc, re);
	assert_non_null(strstr(re, "Sure, the schema has three tables."));
	assert_non_null(strstr(re, "body=created 3 files\\n{\"rows\":[1,2.5,\"x\"],\"ok\":true,"
				   "\"nested\":{\"a\":null}}|"));
	free(inc);
	free(re);
	assert_int_equal(sync_ok(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_file_modes),
		T(test_schema),
		T(test_two_connections),
		T(test_busy_timeout_waits),
		T(test_busy_beyond_timeout_locked),
		T(test_concurrent_processes),
		T(test_projection_fields),
		T(test_titles_and_pins),
		T(test_statuses),
		T(test_list_order_and_filters),
		T(test_sync_lifecycle),
		T(test_project_batch),
		T(test_project_before_sync),
		T(test_claims_and_status),
		T(test_rebuild_equivalence),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
