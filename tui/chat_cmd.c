/* chat_cmd.c — slash commands, their completion and the external editor
 * (chat_cmd.h). One table of commands drives the dispatch, Tab's
 * completion, the help screen's part and docs/keys.md's. */
#include "tui/chat_cmd.h"
#include "tui/chat_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/approval.h"
#include "tui/keytab.h"

static void done_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	struct chat *c = ctx;
	if (err)
		chat_say(c, true, err->msg);
}

/* The rename is durable: its session/meta event reaches the screen
 * through the sink, like every durable event of the session. */
static void renamed_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct chat *c = ctx;
	if (err || !r) {
		chat_say(c, true, err ? err->msg : "not renamed");
		return;
	}
	chat_say(c, false, "renamed");
}

static void saved_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	chat_say(ctx, err != NULL, err ? err->msg : "saved");
}

/* ---- the commands ---- */

static int cmd_quit(struct chat *c, const char *name, const char *arg, struct cerr *err)
{
	(void)name, (void)arg, (void)err;
	c->quit_asked = true;
	c->d.quit(c->d.ctx);
	return 0;
}

static int cmd_help(struct chat *c, const char *name, const char *arg, struct cerr *err)
{
	(void)name, (void)arg, (void)err;
	chat_mode_to(c, CHAT_HELP);
	c->help_top = 0;
	return 0;
}

static int cmd_save(struct chat *c, const char *name, const char *arg, struct cerr *err)
{
	(void)name, (void)arg;
	return host_save(c->d.host, c->id, saved_cb, c, err);
}

static int cmd_title(struct chat *c, const char *name, const char *arg, struct cerr *err)
{
	(void)name;
	return host_rename(c->d.host, c->id, arg, renamed_cb, c, err);
}

static int cmd_approve(struct chat *c, const char *name, const char *arg, struct cerr *err)
{
	(void)name;
	enum approval_policy p;
	if (!arg)
		return cerr_set(err, CERR_USAGE, 0, "/approve needs ask, read-only or all");
	if (approval_policy_parse(arg, &p, err) < 0)
		return -1;
	struct host_settings s = {.approval = arg};
	if (host_update_settings(c->d.host, c->id, &s, done_cb, c, err) < 0)
		return -1;
	chat_say(c, false, "approval policy of this session: recorded");
	return 0;
}

/* The application's own (/new, /model): chat_deps.command. */
static int cmd_app(struct chat *c, const char *name, const char *arg, struct cerr *err)
{
	return c->d.command ? c->d.command(c->d.ctx, name + 1, arg, err)
			    : cerr_set(err, CERR_UNSUPPORTED, 0, "%s is not available here", name);
}

/* In the order Tab lists them, the help screen and docs/keys.md show them. */
static const struct chat_command commands[] = {
	{"/new", NULL, "start a new session (this one is kept)", cmd_app},
	{"/model", "[NAME]", "show the model; with a name, use it from the next turn", cmd_app},
	{"/approve", "ask|read-only|all", "set this session's approval policy for tool calls",
	 cmd_approve},
	{"/title", "[TEXT]", "rename the session; without a text, drop its title", cmd_title},
	{"/save", NULL, "save what a failed save left unsaved", cmd_save},
	{"/help", NULL, "show this help", cmd_help},
	{"/quit", NULL, "quit (the session is kept)", cmd_quit},
};

const struct chat_command *chat_cmd_entries(size_t *n)
{
	*n = sizeof commands / sizeof commands[0];
	return commands;
}

const struct chat_command *chat_cmd_find(const char *name)
{
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

void chat_cmd_run(struct chat *c, const char *line)
{
	char *dup = xstrdup(line);
	char *name = dup, *arg = dup + strcspn(dup, " \t\n");
	if (*arg) {
		*arg++ = '\0';
		arg += strspn(arg, " \t\n");
		size_t n = strlen(arg);
		while (n && (arg[n - 1] == ' ' || arg[n - 1] == '\n' || arg[n - 1] == '\t'))
			arg[--n] = '\0';
	}
	const char *a = *arg ? arg : NULL;
	struct cerr err;
	const struct chat_command *cmd = chat_cmd_find(name);
	int rc = cmd ? cmd->run(c, name, a, &err)
		     : cerr_set(&err, CERR_USAGE, 0, "unknown command '%s' (Tab completes; /help lists keys)",
				name);
	if (rc < 0)
		chat_say(c, true, err.msg);
	free(dup);
}

void chat_cmd_complete(struct chat *c)
{
	size_t n;
	char *text = composer_text(c->comp, &n);
	if (n == 0 || text[0] != '/' || strcspn(text, " \t\n") != n) {
		free(text);
		return;
	}
	const char *match = NULL;
	size_t count = 0;
	char list[256] = "";
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strncmp(commands[i].name, text, n) == 0) {
			match = commands[i].name;
			count++;
			strncat(list, match, sizeof list - strlen(list) - 2);
			strcat(list, " ");
		}
	if (count == 1) {
		char *full = xasprintf("%s ", match);
		composer_set(c->comp, full, strlen(full));
		free(full);
	} else if (count > 1) {
		chat_say(c, false, list);
	} else {
		chat_say(c, true, "no command starts so");
	}
	free(text);
}

/* "/model [NAME]" */
static void usage_of(const struct chat_command *k, char *out, size_t size)
{
	snprintf(out, size, "%s%s%s", k->name, k->args ? " " : "", k->args ? k->args : "");
}

#define CMD_ABOUT "typed in the composer, Enter runs one, Tab completes its name"

