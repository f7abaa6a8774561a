/* test_host_tools.c — conformance scenarios of the agent loop through the
 * host (engine/host.h, engine/toolstep.h): a tool call, its approval (by
 * the policy or the user: allow, allow for the session, deny with a note),
 * intent before effect (tool/call, the answer and tool/started durable
 * before the body runs), the result fed back to the model (a failing tool
 * too), cancel while a tool runs (its process gone), while the user is
 * asked and while a call's arguments stream, the step limit, a call cut
 * off by the token limit, malformed arguments, and a provider's tool calls
 * over the wire answered under the provider's id. Real processes,
 * real files, the offline provider and the fake model server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "engine/tool.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_host.h"
#include "engine/tool_reaper.h"

static cJSON *schemas;

static struct host_call tool_call(enum approval_policy p, struct hx *x)
{
	struct host_call c = hx_offline_call();
	if (!schemas)
		schemas = tool_schemas();
	c.call.params.tools = schemas;
	(void)p;
	(void)x;
	return c;
}

static void policy(struct hx *x, enum approval_policy p)
{
	struct cerr err;
	assert_int_equal(host_set_approval(x->h, x->id, p, &err), 0);
}

/* The types of x->id's events from index i, joined by spaces. */
static char *types(struct hx *x, size_t from)
{
	struct scan *s = hx_read_log(x);
	struct buf b = BUF_INIT;
	for (size_t i = from; i < s->n_events; i++)
		buf_printf(&b, "%s%s", i > from ? " " : "", s->events[i].type);
	scan_free(s);
	return buf_detach(&b, NULL);
}

static const cJSON *event_of(const struct scan *s, const char *type, int nth)
{
	for (size_t i = 0; i < s->n_events; i++)
		if (strcmp(s->events[i].type, type) == 0 && nth-- == 0)
			return s->events[i].data;
	return NULL;
}

/* Policy all: the call runs at once (its approval logged by policy), in
 * the order intent-before-effect demands, and the model gets the result. */
static void test_tools_call_runs_and_its_result_goes_back(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ALL, x);
	hx_create(x, &c);
	policy(x, APPROVAL_ALL);
	hx_send(x, "run echo tool-says-hi", NULL);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "completed");
	char *t = types(x, 1);
	assert_string_equal(t, "session/settings turn/start user/message request/prepared tool/call step/end "
			       "interaction/request interaction/answer tool/started tool/result "
			       "request/prepared assistant/text step/end turn/end");
	free(t);
	struct scan *s = hx_read_log(x);
	const cJSON *call = event_of(s, "tool/call", 0);
	assert_string_equal(hx_str(call, "call_id"), "t1.1");
	assert_string_equal(hx_str(call, "provider_id"), "offline-1");
	assert_string_equal(hx_str(call, "name"), "shell");
	const cJSON *ans = event_of(s, "interaction/answer", 0);
	assert_string_equal(hx_str(ans, "by"), "policy");
	const cJSON *res = event_of(s, "tool/result", 0);
	assert_string_equal(hx_str(res, "status"), "ok");
	assert_non_null(strstr(hx_str(res, "output"), "tool-says-hi"));
	assert_string_equal(hx_str(event_of(s, "assistant/text", 0), "text"), "done: tool-says-hi");
	assert_int_equal(cJSON_GetObjectItem(event_of(s, "request/prepared", 1), "step")->valueint, 2);
	scan_free(s);
}

/* Policy ask: the user is asked; a denial with a note is what the model
 * reads ("denied: ..."), and nothing ran. */
static void test_tools_denied_call_does_not_run(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ASK, x);
	hx_create(x, &c);
	char marker[256];
	snprintf(marker, sizeof marker, "%s/ran", x->dir);
	x->decision = "deny";
	x->note = "not today";
	char *prompt = xasprintf("run touch %s", marker);
	hx_send(x, prompt, NULL);
	free(prompt);
	WAIT(x, x->settled == 1);
	assert_int_equal(cJSON_GetArraySize(x->requests), 1);
	assert_string_equal(hx_str(cJSON_GetArrayItem(x->requests, 0), "tool"), "shell");
	assert_false(exists(marker));
	struct scan *s = hx_read_log(x);
	const cJSON *res = event_of(s, "tool/result", 0);
	assert_string_equal(hx_str(res, "status"), "denied");
	assert_int_equal(strncmp(hx_str(res, "output"), "denied: ", 8), 0);
	assert_non_null(strstr(hx_str(res, "output"), "not today"));
	assert_null(event_of(s, "tool/started", 0));
	assert_string_equal(hx_str(event_of(s, "interaction/answer", 0), "by"), "user");
	scan_free(s);
}

