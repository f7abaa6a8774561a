/* cmd_sessions.c — `cairn sessions` (the catalog's list) and `cairn search`
 * (full-text search). Both reconcile the catalog with the session
 * directories first, so sessions written by any means are listed. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/termsafe.h"
#include "base/xalloc.h"
#include "persist/catalog.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* After opening or reconciling the catalog failed (why): the catalog as it
 * is, read only, if it can be read (a full disk, a read-only root); else,
 * when index.db cannot be read at all (none on a read-only root, another
 * schema, damage), the logs themselves through a catalog in memory.
 * 1: as it is, 2: from the logs, -1: the first failure stands. */
static int open_as_is(struct store *st, struct catalog **cat, const struct cerr *why,
		      struct cerr *err)
{
	catalog_close(*cat);
	*cat = NULL;
	struct cerr ro, mem;
	if (catalog_open_ro(st, cat, &ro) == 0)
		return 1;
	if (ro.cls == CERR_LOCKED || catalog_open_memory(st, cat, &mem) < 0) {
		*err = *why;
		return -1;
	}
	cli_printf(stderr, "cairn: warning: the catalog could not be used (%s): read from the logs "
			   "instead\n", ro.msg);
	return 2;
}

int cli_open_catalog_nosync(struct cli *c, struct store **st, struct catalog **cat,
			    struct cerr *err)
{
	*st = NULL;
	*cat = NULL;
	if (cli_open_store(c, true, st, err) < 0)
		return -1;
	/* Nothing to bring up to date: read only when writing is refused. */
	if (catalog_open(*st, cat, err) < 0 && open_as_is(*st, cat, err, err) < 0) {
		store_close(*st);
		*st = NULL;
		return -1;
	}
	return 0;
}

int cli_open_catalog(struct cli *c, bool create, struct store **st, struct catalog **cat,
		     struct cerr *err)
{
	*st = NULL;
	*cat = NULL;
	if (cli_open_store(c, create, st, err) < 0)
		return -1;
	if (catalog_open(*st, cat, err) < 0 || catalog_sync(*cat, *st, NULL, err) < 0) {
		int how = open_as_is(*st, cat, err, err);
		if (how < 0) {
			store_close(*st);
			*st = NULL;
			return -1;
		}
		if (how == 1)
			cli_printf(stderr, "cairn: warning: the catalog could not be brought up to date (%s): "
					   "shown as it is\n", err->msg);
	}
	return 0;
}

int cli_parse_limit(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v == 0)
		return -1;
	*out = (size_t)v;
	return 0;
}

