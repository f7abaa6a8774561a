/* fsync_count.c — an LD_PRELOAD library for bench_turn: it counts the
 * process's fsync, fdatasync and sync_file_range calls (from any thread,
 * from cairn or from SQLite) and at exit writes one line per call to the
 * file named by $BENCH_FSYNC_LOG:
 *
 *     CALL START_NS END_NS dir|file
 *
 * START and END are CLOCK_MONOTONIC readings around the real call, so the
 * bench can tell which of them finished before its server saw a request.
 * Built as BUILD/bench/aux/fsync_count.so; not part of cairn. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS 4096

struct call {
	const char *name;
	uint64_t start, end;
	int dir;
};

static struct call calls[MAX_CALLS];
static atomic_uint n_calls;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void note(const char *name, int fd, uint64_t start)
{
	unsigned i = atomic_fetch_add(&n_calls, 1);
	if (i >= MAX_CALLS)
		return;
	struct stat st;
	calls[i] = (struct call){name, start, now_ns(), fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)};
}

/* fsync and fdatasync: the real call (found once), timed and noted. */
static int timed(const char *name, int (**real)(int), int fd)
{
	if (!*real)
		*real = (int (*)(int))dlsym(RTLD_NEXT, name);
	uint64_t t = now_ns();
	int rc = (*real)(fd);
	note(name, fd, t);
	return rc;
}

int fsync(int fd)
{
	static int (*real)(int);
	return timed("fsync", &real, fd);
}

int fdatasync(int fd)
{
	static int (*real)(int);
	return timed("fdatasync", &real, fd);
}

int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags)
{
	static int (*real)(int, off64_t, off64_t, unsigned int);
	if (!real)
		real = (int (*)(int, off64_t, off64_t, unsigned int))dlsym(RTLD_NEXT, "sync_file_range");
	uint64_t t = now_ns();
	int rc = real(fd, off, n, flags);
	note("sync_file_range", fd, t);
	return rc;
}

__attribute__((destructor)) static void write_log(void)
{
	const char *path = getenv("BENCH_FSYNC_LOG");
	if (!path || !*path)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	unsigned n = atomic_load(&n_calls);
	char line[128];
	for (unsigned i = 0; i < n && i < MAX_CALLS; i++) {
		if (!calls[i].name)
			continue; /* a call still running at exit */
		int len = snprintf(line, sizeof line, "%s %llu %llu %s\n", calls[i].name,
				   (unsigned long long)calls[i].start, (unsigned long long)calls[i].end,
				   calls[i].dir ? "dir" : "file");
		if (write(fd, line, (size_t)len) != len)
			break;
	}
	if (n > MAX_CALLS) {
		int len = snprintf(line, sizeof line, "overflow %u 0 file\n", n);
		(void)!write(fd, line, (size_t)len);
	}
	close(fd);
}
