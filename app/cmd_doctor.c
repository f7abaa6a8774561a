/* cmd_doctor.c — `cairn doctor [--reindex] [--fix] [--json]`: verify every
 * log (live and trashed) with its durable watermark, report every problem
 * with its class without stopping at the first (one id under two project
 * folders too), report what interrupted creations left and with --fix
 * remove it, check the catalog's integrity, and with --reindex rebuild the
 * catalog from the logs. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/buf.h"
#include "base/strmap.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/catalog.h"
#include "persist/leftover.h"
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/readlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct report {
	cJSON *problems, *notes;
	int worst; /* most severe class seen */
	bool json;
};

/* Returns the problem's --json object (owned by r) for extra fields. */
static cJSON *problem(struct report *r, const char *session, enum cerr_class cls, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	if (session)
		cJSON_AddStringToObject(o, "session", session);
	else
		cJSON_AddNullToObject(o, "session");
	cJSON_AddStringToObject(o, "class", cerr_class_name(cls));
	cJSON_AddStringToObject(o, "message", msg);
	cJSON_AddItemToArray(r->problems, o);
	if (cerr_severity(cls) > cerr_severity((enum cerr_class)r->worst))
		r->worst = (int)cls;
	if (!r->json)
		cli_printf(stdout, "%s: %s: %s\n", session ? session : "index", cerr_class_name(cls), msg);
	return o;
}

static void note(struct report *r, const char *session, const char *what, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "session", session);
	cJSON_AddStringToObject(o, "note", what);
	cJSON_AddStringToObject(o, "message", msg);
	cJSON_AddItemToArray(r->notes, o);
	if (!r->json)
		cli_printf(stdout, "%s: %s: %s\n", session, what, msg);
}

/* The catalog could not be brought up to date (nothing can be written):
 * checked as it is. Not a problem of the logs: they are verified anyway. */
static void behind(struct report *r, const struct cerr *why)
{
	char msg[600];
	snprintf(msg, sizeof msg, "the catalog could not be brought up to date (%s): checked as it is",
		 why->msg);
	note(r, "index", "behind", msg);
}

/* A watermark that is missing or lags the valid frames of a log: a
 * complete, valid frame that has been synced is committed data, so under
 * the session's writer lock a log read whole and valid is synced and its
 * watermark raised to all of it. Reported either way: while it lags, damage
 * above it would pass for a torn tail. */
static void heal(struct report *r, struct store *st, struct catalog *cat,
		 const struct store_entry *e, const struct scan *s)
{
	char msg[700], had[64] = "missing";
	if (s->wm_applied)
		snprintf(had, sizeof had, "%llu bytes", (unsigned long long)s->wm_len);
	struct cerr err;
	struct log *lg = NULL;
	if (e->trash) {
		cerr_set(&err, CERR_USAGE, 0, "the session is in the trash");
	} else if (catalog_readonly(cat)) {
		cerr_set(&err, CERR_IO, 0, "the catalog is open read-only");
	} else {
		struct cat_watermark wm;
		struct scan_opts o = {0};
		if (catalog_get_watermark(cat, e->ref.id, &wm, &err) == 0)
			o = catalog_scan_opts(&wm);
		struct cat_watermark up = {0};
		int rc = log_open_opts(st, e->ref.id, &o, &lg, &err);
		/* Under the lock a writer seen between its log's sync and its
		 * catalog update (what the read above may have caught) is done. */
		const struct scan *now = rc == 0 ? log_scan(lg) : NULL;
		if (now && catalog_get_watermark(cat, e->ref.id, &wm, &err) == 0 && wm.known &&
		    now->head_known && memcmp(wm.head, now->head, SHA256_LEN) == 0 &&
		    wm.rev.len >= now->good_len) {
			log_close(lg);
			return;
		}
		if (rc == 0 && log_settle(lg, &err) == 0) {
			up = catalog_watermark_of(log_durable(lg));
			if (!up.known)
				cerr_set(&err, CERR_IO, 0, "the log changed while it was read");
		}
		if (up.known && catalog_set_watermark(cat, e->ref.id, &up, &err) == 0) {
			snprintf(msg, sizeof msg, "raised from %s to %llu bytes (the log is synced)", had,
				 (unsigned long long)up.rev.len);
			note(r, e->ref.id, "watermark", msg);
			log_close(lg);
			return;
		}
		log_close(lg);
	}
	snprintf(msg, sizeof msg, "%s of %llu valid bytes are known durable: damage above that would "
		 "pass for a torn tail (%s)", had, (unsigned long long)s->good_len, err.msg);
	note(r, e->ref.id, s->wm_applied ? "watermark lags" : "watermark missing", msg);
}

