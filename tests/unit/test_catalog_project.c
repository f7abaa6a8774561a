/* test_catalog_project.c — the catalog's projection of logs
 * (persist/catalog.h) on real files and real SQLite: fields, titles and
 * statuses, incremental batches (projected before and after the log's
 * sync), submit claims, and rebuild equivalence (an incrementally
 * maintained catalog equals a rebuilt one). The fixture is
 * support_catalog.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/buf.h"
#include "persist/catalog.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/lock.h"
#include "persist/log.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_catalog.h"
#include "tests/unit/support_fixture.h"

static int setup(void **state)
{
	return catfx_setup(state, "cairn-test-catalog");
}

/* ---- the projection ---- */

static void same_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_true(a == b);
	else
		assert_string_equal(a, b);
}

/* a and b hold the same session, every field. */
static void same_session(const struct cat_session *a, const struct cat_session *b)
{
	same_str(a->id, b->id);
	same_str(a->project_key, b->project_key);
	same_str(a->cwd, b->cwd);
	same_str(a->title, b->title);
	same_str(a->last_prompt, b->last_prompt);
	same_str(a->provider, b->provider);
	same_str(a->model, b->model);
	same_str(a->status, b->status);
	same_str(a->error, b->error);
	same_str(a->forked_from, b->forked_from);
	same_str(a->forked_turn, b->forked_turn);
	assert_int_equal(a->created_at, b->created_at);
	assert_int_equal(a->updated_at, b->updated_at);
	assert_int_equal(a->deleted_at, b->deleted_at);
	assert_int_equal(a->turns, b->turns);
	assert_int_equal(a->pinned, b->pinned);
	assert_int_equal(a->title_explicit, b->title_explicit);
	assert_int_equal(a->log_idle, b->log_idle);
	assert_int_equal(a->durable_len, b->durable_len);
	assert_int_equal(a->durable_seq, b->durable_seq);
	assert_int_equal(a->content_version, b->content_version);
}

static void test_projection_fills_every_field_from_the_log(void **state)
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
	assert_true(s.created_at > 0 && s.created_at < catfx_t0);
	/* One row decoder: the listing's session is the same, field by field. */
	struct cat_session *v;
	size_t n;
	assert_int_equal(catalog_list(cat(f), false, false, NULL, 0, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	same_session(&v[0], &s);
	cat_sessions_free(v, n);
	cat_session_release(&s);
	scan_free(sc);
	/* Settings may clear the provider; closing the turn makes it idle. */
	append_to(f, "sP", "[{'type':'session/settings','data':{'provider':null}}," END("t2", "failed") "]");
	assert_int_equal(sync_ok(f), 1);
	expect_row(f, "sP", "provider=NULL|model=m2|status=idle|version=10|turns=2");
}

static void test_title_is_first_prompt_cut_and_pins_are_kept(void **state)
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
	/* An explicit title is kept exactly as written. */
	append_sync(f, "sT", "[" META("{'title':'  My \\n  Title  '}") "]");
	expect_row(f, "sT", "title=  My \n  Title  |explicit=1|pinned=0");
	append_sync(f, "sT", "[" META("{'pinned':true}") "," USER("another") "]");
	expect_row(f, "sT", "title=  My \n  Title  |explicit=1|pinned=1|prompt=another");
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

static void test_each_damaged_log_gets_its_status_and_still_lists(void **state)
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
	spit(p, b, n, O_TRUNC);
	free(b);
	/* sTorn: half of a copy of its last frame appended. */
	path_of(f, STORE_SESSIONS, "/p", "sTorn", LOG_FILE, p, sizeof p);
	b = slurp(p, &n);
	struct scan *sc = scan_buffer(b, n);
	const struct scan_frame *last = &sc->frames[sc->n_frames - 1];
	b = realloc(b, n + last->len);
	memcpy(b + n, b + last->offset, last->len / 2);
	spit(p, b, n + last->len / 2, O_TRUNC);
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
	spit(p, frame.p, frame.len, O_TRUNC);
	cJSON_Delete(h);
	buf_release(&line);
	buf_release(&frame);
	/* sEmpty: zero bytes; sOther: holds sIdle's log. */
	path_of(f, STORE_SESSIONS, "/p", "sEmpty", LOG_FILE, p, sizeof p);
	spit(p, "", 0, O_TRUNC);
	path_of(f, STORE_SESSIONS, "/p", "sIdle", LOG_FILE, q, sizeof q);
	b = slurp(q, &n);
	path_of(f, STORE_SESSIONS, "/p", "sOther", LOG_FILE, p, sizeof p);
	spit(p, b, n, O_TRUNC);
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

/* ---- incremental batches, claims ---- */

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
		assert_int_equal(hdr->rev.next_seq, 1);
		if (catalog_project_scan(cat(f), &ref, hdr, 0, NULL, &err) < 0)
			fail_msg("project header: %s", err.msg);
		scan_free(hdr);
		scan_free(all);
		free(bytes);
	}
	struct log_mark d = log_durable(lg);
	assert_int_equal(d.rev.next_seq, next);
	assert_true(d.rev.len > 0);
	struct cat_watermark wm = wm_of(d);
	if (catalog_project_batch(cat(f), log_id(lg), first, 0, b.evs, b.n, &wm, &ver, &err) < 0)
		fail_msg("project batch at %llu: %s", (unsigned long long)first, err.msg);
	assert_int_equal(ver, next);
	batch_free(&b);
	return ver;
}

