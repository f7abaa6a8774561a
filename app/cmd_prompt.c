/* cmd_prompt.c — `cairn -p PROMPT`: one turn, headless, through the same
 * runner, sink and persistence as the chat screen, with standard output as
 * the sink's consumer (docs/cairn.1, "HEADLESS MODE").
 *
 * The loop runs the runner, the FIFO's completions, the HTTP engine and
 * the writer of stdout. A consumer that cannot write (a pipe nobody reads)
 * stops reading the sink, which pauses the model's reply: memory stays
 * bounded and the loop never blocks. EPIPE cancels the turn. */
#include "app/cli.h"
#include "app/cmds.h"
#include "app/outq.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/termsafe.h"
#include "base/ulid.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "engine/config.h"
#include "engine/runner.h"
#include "engine/sysprompt.h"
#include "persist/prepare.h"
#include "persist/scan.h"
#include "persist/store.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Exit codes of a turn, beyond the persistence classes 1-8. */
enum {
	EXIT_PROVIDER = 10,  /* the provider refused or failed */
	EXIT_CANCELED = 11,  /* canceled (a signal, EPIPE on stdout) */
	EXIT_DELIVERY = 12,  /* sent, the answer lost: never re-sent */
	EXIT_UNCERTAIN = 13, /* a capture or the full save failed after dispatch */
};

#define PROMPT_MAX (64u * 1024u * 1024u)

struct hl {
	uv_loop_t loop;
	struct cli *c;
	char *root;
	bool json;
	const char *session_opt, *provider_opt, *model_opt, *system_opt;
	char *prompt;
	/* the session */
	char id[SESSION_ID_MAX + 1];
	bool resumed;
	uint64_t next_seq, version;
	char turn[32];
	char *sess_provider, *sess_model;
	struct context *ctx;
	/* parts */
	struct config cfg;
	bool cfg_loaded;
	struct sysprompt sp;
	bool sp_built;
	struct fifo *fifo;
	struct sink *sink;
	struct http *http;
	struct runner *run;
	struct outq *out;
	uv_signal_t sigint, sigterm, sighup;
	/* the result */
	struct buf text;        /* the answer, for --json's result */
	bool text_ended_nl;
	bool wrote_text;
	cJSON *done;            /* turn_done's payload */
	bool settled_ok;
	char settle_err[512];
	int64_t started_ms;
	int64_t duration_ms;
	int exit_code;
	struct cerr fail;       /* a failure before the turn started */
};

/* ---- arguments and the prompt ---- */

static int read_all(int fd, struct buf *b, struct cerr *err)
{
	char chunk[65536];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return cerr_set(err, CERR_IO, errno, "cannot read standard input");
		if (r == 0)
			return 0;
		if (b->len + (size_t)r > PROMPT_MAX)
			return cerr_set(err, CERR_USAGE, 0, "the prompt is larger than %u bytes",
					PROMPT_MAX);
		buf_add(b, chunk, (size_t)r);
	}
}

/* -p TEXT, -p - (stdin), and TEXT with a pipe or a file on stdin appended
 * (never a terminal or a device such as /dev/null). */
static int build_prompt(const char *arg, char **out, struct cerr *err)
{
	struct buf b = BUF_INIT;
	struct stat st;
	bool piped = fstat(0, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode));
	if (strcmp(arg, "-") == 0) {
		if (read_all(0, &b, err) < 0)
			goto fail;
	} else {
		buf_adds(&b, arg);
		if (piped) {
			struct buf in = BUF_INIT;
			if (read_all(0, &in, err) < 0) {
				buf_release(&in);
				goto fail;
			}
			if (in.len) {
				buf_adds(&b, "\n\n");
				buf_add(&b, in.p, in.len);
			}
			buf_release(&in);
		}
	}
	size_t bad;
	if (b.len == 0 || strspn(b.p, " \t\r\n") == b.len) {
		cerr_set(err, CERR_USAGE, 0, "the prompt is empty");
		goto fail;
	}
	if (memchr(b.p, '\0', b.len) || !utf8_valid(b.p, b.len, &bad)) {
		cerr_set(err, CERR_USAGE, 0, "the prompt is not UTF-8 text (byte %zu)",
			 memchr(b.p, '\0', b.len) ? (size_t)((char *)memchr(b.p, '\0', b.len) - b.p) : bad);
		goto fail;
	}
	*out = buf_detach(&b, NULL);
	return 0;
