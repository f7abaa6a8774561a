/* tool.c — the tools by name (tool.h): dispatch to each body, their
 * schemas, results, and the environment they run with. */
#include "engine/tool.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "engine/tool_int.h"
#include "engine/tool_output.h"

static const char *const file_tools[] = {
	"read_file", "write_file", "edit_file", "list_dir", "grep", NULL,
};

static const char *const read_only_tools[] = {"read_file", "list_dir", "grep", NULL};

static bool name_in(const char *name, const char *const *names)
{
	for (; name && *names; names++)
		if (strcmp(name, *names) == 0)
			return true;
	return false;
}

struct tool_run *tool_start(const struct tool_ctx *ctx, const char *name, const cJSON *args,
			    tool_done_fn cb, void *cb_ctx, struct cerr *err)
{
	if (name && strcmp(name, "shell") == 0)
		return tool_shell_start(ctx, args, cb, cb_ctx, err);
	if (name_in(name, file_tools))
		return tool_files_start(ctx, name, args, cb, cb_ctx, err);
	cerr_set(err, CERR_USAGE, 0, "unknown tool '%s'", name ? name : "");
	return NULL;
}

void tool_cancel(struct tool_run *run)
{
	if (run && run->cancel)
		run->cancel(run);
}

void tool_result_release(struct tool_result *r)
{
	if (!r)
		return;
	free(r->output);
	free(r->full);
	cJSON_Delete(r->extra);
	r->output = NULL;
	r->full = NULL;
	r->extra = NULL;
	r->truncated = false;
}

struct tool_limits tool_limits_resolve(const struct tool_limits *l)
{
	struct tool_limits out = l ? *l : (struct tool_limits){0};
	if (!out.result_max)
		out.result_max = TOOL_RESULT_MAX_DEFAULT;
	if (!out.full_max)
		out.full_max = TOOL_FULL_MAX_DEFAULT;
	if (!out.timeout_ms)
		out.timeout_ms = TOOL_TIMEOUT_MS_DEFAULT;
	if (!out.read_max)
		out.read_max = TOOL_READ_MAX_DEFAULT;
	if (!out.grep_max)
		out.grep_max = TOOL_GREP_MAX_DEFAULT;
	return out;
}

void tool_result_text(struct tool_result *r, const char *text, size_t n,
		      const struct tool_limits *l)
{
	free(r->output);
	free(r->full);
	r->full = NULL;
	r->output = tool_output_cap(text, n, l->result_max, &r->truncated);
	if (r->truncated)
		r->full = tool_output_cap(text, n, l->full_max, NULL);
}

/* What the providers are sent: names, what each tool does, and the
 * parameters by their documented names (docs/tools.md). */
static const char schemas_json[] =
	"["
	"{\"name\":\"shell\","
	"\"description\":\"Run a command with /bin/sh -c in the session's directory. "
	"stdin is empty; stdout and stderr come back combined, head and tail kept when long. "
	"A non-zero exit, a signal or the timeout is reported after the output.\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{"
	"\"command\":{\"type\":\"string\",\"description\":\"the shell command line\"},"
	"\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":600000,"
	"\"description\":\"stop the command after this many milliseconds (default 120000)\"}},"
	"\"required\":[\"command\"],\"additionalProperties\":false}},"

	"{\"name\":\"read_file\","
	"\"description\":\"Read a text file, or a range of its lines (1-based, inclusive). "
	"Lines come back numbered (the number, a tab, the line); the numbers are not part of "
	"the file.\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\",\"description\":\"the file, relative to the session's directory or absolute\"},"
	"\"start_line\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"first line to read\"},"
	"\"end_line\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"last line to read\"}},"
	"\"required\":[\"path\"],\"additionalProperties\":false}},"

	"{\"name\":\"write_file\","
	"\"description\":\"Create or replace a file with the given content (atomic; keeps the file's mode).\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\",\"description\":\"the file, relative to the session's directory or absolute\"},"
	"\"content\":{\"type\":\"string\",\"description\":\"the whole new content\"}},"
	"\"required\":[\"path\",\"content\"],\"additionalProperties\":false}},"

	"{\"name\":\"edit_file\","
	"\"description\":\"Replace one exact occurrence of old_string by new_string in a file; "
	"no match or several matches is an error.\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\",\"description\":\"the file, relative to the session's directory or absolute\"},"
	"\"old_string\":{\"type\":\"string\",\"description\":\"the text to replace; must occur exactly once\"},"
	"\"new_string\":{\"type\":\"string\",\"description\":\"the replacement\"}},"
	"\"required\":[\"path\",\"old_string\",\"new_string\"],\"additionalProperties\":false}},"

	"{\"name\":\"list_dir\","
	"\"description\":\"List a directory's entries.\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\",\"description\":\"the directory (default: the session's directory)\"}},"
	"\"additionalProperties\":false}},"

	"{\"name\":\"grep\","
	"\"description\":\"Search files for lines matching a regular expression; results are bounded.\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{"
	"\"pattern\":{\"type\":\"string\",\"description\":\"an extended regular expression\"},"
	"\"path\":{\"type\":\"string\",\"description\":\"a file or directory to search (default: the session's directory)\"},"
	"\"glob\":{\"type\":\"string\",\"description\":\"only files whose name matches this shell pattern, e.g. *.c\"}},"
	"\"required\":[\"pattern\"],\"additionalProperties\":false}}"
	"]";

cJSON *tool_schemas(void)
{
	cJSON *a = cJSON_Parse(schemas_json);
	if (!a)
		abort(); /* the text above is constant: a parse failure is a build defect */
	return a;
}

bool tool_is_read_only(const char *name)
{
	return name_in(name, read_only_tools);
}

/* Set by cairn for every tool: no pager waits on a terminal nobody sees,
 * git never prompts for credentials. */
static const char *const added_env[] = {
	"PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", NULL,
};

static const char *const default_strip[] = {"*_API_KEY", NULL};

/* Does entry ("NAME=value") name a variable matching one of pats? */
static bool env_matches(const char *entry, const char *const *pats)
{
	const char *eq = strchr(entry, '=');
	size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
	char *name = xstrndup(entry, n);
	bool hit = false;
	for (; *pats && !hit; pats++)
		hit = fnmatch(*pats, name, 0) == 0;
	free(name);
	return hit;
}

static const char *const overridden[] = {"PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT", NULL};

char **tool_env(char *const *environ_, const char *const *strip)
{
	if (!strip)
		strip = default_strip;
	size_t n = 0;
	for (char *const *e = environ_; e && *e; e++)
		n++;
	char **out = xcalloc(n + sizeof added_env / sizeof *added_env, sizeof *out);
	size_t k = 0;
	for (char *const *e = environ_; e && *e; e++)
		if (!env_matches(*e, strip) && !env_matches(*e, overridden))
			out[k++] = xstrdup(*e);
	for (const char *const *a = added_env; *a; a++)
		out[k++] = xstrdup(*a);
	out[k] = NULL;
	return out;
}

void tool_env_free(char **env)
{
	if (!env)
		return;
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}
