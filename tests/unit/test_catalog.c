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
	char dir[64];
	char root[128];
	struct store *st;
	struct catalog *cat;
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
	snprintf(f->dir, sizeof f->dir, "/tmp/cairn-test-catalog-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->root, sizeof f->root, "%s/root", f->dir);
	struct cerr err;
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
		e->type = cJSON_GetObjectItem(c, "type")->valuestring;
		const cJSON *t = cJSON_GetObjectItem(c, "turn");
		e->turn = cJSON_IsString(t) ? t->valuestring : NULL;
		e->ignorable = cJSON_IsTrue(cJSON_GetObjectItem(c, "ign"));
		e->data = cJSON_GetObjectItem(c, "data");
		const cJSON *at = cJSON_GetObjectItem(c, "t");
		e->t = T0 + (at ? (int64_t)at->valuedouble : ++tick);
	}
}

static void batch_free(struct batch *b)
{
	cJSON_Delete(b->arr);
	free(b->evs);
}

static uint64_t add(struct log *lg, const char *json)
{
	struct batch b;
	batch_parse(&b, json);
	uint64_t first = log_next_seq(lg), next;
	struct cerr err;
	if (log_append(lg, first, b.evs, b.n, &next, &err) < 0)
		fail_msg("append at %llu: %s", (unsigned long long)first, err.msg);
	assert_int_equal(next, first + b.n);
	batch_free(&b);
	return first;
}

/* Session id in cwd with header extras and batches (NULL-terminated). */
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

static struct log *open_log(struct fx *f, const char *id)
{
	struct log *lg;
	struct cerr err;
	if (log_open(f->st, id, &lg, &err) < 0)
		fail_msg("log_open %s: %s", id, err.msg);
	return lg;
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

static void get(struct fx *f, const char *id, struct cat_session *s)
{
	struct cerr err;
	if (catalog_get(cat(f), id, s, &err) < 0)
		fail_msg("catalog_get %s: %s", id, err.msg);
}

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

static sqlite3 *raw_open(const char *root)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", root, CATALOG_FILE);
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static char *raw_text(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	const unsigned char *t = sqlite3_column_text(q, 0);
	char *s = strdup(t ? (const char *)t : "NULL");
	sqlite3_finalize(q);
	return s;
}

static mode_t mode_of(const char *dir, const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (stat(p, &st) < 0)
		fail_msg("%s: %s", p, strerror(errno));
	return st.st_mode & 07777;
}

static void expect_modes(const char *root)
{
	assert_int_equal(mode_of(root, CATALOG_FILE), 0600);
	assert_int_equal(mode_of(root, CATALOG_FILE "-wal"), 0600);
	assert_int_equal(mode_of(root, CATALOG_FILE "-shm"), 0600);
}

/* ---- files, schema, connections ---- */

static void test_file_modes(void **state)
{
	struct fx *f = *state;
	static const mode_t masks[] = {0, 077, 022};
	for (size_t i = 0; i < 3; i++) {
		char root[192];
		snprintf(root, sizeof root, "%s/umask%zu", f->dir, i);
		mode_t old = umask(masks[i]);
		struct store *st;
		struct catalog *c;
		struct cerr err;
		assert_int_equal(store_open(root, true, &st, &err), 0);
		if (catalog_open(st, &c, &err) < 0)
			fail_msg("catalog_open: %s", err.msg);
		expect_modes(root); /* a new catalog: created 0600, sidecars while open */
		catalog_close(c);
		assert_int_equal(mode_of(root, CATALOG_FILE), 0600);
		/* Sidecars left 0644 by someone else, and a loosened index. */
		char p[256];
		static const char *const side[] = {CATALOG_FILE "-wal", CATALOG_FILE "-shm"};
		for (size_t k = 0; k < 2; k++) {
			snprintf(p, sizeof p, "%s/%s", root, side[k]);
			int fd = open(p, O_RDWR | O_CREAT, 0644);
			assert_true(fd >= 0);
			assert_int_equal(fchmod(fd, 0644), 0);
			close(fd);
		}
		snprintf(p, sizeof p, "%s/%s", root, CATALOG_FILE);
		assert_int_equal(chmod(p, 0644), 0);
		if (catalog_open(st, &c, &err) < 0)
			fail_msg("catalog_open again: %s", err.msg);
		expect_modes(root);
		catalog_close(c);
		store_close(st);
		umask(old);
	}
}

static void test_pragmas_and_schema(void **state)
{
	struct fx *f = *state;
	cat(f);
	sqlite3 *db = raw_open(f->root);
	char *s = raw_text(db, "PRAGMA journal_mode");
	assert_string_equal(s, "wal");
	free(s);
	s = raw_text(db, "PRAGMA user_version");
	assert_string_equal(s, "1");
	free(s);
	s = raw_text(db, "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master"
			 " WHERE name IN ('sessions','docs','claims','fts_words','fts_tri') ORDER BY name)");
	assert_string_equal(s, "claims,docs,fts_tri,fts_words,sessions");
	free(s);
	sqlite3_close(db);
	/* Reopening an existing catalog keeps it. */
	catalog_close(f->cat);
	f->cat = NULL;
	make(f, "s1", "/p", NULL, (const char *const[]){"[{'type':'user/message','data':{'text':'x'}}]", NULL});
	assert_int_equal(sync_ok(f), 1);
	catalog_close(f->cat);
	f->cat = NULL;
	struct cat_session cs;
	get(f, "s1", &cs);
	assert_string_equal(cs.title, "x");
	cat_session_release(&cs);
	bool ok = false;
	char *msg = NULL;
	struct cerr err;
	assert_int_equal(catalog_integrity(f->cat, &ok, &msg, &err), 0);
	assert_true(ok);
	assert_string_equal(msg, "ok");
	free(msg);
}

static void test_newer_schema_refused(void **state)
{
	struct fx *f = *state;
	cat(f);
	catalog_close(f->cat);
	f->cat = NULL;
	sqlite3 *db = raw_open(f->root);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	struct catalog *c = NULL;
	struct cerr err;
	assert_int_equal(catalog_open(f->st, &c, &err), -1);
	assert_int_equal(err.cls, CERR_UNSUPPORTED);
	assert_non_null(strstr(err.msg, "99"));
	assert_null(c);
	db = raw_open(f->root);
	char *s = raw_text(db, "PRAGMA user_version");
	assert_string_equal(s, "99"); /* left alone */
	free(s);
	sqlite3_close(db);
}

static void test_two_connections(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, (const char *const[]){"[{'type':'turn/start','turn':'t1'}]", NULL});
	sync_ok(f);
	struct catalog *c2;
	struct cerr err;
	assert_int_equal(catalog_open(f->st, &c2, &err), 0);
	assert_int_equal(catalog_set_status(c2, "s1", "running", &err), 0);
	struct cat_session s;
	get(f, "s1", &s);
	assert_string_equal(s.status, "running");
	cat_session_release(&s);
	/* A write transaction on one connection does not block readers. */
	assert_int_equal(catalog_begin(c2, &err), 0);
	assert_int_equal(catalog_set_status(c2, "s1", NULL, &err), 0);
	get(f, "s1", &s);
	assert_string_equal(s.status, "running"); /* not committed yet */
	cat_session_release(&s);
	assert_int_equal(catalog_commit(c2, &err), 0);
	get(f, "s1", &s);
	assert_string_equal(s.status, "interrupted");
	cat_session_release(&s);
	catalog_close(c2);
}

