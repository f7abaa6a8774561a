/* test_config.c — app/config and app/sysprompt: the selection
 * precedence table (an empty variable counts as unset), the file's keys
 * applied, the variables outranking the file, a malformed file named with
 * its line and column, unknown keys and wrong kinds refused, base URLs
 * other than http(s) refused (file and variables), URLs shown
 * without credentials, and the system prompt: default, file, config, and
 * the AGENTS.md files in order (global, repository root down to cwd,
 * nothing above the root). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/config.h"
#include "engine/tool.h"
#include "app/sysprompt.h"
#include "tests/unit/support_fixture.h"

static char dir[256], root[256];
static const char *const vars[] = {"OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
				   "ANTHROPIC_BASE_URL", "MY_KEY", NULL};

static int setup(void **state)
{
	if (tmp_root("cfg", dir, sizeof dir, root, sizeof root) < 0)
		return -1;
	mkdir(path_in(dir, "cairn"), 0700);
	setenv("XDG_CONFIG_HOME", dir, 1);
	for (const char *const *v = vars; *v; v++)
		unsetenv(*v);
	return 0;
}

static int teardown(void **state)
{
	rm_rf(dir);
	return 0;
}

static void write_config(const char *text)
{
	spit(path_in(dir, "cairn/config.json"), text, strlen(text), O_TRUNC);
}

struct row {
	const char *flag, *session_provider, *session_model, *file_default;
	const char *openai_url, *openai_key, *anthropic_key; /* NULL unset, "" empty */
	const char *opt_model;
	const char *want, *why, *model, *model_from;
};

static void set_or_unset(const char *name, const char *v)
{
	if (v)
		setenv(name, v, 1);
	else
		unsetenv(name);
}

