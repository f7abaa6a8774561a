/* cmd_export.c — `cairn export ID|PATH [--format md|json] [--reasoning]
 * [--no-tool-output] [-o FILE]`: a session written out, as JSON Lines
 * that carry it whole or as Markdown of its active path (export_json.h, export_md.h). The
 * log is read without the lock; a torn log exports its valid prefix. */
#include "app/cli.h"
#include "app/cmds.h"
#include "app/export_json.h"
#include "app/export_md.h"
#include "base/clock.h"
#include "base/termsafe.h"
#include "base/xalloc.h"
#include "persist/replace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Write data to path through a temporary file in its directory and a
 * rename, mode 0600 (persist/replace.h). */
static int write_file(const char *path, const struct buf *data, struct cerr *err)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	const char *name = path;
	if (slash) {
		name = path + (slash - dir) + 1;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	if (!*name) {
		free(dir);
		return cerr_set(err, CERR_USAGE, 0, "'%s' names a directory, not a file", path);
	}
	int dirfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dirfd < 0)
		return cerr_set(err, errno == ENOENT ? CERR_MISSING : CERR_IO, errno == ENOENT ? 0 : errno,
				"cannot open the directory of '%s'", path);
	struct stat like = {.st_mode = 0600, .st_uid = geteuid(), .st_gid = getegid()};
	char *tmp = xasprintf(".%.100s.%ld.%lx.tmp", name, (long)getpid(),
			      (unsigned long)clock_mono_ns());
	struct replace r = {.dirfd = dirfd, .tmp = tmp, .name = name, .data = data->p,
			    .len = data->len, .user_file = true, .like = &like};
	enum replace_step step = replace_file(&r, NULL);
	int rc = 0;
	if (step != REPLACE_DONE)
		rc = cerr_set(err, CERR_IO, r.sys_errno, "cannot write '%s'%s", path,
			      step == REPLACE_DIRSYNC ? " (written; its directory was not synced)" : "");
	free(tmp);
	close(dirfd);
	return rc;
}

int cmd_export(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("export");
	const char *target = NULL, *outpath = NULL;
	bool json = false, have_md_opt = false;
	struct export_md_opts mo = {.reasoning = false, .tool_output = true};
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
			const char *f = argv[++i];
			if (strcmp(f, "json") == 0)
				json = true;
			else if (strcmp(f, "md") == 0)
				json = false;
			else
				return cli_usage(me, "unknown format '%s' (md or json)", f);
		} else if (strcmp(argv[i], "--reasoning") == 0) {
			mo.reasoning = have_md_opt = true;
		} else if (strcmp(argv[i], "--no-tool-output") == 0) {
			mo.tool_output = false;
			have_md_opt = true;
		} else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			outpath = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage(me, "unknown or incomplete option '%s'", argv[i]);
		} else if (target) {
			return cli_usage(me, "one ID or PATH only");
		} else {
			target = argv[i];
		}
	}
	if (!target)
		return cli_usage(me, "missing ID or PATH");
	if (json && have_md_opt)
		return cli_usage(me, "--reasoning and --no-tool-output go with --format md "
				     "(the JSON export carries the whole log)");
	struct scan *s = NULL;
	struct cerr err;
	struct buf out = BUF_INIT;
	int dirfd = -1, code = 0;
	if (cli_read_log(c, target, &s, NULL, &err) < 0)
		goto fail;
	if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED) {
		err = s->err;
		goto fail;
	}
	if (cli_session_dir(c, target, &dirfd, &err) < 0)
		goto fail;
	if ((json ? export_json(s, dirfd, &out, &err) : export_md(s, dirfd, &mo, &out, &err)) < 0) {
		cerr_prefix(&err, "session '%s'", target);
		goto fail;
	}
	if (s->status == SCAN_TORN)
		cli_printf(stderr,
			   "cairn: warning: the log is torn at byte %llu (%llu bytes after it ignored): "
			   "exported its valid prefix, up to seq %llu\n",
			   (unsigned long long)s->good_len,
			   (unsigned long long)(s->rev.len - s->good_len),
			   (unsigned long long)(s->rev.next_seq ? s->rev.next_seq - 1 : 0));
	if (!json && mo.tool_output)
		cli_printf(stderr, "cairn: note: the export includes tool output (commands' output, "
				   "files read); --no-tool-output leaves it out\n");
	if (outpath) {
		if (write_file(outpath, &out, &err) < 0)
			goto fail;
	} else if (isatty(STDOUT_FILENO) && !json) {
		/* On a terminal the text is shown inert (base/termsafe.h); the
		 * JSON lines already are (termsafe_json). */
		struct buf safe = BUF_INIT;
		termsafe_add(&safe, out.p, out.len, TERMSAFE_TEXT);
		fwrite(safe.p, 1, safe.len, stdout);
		buf_release(&safe);
	} else {
		fwrite(out.p, 1, out.len, stdout);
	}
	if (fflush(stdout) != 0)
		code = cerr_exit_code(CERR_IO);
	goto out;
fail:
	code = cli_fail(&err);
out:
	if (dirfd >= 0)
		close(dirfd);
	buf_release(&out);
	scan_free(s);
	return code;
}
