/* cmd_manage.c — `cairn rename|pin|unpin|rm|restore|purge`: user choices
 * about sessions, each posted as an item to the persistence FIFO (the same
 * path the interactive client uses) and reported when it is durable. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "persist/fifo.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

struct run {
	int code;       /* the most severe exit code so far */
	size_t ok;
};

static void done_cb(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		    const struct cerr *err)
{
	struct run *run = ctx;
	const char *id = fifo_item_session(it);
	if (err) {
		int code = cli_fail(err);
		if (cerr_severity(err->cls) > cerr_severity((enum cerr_class)run->code))
			run->code = code;
		return;
	}
	run->ok++;
	static const char *const verbs[] = {
		[FIFO_HISTORY] = "saved", [FIFO_FULL_SAVE] = "saved", [FIFO_META] = "updated",
		[FIFO_DELETE] = "deleted", [FIFO_RESTORE] = "restored", [FIFO_PURGE] = "purged",
	};
	cli_printf(stdout, "%s %s\n", verbs[fifo_item_kind(it)], id);
	if (r->catalog_behind)
		cli_warn_behind(r->catalog_err.msg);
}

/* Post the items, wait until they are durable, deliver their results. */
static int run_items(struct cli *c, struct fifo_item **items, size_t n)
{
	struct run run = {0, 0};
	struct cerr err;
	char *root = c->data_dir ? xstrdup(c->data_dir) : store_default_root();
	if (!root)
		return cli_usage(NULL, "no data directory: set HOME (an absolute path), CAIRN_HOME or "
				       "--data-dir");
	uv_loop_t loop;
	uv_loop_init(&loop);
	/* One command, a few items: no helper threads to start. */
	struct fifo *f = fifo_new(&loop, root, &(struct fifo_opts){.helpers = 0}, &err);
	free(root);
	if (!f) {
		uv_run(&loop, UV_RUN_DEFAULT);
		uv_loop_close(&loop);
		return cli_fail(&err);
	}
	for (size_t i = 0; i < n; i++)
		if (fifo_post(f, items[i], done_cb, &run, &err) < 0)
			run.code = cli_fail(&err);
	/* A CLI has nothing else to do: wait as long as the disk needs,
	 * saying so when it is slow. */
	while (fifo_close_wait(f, clock_mono_ns() / 1000000 + 10000) != 0)
		cli_printf(stderr, "cairn: still waiting for the disk...\n");
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return run.code;
}

/* Resolve each argument (unique prefixes allowed) in area to exact ids. */
static int resolve_all(struct cli *c, const char *area, char **args, size_t n, char ***ids,
		       struct cerr *err)
{
	struct store *st;
	*ids = xcalloc(n ? n : 1, sizeof **ids);
	if (cli_open_store(c, false, &st, err) < 0) {
		if (err->cls == CERR_MISSING)
			cerr_set(err, CERR_MISSING, 0, "no session '%s'", n ? args[0] : "");
		return -1;
	}
	int ret = 0;
	for (size_t i = 0; i < n && ret == 0; i++) {
		struct session_ref ref;
		ret = store_resolve_in(st, area, args[i], &ref, err);
		if (ret == 0)
			(*ids)[i] = xstrdup(ref.id);
		else if (err->cls == CERR_MISSING && strcmp(area, STORE_TRASH) == 0)
			cerr_set(err, CERR_MISSING, 0, "no session '%s' in the trash", args[i]);
	}
	store_close(st);
	return ret;
}

static void free_ids(char **ids, size_t n)
{
	for (size_t i = 0; ids && i < n; i++)
		free(ids[i]);
	free(ids);
}

int cmd_rename(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("rename");
	if (argc != 3)
		return cli_usage(me, "rename takes an ID and a TITLE");
	char **ids;
	struct cerr err;
	if (resolve_all(c, STORE_SESSIONS, argv + 1, 1, &ids, &err) < 0) {
		free_ids(ids, 1);
		return cli_fail(&err);
	}
	cJSON *meta = cJSON_CreateObject();
	if (*argv[2])
		cJSON_AddStringToObject(meta, "title", argv[2]);
	else
		cJSON_AddNullToObject(meta, "title"); /* "" goes back to the derived title */
	struct fifo_item *it = fifo_meta(ids[0], meta);
	free_ids(ids, 1);
	return run_items(c, &it, 1);
}