static void test_provider_and_model_follow_flag_session_file_env(void **state)
{
	static const struct row rows[] = {
		/* flag     session            file       o_url        o_key  a_key  --model */
		{NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "offline", "default", "offline", "default"},
		{NULL, NULL, NULL, NULL, NULL, NULL, "ak", NULL, "anthropic", "ANTHROPIC_API_KEY", "claude-sonnet-4-5", "default"},
		{NULL, NULL, NULL, NULL, NULL, "ok", "ak", NULL, "openai", "OPENAI_API_KEY", "gpt-4.1", "default"},
		{NULL, NULL, NULL, NULL, "http://127.0.0.1:8080/v1", NULL, "ak", NULL, "openai", "OPENAI_BASE_URL", "gpt-4.1", "default"},
		{NULL, NULL, NULL, NULL, "", "", "ak", NULL, "anthropic", "ANTHROPIC_API_KEY", "claude-sonnet-4-5", "default"},
		{NULL, NULL, NULL, NULL, "", "", "", NULL, "offline", "default", "offline", "default"},
		{NULL, NULL, NULL, "anthropic", NULL, "ok", NULL, NULL, "anthropic", "config", "claude-sonnet-4-5", "default"},
		{NULL, "openai", "gpt-x", "anthropic", NULL, NULL, "ak", NULL, "openai", "session", "gpt-x", "session"},
		{NULL, "openai", "gpt-x", NULL, NULL, NULL, NULL, "o3", "openai", "session", "o3", "--model"},
		{"anthropic", "openai", "gpt-x", "offline", "http://u/v1", "ok", NULL, NULL, "anthropic", "--provider", "claude-sonnet-4-5", "default"},
		{"openai", "openai", "gpt-x", NULL, NULL, NULL, NULL, NULL, "openai", "--provider", "gpt-x", "session"},
		{"offline", NULL, NULL, NULL, NULL, "ok", NULL, "gpt-4.1", "offline", "--provider", "offline", "default"},
		{"openai", NULL, NULL, NULL, NULL, NULL, NULL, "qwen3", "openai", "--provider", "qwen3", "--model"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		if (r->file_default) {
			char text[128];
			snprintf(text, sizeof text, "{\"provider\": \"%s\"}", r->file_default);
			write_config(text);
		} else {
			write_config("{}");
		}
		set_or_unset("OPENAI_BASE_URL", r->openai_url);
		set_or_unset("OPENAI_API_KEY", r->openai_key);
		set_or_unset("ANTHROPIC_API_KEY", r->anthropic_key);
		struct config cfg;
		struct cerr err;
		assert_int_equal(config_load(&cfg, &err), 0);
		struct config_selection sel;
		assert_int_equal(config_select(&cfg, r->flag, r->opt_model, r->session_provider,
					       r->session_model, &sel, &err), 0);
		if (strcmp(sel.provider->name, r->want) || strcmp(sel.why, r->why) ||
		    strcmp(sel.model, r->model) || strcmp(sel.model_from, r->model_from))
			fail_msg("row %zu: got %s (%s) %s (%s), want %s (%s) %s (%s)", i, sel.provider->name,
				 sel.why, sel.model, sel.model_from, r->want, r->why, r->model, r->model_from);
		config_release(&cfg);
	}
	struct config cfg;
	struct cerr err;
	assert_int_equal(config_load(&cfg, &err), 0);
	struct config_selection sel;
	FAILS(config_select(&cfg, "gemini", NULL, NULL, NULL, &sel, &err), CERR_USAGE);
	assert_non_null(strstr(err.msg, "'gemini'"));
	FAILS(config_select(&cfg, NULL, NULL, "future", NULL, &sel, &err), CERR_UNSUPPORTED);
	config_release(&cfg);
}

static void test_file_values_override_defaults_and_name_their_source(void **state)
{
	write_config("{\n"
		     "  \"provider\": \"openai\",\n"
		     "  \"timeouts\": {\"connect\": 5, \"first_byte\": 900, \"gap\": 0.5, \"total\": 7200},\n"
		     "  \"system_prompt\": \"Answer in French.\",\n"
		     "  \"providers\": {\n"
		     "    \"openai\": {\"base_url\": \"http://localhost:11434/v1\", \"model\": \"llama3\",\n"
		     "               \"api_key_env\": \"MY_KEY\", \"timeouts\": {\"gap\": 30, \"total\": 1.5}},\n"
		     "    \"anthropic\": {\"max_tokens\": 2048},\n"
		     "    \"offline\": {\"pace_ms\": 0}\n"
		     "  }\n"
		     "}\n");
	struct config cfg;
	struct cerr err;
	assert_int_equal(config_load(&cfg, &err), 0);
	assert_true(cfg.file_found);
	assert_string_equal(cfg.provider, "openai");
	assert_int_equal(cfg.pace_ms, 0);
	const struct config_provider *o = config_provider(&cfg, "openai");
	assert_string_equal(o->base_url, "http://localhost:11434/v1");
	assert_string_equal(o->base_url_from, "config");
	assert_string_equal(o->model, "llama3");
	assert_string_equal(o->model_from, "config");
	assert_int_equal(o->timeouts.connect_ms, 5000);
	assert_int_equal(o->timeouts.first_byte_ms, 900000);
	assert_int_equal(o->timeouts.gap_ms, 30000);
	assert_int_equal(o->timeouts.total_ms, 1500);
	assert_null(config_api_key(o));
	setenv("MY_KEY", "secret", 1);
	assert_string_equal(config_api_key(o), "secret");
	const struct config_provider *a = config_provider(&cfg, "anthropic");
	assert_int_equal(a->max_tokens, 2048);
	assert_int_equal(a->timeouts.gap_ms, 500);
	assert_int_equal(a->timeouts.total_ms, 7200000);
	assert_string_equal(a->base_url, CONFIG_ANTHROPIC_URL);
	/* Tools: the defaults, and the providers' key variables stripped,
	 * MY_KEY too though it does not look like a key. */
	assert_int_equal(cfg.tools.result_max, CONFIG_TOOL_RESULT_MAX);
	assert_int_equal(cfg.tools.output_max, CONFIG_TOOL_OUTPUT_MAX);
	char **strip = config_tool_strip(&cfg);
	assert_string_equal(strip[0], "*_API_KEY");
	assert_string_equal(strip[1], "MY_KEY");
	assert_string_equal(strip[2], "ANTHROPIC_API_KEY");
	assert_null(strip[3]);
	tool_env_free(strip);
	config_release(&cfg);
	write_config("{\"tools\": {\"result_max\": 2048, \"output_max\": 4096,"
		     " \"env_strip\": [\"SECRET_*\", \"TOKEN\"]}}");
	assert_int_equal(config_load(&cfg, &err), 0);
	assert_int_equal(cfg.tools.result_max, 2048);
	assert_int_equal(cfg.bell, CONFIG_BELL_AUTO);
	assert_int_equal(cfg.tools.output_max, 4096);
	strip = config_tool_strip(&cfg);
	assert_string_equal(strip[0], "SECRET_*"); /* the list replaces the default */
	assert_string_equal(strip[1], "TOKEN");
	assert_string_equal(strip[2], "OPENAI_API_KEY");
	assert_string_equal(strip[3], "ANTHROPIC_API_KEY");
	assert_null(strip[4]);
	tool_env_free(strip);
	config_release(&cfg);
	/* The variables outrank the file. */
	setenv("OPENAI_BASE_URL", "http://other:1/v1", 1);
	assert_int_equal(config_load(&cfg, &err), 0);
	assert_string_equal(config_provider(&cfg, "openai")->base_url, "http://other:1/v1");
	assert_string_equal(config_provider(&cfg, "openai")->base_url_from, "OPENAI_BASE_URL");
	config_release(&cfg);
	/* No file: defaults; HOME when XDG_CONFIG_HOME is unset or relative. */
	setenv("XDG_CONFIG_HOME", "relative", 1);
	setenv("HOME", dir, 1);
	assert_int_equal(config_load(&cfg, &err), 0);
	assert_false(cfg.file_found);
	assert_string_equal(cfg.path, path_in(dir, ".config/cairn/config.json"));
	assert_int_equal(cfg.pace_ms, CONFIG_PACE_MS);
	assert_int_equal(cfg.providers[0].timeouts.first_byte_ms, CONFIG_FIRST_BYTE_MS);
	assert_int_equal(cfg.providers[1].timeouts.total_ms, CONFIG_TOTAL_MS);
	assert_int_equal(CONFIG_TOTAL_MS, 3600000);
	assert_int_equal(CONFIG_FIRST_BYTE_MS, 600000);
	config_release(&cfg);
}

static void expect_refused(const char *text, enum cerr_class cls, const char *needle)
{
	write_config(text);
	struct config cfg;
	struct cerr err;
	FAILS(config_load(&cfg, &err), cls);
	if (!strstr(err.msg, needle) || !strstr(err.msg, path_in(dir, "cairn/config.json")))
		fail_msg("message '%s' lacks '%s' or the file", err.msg, needle);
}

static void test_malformed_config_is_refused_with_line_and_key(void **state)
{
	expect_refused("{\n  \"provider\": \"openai\",\n  \"timeouts\": {\"gap\": 3,}\n}\n", CERR_USAGE, ":3:2");
	expect_refused("{\"provider\": \"openai\"} x", CERR_USAGE, ":1:24: invalid JSON");
	expect_refused("{\"provider\": \"op\xff\"}", CERR_USAGE, ":1:17: invalid UTF-8");
	expect_refused("{\"providr\": \"openai\"}", CERR_USAGE, "'providr' is not a known key");
	expect_refused("{\"provider\": \"gemini\"}", CERR_USAGE, "'provider' names no provider");
	expect_refused("{\"provider\": \"openai\", \"provider\": \"offline\"}", CERR_USAGE, "given twice");
	expect_refused("{\"timeouts\": {\"connect\": -1}}", CERR_USAGE, "'timeouts.connect' must be");
	expect_refused("{\"timeouts\": {\"total\": 0}}", CERR_USAGE, "'timeouts.total' must be a number of seconds");
	expect_refused("{\"providers\": {\"openai\": {\"timeouts\": {\"total\": 2592001}}}}", CERR_USAGE,
		       "'providers.openai.timeouts.total' must be a number of seconds greater than 0, at most 2592000");
	expect_refused("{\"timeouts\": {\"deadline\": 5}}", CERR_USAGE, "'timeouts.deadline' is not a known key");
	expect_refused("{\"providers\": {\"openai\": {\"model\": 4}}}", CERR_USAGE, "'providers.openai.model'");
	expect_refused("{\"providers\": {\"openai\": {\"max_tokens\": 4}}}", CERR_USAGE, "Anthropic");
	expect_refused("{\"providers\": {\"offline\": {\"pace_ms\": 1.5}}}", CERR_USAGE, "'providers.offline.pace_ms'");
	expect_refused("{\"providers\": {\"ollama\": {}}}", CERR_USAGE, "'providers.ollama'");
	expect_refused("[]", CERR_USAGE, "not a JSON object");
	expect_refused("{\"tools\": {\"result_max\": 10}}", CERR_USAGE, "'tools.result_max' must be an integer from 1024");
	expect_refused("{\"tools\": {\"result_max\": 4096, \"output_max\": 2048}}", CERR_USAGE,
		       "'tools.output_max' must not be less than tools.result_max");
	expect_refused("{\"tools\": {\"env_strip\": \"*_KEY\"}}", CERR_USAGE, "'tools.env_strip' must be an array");
	expect_refused("{\"tools\": {\"env_strip\": [\"A=B\"]}}", CERR_USAGE, "'tools.env_strip' must hold");
	expect_refused("{\"tools\": {\"timeout\": 3}}", CERR_USAGE, "'tools.timeout' is not a known key");
	expect_refused("{\"tools\": []}", CERR_USAGE, "'tools' must be an object");
	expect_refused("{\"bell\": \"loud\"}", CERR_USAGE, "'bell' must be true, false,");
	expect_refused("{\"bell\": 1}", CERR_USAGE, "'bell' must be true, false,");
	const char *bells[][2] = {{"false", "off"}, {"true", "auto"}, {"\"osc9\"", "osc9"},
				  {"\"bel\"", "bel"}, {"\"off\"", "off"}, {"\"auto\"", "auto"}};
	for (size_t i = 0; i < sizeof bells / sizeof *bells; i++) {
		struct config cfg;
		struct cerr err;
		char text[64];
		snprintf(text, sizeof text, "{\"bell\": %s}", bells[i][0]);
		write_config(text);
		assert_int_equal(config_load(&cfg, &err), 0);
		assert_string_equal(config_bell_name(cfg.bell), bells[i][1]);
		config_release(&cfg);
	}
	expect_refused("{\"providers\": {\"anthropic\": 1}}", CERR_USAGE, "'providers.anthropic' must be an object");
}

/* Only http:// and https:// base URLs, from the file or a variable; the
 * message names the URL (without its credentials) and where it came from. */
static void test_base_urls_must_be_http_or_https(void **state)
{
	expect_refused("{\"providers\": {\"openai\": {\"base_url\": \"file:///etc/passwd\"}}}", CERR_USAGE,
		       "'providers.openai.base_url' must be an http:// or https:// URL, not 'file:///etc/passwd'");
	expect_refused("{\"providers\": {\"anthropic\": {\"base_url\": \"ftp://u:secret@host/\"}}}",
		       CERR_USAGE, "not 'ftp://***@host/'");
	expect_refused("{\"providers\": {\"openai\": {\"base_url\": \"http:///v1\"}}}", CERR_USAGE,
		       "'providers.openai.base_url' must be");
	write_config("{\"providers\": {\"openai\": {\"base_url\": \"HTTPS://h.example/v1\"}}}");
	struct config cfg;
	struct cerr err;
	assert_int_equal(config_load(&cfg, &err), 0);
	config_release(&cfg);
	static const char *const rows[][3] = {
		{"OPENAI_BASE_URL", "file:///etc/passwd", "OPENAI_BASE_URL 'file:///etc/passwd' is not an http:// or https:// URL"},
		{"ANTHROPIC_BASE_URL", "ftp://127.0.0.1/", "ANTHROPIC_BASE_URL 'ftp://127.0.0.1/' is not"},
		{"OPENAI_BASE_URL", "127.0.0.1:8080/v1", "OPENAI_BASE_URL '127.0.0.1:8080/v1' is not"},
	};
	write_config("{}");
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		setenv(rows[i][0], rows[i][1], 1);
		FAILS(config_load(&cfg, &err), CERR_USAGE);
		if (!strstr(err.msg, rows[i][2]))
			fail_msg("row %zu: '%s'", i, err.msg);
		unsetenv(rows[i][0]);
	}
}

