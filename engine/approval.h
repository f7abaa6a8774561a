/* approval.h — whether a tool call may run without asking (issue: tools,
 * approvals; docs/tools.md "Approvals").
 *
 * A session has a policy:
 * - ask (the default): every call is asked, unless an earlier "allow for
 *   this session" answer covers it;
 * - read-only: read_file, list_dir and grep run without asking when every
 *   path they name resolves (symlinks followed) inside the session's cwd;
 *   anything else is asked;
 * - all: nothing is asked.
 * "Allow for this session" covers the exact same command for shell, and
 * for a file tool its calls whose paths are inside the cwd, whatever the
 * policy becomes later; the grants are rebuilt from the log's answers when
 * a session is opened (approvals_replay_*).
 *
 * approval_decide and approval_path_inside resolve paths on the disk
 * (realpath): call them off the loop thread. */
#ifndef CAIRN_APPROVAL_H
#define CAIRN_APPROVAL_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "base/err.h"
#include "persist/vocab.h"

enum approval_policy { APPROVAL_ASK, APPROVAL_READ_ONLY, APPROVAL_ALL };

/* "ask", "read-only", "all"; anything else: CERR_USAGE. */
int approval_policy_parse(const char *s, enum approval_policy *out, struct cerr *err);
/* The policy's name; static storage. */
const char *approval_policy_name(enum approval_policy p);

struct approvals;
/* The grants of one session; free with approvals_free. */
struct approvals *approvals_new(void);
void approvals_free(struct approvals *a);
/* An "allow for this session" answer to a call of tool with args. */
void approvals_grant(struct approvals *a, const char *tool, const cJSON *args);

/* A session's grants rebuilt from its log, the events fed in log order:
 * an interaction/answer "allow_session" (not superseded) grants the call
 * its interaction/request names, as the tool/call recorded it. A call
 * whose arguments are not an object (kept in a blob, or cut off) grants
 * nothing: it is asked again. Every other event is ignored. */
struct approvals_replay;
struct approvals_replay *approvals_replay_new(void);
/* One event of the log (data borrowed for the call). */
void approvals_replay_event(struct approvals_replay *r, enum vocab_type type, const cJSON *data);
/* The grants rebuilt, the caller's (approvals_free); r is freed. */
struct approvals *approvals_replay_end(struct approvals_replay *r);
/* r freed without its grants (NULL: nothing). */
void approvals_replay_free(struct approvals_replay *r);

/* Does the call need the user? false: it may run (the policy or a grant
 * allows it). Reads the disk. */
bool approval_needed(enum approval_policy p, const struct approvals *a, const char *tool,
		     const cJSON *args, const char *cwd);
/* Does path (relative to cwd, or absolute) resolve inside cwd? A path that
 * does not exist yet is judged by its deepest existing parent. Reads the
 * disk. */
bool approval_path_inside(const char *cwd, const char *path);
/* One line for the user: "shell: <command>", "write_file: <path>", ...
 * (control characters left for the screen to make inert). Caller frees. */
char *approval_summary(const char *tool, const cJSON *args);

#endif
