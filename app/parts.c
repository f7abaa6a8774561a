/* parts.c — what sessions run on, made and closed in order (parts.h). */
#include "app/parts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "engine/http.h"
#include "engine/tool.h"
#include "persist/catalog.h"
#include "persist/draft.h"
#include "persist/fifo.h"
#include "persist/store.h"
#include "sink/sink.h"


struct latest {
	const char *cwd;
	char id[SESSION_ID_MAX + 1];
	int64_t at;
};

static void latest_cb(const struct cat_session *s, void *ctx)
{
	struct latest *l = ctx;
	if (s->cwd && strcmp(s->cwd, l->cwd) == 0 && (!*l->id || s->updated_at > l->at)) {
		snprintf(l->id, sizeof l->id, "%s", s->id);
		l->at = s->updated_at;
	}
}

/* The session of this directory that was active last ("" when none), read
 * before the loop starts like the store's other start-up reads. */
static int latest_here(struct parts *p, struct store *st, struct cerr *err)
{
	struct catalog *cat;
	struct latest l = {.cwd = p->cwd};
	if (catalog_open_ro(st, &cat, err) < 0)
		return err->cls == CERR_MISSING ? 0 : -1;
	int rc = catalog_list_each(cat, false, false, p->cwd, 0, latest_cb, &l, err);
	catalog_close(cat);
	if (rc < 0)
		return -1;
	snprintf(p->latest, sizeof p->latest, "%s", l.id);
	return 0;
}

const char **parts_opts_slot(struct parts_opts *o, const char *a)
{
	return strcmp(a, "--provider") == 0  ? &o->provider
	       : strcmp(a, "--model") == 0   ? &o->model
	       : strcmp(a, "--system") == 0  ? &o->system
	       : strcmp(a, "--approve") == 0 ? &o->approve_arg
					     : NULL;
}

int parts_opts_check(struct parts_opts *o, struct cerr *err)
{
	/* An empty name is no choice: it must not fall back to the default. */
	if (o->provider && !*o->provider)
		return cerr_set(err, CERR_USAGE, 0, "--provider needs a value");
	if (o->model && !*o->model)
		return cerr_set(err, CERR_USAGE, 0, "--model needs a value");
	if (o->system && !*o->system)
		return cerr_set(err, CERR_USAGE, 0, "--system needs a value");
	o->approve_set = o->approve_arg != NULL;
	return o->approve_arg ? approval_policy_parse(o->approve_arg, &o->approve, err) : 0;
}

int parts_open(struct parts *p, struct cli *c, const struct parts_opts *o, bool latest,
	       struct cerr *err)
{
	memset(p, 0, sizeof *p);
	if (o)
		p->o = *o;
	if (!getcwd(p->cwd, sizeof p->cwd))
		return cerr_set(err, CERR_IO, errno, "cannot read the working directory");
	if (config_load(&p->cfg, err) < 0)
		return -1;
	p->cfg_loaded = true;
	struct store *st = NULL;
	if (cli_open_store(c, true, &st, err) < 0)
		return -1;
	p->root = xstrdup(store_root(st));
	int rc = latest ? latest_here(p, st, err) : 0;
	struct session_ref ref;
	if (rc == 0 && o && o->resume && (rc = store_resolve(st, o->resume, &ref, err)) == 0)
		snprintf(p->resolved, sizeof p->resolved, "%s", ref.id);
	struct cerr derr;
	if (draft_read(st, p->cwd, &p->draft, &derr) < 0)
		p->draft = xstrdup(""); /* a damaged draft is not worth refusing to start */
	store_close(st);
	if (rc < 0)
		return -1;
	uv_loop_init(&p->loop);
	p->loop_ready = true;
	if (!(p->fifo = fifo_new(&p->loop, p->root, NULL, err)))
		return -1;
	p->sink = sink_new(&p->loop, NULL);
	p->strip = config_tool_strip(&p->cfg);
	struct host_deps d = {.loop = &p->loop,
			      .root = p->root,
			      .fifo = p->fifo,
			      .sink = p->sink,
			      .tool_result_max = (size_t)p->cfg.tools.result_max,
			      .tool_output_max = (size_t)p->cfg.tools.output_max,
			      .tool_env_strip = p->strip};
	p->host = host_new(&d);
	return 0;
}

/* ---- the system prompt, read on a worker ---- */

struct prompt_job {
	uv_work_t w;
	struct parts *p;
	uint64_t gen;
	int64_t now_ms;
	int rc;
	struct sysprompt sp;
	struct cerr err;
	void (*cb)(void *ctx);
	void *ctx;
};

/* On a libuv worker: the prompt's files may be slow to read. It reads
 * only what stays unchanged while the loop runs (the configuration, the
 * --system option, the cwd). */
static void prompt_work(uv_work_t *w)
{
	struct prompt_job *j = w->data;
	struct parts *p = j->p;
	j->rc = sysprompt_build(&p->cfg, p->o.system, p->cwd, j->now_ms, &j->sp, &j->err);
}

