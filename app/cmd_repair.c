/* cmd_repair.c — `cairn repair [--json] [--salvage] ID|PATH`.
 * repair: cut a torn tail and close interrupted turns (appends only).
 * --salvage: copy the longest valid prefix of a corrupt log into a new
 * session, leaving the original untouched. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/log.h"
#include "persist/repair.h"
#include "persist/vocab.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Open for writing with the catalog's watermark; *sid gets the session id
 * when the log is under the root (caller frees). */
static int open_for_write(struct cli *c, const char *arg, struct store **st, struct log **lg,
			  char **sid, struct cerr *err)
{
	struct cat_watermark cw;
	struct scan_opts wm;
	*sid = NULL;
	if (cli_is_path(arg)) {
		struct cerr ignore;
		if (cli_open_store(c, false, st, &ignore) == 0)
			*sid = store_session_of_path(*st, arg);
		cli_watermark(*st, *sid, &cw);
		wm = catalog_scan_opts(&cw);
		return log_open_path_opts(arg, &wm, lg, err);
	}
	struct session_ref ref;
	if (cli_open_store(c, false, st, err) < 0) {
		if (err->cls == CERR_MISSING)
			cerr_set(err, CERR_MISSING, 0, "no session '%s'", arg);
		return -1;
	}
	if (store_resolve(*st, arg, &ref, err) < 0)
		return -1;
	*sid = xstrdup(ref.id);
	cli_watermark(*st, *sid, &cw);
		wm = catalog_scan_opts(&cw);
	return log_open_opts(*st, ref.id, &wm, lg, err);
}

static void print_report(const struct repair_report *r, const char *id, const char *path,
			 bool behind, bool json)
{
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", id);
		cJSON_AddStringToObject(o, "path", path);
		cJSON_AddStringToObject(o, "status",
					r->cut_bytes || r->appended || r->blobs_removed ? "repaired"
											  : "unchanged");
		cJSON_AddNumberToObject(o, "cut_bytes", (double)r->cut_bytes);
		cJSON_AddNumberToObject(o, "blobs_removed", (double)r->blobs_removed);
		cJSON_AddItemToObject(o, "appended", cJSON_Duplicate(r->closers, 1));
		cJSON_AddNumberToObject(o, "next_seq", (double)r->next_seq);
		cJSON_AddStringToObject(o, "catalog", behind ? "behind" : "current");
		cli_print_json(o);
		return;
	}
	if (!r->cut_bytes && !r->appended && !r->blobs_removed) {
		cli_printf(stdout, "%s: nothing to repair (next seq %llu)\n", path,
			   (unsigned long long)r->next_seq);
		return;
	}
	cli_printf(stdout, "%s:\n", path);
	if (r->cut_bytes)
		cli_printf(stdout, "  cut %llu bytes of torn tail\n", (unsigned long long)r->cut_bytes);
	if (r->blobs_removed)
		cli_printf(stdout, "  removed %zu blob file%s no durable event names\n", r->blobs_removed,
			   r->blobs_removed == 1 ? "" : "s");
	for (const cJSON *e = r->closers ? r->closers->child : NULL; e; e = e->next) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "data");
		const char *type = cJSON_GetObjectItemCaseSensitive(e, "type")->valuestring;
		const char *turn = cJSON_GetObjectItemCaseSensitive(e, "turn")->valuestring;
		long long seq = (long long)cJSON_GetObjectItemCaseSensitive(e, "seq")->valuedouble;
		if (vocab_type_of(type) == VT_TOOL_RESULT)
			cli_printf(stdout, "  appended seq %lld: tool/result %s %s (turn %s)\n", seq,
					   cJSON_GetObjectItemCaseSensitive(d, "call_id")->valuestring,
					   cJSON_GetObjectItemCaseSensitive(d, "status")->valuestring, turn);
		else
			cli_printf(stdout, "  appended seq %lld: %s interrupted (turn %s)\n", seq, type, turn);
	}
	cli_printf(stdout, "  next seq %llu\n", (unsigned long long)r->next_seq);
}

