/* config.c — the configuration file, the environment and the provider
 * selection (config.h). */
#include "app/config.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/readfile.h"
#include "base/utf8.h"
#include "base/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX_BYTES (1024 * 1024)

const char *config_env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup_opt(v);
}

static void defaults(struct config *cfg)
{
	static const struct config_timeouts t = {CONFIG_CONNECT_MS, CONFIG_FIRST_BYTE_MS, CONFIG_GAP_MS,
						 CONFIG_TOTAL_MS};
	struct config_provider *p = cfg->providers;
	p[0] = (struct config_provider){.name = "openai", .kind = PROVIDER_OPENAI,
					.base_url = xstrdup(CONFIG_OPENAI_URL), .base_url_from = "default",
					.key_env = xstrdup("OPENAI_API_KEY"),
					.model = xstrdup(CONFIG_OPENAI_MODEL), .model_from = "default",
					.timeouts = t};
	p[1] = (struct config_provider){.name = "anthropic", .kind = PROVIDER_ANTHROPIC,
					.base_url = xstrdup(CONFIG_ANTHROPIC_URL), .base_url_from = "default",
					.key_env = xstrdup("ANTHROPIC_API_KEY"),
					.model = xstrdup(CONFIG_ANTHROPIC_MODEL), .model_from = "default",
					.timeouts = t};
	p[2] = (struct config_provider){.name = "offline", .kind = PROVIDER_OFFLINE,
					.model = xstrdup("offline"), .model_from = "default", .timeouts = t};
	cfg->pace_ms = CONFIG_PACE_MS;
	cfg->max_steps = 50;
	cfg->bell = CONFIG_BELL_AUTO;
	cfg->tools.result_max = CONFIG_TOOL_RESULT_MAX;
	cfg->tools.output_max = CONFIG_TOOL_OUTPUT_MAX;
	cfg->tools.env_strip = xcalloc(2, sizeof *cfg->tools.env_strip);
	cfg->tools.env_strip[0] = xstrdup("*_API_KEY");
}

static void free_strv(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

void config_release(struct config *cfg)
{
	free(cfg->dir);
	free(cfg->path);
	free(cfg->provider);
	free(cfg->system_prompt);
	free(cfg->system_prompt_file);
	for (int i = 0; i < CONFIG_N_PROVIDERS; i++) {
		free(cfg->providers[i].base_url);
		free(cfg->providers[i].key_env);
		free(cfg->providers[i].model);
	}
	free_strv(cfg->tools.env_strip);
	memset(cfg, 0, sizeof *cfg);
}

const struct config_provider *config_provider(const struct config *cfg, const char *name)
{
	for (int i = 0; i < CONFIG_N_PROVIDERS; i++)
		if (name && strcmp(cfg->providers[i].name, name) == 0)
			return &cfg->providers[i];
	return NULL;
}

const char *config_api_key(const struct config_provider *p)
{
	return p->key_env ? config_env(p->key_env) : NULL;
}

/* ---- the file ---- */

/* Line and column (from 1) of offset at in s. */
static void position(const char *s, size_t at, size_t *line, size_t *col)
{
	*line = 1, *col = 1;
	for (size_t i = 0; i < at; i++) {
		if (s[i] == '\n')
			(*line)++, *col = 1;
		else if (((unsigned char)s[i] & 0xc0) != 0x80)
			(*col)++;
	}
}

const char *config_bell_name(enum config_bell b)
{
	static const char *const names[] = {"off", "auto", "bel", "osc9"};
	return (unsigned)b < 4 ? names[b] : "off";
}

static int bad(const struct config *cfg, struct cerr *err, const char *key, const char *what)
{
	return cerr_set(err, CERR_USAGE, 0, "config '%s': '%s' %s", cfg->path, key, what);
}

/* Check that every key of o is in allowed (NULL-terminated) and none is
 * repeated (cJSON keeps both; the file must say one thing). */
static int check_keys(const struct config *cfg, const cJSON *o, const char *prefix,
		      const char *const *allowed, struct cerr *err)
{
	for (const cJSON *c = o->child; c; c = c->next) {
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = strcmp(*a, c->string) == 0;
		char key[128];
		snprintf(key, sizeof key, "%s%s", prefix, c->string);
		if (!ok)
			return bad(cfg, err, key, "is not a known key");
		for (const cJSON *d = c->next; d; d = d->next)
			if (strcmp(d->string, c->string) == 0)
				return bad(cfg, err, key, "is given twice");
	}
	return 0;
}

static int get_str(const struct config *cfg, const cJSON *o, const char *prefix, const char *name,
		   char **dst, struct cerr *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!v)
		return 0;
	char key[128];
	snprintf(key, sizeof key, "%s%s", prefix, name);
	if (!cJSON_IsString(v) || !*v->valuestring)
		return bad(cfg, err, key, "must be a non-empty string");
	set_str(dst, v->valuestring);
	return 1;
}