/* A child process opens the catalog, holds a write transaction for
 * hold_ms, then commits. Returns its pid once it holds the lock. */
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
		char ch = bad ? 'x' : 'k';
		(void)!write(p[1], &ch, 1);
		usleep((useconds_t)hold_ms * 1000);
		bad = bad || catalog_commit(c, &e) < 0;
		_exit(bad ? 1 : 0);
	}
	close(p[1]);
	char ch = 0;
	assert_int_equal(read(p[0], &ch, 1), 1);
	close(p[0]);
	assert_int_equal(ch, 'k');
	return pid;
}

/* In a forked child: a crash ends it (cmocka's handlers would go on
 * running the parent's tests there). */
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

static void test_busy_timeout_waits(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, (const char *const[]){"[{'type':'turn/start','turn':'t1'}]", NULL});
	make(f, "s2", "/p", NULL, (const char *const[]){"[{'type':'turn/start','turn':'t1'}]", NULL});
	/* Fork before this process opens any connection: SQLite state must
	 * not cross a fork. */
	pid_t pid = child_holding(f, 400);
	uint64_t t0 = clock_mono_ns();
	struct cerr err;
	if (catalog_set_status(cat(f), "s2", "unsaved", &err) < 0)
		fail_msg("set_status while another process writes: %s (class %d)", err.msg, err.cls);
	uint64_t waited = (clock_mono_ns() - t0) / 1000000;
	assert_true(waited >= 250); /* it waited for the other writer... */
	expect_exit0(pid);
	struct cat_session s;
	get(f, "s1", &s); /* ...whose commit is visible */
	assert_string_equal(s.status, "running");
	cat_session_release(&s);
	get(f, "s2", &s);
	assert_string_equal(s.status, "unsaved");
	cat_session_release(&s);
}

static void test_busy_beyond_timeout_locked(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, (const char *const[]){"[{'type':'turn/start','turn':'t1'}]", NULL});
	pid_t pid = child_holding(f, 6500);
	uint64_t t0 = clock_mono_ns();
	struct cerr err;
	assert_int_equal(catalog_set_status(cat(f), "s1", "unsaved", &err), -1);
	assert_int_equal(err.cls, CERR_LOCKED);
	uint64_t waited = (clock_mono_ns() - t0) / 1000000;
	assert_true(waited >= 4500 && waited < 6400);
	expect_exit0(pid);
}

/* Two processes open a fresh catalog at once and write concurrently:
 * appends projected batch by batch, status changes, reads. */
