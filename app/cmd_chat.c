/* cmd_chat.c — `cairn` on a terminal: the chat screen (tui/chat.h) on the
 * parts every session runs on (app/parts.h). `cairn` starts a new session
 * in the current directory, `-c` continues this directory's latest (none:
 * a new one, said on the status line), `-r ID` opens one session (a
 * unique id prefix works); --provider, --model, --system and --approve as
 * in headless mode.
 *
 * Quitting (the user, SIGTERM, SIGHUP) gives the terminal back first, then
 * closes the host, which cancels and joins a running turn, keeps prompts
 * never started queued and flushes every save; the last answer and how to
 * resume are printed to the normal screen. */
#include "app/chat_files.h"
#include "app/cli.h"
#include "app/cmds.h"
#include "app/parts.h"
#include "base/buf.h"
#include "base/termsafe.h"
#include "base/xalloc.h"
#include "tui/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A quit exits within 5 s: past this, what still saves is said (and
 * waited for, never cut). */
#define DRAIN_MS 4500

struct ch {
	struct cli *c;
	struct parts p;
	struct parts_opts o;
	const char *resume_opt;
	bool cont;
	struct chat *chat;
	struct chat_files *files; /* the screen's files, off the loop */
	char id[SESSION_ID_MAX + 1];
	bool have_log;   /* the session has a log: resuming it makes sense */
	char *model_opt; /* /model's choice (owned) */
	unsigned reading; /* system prompt reads asked and not ended (parts_load_prompt) */
	bool announce;    /* the newest read's end makes the screen ready */
	const char *note; /* what the screen says then (static) */
	bool with_settings; /* the newest read chooses with the session's settings */
	struct cerr fail;
};

static int parse_args(struct ch *h, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		if (strcmp(a, "-c") == 0 || strcmp(a, "--continue") == 0)
			h->cont = true;
		else if (strcmp(a, "-r") == 0 || strcmp(a, "--resume") == 0)
			slot = &h->resume_opt;
		else if (!(slot = parts_opts_slot(&h->o, a)))
			return cli_usage(NULL, "unknown option '%s' (see 'cairn --help')", a);
		if (slot) {
			if (i + 1 >= argc || !*argv[i + 1])
				return cli_usage(NULL, "%s needs a value", a);
			*slot = argv[++i];
		}
	}
	if (h->cont && h->resume_opt)
		return cli_usage(NULL, "-r and -c cannot be used together");
	struct cerr err;
	if (parts_opts_check(&h->o, &err) < 0)
		return cli_usage(NULL, "%s", err.msg);
	h->o.resume = h->resume_opt;
	return 0;
}

/* The configured bell on this terminal. */
static enum tty_bell bell_kind(enum config_bell b)
{
	switch (b) {
	case CONFIG_BELL_OFF:
		return TTY_BELL_NONE;
	case CONFIG_BELL_BEL:
		return TTY_BELL_BEL;
	case CONFIG_BELL_OSC9:
		return TTY_BELL_OSC9;
	case CONFIG_BELL_AUTO:
		break;
	}
	return tty_bell_auto();
}

/* ---- the session ---- */

/* A system prompt read ended (parts_load_prompt, on a worker): the newest
 * one's end chooses the call with it, and, after an open or /new, makes
 * the screen ready. */
static void prompt_read(void *ctx)
{
	struct ch *h = ctx;
	if (--h->reading > 0)
		return; /* a newer read is on its way */
	bool announce = h->announce;
	h->announce = false;
	struct host_settings set = {0};
	struct cerr e, err;
	if (h->with_settings)
		host_settings(h->p.host, h->id, &set, &e);
	struct config_selection sel;
	if (parts_select_call(&h->p, h->id, h->with_settings ? &set : NULL, &sel, &err) < 0) {
		if (announce)
			chat_failed(h->chat, &err);
		else
			chat_say(h->chat, true, err.msg);
		return;
	}
	if (announce)
		chat_ready(h->chat, h->id, sel.provider->name, sel.model, h->note);
}

/* Read the system prompt off the loop, then choose the call (with the
 * session's settings, or none for a new session); announce: the screen
 * becomes ready with note then. */
static void read_prompt(struct ch *h, bool with_settings, bool announce, const char *note)
{
	h->with_settings = with_settings;
	if (announce) {
		h->announce = true;
		h->note = note;
	}
	h->reading++;
	parts_load_prompt(&h->p, prompt_read, h);
}

static void opened(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	struct ch *h = ctx;
	if (err && (err->cls == CERR_LOCKED || err->cls == CERR_CORRUPT ||
		    err->cls == CERR_UNSUPPORTED)) {
		/* Held by another process, or damaged: shown, never written. */
		chat_page_view_only(h->chat, h->id, err);
		return;
	}
	if (err) {
		chat_failed(h->chat, err);
		return;
	}
	h->have_log = true;
	read_prompt(h, true, true, NULL);
}

static void created(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)ctx;
	(void)r;
	(void)err; /* a new session in memory: nothing can fail */
}

static int new_session(struct ch *h, const char *note, struct cerr *err)
{
	if (host_create(h->p.host, h->p.cwd, NULL, h->id, created, h, err) < 0)
		return -1;
	h->have_log = false;
	read_prompt(h, false, true, note);
	return 0;
}