fail:
	buf_release(&b);
	return -1;
}

/* ---- output ---- */

static void out_str(struct hl *h, const char *s, size_t n)
{
	outq_write(h->out, s, n);
	if (outq_full(h->out))
		sink_read_stop(h->sink); /* the reply pauses until stdout drains */
}

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx);

static void on_drain(void *ud)
{
	struct hl *h = ud;
	sink_read_start(h->sink, read_cb, h);
}

static void on_out_error(void *ud, int uverr)
{
	struct hl *h = ud;
	(void)uverr;
	/* Nobody reads the answer any more: stop paying for it. */
	runner_cancel(h->run, h->id);
	sink_read_start(h->sink, read_cb, h); /* writes are dropped from now on */
}

/* Print o as one JSON line (controls escaped) and free it. */
static void out_json_line(struct hl *h, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	struct buf b = BUF_INIT;
	termsafe_json(&b, s, strlen(s));
	buf_addc(&b, '\n');
	out_str(h, b.p, b.len);
	buf_release(&b);
	free(s);
	cJSON_Delete(o);
}

static void print_event(struct hl *h, const struct sink_item *it)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", vocab_type_name(it->vtype));
	cJSON_AddNumberToObject(o, "seq", (double)it->seq);
	if (it->turn)
		cJSON_AddStringToObject(o, "turn", it->turn);
	cJSON_AddItemToObject(o, "data", it->data ? cJSON_Duplicate(it->data, 1) : cJSON_CreateObject());
	cJSON_AddStringToObject(o, "session", h->id);
	out_json_line(h, o);
}

static void print_text(struct hl *h, const char *s, size_t n)
{
	buf_add(&h->text, s, n);
	if (h->json || n == 0)
		return;
	h->wrote_text = true;
	h->text_ended_nl = s[n - 1] == '\n';
	if (!outq_is_tty(h->out)) {
		out_str(h, s, n); /* exact bytes into a pipe or a file */
		return;
	}
	struct buf b = BUF_INIT;
	termsafe_add(&b, s, n, TERMSAFE_TEXT);
	out_str(h, b.p, b.len);
	buf_release(&b);
}

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int exit_of(const cJSON *done, bool settled_ok)
{
	const char *outcome = str_of(done, "outcome");
	const char *cls = str_of(cJSON_GetObjectItem(done, "error"), "class");
	if (!outcome)
		return EXIT_UNCERTAIN;
	if (strcmp(outcome, "not_started") == 0) {
		static const enum cerr_class classes[] = {CERR_IO, CERR_USAGE, CERR_MISSING,
							  CERR_CORRUPT, CERR_UNSUPPORTED,
							  CERR_CONFLICT, CERR_LOCKED, CERR_BUSY};
		for (size_t i = 0; cls && i < sizeof classes / sizeof *classes; i++)
			if (strcmp(cls, cerr_class_name(classes[i])) == 0)
				return cerr_exit_code(classes[i]);
		return CERR_IO;
	}
	if (!settled_ok)
		return EXIT_UNCERTAIN;
	if (strcmp(outcome, "completed") == 0)
		return 0;
	if (strcmp(outcome, "canceled") == 0)
		return EXIT_CANCELED;
	if (cls && strcmp(cls, "provider") == 0)
		return EXIT_PROVIDER;
	if (cls && strcmp(cls, "delivery_unknown") == 0)
		return EXIT_DELIVERY;
	return EXIT_UNCERTAIN; /* capture_failed */
}