/* Copy the blobs the events of frame fr name from srcfd's folder to the
 * new session's, before the frame is appended (blob.h: blob first, then
 * its event). A blob that cannot be read or does not verify is lost, not
 * a reason to stop: it is reported and counted in *lost, and the event
 * keeps its inline head and tail. A failed write is an error. */
static int copy_blobs(const struct scan *s, const struct scan_frame *fr, int srcfd, int dstfd,
		      size_t *copied, cJSON *lost, struct cerr *err)
{
	struct buf b = BUF_INIT;
	int ret = 0;
	for (size_t i = 0; i < fr->n_events && ret == 0; i++) {
		const struct event *ev = &s->events[fr->first_event + i];
		struct blob_ref ref, out;
		struct cerr why;
		if (blob_ref_from_data(ev->data, &ref, &why) <= 0)
			continue;
		buf_reset(&b);
		if (srcfd < 0 || blob_read(srcfd, &ref, &b, &why) < 0) {
			if (srcfd < 0)
				cerr_set(&why, CERR_MISSING, 0, "blob '%s' is missing", ref.sha256);
			cli_printf(stderr, "cairn: warning: event %llu: %s: not copied\n",
				   (unsigned long long)ev->seq, why.msg);
			cJSON_AddItemToArray(lost, cJSON_CreateString(ref.sha256));
			continue;
		}
		ret = blob_write(dstfd, b.p, b.len, &out, err);
		if (ret == 0)
			(*copied)++;
	}
	buf_release(&b);
	return ret;
}

static int salvage(struct cli *c, const char *arg, bool json)
{
	struct scan *s = NULL;
	char *path = NULL;
	struct store *st = NULL;
	struct log *lg = NULL;
	struct log_event *evs = NULL;
	cJSON *extra = NULL, *lost = cJSON_CreateArray();
	struct cerr err;
	int code = 0, srcfd = -1;
	size_t copied = 0;
	if (cli_read_log(c, arg, &s, &path, &err) < 0)
		goto fail;
	if (s->status == SCAN_UNSUPPORTED) {
		err = s->err;
		goto fail;
	}
	if (s->status != SCAN_CORRUPT) {
		cerr_set(&err, CERR_USAGE, 0, "'%s' is not corrupt: use 'cairn repair' without --salvage",
			 path);
		goto fail;
	}
	if (s->n_frames == 0) {
		cerr_set(&err, CERR_CORRUPT, 0, "'%s' has no valid header: nothing to salvage (%s)", path,
			 s->err.msg);
		goto fail;
	}
	extra = cJSON_CreateObject();
	const cJSON *hdr = s->events[0].data;
	for (const cJSON *f = hdr->child; f; f = f->next)
		if (strcmp(f->string, "format") && strcmp(f->string, "id") &&
		    strcmp(f->string, "created_at") && strcmp(f->string, "cwd") &&
		    strcmp(f->string, "salvaged_from"))
			cJSON_AddItemToObject(extra, f->string, cJSON_Duplicate(f, 1));
	cJSON *from = cJSON_AddObjectToObject(extra, "salvaged_from");
	cJSON_AddStringToObject(from, "id", s->id);
	cJSON_AddNumberToObject(from, "next_seq", (double)s->rev.next_seq);
	cJSON_AddNumberToObject(from, "damage_at", (double)s->damage_at);
	if (cli_open_store(c, true, &st, &err) < 0 || log_create(st, NULL, s->cwd, extra, &lg, &err) < 0)
		goto fail;
	evs = xcalloc(s->n_events ? s->n_events : 1, sizeof *evs);
	uint64_t next = log_next_seq(lg);
	struct cerr nodir;
	if (cli_session_dir(c, arg, &srcfd, &nodir) < 0)
		srcfd = -1; /* every blob named is then reported lost */
	for (size_t f = 1; f < s->n_frames; f++) {
		const struct scan_frame *fr = &s->frames[f];
		int dstfd = log_dir(lg, &err);
		if (dstfd < 0 || copy_blobs(s, fr, srcfd, dstfd, &copied, lost, &err) < 0)
			goto fail;
		for (size_t i = 0; i < fr->n_events; i++) {
			const struct event *ev = &s->events[fr->first_event + i];
			evs[i] = (struct log_event){ev->type, ev->turn, ev->ignorable, ev->data, ev->t};
		}
		if (log_append(lg, next, evs, fr->n_events, &next, &err) < 0)
			goto fail;
	}
	char id[SESSION_ID_MAX + 1];
	snprintf(id, sizeof id, "%s", log_id(lg));
	bool behind = cli_note_durable(st, id, log_durable(lg));
	log_close(lg);
	lg = NULL;
	/* Close what the prefix left open, as any repair would. */
	struct repair_report rep = {0};
	if (s->n_frames > 1 &&
	    (log_open(st, id, &lg, &err) < 0 || repair_log(lg, &rep, &err) < 0))
		goto fail;
	if (rep.appended)
		behind |= cli_note_durable(st, id, log_durable(lg));
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", id);
		cJSON_AddStringToObject(o, "source", path);
		cJSON_AddNumberToObject(o, "events", (double)(s->n_events - s->n_skipped));
		cJSON_AddNumberToObject(o, "damage_at", (double)s->damage_at);
		cJSON_AddNumberToObject(o, "closers", (double)rep.appended);
		cJSON_AddNumberToObject(o, "blobs", (double)copied);
		cJSON_AddItemToObject(o, "blobs_lost", lost);
		lost = NULL;
		cJSON_AddStringToObject(o, "catalog", behind ? "behind" : "current");
		cli_print_json(o);
	} else {
		cli_printf(stdout, "%s\n", id);
		cli_printf(stderr,
			"cairn: salvaged %zu events (seq 0..%llu) from '%s' into new session %s; "
			"the original is unchanged%s; %zu blob%s copied, %d lost\n",
			s->n_events - s->n_skipped, (unsigned long long)s->rev.next_seq - 1, path, id,
			rep.appended ? "; its interrupted turn was closed" : "", copied,
			copied == 1 ? "" : "s", cJSON_GetArraySize(lost));
	}
	cJSON_Delete(rep.closers);
	goto out;
