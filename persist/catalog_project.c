/* catalog_project.c — the projection: log events applied to a session's
 * row (title, times, status, open turns, claims) and its search documents,
 * from a whole scan or a batch appended to what the row already holds; and
 * the few writes to a row that are not events (status, deletion, forget). */
#include "persist/catalog.h"
#include "persist/catalog_int.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void row_release(struct row *r)
{
	free(r->cwd), free(r->auto_title), free(r->title), free(r->last_prompt);
	free(r->provider), free(r->model), free(r->forked_from), free(r->forked_turn);
	free(r->error), free(r->proj_status);
	cJSON_Delete(r->open_turns);
	for (size_t i = 0; i < r->n_docs; i++) {
		free(r->docs[i].turn);
		free(r->docs[i].key);
		buf_release(&r->docs[i].text);
	}
	free(r->docs);
	strmap_release(&r->doc_at);
	memset(r, 0, sizeof *r);
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = xstrdup_opt(s);
}

static const char *str_field(const cJSON *data, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

#define DOC_MAX (64 * 1024) /* text indexed per event */

static void add_doc(struct row *r, uint64_t seq, const char *turn, const char *role,
		    const char *text)
{
	if (!text || !*text)
		return; /* nothing to index, and no separator: a batch never stores one */
	/* Outside any turn, each event is a document of its own. */
	char *key = *turn ? xasprintf("%s\x1f%s", turn, role) :
			    xasprintf("\x1f%s\x1f%llu", role, (unsigned long long)seq);
	size_t at;
	struct doc *d;
	if (strmap_get(&r->doc_at, key, &at)) {
		d = &r->docs[at];
		free(key);
	} else {
		r->docs = xreallocarray(r->docs, r->n_docs + 1, sizeof *r->docs);
		d = &r->docs[r->n_docs];
		d->turn = xstrdup(turn);
		d->seq = seq;
		d->role = role;
		d->key = key;
		buf_init(&d->text);
		strmap_put(&r->doc_at, d->key, r->n_docs++);
	}
	size_t n = strlen(text);
	if (n > DOC_MAX) {
		n = DOC_MAX;
		while (n && ((unsigned char)text[n] & 0xC0) == 0x80)
			n--; /* whole characters only */
	}
	/* Streamed assistant chunks join as they came; other texts are
	 * separate messages. */
	if (d->text.len && strcmp(role, "assistant") != 0)
		buf_addc(&d->text, '\n');
	buf_add(&d->text, text, n);
}

static void open_turn_remove(struct row *r, const char *turn)
{
	int i = 0;
	for (cJSON *t = r->open_turns->child; t; t = t->next, i++)
		if (cJSON_IsString(t) && strcmp(t->valuestring, turn) == 0) {
			cJSON_DeleteItemFromArray(r->open_turns, i);
			return;
		}
}

static bool turn_open(const struct row *r, const char *turn)
{
	for (const cJSON *t = r->open_turns->child; t; t = t->next)
		if (cJSON_IsString(t) && strcmp(t->valuestring, turn) == 0)
			return true;
	return false;
}

/* Apply one event to the row (and collect its text and claims). */
void row_apply(struct row *r, uint64_t seq, int64_t t, enum vocab_type type, const char *turn,
	       const cJSON *data)
{
	r->next_seq = seq + 1;
	if (t > r->updated_at)
		r->updated_at = t;
	const char *tk = turn ? turn : "";
	switch (type) {
	case VT_UNKNOWN: /* an unknown ignorable event counts, but says nothing */
	case VT_REQUEST_PREPARED: /* these change nothing the catalog keeps */
	case VT_ASSISTANT_REASONING:
	case VT_TOOL_CALL:
	case VT_INTERACTION_REQUEST:
	case VT_INTERACTION_ANSWER:
	case VT_TOOL_STARTED:
	case VT_STEP_END:
	case VT_BRANCH_REWIND:
	case VT_INPUT_QUEUED:
	case VT_INPUT_DEQUEUED:
		break;
	case VT_SESSION_HEADER: {
		set_str(&r->cwd, str_field(data, "cwd"));
		set_str(&r->provider, str_field(data, "provider"));
		set_str(&r->model, str_field(data, "model"));
		int64_t created = 0;
		json_get_int(cJSON_GetObjectItemCaseSensitive(data, "created_at"), -JSON_MAX_SAFE_INT,
			     JSON_MAX_SAFE_INT, &created);
		r->created_at = created;
		const cJSON *fork = cJSON_GetObjectItemCaseSensitive(data, "forked_from");
		set_str(&r->forked_from, str_field(fork, "session"));
		set_str(&r->forked_turn, str_field(fork, "turn"));
		break;
	}
	case VT_SESSION_META: {
		const cJSON *title = cJSON_GetObjectItemCaseSensitive(data, "title");
		if (cJSON_IsString(title)) {
			/* Kept exactly as written (JSON output gives it so;
			 * a terminal listing shows it normalised). One with
			 * nothing to show once normalised counts as none. */
			char *norm = title_of(title->valuestring, 1);
			set_str(&r->title, *norm ? title->valuestring : NULL);
			free(norm);
		} else if (cJSON_IsNull(title)) {
			set_str(&r->title, NULL);
		}
		const cJSON *pin = cJSON_GetObjectItemCaseSensitive(data, "pinned");
		if (cJSON_IsBool(pin))
			r->pinned = cJSON_IsTrue(pin);
		break;
	}
	case VT_SESSION_SETTINGS:
		if (cJSON_GetObjectItemCaseSensitive(data, "provider"))
			set_str(&r->provider, str_field(data, "provider"));
		if (cJSON_GetObjectItemCaseSensitive(data, "model"))
			set_str(&r->model, str_field(data, "model"));
		break;
	case VT_TURN_START: {
		r->turns++;
		open_turn_remove(r, tk);
		cJSON_AddItemToArray(r->open_turns, cJSON_CreateString(tk));
		const char *claim = str_field(data, "client_submit_id");
		if (claim) {
			r->claims = xreallocarray(r->claims, r->n_claims + 1, sizeof *r->claims);
			r->claims[r->n_claims++] = (struct claim){xstrdup(claim), xstrdup(tk), NULL};
		}
		break;
	}
	case VT_TURN_END: {
		open_turn_remove(r, tk);
		const char *outcome = str_field(data, "outcome");
		r->ends = xreallocarray(r->ends, r->n_ends + 1, sizeof *r->ends);
		r->ends[r->n_ends++] = (struct claim){NULL, xstrdup(tk), xstrdup(outcome ? outcome : "")};
		break;
	}
	case VT_USER_MESSAGE: {
		const char *text = str_field(data, "text");
		char *prompt = title_of(text, CATALOG_PREVIEW_MAX);
		if (!r->auto_title && *prompt) {
			char *title = title_of(text, CATALOG_TITLE_MAX);
			set_str(&r->auto_title, title);
			free(title);
		}
		set_str(&r->last_prompt, prompt);
		free(prompt);
		add_doc(r, seq, tk, "user", text);
		break;
	}
	case VT_ASSISTANT_TEXT:
		add_doc(r, seq, tk, "assistant", str_field(data, "text"));
		break;
	case VT_TOOL_RESULT: {
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(data, "output");
		if (cJSON_IsString(out)) {
			add_doc(r, seq, tk, "tool", out->valuestring);
		} else if (out && !cJSON_IsNull(out)) {
			char *s = json_print(out);
			add_doc(r, seq, tk, "tool", s);
			free(s);
		}
		break;
	}
	}
}

void row_release_claims(struct row *r)
{
	for (size_t i = 0; i < r->n_claims; i++)
		free(r->claims[i].id), free(r->claims[i].turn);
	for (size_t i = 0; i < r->n_ends; i++)
		free(r->ends[i].turn), free(r->ends[i].state);
	free(r->claims), free(r->ends);
	r->claims = r->ends = NULL;
	r->n_claims = r->n_ends = 0;
}

/* Run a cached statement with up to three string parameters (NULL: no
 * more parameters). */
static int run_strs(struct catalog *c, const char *sql, const char *p1, const char *p2,
		    const char *p3, const char *what, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, sql, err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, p1);
	if (p2)
		cat_bind_str(st, 2, p2);
	if (p2 && p3)
		cat_bind_str(st, 3, p3);
	int rc = sqlite3_step(st);
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, what);
}

