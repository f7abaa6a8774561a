/* test_approval.c — approval policies and session grants on a real tree
 * (engine/approval.h): read-only inside and outside the cwd, through
 * symlinks and "..", paths that do not exist yet, "allow for this session"
 * for shell (the exact command) and for file tools (paths inside), and
 * those grants rebuilt from a log's events on a resume. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "engine/approval.h"
#include "tests/unit/support_fixture.h"

struct ax {
	char dir[64], root[128];
	char cwd[256], out[256];
};

static int setup(void **state)
{
	struct ax *x = xcalloc(1, sizeof *x);
	assert_int_equal(tmp_root("cairn-approval", x->dir, sizeof x->dir, x->root, sizeof x->root), 0);
	snprintf(x->cwd, sizeof x->cwd, "%s/proj", x->dir);
	snprintf(x->out, sizeof x->out, "%s/secret", x->dir);
	assert_int_equal(mkdir(x->cwd, 0700), 0);
	assert_int_equal(mkdir(x->out, 0700), 0);
	char p[512];
	snprintf(p, sizeof p, "%s/src", x->cwd);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/src/a.c", x->cwd);
	spit(p, "x", 1, O_TRUNC);
	snprintf(p, sizeof p, "%s/key", x->out);
	spit(p, "k", 1, O_TRUNC);
	snprintf(p, sizeof p, "%s/link", x->cwd); /* a link inside pointing outside */
	assert_int_equal(symlink(x->out, p), 0);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct ax *x = *state;
	rm_rf(x->dir);
	free(x);
	return 0;
}

static cJSON *args(const char *json)
{
	cJSON *a = cJSON_Parse(json);
	assert_non_null(a);
	return a;
}

static bool needed(struct ax *x, enum approval_policy p, const struct approvals *g, const char *tool,
		   const char *json)
{
	cJSON *a = args(json);
	bool n = approval_needed(p, g, tool, a, x->cwd);
	cJSON_Delete(a);
	return n;
}

/* Inside means after resolving symlinks and "..": a link out is outside. */
static void test_approval_path_inside_resolves_links_and_dots(void **state)
{
	struct ax *x = *state;
	assert_true(approval_path_inside(x->cwd, "src/a.c"));
	assert_true(approval_path_inside(x->cwd, "."));
	assert_true(approval_path_inside(x->cwd, "src/new/deeper.c")); /* not there yet */
	assert_false(approval_path_inside(x->cwd, "../secret/key"));
	assert_false(approval_path_inside(x->cwd, "link/key"));
	assert_false(approval_path_inside(x->cwd, "nothere/../../secret/key"));
	assert_false(approval_path_inside(x->cwd, x->out));
	char abs[512];
	snprintf(abs, sizeof abs, "%s/src/a.c", x->cwd);
	assert_true(approval_path_inside(x->cwd, abs));
	assert_false(approval_path_inside(x->cwd, "/etc/passwd"));
	assert_false(approval_path_inside(x->cwd, ""));
}

/* read-only: reading tools inside the cwd run, the rest asks; ask asks;
 * all never asks. */
static void test_approval_policies(void **state)
{
	struct ax *x = *state;
	assert_false(needed(x, APPROVAL_READ_ONLY, NULL, "read_file", "{\"path\":\"src/a.c\"}"));
	assert_false(needed(x, APPROVAL_READ_ONLY, NULL, "list_dir", "{}"));
	assert_false(needed(x, APPROVAL_READ_ONLY, NULL, "grep", "{\"pattern\":\"x\"}"));
	assert_true(needed(x, APPROVAL_READ_ONLY, NULL, "read_file", "{\"path\":\"link/key\"}"));
	assert_true(needed(x, APPROVAL_READ_ONLY, NULL, "write_file", "{\"path\":\"src/a.c\"}"));
	assert_true(needed(x, APPROVAL_READ_ONLY, NULL, "shell", "{\"command\":\"ls\"}"));
	assert_true(needed(x, APPROVAL_ASK, NULL, "read_file", "{\"path\":\"src/a.c\"}"));
	assert_false(needed(x, APPROVAL_ALL, NULL, "shell", "{\"command\":\"rm -rf /tmp/x\"}"));
	enum approval_policy p;
	struct cerr err;
	assert_int_equal(approval_policy_parse("read-only", &p, &err), 0);
	assert_int_equal(p, APPROVAL_READ_ONLY);
	assert_string_equal(approval_policy_name(p), "read-only");
	FAILS(approval_policy_parse("sometimes", &p, &err), CERR_USAGE);
}