/* A number of seconds > 0 (fractions allowed), at most
 * CONFIG_TIMEOUT_MAX_S, as milliseconds. */
static int get_seconds(const struct config *cfg, const cJSON *o, const char *prefix,
		       const char *name, int64_t *ms, struct cerr *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!v)
		return 0;
	char key[128];
	snprintf(key, sizeof key, "%s%s", prefix, name);
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || v->valuedouble > CONFIG_TIMEOUT_MAX_S)
		return bad(cfg, err, key, "must be a number of seconds greater than 0, at most 2592000 (30 days)");
	*ms = (int64_t)llround(v->valuedouble * 1000.0);
	if (*ms == 0)
		*ms = 1;
	return 0;
}

static int get_timeouts(const struct config *cfg, const cJSON *o, const char *prefix,
			struct config_timeouts *t, struct cerr *err)
{
	static const char *const keys[] = {"connect", "first_byte", "gap", "total", NULL};
	if (!o)
		return 0;
	if (!cJSON_IsObject(o))
		return bad(cfg, err, prefix, "must be an object");
	char pre[128];
	snprintf(pre, sizeof pre, "%s.", prefix);
	if (check_keys(cfg, o, pre, keys, err) < 0 ||
	    get_seconds(cfg, o, pre, "connect", &t->connect_ms, err) < 0 ||
	    get_seconds(cfg, o, pre, "first_byte", &t->first_byte_ms, err) < 0 ||
	    get_seconds(cfg, o, pre, "gap", &t->gap_ms, err) < 0 ||
	    get_seconds(cfg, o, pre, "total", &t->total_ms, err) < 0)
		return -1;
	return 0;
}

static int get_int(const struct config *cfg, const cJSON *o, const char *key, const char *name,
		   int64_t min, int64_t max, int64_t *dst, struct cerr *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!v)
		return 0;
	if (!json_get_int(v, min, max, dst)) {
		char what[96];
		snprintf(what, sizeof what, "must be an integer from %lld to %lld", (long long)min,
			 (long long)max);
		return bad(cfg, err, key, what);
	}
	return 0;
}

/* An http:// or https:// URL with a host: the only base URLs a request
 * may go to (libcurl would read file:// as a reply, or speak FTP). */
static bool web_url(const char *u)
{
	size_t n = strncasecmp(u, "https://", 8) == 0 ? 8 : strncasecmp(u, "http://", 7) == 0 ? 7 : 0;
	return n && u[n] && !strchr("/?#", u[n]);
}

/* The base URL u refused unless it is web_url; key names the file's key
 * it came from, else var the variable. */
static int check_base_url(const struct config *cfg, const char *u, const char *key, const char *var,
			  struct cerr *err)
{
	if (web_url(u))
		return 0;
	char *shown = config_redact_url(u);
	if (key)
		cerr_set(err, CERR_USAGE, 0, "config '%s': '%s' must be an http:// or https:// URL, not '%s'",
			 cfg->path, key, shown);
	else
		cerr_set(err, CERR_USAGE, 0, "%s '%s' is not an http:// or https:// URL", var, shown);
	free(shown);
	return -1;
}

