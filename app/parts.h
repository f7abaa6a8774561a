/* parts.h — what sessions run on in one process: the composition root that
 * headless mode (cmd_prompt.c) and the chat screen (cmd_chat.c) share.
 * The configuration, the data root, the loop, the persistence FIFO, the
 * sink, the HTTP engine (made only when a network provider is selected),
 * the host; how a session's turns are sent (provider, model, system
 * prompt, tools, the run's approval policy); and the close in order: the
 * host drained first, then what it used, a save that takes long waited
 * for and said, never cut.
 *
 * Calling sequence:
 *	parts_open(&p, c, &opts, latest, &err)    loop, FIFO, sink, host ready
 *	... host_create / host_open, then parts_load_prompt(&p, cb, ctx),
 *	    and in cb parts_select_call(&p, id, set) ...
 *	uv_run(&p.loop)
 *	parts_close(&p, closed_cb, ctx)           from the loop, once
 *	(uv_run returns once every handle is closed)
 *	parts_release(&p)
 *
 * Errors follow base/err.h and app/cli.h's messages. */
#ifndef CAIRN_PARTS_H
#define CAIRN_PARTS_H

#include <limits.h>
#include <stdbool.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "app/cli.h"
#include "engine/approval.h"
#include "app/config.h"
#include "engine/host.h"
#include "app/sysprompt.h"
#include "persist/pathkey.h"

struct parts_opts {
	const char *provider, *model, *system; /* --provider, --model, --system (NULL: none) */
	const char *approve_arg;                 /* --approve's word (NULL: none) */
	bool approve_set;                        /* --approve given: for this run only */
	enum approval_policy approve;
	const char *resume;                      /* an id or a unique id prefix to resolve (NULL: none) */
};

struct parts {
	/* read-only after parts_open */
	uv_loop_t loop;
	struct config cfg;
	char *root;                            /* the data root */
	char cwd[PATH_MAX];
	char latest[SESSION_ID_MAX + 1];       /* latest: this directory's last session, or "" */
	char resolved[SESSION_ID_MAX + 1];     /* opts.resume resolved to a session's id, or "" */
	char *draft;                           /* this directory's composer draft ("" none; owned) */
	struct fifo *fifo;
	struct sink *sink;
	struct http *http;                     /* NULL until a network provider is selected */
	struct host *host;
	/* private */
	struct parts_opts o;
	bool cfg_loaded, loop_ready, sp_built, closing;
	char **strip;
	struct sysprompt sp;    /* the newest read's, when sp_built */
	struct cerr sp_err;     /* the newest read's error, when not */
	uint64_t sp_asked, sp_gen; /* reads asked; the newest applied (0: none yet) */
	cJSON *tools;
	void (*closed)(void *ctx);
	void *closed_ctx;
	unsigned drain_ms;
};

/* The option both headless mode and the chat screen take (--provider,
 * --model, --system, --approve): where its value goes, or NULL when a is
 * none of them. */
const char **parts_opts_slot(struct parts_opts *o, const char *a);
/* After the arguments: an empty --provider, --model or --system refused
 * and --approve's word parsed (a usage error naming it). */
int parts_opts_check(struct parts_opts *o, struct cerr *err);

/* Load the configuration, open the data root (created when missing),
 * find this directory's latest session when latest is true, resolve
 * opts.resume (no match: CERR_MISSING; several: CERR_USAGE), read this
 * directory's draft (one that cannot be read is left: ""), and start the
 * loop's parts. On failure everything made is released (parts_release is
 * still safe). */
int parts_open(struct parts *p, struct cli *c, const struct parts_opts *o, bool latest,
	       struct cerr *err);
/* Read the system prompt (the --system or configured file, the default,
 * the AGENTS.md files) on a libuv worker, never on the loop, then call cb
 * on the loop (not once parts_close was called). parts_select_call uses
 * what the newest read gave, or fails with its error. */
void parts_load_prompt(struct parts *p, void (*cb)(void *ctx), void *ctx);
/* What session id's turns are sent with: the options, the session's
 * stored choice (set: NULL for a new session), the configuration, the
 * environment; the system prompt is the session's own unless --system is
 * given (else the one parts_load_prompt read; none read yet is an error).
 * Reads no file. Makes the HTTP engine for a network provider. *sel (may be NULL)
 * gets the provider and model chosen (borrowed from p's configuration). */
int parts_select_call(struct parts *p, const char *id, const struct host_settings *set,
		      struct config_selection *sel, struct cerr *err);
/* Close the host (it drains: turns canceled and joined, saves flushed),
 * then call cb (close your own handles there), then the HTTP engine, the
 * sink and the FIFO. Each is given drain_ms; a deadline that passes is
 * said on stderr and waited again: nothing still in use is closed. */
void parts_close(struct parts *p, unsigned drain_ms, void (*cb)(void *ctx), void *ctx);
/* After the loop returned: free what is left. */
void parts_release(struct parts *p);

#endif