/* What verify saw of one listed log, for comparing copies of one id. */
struct seen {
	bool shared;    /* its id is listed more than once (set before verify) */
	bool valid;     /* ok or torn, holding its own id */
	uint64_t next_seq;
	int64_t last_t; /* the last event's time (0: none) */
};

/* Mark the entries whose id is listed more than once. Copies of one log
 * share its header frame, so the one watermark of that id cannot say which
 * copy it was recorded for: each is read by the structural rules alone. */
static void mark_shared(const struct store_entry *ents, size_t n, struct seen *seen)
{
	struct strmap ids;
	strmap_init(&ids);
	for (size_t i = 0; i < n; i++) {
		size_t j;
		if (strmap_get(&ids, ents[i].ref.id, &j))
			seen[i].shared = seen[j].shared = true;
		else
			strmap_put(&ids, ents[i].ref.id, i);
	}
	strmap_release(&ids);
}

struct blob_ctx {
	struct report *r;
	const char *id;
};

static void blob_bad(void *ctx, const struct blob_ref *ref, uint64_t seq, const struct cerr *err)
{
	struct blob_ctx *b = ctx;
	(void)ref;
	(void)seq;
	problem(b->r, b->id, err->cls, err->msg);
}

/* Every blob the durable events of s name, in the folder where the log
 * was found (one moved meanwhile is checked on the next run). */
static void verify_blobs(struct report *r, struct store *st, const struct store_entry *e,
			 bool trash, const struct scan *s)
{
	struct cerr err;
	int dirfd = store_open_dir(st, &e->ref, trash, &err);
	if (dirfd < 0) {
		if (err.cls != CERR_MISSING)
			problem(r, e->ref.id, err.cls, err.msg);
		return;
	}
	struct blob_ctx b = {r, e->ref.id};
	blob_check_scan(dirfd, s, NULL, blob_bad, &b);
	fs_close_quiet(dirfd);
}

/* Read one session's log the way the store would, and report. */
static void verify(struct report *r, struct store *st, struct catalog *cat,
		   const struct store_entry *e, struct seen *seen)
{
	struct cerr err;
	bool shared = seen->shared;
	memset(seen, 0, sizeof *seen);
	seen->shared = shared;
	/* Listed a moment ago, maybe moved since by rm or restore: found
	 * again wherever it is now, never reported missing for that. */
	bool trash = e->trash;
	struct cat_watermark wm = {0};
	if (shared || (cat && catalog_get_watermark(cat, e->ref.id, &wm, &err) < 0))
		wm.known = false;
	struct scan *s;
	if (readlog_session(st, &e->ref, &trash, &wm, &s, &err) < 0) {
		if (err.cls == CERR_MISSING)
			note(r, e->ref.id, "gone", "removed while doctor ran");
		else
			problem(r, e->ref.id, err.cls, err.msg);
		return;
	}
	seen->next_seq = s->rev.next_seq;
	seen->last_t = s->n_events ? s->events[s->n_events - 1].t : 0;
	char msg[600];
	if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED) {
		snprintf(msg, sizeof msg, "%s%s", s->err.msg,
			 s->status == SCAN_CORRUPT ? " ('cairn repair --salvage' copies the valid prefix)" : "");
		problem(r, e->ref.id, s->err.cls, msg);
	} else {
		seen->valid = true;
		verify_blobs(r, st, e, trash, s);
		if (cat && !shared && s->status == SCAN_OK && scan_wm_lags(s))
			heal(r, st, cat, e, s);
		if (s->status == SCAN_TORN) {
			snprintf(msg, sizeof msg, "%llu bytes of torn tail ('cairn repair' cuts them)",
				 (unsigned long long)(s->rev.len - s->good_len));
			note(r, e->ref.id, "torn", msg);
		}
		if (scan_open_turn(s)) {
			snprintf(msg, sizeof msg, "turn '%s' was interrupted ('cairn repair' closes it)",
				 scan_open_turn(s));
			note(r, e->ref.id, "interrupted", msg);
		}
	}
	scan_free(s);
}

/* Entry indexes by area, id, then project key: copies of one id in one
 * area (necessarily under different project folders) are neighbours. */
static const struct store_entry *sort_ents;