static int read_provider(struct config *cfg, struct config_provider *p, const cJSON *o,
			 struct cerr *err)
{
	static const char *const net_keys[] = {"base_url", "api_key_env", "model", "timeouts",
					       "max_tokens", NULL};
	static const char *const offline_keys[] = {"pace_ms", NULL};
	char pre[64];
	snprintf(pre, sizeof pre, "providers.%s.", p->name);
	if (!cJSON_IsObject(o)) {
		pre[strlen(pre) - 1] = '\0'; /* the key itself, without the dot */
		return bad(cfg, err, pre, "must be an object");
	}
	if (p->kind == PROVIDER_OFFLINE) {
		char key[96];
		snprintf(key, sizeof key, "%space_ms", pre);
		return check_keys(cfg, o, pre, offline_keys, err) < 0
			       ? -1
			       : get_int(cfg, o, key, "pace_ms", 0, 60000, &cfg->pace_ms, err);
	}
	if (check_keys(cfg, o, pre, net_keys, err) < 0)
		return -1;
	if (p->kind != PROVIDER_ANTHROPIC && cJSON_GetObjectItemCaseSensitive(o, "max_tokens"))
		return bad(cfg, err, "providers.openai.max_tokens", "is an Anthropic setting");
	int r;
	if ((r = get_str(cfg, o, pre, "base_url", &p->base_url, err)) < 0)
		return -1;
	if (r) {
		char key[96];
		snprintf(key, sizeof key, "%sbase_url", pre);
		if (check_base_url(cfg, p->base_url, key, NULL, err) < 0)
			return -1;
		p->base_url_from = "config";
	}
	if (get_str(cfg, o, pre, "api_key_env", &p->key_env, err) < 0)
		return -1;
	if ((r = get_str(cfg, o, pre, "model", &p->model, err)) < 0)
		return -1;
	if (r)
		p->model_from = "config";
	char key[96];
	snprintf(key, sizeof key, "%smax_tokens", pre);
	if (get_int(cfg, o, key, "max_tokens", 1, 1000000, &p->max_tokens, err) < 0)
		return -1;
	snprintf(key, sizeof key, "%stimeouts", pre);
	return get_timeouts(cfg, cJSON_GetObjectItemCaseSensitive(o, "timeouts"), key, &p->timeouts, err);
}

/* "tools": {"result_max", "output_max", "env_strip": [pattern, ...]}. */
static int read_tools(struct config *cfg, const cJSON *o, struct cerr *err)
{
	static const char *const keys[] = {"result_max", "output_max", "env_strip", NULL};
	if (!o)
		return 0;
	if (!cJSON_IsObject(o))
		return bad(cfg, err, "tools", "must be an object");
	struct config_tools *t = &cfg->tools;
	if (check_keys(cfg, o, "tools.", keys, err) < 0 ||
	    get_int(cfg, o, "tools.result_max", "result_max", 1024, 16 << 20, &t->result_max, err) < 0 ||
	    get_int(cfg, o, "tools.output_max", "output_max", 1024, (int64_t)1 << 30, &t->output_max,
		    err) < 0)
		return -1;
	if (t->output_max < t->result_max)
		return bad(cfg, err, "tools.output_max", "must not be less than tools.result_max");
	const cJSON *strip = cJSON_GetObjectItemCaseSensitive(o, "env_strip");
	if (!strip)
		return 0;
	if (!cJSON_IsArray(strip))
		return bad(cfg, err, "tools.env_strip", "must be an array of variable name patterns");
	size_t n = (size_t)cJSON_GetArraySize(strip), i = 0;
	char **v = xcalloc(n + 1, sizeof *v);
	for (const cJSON *e = strip->child; e; e = e->next) {
		if (!cJSON_IsString(e) || !*e->valuestring || strchr(e->valuestring, '=')) {
			free_strv(v);
			return bad(cfg, err, "tools.env_strip",
				   "must hold non-empty variable name patterns (no '=')");
		}
		v[i++] = xstrdup(e->valuestring);
	}
	free_strv(t->env_strip);
	t->env_strip = v; /* the file's list replaces the default */
	return 0;
}