/* Write the row, its new text and claims. replace: the docs and claims of
 * the session are replaced rather than extended. */
static int row_store(struct catalog *c, const struct row *r, bool replace, struct cerr *err)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (replace &&
	    (run_strs(c, "DELETE FROM docs WHERE session = ?1", r->id, NULL, NULL, "clear documents",
		      err) < 0 ||
	     run_strs(c, "DELETE FROM claims WHERE session = ?1", r->id, NULL, NULL, "clear claims",
		      err) < 0))
		return -1;
	char *open = json_print(r->open_turns);
	const char *proj_status = r->proj_status ? r->proj_status :
				  cJSON_GetArraySize(r->open_turns) ? "interrupted" : "idle";
	st = cat_prepare(c,
		"INSERT INTO sessions (id, project_key, cwd, auto_title, title, created_at, updated_at,"
		" turns, last_prompt, provider, model, pinned, deleted_at, proj_status, error,"
		" open_turns, forked_from, forked_turn, content_version, proj_dev, proj_ino, proj_len,"
		" proj_ctime)"
		" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,"
		" ?23)"
		" ON CONFLICT(id) DO UPDATE SET project_key=?2, cwd=?3, auto_title=?4, title=?5,"
		" created_at=?6, updated_at=?7, turns=?8, last_prompt=?9, provider=?10, model=?11,"
		" pinned=?12, deleted_at=?13, proj_status=?14, error=?15, open_turns=?16,"
		" forked_from=?17, forked_turn=?18, content_version=?19, proj_dev=?20, proj_ino=?21,"
		" proj_len=?22, proj_ctime=?23", err);
	if (!st) {
		free(open);
		return -1;
	}
	cat_bind_str(st, 1, r->id);
	cat_bind_str(st, 2, r->key);
	cat_bind_str(st, 3, r->cwd);
	cat_bind_str(st, 4, r->auto_title);
	cat_bind_str(st, 5, r->title);
	sqlite3_bind_int64(st, 6, r->created_at);
	sqlite3_bind_int64(st, 7, r->updated_at);
	sqlite3_bind_int64(st, 8, r->turns);
	cat_bind_str(st, 9, r->last_prompt);
	cat_bind_str(st, 10, r->provider);
	cat_bind_str(st, 11, r->model);
	sqlite3_bind_int(st, 12, r->pinned);
	if (r->deleted_at)
		sqlite3_bind_int64(st, 13, r->deleted_at);
	else
		sqlite3_bind_null(st, 13);
	cat_bind_str(st, 14, proj_status);
	cat_bind_str(st, 15, r->error);
	cat_bind_str(st, 16, open);
	cat_bind_str(st, 17, r->forked_from);
	cat_bind_str(st, 18, r->forked_turn);
	sqlite3_bind_int64(st, 19, (sqlite3_int64)r->next_seq);
	sqlite3_bind_int64(st, 20, (sqlite3_int64)r->dev);
	sqlite3_bind_int64(st, 21, (sqlite3_int64)r->ino);
	sqlite3_bind_int64(st, 22, (sqlite3_int64)r->len);
	sqlite3_bind_int64(st, 23, r->ctime_ns);
	rc = sqlite3_step(st);
	cat_done(c, st);
	free(open);
	if (rc != SQLITE_DONE)
		return cat_fail(c, err, rc, "store session");
	/* Each document's new text, at the cost of that text (catalog_docs.c):
	 * an open turn's waits outside the word index. */
	for (size_t i = 0; i < r->n_docs; i++) {
		const struct doc *d = &r->docs[i];
		if (d->text.len && cat_doc_add(c, r->id, d->turn, d->role, (int64_t)d->seq, d->text.p,
					       d->text.len, turn_open(r, d->turn), err) < 0)
			return -1;
	}
	for (size_t i = 0; i < r->n_claims; i++)
		if (run_strs(c, "INSERT OR REPLACE INTO claims (client_submit_id, session, turn, state)"
				" VALUES (?1, ?2, ?3, 'open')", r->claims[i].id, r->id, r->claims[i].turn,
			     "store claim", err) < 0)
			return -1;
	/* An ended turn's text goes into the word index (unless the turn
	 * started again since), and its claim settles. */
	for (size_t i = 0; i < r->n_ends; i++) {
		const struct claim *e = &r->ends[i];
		if (!turn_open(r, e->turn) && cat_doc_close(c, r->id, e->turn, err) < 0)
			return -1;
		if (run_strs(c, "UPDATE claims SET state = ?3 WHERE session = ?1 AND turn = ?2", r->id,
			     e->turn, e->state, "settle claim", err) < 0)
			return -1;
	}
	return 0;
}

