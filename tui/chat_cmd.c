/* chat_cmd.c — slash commands, their completion and the external editor
 * (chat_cmd.h). */
#include "tui/chat_cmd.h"
#include "tui/chat_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "engine/approval.h"

static const char *const commands[] = {"/new", "/model", "/approve", "/title", "/save", "/help",
				       "/quit", NULL};

static void done_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	struct chat *c = ctx;
	if (err)
		chat_say(c, true, err->msg);
}

/* The rename is durable: the screen shows the title it asked for. */
static void renamed_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct chat *c = ctx;
	if (err || !r) {
		chat_say(c, true, err ? err->msg : "not renamed");
		free(c->renaming);
		c->renaming = NULL;
		return;
	}
	cJSON *d = cJSON_CreateObject();
	if (c->renaming)
		cJSON_AddStringToObject(d, "title", c->renaming);
	else
		cJSON_AddNullToObject(d, "title");
	transcript_apply_event(c->tr, VT_SESSION_META, NULL, 0, 0, d);
	cJSON_Delete(d);
	free(c->renaming);
	c->renaming = NULL;
	chat_say(c, false, "renamed");
}

static void saved_cb(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	chat_say(ctx, err != NULL, err ? err->msg : "saved");
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
	int rc = 0;
	if (strcmp(name, "/quit") == 0) {
		c->quit_asked = true;
		c->d.quit(c->d.ctx);
	} else if (strcmp(name, "/help") == 0) {
		chat_mode_to(c, CHAT_HELP);
		c->help_top = 0;
	} else if (strcmp(name, "/save") == 0) {
		rc = host_save(c->d.host, c->id, saved_cb, c, &err);
	} else if (strcmp(name, "/title") == 0) {
		free(c->renaming);
		c->renaming = a ? xstrdup(a) : NULL;
		rc = host_rename(c->d.host, c->id, a, renamed_cb, c, &err);
	} else if (strcmp(name, "/approve") == 0) {
		enum approval_policy p;
		if (!a)
			rc = cerr_set(&err, CERR_USAGE, 0, "/approve needs ask, read-only or all");
		else if ((rc = approval_policy_parse(a, &p, &err)) == 0) {
			struct host_settings s = {.approval = a};
			rc = host_update_settings(c->d.host, c->id, &s, done_cb, c, &err);
			if (rc == 0)
				chat_say(c, false, "approval policy of this session: recorded");
		}
	} else if (strcmp(name, "/new") == 0 || strcmp(name, "/model") == 0) {
		rc = c->d.command ? c->d.command(c->d.ctx, name + 1, a, &err)
				  : cerr_set(&err, CERR_UNSUPPORTED, 0, "%s is not available here", name);
	} else {
		rc = cerr_set(&err, CERR_USAGE, 0, "unknown command '%s' (Tab completes; /help lists keys)",
			      name);
	}
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
	for (const char *const *k = commands; *k; k++)
		if (strncmp(*k, text, n) == 0) {
			match = *k;
			count++;
			strncat(list, *k, sizeof list - strlen(list) - 2);
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

/* ---- the external editor ---- */

static void editor_closed(uv_handle_t *h)
{
	(void)h;
}

static void editor_exit(uv_process_t *p, int64_t status, int sig)
{
	struct chat *c = p->data;
	uv_close((uv_handle_t *)p, editor_closed);
	if (c->phase == CHAT_CLOSING) { /* quit while editing: the screen is gone */
		unlink(c->edit_path);
		free(c->edit_path);
		c->edit_path = NULL;
		return;
	}
	tty_retake(c->tty);
	uiloop_pause(c->ui, false);
	/* A small file the editor just wrote, read back on the loop. */
	int fd = open(c->edit_path, O_RDONLY | O_CLOEXEC);
	struct buf b = BUF_INIT;
	char chunk[8192];
	ssize_t r;
	while (fd >= 0 && (r = read(fd, chunk, sizeof chunk)) > 0)
		buf_add(&b, chunk, (size_t)r);
	if (fd >= 0)
		close(fd);
	if (status != 0 || sig) {
		chat_say(c, true, "the editor failed: the prompt is as it was");
	} else if (fd < 0) {
		chat_say(c, true, "cannot read the edited prompt back");
	} else {
		while (b.len && b.p[b.len - 1] == '\n')
			b.len--; /* editors end the file with a newline */
		composer_set(c->comp, b.p ? b.p : "", b.len);
	}
	buf_release(&b);
	unlink(c->edit_path);
	free(c->edit_path);
	c->edit_path = NULL;
}

void chat_cmd_editor(struct chat *c)
{
	if (c->edit_path)
		return; /* the editor runs */
	const char *ed = getenv("VISUAL");
	if (!ed || !*ed)
		ed = getenv("EDITOR");
	if (!ed || !*ed)
		ed = "vi";
	char *path = xasprintf("%s/prompt-XXXXXX", c->root);
	int fd = mkstemp(path);
	size_t n;
	char *text = composer_text(c->comp, &n);
	bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
	free(text);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		chat_say(c, true, "cannot write the prompt for the editor");
		if (fd >= 0)
			unlink(path);
		free(path);
		return;
	}
	/* The editor's command is a shell word list, as git runs $EDITOR. */
	char *cmd = xasprintf("%s \"$1\"", ed);
	char sh[] = "/bin/sh", dash_c[] = "-c", name[] = "sh";
	char *args[] = {sh, dash_c, cmd, name, path, NULL};
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
		unlink(path);
		free(path);
		chat_say(c, true, "cannot start the editor");
		return;
	}
	c->edit_path = path;
}
