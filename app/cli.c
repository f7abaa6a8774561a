/* cli.c — shared subcommand plumbing. */
#include "app/cli.h"
#include "persist/readlog.h"
#include "app/cmds.h"
#include "base/json.h"
#include "base/termsafe.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_printf(FILE *f, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	termsafe_vprintf(&b, fmt, ap);
	va_end(ap);
	fwrite(b.p, 1, b.len, f);
	buf_release(&b);
}

int cli_fail(const struct cerr *err)
{
	/* Messages quote ids, paths and types from logs and arguments: the
	 * whole message is one line, shown safe (persist/ keeps them raw). */
	cli_printf(stderr, "cairn: %s%s\n", err->msg,
		   err->outcome_unknown ? " (the outcome is unknown: re-read before retrying)" : "");
	return cerr_exit_code(err->cls == CERR_OK ? CERR_IO : err->cls);
}

int cli_usage(const struct command *cmd, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_adds(&b, "cairn: ");
	termsafe_vprintf(&b, fmt, ap);
	buf_addc(&b, '\n');
	va_end(ap);
	if (cmd) /* the usage text is cairn's own, two lines for `log` */
		buf_printf(&b, "usage: cairn %s\n", cmd->usage);
	fwrite(b.p, 1, b.len, stderr);
	buf_release(&b);
	return cerr_exit_code(CERR_USAGE);
}

const struct command *cli_find(const char *name)
{
	for (const struct command *c = cli_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int cli_open_store(struct cli *c, bool create, struct store **st, struct cerr *err)
{
	char *root = c->data_dir ? xstrdup(c->data_dir) : store_default_root();
	if (!root)
		return cerr_set(err, CERR_USAGE, 0,
				"no data directory: set HOME (an absolute path), CAIRN_HOME or --data-dir");
	int r = store_open(root, create, st, err);
	free(root);
	return r;
}

bool cli_is_path(const char *arg)
{
	return strchr(arg, '/') != NULL;
}

int cli_read_log(struct cli *c, const char *arg, struct scan **out, char **path_out,
		 struct cerr *err)
{
	int fd = -1;
	char *path = NULL;
	char want_id[SESSION_ID_MAX + 1] = "";
	if (cli_is_path(arg)) {
		path = xstrdup(arg);
		fd = open(arg, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			int e = errno;
			if (e == ENOENT)
				cerr_set(err, CERR_MISSING, 0, "no file '%s'", arg);
			else if (e == ELOOP)
				cerr_set(err, CERR_CORRUPT, 0, "'%s' is a symlink", arg);
			else
				cerr_set(err, CERR_IO, e, "cannot open '%s'", arg);
			goto fail;
		}
		struct stat st;
		if (fstat(fd, &st) < 0) {
			cerr_set(err, CERR_IO, errno, "cannot stat '%s'", arg);
			goto fail;
		}
		/* The same class as for a session file of the store (safefs.h). */
		if (!S_ISREG(st.st_mode)) {
			cerr_set(err, CERR_CORRUPT, 0, "'%s' is not a regular file", arg);
			goto fail;
		}
	} else {
		struct store *st = NULL;
		struct session_ref ref;
		int keyfd = -1, dirfd = -1;
		if (cli_open_store(c, false, &st, err) < 0) {
			if (err->cls == CERR_MISSING)
				cerr_set(err, CERR_MISSING, 0, "no session '%s'", arg);
			goto fail;
		}
		if (store_resolve(st, arg, &ref, err) < 0 ||
		    store_open_session_dir(st, &ref, false, &keyfd, &dirfd, err) < 0) {
			store_close(st);
			goto fail;
		}
		path = store_log_path(st, &ref, false);
		snprintf(want_id, sizeof want_id, "%s", ref.id);
		fd = safefs_openfile(dirfd, LOG_FILE, O_RDONLY, err);
		fs_close_quiet(dirfd);
		fs_close_quiet(keyfd);
		store_close(st);
		if (fd < 0)
			goto fail;
	}
	struct cat_watermark wm = {0};
	{
		/* Under the root (by id or by path) the catalog's durable
		 * watermark applies; anywhere else the structural rules alone. */
		struct store *st = NULL;
		struct cerr ignore;
		if (cli_open_store(c, false, &st, &ignore) == 0) {
			char *sid = *want_id ? xstrdup(want_id) : store_session_of_path(st, arg);
			cli_watermark(st, sid, &wm);
			free(sid);
			store_close(st);
		}
	}
	if (readlog_fd(fd, path, *want_id ? want_id : NULL, &wm, out, err) < 0)
		goto fail;
	close(fd);
	if (path_out)
		*path_out = path;
	else
		free(path);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(path);
	return -1;
}

void cli_write_json(const char *s, size_t n)
{
	struct buf b = BUF_INIT;
	termsafe_json(&b, s, n);
	fwrite(b.p, 1, b.len, stdout);
	buf_release(&b);
}

void cli_print_json(cJSON *v)
{
	char *s = json_print(v);
	cli_write_json(s, strlen(s));
	putchar('\n');
	free(s);
	cJSON_Delete(v);
}

int cli_session_dir(struct cli *c, const char *arg, int *dirfd, struct cerr *err)
{
	*dirfd = -1;
	if (cli_is_path(arg)) {
		/* The folder the log file is in, as log_open_path takes it. */
		char *d = xstrdup(arg);
		char *slash = strrchr(d, '/');
		if (slash == d)
			slash[1] = '\0';
		else
			*slash = '\0';
		*dirfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int e = errno;
		free(d);
		if (*dirfd < 0)
			return cerr_set(err, e == ENOENT ? CERR_MISSING : CERR_IO, e == ENOENT ? 0 : e,
					"cannot open the directory of '%s'", arg);
		return 0;
	}
	struct store *st = NULL;
	struct session_ref ref;
	int keyfd = -1, ret = -1;
	if (cli_open_store(c, false, &st, err) < 0) {
		if (err->cls == CERR_MISSING)
			cerr_set(err, CERR_MISSING, 0, "no session '%s'", arg);
	} else if (store_resolve(st, arg, &ref, err) == 0 &&
		   store_open_session_dir(st, &ref, false, &keyfd, dirfd, err) == 0) {
		ret = 0;
	}
	fs_close_quiet(keyfd);
	store_close(st);
	return ret;
}