static void print_result(struct hl *h)
{
	h->exit_code = exit_of(h->done, h->settled_ok);
	const cJSON *err = cJSON_GetObjectItem(h->done, "error");
	if (!h->json) {
		if (h->wrote_text && !h->text_ended_nl)
			out_str(h, "\n", 1);
		if (h->exit_code != 0) {
			const char *msg = str_of(err, "message");
			cli_printf(stderr, "cairn: turn %s: %s%s%s\n", str_of(h->done, "outcome"),
				   msg ? msg : "", !h->settled_ok && *h->settle_err ? "; not saved: " : "",
				   !h->settled_ok ? h->settle_err : "");
		}
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "result");
	cJSON_AddStringToObject(o, "session", h->id);
	cJSON *turns = cJSON_AddArrayToObject(o, "turns");
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "turn", h->turn);
	cJSON_AddStringToObject(t, "outcome", str_of(h->done, "outcome"));
	cJSON_AddStringToObject(t, "text", h->text.p ? h->text.p : "");
	const cJSON *u = cJSON_GetObjectItem(h->done, "usage");
	cJSON_AddItemToObject(t, "usage", u ? cJSON_Duplicate(u, 1) : cJSON_CreateNull());
	if (err)
		cJSON_AddItemToObject(t, "error", cJSON_Duplicate(err, 1));
	cJSON_AddNumberToObject(t, "duration_ms", (double)h->duration_ms);
	cJSON_AddItemToArray(turns, t);
	if (!h->settled_ok && *h->settle_err)
		cJSON_AddStringToObject(o, "saved", "uncertain");
	cJSON_AddNumberToObject(o, "exit", h->exit_code);
	out_json_line(h, o);
}

/* ---- shutdown ---- */

static void closed_fifo(struct fifo *f, void *ctx, enum fifo_close_status st, uint64_t n)
{
	(void)f;
	struct hl *h = ctx;
	if (st == FIFO_TIMED_OUT) {
		/* Still writing: keep ownership and wait again, saying so. */
		cli_printf(stderr, "cairn: still saving (%llu items); waiting\n", (unsigned long long)n);
		fifo_close(h->fifo, clock_mono_ns() / 1000000 + 60000, closed_fifo, h);
		return;
	}
	h->fifo = NULL;
}

static void shut_down(struct hl *h)
{
	runner_free(h->run);
	h->run = NULL;
	/* Every close completes on the loop; uv_run returns once all did. */
	uv_close((uv_handle_t *)&h->sigint, NULL);
	uv_close((uv_handle_t *)&h->sigterm, NULL);
	uv_close((uv_handle_t *)&h->sighup, NULL);
	if (h->http)
		http_close(h->http, NULL, NULL);
	sink_close(h->sink, NULL, NULL);
	fifo_close(h->fifo, clock_mono_ns() / 1000000 + 10000, closed_fifo, h);
	outq_close(h->out, NULL, NULL); /* last: its queue flushed */
}

static void release_done(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
			 const struct cerr *err)
{
	(void)it;
	(void)r;
	(void)err;
	shut_down(ctx);
}

/* ---- the consumer of the sink ---- */

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	(void)s;
	struct hl *h = ctx;
	switch (it->kind) {
	case SINK_EVENT:
		if (h->json && it->durable)
			print_event(h, it);
		break;
	case SINK_TEXT:
		if (it->stream == SINK_STREAM_TEXT)
			print_text(h, it->text, it->len);
		break;
	case SINK_NOTICE:
		break;
	case SINK_MARKER:
		if (strcmp(it->name, "turn_done") == 0) {
			/* Everything before it was applied (printed): settle. */
			h->done = it->data ? cJSON_Duplicate(it->data, 1) : cJSON_CreateObject();
			h->duration_ms = clock_unix_ms() - h->started_ms;
			struct cerr err;
			if (runner_settle(h->run, &it->op, &err) < 0)
				snprintf(h->settle_err, sizeof h->settle_err, "%s", err.msg);
		} else if (strcmp(it->name, "settled") == 0) {
			h->settled_ok = cJSON_IsTrue(cJSON_GetObjectItem(it->data, "ok"));
			if (!h->settled_ok)
				snprintf(h->settle_err, sizeof h->settle_err, "%s",
					 str_of(cJSON_GetObjectItem(it->data, "error"), "message")
						 ? str_of(cJSON_GetObjectItem(it->data, "error"), "message")
						 : "the full save failed");
			const char *outcome = str_of(h->done, "outcome");
			if (outcome && strcmp(outcome, "not_started") == 0)
				h->settled_ok = true; /* nothing of the turn was to be saved */
			print_result(h);
			cli_printf(stderr, "cairn: session %s\n", h->id);
			struct cerr err;
			if (h->resumed &&
			    fifo_post(h->fifo, fifo_release(h->id), release_done, h, &err) == 0)
				return;
			shut_down(h);
		}
		break;
	}
}

