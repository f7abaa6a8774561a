/* tool_shell.c — the shell tool: `/bin/sh -c COMMAND` through uv_spawn in
 * a session of its own (no controlling terminal, its process group is the
 * unit that is signalled), stdin /dev/null, stdout and stderr into one pipe
 * so the output stays in order. What is spawned is a reaper (tool_reaper.c)
 * that leads the group — the group's id is its pid — runs the shell in it,
 * exits as the shell did, and ends the group if cairn dies first. A run
 * ends when that main process has exited, the pipe is closed and no live
 * process is left in the group — or, after KILL, when waiting longer
 * cannot help (docs/tools.md: a descendant that left the group is beyond
 * reach). */
#include "engine/tool_int.h"
#include "engine/tool_group.h"
#include "engine/tool_reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xalloc.h"

extern char **environ;

#define SHELL_DRAIN_MS 200u  /* output read after the main process exits */
#define SHELL_KILL_MS 2000u  /* TERM to KILL */
#define SHELL_GIVEUP_MS 1000u /* KILL to giving up on what still holds the pipe */
#define SHELL_POLL_MS 50u    /* how often a group is checked once the main process exited */

/* Each phase owns the meaning of the deadline timer. */
enum shell_phase {
	SHELL_RUNNING,  /* the main process runs; the deadline is the timeout */
	SHELL_DRAINING, /* it exited; output is read a little longer */
	SHELL_TERMED,   /* the group got TERM; KILL at the deadline */
	SHELL_KILLED,   /* the group got KILL; stop waiting at the deadline */
	SHELL_CLOSING,  /* handles are closing; the callback runs when all are */
};

/* The output kept: its head, then a ring of its latest bytes, and how many
 * fell out of the ring in between. */
struct collect {
	struct buf head;
	size_t head_cap;
	char *ring;
	size_t ring_cap, ring_start, ring_len;
	unsigned long long dropped;
};

struct shell {
	struct tool_run run; /* first: tool_run * <-> struct shell * */
	tool_done_fn cb;
	void *cb_ctx;
	struct tool_limits lim;
	unsigned timeout_ms;
	enum shell_phase phase;
	uv_process_t proc;
	uv_pipe_t out;
	uv_timer_t deadline;
	uv_timer_t poll;
	int nopen;       /* handles initialised and not yet closed */
	bool has_proc, has_out;
	pid_t pgid;      /* = the reaper's pid (setsid) */
	bool exited, eof, timed_out, canceled;
	int64_t exit_status;
	int term_signal;
	char *error;     /* the run could not start: what the model reads */
	struct collect col;
	char rd[65536];
};

static void collect_add(struct collect *c, const char *p, size_t n)
{
	size_t room = c->head.len < c->head_cap ? c->head_cap - c->head.len : 0;
	size_t k = n < room ? n : room;
	buf_add(&c->head, p, k);
	p += k;
	n -= k;
	if (!n)
		return;
	if (!c->ring)
		c->ring = xmalloc(c->ring_cap);
	if (n >= c->ring_cap) {
		c->dropped += c->ring_len + (n - c->ring_cap);
		memcpy(c->ring, p + (n - c->ring_cap), c->ring_cap);
		c->ring_start = 0;
		c->ring_len = c->ring_cap;
		return;
	}
	if (c->ring_len + n > c->ring_cap) {
		size_t drop = c->ring_len + n - c->ring_cap;
		c->ring_start = (c->ring_start + drop) % c->ring_cap;
		c->ring_len -= drop;
		c->dropped += drop;
	}
	size_t at = (c->ring_start + c->ring_len) % c->ring_cap;
	size_t first = c->ring_cap - at < n ? c->ring_cap - at : n;
	memcpy(c->ring + at, p, first);
	memcpy(c->ring, p + first, n - first);
	c->ring_len += n;
}