/* "Allow for this session" covers the same command later, also after the
 * session is opened again (the grant is rebuilt from the log); another
 * command is asked. */
static void test_tools_allow_for_the_session(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ASK, x);
	hx_create(x, &c);
	x->decision = "allow_session";
	hx_send(x, "run echo same", NULL);
	WAIT(x, x->settled == 1);
	assert_int_equal(cJSON_GetArraySize(x->requests), 1);
	x->decision = NULL; /* nobody answers from now on */
	hx_send(x, "run echo same", NULL);
	WAIT(x, x->settled == 2);
	assert_int_equal(cJSON_GetArraySize(x->requests), 1);
	/* after a restart */
	hx_stop(x);
	hx_start(x);
	struct cerr err;
	int before = x->calls;
	assert_int_equal(host_open(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	hx_send(x, "run echo same", NULL);
	WAIT(x, x->settled == 3);
	assert_int_equal(cJSON_GetArraySize(x->requests), 1);
	assert_string_equal(hx_str(hx_done(x, 2), "outcome"), "completed");
	/* another command is asked */
	x->decision = "allow_once";
	hx_send(x, "run echo other", NULL);
	WAIT(x, x->settled == 4);
	assert_int_equal(cJSON_GetArraySize(x->requests), 2);
}

/* The grant outlives a later change of the policy, across a restart: a
 * session that allowed a command for the session, then recorded
 * read-only, runs that command without asking when opened again, asks
 * another, and reads inside its cwd without asking (read-only's own). */
static void test_tools_allow_for_the_session_then_a_policy_change_across_a_restart(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ASK, x);
	hx_create(x, &c);
	x->decision = "allow_session";
	hx_send(x, "run echo same", NULL);
	WAIT(x, x->settled == 1);
	assert_int_equal(cJSON_GetArraySize(x->requests), 1);
	struct cerr err;
	int before = x->calls;
	struct host_settings set = {.approval = "read-only"};
	assert_int_equal(host_update_settings(x->h, x->id, &set, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	hx_stop(x);
	hx_start(x);
	before = x->calls;
	assert_int_equal(host_open(x->h, x->id, hx_done_cb, x, &err), 0);
	WAIT(x, x->calls > before);
	assert_int_equal(x->last.cls, CERR_OK);
	struct host_settings now;
	assert_int_equal(host_settings(x->h, x->id, &now, &err), 0);
	assert_string_equal(now.approval, "read-only");
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	x->decision = NULL; /* nobody answers: a question would stall the turn */
	hx_send(x, "run echo same", NULL);
	WAIT(x, x->settled == 2);
	assert_string_equal(hx_str(hx_done(x, 1), "outcome"), "completed");
	hx_send(x, "list", NULL);
	WAIT(x, x->settled == 3);
	assert_int_equal(cJSON_GetArraySize(x->requests), 1);
	x->decision = "deny";
	hx_send(x, "run echo other", NULL);
	WAIT(x, x->settled == 4);
	assert_int_equal(cJSON_GetArraySize(x->requests), 2);
	assert_string_equal(hx_str(cJSON_GetArrayItem(x->requests, 1), "summary"),
			    "shell: echo other");
}

/* read-only: reading inside the cwd runs without asking, a command asks. */
static void test_tools_read_only_policy(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_READ_ONLY, x);
	char f[300];
	snprintf(f, sizeof f, "%s/notes.txt", x->cwd);
	spit(f, "first line\nsecond\n", 18, O_TRUNC);
	hx_create(x, &c);
	policy(x, APPROVAL_READ_ONLY);
	x->decision = "deny";
	hx_send(x, "list", NULL);
	WAIT(x, x->settled == 1);
	assert_int_equal(cJSON_GetArraySize(x->requests), 0);
	hx_send(x, "run ls", NULL);
	WAIT(x, x->settled == 2);
	assert_int_equal(cJSON_GetArraySize(x->requests), 1);
}

/* Cancel while a tool runs: its process is gone, the result says
 * canceled, the turn ends canceled. */
static void test_tools_cancel_while_a_tool_runs(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ALL, x);
	hx_create(x, &c);
	policy(x, APPROVAL_ALL);
	char pidf[256];
	snprintf(pidf, sizeof pidf, "%s/pid", x->dir);
	char *prompt = xasprintf("run echo $$ > %s; sleep 30", pidf);
	hx_send(x, prompt, NULL);
	free(prompt);
	uint64_t until = clock_mono_ns() / 1000000 + 10000;
	struct stat st;
	while (stat(pidf, &st) < 0 || st.st_size == 0) {
		assert_true(clock_mono_ns() / 1000000 < until);
		uv_run(&x->loop, UV_RUN_NOWAIT);
		usleep(5000);
	}
	size_t n;
	char *pid_s = (char *)slurp(pidf, &n);
	pid_t pid = (pid_t)atoi(pid_s);
	free(pid_s);
	host_cancel(x->h, x->id);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "canceled");
	assert_true(kill(pid, 0) < 0 && errno == ESRCH);
	struct scan *s = hx_read_log(x);
	const cJSON *res = event_of(s, "tool/result", 0);
	assert_string_equal(hx_str(res, "status"), "canceled");
	assert_int_equal(strncmp(hx_str(res, "output"), "canceled: ", 10), 0);
	scan_free(s);
}