static void test_redact_url_hides_credentials_only(void **state)
{
	char *u = config_redact_url("https://user:pa@ss@proxy.example/v1?x=@");
	assert_string_equal(u, "https://***@proxy.example/v1?x=@");
	free(u);
	u = config_redact_url("http://127.0.0.1:8080/v1");
	assert_string_equal(u, "http://127.0.0.1:8080/v1");
	free(u);
}

static void put(const char *path, const char *text)
{
	spit(path, text, strlen(text), O_TRUNC);
}

/* AGENTS.md: the global one, then the repository root's down to cwd; one
 * above the root is not read. */
static void test_agents_files_read_global_then_root_down_to_cwd(void **state)
{
	write_config("{}");
	const char *top = path_in(dir, "w");
	mkdir(top, 0700);
	mkdir(path_in(dir, "w/repo"), 0700);
	mkdir(path_in(dir, "w/repo/.git"), 0700);
	mkdir(path_in(dir, "w/repo/a"), 0700);
	mkdir(path_in(dir, "w/repo/a/b"), 0700);
	put(path_in(dir, "w/AGENTS.md"), "ABOVE");
	put(path_in(dir, "cairn/AGENTS.md"), "GLOBAL");
	put(path_in(dir, "w/repo/AGENTS.md"), "ROOT");
	put(path_in(dir, "w/repo/a/b/AGENTS.md"), "LEAF");
	struct config cfg;
	struct cerr err;
	assert_int_equal(config_load(&cfg, &err), 0);
	struct sysprompt sp;
	char cwd[512];
	snprintf(cwd, sizeof cwd, "%s", path_in(dir, "w/repo/a/b"));
	setenv("TZ", "UTC", 1);
	assert_int_equal(sysprompt_build(&cfg, NULL, cwd, 1767225600000, &sp, &err), 0); /* 2026-01-01 */
	assert_string_equal(sp.base_from, "default");
	assert_int_equal(sp.nfiles, 3);
	assert_string_equal(sp.files[0], path_in(dir, "cairn/AGENTS.md"));
	assert_string_equal(sp.files[1], path_in(dir, "w/repo/AGENTS.md"));
	assert_string_equal(sp.files[2], path_in(dir, "w/repo/a/b/AGENTS.md"));
	assert_null(strstr(sp.text, "ABOVE"));
	const char *g = strstr(sp.text, "GLOBAL"), *r = strstr(sp.text, "ROOT"), *l = strstr(sp.text, "LEAF");
	assert_true(g && r && l && g < r && r < l);
	assert_non_null(strstr(sp.text, cwd));
	assert_non_null(strstr(sp.text, "2026-01-01"));
	assert_non_null(strstr(sp.text, "You are cairn"));
	sysprompt_release(&sp);

	/* No repository: cwd's own AGENTS.md only. A worktree's .git file
	 * marks a root too. */
	rm_rf(path_in(dir, "w/repo/.git"));
	assert_int_equal(sysprompt_build(&cfg, NULL, cwd, 0, &sp, &err), 0);
	assert_int_equal(sp.nfiles, 2);
	assert_string_equal(sp.files[1], path_in(dir, "w/repo/a/b/AGENTS.md"));
	sysprompt_release(&sp);
	put(path_in(dir, "w/repo/a/.git"), "gitdir: elsewhere\n");
	put(path_in(dir, "w/repo/a/AGENTS.md"), "MIDDLE");
	assert_int_equal(sysprompt_build(&cfg, NULL, cwd, 0, &sp, &err), 0);
	assert_int_equal(sp.nfiles, 3);
	assert_string_equal(sp.files[1], path_in(dir, "w/repo/a/AGENTS.md"));
	sysprompt_release(&sp);

	/* --system FILE replaces the default; a missing one is an error. */
	put(path_in(dir, "prompt.txt"), "CUSTOM");
	assert_int_equal(sysprompt_build(&cfg, path_in(dir, "prompt.txt"), cwd, 0, &sp, &err), 0);
	assert_string_equal(sp.base_from, "--system");
	assert_int_equal(strncmp(sp.text, "CUSTOM", 6), 0);
	assert_null(strstr(sp.text, "You are cairn"));
	assert_int_equal(sp.nfiles, 4);
	sysprompt_release(&sp);
	FAILS(sysprompt_build(&cfg, path_in(dir, "nope.txt"), cwd, 0, &sp, &err), CERR_MISSING);
	config_release(&cfg);

	/* The config's prompt file, relative to the configuration directory. */
	put(path_in(dir, "cairn/sys.md"), "FROM CONFIG FILE");
	write_config("{\"system_prompt_file\": \"sys.md\"}");
	assert_int_equal(config_load(&cfg, &err), 0);
	assert_int_equal(sysprompt_build(&cfg, NULL, cwd, 0, &sp, &err), 0);
	assert_string_equal(sp.base_from, "config");
	assert_int_equal(strncmp(sp.text, "FROM CONFIG FILE", 16), 0);
	sysprompt_release(&sp);
	config_release(&cfg);
	/* An AGENTS.md that cannot be read is an error naming it (root can
	 * read anything, so a directory loop stands in: ELOOP). */
	unlink(path_in(dir, "w/repo/a/AGENTS.md"));
	assert_int_equal(symlink("AGENTS.md", path_in(dir, "w/repo/a/AGENTS.md")), 0);
	write_config("{}");
	assert_int_equal(config_load(&cfg, &err), 0);
	FAILS(sysprompt_build(&cfg, NULL, cwd, 0, &sp, &err), CERR_IO);
	assert_non_null(strstr(err.msg, "a/AGENTS.md"));
	config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_provider_and_model_follow_flag_session_file_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_values_override_defaults_and_name_their_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_config_is_refused_with_line_and_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_base_urls_must_be_http_or_https, setup, teardown),
		cmocka_unit_test(test_redact_url_hides_credentials_only),
		cmocka_unit_test_setup_teardown(test_agents_files_read_global_then_root_down_to_cwd, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