/* "Allow for this session": the exact same shell command; a file tool's
 * paths inside the cwd, never outside. */
static void test_approval_session_grants(void **state)
{
	struct ax *x = *state;
	struct approvals *g = approvals_new();
	cJSON *a = args("{\"command\":\"make test\"}");
	approvals_grant(g, "shell", a);
	cJSON_Delete(a);
	a = args("{\"path\":\"src/a.c\"}");
	approvals_grant(g, "write_file", a);
	cJSON_Delete(a);
	assert_false(needed(x, APPROVAL_ASK, g, "shell", "{\"command\":\"make test\"}"));
	assert_true(needed(x, APPROVAL_ASK, g, "shell", "{\"command\":\"make test; rm -rf ~\"}"));
	assert_false(needed(x, APPROVAL_ASK, g, "write_file", "{\"path\":\"src/other.c\"}"));
	assert_true(needed(x, APPROVAL_ASK, g, "write_file", "{\"path\":\"link/key\"}"));
	assert_true(needed(x, APPROVAL_ASK, g, "edit_file", "{\"path\":\"src/a.c\"}"));
	approvals_free(g);
	char *s = approval_summary("shell", cJSON_GetObjectItem(a = args("{\"x\":{\"command\":\"ls -l\"}}"), "x"));
	assert_string_equal(s, "shell: ls -l");
	free(s);
	cJSON_Delete(a);
}

/* Feed the events of a log, one JSON object {type, data} per line, to a
 * replay; the grants it rebuilt. */
static struct approvals *replay(const char *const *lines, size_t n)
{
	struct approvals_replay *r = approvals_replay_new();
	for (size_t i = 0; i < n; i++) {
		cJSON *ev = args(lines[i]);
		const cJSON *type = cJSON_GetObjectItem(ev, "type");
		approvals_replay_event(r, vocab_type_of(type->valuestring),
				       cJSON_GetObjectItem(ev, "data"));
		cJSON_Delete(ev);
	}
	return approvals_replay_end(r);
}

/* A first run of a session: "allow for this session" for one command,
 * other answers that grant nothing (allow once, deny, a superseded allow
 * for the session, an answer to no request), a call whose arguments went
 * to a blob; then, in a later run, the policy changed to read-only. */