static int writer(const char *root, const char *id, int rounds)
{
	struct store *st;
	struct catalog *c;
	struct log *lg;
	struct cerr e;
	int bad = 0;
	if (store_open(root, false, &st, &e) < 0 || catalog_open(st, &c, &e) < 0 ||
	    log_open(st, id, &lg, &e) < 0) {
		fprintf(stderr, "%s: open: %s\n", id, e.msg);
		return 100;
	}
	struct session_ref ref;
	snprintf(ref.id, sizeof ref.id, "%s", id);
	snprintf(ref.key, sizeof ref.key, "-p");
	struct log_revision d = log_revision_of(lg);
	struct cat_watermark wm = {true, d.len, d.next_seq, d.dev, d.ino};
	if (catalog_project_scan(c, &ref, log_scan(lg), 0, &wm, &e) < 0)
		bad++, fprintf(stderr, "%s: project_scan: %s\n", id, e.msg);
	for (int i = 0; i < rounds; i++) {
		char text[64];
		snprintf(text, sizeof text, "word%s round%d", id, i);
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "text", text);
		char turn[16];
		snprintf(turn, sizeof turn, "t%d", i);
		struct log_event evs[2] = {{"turn/start", turn, false, NULL, 0},
					   {"user/message", turn, false, data, 0}};
		uint64_t first = log_next_seq(lg), ver = 0;
		if (log_append(lg, first, evs, 2, NULL, &e) < 0) {
			bad++, fprintf(stderr, "%s: append: %s\n", id, e.msg);
			cJSON_Delete(data);
			break;
		}
		d = log_durable(lg);
		wm = (struct cat_watermark){true, d.len, d.next_seq, d.dev, d.ino};
		if (catalog_project_batch(c, id, first, clock_unix_ms(), evs, 2, &wm, &ver, &e) < 0 ||
		    ver != first + 2)
			bad++, fprintf(stderr, "%s: project_batch: %s\n", id, e.msg);
		cJSON_Delete(data);
		struct cat_session *v = NULL;
		size_t n = 0;
		struct cat_hit *h = NULL;
		if (catalog_set_status(c, id, i % 2 ? "running" : NULL, &e) < 0 ||
		    catalog_list(c, true, false, NULL, 0, &v, &n, &e) < 0 ||
		    catalog_search(c, text, 0, false, &h, &n, &e) < 0)
			bad++, fprintf(stderr, "%s: round %d: %s (class %d)\n", id, i, e.msg, e.cls);
		cat_sessions_free(v, 0);
		free(v);
		cat_hits_free(h, n);
	}
	log_close(lg);
	catalog_close(c);
	store_close(st);
	return bad;
}

static void test_concurrent_processes(void **state)
{
	struct fx *f = *state;
	make(f, "sA", "/p", NULL, (const char *const[]){"[{'type':'session/meta','data':{}}]", NULL});
	make(f, "sB", "/p", NULL, (const char *const[]){"[{'type':'session/meta','data':{}}]", NULL});
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		child_init();
		_exit(writer(f->root, "sA", 60) ? 1 : 0);
	}
	int bad = writer(f->root, "sB", 60);
	expect_exit0(pid);
	assert_int_equal(bad, 0);
	struct cat_session s;
	for (int i = 0; i < 2; i++) {
		get(f, i ? "sB" : "sA", &s);
		assert_int_equal(s.turns, 60);
		assert_int_equal(s.content_version, 2 + 120);
		assert_int_equal(s.durable_seq, 2 + 120);
		assert_string_equal(s.last_prompt, i ? "wordsB round59" : "wordsA round59");
		cat_session_release(&s);
	}
	/* The batches recorded the files' identity: nothing left to sync. */
	assert_int_equal(sync_ok(f), 0);
}

/* ---- the projection ---- */

static void test_projection_fields(void **state)
{
	struct fx *f = *state;
	make(f, "sP", "/p/proj", "{'provider':'prov1','model':'m1','forked_from':{'session':'sOrig','turn':'t7'}}",
	     (const char *const[]){
		     "[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'c1'}},"
		     " {'type':'user/message','turn':'t1','data':{'text':'  Hello\\tworld\\n\\nhow are  you  '}}]",
		     "[{'type':'assistant/text','turn':'t1','data':{'text':'hi'}},"
		     " {'type':'turn/end','turn':'t1','data':{'outcome':'completed'}}]",
		     "[{'type':'session/settings','data':{'model':'m2'}},"
		     " {'type':'turn/start','turn':'t2'},"
		     " {'type':'user/message','turn':'t2','data':{'text':'Second \\u0007  prompt'}, 't':5000}]",
		     NULL});
	assert_int_equal(sync_ok(f), 1);
	char p[512];
	path_of(f, STORE_SESSIONS, "/p/proj", "sP", LOG_FILE, p, sizeof p);
	int fd = open(p, O_RDONLY);
	struct scan *sc;
	struct cerr err;
	assert_int_equal(scan_fd(fd, &sc, &err), 0);
	close(fd);
	struct cat_session s;
	get(f, "sP", &s);
	assert_string_equal(s.id, "sP");
	assert_string_equal(s.project_key, "-p-proj");
	assert_string_equal(s.cwd, "/p/proj");
	assert_int_equal(s.created_at, sc->created_at);
	assert_true(s.created_at > 0);
	assert_int_equal(s.updated_at, T0 + 5000);
	assert_int_equal(s.turns, 2);
	assert_string_equal(s.last_prompt, "Second prompt");
	assert_string_equal(s.title, "Hello world how are you");
	assert_false(s.title_explicit);
	assert_string_equal(s.provider, "prov1");
	assert_string_equal(s.model, "m2");
	assert_string_equal(s.forked_from, "sOrig");
	assert_string_equal(s.forked_turn, "t7");
	assert_string_equal(s.status, "interrupted");
	assert_null(s.error);
	assert_false(s.pinned);
	assert_int_equal(s.deleted_at, 0);
	assert_int_equal(s.content_version, sc->next_seq);
	assert_int_equal(s.content_version, 8);
	cat_session_release(&s);
	scan_free(sc);
	/* Settings may clear the provider; closing the turn makes it idle. */
	struct log *lg = open_log(f, "sP");
	add(lg, "[{'type':'session/settings','data':{'provider':null}},"
		" {'type':'turn/end','turn':'t2','data':{'outcome':'failed'}}]");
	log_close(lg);
	assert_int_equal(sync_ok(f), 1);
	get(f, "sP", &s);
	assert_null(s.provider);
	assert_string_equal(s.model, "m2");
	assert_string_equal(s.status, "idle");
	assert_int_equal(s.content_version, 10);
	cat_session_release(&s);
}