fail:
	code = cli_fail(&err);
out:
	log_close(lg);
	store_close(st);
	scan_free(s);
	cJSON_Delete(extra);
	cJSON_Delete(lost);
	if (srcfd >= 0)
		close(srcfd);
	free(evs);
	free(path);
	return code;
}

int cmd_repair(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("repair");
	bool json = false, salv = false;
	const char *arg = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--salvage") == 0)
			salv = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage(me, "unknown option '%s'", argv[i]);
		else if (arg)
			return cli_usage(me, "one ID or PATH only");
		else
			arg = argv[i];
	}
	if (!arg)
		return cli_usage(me, "missing ID or PATH");
	if (salv)
		return salvage(c, arg, json);
	struct store *st = NULL;
	struct log *lg = NULL;
	struct repair_report rep = {0};
	struct cerr err;
	char *sid = NULL;
	int code = 0;
	bool heal = false;
	int rc = open_for_write(c, arg, &st, &lg, &sid, &err);
	if (rc == 0) {
		heal = cli_heal(lg, sid);
		rc = repair_log(lg, &rep, &err);
	}
	if (rc < 0) {
		code = cli_fail(&err);
		/* Salvage copies frames: only a log that reads as damaged has
		 * any (not a symlink, nor an id under two project folders). */
		struct scan *s = NULL;
		struct cerr ignore;
		bool damaged = err.cls == CERR_CORRUPT &&
			       cli_read_log(c, arg, &s, NULL, &ignore) == 0 && s->status == SCAN_CORRUPT;
		scan_free(s);
		if (damaged)
			cli_printf(stderr, "cairn: the log was not changed; 'cairn repair --salvage %s' copies "
					   "its valid prefix into a new session\n", arg);
	} else {
		bool behind = (rep.cut_bytes || rep.appended || heal) &&
			      cli_note_durable(st, sid, log_durable(lg));
		print_report(&rep, log_id(lg), log_path(lg), behind, json);
	}
	free(sid);
	cJSON_Delete(rep.closers);
	log_close(lg);
	store_close(st);
	return code;
}
