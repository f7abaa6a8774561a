/* cmd_config.c — `cairn config [--json] [--provider P] [--model M]
 * [--system FILE]`: the effective configuration, where each value comes
 * from, and the provider a new turn would use. Keys are never printed:
 * only whether their variable is set. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "app/config.h"
#include "engine/tool.h"
#include "engine/provider.h"
#include "app/sysprompt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t max_tokens(const struct config_provider *p, const char *model)
{
	return p->max_tokens ? p->max_tokens : provider_anthropic_max_tokens(model);
}

static cJSON *timeouts_json(const struct config_timeouts *t)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "connect_ms", (double)t->connect_ms);
	cJSON_AddNumberToObject(o, "first_byte_ms", (double)t->first_byte_ms);
	cJSON_AddNumberToObject(o, "gap_ms", (double)t->gap_ms);
	cJSON_AddNumberToObject(o, "total_ms", (double)t->total_ms);
	return o;
}

static cJSON *provider_json(const struct config *cfg, const struct config_provider *p)
{
	cJSON *o = cJSON_CreateObject();
	if (p->kind == PROVIDER_OFFLINE) {
		cJSON_AddStringToObject(o, "model", p->model);
		cJSON_AddNumberToObject(o, "pace_ms", (double)cfg->pace_ms);
		return o;
	}
	char *url = config_redact_url(p->base_url);
	cJSON_AddStringToObject(o, "base_url", url);
	free(url);
	cJSON_AddStringToObject(o, "base_url_from", p->base_url_from);
	cJSON_AddStringToObject(o, "api_key_env", p->key_env);
	cJSON_AddStringToObject(o, "api_key", config_api_key(p) ? "set" : "unset");
	cJSON_AddStringToObject(o, "model", p->model);
	cJSON_AddStringToObject(o, "model_from", p->model_from);
	if (p->kind == PROVIDER_ANTHROPIC)
		cJSON_AddNumberToObject(o, "max_tokens", (double)max_tokens(p, p->model));
	cJSON_AddItemToObject(o, "timeouts", timeouts_json(&p->timeouts));
	return o;
}

static void print_json(const struct config *cfg, const struct config_selection *sel,
		       const struct sysprompt *sp)
{
	cJSON *o = cJSON_CreateObject();
	if (cfg->path)
		cJSON_AddStringToObject(o, "config_file", cfg->path);
	else
		cJSON_AddNullToObject(o, "config_file");
	cJSON_AddBoolToObject(o, "config_found", cfg->file_found);
	cJSON_AddStringToObject(o, "provider", sel->provider->name);
	cJSON_AddStringToObject(o, "provider_from", sel->why);
	cJSON_AddStringToObject(o, "model", sel->model);
	cJSON_AddStringToObject(o, "model_from", sel->model_from);
	cJSON_AddNumberToObject(o, "max_steps", (double)cfg->max_steps);
	cJSON_AddStringToObject(o, "bell", config_bell_name(cfg->bell));
	cJSON *t = cJSON_AddObjectToObject(o, "tools");
	cJSON_AddNumberToObject(t, "result_max", (double)cfg->tools.result_max);
	cJSON_AddNumberToObject(t, "output_max", (double)cfg->tools.output_max);
	cJSON *strip = cJSON_AddArrayToObject(t, "env_strip");
	char **v = config_tool_strip(cfg);
	for (char **e = v; *e; e++)
		cJSON_AddItemToArray(strip, cJSON_CreateString(*e));
	tool_env_free(v);
	cJSON *ps = cJSON_AddObjectToObject(o, "providers");
	for (int i = 0; i < CONFIG_N_PROVIDERS; i++)
		cJSON_AddItemToObject(ps, cfg->providers[i].name, provider_json(cfg, &cfg->providers[i]));
	cJSON *s = cJSON_AddObjectToObject(o, "system_prompt");
	cJSON_AddStringToObject(s, "from", sp->base_from);
	cJSON *files = cJSON_AddArrayToObject(s, "files");
	for (size_t i = 0; i < sp->nfiles; i++)
		cJSON_AddItemToArray(files, cJSON_CreateString(sp->files[i]));
	cJSON_AddNumberToObject(s, "bytes", (double)strlen(sp->text));
	cli_print_json(o);
}

static void print_text(const struct config *cfg, const struct config_selection *sel,
		       const struct sysprompt *sp)
{
	cli_printf(stdout, "config file: %s%s\n",
		   cfg->path ? cfg->path : "(none: set HOME, an absolute path)",
		   cfg->path && !cfg->file_found ? " (not found)" : "");
	cli_printf(stdout, "provider: %s (from %s)\n", sel->provider->name, sel->why);
	cli_printf(stdout, "model: %s (from %s)\n", sel->model, sel->model_from);
	cli_printf(stdout, "max_steps: %lld\n", (long long)cfg->max_steps);
	cli_printf(stdout, "bell: %s\n", config_bell_name(cfg->bell));
	cli_printf(stdout, "tools: result_max %lld bytes, output_max %lld bytes\n",
		   (long long)cfg->tools.result_max, (long long)cfg->tools.output_max);
	cli_printf(stdout, "tools' environment without:");
	char **v = config_tool_strip(cfg);
	for (char **e = v; *e; e++)
		cli_printf(stdout, " %s", *e);
	cli_printf(stdout, "\n");
	tool_env_free(v);
	for (int i = 0; i < CONFIG_N_PROVIDERS; i++) {
		const struct config_provider *p = &cfg->providers[i];
		cli_printf(stdout, "\n%s:\n", p->name);
		if (p->kind == PROVIDER_OFFLINE) {
			printf("  pace_ms: %lld\n", (long long)cfg->pace_ms);
			continue;
		}
		char *url = config_redact_url(p->base_url);
		cli_printf(stdout, "  base_url: %s (from %s)\n", url, p->base_url_from);
		free(url);
		cli_printf(stdout, "  api_key: %s %s\n", p->key_env, config_api_key(p) ? "set" : "unset");
		cli_printf(stdout, "  model: %s (from %s)\n", p->model, p->model_from);
		if (p->kind == PROVIDER_ANTHROPIC)
			printf("  max_tokens: %lld\n", (long long)max_tokens(p, p->model));
		printf("  timeouts: connect %.3g s, first byte %.3g s, gap %.3g s, total %.7g s\n",
		       (double)p->timeouts.connect_ms / 1000, (double)p->timeouts.first_byte_ms / 1000,
		       (double)p->timeouts.gap_ms / 1000, (double)p->timeouts.total_ms / 1000);
	}
	cli_printf(stdout, "\nsystem prompt: %s, %zu bytes\n", sp->base_from, strlen(sp->text));
	for (size_t i = 0; i < sp->nfiles; i++)
		cli_printf(stdout, "  %s\n", sp->files[i]);
}

int cmd_config(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("config");
	bool json = false;
	const char *provider = NULL, *model = NULL, *system = NULL;
	for (int i = 1; i < argc; i++) {
		const char **dst = strcmp(argv[i], "--provider") == 0 ? &provider
				   : strcmp(argv[i], "--model") == 0  ? &model
				   : strcmp(argv[i], "--system") == 0 ? &system
								      : NULL;
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (dst && i + 1 < argc && argv[i + 1][0])
			*dst = argv[++i];
		else if (dst)
			return cli_usage(me, "%s needs a value", argv[i]);
		else
			return cli_usage(me, "unknown argument '%s'", argv[i]);
	}
	struct config cfg;
	struct cerr err;
	if (config_load(&cfg, &err) < 0)
		return cli_fail(&err);
	struct config_selection sel;
	struct sysprompt sp = {0};
	char *cwd = getcwd(NULL, 0);
	int ret = 0;
	if (!cwd) {
		cerr_set(&err, CERR_IO, errno, "cannot get the working directory");
		ret = cli_fail(&err);
	} else if (config_select(&cfg, provider, model, NULL, NULL, &sel, &err) < 0 ||
		   sysprompt_build(&cfg, system, cwd, clock_unix_ms(), &sp, &err) < 0) {
		ret = cli_fail(&err);
	} else if (json) {
		print_json(&cfg, &sel, &sp);
	} else {
		print_text(&cfg, &sel, &sp);
	}
	sysprompt_release(&sp);
	free(cwd);
	config_release(&cfg);
	return ret;
}