/* The step limit: the call is not executed and the turn fails with
 * class step_limit. */
static void test_tools_step_limit(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ALL, x);
	c.max_steps = 1;
	hx_create(x, &c);
	policy(x, APPROVAL_ALL);
	hx_send(x, "run echo never", NULL);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "failed");
	assert_string_equal(hx_str(cJSON_GetObjectItem(hx_done(x, 0), "error"), "class"), "step_limit");
	struct scan *s = hx_read_log(x);
	const cJSON *res = event_of(s, "tool/result", 0);
	assert_string_equal(hx_str(res, "status"), "not_executed");
	assert_non_null(strstr(hx_str(res, "output"), "step limit"));
	scan_free(s);
}

/* A second, different answer to the same request is recorded as
 * superseded and changes nothing; the same answer again is a no-op. */
static void test_tools_second_answer_is_superseded(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ASK, x);
	hx_create(x, &c);
	x->decision = "allow_once";
	hx_send(x, "run sleep 0.5; echo ran", NULL);
	WAIT(x, cJSON_GetArraySize(x->requests) == 1);
	const char *rid = hx_str(cJSON_GetArrayItem(x->requests, 0), "request_id");
	struct cerr err;
	assert_int_equal(host_respond(x->h, x->id, rid, "deny", "changed my mind", NULL, NULL, &err), 0);
	assert_int_equal(host_respond(x->h, x->id, rid, "allow_once", NULL, NULL, NULL, &err), 0);
	FAILS(host_respond(x->h, x->id, "r-nothing", "deny", NULL, NULL, NULL, &err), CERR_MISSING);
	WAIT(x, x->settled == 1);
	struct scan *s = hx_read_log(x);
	assert_string_equal(hx_str(event_of(s, "tool/result", 0), "status"), "ok");
	const cJSON *a1 = event_of(s, "interaction/answer", 0), *a2 = event_of(s, "interaction/answer", 1);
	assert_string_equal(hx_str(a1, "decision"), "allow_once");
	assert_string_equal(hx_str(a2, "decision"), "deny");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(a2, "superseded")));
	assert_null(event_of(s, "interaction/answer", 2));
	scan_free(s);
}

static char *cairn_path(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	return xasprintf("%s/cairn", dirname(dirname(exe)));
}

/* A provider's tool call over the wire: it runs, its result goes back
 * under the provider's id, and the server itself checks, before it answers
 * the next request, that tool/started was durable before the command's
 * first effect and that the result is in the log. That first effect is a
 * marker file holding the log as another process read it when the command
 * began (`cairn log cat`): it must hold the call's tool/started. A time
 * stamp would not do: an event is stamped when it is written, so a body
 * started before its tool/started was saved would still look in order. */
