/* tool_reaper.c — a shell command must not outlive the program that ran
 * it: after a kill -9 of cairn, a command and everything it started would
 * otherwise go on (re-parented to init) and finish its effects while the
 * session says the call's outcome is unknown.
 *
 * Why a process of its own: uv_spawn has no hook between fork and exec,
 * and PR_SET_PDEATHSIG (Linux only) reaches one process, not a group, and
 * follows the thread that forked. So the shell tool spawns this program
 * again, as `EXE --internal-tool-reaper /bin/sh -c COMMAND`, in a session
 * of its own (setsid: the reaper leads the command's process group), with
 * the read end of a pipe on descriptor 3. The write end is held by cairn
 * alone (close-on-exec: no child keeps it past its exec), so the pipe
 * reaches end of file exactly when cairn is gone, however it ended; the
 * kernel closes it at exit.
 *
 * The reaper forks the command into its own group and waits on two
 * things: the pipe, and the command's exit (SIGCHLD through a self-pipe).
 * - The pipe ends first: kill(0, SIGKILL) ends the whole group, the
 *   reaper and the command's own children with it, at once.
 * - The command exits first: the reaper exits the same way (the same
 *   code, or the same signal raised on itself), so cairn sees what it
 *   always saw. If members of the group are still alive then (a
 *   background job), a guard forked from the reaper keeps watching the
 *   pipe until none is left (/proc tells; without /proc this last part
 *   is not done), so cairn's death still ends them.
 * The reaper and the guard ignore the signals a group receives on a
 * cancel or timeout (TERM) and from a command that signals its own group
 * (HUP, INT, QUIT, USR1, USR2, ALRM, PIPE), so the command's own fate is
 * what gets reported; SIGKILL still ends them with the rest. What no
 * reaper can reach: a process that left the group on purpose (setsid,
 * setpgid — a daemon) is on its own, as the documentation says. */
#include "engine/tool_reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "engine/tool_group.h"

#define REAPER_GUARD_MS 50 /* how often a guard looks whether its group is empty */

static bool dispatched;
static const char *reaper_exe;
static char exe_path[4096];

static pthread_once_t pipe_once = PTHREAD_ONCE_INIT;
static int pipe_rd = -1, pipe_err;

/* The signals a reaper outlives (see above). */
static const int outlived[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE};

static int self_pipe[2] = {-1, -1};

static void on_chld(int sig)
{
	int e = errno;
	ssize_t w = write(self_pipe[1], "", 1); /* full: a wake-up is pending anyway */
	(void)w;
	errno = e;
}

/* Exit as the command did: its code, or its signal raised on ourselves
 * (no core of our own: the command dumped one if it was to). */
_Noreturn static void mirror(int status)
{
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	int sig = WTERMSIG(status);
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	_exit(128 + sig);
}

/* Did the pipe to cairn end (or fail)? Nothing is ever written to it. */
static bool pipe_ended(const struct pollfd *p)
{
	return p->revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL);
}

/* What stays of the reaper once the command exited with members of its
 * group left: end the group if cairn goes, leave once the group is empty. */
_Noreturn static void guard(void)
{
	pid_t me = getpid(), pgid = getpgrp();
	for (;;) {
		struct pollfd p = {.fd = TOOL_REAPER_FD, .events = POLLIN};
		int n = poll(&p, 1, REAPER_GUARD_MS);
		if (n > 0 && pipe_ended(&p))
			break;
		if (n == 0 && tool_group_state(pgid, me) == TOOL_GROUP_EMPTY)
			_exit(0);
	}
	kill(0, SIGKILL);
	_exit(137);
}

_Noreturn static void reaper_main(char **cmd)
{
	struct stat st;
	if (fstat(TOOL_REAPER_FD, &st) != 0 || !S_ISFIFO(st.st_mode)) {
		fprintf(stderr, "cairn: %s is internal (descriptor %d must be a pipe)\n",
			TOOL_REAPER_ARG, TOOL_REAPER_FD);
		_exit(2);
	}
	fcntl(TOOL_REAPER_FD, F_SETFD, FD_CLOEXEC);
#ifdef __linux__
	/* Run as /proc/self/exe, ps would call it "exe". */
	prctl(PR_SET_NAME, "cairn-reaper", 0, 0, 0);
#endif
	if (pipe(self_pipe) != 0) {
		fprintf(stderr, "cairn: reaper: cannot make a pipe: %s\n", strerror(errno));
		_exit(126);
	}
	for (int i = 0; i < 2; i++) {
		fcntl(self_pipe[i], F_SETFD, FD_CLOEXEC);
		fcntl(self_pipe[i], F_SETFL, O_NONBLOCK);
	}
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	struct sigaction sa = {.sa_handler = on_chld, .sa_flags = SA_NOCLDSTOP};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "cairn: reaper: cannot fork: %s\n", strerror(errno));
		_exit(126);
	}
	if (pid == 0) {
		/* The handler goes at exec; the ignored signals were never set here. */
		sigprocmask(SIG_SETMASK, &old, NULL);
		execv(cmd[0], cmd);
		fprintf(stderr, "cairn: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	for (size_t i = 0; i < sizeof outlived / sizeof outlived[0]; i++)
		sigaction(outlived[i], &ign, NULL);
	/* The output pipe is the command's: holding it would delay its end. */
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	int status = 0;
	for (;;) {
		struct pollfd p[2] = {{.fd = TOOL_REAPER_FD, .events = POLLIN},
				      {.fd = self_pipe[0], .events = POLLIN}};
		if (poll(p, 2, -1) < 0)
			continue; /* EINTR: the SIGCHLD wrote to the self-pipe */
		if (pipe_ended(&p[0])) {
			kill(0, SIGKILL);
			_exit(137);
		}
		char drain[64];
		while (read(self_pipe[0], drain, sizeof drain) > 0)
			;
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
	}
	if (tool_group_state(getpgrp(), getpid()) == TOOL_GROUP_LIVE && fork() == 0)
		guard();
	mirror(status);
}

void tool_reaper_dispatch(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], TOOL_REAPER_ARG) == 0)
		reaper_main(argv + 2);
	dispatched = true;
	/* /proc/self/exe runs this very program even if its file was replaced
	 * since; elsewhere, the path it was started from. */
	if (access("/proc/self/exe", X_OK) == 0) {
		reaper_exe = "/proc/self/exe";
		return;
	}
	size_t n = sizeof exe_path;
	if (uv_exepath(exe_path, &n) == 0)
		reaper_exe = exe_path;
}

const char *tool_reaper_exe(const char **why)
{
	if (!reaper_exe)
		*why = dispatched ? "this program cannot find its own executable to run as the reaper"
				  : "this program does not run as a reaper (tool_reaper_dispatch was not called)";
	return reaper_exe;
}

static void make_pipe(void)
{
	int fds[2];
	/* Both ends close-on-exec: the read end is handed to each reaper by
	 * dup2 (which clears the flag on the copy); the write end stays here. */
	int rc = uv_pipe(fds, 0, 0);
	if (rc != 0) {
		pipe_err = -rc;
		return;
	}
	pipe_rd = fds[0];
	(void)fds[1]; /* never closed: its end is cairn's end */
}

int tool_reaper_fd(void)
{
	pthread_once(&pipe_once, make_pipe);
	if (pipe_rd < 0)
		errno = pipe_err;
	return pipe_rd;
}