static void add_opt_str(cJSON *o, const char *name, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

/* ,"name":"v" (name is a literal key: no escaping). */
static void field_str(struct buf *b, const char *name, const char *v)
{
	buf_adds(b, ",\"");
	buf_adds(b, name);
	buf_adds(b, "\":");
	if (v)
		termsafe_json_string(b, v);
	else
		buf_adds(b, "null");
}

void session_json(struct buf *b, const struct cat_session *s)
{
	/* Written straight into the output: a listing of ten thousand
	 * sessions would spend most of its time building a cJSON tree. The
	 * strings are escaped terminal-safe here (termsafe_json_string), so
	 * the listing needs no second pass. */
	buf_adds(b, "{\"id\":");
	termsafe_json_string(b, s->id);
	field_str(b, "title", s->title);
	field_str(b, "cwd", s->cwd);
	field_str(b, "project_key", s->project_key);
	buf_adds(b, ",\"created_at\":");
	buf_add_int(b, s->created_at);
	buf_adds(b, ",\"updated_at\":");
	buf_add_int(b, s->updated_at);
	buf_adds(b, ",\"turns\":");
	buf_add_int(b, s->turns);
	buf_adds(b, s->pinned ? ",\"pinned\":true" : ",\"pinned\":false");
	field_str(b, "status", s->status);
	buf_adds(b, ",\"deleted_at\":");
	if (s->deleted_at)
		buf_add_int(b, s->deleted_at);
	else
		buf_adds(b, "null");
	field_str(b, "last_prompt", s->last_prompt);
	field_str(b, "provider", s->provider);
	field_str(b, "model", s->model);
	if (s->forked_from) {
		buf_adds(b, ",\"forked_from\":{\"session\":");
		termsafe_json_string(b, s->forked_from);
		field_str(b, "turn", s->forked_turn);
		buf_addc(b, '}');
	} else {
		buf_adds(b, ",\"forked_from\":null");
	}
	buf_adds(b, ",\"next_seq\":");
	buf_add_int(b, (int64_t)s->content_version);
	buf_adds(b, ",\"content_version\":");
	buf_add_int(b, (int64_t)s->content_version);
	field_str(b, "error", s->error);
	buf_addc(b, '}');
}

/* "5s", "3m", "2h", "4d", "7w" ago. */
static void age(char *out, size_t n, int64_t then)
{
	int64_t d = (clock_unix_ms() - then) / 1000;
	if (then <= 0)
		snprintf(out, n, "-");
	else if (d < 60)
		snprintf(out, n, "%llds", (long long)(d < 0 ? 0 : d));
	else if (d < 3600)
		snprintf(out, n, "%lldm", (long long)d / 60);
	else if (d < 86400)
		snprintf(out, n, "%lldh", (long long)d / 3600);
	else if (d < 86400 * 14)
		snprintf(out, n, "%lldd", (long long)d / 86400);
	else
		snprintf(out, n, "%lldw", (long long)d / (86400 * 7));
}

static char *absolute(const char *dir)
{
	if (dir[0] == '/')
		return xstrdup(dir);
	char cwd[PATH_MAX];
	return getcwd(cwd, sizeof cwd) ? xasprintf("%s/%s", cwd, dir) : xstrdup(dir);
}

struct json_list {
	struct buf *b;
	size_t n;
};

static void json_one(const struct cat_session *s, void *ctx)
{
	struct json_list *jl = ctx;
	if (jl->n++)
		buf_addc(jl->b, ',');
	session_json(jl->b, s);
}

int sessions_json(struct catalog *cat, bool all, bool trash, const char *project, size_t limit,
		  struct buf *b, struct cerr *err)
{
	struct json_list jl = {b, 0};
	buf_addc(b, '[');
	if (catalog_list_each(cat, all, trash, project, limit, json_one, &jl, err) < 0)
		return -1;
	buf_adds(b, "]\n");
	return 0;
}

int cmd_sessions(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("sessions");
	bool json = false, all = false, trash = false;
	size_t limit = 0;
	char *project = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--all") == 0)
			all = true;
		else if (strcmp(argv[i], "--trash") == 0)
			trash = true;
		else if (strcmp(argv[i], "--project") == 0 && i + 1 < argc) {
			free(project);
			project = absolute(argv[++i]);
		} else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
			if (cli_parse_limit(argv[++i], &limit) < 0) {
				free(project);
				return cli_usage(me, "--limit needs a positive integer");
			}
		} else {
			free(project);
			return cli_usage(me, "unexpected argument '%s'", argv[i]);
		}
	}
	struct store *st;
	struct catalog *cat;
	struct cerr err;
	struct cat_session *v = NULL;
	size_t n = 0;
	int code = 0;
	if (cli_open_catalog(c, true, &st, &cat, &err) < 0) {
		code = cli_fail(&err);
		goto out;
	}
	if (json) {
		/* Streamed from the query into one buffer, without copies. */
		struct buf b = BUF_INIT;
		if (sessions_json(cat, all, trash, project, limit, &b, &err) < 0)
			code = cli_fail(&err);
		else
			fwrite(b.p, 1, b.len, stdout); /* safe as written: session_json */
		buf_release(&b);
		goto out;
	}
	if (catalog_list(cat, all, trash, project, limit, &v, &n, &err) < 0) {
		code = cli_fail(&err);
		goto out;
	}
	if (n == 0) {
		cli_printf(stdout, "no sessions%s\n", trash ? " in the trash" : "");
	} else {
		for (size_t i = 0; i < n; i++) {
			const struct cat_session *s = &v[i];
			char a[16];
			age(a, sizeof a, s->updated_at);
			/* On a terminal a title is one short line: whitespace
			 * collapsed, controls dropped (--json keeps it exact). */
			char *title = s->title ? title_of(s->title, CATALOG_EXPLICIT_TITLE_MAX)
					       : NULL;
			cli_printf(stdout, "%s %s %4s %3lld %-11s %s%s%s\n", s->id, s->pinned ? "*" : " ", a,
					   (long long)s->turns, s->deleted_at ? "deleted" : s->status,
					   title ? title : "(untitled)", s->cwd ? "  " : "", s->cwd ? s->cwd : "");
			free(title);
		}
	}