/* Head, a note of what fell out, and the ring in order. */
static void collect_join(struct collect *c, struct buf *out)
{
	buf_add(out, c->head.p, c->head.len);
	if (c->dropped)
		buf_printf(out, "\n[... %llu bytes cut ...]\n", c->dropped);
	size_t first = c->ring_cap - c->ring_start < c->ring_len ? c->ring_cap - c->ring_start
								  : c->ring_len;
	if (c->ring_len) {
		buf_add(out, c->ring + c->ring_start, first);
		buf_add(out, c->ring, c->ring_len - first);
	}
}

/* Is a process of group pgid still alive (tool_group.c)? Without /proc
 * to tell a zombie from a live member, any member counts. */
static bool group_alive(pid_t pgid)
{
	return tool_group_state(pgid, 0) != TOOL_GROUP_EMPTY;
}

static void signal_group(struct shell *s, int sig)
{
	if (s->pgid > 0)
		kill(-s->pgid, sig);
}

static void deliver(struct shell *s)
{
	struct tool_result r = {.status = TOOL_OK, .exit_code = -1};
	struct buf text = BUF_INIT;
	char trailer[64] = "";
	if (s->error) {
		r.status = TOOL_ERROR;
		buf_adds(&text, s->error);
	} else {
		collect_join(&s->col, &text);
		if (s->exited && !s->term_signal)
			r.exit_code = (int)s->exit_status;
		r.signal = s->exited ? s->term_signal : 0;
		if (s->canceled) {
			r.status = TOOL_CANCELED;
			snprintf(trailer, sizeof trailer, "[canceled by the user]");
		} else if (s->timed_out) {
			r.status = TOOL_ERROR;
			if (s->timeout_ms % 1000)
				snprintf(trailer, sizeof trailer, "[timed out after %u ms]", s->timeout_ms);
			else
				snprintf(trailer, sizeof trailer, "[timed out after %u s]", s->timeout_ms / 1000);
		} else if (!s->exited) {
			r.status = TOOL_ERROR;
			snprintf(trailer, sizeof trailer, "[did not exit after KILL]");
		} else if (s->term_signal) {
			r.status = TOOL_ERROR;
			snprintf(trailer, sizeof trailer, "[killed by signal %d]", s->term_signal);
		} else if (s->exit_status != 0) {
			r.status = TOOL_ERROR;
			snprintf(trailer, sizeof trailer, "[exit %d]", (int)s->exit_status);
		}
	}
	tool_result_text(&r, text.p ? text.p : "", text.len, &s->lim);
	buf_release(&text);
	/* The status line follows the capped text so the model always sees it. */
	char **ends[] = {&r.output, &r.full};
	for (size_t i = 0; trailer[0] && i < 2; i++) {
		if (!*ends[i])
			continue;
		size_t n = strlen(*ends[i]);
		char *t = xasprintf("%s%s%s\n", *ends[i], n && (*ends[i])[n - 1] != '\n' ? "\n" : "",
				    trailer);
		free(*ends[i]);
		*ends[i] = t;
	}
	s->cb(s->cb_ctx, &s->run, &r);
	buf_release(&s->col.head);
	free(s->col.ring);
	free(s->error);
	free(s);
}

static void close_cb(uv_handle_t *h)
{
	struct shell *s = h->data;
	if (--s->nopen == 0)
		deliver(s);
}

static void close_once(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, close_cb);
}

/* Stop everything; the callback runs once every handle is closed. */
static void shell_finish(struct shell *s)
{
	if (s->phase == SHELL_CLOSING)
		return;
	s->phase = SHELL_CLOSING;
	close_once((uv_handle_t *)&s->deadline);
	close_once((uv_handle_t *)&s->poll);
	if (s->has_out)
		close_once((uv_handle_t *)&s->out);
	if (s->has_proc)
		close_once((uv_handle_t *)&s->proc);
}

/* Joined: the main process reaped, the pipe closed, the group empty. */
static void check_done(struct shell *s)
{
	if (s->phase != SHELL_CLOSING && s->exited && s->eof && !group_alive(s->pgid))
		shell_finish(s);
}

static void deadline_cb(uv_timer_t *t);

static void deadline_start(uv_timer_t *t, uint64_t ms)
{
	uv_timer_start(t, deadline_cb, ms, 0);
}