struct project_scan_args {
	const struct session_ref *ref;
	const struct scan *s;
	int64_t deleted_at;
	const struct cat_watermark *wm;
};

static int do_project_scan(struct catalog *c, void *arg, struct cerr *err)
{
	struct project_scan_args *a = arg;
	const struct scan *s = a->s;
	struct row r = {0};
	snprintf(r.id, sizeof r.id, "%s", a->ref->id);
	snprintf(r.key, sizeof r.key, "%s", a->ref->key);
	r.open_turns = cJSON_CreateArray();
	r.deleted_at = a->deleted_at;
	r.dev = s->rev.dev;
	r.ino = s->rev.ino;
	r.len = s->rev.len;
	r.ctime_ns = s->ctime_ns;
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		row_apply(&r, ev->seq, ev->t, ev->vtype, ev->turn, ev->data);
	}
	if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED) {
		set_str(&r.proj_status, scan_status_name(s->status));
		set_str(&r.error, s->err.msg);
	}
	r.next_seq = s->rev.next_seq;
	int ret = row_store(c, &r, true, err);
	if (ret == 0 && (s->status == SCAN_OK || s->status == SCAN_TORN)) {
		/* What was read whole and valid up to good_len is durable on
		 * disk now or was acknowledged earlier; the caller passes the
		 * watermark it can vouch for. */
		ret = cat_write_watermark(c, r.id, a->wm, err);
	}
	row_release_claims(&r);
	row_release(&r);
	return ret;
}