out:
	cat_sessions_free(v, n);
	catalog_close(cat);
	store_close(st);
	free(project);
	return code;
}

int cmd_search(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("search");
	bool json = false, all = false;
	size_t limit = 0;
	struct buf q = BUF_INIT;
	bool opts = true;
	for (int i = 1; i < argc; i++) {
		if (opts && strcmp(argv[i], "--") == 0)
			opts = false; /* the rest is query text */
		else if (!opts) {
			if (q.len)
				buf_addc(&q, ' ');
			buf_adds(&q, argv[i]);
		} else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--all") == 0)
			all = true;
		else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
			if (cli_parse_limit(argv[++i], &limit) < 0) {
				buf_release(&q);
				return cli_usage(me, "--limit needs a positive integer");
			}
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			buf_release(&q);
			return cli_usage(me, "unknown option '%s'", argv[i]);
		} else {
			if (q.len)
				buf_addc(&q, ' ');
			buf_adds(&q, argv[i]);
		}
	}
	if (!q.len) {
		buf_release(&q);
		return cli_usage(me, "missing QUERY");
	}
	struct store *st;
	struct catalog *cat;
	struct cerr err;
	struct cat_hit *h = NULL;
	size_t n = 0;
	struct cat_search_info info = {0};
	int code = 0;
	/* Search reads the catalog as every cairn write keeps it, without
	 * walking the directories first (the listing does that). */
	if (cli_open_catalog_nosync(c, &st, &cat, &err) < 0 ||
	    catalog_search(cat, q.p, limit, all, &h, &n, &info, &err) < 0) {
		code = cli_fail(&err);
		goto out;
	}
	if (json) {
		cJSON *top = cJSON_CreateObject();
		cJSON *a = cJSON_AddArrayToObject(top, "hits");
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "session", h[i].session);
			cJSON_AddStringToObject(o, "turn", h[i].turn);
			cJSON_AddStringToObject(o, "role", h[i].role);
			cJSON_AddStringToObject(o, "snippet", h[i].snippet ? h[i].snippet : "");
			add_opt_str(o, "title", h[i].title);
			cJSON_AddNumberToObject(o, "updated_at", (double)h[i].updated_at);
			cJSON_AddItemToArray(a, o);
		}
		cJSON_AddBoolToObject(top, "partial", info.partial);
		cJSON_AddNumberToObject(top, "searched", (double)info.searched);
		cJSON_AddNumberToObject(top, "messages", (double)info.messages);
		cli_print_json(top);
	} else {
		if (n == 0)
			cli_printf(stdout, "no matches\n");
		for (size_t i = 0; i < n; i++)
			cli_printf(stdout, "%s %s %s: %s\n", h[i].session, *h[i].turn ? h[i].turn : "-", h[i].role,
					   h[i].snippet ? h[i].snippet : "");
		if (info.partial)
			cli_printf(stdout, "searched the newest %lld of %lld messages; fewer or rarer"
					   " words search further\n",
				   (long long)info.searched, (long long)info.messages);
	}
out:
	cat_hits_free(h, n);
	catalog_close(cat);
	store_close(st);
	buf_release(&q);
	return code;
}