static void signal_cb(uv_signal_t *sg, int signum)
{
	struct hl *h = sg->data;
	(void)signum;
	if (h->run)
		runner_cancel(h->run, h->id); /* the partial answer is kept */
}

/* ---- the turn ---- */

static int start_turn(struct hl *h, struct cerr *err)
{
	struct config_selection sel;
	if (config_select(&h->cfg, h->provider_opt, h->model_opt, h->sess_provider, h->sess_model,
			  &sel, err) < 0)
		return -1;
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return cerr_set(err, CERR_IO, errno, "cannot read the working directory");
	if (sysprompt_build(&h->cfg, h->system_opt, cwd, clock_unix_ms(), &h->sp, err) < 0)
		return -1;
	h->sp_built = true;
	const struct config_provider *p = sel.provider;
	if (p->kind != PROVIDER_OFFLINE && !(h->http = http_new(&h->loop, err)))
		return -1;
	struct runner_deps d = {.loop = &h->loop, .fifo = h->fifo, .http = h->http, .sink = h->sink};
	h->run = runner_new(&d);
	struct runner_turn t = {
		.session = h->id,
		.create = !h->resumed,
		.cwd = cwd,
		.generation = 1,
		.next_seq = h->next_seq,
		.version = h->version,
		.ctx = h->ctx,
		.turn = h->turn,
		.text = h->prompt,
		.provider = p->name,
		.call = {
			.kind = p->kind,
			.params = {.model = sel.model, .base_url = p->base_url,
				   .api_key = config_api_key(p), .system = h->sp.text,
				   .max_tokens = p->max_tokens},
			.pace_ms = (unsigned)h->cfg.pace_ms,
			.timeouts = {(unsigned)p->timeouts.connect_ms, (unsigned)p->timeouts.first_byte_ms,
				     (unsigned)p->timeouts.gap_ms},
			.retry = CALL_RETRY_DEFAULT,
		},
	};
	h->started_ms = clock_unix_ms();
	return runner_start(h->run, &t, NULL, err);
}

static void opened(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		   const struct cerr *err)
{
	(void)it;
	struct hl *h = ctx;
	struct cerr e;
	if (err) {
		h->fail = *err;
		shut_down(h);
		return;
	}
	/* The session as the writer read it after its repair: events
	 * parsed one at a time into the context, settings in effect. */
	const struct prepared *p = r->prepared;
	const struct load *l = prepared_load(p);
	h->resumed = true;
	h->next_seq = prepared_scan(p)->rev.next_seq;
	h->version = r->content_version;
	snprintf(h->turn, sizeof h->turn, "t%zu", prepared_n_turns(p) + 1);
	const struct prepared_settings *set = prepared_settings(p);
	h->sess_provider = set->provider ? xstrdup(set->provider) : NULL;
	h->sess_model = set->model ? xstrdup(set->model) : NULL;
	for (size_t i = 1; i < load_count(l); i++) {
		const struct load_event *ev = load_event(l, i);
		if (ev->type == VT_UNKNOWN)
			continue; /* unknown, ignorable */
		cJSON *line = load_json(l, i);
		int rc = context_add(h->ctx, (enum vocab_type)ev->type, load_turn(l, i),
				     cJSON_GetObjectItem(line, "data"), &e);
		cJSON_Delete(line);
		if (rc < 0) {
			h->fail = e;
			prepared_free(r->prepared);
			fifo_post(h->fifo, fifo_release(h->id), release_done, h, &e);
			return;
		}
	}
	prepared_free(r->prepared); /* the receipt's session is ours to free */
	if (start_turn(h, &e) < 0) {
		h->fail = e;
		fifo_post(h->fifo, fifo_release(h->id), release_done, h, &e);
	}
}