static void test_projected_batch_matches_a_sync_of_the_log(void **state)
{
	struct fx *f = *state;
	struct log *lg;
	struct cerr err;
	assert_int_equal(log_create(f->st, "sB", "/p", NULL, &lg, &err), 0);
	assert_int_equal(add_projected(f, lg, "-p", "[" START("t1") "," USER("hello batch") "]"), 3);
	assert_int_equal(add_projected(f, lg, "-p", "[" END("t1", "completed") "]"), 4);
	struct log_mark d = log_durable(lg);
	char w[128];
	snprintf(w, sizeof w, "version=4|wm=%llu/4|title=hello batch|status=idle|turns=1",
		 (unsigned long long)d.rev.len);
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
static void test_batch_projected_before_its_sync_is_reread_until_durable(void **state)
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
	snprintf(w, sizeof w, "version=5|wm=%llu/5", (unsigned long long)wm.rev.len);
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

static void test_submit_claims_follow_their_turn_outcome(void **state)
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
	int lock = hold_lock(f, "sC"); /* running: its writer holds the lock */
	assert_int_equal(catalog_set_status(cat(f), "sC", "running", &err), 0);
	expect_row(f, "sC", "status=running");
	assert_int_equal(sync_ok(f), 0);
	expect_row(f, "sC", "status=running"); /* a sync keeps the override */
	lock_release(lock);
	expect_row(f, "sC", "status=idle"); /* its writer gone: stale, and no turn is open in its log */
	append_sync(f, "sC", "[" START("t4") "]");
	expect_row(f, "sC", "status=interrupted"); /* stale over an open turn */
	append_sync(f, "sC", "[" END("t4", "interrupted") "]");
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
		"SELECT session, turn, role, body, indexed FROM docs ORDER BY session, turn, role",
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
	/* The word index holds exactly the documents marked indexed (the
	 * text of open turns waits outside it). */
	raw_expect(root, "SELECT (SELECT group_concat(docid) FROM (SELECT docid FROM docs WHERE indexed"
			 " ORDER BY docid)) IS (SELECT group_concat(id) FROM (SELECT id FROM"
			 " fts_words_docsize ORDER BY id))", "1");
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

static void test_rebuild_equals_the_incremental_projection(void **state)
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
	/* The rebuild (doctor --reindex): watermarks are not in the logs;
	 * clearing the projection keeps them. */
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
		assert_true(none.known);
		assert_int_equal(none.rev.len, wm[i].rev.len);
		assert_int_equal(none.rev.next_seq, wm[i].rev.next_seq);
		assert_memory_equal(none.head, wm[i].head, SHA256_LEN);
	}
	char *re = dump(f->root);
	same_dump(inc, re);
	assert_non_null(strstr(re, "Sure, the schema has three tables.|indexed=1|"));
	assert_non_null(strstr(re, "body=second prompt|indexed=0|")); /* t2 is open */
	assert_non_null(strstr(re, "body=created 3 files\\n{\"rows\":[1,2.5,\"x\"],\"ok\":true,"
				   "\"nested\":{\"a\":null}}|"));
	free(inc);
	free(re);
	assert_int_equal(sync_ok(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, catfx_teardown)
		T(test_projection_fills_every_field_from_the_log),
		T(test_title_is_first_prompt_cut_and_pins_are_kept),
		T(test_each_damaged_log_gets_its_status_and_still_lists),
		T(test_projected_batch_matches_a_sync_of_the_log),
		T(test_batch_projected_before_its_sync_is_reread_until_durable),
		T(test_submit_claims_follow_their_turn_outcome),
		T(test_rebuild_equals_the_incremental_projection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