int catalog_project_scan(struct catalog *c, const struct session_ref *ref, const struct scan *s,
			 int64_t deleted_at, const struct cat_watermark *wm, struct cerr *err)
{
	struct project_scan_args a = {ref, s, deleted_at, wm};
	return cat_in_tx(c, err, do_project_scan, &a);
}

/* Load the projection state of a row for incremental updates. */
int row_load(struct catalog *c, const char *id, struct row *r, bool *found, struct cerr *err)
{
	memset(r, 0, sizeof *r);
	*found = false;
	sqlite3_stmt *st = cat_prepare(c,
		"SELECT project_key, cwd, auto_title, title, created_at, updated_at, turns, last_prompt,"
		" provider, model, pinned, deleted_at, proj_status, error, open_turns, forked_from,"
		" forked_turn, content_version, proj_dev, proj_ino, proj_len, proj_ctime FROM sessions"
		" WHERE id = ?1",
		err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*found = true;
		snprintf(r->id, sizeof r->id, "%s", id);
		snprintf(r->key, sizeof r->key, "%s", (const char *)sqlite3_column_text(st, 0));
		r->cwd = cat_col_str(st, 1);
		r->auto_title = cat_col_str(st, 2);
		r->title = cat_col_str(st, 3);
		r->created_at = sqlite3_column_int64(st, 4);
		r->updated_at = sqlite3_column_int64(st, 5);
		r->turns = sqlite3_column_int64(st, 6);
		r->last_prompt = cat_col_str(st, 7);
		r->provider = cat_col_str(st, 8);
		r->model = cat_col_str(st, 9);
		r->pinned = sqlite3_column_int(st, 10) != 0;
		r->deleted_at = sqlite3_column_int64(st, 11);
		char *ps = cat_col_str(st, 12);
		if (ps && (strcmp(ps, "corrupt") == 0 || strcmp(ps, "unsupported") == 0))
			r->proj_status = ps;
		else
			free(ps);
		r->error = cat_col_str(st, 13);
		const char *open = (const char *)sqlite3_column_text(st, 14);
		r->open_turns = open ? cJSON_Parse(open) : NULL;
		if (!cJSON_IsArray(r->open_turns)) {
			cJSON_Delete(r->open_turns);
			r->open_turns = cJSON_CreateArray();
		}
		r->forked_from = cat_col_str(st, 15);
		r->forked_turn = cat_col_str(st, 16);
		r->next_seq = (uint64_t)sqlite3_column_int64(st, 17);
		r->dev = (dev_t)sqlite3_column_int64(st, 18);
		r->ino = (ino_t)sqlite3_column_int64(st, 19);
		r->len = (uint64_t)sqlite3_column_int64(st, 20);
		r->ctime_ns = sqlite3_column_int64(st, 21);
		rc = SQLITE_DONE;
	}
	cat_done(c, st);
	return rc == SQLITE_DONE ? 0 : cat_fail(c, err, rc, "load session");
}

struct batch_args {
	const char *id;
	uint64_t first_seq;
	int64_t batch_t;
	const struct log_event *evs;
	size_t n;
	const struct cat_watermark *wm;
	uint64_t version;
};

