/* cli.h — what every subcommand shares: the global options, the store, how
 * an ID|PATH argument is resolved, and how errors are printed. */
#ifndef CAIRN_CLI_H
#define CAIRN_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "persist/scan.h"
#include "persist/store.h"

struct cli {
	const char *data_dir; /* --data-dir, or NULL for the default root */
};

struct command {
	const char *name;
	int (*run)(struct cli *c, int argc, char **argv); /* argv[0] is the name */
	const char *usage;
	const char *summary;
};

/* The subcommand table (app/main.c); terminated by a NULL name. */
extern const struct command cli_commands[];

/* Every human-readable line cairn prints goes through cli_printf, cli_fail
 * or cli_usage, and every JSON text through cli_write_json or
 * cli_print_json (session_json escapes its strings as it writes them):
 * logs, titles, paths and arguments carry whatever their authors put in
 * them, and none of it may act on the terminal (base/termsafe.h). */

/* fprintf to f, every %s and %c argument shown terminal-safe as a one-line
 * field (termsafe_printf); the format itself is trusted. */
void cli_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "cairn: <message>" to stderr, the message terminal-safe, and return
 * the class's exit code. */
int cli_fail(const struct cerr *err);
/* Print a usage error for cmd (arguments terminal-safe) and return 2. */
int cli_usage(const struct command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The command entry named name, or NULL. */
const struct command *cli_find(const char *name);
/* Open the data root (create: make it). Caller closes *st. */
int cli_open_store(struct cli *c, bool create, struct store **st, struct cerr *err);
/* True when arg names a file (it contains '/'), false for an id. */
bool cli_is_path(const char *arg);
/* Read a log for a read-only command, by ID (under the root) or PATH (as it
 * is; symlinks and non-regular files refused). Caller frees *out with
 * scan_free; *path_out (may be NULL) gets a malloc'd display path. */
int cli_read_log(struct cli *c, const char *arg, struct scan **out, char **path_out,
		 struct cerr *err);
/* The directory of the session arg names, by ID (under the root) or PATH
 * (the folder its log file is in): the folder of its blobs (blob.h).
 * *dirfd is a fd the caller closes; -1 with err (CERR_MISSING: none). */
int cli_session_dir(struct cli *c, const char *arg, int *dirfd, struct cerr *err);
/* Write the JSON text s[0..n) to stdout with the controls in its strings
 * escaped as \uXXXX (termsafe_json): the same values, nothing raw. */
void cli_write_json(const char *s, size_t n);
/* The one report of a write that is durable while the catalog could not
 * be updated (exit 0 all the same: a retry would write twice): prints
 * "cairn: warning: saved; the catalog is behind (why)" to stderr. */
void cli_warn_behind(const char *why);
/* Print a cJSON value on one line to stdout (as cli_write_json) and free it. */
void cli_print_json(cJSON *v);

#endif
