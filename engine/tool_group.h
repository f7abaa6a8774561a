/* tool_group.h — whether a process group still has a live member: what
 * the shell tool (tool_shell.c) and its reaper (tool_reaper.c) ask before
 * they call a command's run over. */
#ifndef CAIRN_TOOL_GROUP_H
#define CAIRN_TOOL_GROUP_H

#include <sys/types.h>

enum tool_group_state {
	TOOL_GROUP_EMPTY,   /* no member left that is not a zombie */
	TOOL_GROUP_LIVE,    /* a live member other than `except` */
	TOOL_GROUP_UNKNOWN, /* members exist and /proc cannot say which are live */
};

/* The state of group pgid, not counting process `except` (0: none). */
enum tool_group_state tool_group_state(pid_t pgid, pid_t except);

#endif
