/* cmd_log.c — `cairn log append`, `cairn log cat` and `cairn log blob`:
 * the log store from the outside. append reads one batch of JSON lines
 * from stdin and writes it as one frame; cat prints the validated events;
 * blob prints the bytes of one of the session's blobs, verified. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/termsafe.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/frame.h"
#include "persist/event_batch.h"
#include "persist/log.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STDIN_MAX ((size_t)FRAME_MAX_CONTENT * 2)

static int read_stdin(struct buf *b, struct cerr *err)
{
	char chunk[65536];
	for (;;) {
		ssize_t r = read(0, chunk, sizeof chunk);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return cerr_set(err, CERR_IO, errno, "cannot read standard input");
		}
		if (r == 0)
			return 0;
		if (b->len + (size_t)r > STDIN_MAX)
			return cerr_set(err, CERR_USAGE, 0,
					"batch on standard input is over %zu bytes; the limit is twice "
					"FRAME_MAX_CONTENT = %zu", STDIN_MAX, STDIN_MAX);
		buf_add(b, chunk, (size_t)r);
	}
}

/* Parse stdin lines {"type","turn"?,"ignorable"?,"data"?} into events that
 * borrow from *roots (one parsed object per event; caller frees). */
static int parse_batch(const struct buf *in, cJSON **roots, struct event_batch *b,
		       struct cerr *err)
{
	*roots = cJSON_CreateArray();
	size_t lineno = 0, bad;
	if (!utf8_valid(in->p, in->len, &bad))
		return cerr_set(err, CERR_USAGE, 0, "input is not UTF-8 (byte %zu)", bad);
	const char *p = in->p, *end = in->p + in->len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		lineno++;
		const char *q = p;
		while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == le) {
			p = nl ? nl + 1 : end;
			continue;
		}
		const char *why;
		cJSON *o = json_parse_strict(p, (size_t)(le - p), &why);
		if (!o)
			return cerr_set(err, CERR_USAGE, 0, "line %zu: %s", lineno, why);
		cJSON_AddItemToArray(*roots, o);
		if (event_batch_add_json(b, o, err) < 0) {
			cerr_prefix(err, "line %zu", lineno);
			return -1;
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static char *absolute_dir(const char *dir)
{
	if (dir[0] == '/')
		return xstrdup(dir);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return xstrdup(dir);
	return xasprintf("%s/%s", cwd, dir);
}

static int log_append_cmd(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("log");
	bool json = false, is_new = false, no_cwd = false, have_expect = false;
	const char *target = NULL, *cwd_arg = NULL;
	uint64_t expect = 0;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--new") == 0)
			is_new = true;
		else if (strcmp(argv[i], "--no-cwd") == 0)
			no_cwd = true;
		else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc)
			cwd_arg = argv[++i];
		else if (strcmp(argv[i], "--expect-seq") == 0 && i + 1 < argc) {
			if (parse_u64(argv[++i], &expect) < 0)
				return cli_usage(me, "--expect-seq needs a non-negative integer");
			have_expect = true;
		} else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage(me, "unknown or incomplete option '%s'", argv[i]);
		else if (target)
			return cli_usage(me, "one ID or PATH only");
		else
			target = argv[i];
	}
	if (is_new == (target != NULL))
		return cli_usage(me, "give either --new or an ID|PATH");
	if (!is_new && !have_expect)
		return cli_usage(me, "appending to an existing session needs --expect-seq N");
	if (!is_new && (cwd_arg || no_cwd))
		return cli_usage(me, "--cwd and --no-cwd go with --new");
	struct cerr err;
	struct buf in = BUF_INIT;
	cJSON *roots = NULL;
	struct event_batch b = EVENT_BATCH_INIT;
	struct store *st = NULL;
	struct log *lg = NULL;
	char *cwd = NULL, *sid = NULL;
	struct cat_watermark cw;
	struct scan_opts wm;
	int code = 0;
	if (read_stdin(&in, &err) < 0 || parse_batch(&in, &roots, &b, &err) < 0)
		goto fail;
	if (is_new) {
		if (!no_cwd) {
			char here[PATH_MAX];
			cwd = cwd_arg ? absolute_dir(cwd_arg) : getcwd(here, sizeof here) ? xstrdup(here) : NULL;
		}
		if (cli_open_store(c, true, &st, &err) < 0 ||
		    log_create(st, NULL, cwd, NULL, &lg, &err) < 0)
			goto fail;
		expect = log_next_seq(lg);
	} else if (cli_is_path(target)) {
		struct cerr ignore;
		if (cli_open_store(c, false, &st, &ignore) == 0)
			sid = store_session_of_path(st, target);
		cli_watermark(st, sid, &cw);
		wm = catalog_scan_opts(&cw);
		if (log_open_path_opts(target, &wm, &lg, &err) < 0)
			goto fail;
	} else {
		struct session_ref ref;
		if (cli_open_store(c, false, &st, &err) < 0) {
			if (err.cls == CERR_MISSING)
				cerr_set(&err, CERR_MISSING, 0, "no session '%s'", target);
			goto fail;
		}
		if (store_resolve(st, target, &ref, &err) < 0)
			goto fail;
		sid = xstrdup(ref.id);
		/* When the catalog's watermark matches the file, append from
		 * its end without reading the log (as the FIFO does). */
		cli_watermark(st, sid, &cw);
		wm = catalog_scan_opts(&cw);
		if (log_open_end(st, ref.id, &wm, &lg, &err) < 0)
			goto fail;
	}
	bool heal = !is_new && cli_heal(lg, sid);
	uint64_t next;
	if (log_append(lg, expect, b.evs, b.n, &next, &err) < 0)
		goto fail;
	bool behind = (b.n > 0 || heal) && cli_note_append(st, is_new ? log_id(lg) : sid, expect,
							 log_batch_time(lg), b.evs, b.n, log_durable(lg));
	if (log_cut_bytes(lg))
		cli_printf(stderr, "cairn: cut a torn tail of %llu bytes before appending\n",
			   (unsigned long long)log_cut_bytes(lg));
	if (b.n == 0 && is_new)
		cli_printf(stderr, "cairn: empty batch: nothing was written\n");
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", log_id(lg));
		cJSON_AddNumberToObject(o, "next_seq", (double)(b.n == 0 && is_new ? 0 : next));
		cJSON_AddStringToObject(o, "catalog", behind ? "behind" : "current");
		cli_print_json(o);
	} else {
		cli_printf(stdout, "%s %llu\n", log_id(lg), (unsigned long long)(b.n == 0 && is_new ? 0 : next));
	}
	goto out;