static void test_tools_provider_call_over_the_wire(void **state)
{
	struct hx *x = *state;
	char marker[256], check[256];
	snprintf(marker, sizeof marker, "%s/marker", x->dir);
	snprintf(check, sizeof check, "%s/check.py", x->dir);
	char *cairn = cairn_path();
	/* Only for the request after the tool: the log as the command saw it
	 * holds tool/started of the call it ran, the log now its result. */
	char *py = xasprintf(
		"import json, subprocess, sys\n"
		"body = json.load(sys.stdin)\n"
		"if not any(m.get('role') == 'tool' for m in body['messages']): sys.exit(0)\n"
		"def ids(lines, t): return [json.loads(l)['data']['call_id'] for l in lines\n"
		"                           if l.strip() and json.loads(l)['type'] == t]\n"
		"seen = open('%s').read().splitlines()\n"
		"now = subprocess.run(['%s', '--data-dir', '%s', 'log', 'cat', sys.argv[1]],\n"
		"                     capture_output=True, text=True).stdout.splitlines()\n"
		"calls = ids(now, 'tool/call')\n"
		"ok = len(calls) == 1 and ids(seen, 'tool/started') == calls and "
		"ids(seen, 'tool/result') == [] and ids(now, 'tool/result') == calls\n"
		"sys.exit(0 if ok else 1)\n",
		marker, cairn, x->root);
	spit(check, py, strlen(py), O_TRUNC);
	free(py);
	struct host_call c0 = hx_offline_call();
	hx_create(x, &c0); /* the id first: the check names it */
	char *cmd = xasprintf("python3 %s %s", check, x->id);
	const char *const extra[] = {"--before-reply", cmd, NULL};
	char *script = xasprintf(
		"{\"replies\":[{\"tool_calls\":[{\"id\":\"call_abc\",\"name\":\"shell\","
		"\"arguments\":\"{\\\"command\\\":\\\"'%s' --data-dir '%s' log cat %s >%s; "
		"echo made\\\"}\"}]},"
		"{\"text\":\"all done\"}]}",
		cairn, x->root, x->id, marker);
	free(cairn);
	fake_start(&x->fake, script, extra);
	x->have_fake = true;
	free(script);
	x->base = url(x->fake.port, "/v1");
	struct host_call c = tool_call(APPROVAL_ALL, x);
	c.provider = "openai";
	c.call.kind = PROVIDER_OPENAI;
	c.call.params = (struct provider_params){.model = "m-1", .base_url = x->base,
						 .api_key = "sk-test", .tools = schemas};
	c.call.timeouts = (struct http_timeouts){2000, 8000, 8000, 0};
	struct cerr err;
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	policy(x, APPROVAL_ALL);
	hx_send(x, "make the marker", NULL);
	WAIT(x, x->settled == 1);
	free(cmd);
	if (strcmp(hx_str(hx_done(x, 0), "outcome"), "completed") != 0)
		fail_msg("outcome %s: %s", hx_str(hx_done(x, 0), "outcome"),
			 cJSON_PrintUnformatted(cJSON_GetObjectItem(hx_done(x, 0), "error")));
	assert_true(exists(marker));
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 2);
	char *body = cJSON_PrintUnformatted(cJSON_GetArrayItem(reqs, 1));
	assert_non_null(strstr(body, "call_abc"));
	assert_non_null(strstr(body, "made"));
	assert_null(strstr(body, "t1.1")); /* cairn's own id never goes out */
	free(body);
	cJSON_Delete(reqs);
	struct scan *s = hx_read_log(x);
	assert_string_equal(hx_str(event_of(s, "tool/call", 0), "provider_id"), "call_abc");
	assert_string_equal(hx_str(event_of(s, "assistant/text", 0), "text"), "all done");
	scan_free(s);
}

/* x->id's turns go to the fake model server with script, over kind's
 * protocol; policy all. */
static void wire_call(struct hx *x, enum provider_kind kind, const char *script)
{
	fake_start(&x->fake, script, NULL);
	x->have_fake = true;
	x->base = url(x->fake.port, kind == PROVIDER_OPENAI ? "/v1" : "");
	struct host_call c = tool_call(APPROVAL_ALL, x);
	c.provider = kind == PROVIDER_OPENAI ? "openai" : "anthropic";
	c.call.kind = kind;
	c.call.params = (struct provider_params){.model = "m-1", .base_url = x->base,
						 .api_key = kind == PROVIDER_OPENAI ? "sk-test" : "ant-test",
						 .tools = schemas};
	c.call.timeouts = (struct http_timeouts){2000, 8000, 8000, 0};
	struct cerr err;
	assert_int_equal(host_set_call(x->h, x->id, &c, &err), 0);
	policy(x, APPROVAL_ALL);
}

/* A cancel while a call's arguments stream: the call is recorded as the
 * model began it (incomplete, the partial arguments kept), answered "not
 * executed", never run; the next turn sends the model a history the
 * server accepts (the call with empty arguments and its result). */
