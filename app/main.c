/* main.c — cairn's entry point: global options, then a subcommand from the
 * table below. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/xalloc.h"
#include "engine/tool_reaper.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmd_help(struct cli *c, int argc, char **argv);
static int cmd_version(struct cli *c, int argc, char **argv);

const struct command cli_commands[] = {
	{"log", cmd_log, "log append (--new [--cwd DIR|--no-cwd] | ID|PATH --expect-seq N) [--json] < batch.jsonl\n"
			 "       cairn log cat ID|PATH\n"
			 "       cairn log blob ID|PATH HASH",
	 "append a batch of events from stdin; print a log's events; print a blob"},
	{"import", cmd_import, "import [--new-id] [--json] FILE|-",
	 "import a session exported as JSON Lines, its id kept (--new-id: a fresh one)"},
	{"inspect", cmd_inspect, "inspect [--json] ID|PATH", "diagnose a log without changing it"},
	{"repair", cmd_repair, "repair [--json] [--salvage] ID|PATH",
	 "cut a torn tail and close an interrupted turn; --salvage copies a corrupt log's valid prefix"},
	{"sessions", cmd_sessions, "sessions [--json] [--all] [--trash] [--project DIR] [--limit N]",
	 "list sessions, pinned first, then by last activity"},
	{"search", cmd_search, "search [--json] [--all] [--limit N] QUERY...",
	 "full-text search of every session's messages"},
	{"rename", cmd_rename, "rename ID TITLE", "set a session's title (\"\" goes back to the first prompt)"},
	{"pin", cmd_pin, "pin ID...", "keep sessions at the top of the list"},
	{"unpin", cmd_unpin, "unpin ID...", "undo pin"},
	{"rm", cmd_rm, "rm ID...", "move sessions to the trash (restorable)"},
	{"restore", cmd_restore, "restore ID...", "bring sessions back from the trash"},
	{"purge", cmd_purge, "purge [--yes] (ID... | --all)", "remove trashed sessions for good"},
	{"export", cmd_export, "export [--format md|json] [--reasoning] [--no-tool-output] [-o FILE] ID|PATH",
	 "write a session out: Markdown of its active path to read, or JSON Lines that carry it whole"},
	{"doctor", cmd_doctor, "doctor [--reindex] [--fix] [--json]",
	 "verify every log and the catalog; --reindex rebuilds the catalog from the logs"},
	{"config", cmd_config, "config [--json] [--provider P] [--model M] [--system FILE]",
	 "show the providers, models and system prompt in effect (keys only as set/unset)"},
	{"help", cmd_help, "help [COMMAND]", "show help"},
	{"version", cmd_version, "version", "show the version"},
	{NULL, NULL, NULL, NULL},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: cairn [--data-dir DIR] [-c | -r ID] [--provider P] [--model M]\n"
		   "             [--approve ask|read-only|all] [--system FILE]\n"
		   "       cairn [--data-dir DIR] COMMAND [ARGS]\n"
		   "       cairn [--data-dir DIR] -p PROMPT|- [--session ID] [--json] [--provider P]\n"
		   "             [--model M] [--system FILE]\n\n"
		   "cairn keeps every chat session as a durable, append-only event log.\n"
		   "With no command, on a terminal, it opens the chat screen: a new session,\n"
		   "-c this directory's latest, -r one session (F1 shows every key).\n"
		   "-p runs one turn headless: the answer on stdout, notices on stderr.\n\n"
		   "commands:\n");
	for (const struct command *c = cli_commands; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->summary);
	fprintf(f, "\noptions:\n"
		   "  --data-dir DIR  data root (default $CAIRN_HOME, $XDG_DATA_HOME/cairn,\n"
		   "                  ~/.local/share/cairn)\n"
		   "  --help          this help\n"
		   "  --version       the version\n\n"
		   "exit codes: 0 ok, 1 io, 2 usage, 3 missing, 4 corrupt, 5 unsupported,\n"
		   "            6 conflict, 7 locked, 8 busy; with -p also 10 provider error,\n"
		   "            11 canceled, 12 delivery unknown, 13 saved state uncertain\n"
		   "See cairn(1) and docs/format.md.\n");
}

static int cmd_help(struct cli *c, int argc, char **argv)
{
	if (argc > 1) {
		const struct command *cmd = cli_find(argv[1]);
		if (!cmd)
			return cli_usage(NULL, "unknown command '%s'", argv[1]);
		printf("usage: cairn %s\n%s\n", cmd->usage, cmd->summary);
		return 0;
	}
	usage(stdout);
	return 0;
}

static int cmd_version(struct cli *c, int argc, char **argv)
{
	printf("cairn %s\n", CAIRN_VERSION);
	return 0;
}

/* No command: say where the sessions are and what can be done with them. */
static int overview(struct cli *c)
{
	char *root = c->data_dir ? xstrdup(c->data_dir) : store_default_root();
	printf("cairn %s — durable sessions for language-model chat\n", CAIRN_VERSION);
	cli_printf(stdout, "data root: %s\n",
		   root ? root : "(none: set HOME (an absolute path) or CAIRN_HOME)");
	struct store *st;
	struct cerr err;
	if (root && store_open(root, false, &st, &err) == 0) {
		struct session_ref *refs;
		size_t n;
		if (store_list(st, STORE_SESSIONS, &refs, &n, &err) == 0) {
			printf("sessions: %zu\n", n);
			free(refs);
		}
		store_close(st);
	} else {
		printf("sessions: 0\n");
	}
	free(root);
	printf("\n");
	usage(stdout);
	return 0;
}