static int cmp_copy(const void *pa, const void *pb)
{
	const struct store_entry *a = &sort_ents[*(const size_t *)pa];
	const struct store_entry *b = &sort_ents[*(const size_t *)pb];
	int c = (int)a->trash - (int)b->trash;
	if (!c)
		c = strcmp(a->ref.id, b->ref.id);
	return c ? c : strcmp(a->ref.key, b->ref.key);
}

/* Does copy a deserve keeping over copy b? *why says what decided it
 * (the rule is report_copies'). */
static bool better_copy(const struct seen *a, const char *akey, const struct seen *b,
			const char *bkey, const char *listed_key, const char **why)
{
	bool al = listed_key && strcmp(akey, listed_key) == 0;
	bool bl = listed_key && strcmp(bkey, listed_key) == 0;
	if (a->valid != b->valid) {
		*why = "the other cannot be read or is damaged";
		return a->valid;
	}
	if (a->next_seq != b->next_seq) {
		*why = "it holds the most events";
		return a->next_seq > b->next_seq;
	}
	if (a->last_t != b->last_t) {
		*why = "it was active last";
		return a->last_t > b->last_t;
	}
	if (al != bl) {
		*why = "the catalog lists it";
		return al;
	}
	*why = "the copies look the same";
	return strcmp(akey, bkey) < 0;
}

static void fmt_time(char *out, size_t n, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (!ms || !gmtime_r(&t, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, n, "never");
}

/* One session id found under several project folders of one area (a
 * folder copied by hand or by a sync tool): the store refuses to pick one
 * (store_resolve fails closed), so report every copy and which to keep.
 * The rule: a readable, valid log beats a damaged one; then the one with
 * more committed events (a copy taken earlier is a prefix of the copy
 * that went on being written); then the later last activity; then the one
 * the catalog lists; then the first by project key. */
static void report_copies(struct report *r, struct catalog *cat, const struct store_entry *ents,
			  const struct seen *seen, const size_t *ix, size_t m)
{
	struct cat_session row = {0};
	struct cerr err;
	const char *listed = cat && catalog_get(cat, ents[ix[0]].ref.id, &row, &err) == 0 ?
			     row.project_key : NULL;
	size_t keep = ix[0];
	const char *why = NULL;
	for (size_t i = 1; i < m; i++) {
		const char *w;
		bool better = better_copy(&seen[ix[i]], ents[ix[i]].ref.key, &seen[keep],
					  ents[keep].ref.key, listed, &w);
		if (better)
			keep = ix[i];
		if (better || !why)
			why = w;
	}
	const char *area = ents[keep].trash ? STORE_TRASH : STORE_SESSIONS;
	const char *id = ents[keep].ref.id;
	struct buf b = BUF_INIT;
	cJSON *copies = cJSON_CreateArray();
	buf_printf(&b, "in %zu project folders:", m);
	for (size_t i = 0; i < m; i++) {
		const struct store_entry *e = &ents[ix[i]];
		char when[32];
		fmt_time(when, sizeof when, seen[ix[i]].last_t);
		char *path = xasprintf("%s/%s/%s", area, e->ref.key, id);
		if (!seen[ix[i]].valid)
			buf_printf(&b, "%s %s (unreadable or damaged)", i ? "," : "", path);
		else
			buf_printf(&b, "%s %s (%llu events, last activity %s)", i ? "," : "", path,
				   (unsigned long long)seen[ix[i]].next_seq, when);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", path);
		cJSON_AddStringToObject(o, "project_key", e->ref.key);
		cJSON_AddBoolToObject(o, "valid", seen[ix[i]].valid);
		cJSON_AddNumberToObject(o, "events", (double)seen[ix[i]].next_seq);
		cJSON_AddNumberToObject(o, "last_activity", (double)seen[ix[i]].last_t);
		cJSON_AddItemToArray(copies, o);
		free(path);
	}
	char *kept = xasprintf("%s/%s/%s", area, ents[keep].ref.key, id);
	buf_printf(&b, "; keep %s (%s) and move the other%s out of the data root", kept, why,
		   m > 2 ? "s" : "");
	cJSON *o = problem(r, id, CERR_CORRUPT, b.p);
	cJSON_AddItemToObject(o, "copies", copies);
	cJSON_AddStringToObject(o, "keep", kept);
	free(kept);
	buf_release(&b);
	cat_session_release(&row);
}

static void find_copies(struct report *r, struct catalog *cat, const struct store_entry *ents,
			const struct seen *seen, size_t n)
{
	size_t *ix = xcalloc(n ? n : 1, sizeof *ix);
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	sort_ents = ents;
	qsort(ix, n, sizeof *ix, cmp_copy);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && ents[ix[j]].trash == ents[ix[i]].trash &&
				strcmp(ents[ix[j]].ref.id, ents[ix[i]].ref.id) == 0;
		     j++)
			;
		if (j - i > 1)
			report_copies(r, cat, ents, seen, ix + i, j - i);
	}
	free(ix);
}