fail:
	code = cli_fail(&err);
out:
	log_close(lg);
	store_close(st);
	cJSON_Delete(roots);
	event_batch_release(&b);
	free(cwd);
	free(sid);
	buf_release(&in);
	return code;
}

static int log_cat_cmd(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("log");
	if (argc != 3 || argv[2][0] == '-')
		return cli_usage(me, "log cat takes one ID or PATH");
	struct scan *s;
	struct cerr err;
	if (cli_read_log(c, argv[2], &s, NULL, &err) < 0)
		return cli_fail(&err);
	if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED) {
		int code = cli_fail(&s->err);
		scan_free(s);
		return code;
	}
	/* The stored lines, with the controls in their strings escaped:
	 * the same JSON values, nothing a terminal acts on. */
	struct buf out = BUF_INIT;
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		if (!ev->kind)
			continue;
		buf_reset(&out);
		termsafe_json(&out, ev->line, ev->line_len);
		buf_addc(&out, '\n');
		fwrite(out.p, 1, out.len, stdout);
	}
	buf_release(&out);
	if (s->status == SCAN_TORN)
		cli_printf(stderr, "cairn: note: %llu bytes of torn tail were ignored\n",
			   (unsigned long long)(s->rev.len - s->good_len));
	scan_free(s);
	return fflush(stdout) == 0 ? 0 : cerr_exit_code(CERR_IO);
}

static int log_blob_cmd(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("log");
	if (argc != 4 || argv[2][0] == '-' || argv[3][0] == '-')
		return cli_usage(me, "log blob takes one ID or PATH and one HASH");
	struct blob_ref ref = {.size = BLOB_SIZE_ANY};
	if (!blob_valid_hex(argv[3]))
		return cli_usage(me, "'%s' is not a blob hash (64 lowercase hex digits)", argv[3]);
	snprintf(ref.sha256, sizeof ref.sha256, "%s", argv[3]);
	struct cerr err;
	int dirfd;
	if (cli_session_dir(c, argv[2], &dirfd, &err) < 0)
		return cli_fail(&err);
	/* Raw into a pipe or a file (the exact bytes); on a terminal shown
	 * inert, as every text cairn prints there (base/termsafe.h). */
	int rc;
	if (isatty(STDOUT_FILENO)) {
		struct buf in = BUF_INIT, out = BUF_INIT;
		rc = blob_read(dirfd, &ref, &in, &err);
		if (rc == 0) {
			termsafe_add(&out, in.p, in.len, TERMSAFE_TEXT);
			fwrite(out.p, 1, out.len, stdout);
		}
		buf_release(&in);
		buf_release(&out);
	} else {
		fflush(stdout);
		rc = blob_copy_to_fd(dirfd, &ref, STDOUT_FILENO, &err);
	}
	close(dirfd);
	if (rc < 0) {
		cerr_prefix(&err, "session '%s'", argv[2]);
		return cli_fail(&err);
	}
	return fflush(stdout) == 0 ? 0 : cerr_exit_code(CERR_IO);
}

int cmd_log(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("log");
	if (argc < 2)
		return cli_usage(me, "missing 'append', 'cat' or 'blob'");
	if (strcmp(argv[1], "append") == 0)
		return log_append_cmd(c, argc, argv);
	if (strcmp(argv[1], "cat") == 0)
		return log_cat_cmd(c, argc, argv);
	if (strcmp(argv[1], "blob") == 0)
		return log_blob_cmd(c, argc, argv);
	return cli_usage(me, "unknown log command '%s'", argv[1]);
}
