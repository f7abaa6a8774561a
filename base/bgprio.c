/* bgprio.c — background threads yield to the loop thread (bgprio.h). */
#include "base/bgprio.h"

#if defined(__linux__)
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

static _Thread_local int entered;

void bgprio_enter(void)
{
	if (entered)
		return;
	entered = 1;
#if defined(__linux__)
	/* On Linux a nice value belongs to a thread, named by its tid. */
	pid_t tid = (pid_t)syscall(SYS_gettid);
	errno = 0;
	int now = getpriority(PRIO_PROCESS, (id_t)tid);
	if (now == -1 && errno != 0)
		return;
	(void)setpriority(PRIO_PROCESS, (id_t)tid, now + BGPRIO_NICE);
#endif
}