char **config_tool_strip(const struct config *cfg)
{
	size_t n = 0;
	while (cfg->tools.env_strip && cfg->tools.env_strip[n])
		n++;
	char **v = xcalloc(n + CONFIG_N_PROVIDERS + 1, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		v[k++] = xstrdup(cfg->tools.env_strip[i]);
	for (int i = 0; i < CONFIG_N_PROVIDERS; i++)
		if (cfg->providers[i].key_env)
			v[k++] = xstrdup(cfg->providers[i].key_env);
	return v;
}

static int read_tree(struct config *cfg, const cJSON *root, struct cerr *err)
{
	static const char *const top[] = {"provider", "system_prompt", "system_prompt_file",
					  "timeouts", "providers", "max_steps", "tools", "bell", NULL};
	static const char *const names[] = {"openai", "anthropic", "offline", NULL};
	if (!cJSON_IsObject(root))
		return cerr_set(err, CERR_USAGE, 0, "config '%s': not a JSON object", cfg->path);
	if (check_keys(cfg, root, "", top, err) < 0 || get_str(cfg, root, "", "provider", &cfg->provider, err) < 0 ||
	    get_str(cfg, root, "", "system_prompt", &cfg->system_prompt, err) < 0 ||
	    get_str(cfg, root, "", "system_prompt_file", &cfg->system_prompt_file, err) < 0)
		return -1;
	const cJSON *bell = cJSON_GetObjectItemCaseSensitive(root, "bell");
	if (bell && cJSON_IsBool(bell)) {
		cfg->bell = cJSON_IsTrue(bell) ? CONFIG_BELL_AUTO : CONFIG_BELL_OFF;
	} else if (bell) {
		int k = cJSON_IsString(bell) ? 0 : 4;
		for (; k < 4 && strcmp(bell->valuestring, config_bell_name((enum config_bell)k)) != 0; k++)
			;
		if (k == 4)
			return bad(cfg, err, "bell",
				   "must be true, false, \"auto\", \"bel\", \"osc9\" or \"off\"");
		cfg->bell = (enum config_bell)k;
	}
	if (get_int(cfg, root, "max_steps", "max_steps", 1, 1000, &cfg->max_steps, err) < 0 ||
	    read_tools(cfg, cJSON_GetObjectItemCaseSensitive(root, "tools"), err) < 0)
		return -1;
	if (cfg->provider && !config_provider(cfg, cfg->provider))
		return bad(cfg, err, "provider", "names no provider (openai, anthropic, offline)");
	/* Global timeouts first: a provider's own override them. */
	struct config_timeouts t = cfg->providers[0].timeouts;
	if (get_timeouts(cfg, cJSON_GetObjectItemCaseSensitive(root, "timeouts"), "timeouts", &t, err) < 0)
		return -1;
	for (int i = 0; i < CONFIG_N_PROVIDERS; i++)
		cfg->providers[i].timeouts = t;
	const cJSON *ps = cJSON_GetObjectItemCaseSensitive(root, "providers");
	if (!ps)
		return 0;
	if (!cJSON_IsObject(ps))
		return bad(cfg, err, "providers", "must be an object");
	if (check_keys(cfg, ps, "providers.", names, err) < 0)
		return -1;
	for (int i = 0; i < CONFIG_N_PROVIDERS; i++) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(ps, cfg->providers[i].name);
		if (o && read_provider(cfg, &cfg->providers[i], o, err) < 0)
			return -1;
	}
	return 0;
}

/* Read the whole file; 1 when absent, 0 read, -1 error. A FIFO (or a
 * device) at the path is refused at once, never waited on. */
static int slurp(const char *path, struct buf *b, struct cerr *err)
{
	switch (readfile_path(path, CONFIG_MAX_BYTES, b)) {
	case READFILE_OK:
		return 0;
	case READFILE_ABSENT:
		return 1;
	case READFILE_OPEN_ERROR:
		return cerr_set(err, CERR_IO, errno, "cannot open config '%s'", path);
	case READFILE_NOT_REGULAR:
		return cerr_set(err, CERR_USAGE, 0, "config '%s' is not a regular file", path);
	case READFILE_TOO_BIG:
		return cerr_set(err, CERR_IO, EFBIG, "cannot read config '%s'", path);
	case READFILE_READ_ERROR:
		break;
	}
	return cerr_set(err, CERR_IO, errno, "cannot read config '%s'", path);
}

/* The offset of the first raw control byte (below 0x20) inside a string
 * of s[0..n), which JSON forbids (RFC 8259 §7) and cJSON lets through;
 * n when there is none. s must be JSON cJSON accepted, so that every '"'
 * outside a string opens one. */
static size_t raw_control_in_string(const char *s, size_t n)
{
	bool in = false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!in)
			in = c == '"';
		else if (c == '\\')
			i++;
		else if (c == '"')
			in = false;
		else if (c < 0x20)
			return i;
	}
	return n;
}