static const char *const first_run[] = {
	"{\"type\":\"turn/start\",\"data\":{}}",
	"{\"type\":\"tool/call\",\"data\":{\"call_id\":\"t1.1\",\"name\":\"shell\","
	"\"args\":{\"command\":\"make test\"}}}",
	"{\"type\":\"interaction/request\",\"data\":{\"request_id\":\"r1\",\"call_id\":\"t1.1\"}}",
	"{\"type\":\"interaction/answer\",\"data\":{\"request_id\":\"r1\","
	"\"decision\":\"allow_session\",\"by\":\"user\"}}",
	"{\"type\":\"tool/call\",\"data\":{\"call_id\":\"t1.2\",\"name\":\"write_file\","
	"\"args\":{\"path\":\"src/a.c\",\"content\":\"y\"}}}",
	"{\"type\":\"interaction/request\",\"data\":{\"request_id\":\"r2\",\"call_id\":\"t1.2\"}}",
	"{\"type\":\"interaction/answer\",\"data\":{\"request_id\":\"r2\","
	"\"decision\":\"allow_once\",\"by\":\"user\"}}",
	"{\"type\":\"tool/call\",\"data\":{\"call_id\":\"t1.3\",\"name\":\"edit_file\","
	"\"args\":\"{\\\"path\\\":\\\"src/a.c\\\", ... \",\"blob\":{\"hash\":\"00\"}}}",
	"{\"type\":\"interaction/request\",\"data\":{\"request_id\":\"r3\",\"call_id\":\"t1.3\"}}",
	"{\"type\":\"interaction/answer\",\"data\":{\"request_id\":\"r3\","
	"\"decision\":\"allow_session\",\"by\":\"user\"}}",
	"{\"type\":\"tool/call\",\"data\":{\"call_id\":\"t1.4\",\"name\":\"read_file\","
	"\"args\":{\"path\":\"src/a.c\"}}}",
	"{\"type\":\"interaction/request\",\"data\":{\"request_id\":\"r4\",\"call_id\":\"t1.4\"}}",
	"{\"type\":\"interaction/answer\",\"data\":{\"request_id\":\"r4\","
	"\"decision\":\"deny\",\"by\":\"user\"}}",
	"{\"type\":\"interaction/answer\",\"data\":{\"request_id\":\"r4\","
	"\"decision\":\"allow_session\",\"by\":\"user\",\"superseded\":true}}",
	"{\"type\":\"interaction/answer\",\"data\":{\"request_id\":\"r9\","
	"\"decision\":\"allow_session\",\"by\":\"user\"}}",
	"{\"type\":\"turn/end\",\"data\":{\"outcome\":\"completed\"}}",
	"{\"type\":\"session/settings\",\"data\":{\"approval\":\"read-only\"}}",
};

/* Rebuilt on a resume, the grants are the live session's: the one
 * allow-for-the-session answer, under the policy in effect then and the
 * one set later; nothing else is granted, and a call whose arguments are
 * in a blob is asked again. */
static void test_approval_grants_rebuilt_from_the_log(void **state)
{
	struct ax *x = *state;
	struct approvals *g = replay(first_run, sizeof first_run / sizeof *first_run);
	struct approvals *live = approvals_new();
	cJSON *a = args("{\"command\":\"make test\"}");
	approvals_grant(live, "shell", a);
	cJSON_Delete(a);
	static const struct {
		const char *tool, *args;
		bool asked; /* under ask, and under read-only */
	} probes[] = {
		{"shell", "{\"command\":\"make test\"}", false},
		{"shell", "{\"command\":\"make test; rm -rf ~\"}", true},
		{"write_file", "{\"path\":\"src/other.c\"}", true},
		{"edit_file", "{\"path\":\"src/a.c\"}", true},
		{"read_file", "{\"path\":\"link/key\"}", true},
	};
	for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
		for (enum approval_policy p = APPROVAL_ASK; p <= APPROVAL_READ_ONLY; p++) {
			bool got = needed(x, p, g, probes[i].tool, probes[i].args);
			if (got != probes[i].asked || got != needed(x, p, live, probes[i].tool,
								    probes[i].args))
				fail_msg("%s %s under %s: asked %d, want %d", probes[i].tool,
					 probes[i].args, approval_policy_name(p), got, probes[i].asked);
		}
	}
	/* read-only's own allowance still holds beside the grants */
	assert_false(needed(x, APPROVAL_READ_ONLY, g, "read_file", "{\"path\":\"src/a.c\"}"));
	assert_true(needed(x, APPROVAL_ASK, g, "read_file", "{\"path\":\"src/a.c\"}"));
	approvals_free(live);
	approvals_free(g);
	/* an empty log, or one cut before the answer: no grant */
	g = replay(first_run, 0);
	assert_true(needed(x, APPROVAL_ASK, g, "shell", "{\"command\":\"make test\"}"));
	approvals_free(g);
	g = replay(first_run, 3);
	assert_true(needed(x, APPROVAL_ASK, g, "shell", "{\"command\":\"make test\"}"));
	approvals_free(g);
	approvals_replay_free(approvals_replay_new());
	approvals_replay_free(NULL);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_approval_path_inside_resolves_links_and_dots),
		T(test_approval_policies),
		T(test_approval_session_grants),
		T(test_approval_grants_rebuilt_from_the_log),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
