/* cmd_doctor.c — `cairn doctor [--reindex] [--json]`: verify every log
 * (live and trashed) with its durable watermark, report every problem with
 * its class without stopping at the first, check the catalog's integrity,
 * and with --reindex rebuild the catalog from the logs. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/fsops.h"
#include "persist/safefs.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

struct report {
	cJSON *problems, *notes;
	int worst; /* most severe class seen */
	bool json;
};

static void problem(struct report *r, const char *session, enum cerr_class cls, const char *msg)
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

/* Read one session's log the way the store would, and report. */
static void verify(struct report *r, struct store *st, struct catalog *cat,
		   const struct store_entry *e)
{
	struct cerr err;
	const char *area = e->trash ? STORE_TRASH : STORE_SESSIONS;
	int areafd = safefs_opendir(store_root_fd(st), area, false, NULL, &err);
	int keyfd = areafd < 0 ? -1 : safefs_opendir(areafd, e->ref.key, false, NULL, &err);
	int dirfd = keyfd < 0 ? -1 : safefs_opendir(keyfd, e->ref.id, false, NULL, &err);
	int fd = dirfd < 0 ? -1 : safefs_openfile(dirfd, LOG_FILE, O_RDONLY, &err);
	fs_close_quiet(dirfd);
	fs_close_quiet(keyfd);
	fs_close_quiet(areafd);
	if (fd < 0) {
		problem(r, e->ref.id, err.cls, err.msg);
		return;
	}
	struct cat_watermark wm;
	struct scan_opts o = {0};
	if (cat && catalog_get_watermark(cat, e->ref.id, &wm, &err) == 0 && wm.known)
		o = (struct scan_opts){true, wm.len, wm.next_seq, wm.dev, wm.ino};
	struct scan *s;
	if (scan_fd_opts(fd, &o, &s, &err) < 0) {
		fs_close_quiet(fd);
		problem(r, e->ref.id, err.cls, err.msg);
		return;
	}
	fs_close_quiet(fd);
	char msg[600];
	if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED) {
		snprintf(msg, sizeof msg, "%s%s", s->err.msg,
			 s->status == SCAN_CORRUPT ? " ('cairn repair --salvage' copies the valid prefix)" : "");
		problem(r, e->ref.id, s->err.cls, msg);
	} else if (s->id && strcmp(s->id, e->ref.id) != 0) {
		snprintf(msg, sizeof msg, "log holds session '%s'", s->id);
		problem(r, e->ref.id, CERR_CORRUPT, msg);
	} else {
		if (s->status == SCAN_TORN) {
			snprintf(msg, sizeof msg, "%llu bytes of torn tail ('cairn repair' cuts them)",
				 (unsigned long long)(s->file_len - s->good_len));
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

/* Remove index.db with its WAL and shared-memory files (a stale WAL must
 * never be replayed into a fresh database). */
static void drop_index(struct store *st)
{
	fsops->unlinkat(store_root_fd(st), CATALOG_FILE "-wal", 0);
	fsops->unlinkat(store_root_fd(st), CATALOG_FILE "-shm", 0);
	fsops->unlinkat(store_root_fd(st), CATALOG_FILE, 0);
}

/* Watermarks are not in the logs: keep them across a rebuild. */
struct saved_wm {
	char *id;
	struct cat_watermark wm;
};

static int reindex(struct catalog *cat, struct store *st, const struct store_entry *ents, size_t n,
		   size_t *projected, struct cerr *err)
{
	struct saved_wm *saved = xcalloc(n ? n : 1, sizeof *saved);
	size_t k = 0;
	int ret = -1;
	for (size_t i = 0; i < n; i++) {
		struct cat_watermark wm;
		struct cerr e;
		if (catalog_get_watermark(cat, ents[i].ref.id, &wm, &e) == 0 && wm.known)
			saved[k++] = (struct saved_wm){xstrdup(ents[i].ref.id), wm};
	}
	if (catalog_begin(cat, err) < 0)
		goto out;
	if (catalog_clear(cat, err) < 0 || catalog_commit(cat, err) < 0)
		goto out;
	if (catalog_sync(cat, st, projected, err) < 0)
		goto out;
	for (size_t i = 0; i < k; i++) {
		struct cerr e;
		catalog_set_watermark(cat, saved[i].id, &saved[i].wm, &e);
	}
	/* Read those logs once more, now with their watermarks: damage below
	 * one is corruption, which the first pass could not tell. */
	if (k && (catalog_reread_watermarked(cat, err) < 0 || catalog_sync(cat, st, NULL, err) < 0))
		goto out;
	ret = 0;
out:
	for (size_t i = 0; i < k; i++)
		free(saved[i].id);
	free(saved);
	return ret;
}

int cmd_doctor(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("doctor");
	bool json = false, re = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--reindex") == 0)
			re = true;
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
		} else if (re || catalog_open_ro(st, &cat, &(struct cerr){0}) < 0) {
			problem(&r, NULL, err.cls, err.msg);
		} else {
			behind(&r, &err); /* a full disk, a read-only root */
		}
	}
	for (size_t i = 0; i < n; i++)
		verify(&r, st, cat, &ents[i]);
	if (cat) {
		if (re && reindex(cat, st, ents, n, &projected, &err) < 0)
			problem(&r, NULL, err.cls, err.msg);
		else if (!re && !catalog_readonly(cat) && catalog_sync(cat, st, NULL, &err) < 0)
			behind(&r, &err);
		if (catalog_integrity(cat, &integrity_ok, &integrity, &err) < 0)
			problem(&r, NULL, err.cls, err.msg);
		else if (!integrity_ok && !re)
			problem(&r, NULL, CERR_CORRUPT, integrity);
		if (re && !integrity_ok) {
			note(&r, "index", "rebuilt", integrity ? integrity : "integrity check failed");
			/* A damaged index is not repaired in place: rebuilt. */
			catalog_close(cat);
			cat = NULL;
			drop_index(st);
			free(integrity);
			integrity = NULL;
			if (catalog_open(st, &cat, &err) < 0 ||
			    reindex(cat, st, ents, n, &projected, &err) < 0 ||
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