/* Is this a headless run: -p among the global options, before any
 * command (which may come in any order with them)? */
static bool headless(int argc, char **argv)
{
	static const char *const with_value[] = {"--data-dir", "--session", "--provider",
						 "--model", "--system", NULL};
	bool prompt = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-p") == 0 || strcmp(a, "--prompt") == 0) {
			prompt = true;
			i++;
			continue;
		}
		bool skip = false;
		for (const char *const *w = with_value; *w; w++)
			skip |= strcmp(a, *w) == 0;
		if (skip) {
			i++;
			continue;
		}
		if (a[0] != '-' && !prompt)
			return false; /* a command comes first */
	}
	return prompt;
}

/* Options of the chat screen (cmd_chat.c), and whether they take a value. */
static int chat_option(const char *a)
{
	static const char *const flags[] = {"-c", "--continue", NULL};
	static const char *const valued[] = {"-r", "--resume", "--provider", "--model", "--system",
					     "--approve", NULL};
	for (const char *const *f = flags; *f; f++)
		if (strcmp(a, *f) == 0)
			return 1;
	for (const char *const *v = valued; *v; v++)
		if (strcmp(a, *v) == 0)
			return 2;
	return 0;
}

int main(int argc, char **argv)
{
	/* First: a reaper of a shell command runs here and never returns. */
	tool_reaper_dispatch(argc, argv);
	struct cli c = {0};
	if (headless(argc, argv))
		return cmd_prompt(&c, argc, argv);
	/* The chat screen's options are gathered at the front of argv, in
	 * place (only slots already read are written): argv[1..chat_argc]. */
	int chat_argc = 0, i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		int k = chat_option(a);
		if (k) {
			argv[1 + chat_argc++] = argv[i];
			if (k == 2 && i + 1 < argc) {
				i++;
				argv[1 + chat_argc++] = argv[i];
			}
			continue;
		}
		if (strcmp(a, "--data-dir") == 0) {
			if (i + 1 >= argc)
				return cli_usage(NULL, "--data-dir needs a directory");
			c.data_dir = argv[++i];
		} else if (strncmp(a, "--data-dir=", 11) == 0) {
			c.data_dir = a + 11;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
			return cmd_version(&c, 0, NULL);
		} else if (a[0] == '-') {
			return cli_usage(NULL, "unknown option '%s' (see 'cairn --help')", a);
		} else {
			break;
		}
	}
	if (c.data_dir && !*c.data_dir)
		return cli_usage(NULL, "--data-dir needs a directory");
	if (i == argc) {
		/* No command: the chat screen on a terminal, else (a script,
		 * a pipe) the overview, unless chat options ask for the screen. */
		if (chat_argc || (isatty(0) && isatty(1)))
			return cmd_chat(&c, chat_argc, argv + 1);
		return overview(&c);
	}
	if (chat_argc)
		return cli_usage(NULL, "'%s' goes with the chat screen, not with a command", argv[1]);
	const struct command *cmd = cli_find(argv[i]);
	if (!cmd)
		return cli_usage(NULL, "unknown command '%s' (see 'cairn --help')", argv[i]);
	for (int k = i + 1; k < argc; k++)
		if (strcmp(argv[k], "--help") == 0) {
			printf("usage: cairn %s\n%s\n", cmd->usage, cmd->summary);
			return 0;
		}
	return cmd->run(&c, argc - i, argv + i);
}