static void released(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	struct ch *h = ctx;
	struct cerr e;
	if (err)
		chat_say(h->chat, true, err->msg);
	else if (new_session(h, "a new session", &e) < 0)
		chat_say(h->chat, true, e.msg);
}

/* /new and /model. */
static int command(void *ctx, const char *name, const char *arg, struct cerr *err)
{
	struct ch *h = ctx;
	if (strcmp(name, "new") == 0) {
		if (host_state(h->p.host, h->id) == HOST_TURN)
			return cerr_set(err, CERR_BUSY, 0, "a turn runs: wait or cancel it first");
		return host_release(h->p.host, h->id, released, h, err);
	}
	if (!arg) {
		struct config_selection sel;
		struct host_settings set = {0};
		struct cerr e;
		host_settings(h->p.host, h->id, &set, &e);
		if (config_select(&h->p.cfg, h->o.provider, h->o.model, set.provider, set.model, &sel,
				  err) < 0)
			return -1;
		char *msg = xasprintf("model: %s (%s)", sel.model, sel.provider->name);
		chat_say(h->chat, false, msg);
		free(msg);
		return 0;
	}
	free(h->model_opt);
	h->model_opt = xstrdup(arg);
	h->o.model = h->model_opt;
	h->p.o.model = h->model_opt;
	struct host_settings set = {0};
	struct cerr e;
	host_settings(h->p.host, h->id, &set, &e);
	/* With the prompt read last; then read again off the loop, which
	 * chooses the call once more with what the files hold now. */
	if (parts_select_call(&h->p, h->id, &set, NULL, err) < 0)
		return -1;
	read_prompt(h, true, false, NULL);
	char *msg = xasprintf("model: %s from the next turn", arg);
	chat_say(h->chat, false, msg);
	free(msg);
	return 0;
}

/* ---- quitting ---- */

/* The screen gave the terminal back: say what stays, then close. */
static void screen_closed(void *ctx)
{
	struct ch *h = ctx;
	const char *answer = chat_last_answer(h->chat);
	if (answer) {
		/* The last answer into the terminal's scrollback, made safe. */
		char *safe = termsafe_str(answer, TERMSAFE_TEXT);
		printf("%s\n\n", safe);
		free(safe);
	}
	/* A new session has a log once its first prompt was sent. */
	if (h->have_log || (*h->id && (answer || chat_has_turns(h->chat))))
		cli_printf(stdout, "resume: cairn -r %s\n", h->id);
	fflush(stdout);
	parts_close(&h->p, DRAIN_MS, NULL, NULL);
}

static void quit(void *ctx)
{
	struct ch *h = ctx;
	chat_close(h->chat, screen_closed, h);
}

static void recovered(void *ctx, size_t n, size_t failed, const struct cerr *err)
{
	struct ch *h = ctx;
	(void)err;
	char msg[160];
	if (failed)
		snprintf(msg, sizeof msg, "%zu interrupted session%s could not be recovered (cairn doctor)",
			 failed, failed == 1 ? "" : "s");
	else if (n)
		snprintf(msg, sizeof msg, "recovered %zu interrupted session%s", n, n == 1 ? "" : "s");
	else
		return;
	chat_say(h->chat, failed > 0, msg);
}

int cmd_chat(struct cli *c, int argc, char **argv)
{
	struct ch *h = xcalloc(1, sizeof *h);
	h->c = c;
	struct cerr err = {0};
	int code = parse_args(h, argc, argv);
	if (code != 0)
		goto out;
	if (!isatty(0) || !isatty(1)) {
		code = cli_usage(NULL, "the chat screen needs a terminal (use -p for a headless turn)");
		goto out;
	}
	if (parts_open(&h->p, c, &h->o, h->cont, &err) < 0) {
		code = cli_fail(&err);
		goto out;
	}
	h->files = chat_files_new(&h->p.loop, h->p.root);
	struct chat_deps d = {.loop = &h->p.loop, .host = h->p.host, .sink = h->p.sink,
			      .files = h->files, .cwd = h->p.cwd, .draft = h->p.draft, .ringer = bell_kind(h->p.cfg.bell), .command = command,
			      .quit = quit, .ctx = h};
	h->chat = chat_new(&d);
	if (chat_start(h->chat, &err) < 0) {
		h->fail = err;
		chat_close(h->chat, screen_closed, h);
	} else {
		const char *id = *h->p.resolved ? h->p.resolved : h->cont ? h->p.latest : "";
		int rc;
		if (*id) {
			snprintf(h->id, sizeof h->id, "%s", id);
			chat_page_preview(h->chat, h->id);
			rc = host_open_history(h->p.host, h->id, chat_history,
					       chat_history_ctx(h->chat, h->id), opened, h, &err);
		} else {
			rc = new_session(h, h->cont ? "no session here yet: a new one" : NULL, &err);
		}
		if (rc < 0)
			chat_failed(h->chat, &err);
		if (host_recover_interrupted(h->p.host, recovered, h, &err) < 0)
			chat_say(h->chat, true, err.msg);
	}
	uv_run(&h->p.loop, UV_RUN_DEFAULT);
	code = h->fail.cls != CERR_OK ? cli_fail(&h->fail) : 0;
out:
	chat_free(h->chat);
	chat_files_free(h->files); /* after the loop ran its work */
	parts_release(&h->p);
	free(h->model_opt);
	free(h);
	return code;
}
