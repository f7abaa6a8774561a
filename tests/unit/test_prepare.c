/* test_prepare.c — prepare (persist/prepare.c): turns with parents and
 * outcomes, the tree (an absent parent_turn is the previous turn/start,
 * null a root, a repeated id its latest start before the reference), the
 * active path (the last turn/start's branch, or where a later
 * branch/rewind points, before the first turn included), the open turn, unmatched tool calls (started
 * or not), queued inputs not yet dequeued, the settings in effect (with a
 * system prompt inline or in a blob) and the event that changes them, the
 * next seq; and load_async / prepare_async on a real libuv loop, which complete
 * on the loop thread, can be canceled before they start, and leave a loop
 * that closes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "base/json.h"
#include "base/sha256.h"
#include "persist/load.h"
#include "persist/load_async.h"
#include "persist/log.h"
#include "persist/prepare.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_logbytes.h"

static struct prepared *prep(const struct logbytes *l)
{
	return prepare_load(load_buffer((const uint8_t *)l->bytes.p, l->bytes.len, NULL));
}

/* The ids along the active path, root first, as "t1 t3" ("" when empty). */
static char *path_ids(const struct prepared *p)
{
	static char b[256];
	b[0] = '\0';
	for (size_t k = 0; k < prepared_path_len(p); k++) {
		const struct prepared_turn *t = prepared_turn(p, prepared_path(p, k));
		snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", k ? " " : "", t->id);
	}
	return b;
}

