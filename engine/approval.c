/* approval.c — policies and grants of tool approvals (approval.h). */
#include "engine/approval.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/strmap.h"
#include "base/xalloc.h"
#include "engine/tool.h"

struct grant {
	char *tool;
	char *command; /* shell: the exact command; NULL for a file tool */
};

struct approvals {
	struct grant *v;
	size_t n;
};

static const char *const POLICY[] = {"ask", "read-only", "all"};

int approval_policy_parse(const char *s, enum approval_policy *out, struct cerr *err)
{
	for (size_t i = 0; i < sizeof POLICY / sizeof *POLICY; i++)
		if (s && strcmp(s, POLICY[i]) == 0) {
			*out = (enum approval_policy)i;
			return 0;
		}
	return cerr_set(err, CERR_USAGE, 0, "unknown approval policy '%s' (ask, read-only, all)",
			s ? s : "");
}

const char *approval_policy_name(enum approval_policy p)
{
	return POLICY[p];
}

struct approvals *approvals_new(void)
{
	return xcalloc(1, sizeof(struct approvals));
}

void approvals_free(struct approvals *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].tool);
		free(a->v[i].command);
	}
	free(a->v);
	free(a);
}

static const char *arg_str(const cJSON *args, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(args, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

void approvals_grant(struct approvals *a, const char *tool, const cJSON *args)
{
	a->v = xrealloc(a->v, (a->n + 1) * sizeof *a->v);
	const char *cmd = strcmp(tool, "shell") == 0 ? arg_str(args, "command") : NULL;
	a->v[a->n++] = (struct grant){xstrdup(tool), xstrdup_opt(cmd)};
}

/* ---- grants rebuilt from the log ---- */

/* A call an answer may grant: what approvals_grant keeps of it. */
struct replay_call {
	char *tool;
	char *command; /* shell: its command (NULL: none) */
};

struct approvals_replay {
	struct approvals *out;
	struct strmap calls, requests; /* call_id -> k, request_id -> k */
	struct replay_call *call_list; /* k -> the call */
	size_t ncalls;
	char **keys; /* owned keys of both maps */
	size_t nkeys;
};

struct approvals_replay *approvals_replay_new(void)
{
	struct approvals_replay *r = xcalloc(1, sizeof *r);
	r->out = approvals_new();
	strmap_init(&r->calls);
	strmap_init(&r->requests);
	return r;
}

static void replay_key(struct approvals_replay *r, struct strmap *m, const char *key, size_t v)
{
	r->keys = xreallocarray(r->keys, r->nkeys + 1, sizeof *r->keys);
	r->keys[r->nkeys] = xstrdup(key);
	strmap_put(m, r->keys[r->nkeys++], v);
}

void approvals_replay_event(struct approvals_replay *r, enum vocab_type type, const cJSON *data)
{
	size_t k;
	const char *call_id = arg_str(data, "call_id"), *request_id = arg_str(data, "request_id");
	if (type == VT_TOOL_CALL && call_id && arg_str(data, "name") &&
	    cJSON_IsObject(cJSON_GetObjectItem(data, "args"))) {
		const char *tool = arg_str(data, "name");
		const cJSON *args = cJSON_GetObjectItem(data, "args");
		r->call_list = xreallocarray(r->call_list, r->ncalls + 1, sizeof *r->call_list);
		r->call_list[r->ncalls] = (struct replay_call){
			.tool = xstrdup(tool),
			.command = xstrdup_opt(arg_str(args, "command")),
		};
		replay_key(r, &r->calls, call_id, r->ncalls++);
	} else if (type == VT_INTERACTION_REQUEST && request_id && call_id &&
		   strmap_get(&r->calls, call_id, &k)) {
		replay_key(r, &r->requests, request_id, k);
	} else if (type == VT_INTERACTION_ANSWER && request_id && arg_str(data, "decision") &&
		   strcmp(arg_str(data, "decision"), "allow_session") == 0 &&
		   !cJSON_IsTrue(cJSON_GetObjectItem(data, "superseded")) &&
		   strmap_get(&r->requests, request_id, &k)) {
		cJSON *args = cJSON_CreateObject();
		if (r->call_list[k].command)
			cJSON_AddStringToObject(args, "command", r->call_list[k].command);
		approvals_grant(r->out, r->call_list[k].tool, args);
		cJSON_Delete(args);
	}
}

void approvals_replay_free(struct approvals_replay *r)
{
	if (!r)
		return;
	approvals_free(r->out);
	strmap_release(&r->calls);
	strmap_release(&r->requests);
	for (size_t i = 0; i < r->nkeys; i++)
		free(r->keys[i]);
	free(r->keys);
	for (size_t k = 0; k < r->ncalls; k++) {
		free(r->call_list[k].tool);
		free(r->call_list[k].command);
	}
	free(r->call_list);
	free(r);
}

struct approvals *approvals_replay_end(struct approvals_replay *r)
{
	struct approvals *a = r->out;
	r->out = NULL;
	approvals_replay_free(r);
	return a;
}

/* The deepest existing ancestor of p resolved, with the rest appended. */
static char *resolve(const char *p)
{
	char *r = realpath(p, NULL);
	if (r)
		return r;
	char *dup = xstrdup(p);
	char *slash = strrchr(dup, '/');
	if (!slash || slash == dup) {
		free(dup);
		return NULL;
	}
	*slash = '\0';
	char *parent = resolve(dup);
	char *out = parent ? xasprintf("%s/%s", parent, slash + 1) : NULL;
	free(parent);
	free(dup);
	return out;
}

/* A ".." left in a resolved path (under a part that does not exist yet)
 * could lead anywhere: not inside. */
static bool has_dotdot(const char *p)
{
	size_t n = strlen(p);
	return strstr(p, "/../") || (n >= 3 && strcmp(p + n - 3, "/..") == 0);
}

bool approval_path_inside(const char *cwd, const char *path)
{
	if (!cwd || !path || !*path)
		return false;
	char *rcwd = realpath(cwd, NULL);
	char *full = path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", cwd, path);
	char *rp = resolve(full);
	free(full);
	bool inside = false;
	if (rcwd && rp && !has_dotdot(rp)) {
		size_t n = strlen(rcwd);
		inside = strncmp(rp, rcwd, n) == 0 && (rp[n] == '\0' || rp[n] == '/' || n == 1);
	}
	free(rcwd);
	free(rp);
	return inside;
}

static bool is_file_tool(const char *tool)
{
	static const char *const files[] = {"read_file", "write_file", "edit_file", "list_dir", "grep"};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		if (strcmp(tool, files[i]) == 0)
			return true;
	return false;
}

static bool is_read_only(const char *tool)
{
	return tool_is_read_only(tool);
}

/* Every path the call names is inside cwd (list_dir and grep default to it). */
static bool paths_inside(const char *tool, const cJSON *args, const char *cwd)
{
	const char *p = arg_str(args, "path");
	if (!p)
		return strcmp(tool, "list_dir") == 0 || strcmp(tool, "grep") == 0;
	return approval_path_inside(cwd, p);
}

bool approval_needed(enum approval_policy p, const struct approvals *a, const char *tool,
		     const cJSON *args, const char *cwd)
{
	if (p == APPROVAL_ALL)
		return false;
	if (p == APPROVAL_READ_ONLY && is_read_only(tool) && paths_inside(tool, args, cwd))
		return false;
	for (size_t i = 0; a && i < a->n; i++) {
		if (strcmp(a->v[i].tool, tool) != 0)
			continue;
		if (a->v[i].command) {
			const char *cmd = arg_str(args, "command");
			if (cmd && strcmp(cmd, a->v[i].command) == 0)
				return false;
		} else if (is_file_tool(tool) && paths_inside(tool, args, cwd)) {
			return false;
		}
	}
	return true;
}

char *approval_summary(const char *tool, const cJSON *args)
{
	const char *what = arg_str(args, strcmp(tool, "shell") == 0 ? "command" : "path");
	if (strcmp(tool, "grep") == 0 && arg_str(args, "pattern"))
		return xasprintf("grep: %s in %s", arg_str(args, "pattern"), what ? what : ".");
	if (what)
		return xasprintf("%s: %s", tool, what);
	char *a = args ? cJSON_PrintUnformatted(args) : NULL;
	char *s = xasprintf("%s: %s", tool, a ? a : "{}");
	free(a);
	return s;
}