static int parse_file(struct config *cfg, const struct buf *b, struct cerr *err)
{
	size_t bad_at, line, col;
	if (!utf8_valid(b->p, b->len, &bad_at)) {
		position(b->p, bad_at, &line, &col);
		return cerr_set(err, CERR_USAGE, 0, "config '%s':%zu:%zu: invalid UTF-8", cfg->path, line, col);
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(b->p, b->len, &end, false);
	if (root) { /* nothing but blanks may follow the value */
		while (end < b->p + b->len && (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r'))
			end++;
		if (end < b->p + b->len) {
			cJSON_Delete(root);
			root = NULL;
		}
	} else {
		end = cJSON_GetErrorPtr();
	}
	if (!root) {
		size_t at = end && end >= b->p && end <= b->p + b->len ? (size_t)(end - b->p) : b->len;
		position(b->p, at, &line, &col);
		return cerr_set(err, CERR_USAGE, 0, "config '%s':%zu:%zu: invalid JSON", cfg->path, line, col);
	}
	size_t ctl = raw_control_in_string(b->p, b->len);
	if (ctl < b->len) {
		cJSON_Delete(root);
		position(b->p, ctl, &line, &col);
		return cerr_set(err, CERR_USAGE, 0,
				"config '%s':%zu:%zu: invalid JSON (a raw control character in a string)",
				cfg->path, line, col);
	}
	int r = read_tree(cfg, root, err);
	cJSON_Delete(root);
	return r;
}

int config_load(struct config *cfg, struct cerr *err)
{
	memset(cfg, 0, sizeof *cfg);
	defaults(cfg);
	const char *xdg = config_env("XDG_CONFIG_HOME"), *home = config_env("HOME");
	if (xdg && xdg[0] == '/')
		cfg->dir = xasprintf("%s/cairn", xdg);
	else if (home && home[0] == '/') /* a relative HOME names no place */
		cfg->dir = xasprintf("%s/.config/cairn", home);
	if (cfg->dir) {
		cfg->path = xasprintf("%s/config.json", cfg->dir);
		struct buf b = BUF_INIT;
		int r = slurp(cfg->path, &b, err);
		if (r == 0) {
			cfg->file_found = true;
			r = parse_file(cfg, &b, err);
		}
		buf_release(&b);
		if (r < 0) {
			config_release(cfg);
			return -1;
		}
	}
	/* The variables name the endpoints of this shell and outrank the file. */
	const char *u;
	if ((u = config_env("OPENAI_BASE_URL"))) {
		set_str(&cfg->providers[0].base_url, u);
		cfg->providers[0].base_url_from = "OPENAI_BASE_URL";
	}
	if ((u = config_env("ANTHROPIC_BASE_URL"))) {
		set_str(&cfg->providers[1].base_url, u);
		cfg->providers[1].base_url_from = "ANTHROPIC_BASE_URL";
	}
	/* The file's were checked as it was read. */
	for (int i = 0; i < 2; i++)
		if (strcmp(cfg->providers[i].base_url_from, "config") != 0 &&
		    check_base_url(cfg, cfg->providers[i].base_url, NULL, cfg->providers[i].base_url_from,
				   err) < 0) {
			config_release(cfg);
			return -1;
		}
	return 0;
}

char *config_redact_url(const char *url)
{
	const char *s = strstr(url, "://");
	if (!s)
		return xstrdup(url);
	s += 3;
	size_t host = strcspn(s, "/?#");
	const char *at = memchr(s, '@', host);
	if (!at)
		return xstrdup(url);
	/* The last '@' before the path ends the user information. */
	for (const char *q = at; q < s + host; q++)
		if (*q == '@')
			at = q;
	return xasprintf("%.*s***%s", (int)(s - url), url, at);
}

/* ---- selection ---- */

int config_select(const struct config *cfg, const char *opt_provider, const char *opt_model,
		  const char *session_provider, const char *session_model,
		  struct config_selection *sel, struct cerr *err)
{
	const struct config_provider *p = NULL;
	const char *why = NULL;
	if (opt_provider && *opt_provider) {
		if (!(p = config_provider(cfg, opt_provider)))
			return cerr_set(err, CERR_USAGE, 0,
					"unknown provider '%s' (openai, anthropic, offline)", opt_provider);
		why = "--provider";
	} else if (session_provider && *session_provider) {
		if (!(p = config_provider(cfg, session_provider)))
			return cerr_set(err, CERR_UNSUPPORTED, 0,
					"the session's provider '%s' is unknown; choose one with --provider",
					session_provider);
		why = "session";
	} else if (cfg->provider) {
		p = config_provider(cfg, cfg->provider);
		why = "config";
	} else if (config_env("OPENAI_BASE_URL") || config_api_key(&cfg->providers[0])) {
		/* A base URL alone is enough: a local server needs no key. */
		p = &cfg->providers[0];
		why = config_env("OPENAI_BASE_URL") ? "OPENAI_BASE_URL" : cfg->providers[0].key_env;
	} else if (config_api_key(&cfg->providers[1])) {
		p = &cfg->providers[1];
		why = cfg->providers[1].key_env;
	} else {
		p = &cfg->providers[2];
		why = "default";
	}
	*sel = (struct config_selection){.provider = p, .why = why, .model = p->model,
					 .model_from = p->model_from};
	if (opt_model && *opt_model) {
		sel->model = opt_model;
		sel->model_from = "--model";
	} else if (session_model && *session_model && session_provider &&
		   strcmp(session_provider, p->name) == 0) {
		sel->model = session_model;
		sel->model_from = "session";
	}
	if (p->kind == PROVIDER_OFFLINE) { /* one model, whatever was asked */
		sel->model = p->model;
		sel->model_from = "default";
	}
	return 0;
}