static int parse_args(struct hl *h, int argc, char **argv, const char **prompt_arg)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		if (strcmp(a, "-p") == 0 || strcmp(a, "--prompt") == 0)
			slot = prompt_arg;
		else if (strcmp(a, "--session") == 0)
			slot = &h->session_opt;
		else if (strcmp(a, "--provider") == 0)
			slot = &h->provider_opt;
		else if (strcmp(a, "--model") == 0)
			slot = &h->model_opt;
		else if (strcmp(a, "--system") == 0)
			slot = &h->system_opt;
		else if (strcmp(a, "--data-dir") == 0)
			slot = (const char **)&h->c->data_dir;
		else if (strncmp(a, "--data-dir=", 11) == 0)
			h->c->data_dir = a + 11;
		else if (strcmp(a, "--json") == 0)
			h->json = true;
		else
			return cli_usage(NULL, "unknown option or argument '%s' with -p (see 'cairn --help')", a);
		if (slot) {
			if (i + 1 >= argc)
				return cli_usage(NULL, "%s needs a value", a);
			*slot = argv[++i];
		}
	}
	if (!*prompt_arg)
		return cli_usage(NULL, "-p needs a prompt");
	return 0;
}

int cmd_prompt(struct cli *c, int argc, char **argv)
{
	struct hl *h = xcalloc(1, sizeof *h);
	h->c = c;
	const char *prompt_arg = NULL;
	struct cerr err = {0};
	int code = parse_args(h, argc, argv, &prompt_arg);
	if (code != 0) {
		free(h);
		return code;
	}
	struct store *st = NULL;
	if (build_prompt(prompt_arg, &h->prompt, &err) < 0 ||
	    config_load(&h->cfg, &err) < 0 || cli_open_store(c, true, &st, &err) < 0)
		goto fail;
	h->cfg_loaded = true;
	h->root = xstrdup(store_root(st));
	store_close(st);
	signal(SIGPIPE, SIG_IGN);
	uv_loop_init(&h->loop);
	if (!(h->fifo = fifo_new(&h->loop, h->root, NULL, &err))) {
		uv_loop_close(&h->loop);
		goto fail;
	}
	h->sink = sink_new(&h->loop, NULL);
	h->ctx = context_new();
	buf_init(&h->text);
	struct outq_hooks oh = {on_drain, on_out_error, h};
	h->out = outq_new(&h->loop, 1, &oh);
	uv_signal_t *sigs[] = {&h->sigint, &h->sigterm, &h->sighup};
	int signums[] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++) {
		uv_signal_init(&h->loop, sigs[i]);
		sigs[i]->data = h;
		uv_signal_start(sigs[i], signal_cb, signums[i]);
		uv_unref((uv_handle_t *)sigs[i]);
	}
	sink_read_start(h->sink, read_cb, h);
	if (h->session_opt) {
		snprintf(h->id, sizeof h->id, "%s", h->session_opt);
		if (fifo_post(h->fifo, fifo_open(h->id), opened, h, &err) < 0) {
			h->fail = err;
			shut_down(h);
		}
	} else {
		ulid_new(h->id);
		snprintf(h->turn, sizeof h->turn, "t1");
		h->next_seq = 1;
		if (start_turn(h, &err) < 0) {
			h->fail = err;
			shut_down(h);
		}
	}
	uv_run(&h->loop, UV_RUN_DEFAULT);
	uv_loop_close(&h->loop);
	code = h->fail.cls != CERR_OK ? cli_fail(&h->fail) : h->exit_code;
	goto out;
fail:
	code = cli_fail(&err);
out:
	if (h->sp_built)
		sysprompt_release(&h->sp);
	if (h->cfg_loaded)
		config_release(&h->cfg);
	context_free(h->ctx);
	cJSON_Delete(h->done);
	buf_release(&h->text);
	free(h->sess_provider);
	free(h->sess_model);
	free(h->prompt);
	free(h->root);
	free(h);
	return code;
}
