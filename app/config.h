/* config.h — providers, models, timeouts and the offline pace: the
 * configuration file, the environment, and which provider a turn uses.
 *
 * The file is $XDG_CONFIG_HOME/cairn/config.json, else
 * ~/.config/cairn/config.json; it may be absent. Its keys, the variables
 * and the selection rules are in docs/configuration.md. Keys are never
 * stored: a provider names the variable that holds its key, read when a
 * request is built (config_api_key). */
#ifndef CAIRN_CONFIG_H
#define CAIRN_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/stream.h"

#define CONFIG_CONNECT_MS 10000
#define CONFIG_FIRST_BYTE_MS 600000
#define CONFIG_GAP_MS 120000
#define CONFIG_TOTAL_MS 3600000
#define CONFIG_TIMEOUT_MAX_S 2592000 /* 30 days: every timeout fits an unsigned count of ms */
#define CONFIG_PACE_MS 20
#define CONFIG_OPENAI_URL "https://api.openai.com/v1"
#define CONFIG_ANTHROPIC_URL "https://api.anthropic.com"
#define CONFIG_OPENAI_MODEL "gpt-4.1"
#define CONFIG_ANTHROPIC_MODEL "claude-sonnet-4-5"
#define CONFIG_TOOL_RESULT_MAX (30 * 1024)
#define CONFIG_TOOL_OUTPUT_MAX (8 << 20)

/* Of one request. The reply progresses when a whole event of its stream
 * carries text, reasoning or a tool call: comments, pings and partial
 * lines do not count. */
struct config_timeouts {
	int64_t connect_ms;    /* to establish the connection */
	int64_t first_byte_ms; /* from the request sent to the reply's first progress */
	int64_t gap_ms;        /* between two progresses of the reply */
	int64_t total_ms;      /* from the request's start to the reply's end */
};

/* One provider's effective settings. All fields are read-only; *_from say
 * where a value came from ("default", "config", or a variable's name). */
struct config_provider {
	const char *name;       /* "openai", "anthropic", "offline" */
	enum provider_kind kind;
	char *base_url;         /* NULL for offline */
	const char *base_url_from;
	char *key_env;          /* the variable holding the key; NULL for offline */
	char *model;            /* the default model */
	const char *model_from;
	int64_t max_tokens;     /* Anthropic; 0: the model's entry in the table */
	struct config_timeouts timeouts;
};

enum { CONFIG_N_PROVIDERS = 3 };

/* The tools' limits and environment ("tools" in the file). */
struct config_tools {
	int64_t result_max; /* bytes of one result the model reads (30 KB) */
	int64_t output_max; /* bytes of a tool's output kept for its blob (8 MiB) */
	char **env_strip;   /* patterns of variables tools never see, NULL-terminated
			     * (default "*_API_KEY") */
};

/* "bell": true or "auto" (OSC 9 where the terminal is known to show it,
 * else BEL; the default), "bel", "osc9", or false (off). */
enum config_bell { CONFIG_BELL_OFF, CONFIG_BELL_AUTO, CONFIG_BELL_BEL, CONFIG_BELL_OSC9 };
/* "off", "auto", "bel" or "osc9" (static). */
const char *config_bell_name(enum config_bell b);

struct config {
	char *dir;              /* the configuration directory (NULL: no HOME) */
	char *path;             /* its config.json */
	bool file_found;
	char *provider;         /* the file's default provider, or NULL */
	char *system_prompt;    /* the file's system prompt text, or NULL */
	char *system_prompt_file; /* or a file holding it (relative to dir), or NULL */
	int64_t pace_ms;        /* the offline provider's pace per token */
	int64_t max_steps;      /* model calls per turn ("max_steps", 50) */
	struct config_tools tools;
	enum config_bell bell;  /* how the chat screen rings when a turn ends or waits ("bell") */
	struct config_provider providers[CONFIG_N_PROVIDERS]; /* openai, anthropic, offline */
};

/* Read the configuration file (if any) and the environment into *cfg
 * (release with config_release). A malformed file is CERR_USAGE naming
 * the file and the line and column, or the key at fault; an unreadable
 * one CERR_IO. */
int config_load(struct config *cfg, struct cerr *err);
void config_release(struct config *cfg);
/* The provider named name, or NULL. Borrowed from cfg. */
const struct config_provider *config_provider(const struct config *cfg, const char *name);
/* The value of p's key variable, NULL when unset or empty (or offline).
 * Borrowed from the environment. */
const char *config_api_key(const struct config_provider *p);

/* Which provider and model a turn uses, and why. */
struct config_selection {
	const struct config_provider *provider; /* borrowed from the config */
	const char *model;    /* borrowed from the config or the arguments */
	const char *why;      /* "--provider", "session", "config", "OPENAI_BASE_URL",
			       * "OPENAI_API_KEY", "ANTHROPIC_API_KEY" or "default" */
	const char *model_from; /* "--model", "session", "config" or "default" */
};

/* Select, first match wins: opt_provider (--provider); the resumed
 * session's session_provider and session_model; the file's default; an
 * OpenAI base URL or key variable set → openai; an Anthropic key set →
 * anthropic; else offline. An empty variable counts as unset. opt_model
 * (--model) applies to the provider selected. All arguments may be NULL.
 * An unknown provider name is CERR_USAGE (from --provider or the file) or
 * CERR_UNSUPPORTED (a session's). */
int config_select(const struct config *cfg, const char *opt_provider, const char *opt_model,
		  const char *session_provider, const char *session_model,
		  struct config_selection *sel, struct cerr *err);

/* The variables tools run without: the file's patterns plus every
 * provider's key variable (a key named by api_key_env is stripped even
 * when it does not match "*_API_KEY"). A new NULL-terminated array the
 * caller frees with tool_env_free. */
char **config_tool_strip(const struct config *cfg);

/* url for display: user and password in it (scheme://user:pass@host)
 * shown as "***". Caller frees. */
char *config_redact_url(const char *url);
/* The value of the variable name, NULL when unset or empty. */
const char *config_env(const char *name);

#endif