static int do_project_batch(struct catalog *c, void *arg, struct cerr *err)
{
	struct batch_args *a = arg;
	struct row r;
	bool found;
	if (row_load(c, a->id, &r, &found, err) < 0)
		return -1;
	int ret = -1;
	if (!found) {
		cerr_set(err, CERR_MISSING, 0, "catalog has no session '%s'", a->id);
		goto out;
	}
	if (r.next_seq != a->first_seq) {
		cerr_set(err, CERR_CONFLICT, 0, "catalog has session '%s' at version %llu, not %llu",
			 a->id, (unsigned long long)r.next_seq, (unsigned long long)a->first_seq);
		goto out;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct log_event *e = &a->evs[i];
		cJSON *empty = NULL;
		const cJSON *data = e->data ? e->data : (empty = cJSON_CreateObject());
		row_apply(&r, a->first_seq + i, e->t ? e->t : a->batch_t, vocab_type_of(e->type),
			  e->turn, data);
		cJSON_Delete(empty);
	}
	if (a->wm && a->wm->known) {
		r.dev = a->wm->rev.dev;
		r.ino = a->wm->rev.ino;
		r.len = a->wm->rev.len;
		r.ctime_ns = a->wm->ctime_ns;
	} else {
		/* Not durable yet: until catalog_set_durable, any sync reads
		 * the log again rather than trust this projection. */
		r.len = (uint64_t)-1;
	}
	ret = row_store(c, &r, false, err);
	if (ret == 0)
		ret = cat_write_watermark(c, a->id, a->wm, err);
	a->version = r.next_seq;
out:
	row_release_claims(&r);
	row_release(&r);
	return ret;
}

int catalog_project_batch(struct catalog *c, const char *id, uint64_t first_seq, int64_t batch_t,
			  const struct log_event *evs, size_t n, const struct cat_watermark *wm,
			  uint64_t *version, struct cerr *err)
{
	struct batch_args a = {id, first_seq, batch_t, evs, n, wm, 0};
	if (cat_in_tx(c, err, do_project_batch, &a) < 0)
		return -1;
	if (version)
		*version = a.version;
	return 0;
}

/* One-statement updates keyed by session id. */
static int update_one(struct catalog *c, const char *sql, const char *id, const char *text,
		      int64_t num, bool use_num, struct cerr *err)
{
	sqlite3_stmt *st = cat_prepare(c, sql, err);
	if (!st)
		return -1;
	cat_bind_str(st, 1, id);
	if (use_num) {
		if (num)
			sqlite3_bind_int64(st, 2, num);
		else
			sqlite3_bind_null(st, 2);
	} else {
		cat_bind_str(st, 2, text);
	}
	int rc = sqlite3_step(st);
	cat_done(c, st);
	if (rc != SQLITE_DONE)
		return cat_fail(c, err, rc, "update session");
	if (sqlite3_changes(c->db) == 0)
		return cerr_set(err, CERR_MISSING, 0, "catalog has no session '%s'", id);
	return 0;
}

int catalog_set_status(struct catalog *c, const char *id, const char *status, struct cerr *err)
{
	return update_one(c, "UPDATE sessions SET status_override = ?2 WHERE id = ?1", id, status, 0,
			  false, err);
}

int catalog_set_deleted(struct catalog *c, const char *id, int64_t deleted_at, struct cerr *err)
{
	return update_one(c, "UPDATE sessions SET deleted_at = ?2 WHERE id = ?1", id, NULL, deleted_at,
			  true, err);
}

static int do_forget(struct catalog *c, void *arg, struct cerr *err)
{
	static const char *const sql[] = {"DELETE FROM docs WHERE session = ?1",
					  "DELETE FROM claims WHERE session = ?1",
					  "DELETE FROM sessions WHERE id = ?1"};
	for (size_t i = 0; i < 3; i++) {
		sqlite3_stmt *st = cat_prepare(c, sql[i], err);
		if (!st)
			return -1;
		cat_bind_str(st, 1, arg);
		int rc = sqlite3_step(st);
		cat_done(c, st);
		if (rc != SQLITE_DONE)
			return cat_fail(c, err, rc, "forget session");
	}
	return 0;
}

int catalog_forget(struct catalog *c, const char *id, struct cerr *err)
{
	return cat_in_tx(c, err, do_forget, (void *)id);
}

static int do_clear(struct catalog *c, void *arg, struct cerr *err)
{
	/* Not the watermarks: they are not in the logs. */
	return cat_exec(c, "DELETE FROM docs; DELETE FROM claims; DELETE FROM sessions;", err);
}

int catalog_clear(struct catalog *c, struct cerr *err)
{
	return cat_in_tx(c, err, do_clear, NULL);
}
