/* tool_reaper.h — ties every shell command's process group to the life of
 * the program that started it. The program runs itself again as a small
 * reaper between it and `/bin/sh -c COMMAND`; the reaper holds the read end
 * of a pipe whose write end only the program holds, and kills the whole
 * group with SIGKILL when that pipe reaches end of file, i.e. when the
 * program is gone, whatever ended it (tool_reaper.c says how). */
#ifndef CAIRN_TOOL_REAPER_H
#define CAIRN_TOOL_REAPER_H

#include <stdbool.h>

/* argv[1] of a reaper; argv[2..] is the command it runs. */
#define TOOL_REAPER_ARG "--internal-tool-reaper"
/* The descriptor the reaper finds the pipe's read end on. */
#define TOOL_REAPER_FD 3

/* Call first in main() of every program that may run the shell tool: when
 * argv asks for a reaper it runs one and never returns; otherwise it notes
 * that this program can be its own reaper (without that call the shell
 * tool refuses to start a command). */
void tool_reaper_dispatch(int argc, char **argv);

/* The program to run as a reaper (static storage), or NULL with *why set
 * to a sentence saying why there is none (static storage). */
const char *tool_reaper_exe(const char **why);

/* The read end of the pipe to hand to a reaper as TOOL_REAPER_FD (created
 * on first use, close-on-exec, owned by this module, never closed), or -1
 * with errno set. Thread-safe. */
int tool_reaper_fd(void);

#endif
