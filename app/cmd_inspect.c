/* cmd_inspect.c — `cairn inspect [--json] ID|PATH`: read-only diagnosis. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/xalloc.h"
#include "persist/blob.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Status names for classes that stop before a scan exists. */
static const char *class_status(enum cerr_class cls)
{
	return cls == CERR_MISSING ? "missing" : cls == CERR_USAGE ? "usage" :
	       cls == CERR_CORRUPT ? "corrupt" : "io";
}

/* Where the durable watermark stands: missing (none applies to this
 * log), lagging (below the end of its valid frames: damage above it would
 * pass for a torn tail), or current. */
static const char *wm_state(const struct scan *s)
{
	return !s->wm_applied ? "missing" : scan_wm_lags(s) ? "lagging" : "current";
}

cJSON *inspect_json(const struct scan *s, const char *path)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "status", scan_status_name(s->status));
	if (path)
		cJSON_AddStringToObject(o, "path", path);
	if (s->id)
		cJSON_AddStringToObject(o, "id", s->id);
	else
		cJSON_AddNullToObject(o, "id");
	cJSON_AddNumberToObject(o, "events", (double)(s->n_events - s->n_skipped));
	cJSON_AddNumberToObject(o, "next_seq", (double)s->rev.next_seq);
	cJSON_AddNumberToObject(o, "turns", (double)s->turns);
	const char *open = scan_open_turn(s);
	if (open)
		cJSON_AddStringToObject(o, "open_turn", open);
	else
		cJSON_AddNullToObject(o, "open_turn");
	cJSON_AddNumberToObject(o, "torn_bytes",
				(double)(s->status == SCAN_TORN ? s->rev.len - s->good_len : 0));
	cJSON_AddNumberToObject(o, "file_bytes", (double)s->rev.len);
	cJSON *wm = cJSON_AddObjectToObject(o, "watermark");
	cJSON_AddStringToObject(wm, "state", wm_state(s));
	if (s->wm_applied)
		cJSON_AddNumberToObject(wm, "bytes", (double)s->wm_len);
	else
		cJSON_AddNullToObject(wm, "bytes");
	cJSON *calls = cJSON_AddArrayToObject(o, "unmatched_tool_calls");
	for (size_t i = 0; i < s->n_calls; i++)
		if (!s->calls[i].resulted)
			cJSON_AddItemToArray(calls, cJSON_CreateString(s->calls[i].call_id));
	if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED) {
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(e, "class", cerr_class_name(s->err.cls));
		cJSON_AddStringToObject(e, "message", s->err.msg);
	}
	return o;
}

/* The blobs the durable events name, checked: {"named": n, "bad":
 * [{"sha256","seq","class","message"}]}. */
struct blob_report {
	size_t named, bad;
	cJSON *list;
	enum cerr_class worst; /* CERR_OK when every blob checked out */
};

static void blob_problem(struct blob_report *b, const struct cerr *err, cJSON *o)
{
	cJSON_AddStringToObject(o, "class", cerr_class_name(err->cls));
	cJSON_AddStringToObject(o, "message", err->msg);
	cJSON_AddItemToArray(b->list, o);
	if (cerr_severity(err->cls) > cerr_severity(b->worst))
		b->worst = err->cls;
}

static void blob_bad(void *ctx, const struct blob_ref *ref, uint64_t seq, const struct cerr *err)
{
	struct blob_report *b = ctx;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sha256", ref->sha256);
	cJSON_AddNumberToObject(o, "seq", (double)seq);
	blob_problem(b, err, o);
}

/* Check the blobs of the log arg names (its folder cannot be opened: that
 * one problem). */
static void check_blobs(struct cli *c, const char *arg, const struct scan *s,
			struct blob_report *b)
{
	struct cerr err;
	int dirfd = -1;
	b->list = cJSON_CreateArray();
	if (cli_session_dir(c, arg, &dirfd, &err) < 0) {
		blob_problem(b, &err, cJSON_CreateObject());
		b->bad = 1;
		return;
	}
	b->bad = blob_check_scan(dirfd, s, &b->named, blob_bad, b);
	close(dirfd);
}