static void test_turns_parents_path_and_open_turn(void **state)
{
	(void)state;
	struct logbytes l;
	lbytes_init(&l);
	lbytes_event(&l, "turn/start", "t1", "{\"parent_turn\":null}");
	lbytes_event(&l, "turn/end", "t1", "{\"outcome\":\"completed\"}");
	lbytes_commit(&l);
	lbytes_event(&l, "turn/start", "t2", "{\"parent_turn\":\"t1\"}");
	lbytes_event(&l, "turn/end", "t2", "{\"outcome\":\"canceled\"}");
	lbytes_event(&l, "turn/start", "t3", "{\"parent_turn\":\"t1\"}");
	lbytes_commit(&l);
	struct prepared *p = prep(&l);
	assert_int_equal(prepared_n_turns(p), 3);
	/* t2 and t3 are siblings: the path is the last started's branch */
	assert_string_equal(path_ids(p), "t1 t3");
	assert_ptr_equal(prepared_active_leaf(p), prepared_turn(p, 2));
	const struct prepared_turn *t = prepared_turn(p, 1);
	assert_string_equal(t->id, "t2");
	assert_string_equal(t->parent, "t1");
	assert_int_equal(t->parent_index, 0);
	assert_string_equal(t->outcome, "canceled");
	assert_int_equal(t->start, 3);
	assert_int_equal(t->seq, 3);
	assert_int_equal(t->end, 4);
	assert_null(prepared_turn(p, 0)->parent);
	assert_int_equal(prepared_turn(p, 0)->parent_index, PREPARED_NONE);
	assert_string_equal(prepared_open_turn(p)->id, "t3");
	assert_int_equal(prepared_open_turn(p)->end, PREPARED_OPEN);
	assert_null(prepared_open_turn(p)->outcome);
	assert_int_equal(prepared_next_seq(p), 6);
	assert_ptr_equal(prepared_find_turn(p, "t3"), prepared_open_turn(p));
	assert_null(prepared_find_turn(p, "t9"));
	prepared_free(p);

	/* Closing it leaves no open turn; an open older turn is found. */
	lbytes_event(&l, "turn/end", "t3", "{\"outcome\":\"interrupted\"}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_null(prepared_open_turn(p));
	prepared_free(p);
	lbytes_event(&l, "turn/start", "t4", NULL);
	lbytes_event(&l, "turn/start", "t5", NULL);
	lbytes_event(&l, "turn/end", "t5", "{\"outcome\":\"failed\"}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_string_equal(prepared_open_turn(p)->id, "t4");
	assert_string_equal(path_ids(p), "t1 t3 t4 t5");
	prepared_free(p);
	/* A turn id started again is a new turn; the old one is not open. */
	lbytes_event(&l, "turn/end", "t4", "{\"outcome\":\"completed\"}");
	lbytes_event(&l, "turn/start", "t1", "{\"parent_turn\":\"t5\"}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_int_equal(prepared_n_turns(p), 6);
	assert_string_equal(prepared_open_turn(p)->id, "t1");
	assert_string_equal(prepared_open_turn(p)->parent, "t5");
	assert_ptr_equal(prepared_find_turn(p, "t1"), prepared_turn(p, 5));
	assert_string_equal(path_ids(p), "t1 t3 t4 t5 t1");
	prepared_free(p);
	lbytes_release(&l);
}

/* An old log leaves parent_turn out: each turn continues the previous
 * turn/start; null is a root, never the previous turn. */
static void test_absent_parent_is_the_previous_turn_null_a_root(void **state)
{
	(void)state;
	struct logbytes l;
	lbytes_init(&l);
	lbytes_event(&l, "turn/start", "t1", NULL);
	lbytes_event(&l, "turn/start", "t2", "{}");
	lbytes_event(&l, "turn/start", "t3", "{}");
	lbytes_commit(&l);
	struct prepared *p = prep(&l);
	assert_null(prepared_turn(p, 0)->parent); /* the first: no previous turn */
	assert_string_equal(prepared_turn(p, 1)->parent, "t1");
	assert_string_equal(prepared_turn(p, 2)->parent, "t2");
	assert_string_equal(path_ids(p), "t1 t2 t3");
	prepared_free(p);
	lbytes_event(&l, "turn/start", "t4", "{\"parent_turn\":null}");
	lbytes_event(&l, "turn/start", "t5", "{\"parent_turn\":\"t9\"}"); /* never started: a root */
	lbytes_commit(&l);
	p = prep(&l);
	assert_null(prepared_turn(p, 3)->parent);
	assert_int_equal(prepared_turn(p, 3)->parent_index, PREPARED_NONE);
	assert_null(prepared_turn(p, 4)->parent);
	assert_string_equal(path_ids(p), "t5");
	prepared_free(p);
	lbytes_event(&l, "turn/start", "t6", NULL);
	lbytes_commit(&l);
	p = prep(&l);
	assert_string_equal(path_ids(p), "t5 t6");
	prepared_free(p);
	lbytes_release(&l);
}

/* branch/rewind moves the active leaf: to a turn (rewind or checkout),
 * before the first turn (null); a later turn/start moves it again. One
 * without to_turn, or naming a turn not started before it, moves nothing. */
static void test_rewind_and_checkout_move_the_active_leaf(void **state)
{
	(void)state;
	struct logbytes l;
	lbytes_init(&l);
	lbytes_event(&l, "turn/start", "t1", "{\"parent_turn\":null}");
	lbytes_event(&l, "turn/end", "t1", "{\"outcome\":\"completed\"}");
	lbytes_event(&l, "turn/start", "t2", "{\"parent_turn\":\"t1\"}");
	lbytes_event(&l, "turn/end", "t2", "{\"outcome\":\"completed\"}");
	lbytes_event(&l, "branch/rewind", NULL,
		     "{\"to_turn\":\"t1\",\"from_leaf\":\"t2\",\"source_next_seq\":5}");
	lbytes_commit(&l);
	struct prepared *p = prep(&l);
	assert_string_equal(path_ids(p), "t1");
	assert_string_equal(prepared_active_leaf(p)->id, "t1");
	prepared_free(p);
	/* a new turn after the rewind continues t1: a branch */
	lbytes_event(&l, "turn/start", "t3", "{\"parent_turn\":\"t1\"}");
	lbytes_event(&l, "turn/end", "t3", "{\"outcome\":\"completed\"}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_string_equal(path_ids(p), "t1 t3");
	assert_int_equal(prepared_turn(p, 2)->seq, 6);
	prepared_free(p);
	/* checking out the abandoned branch */
	lbytes_event(&l, "branch/rewind", NULL, "{\"to_turn\":\"t2\",\"from_leaf\":\"t3\"}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_string_equal(path_ids(p), "t1 t2");
	prepared_free(p);
	/* moving nothing: no to_turn, a turn never started */
	lbytes_event(&l, "branch/rewind", NULL, "{}");
	lbytes_event(&l, "branch/rewind", NULL, "{\"to_turn\":\"t7\"}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_string_equal(path_ids(p), "t1 t2");
	prepared_free(p);
	/* before the first turn: an empty path, no leaf */
	lbytes_event(&l, "branch/rewind", NULL, "{\"to_turn\":null,\"from_leaf\":\"t2\"}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_int_equal(prepared_path_len(p), 0);
	assert_null(prepared_active_leaf(p));
	assert_int_equal(prepared_n_turns(p), 3); /* nothing is deleted */
	prepared_free(p);
	lbytes_event(&l, "turn/start", "t4", "{\"parent_turn\":null}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_string_equal(path_ids(p), "t4");
	prepared_free(p);
	lbytes_release(&l);
}

/* A foreign log that starts an id again: a name means the latest
 * turn/start with it before the reference, and entries carry that seq. */
static void test_a_repeated_id_means_its_latest_start_before(void **state)
{
	(void)state;
	struct logbytes l;
	lbytes_init(&l);
	lbytes_event(&l, "turn/start", "a", "{\"parent_turn\":null}");   /* seq 1 */
	lbytes_event(&l, "turn/start", "b", "{\"parent_turn\":\"a\"}"); /* seq 2: the a at 1 */
	lbytes_event(&l, "turn/start", "a", NULL);                        /* seq 3: after b */
	lbytes_event(&l, "turn/start", "c", "{\"parent_turn\":\"a\"}"); /* seq 4: the a at 3 */
	lbytes_event(&l, "turn/start", "a", "{\"parent_turn\":\"a\"}"); /* seq 5: the a at 3 */
	lbytes_commit(&l);
	struct prepared *p = prep(&l);
	assert_int_equal(prepared_n_turns(p), 5);
	assert_int_equal(prepared_turn(p, 1)->parent_index, 0);
	assert_int_equal(prepared_turn(p, 2)->parent_index, 1);
	assert_int_equal(prepared_turn(p, 3)->parent_index, 2);
	assert_int_equal(prepared_turn(p, 4)->parent_index, 2);
	assert_int_equal(prepared_turn(p, prepared_turn(p, 3)->parent_index)->seq, 3);
	assert_string_equal(path_ids(p), "a b a a");
	assert_int_equal(prepared_active_leaf(p)->seq, 5);
	prepared_free(p);
	/* a rewind to "a" means the a started last (seq 5), not an older one */
	lbytes_event(&l, "branch/rewind", NULL, "{\"to_turn\":\"c\"}");
	lbytes_event(&l, "branch/rewind", NULL, "{\"to_turn\":\"a\"}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_int_equal(prepared_active_leaf(p)->seq, 5);
	assert_int_equal(prepared_path_len(p), 4);
	static const uint64_t seqs[] = {1, 2, 3, 5};
	for (size_t k = 0; k < 4; k++)
		assert_int_equal(prepared_turn(p, prepared_path(p, k))->seq, seqs[k]);
	prepared_free(p);
	lbytes_release(&l);
}

/* A new turn is named t<N+1> over every turn of every branch: N counts the
 * turns, or is the highest t<k> of the log when higher (foreign ids). */
static void test_turn_number_names_no_turn_of_any_branch(void **state)
{
	(void)state;
	struct logbytes l;
	lbytes_init(&l);
	struct prepared *p = prep(&l);
	assert_int_equal(prepared_turn_number(p), 0);
	prepared_free(p);
	lbytes_event(&l, "turn/start", "t1", "{\"parent_turn\":null}");
	lbytes_event(&l, "turn/start", "t2", "{\"parent_turn\":\"t1\"}");
	lbytes_event(&l, "branch/rewind", NULL, "{\"to_turn\":null}");
	lbytes_commit(&l);
	p = prep(&l);
	assert_int_equal(prepared_turn_number(p), 2); /* t2 is off the active path: still taken */
	prepared_free(p);
	lbytes_event(&l, "turn/start", "t7", "{\"parent_turn\":null}");
	lbytes_event(&l, "turn/start", "t07", NULL);
	lbytes_event(&l, "turn/start", "x", NULL);
	lbytes_event(&l, "turn/start", "t99999999999999999999", NULL);
	lbytes_commit(&l);
	p = prep(&l);
	assert_int_equal(prepared_turn_number(p), 7);
	prepared_free(p);
	lbytes_event(&l, "turn/start", "t1", NULL); /* a repeated id counts as a turn */
	lbytes_event(&l, "turn/start", "t1", NULL);
	lbytes_commit(&l);
	p = prep(&l);
	assert_int_equal(prepared_turn_number(p), 8);
	prepared_free(p);
	lbytes_release(&l);
}

static void test_unmatched_calls_and_queued_inputs(void **state)
{
	(void)state;
	struct logbytes l;
	lbytes_init(&l);
	lbytes_event(&l, "turn/start", "t1", NULL);
	lbytes_event(&l, "tool/call", "t1", "{\"call_id\":\"c1\",\"name\":\"sh\",\"args\":{}}");
	lbytes_event(&l, "tool/started", "t1", "{\"call_id\":\"c1\"}");
	lbytes_event(&l, "tool/result", "t1", "{\"call_id\":\"c1\",\"status\":\"ok\"}");
	lbytes_event(&l, "input/queued", NULL, "{\"input_id\":\"i1\",\"text\":\"one\"}");
	lbytes_event(&l, "input/queued", NULL, "{\"input_id\":\"i2\",\"text\":\"two\"}");
	lbytes_event(&l, "input/queued", NULL, "{\"text\":\"anonymous\"}");
	lbytes_event(&l, "input/queued", NULL, "{\"input_id\":\"i4\",\"text\":\"four\"}");
	lbytes_commit(&l);
	lbytes_event(&l, "input/dequeued", NULL, "{\"input_id\":\"i2\"}");
	lbytes_event(&l, "input/dequeued", NULL, "{}"); /* the oldest: i1 */
	lbytes_event(&l, "input/dequeued", NULL, "{\"input_id\":\"nope\"}");
	lbytes_event(&l, "tool/call", "t1", "{\"call_id\":\"c2\",\"name\":\"read\",\"args\":[]}");
	lbytes_event(&l, "tool/call", "t1", "{\"call_id\":\"c3\",\"name\":\"sh\",\"args\":{}}");
	lbytes_event(&l, "tool/started", "t1", "{\"call_id\":\"c3\"}");
	lbytes_event(&l, "tool/result", "t1", "{\"call_id\":\"c9\",\"status\":\"error\"}");
	lbytes_commit(&l);
	struct prepared *p = prep(&l);
	assert_int_equal(prepared_n_unmatched(p), 2);
	const struct prepared_call *c = prepared_unmatched(p, 0);
	assert_string_equal(c->call_id, "c2");
	assert_string_equal(c->name, "read");
	assert_string_equal(c->turn, "t1");
	assert_false(c->started);
	assert_int_equal(c->seq, 12);
	c = prepared_unmatched(p, 1);
	assert_string_equal(c->call_id, "c3");
	assert_true(c->started);
	assert_int_equal(prepared_n_queued(p), 2);
	assert_null(prepared_queued(p, 0)->input_id);
	assert_string_equal(prepared_queued(p, 0)->text, "anonymous");
	assert_string_equal(prepared_queued(p, 1)->input_id, "i4");
	assert_int_equal(prepared_queued(p, 1)->seq, 8);
	/* The load behind it parses any event on demand. */
	cJSON *e = load_json(prepared_load(p), prepared_queued(p, 1)->event);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "data"), "text")->valuestring,
			    "four");
	cJSON_Delete(e);
	prepared_free(p);
	lbytes_release(&l);
}

/* A log of one header naming provider and model, in its own frame. */
static void header_with(struct logbytes *l, const char *provider, const char *model)
{
	memset(l, 0, sizeof *l);
	char h[256];
	snprintf(h, sizeof h,
		 "{\"format\":1,\"id\":\"" LB_SID "\",\"created_at\":1,\"cwd\":null,"
		 "\"provider\":\"%s\",\"model\":\"%s\"}",
		 provider, model);
	lbytes_event(l, "session/header", NULL, h);
	lbytes_commit(l);
}

static void test_settings_in_effect_are_the_latest_of_each(void **state)
{
	(void)state;
	struct logbytes l;
	header_with(&l, "anthropic", "m1");
	struct prepared *p = prep(&l);
	const struct prepared_settings *s = prepared_settings(p);
	assert_string_equal(s->provider, "anthropic");
	assert_string_equal(s->model, "m1");
	assert_null(s->approval);
	assert_null(s->title);
	prepared_free(p);
	lbytes_event(&l, "session/settings", NULL, "{\"model\":\"m2\",\"approval\":\"ask\"}");
	lbytes_event(&l, "session/meta", NULL, "{\"title\":\"hello\",\"pinned\":true}");
	lbytes_commit(&l);
	lbytes_event(&l, "session/settings", NULL, "{\"provider\":null,\"approval\":\"never\"}");
	lbytes_event(&l, "session/meta", NULL, "{\"pinned\":false}");
	lbytes_commit(&l);
	p = prep(&l);
	s = prepared_settings(p);
	assert_null(s->provider);
	assert_string_equal(s->model, "m2");
	assert_string_equal(s->approval, "never");
	assert_string_equal(s->title, "hello");
	assert_false(s->pinned);
	int64_t v;
	assert_false(prepared_content_version(p, &v));
	prepared_set_content_version(p, 42);
	assert_true(prepared_content_version(p, &v) && v == 42);
	prepared_free(p);
	lbytes_release(&l);
}

/* prep of a log that must read whole. */
static struct prepared *prep_ok(const struct logbytes *l)
{
	struct prepared *p = prep(l);
	assert_int_equal(prepared_scan(p)->status, SCAN_OK);
	return p;
}

static bool has(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k) != NULL;
}

/* system_prompt is replaced and cleared like the others; a prompt that
 * went to a blob is known by the blob, and prepared_settings_change names
 * only what differs (the blob compared by digest). */
static void test_settings_system_prompt_replaced_cleared_and_compared(void **state)
{
	(void)state;
	struct logbytes l;
	header_with(&l, "openai", "m1");
	lbytes_event(&l, "session/settings", NULL, "{\"system_prompt\":\"be brief\"}");
	lbytes_commit(&l);
	struct prepared *p = prep_ok(&l);
	const struct prepared_settings *s = prepared_settings(p);
	assert_non_null(s->system_prompt);
	assert_string_equal(s->system_prompt, "be brief");
	assert_false(s->system_prompt_in_blob);
	/* nothing differs: nothing to write */
	assert_null(prepared_settings_change(s, "openai", "m1", "be brief"));
	cJSON *c = prepared_settings_change(s, "openai", "m2", "be brief");
	assert_true(has(c, "model") && !has(c, "provider") && !has(c, "system_prompt"));
	cJSON_Delete(c);
	c = prepared_settings_change(s, "anthropic", "m1", "be long");
	assert_string_equal(cJSON_GetObjectItem(c, "provider")->valuestring, "anthropic");
	assert_string_equal(cJSON_GetObjectItem(c, "system_prompt")->valuestring, "be long");
	assert_false(has(c, "model"));
	cJSON_Delete(c);
	/* a new session: every field given */
	c = prepared_settings_change(NULL, "offline", "offline", "p");
	assert_true(has(c, "provider") && has(c, "model") && has(c, "system_prompt"));
	cJSON_Delete(c);
	assert_null(prepared_settings_change(s, NULL, NULL, NULL));
	prepared_free(p);

	/* the whole prompt in a blob, its head and tail inline */
	char whole[] = "a prompt long enough to have gone to a blob";
	uint8_t h[SHA256_LEN];
	char hex[SHA256_HEX_LEN + 1];
	sha256(whole, strlen(whole), h);
	sha256_hex(h, hex);
	char data[512];
	snprintf(data, sizeof data,
		 "{\"model\":\"m3\",\"system_prompt\":\"a prompt [...] blob\","
		 "\"blob\":{\"sha256\":\"%s\",\"size\":%zu}}",
		 hex, strlen(whole));
	lbytes_event(&l, "session/settings", NULL, data);
	lbytes_commit(&l);
	p = prep_ok(&l);
	s = prepared_settings(p);
	assert_string_equal(s->model, "m3");
	assert_true(s->system_prompt_in_blob);
	assert_string_equal(s->system_prompt_blob.sha256, hex);
	assert_int_equal(s->system_prompt_blob.size, strlen(whole));
	assert_null(prepared_settings_change(s, "openai", "m3", whole));
	c = prepared_settings_change(s, "openai", "m3", "a prompt [...] blob");
	assert_true(has(c, "system_prompt")); /* the inline text is not the prompt */
	cJSON_Delete(c);
	prepared_free(p);

	/* a later prompt inline forgets the blob; null clears it; an event
	 * without the field keeps it */
	lbytes_event(&l, "session/settings", NULL, "{\"system_prompt\":\"short\"}");
	lbytes_commit(&l);
	p = prep_ok(&l);
	s = prepared_settings(p);
	assert_string_equal(s->system_prompt, "short");
	assert_false(s->system_prompt_in_blob);
	prepared_free(p);
	lbytes_event(&l, "session/settings", NULL, "{\"system_prompt\":null}");
	lbytes_event(&l, "session/settings", NULL, "{\"model\":\"m4\"}");
	lbytes_commit(&l);
	p = prep_ok(&l);
	s = prepared_settings(p);
	assert_null(s->system_prompt);
	assert_false(s->system_prompt_in_blob);
	assert_string_equal(s->model, "m4");
	assert_string_equal(s->provider, "openai");
	c = prepared_settings_change(s, "openai", "m4", "short");
	assert_true(has(c, "system_prompt") && !has(c, "model"));
	cJSON_Delete(c);
	prepared_free(p);
	lbytes_release(&l);
}

static void test_damaged_log_prepares_its_valid_prefix(void **state)
{
	(void)state;
	struct logbytes l;
	lbytes_init(&l);
	lbytes_event(&l, "turn/start", "t1", NULL);
	lbytes_event(&l, "tool/call", "t1", "{\"call_id\":\"c1\",\"name\":\"sh\",\"args\":{}}");
	lbytes_commit(&l);
	size_t whole = l.bytes.len;
	lbytes_event(&l, "tool/result", "t1", "{\"call_id\":\"c1\",\"status\":\"ok\"}");
	lbytes_event(&l, "turn/end", "t1", "{\"outcome\":\"completed\"}");
	lbytes_commit(&l);
	l.bytes.len = whole + 9; /* the closing frame torn */
	struct prepared *p = prep(&l);
	assert_int_equal(prepared_scan(p)->status, SCAN_TORN);
	assert_string_equal(prepared_open_turn(p)->id, "t1");
	assert_int_equal(prepared_n_unmatched(p), 1);
	assert_int_equal(prepared_next_seq(p), 3);
	prepared_free(p);
	lbytes_release(&l);
}

/* ---- on a loop ---- */

struct done {
	int calls;
	bool canceled;
	bool on_loop_thread;
	struct cerr err;
	bool failed;
	size_t events;
	enum scan_status status;
	char open[16]; /* the open turn's id */
};

static pthread_t loop_thread;

/* What every callback records: that it ran, where, and how. */
static struct done *called(void *ctx, const struct cerr *err, bool canceled)
{
	struct done *d = ctx;
	d->calls++;
	d->canceled = canceled;
	d->on_loop_thread = pthread_equal(pthread_self(), loop_thread);
	if (err) {
		d->failed = true;
		d->err = *err;
	}
	return d;
}

static void on_load(void *ctx, struct load *l, const struct cerr *err, bool canceled)
{
	struct done *d = called(ctx, err, canceled);
	if (l) {
		d->events = load_count(l);
		d->status = load_scan(l)->status;
		load_free(l);
	}
}

static void on_prepare(void *ctx, struct prepared *p, const struct cerr *err, bool canceled)
{
	struct done *d = called(ctx, err, canceled);
	if (p) {
		d->events = load_count(prepared_load(p));
		d->status = prepared_scan(p)->status;
		if (prepared_open_turn(p))
			snprintf(d->open, sizeof d->open, "%s", prepared_open_turn(p)->id);
		prepared_free(p);
	}
}

/* A session LB_SID of 1 + 2 * n events under root, written by the store;
 * its last turn open. */
static void make_session(const char *root, int n)
{
	struct store *st;
	struct log *lg;
	struct cerr err;
	if (store_open(root, true, &st, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(log_create(st, LB_SID, "/w", NULL, &lg, &err), 0);
	uint64_t next = 1; /* after the header */
	for (int i = 0; i < n; i++) {
		char turn[16];
		snprintf(turn, sizeof turn, "t%d", i);
		const char *why;
		cJSON *outcome = json_parse_strict("{\"outcome\":\"completed\"}", 23, &why);
		struct log_event evs[2] = {{.type = "turn/start", .turn = turn},
					   {.type = "turn/end", .turn = turn, .data = outcome}};
		if (log_append(lg, next, evs, i + 1 < n ? 2 : 1, &next, &err) < 0)
			fail_msg("%s", err.msg);
		cJSON_Delete(outcome);
	}
	log_close(lg);
	store_close(st);
}

static void test_async_completes_on_the_loop(void **state)
{
	(void)state;
	char dir[64], root[80];
	assert_int_equal(tmp_root("prep", dir, sizeof dir, root, sizeof root), 0);
	make_session(root, 5);
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	loop_thread = pthread_self();
	struct done a = {0}, b = {0}, c = {0}, m = {0};
	struct cerr err;
	assert_int_equal(load_async(&loop, root, LB_SID, NULL, on_load, &a, NULL, &err), 0);
	assert_int_equal(prepare_async(&loop, root, LB_SID, NULL, on_prepare, &b, NULL, &err), 0);
	assert_int_equal(load_async(&loop, root, "01ARYZ6S41", NULL, on_load, &c, NULL, &err), 0);
	assert_int_equal(load_async(&loop, root, "nosuch", NULL, on_load, &m, NULL, &err), 0);
	assert_int_equal(a.calls + b.calls, 0); /* nothing before the loop runs */
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(a.calls, 1);
	assert_true(a.on_loop_thread);
	assert_false(a.failed || a.canceled);
	assert_int_equal(a.events, 10);
	assert_int_equal(a.status, SCAN_OK);
	assert_int_equal(b.calls, 1);
	assert_true(b.on_loop_thread);
	assert_string_equal(b.open, "t4");
	assert_int_equal(c.events, 10); /* a unique prefix */
	assert_int_equal(m.calls, 1);
	assert_true(m.failed);
	assert_int_equal(m.err.cls, CERR_MISSING);
	assert_int_equal(uv_loop_close(&loop), 0);
	rm_rf(dir);
}

/* load_map_async: the map runs on a worker with the load (a tail, or the
 * whole log), and only what it made comes back, on the loop; a session
 * that cannot be read is never mapped. */
struct mapped {
	size_t events;
	bool tail, on_loop_thread;
	char id[32];
};

static atomic_int maps;

static void *map_load(void *ctx, const char *id, const struct load *l)
{
	(void)ctx;
	atomic_fetch_add(&maps, 1);
	struct mapped *m = calloc(1, sizeof *m);
	m->events = load_count(l);
	m->tail = load_is_tail(l);
	m->on_loop_thread = pthread_equal(pthread_self(), loop_thread);
	snprintf(m->id, sizeof m->id, "%s", id);
	return m;
}

struct map_done {
	struct done d;
	struct mapped *m;
};

static void on_map(void *ctx, void *made, const struct cerr *err, bool canceled)
{
	struct map_done *md = ctx;
	called(&md->d, err, canceled);
	md->m = made;
}

static void test_async_map_runs_on_a_worker(void **state)
{
	(void)state;
	char dir[64], root[80];
	assert_int_equal(tmp_root("prep", dir, sizeof dir, root, sizeof root), 0);
	make_session(root, 5);
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	loop_thread = pthread_self();
	atomic_store(&maps, 0);
	struct map_done whole = {0}, tail = {0}, missing = {0};
	struct cerr err;
	assert_int_equal(load_map_async(&loop, root, LB_SID, 0, map_load, on_map, &whole, NULL, &err), 0);
	assert_int_equal(load_map_async(&loop, root, LB_SID, 3, map_load, on_map, &tail, NULL, &err), 0);
	assert_int_equal(load_map_async(&loop, root, "nosuch", 3, map_load, on_map, &missing, NULL, &err),
			 0);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(whole.d.calls, 1);
	assert_true(whole.d.on_loop_thread);
	assert_non_null(whole.m);
	assert_false(whole.m->on_loop_thread);
	assert_int_equal(whole.m->events, 10);
	assert_false(whole.m->tail);
	assert_string_equal(whole.m->id, LB_SID);
	assert_non_null(tail.m); /* a small log: its tail window holds it all */
	assert_true(tail.m->events >= 3);
	assert_int_equal(missing.d.calls, 1);
	assert_true(missing.d.failed);
	assert_int_equal(missing.d.err.cls, CERR_MISSING);
	assert_null(missing.m);
	assert_int_equal(atomic_load(&maps), 2);
	free(whole.m);
	free(tail.m);
	assert_int_equal(uv_loop_close(&loop), 0);
	rm_rf(dir);
}

/* Workers busy with a blocker: requests queued behind it have not started
 * and can be canceled; their callbacks say so, on the loop. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static int blockers_started;
static pthread_cond_t started_cv = PTHREAD_COND_INITIALIZER;

static void block_work(uv_work_t *w)
{
	(void)w;
	pthread_mutex_lock(&gate);
	blockers_started++;
	pthread_cond_signal(&started_cv);
	pthread_mutex_unlock(&gate);
	usleep(200000);
}

static void block_after(uv_work_t *w, int status)
{
	(void)w, (void)status;
}

static void test_async_cancel_before_start(void **state)
{
	(void)state;
	char dir[64], root[80];
	assert_int_equal(tmp_root("prep", dir, sizeof dir, root, sizeof root), 0);
	make_session(root, 2);
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	loop_thread = pthread_self();
	/* Occupy every worker of the pool (UV_THREADPOOL_SIZE, 4 by default). */
	uv_work_t blockers[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(uv_queue_work(&loop, &blockers[i], block_work, block_after), 0);
	pthread_mutex_lock(&gate);
	while (blockers_started < 4)
		pthread_cond_wait(&started_cv, &gate);
	pthread_mutex_unlock(&gate);
	struct done a = {0}, b = {0};
	struct load_req *ra, *rb;
	struct cerr err;
	assert_int_equal(load_async(&loop, root, LB_SID, NULL, on_load, &a, &ra, &err), 0);
	assert_int_equal(prepare_async(&loop, root, LB_SID, NULL, on_prepare, &b, &rb, &err), 0);
	assert_true(load_async_cancel(ra));
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(a.calls, 1);
	assert_true(a.canceled);
	assert_false(a.failed);
	assert_true(a.on_loop_thread);
	assert_int_equal(b.calls, 1); /* not canceled: it ran */
	assert_false(b.canceled);
	assert_int_equal(b.events, 4);
	assert_int_equal(uv_loop_close(&loop), 0);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_turns_parents_path_and_open_turn),
		cmocka_unit_test(test_absent_parent_is_the_previous_turn_null_a_root),
		cmocka_unit_test(test_rewind_and_checkout_move_the_active_leaf),
		cmocka_unit_test(test_a_repeated_id_means_its_latest_start_before),
		cmocka_unit_test(test_turn_number_names_no_turn_of_any_branch),
		cmocka_unit_test(test_unmatched_calls_and_queued_inputs),
		cmocka_unit_test(test_settings_in_effect_are_the_latest_of_each),
		cmocka_unit_test(test_settings_system_prompt_replaced_cleared_and_compared),
		cmocka_unit_test(test_damaged_log_prepares_its_valid_prefix),
		cmocka_unit_test(test_async_completes_on_the_loop),
		cmocka_unit_test(test_async_map_runs_on_a_worker),
		cmocka_unit_test(test_async_cancel_before_start),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