/* Staging files and folders without a log that interrupted creations
 * left; with fix, remove them (leftover.h says why that is safe). */
static void find_leftovers(struct report *r, struct store *st, bool fix)
{
	struct leftover *v = NULL;
	size_t n = 0;
	struct cerr err;
	if (leftover_list(st, &v, &n, &err) < 0) {
		problem(r, NULL, err.cls, err.msg);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct leftover *l = &v[i];
		struct buf b = BUF_INIT;
		buf_printf(&b, "%s/%s/%s: ", l->trash ? STORE_TRASH : STORE_SESSIONS, l->ref.key,
			   l->ref.id);
		if (l->no_log)
			buf_printf(&b, "a folder without a log (not a session)%s",
				   l->staging ? ", with " : "");
		if (l->staging)
			buf_printf(&b, "%zu staging file%s (%llu bytes) of an interrupted creation",
				   l->staging, l->staging == 1 ? "" : "s",
				   (unsigned long long)l->staging_bytes);
		if (l->foreign)
			buf_printf(&b, "; other files in it are left alone");
		bool gone = false;
		if (!fix) {
			buf_printf(&b, " ('cairn doctor --fix' removes %s)",
				   l->staging && !l->no_log ? "them" : "it");
			note(r, l->ref.id, "leftover", b.p);
		} else if (leftover_remove(st, l, &gone, &err) < 0) {
			if (err.cls == CERR_LOCKED)
				note(r, l->ref.id, "leftover", err.msg);
			else
				problem(r, l->ref.id, err.cls, err.msg);
		} else {
			buf_printf(&b, ": removed%s",
				   l->no_log && !gone ? " (the folder is in use again: kept)" : "");
			note(r, l->ref.id, "removed", b.p);
		}
		buf_release(&b);
	}
	free(v);
}

/* Remove index.db with its WAL and shared-memory files (a stale WAL must
 * never be replayed into a fresh database). */
static void drop_index(struct store *st)
{
	fsops->unlinkat(store_root_fd(st), CATALOG_FILE "-wal", 0);
	fsops->unlinkat(store_root_fd(st), CATALOG_FILE "-shm", 0);
	fsops->unlinkat(store_root_fd(st), CATALOG_FILE, 0);
}

/* Rebuild the projection from the logs. The watermarks are not in the
 * logs: they stay in their own table (catalog_clear keeps them), so each
 * log is read with its watermark from the first pass, and a rebuild
 * killed at any instant loses none. */
static int reindex(struct catalog *cat, struct store *st, size_t *projected, struct cerr *err)
{
	return catalog_clear(cat, err) < 0 ? -1 : catalog_sync(cat, st, projected, err);
}

/* A damaged index is not repaired in place: it is rebuilt from scratch,
 * with the watermarks that can still be read from it (written back in
 * one transaction before any log is read). */
static int rebuild(struct catalog **cat, struct store *st, size_t *projected, struct cerr *err)
{
	char **ids = NULL;
	struct cat_watermark *wms = NULL;
	size_t n = 0;
	struct cerr lost;
	catalog_watermarks(*cat, &ids, &wms, &n, &lost);
	catalog_close(*cat);
	*cat = NULL;
	drop_index(st);
	int ret = catalog_open(st, cat, err);
	if (ret == 0 && n > 0) {
		ret = catalog_begin(*cat, err);
		for (size_t i = 0; i < n && ret == 0; i++)
			ret = catalog_set_watermark(*cat, ids[i], &wms[i], err);
		if (ret == 0)
			ret = catalog_commit(*cat, err);
		else
			catalog_rollback(*cat);
	}
	if (ret == 0)
		ret = reindex(*cat, st, projected, err);
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	free(wms);
	return ret;
}