static void test_tools_cancel_mid_arguments(void **state)
{
	struct hx *x = *state;
	char marker[256];
	snprintf(marker, sizeof marker, "%s/marker", x->dir);
	struct host_call c0 = hx_offline_call();
	hx_create(x, &c0);
	/* One write per event; after the call's first argument piece the
	 * server stalls. */
	char *script = xasprintf(
		"{\"replies\":[{\"tool_calls\":[{\"id\":\"call_cut\",\"name\":\"shell\","
		"\"arguments\":\"{\\\"command\\\":\\\"touch %s\\\"}\"}],"
		"\"split\":\"event\",\"stall_after\":3,\"stall_ms\":15000},"
		"{\"text\":\"understood\"}]}",
		marker);
	wire_call(x, PROVIDER_OPENAI, script);
	free(script);
	hx_send(x, "make the marker", NULL);
	WAIT(x, x->seen.p && strstr(x->seen.p, "notice tool_call\n"));
	host_cancel(x->h, x->id);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "canceled");
	struct scan *s = hx_read_log(x);
	const cJSON *call = event_of(s, "tool/call", 0);
	assert_non_null(call);
	assert_string_equal(hx_str(call, "provider_id"), "call_cut");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(call, "incomplete")));
	assert_true(cJSON_IsString(cJSON_GetObjectItem(call, "args")));
	const cJSON *res = event_of(s, "tool/result", 0);
	assert_string_equal(hx_str(res, "status"), "not_executed");
	assert_int_equal(strncmp(hx_str(res, "output"), "not executed: ", 14), 0);
	assert_non_null(strstr(hx_str(res, "output"), "canceled"));
	assert_null(event_of(s, "tool/started", 0));
	scan_free(s);
	assert_false(exists(marker));
	hx_send(x, "what happened?", NULL);
	WAIT(x, x->settled == 2);
	assert_string_equal(hx_str(hx_done(x, 1), "outcome"), "completed");
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 2);
	char *body = cJSON_PrintUnformatted(cJSON_GetArrayItem(reqs, 1));
	assert_non_null(strstr(body, "call_cut"));
	assert_non_null(strstr(body, "not executed: "));
	free(body);
	cJSON_Delete(reqs);
	assert_false(exists(marker));
}

/* A tool that fails is a result the model reads, not a failure of the
 * turn: a command's exit status, a file that is not there. */
static void test_tools_failure_is_fed_back(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ALL, x);
	hx_create(x, &c);
	policy(x, APPROVAL_ALL);
	hx_send(x, "run echo broken >&2; exit 3", NULL);
	WAIT(x, x->settled == 1);
	hx_send(x, "read no-such-file.txt", NULL);
	WAIT(x, x->settled == 2);
	for (int i = 0; i < 2; i++)
		assert_string_equal(hx_str(hx_done(x, i), "outcome"), "completed");
	struct scan *s = hx_read_log(x);
	const cJSON *r0 = event_of(s, "tool/result", 0), *r1 = event_of(s, "tool/result", 1);
	assert_string_equal(hx_str(r0, "status"), "error");
	assert_int_equal(cJSON_GetObjectItem(r0, "exit_code")->valueint, 3);
	assert_non_null(strstr(hx_str(r0, "output"), "broken"));
	assert_string_equal(hx_str(r1, "status"), "error");
	assert_non_null(strstr(hx_str(r1, "output"), "no-such-file.txt"));
	scan_free(s);
	/* The offline model read the results: its answers quote them. */
	assert_non_null(strstr(x->text.p, "done: "));
	assert_non_null(strstr(x->text.p, "broken"));
}

/* A cancel while the user is asked: the request is answered canceled, the
 * call never runs, its result says so, and the turn ends canceled. */
static void test_tools_cancel_during_approval(void **state)
{
	struct hx *x = *state;
	struct host_call c = tool_call(APPROVAL_ASK, x);
	hx_create(x, &c);
	char marker[256];
	snprintf(marker, sizeof marker, "%s/ran", x->dir);
	char *prompt = xasprintf("run touch %s", marker);
	hx_send(x, prompt, NULL); /* x->decision NULL: nobody answers */
	free(prompt);
	WAIT(x, cJSON_GetArraySize(x->requests) == 1);
	host_cancel(x->h, x->id);
	WAIT(x, x->settled == 1);
	assert_string_equal(hx_str(hx_done(x, 0), "outcome"), "canceled");
	assert_false(exists(marker));
	struct scan *s = hx_read_log(x);
	const cJSON *ans = event_of(s, "interaction/answer", 0);
	assert_string_equal(hx_str(ans, "decision"), "canceled");
	assert_null(event_of(s, "tool/started", 0));
	const cJSON *res = event_of(s, "tool/result", 0);
	assert_string_equal(hx_str(res, "status"), "canceled");
	assert_int_equal(strncmp(hx_str(res, "output"), "canceled: ", 10), 0);
	assert_null(event_of(s, "tool/result", 1));
	scan_free(s);
}