int cmd_inspect(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("inspect");
	bool json = false;
	const char *arg = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage(me, "unknown option '%s'", argv[i]);
		else if (arg)
			return cli_usage(me, "one ID or PATH only");
		else
			arg = argv[i];
	}
	if (!arg)
		return cli_usage(me, "missing ID or PATH");
	struct scan *s;
	char *path = NULL;
	struct cerr err;
	if (cli_read_log(c, arg, &s, &path, &err) < 0) {
		if (json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "status", class_status(err.cls));
			cJSON_AddNullToObject(o, "id");
			cJSON_AddNumberToObject(o, "events", 0);
			cJSON_AddNumberToObject(o, "next_seq", 0);
			cJSON_AddNumberToObject(o, "turns", 0);
			cJSON_AddNullToObject(o, "open_turn");
			cJSON_AddNumberToObject(o, "torn_bytes", 0);
			cJSON_AddArrayToObject(o, "unmatched_tool_calls");
			cJSON *e = cJSON_AddObjectToObject(o, "error");
			cJSON_AddStringToObject(e, "class", cerr_class_name(err.cls));
			cJSON_AddStringToObject(e, "message", err.msg);
			cli_print_json(o);
			return cerr_exit_code(err.cls);
		}
		return cli_fail(&err);
	}
	struct blob_report blobs = {0};
	check_blobs(c, arg, s, &blobs);
	enum cerr_class worst = scan_class(s);
	if (cerr_severity(blobs.worst) > cerr_severity(worst))
		worst = blobs.worst;
	int code = cerr_exit_code(worst);
	if (json) {
		cJSON *o = inspect_json(s, path);
		cJSON *bo = cJSON_AddObjectToObject(o, "blobs");
		cJSON_AddNumberToObject(bo, "named", (double)blobs.named);
		cJSON_AddItemToObject(bo, "bad", blobs.list);
		blobs.list = NULL;
		cli_print_json(o);
	} else {
		cli_printf(stdout, "path: %s\n", path);
		cli_printf(stdout, "id: %s\n", s->id ? s->id : "-");
		cli_printf(stdout, "status: %s\n", scan_status_name(s->status));
		if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED)
			cli_printf(stdout, "error: %s: %s\n", cerr_class_name(s->err.cls), s->err.msg);
		cli_printf(stdout, "events: %zu\n", s->n_events - s->n_skipped);
		if (s->n_skipped)
			cli_printf(stdout, "skipped: %zu ignorable events of unknown types\n", s->n_skipped);
		cli_printf(stdout, "next_seq: %llu\n", (unsigned long long)s->rev.next_seq);
		cli_printf(stdout, "turns: %zu\n", s->turns);
		cli_printf(stdout, "open_turn: %s\n", scan_open_turn(s) ? scan_open_turn(s) : "-");
		cli_printf(stdout, "bytes: %llu\n", (unsigned long long)s->rev.len);
		if (!s->wm_applied)
			cli_printf(stdout, "watermark: missing (a writer of this session records it)\n");
		else
			cli_printf(stdout, "watermark: %llu bytes (%s%s)\n", (unsigned long long)s->wm_len,
				   wm_state(s), scan_wm_lags(s) ? ": a writer of this session raises it" : "");
		if (s->status == SCAN_TORN)
			cli_printf(stdout, "torn_bytes: %llu (run 'cairn repair' to cut them)\n",
					   (unsigned long long)(s->rev.len - s->good_len));
		cli_printf(stdout, "unmatched_tool_calls:");
		for (size_t i = 0; i < s->n_calls; i++)
			if (!s->calls[i].resulted)
				cli_printf(stdout, " %s", s->calls[i].call_id);
		cli_printf(stdout, "\n");
		cli_printf(stdout, "blobs: %zu named, %zu bad\n", blobs.named, blobs.bad);
		for (const cJSON *b = blobs.list->child; b; b = b->next)
			cli_printf(stdout, "error: %s: %s\n",
				   cJSON_GetObjectItemCaseSensitive(b, "class")->valuestring,
				   cJSON_GetObjectItemCaseSensitive(b, "message")->valuestring);
		if (s->status == SCAN_CORRUPT)
			cli_printf(stdout, "hint: 'cairn repair --salvage %s' copies the valid prefix "
					   "into a new session\n", arg);
	}
	cJSON_Delete(blobs.list);
	scan_free(s);
	free(path);
	return code;
}