static int pin(struct cli *c, int argc, char **argv, bool on)
{
	const struct command *me = cli_find(argv[0]);
	if (argc < 2)
		return cli_usage(me, "missing ID");
	size_t n = (size_t)argc - 1;
	char **ids;
	struct cerr err;
	if (resolve_all(c, STORE_SESSIONS, argv + 1, n, &ids, &err) < 0) {
		free_ids(ids, n);
		return cli_fail(&err);
	}
	struct fifo_item **items = xcalloc(n, sizeof *items);
	for (size_t i = 0; i < n; i++) {
		cJSON *meta = cJSON_CreateObject();
		cJSON_AddBoolToObject(meta, "pinned", on);
		items[i] = fifo_meta(ids[i], meta);
	}
	free_ids(ids, n);
	int code = run_items(c, items, n);
	free(items);
	return code;
}

int cmd_pin(struct cli *c, int argc, char **argv)
{
	return pin(c, argc, argv, true);
}

int cmd_unpin(struct cli *c, int argc, char **argv)
{
	return pin(c, argc, argv, false);
}

/* rm / restore / purge over a list of ids. */
static int lifecycle(struct cli *c, char **args, size_t n, const char *area,
		     struct fifo_item *(*make)(const char *))
{
	char **ids;
	struct cerr err;
	if (resolve_all(c, area, args, n, &ids, &err) < 0) {
		free_ids(ids, n);
		return cli_fail(&err);
	}
	struct fifo_item **items = xcalloc(n ? n : 1, sizeof *items);
	for (size_t i = 0; i < n; i++)
		items[i] = make(ids[i]);
	free_ids(ids, n);
	int code = run_items(c, items, n);
	free(items);
	return code;
}

int cmd_rm(struct cli *c, int argc, char **argv)
{
	if (argc < 2)
		return cli_usage(cli_find("rm"), "missing ID");
	return lifecycle(c, argv + 1, (size_t)argc - 1, STORE_SESSIONS, fifo_delete);
}

int cmd_restore(struct cli *c, int argc, char **argv)
{
	if (argc < 2)
		return cli_usage(cli_find("restore"), "missing ID");
	return lifecycle(c, argv + 1, (size_t)argc - 1, STORE_TRASH, fifo_restore);
}

/* On a terminal, ask before removing anything for good. */
static bool confirm(size_t n)
{
	if (!isatty(0))
		return true;
	cli_printf(stderr, "purge %zu session%s for good? [y/N] ", n, n == 1 ? "" : "s");
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

int cmd_purge(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("purge");
	bool all = false, yes = false;
	char **args = xcalloc((size_t)argc, sizeof *args);
	size_t n = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--all") == 0)
			all = true;
		else if (strcmp(argv[i], "--yes") == 0 || strcmp(argv[i], "-y") == 0)
			yes = true;
		else if (argv[i][0] == '-') {
			free(args);
			return cli_usage(me, "unknown option '%s'", argv[i]);
		} else
			args[n++] = argv[i];
	}
	if (all == (n > 0)) {
		free(args);
		return cli_usage(me, "give IDs or --all");
	}
	int code;
	if (all) {
		struct store *st;
		struct session_ref *refs = NULL;
		size_t m = 0;
		struct cerr err;
		if (cli_open_store(c, false, &st, &err) < 0) {
			free(args);
			if (err.cls == CERR_MISSING) {
				cli_printf(stdout, "the trash is empty\n");
				return 0;
			}
			return cli_fail(&err);
		}
		int r = store_list(st, STORE_TRASH, &refs, &m, &err);
		store_close(st);
		if (r < 0) {
			free(args);
			return cli_fail(&err);
		}
		if (m == 0) {
			cli_printf(stdout, "the trash is empty\n");
			free(refs);
			free(args);
			return 0;
		}
		if (!yes && !confirm(m)) {
			free(refs);
			free(args);
			cli_printf(stderr, "cairn: nothing purged\n");
			return 0;
		}
		struct fifo_item **items = xcalloc(m, sizeof *items);
		for (size_t i = 0; i < m; i++)
			items[i] = fifo_purge(refs[i].id);
		free(refs);
		code = run_items(c, items, m);
		free(items);
	} else {
		if (!yes && !confirm(n)) {
			free(args);
			cli_printf(stderr, "cairn: nothing purged\n");
			return 0;
		}
		code = lifecycle(c, args, n, STORE_TRASH, fifo_purge);
	}
	free(args);
	return code;
}