/* Anthropic: a call cut off by max_tokens is not executed, and the next
 * request replays it with "input": {} and its not_executed result (the
 * server rejects a malformed history); malformed arguments of a whole call
 * become an error result the model reads. */
static void test_tools_cut_by_the_token_limit_and_malformed(void **state)
{
	struct hx *x = *state;
	char marker[256];
	snprintf(marker, sizeof marker, "%s/marker", x->dir);
	struct host_call c0 = hx_offline_call();
	hx_create(x, &c0);
	char *script = xasprintf(
		"{\"replies\":[{\"tool_calls\":[{\"id\":\"toolu_cut\",\"name\":\"shell\","
		"\"arguments\":\"{\\\"command\\\":\\\"touch %s\\\"}\"}],"
		"\"stop_reason\":\"max_tokens\"},"
		"{\"tool_calls\":[{\"id\":\"toolu_bad\",\"name\":\"shell\","
		"\"arguments\":\"{\\\"command\\\": touch\"}]},"
		"{\"text\":\"giving up\"}]}",
		marker);
	wire_call(x, PROVIDER_ANTHROPIC, script);
	free(script);
	hx_send(x, "make the marker", NULL);
	WAIT(x, x->settled == 1);
	if (strcmp(hx_str(hx_done(x, 0), "outcome"), "completed") != 0)
		fail_msg("outcome %s: %s", hx_str(hx_done(x, 0), "outcome"),
			 cJSON_PrintUnformatted(cJSON_GetObjectItem(hx_done(x, 0), "error")));
	assert_false(exists(marker));
	struct scan *s = hx_read_log(x);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(event_of(s, "tool/call", 0), "incomplete")));
	const cJSON *r0 = event_of(s, "tool/result", 0), *r1 = event_of(s, "tool/result", 1);
	assert_string_equal(hx_str(r0, "status"), "not_executed");
	assert_non_null(strstr(hx_str(r0, "output"), "output limit"));
	assert_string_equal(hx_str(r1, "status"), "error");
	assert_non_null(strstr(hx_str(r1, "output"), "not valid JSON"));
	assert_null(event_of(s, "tool/started", 0));
	scan_free(s);
	cJSON *reqs = fake_requests(&x->fake);
	assert_int_equal(cJSON_GetArraySize(reqs), 3);
	char *body = cJSON_PrintUnformatted(cJSON_GetArrayItem(reqs, 1));
	assert_non_null(strstr(body, "\"id\":\"toolu_cut\",\"name\":\"shell\",\"input\":{}"));
	assert_non_null(strstr(body, "not executed: "));
	free(body);
	body = cJSON_PrintUnformatted(cJSON_GetArrayItem(reqs, 2));
	assert_non_null(strstr(body, "invalid arguments"));
	free(body);
	cJSON_Delete(reqs);
}

int main(int argc, char **argv)
{
	/* Shell commands run under a reaper: this program, again. */
	tool_reaper_dispatch(argc, argv);
#define T(fn) cmocka_unit_test_setup_teardown(fn, hx_setup, hx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_tools_call_runs_and_its_result_goes_back),
		T(test_tools_denied_call_does_not_run),
		T(test_tools_allow_for_the_session),
		T(test_tools_read_only_policy),
		T(test_tools_allow_for_the_session_then_a_policy_change_across_a_restart),
		T(test_tools_cancel_while_a_tool_runs),
		T(test_tools_step_limit),
		T(test_tools_second_answer_is_superseded),
		T(test_tools_provider_call_over_the_wire),
		T(test_tools_cancel_mid_arguments),
		T(test_tools_failure_is_fed_back),
		T(test_tools_cancel_during_approval),
		T(test_tools_cut_by_the_token_limit_and_malformed),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	cJSON_Delete(schemas);
	return rc;
}
