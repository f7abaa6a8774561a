/* test_store_linear.c — every command over the whole store costs the same
 * per session at 1,000 sessions as at 8,000: `doctor`, `doctor --reindex`,
 * `sessions --json --all` and `search --all`, run in this process, with
 * the store's system calls counted through the fsops table
 * (support_faultfs.h), not timed. A session resolved by listing every
 * session (a heal that resolves each of n sessions by a walk of all n)
 * makes the count per session grow with n. The count per event of an
 * append to a small and an 8 MB session is test_catalog_segments'.
 *
 * The sessions are written directly (log_create in a staging store, the
 * folder then moved into the data root, syncs skipped), not through cairn. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/cli.h"
#include "app/cmds.h"
#include "base/clock.h"
#include "persist/fsops.h"
#include "persist/log.h"
#include "persist/pathkey.h"
#include "persist/store.h"
#include "tests/unit/support_catalog.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

/* The command table main.c gives cairn; these commands need none of it. */
const struct command cli_commands[] = {{NULL, NULL, NULL, NULL}};

static int nosync(int fd)
{
	(void)fd;
	return 0;
}

/* Generate n sessions (ids s<i>) over 40 projects into root. */
static void generate(const char *dir, const char *root, size_t n)
{
	struct fsops quick = fsops_real;
	quick.fsync = nosync;
	quick.fdatasync = nosync;
	fsops = &quick;
	char stage_root[256];
	snprintf(stage_root, sizeof stage_root, "%s/stage", dir);
	struct store *stage;
	struct cerr err;
	assert_int_equal(store_open(stage_root, true, &stage, &err), 0);
	assert_int_equal(mkdir(root, 0700), 0);
	assert_int_equal(mkdir(path_in(root, "sessions"), 0700), 0);
	for (size_t i = 0; i < n; i++) {
		char id[32], cwd[64], json[512];
		snprintf(id, sizeof id, "s%06zu", i);
		snprintf(cwd, sizeof cwd, "/home/dev/src/project-%02zu", (i * 7) % 40);
		snprintf(json, sizeof json,
			 "[" START("t1") "," USER("why does the build fail on item %zu") ","
			 "{'type':'assistant/text','turn':'t1','data':{'text':'the linker wants "
			 "a library for item %zu'}}," END("t1", "completed") "]",
			 i, i);
		struct log *lg;
		struct batch b;
		if (log_create(stage, id, cwd, NULL, &lg, &err) < 0)
			fail_msg("log_create %s: %s", id, err.msg);
		batch_parse(&b, json);
		if (log_append(lg, log_next_seq(lg), b.evs, b.n, NULL, &err) < 0)
			fail_msg("append %s: %s", id, err.msg);
		batch_free(&b);
		log_close(lg);
		char *key = pathkey_project(cwd);
		char from[512], kdir[512], to[600];
		snprintf(from, sizeof from, "%s/sessions/%s/%s", stage_root, key, id);
		snprintf(kdir, sizeof kdir, "%s/sessions/%s", root, key);
		snprintf(to, sizeof to, "%s/%s", kdir, id);
		if (mkdir(kdir, 0700) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", kdir, strerror(errno));
		if (rename(from, to) < 0)
			fail_msg("rename %s: %s", from, strerror(errno));
		free(key);
	}
	store_close(stage);
	fsops = &fsops_real;
}

/* The store's system calls of one command run in this process (its
 * output discarded), and its exit code in *rc. */
static unsigned long counted(const char *root, int (*cmd)(struct cli *, int, char **), int *rc,
			     ...)
{
	char *argv[8];
	int argc = 0;
	va_list ap;
	va_start(ap, rc);
	for (const char *a; argc < 7 && (a = va_arg(ap, const char *));)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	struct cli c = {.data_dir = root};
	fflush(stdout);
	int saved = dup(1), null = open("/dev/null", O_WRONLY);
	assert_true(saved >= 0 && null >= 0);
	dup2(null, 1);
	close(null);
	faultfs_install();
	*rc = cmd(&c, argc, argv);
	unsigned long total = 0;
	for (int op = 0; op < FF_NOPS; op++)
		total += faultfs_count((enum faultfs_op)op);
	faultfs_uninstall();
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	return total;
}

enum { N_CMDS = 5, SMALL = 1000, BIG = 8000 };
static const char *const names[N_CMDS] = {"doctor --reindex", "doctor", "sessions --json --all",
					  "search --all", "doctor --reindex (again)"};

/* The count per session of each command over n generated sessions. */
static void per_session(size_t n, double out[N_CMDS])
{
	char dir[64], root[128];
	assert_int_equal(tmp_root("cairn-test-linear", dir, sizeof dir, root, sizeof root), 0);
	generate(dir, root, n);
	unsigned long c[N_CMDS];
	int rc[N_CMDS];
	/* The first reindex builds the catalog; the last one finds it whole. */
	c[0] = counted(root, cmd_doctor, &rc[0], "doctor", "--reindex", NULL);
	c[1] = counted(root, cmd_doctor, &rc[1], "doctor", NULL);
	c[2] = counted(root, cmd_sessions, &rc[2], "sessions", "--json", "--all", "--limit",
		       "1000000", NULL);
	c[3] = counted(root, cmd_search, &rc[3], "search", "--all", "linker", NULL);
	c[4] = counted(root, cmd_doctor, &rc[4], "doctor", "--reindex", NULL);
	for (int i = 0; i < N_CMDS; i++) {
		if (rc[i] != 0)
			fail_msg("%s over %zu sessions: exit %d", names[i], n, rc[i]);
		out[i] = (double)c[i] / (double)n;
		print_message("%zu sessions: %s: %lu system calls, %.2f per session\n", n, names[i],
			      c[i], out[i]);
	}
	rm_rf(dir);
}

static void test_commands_linear(void **state)
{
	(void)state;
	catfx_t0 = clock_unix_ms() + 86400000; /* after every header's created_at */
	double small[N_CMDS], big[N_CMDS];
	per_session(SMALL, small);
	per_session(BIG, big);
	/* Fixed costs shrink per session as n grows; a walk of every session
	 * per session multiplies the count per session by 8. */
	for (int i = 0; i < N_CMDS; i++)
		if (big[i] > small[i] * 1.25 + 1)
			fail_msg("%s: %.2f system calls per session at %d sessions against %.2f "
				 "at %d", names[i], big[i], BIG, small[i], SMALL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commands_linear),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