void chat_cmd_help(struct buf *out, int keys_width, int width)
{
	buf_addc(out, '\n');
	keytab_help_heading(out, "Slash commands", CMD_ABOUT, width);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		char use[96];
		usage_of(&commands[i], use, sizeof use);
		keytab_help_row(out, use, commands[i].help, keys_width, width);
	}
}

void chat_cmd_markdown(struct buf *out)
{
	buf_adds(out, "\n## Slash commands\n\n"
		      "Typed in the composer, Enter runs one, Tab completes its name. An\n"
		      "unknown one is an error on the status line, never sent to the model.\n"
		      "\n| Command | Action |\n|---|---|\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		char use[96];
		usage_of(&commands[i], use, sizeof use);
		buf_adds(out, "| `");
		for (const char *u = use; *u; u++) /* a bar would end the cell */
			buf_adds(out, *u == '|' ? "\\|" : (char[]){*u, '\0'});
		buf_printf(out, "` | %s |\n", commands[i].help);
	}
}

/* ---- the external editor ---- */

/* The file goes, off the loop; the editor is done with. */
static void edit_discard(struct chat *c)
{
	c->d.files->edit_remove(c->d.files->fctx, c->edit_path);
	free(c->edit_path);
	c->edit_path = NULL;
	c->edit = CHAT_EDIT_NONE;
}

static void editor_closed(uv_handle_t *h)
{
	(void)h;
}

/* The edited prompt read back (on a worker, capped): into the composer. */
static void edit_read_done(void *ctx, const char *path, const char *text, size_t n,
			   const struct cerr *err)
{
	(void)path;
	struct chat *c = ctx;
	c->edit = CHAT_EDIT_NONE;
	if (c->phase == CHAT_CLOSING)
		return;
	if (err) {
		chat_sayf(c, true, "cannot read the edited prompt back: %s", err->msg);
		return;
	}
	while (n && text[n - 1] == '\n')
		n--; /* editors end the file with a newline */
	composer_set(c->comp, text, n);
	if (c->ui)
		uiloop_dirty(c->ui);
}

static void editor_exit(uv_process_t *p, int64_t status, int sig)
{
	struct chat *c = p->data;
	uv_close((uv_handle_t *)p, editor_closed);
	if (c->phase == CHAT_CLOSING) { /* quit while editing: the screen is gone */
		edit_discard(c);
		return;
	}
	tty_retake(c->tty);
	uiloop_pause(c->ui, false);
	if (status != 0 || sig) {
		edit_discard(c);
		chat_say(c, true, "the editor failed: the prompt is as it was");
		return;
	}
	struct cerr err;
	c->edit = CHAT_EDIT_READING;
	if (c->d.files->edit_read(c->d.files->fctx, c->edit_path, CHAT_EDIT_MAX, edit_read_done, c,
				  &err) < 0) {
		edit_discard(c);
		chat_sayf(c, true, "cannot read the edited prompt back: %s", err.msg);
		return;
	}
	free(c->edit_path);
	c->edit_path = NULL;
}

/* The prompt is in the editor's file (written on a worker): run it. */
static void edit_written(void *ctx, const char *path, const char *text, size_t n,
			 const struct cerr *err)
{
	(void)text;
	(void)n;
	struct chat *c = ctx;
	if (err) {
		c->edit = CHAT_EDIT_NONE;
		if (c->phase != CHAT_CLOSING)
			chat_sayf(c, true, "cannot write the prompt for the editor: %s", err->msg);
		return;
	}
	c->edit_path = xstrdup(path);
	if (c->phase == CHAT_CLOSING) {
		edit_discard(c);
		return;
	}
	const char *ed = getenv("VISUAL");
	if (!ed || !*ed)
		ed = getenv("EDITOR");
	if (!ed || !*ed)
		ed = "vi";
	/* The editor's command is a shell word list, as git runs $EDITOR. */
	char *cmd = xasprintf("%s \"$1\"", ed);
	char sh[] = "/bin/sh", dash_c[] = "-c", name[] = "sh";
	char *args[] = {sh, dash_c, cmd, name, c->edit_path, NULL};
	uv_stdio_container_t io[3];
	for (int i = 0; i < 3; i++)
		io[i] = (uv_stdio_container_t){.flags = UV_INHERIT_FD, .data.fd = i};
	uv_process_options_t o = {.exit_cb = editor_exit, .file = args[0], .args = args,
				  .stdio_count = 3, .stdio = io};
	uiloop_pause(c->ui, true);
	tty_release(c->tty);
	c->editor.data = c;
	int rc = uv_spawn(c->d.loop, &c->editor, &o);
	free(cmd);
	if (rc < 0) {
		uv_close((uv_handle_t *)&c->editor, editor_closed); /* libuv: even when it failed */
		tty_retake(c->tty);
		uiloop_pause(c->ui, false);
		edit_discard(c);
		chat_say(c, true, "cannot start the editor");
		return;
	}
	c->edit = CHAT_EDIT_RUNNING;
}

void chat_cmd_editor(struct chat *c)
{
	if (c->edit != CHAT_EDIT_NONE)
		return; /* the editor runs, or its file is on the way */
	size_t n;
	char *text = composer_text(c->comp, &n);
	struct cerr err;
	int rc = c->d.files->edit_write(c->d.files->fctx, text, n, edit_written, c, &err);
	free(text);
	if (rc < 0) {
		chat_sayf(c, true, "cannot write the prompt for the editor: %s", err.msg);
		return;
	}
	c->edit = CHAT_EDIT_WRITING;
}