static void term_group(struct shell *s)
{
	signal_group(s, SIGTERM);
	s->phase = SHELL_TERMED;
	deadline_start(&s->deadline, SHELL_KILL_MS);
}

static void deadline_cb(uv_timer_t *t)
{
	struct shell *s = t->data;
	switch (s->phase) {
	case SHELL_RUNNING:
		s->timed_out = true;
		term_group(s);
		break;
	case SHELL_DRAINING:
		/* The group holds the pipe open (a background job); or nothing in
		 * it is left and a descendant outside it does. */
		if (group_alive(s->pgid))
			term_group(s);
		else
			shell_finish(s);
		break;
	case SHELL_TERMED:
		signal_group(s, SIGKILL);
		s->phase = SHELL_KILLED;
		deadline_start(&s->deadline, SHELL_GIVEUP_MS);
		break;
	case SHELL_KILLED:
		shell_finish(s);
		break;
	case SHELL_CLOSING:
		break;
	}
}

static void poll_cb(uv_timer_t *t)
{
	check_done(t->data);
}

static void exit_cb(uv_process_t *p, int64_t status, int sig)
{
	struct shell *s = p->data;
	s->exited = true;
	s->exit_status = status;
	s->term_signal = sig;
	if (s->phase == SHELL_RUNNING) {
		s->phase = SHELL_DRAINING;
		deadline_start(&s->deadline, SHELL_DRAIN_MS);
	}
	uv_timer_start(&s->poll, poll_cb, SHELL_POLL_MS, SHELL_POLL_MS);
	check_done(s);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct shell *s = h->data;
	*b = uv_buf_init(s->rd, sizeof s->rd);
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct shell *s = st->data;
	if (n > 0) {
		collect_add(&s->col, b->base, (size_t)n);
		return;
	}
	if (n == 0)
		return;
	/* EOF, or an error reading: either way nothing more comes. */
	s->eof = true;
	uv_read_stop(st);
	close_once((uv_handle_t *)st);
	check_done(s);
}

static void shell_cancel(struct tool_run *run)
{
	struct shell *s = (struct shell *)run;
	if (s->phase == SHELL_CLOSING || s->canceled)
		return;
	s->canceled = true;
	if (s->phase == SHELL_RUNNING || s->phase == SHELL_DRAINING)
		term_group(s);
}

/* The arguments, or an error message the model reads (caller frees). */
static char *shell_args(const cJSON *args, const char **command, unsigned *timeout_ms)
{
	if (!cJSON_IsObject(args))
		return xstrdup("shell: arguments must be an object with \"command\"");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(args, "command");
	if (!cJSON_IsString(c) || !c->valuestring[0])
		return xstrdup("shell: \"command\" must be a non-empty string");
	*command = c->valuestring;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(args, "timeout_ms");
	if (t && !cJSON_IsNull(t)) {
		double v = cJSON_IsNumber(t) ? t->valuedouble : -1;
		if (v < 1 || v > TOOL_TIMEOUT_MS_MAX || v != (double)(unsigned)v)
			return xasprintf("shell: \"timeout_ms\" must be an integer from 1 to %u",
					 TOOL_TIMEOUT_MS_MAX);
		*timeout_ms = (unsigned)v;
	}
	return NULL;
}

/* cairn's own descriptors are opened close-on-exec; ones it inherited from
 * whatever started it may not be. None of them is the tool's business:
 * every descriptor above 2 is made close-on-exec before a spawn (one
 * close_range call; /proc/self/fd where that is missing). */
static void fds_cloexec(void)
{
#ifdef CLOSE_RANGE_CLOEXEC
	if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
		return;
#endif
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);
		if (fd > 2 && fd != dirfd(d)) {
			int fl = fcntl(fd, F_GETFD);
			if (fl >= 0 && !(fl & FD_CLOEXEC))
				fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
		}
	}
	closedir(d);
}