#define USER(text) "{'type':'user/message','data':{'text':'" text "'}}"
#define META(json) "{'type':'session/meta','data':" json "}"

static void expect_title(struct fx *f, const char *id, const char *title, bool explicit_, bool pinned)
{
	sync_ok(f);
	struct cat_session s;
	get(f, id, &s);
	if (title)
		assert_string_equal(s.title, title);
	else
		assert_null(s.title);
	assert_int_equal(s.title_explicit, explicit_);
	assert_int_equal(s.pinned, pinned);
	cat_session_release(&s);
}

static void test_titles_and_pins(void **state)
{
	struct fx *f = *state;
	char long_prompt[400] = "   ";
	for (int i = 0; i < 30; i++)
		strcat(long_prompt, "word\\t\\n ");
	char b1[512];
	snprintf(b1, sizeof b1, "[" USER("%s") "]", long_prompt);
	make(f, "sT", "/p", NULL, (const char *const[]){"[" USER(" \\n\\t ") "]", b1, NULL});
	/* 79 characters of "word word ..." cut at a word end, then the ellipsis. */
	char *want = catalog_title_of("word word word word word word word word word word word word word "
				      "word word word word word word word word word", CATALOG_TITLE_MAX);
	assert_int_equal(strlen(want), 79 + 3);
	assert_string_equal(want + 79, "\xE2\x80\xA6");
	expect_title(f, "sT", want, false, false);
	struct log *lg = open_log(f, "sT");
	add(lg, "[" USER("a later prompt") "]");
	expect_title(f, "sT", want, false, false); /* the FIRST prompt sets it */
	add(lg, "[" META("{'title':'  My \\n  Title  '}") "]");
	expect_title(f, "sT", "My Title", true, false);
	add(lg, "[" META("{'pinned':true}") "," USER("another") "]");
	expect_title(f, "sT", "My Title", true, true); /* a pin leaves the title */
	add(lg, "[" META("{'title':null,'pinned':false}") "]");
	expect_title(f, "sT", want, false, false);
	add(lg, "[" META("{'title':'Renamed'}") "," META("{'title':'  '}") "]");
	expect_title(f, "sT", want, false, false); /* a blank title is no title */
	log_close(lg);
	free(want);
	make(f, "sN", "/p", NULL, (const char *const[]){"[{'type':'turn/start','turn':'t'}]", NULL});
	expect_title(f, "sN", NULL, false, false);
}

static void title_is(const char *in, size_t max, const char *want)
{
	char *t = catalog_title_of(in, max);
	assert_string_equal(t, want);
	free(t);
}

