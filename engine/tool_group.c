/* tool_group.c — is a process group still alive? kill(-pgid, 0) also
 * counts zombies, which an init that does not reap leaves for good; so
 * when it says yes, /proc is asked whether a member that is not a zombie
 * is left. */
#include "engine/tool_group.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tool_group_state tool_group_state(pid_t pgid, pid_t except)
{
	if (kill(-pgid, 0) != 0)
		return errno == EPERM ? TOOL_GROUP_LIVE : TOOL_GROUP_EMPTY;
	DIR *d = opendir("/proc");
	if (!d)
		return TOOL_GROUP_UNKNOWN;
	enum tool_group_state st = TOOL_GROUP_EMPTY;
	struct dirent *de;
	while (st == TOOL_GROUP_EMPTY && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (except > 0 && atol(de->d_name) == (long)except)
			continue;
		char path[300], line[512];
		snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t n = fread(line, 1, sizeof line - 1, f);
		fclose(f);
		line[n] = '\0';
		/* "pid (comm) state ppid pgrp ...": comm may hold anything. */
		char *rp = strrchr(line, ')');
		char state;
		int ppid, pgrp;
		if (rp && sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pgid &&
		    state != 'Z' && state != 'X')
			st = TOOL_GROUP_LIVE;
	}
	closedir(d);
	return st;
}