static void prompt_done(uv_work_t *w, int status)
{
	(void)status; /* never canceled */
	struct prompt_job *j = w->data;
	struct parts *p = j->p;
	/* The newest read wins, whatever order the workers end in. */
	if (j->gen > p->sp_gen && !p->closing) {
		p->sp_gen = j->gen;
		if (p->sp_built)
			sysprompt_release(&p->sp);
		p->sp_built = j->rc == 0;
		if (p->sp_built)
			p->sp = j->sp;
		p->sp_err = j->err;
	} else if (j->rc == 0) {
		sysprompt_release(&j->sp);
	}
	if (!p->closing && j->cb)
		j->cb(j->ctx);
	free(j);
}

void parts_load_prompt(struct parts *p, void (*cb)(void *ctx), void *ctx)
{
	struct prompt_job *j = xcalloc(1, sizeof *j);
	j->p = p;
	j->gen = ++p->sp_asked;
	j->now_ms = clock_unix_ms();
	j->cb = cb;
	j->ctx = ctx;
	j->w.data = j;
	/* uv_queue_work fails only for a NULL callback. */
	uv_queue_work(&p->loop, &j->w, prompt_work, prompt_done);
}

int parts_select_call(struct parts *p, const char *id, const struct host_settings *set,
		      struct config_selection *out, struct cerr *err)
{
	struct config_selection sel;
	if (config_select(&p->cfg, p->o.provider, p->o.model, set ? set->provider : NULL,
			  set ? set->model : NULL, &sel, err) < 0)
		return -1;
	const char *system = set && !p->o.system ? set->system_prompt : NULL;
	if (!system) {
		if (!p->sp_built) {
			if (p->sp_gen) {
				*err = p->sp_err;
				return -1;
			}
			return cerr_set(err, CERR_USAGE, 0, "the system prompt is not read yet");
		}
		system = p->sp.text;
	}
	const struct config_provider *pr = sel.provider;
	if (pr->kind != PROVIDER_OFFLINE && !p->http) {
		if (!(p->http = http_new(&p->loop, err)))
			return -1;
		host_set_http(p->host, p->http);
	}
	if (!p->tools)
		p->tools = tool_schemas();
	struct host_call call = {
		.provider = pr->name,
		.call = {
			.kind = pr->kind,
			.params = {.model = sel.model, .base_url = pr->base_url,
				   .api_key = config_api_key(pr), .system = system,
				   .max_tokens = pr->max_tokens, .tools = p->tools},
			.pace_ms = (unsigned)p->cfg.pace_ms,
			.timeouts = {(unsigned)pr->timeouts.connect_ms,
				     (unsigned)pr->timeouts.first_byte_ms,
				     (unsigned)pr->timeouts.gap_ms,
				     (unsigned)pr->timeouts.total_ms},
			.retry = CALL_RETRY_DEFAULT,
		},
		.max_steps = (unsigned)p->cfg.max_steps,
	};
	if (host_set_call(p->host, id, &call, err) < 0)
		return -1;
	if (out)
		*out = sel;
	/* --approve holds for this run only: never saved into the session */
	return p->o.approve_set ? host_set_approval(p->host, id, p->o.approve, err) : 0;
}

/* ---- closing ---- */

static void fifo_closed(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t n)
{
	(void)f;
	struct parts *p = ctx;
	if (st == FIFO_TIMED_OUT) {
		/* Still writing: keep ownership and wait again, saying so. */
		fprintf(stderr, "cairn: still saving (%llu items); waiting\n", (unsigned long long)n);
		fifo_close(p->fifo, clock_mono_ns() / 1000000 + p->drain_ms, fifo_closed, p);
		return;
	}
	p->fifo = NULL;
}

static void host_closed(struct host *host, void *ctx, enum host_close_status st)
{
	struct parts *p = ctx;
	if (st == HOST_TIMED_OUT) {
		/* Never close what the host still uses: wait again. */
		fprintf(stderr, "cairn: still settling; waiting\n");
		host_close(host, clock_mono_ns() / 1000000 + p->drain_ms, host_closed, p);
		return;
	}
	host_free(host);
	p->host = NULL;
	if (p->closed)
		p->closed(p->closed_ctx);
	if (p->http)
		http_close(p->http, NULL, NULL);
	sink_close(p->sink, NULL, NULL);
	fifo_close(p->fifo, clock_mono_ns() / 1000000 + p->drain_ms, fifo_closed, p);
}

void parts_close(struct parts *p, unsigned drain_ms, void (*cb)(void *ctx), void *ctx)
{
	p->closing = true; /* a prompt read still running is dropped */
	p->drain_ms = drain_ms;
	p->closed = cb;
	p->closed_ctx = ctx;
	host_close(p->host, clock_mono_ns() / 1000000 + p->drain_ms, host_closed, p);
}

void parts_release(struct parts *p)
{
	if (p->loop_ready && !p->host && !p->fifo)
		uv_loop_close(&p->loop);
	if (p->sp_built)
		sysprompt_release(&p->sp);
	if (p->cfg_loaded)
		config_release(&p->cfg);
	tool_env_free(p->strip); /* after the host: it borrowed it */
	cJSON_Delete(p->tools);
	free(p->draft);
	free(p->root);
	memset(p, 0, sizeof *p);
}