/* Spawn the command; 0, or -1 with s->error set. */
static int shell_spawn(struct shell *s, uv_loop_t *loop, const struct tool_ctx *ctx,
		       const char *command)
{
	uv_file fds[2];
	int rc = uv_pipe(fds, UV_NONBLOCK_PIPE, 0);
	if (rc < 0) {
		s->error = xasprintf("shell: cannot make a pipe: %s", uv_strerror(rc));
		return -1;
	}
	uv_pipe_init(loop, &s->out, 0);
	s->out.data = s;
	s->has_out = true;
	s->nopen++;
	rc = uv_pipe_open(&s->out, fds[0]);
	if (rc < 0) {
		close(fds[0]);
		close(fds[1]);
		s->error = xasprintf("shell: cannot open a pipe: %s", uv_strerror(rc));
		return -1;
	}
	const char *why = NULL;
	const char *exe = tool_reaper_exe(&why);
	int death = exe ? tool_reaper_fd() : -1;
	if (death < 0) {
		close(fds[1]);
		s->error = exe ? xasprintf("shell: cannot make the pipe that ends a command with cairn: %s",
					   strerror(errno))
			       : xasprintf("shell: cannot run commands: %s", why);
		return -1;
	}
	char **own_env = ctx->env ? NULL : tool_env(environ, NULL);
	/* ps shows "cairn --internal-tool-reaper /bin/sh -c COMMAND". */
	char name[] = "cairn", reaper_arg[] = TOOL_REAPER_ARG, sh[] = "/bin/sh", dash_c[] = "-c";
	char *argv[] = {name, reaper_arg, sh, dash_c, (char *)command, NULL};
	uv_stdio_container_t stdio[TOOL_REAPER_FD + 1] = {
		{.flags = UV_IGNORE},  /* libuv opens /dev/null for it */
		{.flags = UV_INHERIT_FD, .data.fd = fds[1]},
		{.flags = UV_INHERIT_FD, .data.fd = fds[1]},
		{.flags = UV_INHERIT_FD, .data.fd = death},
	};
	uv_process_options_t o = {
		.exit_cb = exit_cb,
		.file = exe,
		.args = argv,
		.env = ctx->env ? (char **)ctx->env : own_env,
		.cwd = ctx->cwd,
		.flags = UV_PROCESS_DETACHED,
		.stdio_count = TOOL_REAPER_FD + 1,
		.stdio = stdio,
	};
	s->proc.data = s;
	fds_cloexec();
	rc = uv_spawn(loop, &s->proc, &o);
	/* uv_spawn initialises the handle even when it fails: close it then too. */
	s->has_proc = true;
	s->nopen++;
	close(fds[1]);
	tool_env_free(own_env);
	if (rc < 0) {
		s->error = xasprintf("shell: cannot run the command in '%s': %s",
				     ctx->cwd ? ctx->cwd : ".", uv_strerror(rc));
		return -1;
	}
	s->pgid = s->proc.pid;
	uv_read_start((uv_stream_t *)&s->out, alloc_cb, read_cb);
	return 0;
}

struct tool_run *tool_shell_start(const struct tool_ctx *ctx, const cJSON *args,
				  tool_done_fn cb, void *cb_ctx, struct cerr *err)
{
	struct shell *s = xcalloc(1, sizeof *s);
	s->run.cancel = shell_cancel;
	s->cb = cb;
	s->cb_ctx = cb_ctx;
	s->lim = tool_limits_resolve(&ctx->limits);
	s->timeout_ms = s->lim.timeout_ms;
	/* Head and ring share full_max less room for the note between them,
	 * so the joined text fits full_max whole. */
	size_t keep = s->lim.full_max > 256 ? s->lim.full_max - 64 : s->lim.full_max;
	s->col.head_cap = keep / 2;
	s->col.ring_cap = keep - s->col.head_cap;
	uv_timer_init(ctx->loop, &s->deadline);
	uv_timer_init(ctx->loop, &s->poll);
	s->deadline.data = s->poll.data = s;
	s->nopen = 2;
	const char *command = NULL;
	s->error = shell_args(args, &command, &s->timeout_ms);
	if (s->error || shell_spawn(s, ctx->loop, ctx, command) < 0) {
		/* Completes from the loop: the close callbacks run later. */
		shell_finish(s);
		return &s->run;
	}
	deadline_start(&s->deadline, s->timeout_ms);
	return &s->run;
}