int cmd_doctor(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("doctor");
	bool json = false, re = false, fix = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--reindex") == 0)
			re = true;
		else if (strcmp(argv[i], "--fix") == 0)
			fix = true;
		else
			return cli_usage(me, "unexpected argument '%s'", argv[i]);
	}
	struct report r = {cJSON_CreateArray(), cJSON_CreateArray(), 0, json};
	struct store *st = NULL;
	struct catalog *cat = NULL;
	struct store_entry *ents = NULL;
	size_t n = 0, projected = 0;
	struct cerr err;
	bool integrity_ok = false;
	char *integrity = NULL;
	if (cli_open_store(c, true, &st, &err) < 0) {
		problem(&r, NULL, err.cls, err.msg);
		goto report;
	}
	if (store_list_entries(st, &ents, &n, &err) < 0)
		problem(&r, NULL, err.cls, err.msg);
	struct cerr ro;
	if (catalog_open(st, &cat, &err) < 0) {
		/* With --reindex, an index that cannot be used (another schema,
		 * not a database) is rebuilt from scratch; a busy one is not. */
		if (re && err.cls != CERR_LOCKED) {
			struct cerr first = err;
			drop_index(st);
			if (catalog_open(st, &cat, &err) < 0)
				problem(&r, NULL, err.cls, err.msg);
			else
				note(&r, "index", "rebuilt", first.msg);
		} else if (re) {
			problem(&r, NULL, err.cls, err.msg);
		} else if (catalog_open_ro(st, &cat, &ro) == 0) {
			behind(&r, &err); /* a full disk, a read-only root */
		} else if ((err.sys_errno == EROFS || err.sys_errno == EACCES) &&
			   (ro.cls == CERR_MISSING || ro.cls == CERR_UNSUPPORTED)) {
			/* None, or of another schema, where none can be written:
			 * nothing is wrong that a writable root would not mend,
			 * and sessions and search read the logs meanwhile. */
			char msg[1100];
			snprintf(msg, sizeof msg, "%s; %s: the logs are verified without it", ro.msg,
				 err.msg);
			note(&r, "index", "unusable", msg);
		} else {
			problem(&r, NULL, err.cls, err.msg);
		}
	}
	struct seen *seen = xcalloc(n ? n : 1, sizeof *seen);
	mark_shared(ents, n, seen);
	for (size_t i = 0; i < n; i++)
		verify(&r, st, cat, &ents[i], &seen[i]);
	find_copies(&r, cat, ents, seen, n);
	free(seen);
	find_leftovers(&r, st, fix);
	if (cat) {
		if (re && reindex(cat, st, &projected, &err) < 0)
			problem(&r, NULL, err.cls, err.msg);
		else if (!re && !catalog_readonly(cat) && catalog_sync(cat, st, NULL, &err) < 0)
			behind(&r, &err);
		if (catalog_integrity(cat, &integrity_ok, &integrity, &err) < 0)
			problem(&r, NULL, err.cls, err.msg);
		else if (!integrity_ok && !re)
			problem(&r, NULL, CERR_CORRUPT, integrity);
		if (re && !integrity_ok) {
			note(&r, "index", "rebuilt", integrity ? integrity : "integrity check failed");
			free(integrity);
			integrity = NULL;
			if (rebuild(&cat, st, &projected, &err) < 0 ||
			    catalog_integrity(cat, &integrity_ok, &integrity, &err) < 0)
				problem(&r, NULL, err.cls, err.msg);
		}
	}
report:
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "sessions", (double)n);
		cJSON_AddItemToObject(o, "problems", r.problems);
		cJSON_AddItemToObject(o, "notes", r.notes);
		cJSON_AddStringToObject(o, "integrity_check", integrity ? integrity : "not run");
		cJSON_AddBoolToObject(o, "reindexed", re && cat);
		if (re)
			cJSON_AddNumberToObject(o, "projected", (double)projected);
		cli_print_json(o);
	} else {
		cli_printf(stdout, "index: integrity_check %s\n", integrity ? integrity : "not run");
		if (re && cat)
			cli_printf(stdout, "index: rebuilt from %zu logs\n", projected);
		cli_printf(stdout, "%zu sessions checked, %d problem%s\n", n, cJSON_GetArraySize(r.problems),
				   cJSON_GetArraySize(r.problems) == 1 ? "" : "s");
		cJSON_Delete(r.problems);
		cJSON_Delete(r.notes);
	}
	free(integrity);
	free(ents);
	catalog_close(cat);
	store_close(st);
	return cerr_exit_code((enum cerr_class)r.worst);
}