static size_t cps(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

static void test_title_of(void **state)
{
	(void)state;
	title_is("  hello \t\n  world  ", 80, "hello world");
	title_is("a\x01" "b\x7f c\x1b[0m", 80, "ab c[0m");
	title_is("\xE3\x80\x80" "x\xE3\x80\x80\xC2\xA0y", 80, "x y"); /* U+3000, U+00A0 */
	title_is("", 80, "");
	title_is(" \t\n", 80, "");
	title_is("ab\xE2\x80\xAE" "cd", 80, "abcd"); /* a bidi override is dropped */
	title_is("abcdef", 6, "abcdef");
	title_is("abcdefg", 6, "abcde\xE2\x80\xA6");
	title_is("abcd efgh", 6, "abcd\xE2\x80\xA6"); /* no space before the ellipsis */
	char big[1024] = "";
	for (int i = 0; i < 100; i++)
		strcat(big, "x");
	char *t = catalog_title_of(big, CATALOG_TITLE_MAX);
	assert_int_equal(cps(t), CATALOG_TITLE_MAX);
	assert_int_equal(strlen(t), 79 + 3);
	free(t);
	big[80] = '\0';
	title_is(big, CATALOG_TITLE_MAX, big); /* exactly the maximum: not cut */
	/* CJK: 3 bytes a character; emoji: 4. Cut on character boundaries. */
	big[0] = '\0';
	for (int i = 0; i < 100; i++)
		strcat(big, "\xE6\xBC\xA2"); /* 漢 */
	t = catalog_title_of(big, CATALOG_TITLE_MAX);
	assert_int_equal(cps(t), 80);
	assert_int_equal(strlen(t), 79 * 3 + 3);
	assert_memory_equal(t, big, 79 * 3);
	assert_string_equal(t + 79 * 3, "\xE2\x80\xA6");
	free(t);
	big[0] = '\0';
	for (int i = 0; i < 100; i++)
		strcat(big, "\xF0\x9F\x98\x80"); /* 😀 */
	t = catalog_title_of(big, CATALOG_TITLE_MAX);
	assert_int_equal(cps(t), 80);
	assert_int_equal(strlen(t), 79 * 4 + 3);
	assert_memory_equal(t, big, 79 * 4);
	free(t);
	title_is("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 ok", 80,
		 "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 ok");
	title_is("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xA7\xE3\x81\x99", 4,
		 "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE2\x80\xA6"); /* 日本語… */
	title_is("a\xFF" "b", 80, "ab"); /* stray bytes are dropped */
}

/* ---- statuses ---- */

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static uint8_t *slurp(const char *path, size_t *n)
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

static void expect_status(struct fx *f, const char *id, const char *status, const char *err_part)
{
	struct cat_session s;
	get(f, id, &s);
	assert_string_equal(s.status, status);
	if (err_part) {
		assert_non_null(s.error);
		if (!strstr(s.error, err_part))
			fail_msg("%s: error '%s' lacks '%s'", id, s.error, err_part);
	} else {
		assert_null(s.error);
	}
	cat_session_release(&s);
}

static void test_statuses(void **state)
{
	struct fx *f = *state;
	static const char *const two[] = {
		"[{'type':'turn/start','turn':'t1'}," USER("first words") "]",
		"[{'type':'turn/end','turn':'t1','data':{'outcome':'completed'}}]", NULL};
	make(f, "sIdle", "/p", NULL, two);
	make(f, "sOpen", "/p", NULL, (const char *const[]){two[0], NULL});
	make(f, "sBad", "/p", NULL, two);
	make(f, "sUns", "/p/u", NULL, two);
	make(f, "sTorn", "/p", NULL, two);
	make(f, "sEmpty", "/p", NULL, two);
	make(f, "sOther", "/p", NULL, two);
	char p[512];
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
	char q[512];
	path_of(f, STORE_SESSIONS, "/p", "sIdle", LOG_FILE, q, sizeof q);
	b = slurp(q, &n);
	path_of(f, STORE_SESSIONS, "/p", "sOther", LOG_FILE, p, sizeof p);
	write_file(p, b, n);
	free(b);

	assert_int_equal(sync_ok(f), 7);
	expect_status(f, "sIdle", "idle", NULL);
	expect_status(f, "sOpen", "interrupted", NULL);
	expect_status(f, "sBad", "corrupt", "frame at offset");
	expect_status(f, "sUns", "unsupported", "format 2");
	expect_status(f, "sTorn", "idle", NULL); /* a torn tail is no damage */
	expect_status(f, "sEmpty", "corrupt", "empty");
	expect_status(f, "sOther", "corrupt", "sIdle");
	struct cat_session s;
	get(f, "sBad", &s); /* what precedes the damage is still projected */
	assert_string_equal(s.title, "first words");
	assert_string_equal(s.cwd, "/p");
	assert_int_equal(s.turns, 1);
	cat_session_release(&s);
	/* One bad log never breaks a list: each is listed with its status. */
	list(f, false, false, NULL, 0, "sTorn sBad sOpen sOther sIdle sUns sEmpty");
	list(f, false, false, "/p/u", 0, "sUns"); /* no cwd known: found by its key */
	assert_int_equal(sync_ok(f), 0);
}

/* ---- listing and reconciliation ---- */

static void test_list_order_and_filters(void **state)
{
	struct fx *f = *state;
	make(f, "a", "/p/x", NULL, (const char *const[]){"[" USER("a") ",{'type':'step/end','turn':'t','t':100}]", NULL});
	make(f, "b", "/p/x", NULL, (const char *const[]){"[{'type':'turn/start','turn':'t','t':300}]", NULL});
	make(f, "c", "/p/y", NULL, (const char *const[]){"[{'type':'turn/start','turn':'t','t':20}]",
							  "[{'type':'session/meta','data':{'pinned':true},'t':200}]", NULL});
	make(f, "d", "/p/x", NULL, (const char *const[]){"[{'type':'turn/start','turn':'t','t':400}]", NULL});
	make(f, "e", "/p/y", NULL, (const char *const[]){"[{'type':'session/meta','data':{'pinned':true},'t':150}]", NULL});
	struct session_ref ref = {"d", "-p-x"};
	int64_t ms = 0;
	struct cerr err;
	assert_int_equal(store_trash(f->st, &ref, &ms, &err), 0);
	assert_true(ms > 0);
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
	struct cat_session s;
	get(f, "d", &s);
	assert_int_equal(s.deleted_at, ms);
	assert_int_equal(s.updated_at, T0 + 400);
	cat_session_release(&s);
	get(f, "a", &s);
	assert_int_equal(s.updated_at, T0 + 100);
	assert_int_equal(s.deleted_at, 0);
	cat_session_release(&s);
}

static void test_sync_lifecycle(void **state)
{
	struct fx *f = *state;
	make(f, "s1", "/p", NULL, (const char *const[]){
		"[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'k1'}}," USER("one") "]", NULL});
	assert_int_equal(sync_ok(f), 1);
	assert_int_equal(sync_ok(f), 0); /* nothing changed */
	struct log *lg = open_log(f, "s1");
	add(lg, "[{'type':'turn/end','turn':'t1','data':{'outcome':'completed'}},"
		" {'type':'turn/start','turn':'t2'}," USER("grown") "]");
	log_close(lg);
	assert_int_equal(sync_ok(f), 1); /* the log grew: re-projected */
	struct cat_session s;
	get(f, "s1", &s);
	assert_int_equal(s.turns, 2);
	assert_string_equal(s.last_prompt, "grown");
	assert_int_equal(s.content_version, 6);
	cat_session_release(&s);
	assert_int_equal(sync_ok(f), 0);
	/* Trash: marked with the ctime the store reported. */
	struct session_ref ref = {"s1", "-p"};
	int64_t ms = 0;
	struct cerr err;
	assert_int_equal(store_trash(f->st, &ref, &ms, &err), 0);
	assert_int_equal(sync_ok(f), 1);
	get(f, "s1", &s);
	assert_int_equal(s.deleted_at, ms);
	assert_string_equal(s.last_prompt, "grown");
	cat_session_release(&s);
	list(f, false, false, NULL, 0, "");
	list(f, false, true, NULL, 0, "s1");
	assert_int_equal(sync_ok(f), 0);
	/* Restored by hand: live again. */
	char from[512], to[512];
	path_of(f, STORE_TRASH, "/p", "s1", NULL, from, sizeof from);
	path_of(f, STORE_SESSIONS, "/p", "s1", NULL, to, sizeof to);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(sync_ok(f), 1);
	get(f, "s1", &s);
	assert_int_equal(s.deleted_at, 0);
	cat_session_release(&s);
	/* Gone for good: the row, its text and its claims are forgotten. */
	nftw(to, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	assert_int_equal(sync_ok(f), 1);
	assert_int_equal(catalog_get(cat(f), "s1", &s, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	list(f, true, false, NULL, 0, "");
	sqlite3 *db = raw_open(f->root);
	char *c = raw_text(db, "SELECT (SELECT count(*) FROM docs) + (SELECT count(*) FROM claims)");
	assert_string_equal(c, "0");
	free(c);
	sqlite3_close(db);
	assert_int_equal(sync_ok(f), 0);
}

/* Append json to lg and project it as the write path does: the header
 * first when this append published the log, then the batch with the new
 * durable watermark. Returns the new content version. */
static uint64_t add_projected(struct fx *f, struct log *lg, const char *key, const char *json)
{
	struct batch b;
	batch_parse(&b, json);
	uint64_t first = log_next_seq(lg), next, ver = 0;
	struct cerr err;
	if (log_append(lg, first, b.evs, b.n, &next, &err) < 0)
		fail_msg("append: %s", err.msg);
	if (first == 1) {
		struct session_ref ref;
		snprintf(ref.id, sizeof ref.id, "%s", log_id(lg));
		snprintf(ref.key, sizeof ref.key, "%s", key);
		size_t n;
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
	struct cat_watermark wm = {true, d.len, d.next_seq, d.dev, d.ino};
	if (catalog_project_batch(cat(f), log_id(lg), first, 0, b.evs, b.n, &wm, &ver, &err) < 0)
		fail_msg("project batch at %llu: %s", (unsigned long long)first, err.msg);
	assert_int_equal(ver, next);
	batch_free(&b);
	return ver;
}

static void expect_wm(struct fx *f, const char *id, uint64_t len, uint64_t seq, ino_t ino)
{
	struct cat_watermark wm;
	struct cerr err;
	assert_int_equal(catalog_get_watermark(cat(f), id, &wm, &err), 0);
	assert_true(wm.known);
	assert_int_equal(wm.len, len);
	assert_int_equal(wm.next_seq, seq);
	assert_int_equal(wm.ino, ino);
}

static void test_project_batch(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "sB", "/p", NULL, &lg, &err), 0);
	assert_int_equal(add_projected(f, lg, "-p", "[{'type':'turn/start','turn':'t1'}," USER("hello batch") "]"), 3);
	assert_int_equal(add_projected(f, lg, "-p", "[{'type':'turn/end','turn':'t1','data':{'outcome':'completed'}}]"), 4);
	struct log_revision d = log_durable(lg);
	struct cat_session s;
	get(f, "sB", &s);
	assert_int_equal(s.content_version, 4);
	assert_int_equal(s.durable_len, d.len);
	assert_int_equal(s.durable_seq, 4);
	assert_string_equal(s.title, "hello batch");
	assert_string_equal(s.status, "idle");
	assert_int_equal(s.turns, 1);
	cat_session_release(&s);
	expect_wm(f, "sB", d.len, 4, d.ino);
	/* Only at content_version == first_seq. */
	struct batch b;
	batch_parse(&b, "[" USER("stale") "]");
	struct cat_watermark wm = {true, d.len, d.next_seq, d.dev, d.ino};
	uint64_t ver = 77;
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
	get(f, "sB", &s);
	assert_int_equal(s.content_version, 4);
	assert_string_equal(s.last_prompt, "hello batch");
	cat_session_release(&s);
	batch_free(&b);
	/* The watermark never moves back on one file; a new file resets it. */
	struct cat_watermark lower = {true, d.len - 1, 3, d.dev, d.ino};
	assert_int_equal(catalog_set_watermark(cat(f), "sB", &lower, &err), 0);
	expect_wm(f, "sB", d.len, 4, d.ino);
	struct cat_watermark other = {true, 10, 2, d.dev, d.ino + 1};
	assert_int_equal(catalog_set_watermark(cat(f), "sB", &other, &err), 0);
	expect_wm(f, "sB", 10, 2, d.ino + 1);
	assert_int_equal(catalog_set_watermark(cat(f), "sB", &wm, &err), 0);
	expect_wm(f, "sB", d.len, 4, d.ino);
	assert_int_equal(sync_ok(f), 0); /* the batches left the file's identity */
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
	make(f, "sC", "/p", NULL, (const char *const[]){
		"[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'sub-1'}}," USER("q") "]",
		"[{'type':'turn/end','turn':'t1','data':{'outcome':'canceled'}},"
		" {'type':'turn/start','turn':'t2','data':{'client_submit_id':'sub-2'}}]", NULL});
	sync_ok(f);
	expect_claim(f, "sub-1", "sC", "t1", "canceled");
	expect_claim(f, "sub-2", "sC", "t2", "open");
	expect_claim(f, "sub-3", NULL, NULL, NULL);
	struct log *lg = open_log(f, "sC");
	add(lg, "[{'type':'turn/end','turn':'t2','data':{'outcome':'completed'}},"
		" {'type':'turn/start','turn':'t3','data':{'client_submit_id':'sub-3'}}]");
	assert_int_equal(sync_ok(f), 1);
	expect_claim(f, "sub-2", "sC", "t2", "completed");
	expect_claim(f, "sub-3", "sC", "t3", "open");
	add(lg, "[{'type':'turn/end','turn':'t3','data':{'outcome':'interrupted'}}]");
	log_close(lg);
	sync_ok(f);
	expect_claim(f, "sub-3", "sC", "t3", "interrupted");
	/* Status override and clear. */
	struct cerr err;
	assert_int_equal(catalog_set_status(cat(f), "sC", "running", &err), 0);
	expect_status(f, "sC", "running", NULL);
	assert_int_equal(sync_ok(f), 0);
	expect_status(f, "sC", "running", NULL); /* a sync keeps the override */
	assert_int_equal(catalog_set_status(cat(f), "sC", "unsaved", &err), 0);
	expect_status(f, "sC", "unsaved", NULL);
	assert_int_equal(catalog_set_status(cat(f), "sC", NULL, &err), 0);
	expect_status(f, "sC", "idle", NULL);
	assert_int_equal(catalog_set_status(cat(f), "nope", "running", &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	assert_int_equal(catalog_set_deleted(cat(f), "nope", 5, &err), -1);
	assert_int_equal(err.cls, CERR_MISSING);
	bool ok = false;
	char *msg = NULL;
	assert_int_equal(catalog_integrity(cat(f), &ok, &msg, &err), 0);
	assert_true(ok);
	assert_string_equal(msg, "ok");
	free(msg);
}

/* ---- rebuild equivalence ---- */

/* Every table as text, rows ordered by key; docids left out. what 0:
 * every column but the watermark, 1: only id and the watermark. */
static char *dump(const char *root, int what)
{
	static const char *const sql[] = {
		"SELECT * FROM sessions ORDER BY id",
		"SELECT session, turn, role, body FROM docs ORDER BY session, turn, role",
		"SELECT * FROM claims ORDER BY client_submit_id"};
	sqlite3 *db = raw_open(root);
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < (what ? 1u : 3u); i++) {
		sqlite3_stmt *q;
		assert_int_equal(sqlite3_prepare_v2(db, sql[i], -1, &q, NULL), SQLITE_OK);
		while (sqlite3_step(q) == SQLITE_ROW) {
			for (int c = 0; c < sqlite3_column_count(q); c++) {
				const char *name = sqlite3_column_name(q, c);
				bool wm = strncmp(name, "wm_", 3) == 0;
				if (what == 0 ? wm : !(wm || strcmp(name, "id") == 0))
					continue;
				const unsigned char *t = sqlite3_column_text(q, c);
				buf_printf(&b, "%s=%s%s%s|", name, t ? "'" : "", t ? (const char *)t : "NULL",
					   t ? "'" : "");
			}
			buf_addc(&b, '\n');
		}
		sqlite3_finalize(q);
		buf_adds(&b, "--\n");
	}
	/* Both full-text indexes agree with the documents. */
	assert_int_equal(sqlite3_exec(db, "INSERT INTO fts_words(fts_words) VALUES('integrity-check');"
					  "INSERT INTO fts_tri(fts_tri) VALUES('integrity-check')",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	return buf_detach(&b, NULL);
}

static void same_dump(const char *a, const char *b)
{
	size_t line = 1;
	const char *p = a, *q = b;
	while (*p && *q) {
		const char *pe = strchr(p, '\n'), *qe = strchr(q, '\n');
		if (pe - p != qe - q || memcmp(p, q, (size_t)(pe - p)) != 0)
			fail_msg("line %zu differs:\nincremental: %.*s\nrebuilt:     %.*s", line,
				 (int)(pe - p), p, (int)(qe - q), q);
		p = pe + 1, q = qe + 1, line++;
	}
	assert_string_equal(p, q);
}

/* Three sessions written batch by batch and projected as they go. */
static void incremental_scenario(struct fx *f)
{
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "sA", "/p/a", J("{'provider':'p1','model':'m1'}"), &lg, &err), 0);
	static const char *const a[] = {
		"[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'ca1'}},"
		" {'type':'user/message','turn':'t1','data':{'text':'Plan the  schema\\nfor the catalog'}}]",
		"[{'type':'assistant/text','turn':'t1','data':{'text':'Sure, the sch'}}]",
		"[{'type':'assistant/text','turn':'t1','data':{'text':'ema has three tables.'}},"
		" {'type':'tool/call','turn':'t1','data':{'call_id':'k1','name':'sh','args':{'cmd':'ls'}}},"
		" {'type':'tool/started','turn':'t1','data':{'call_id':'k1'}}]",
		"[{'type':'tool/result','turn':'t1','data':{'call_id':'k1','status':'ok','output':'created 3 files'}},"
		" {'type':'tool/call','turn':'t1','data':{'call_id':'k2','name':'q','args':{}}}]",
		"[{'type':'tool/result','turn':'t1','data':{'call_id':'k2','status':'ok',"
		"  'output':{'rows':[1,2.5,'x'],'ok':true,'nested':{'a':null}}}}]",
		"[{'type':'tool/call','turn':'t1','data':{'call_id':'k3','name':'touch','args':{}}}]",
		"[{'type':'tool/result','turn':'t1','data':{'call_id':'k3','status':'ok','output':''}}]",
		"[{'type':'turn/end','turn':'t1','data':{'outcome':'completed'}}," META("{'title':'Catalog design'}") "]",
		"[" META("{'pinned':true}") ",{'type':'session/settings','data':{'model':'m2'}},"
		" {'type':'x/future','ign':true,'data':{'a':1}}]",
		"[{'type':'turn/start','turn':'t2','data':{'client_submit_id':'ca2'}},"
		" {'type':'user/message','turn':'t2','data':{'text':'second prompt'}},"
		" {'type':'assistant/reasoning','turn':'t2','data':{'text':'thinking'}}]", NULL};
	for (const char *const *p = a; *p; p++)
		add_projected(f, lg, "-p-a", *p);
	log_close(lg);
	cJSON *fork = J("{'forked_from':{'session':'sA','turn':'t1'}}");
	assert_int_equal(log_create(f->st, "sB", "/p/b", fork, &lg, &err), 0);
	cJSON_Delete(fork);
	add_projected(f, lg, "-p-b", "[{'type':'turn/start','turn':'t1','data':{'client_submit_id':'cb1'}},"
				     " {'type':'user/message','turn':'t1','data':{'text':'fork prompt'}},"
				     " {'type':'assistant/text','turn':'t1','data':{'text':'answer'}}]");
	add_projected(f, lg, "-p-b", "[{'type':'turn/end','turn':'t1','data':{'outcome':'canceled'}}," META("{'title':'Temp'}") "]");
	add_projected(f, lg, "-p-b", "[" META("{'title':null}") ",{'type':'turn/start','turn':'t2'},"
				     " {'type':'user/message','turn':'t2','data':{'text':'two'}},"
				     " {'type':'tool/call','turn':'t2','data':{'call_id':'z','name':'sh','args':[]}},"
				     " {'type':'tool/result','turn':'t2','data':{'call_id':'z','status':'error','output':'boom'}},"
				     " {'type':'turn/end','turn':'t2','data':{'outcome':'failed'}}]");
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
	struct cat_session s;
	get(f, "sA", &s);
	assert_string_equal(s.title, "Catalog design");
	assert_true(s.pinned);
	assert_string_equal(s.model, "m2");
	assert_string_equal(s.status, "interrupted");
	cat_session_release(&s);
	expect_claim(f, "ca1", "sA", "t1", "completed");
	expect_claim(f, "cb1", "sB", "t1", "canceled");
	assert_int_equal(sync_ok(f), 0); /* nothing on disk the projection lacks */
	char *inc = dump(f->root, 0);
	struct cerr err;
	assert_int_equal(catalog_clear(cat(f), &err), 0);
	list(f, true, false, NULL, 0, "");
	assert_int_equal(sync_ok(f), 3);
	char *re = dump(f->root, 0);
	same_dump(inc, re);
	assert_non_null(strstr(re, "Sure, the schema has three tables."));
	free(inc);
	free(re);
}

/* A rebuild keeps what catalog.h promises of the watermark: set from the
 * scan of a log read whole. */
static void test_rebuild_watermark(void **state)
{
	struct fx *f = *state;
	incremental_scenario(f);
	char *inc = dump(f->root, 1);
	struct cerr err;
	assert_int_equal(catalog_clear(cat(f), &err), 0);
	sync_ok(f);
	char *re = dump(f->root, 1);
	same_dump(inc, re);
	free(inc);
	free(re);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
		T(test_file_modes),
		T(test_pragmas_and_schema),
		T(test_newer_schema_refused),
		T(test_two_connections),
		T(test_busy_timeout_waits),
		T(test_busy_beyond_timeout_locked),
		T(test_concurrent_processes),
		T(test_projection_fields),
		T(test_titles_and_pins),
		T(test_title_of),
		T(test_statuses),
		T(test_list_order_and_filters),
		T(test_sync_lifecycle),
		T(test_project_batch),
		T(test_claims_and_status),
		T(test_rebuild_equivalence),
		T(test_rebuild_watermark),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
