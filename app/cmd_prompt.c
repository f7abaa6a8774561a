/* cmd_prompt.c — `cairn -p PROMPT [-p PROMPT ...]`: headless turns through
 * the host (engine/host.h), the same runner, sink and persistence as the
 * chat screen, with standard output as the sink's consumer (docs/cairn.1,
 * "HEADLESS MODE").
 *
 * The first prompt starts a turn; the others are sent at once and become
 * queued input, durable before anything runs, each dispatched by the host
 * only after the turn before it completed and was saved. A turn that does
 * not complete, or a signal, stops the run: prompts never started stay
 * queued in the session, and the first failing turn decides the exit code.
 *
 * The loop runs the host, the FIFO's completions, the HTTP engine and the
 * writer of stdout. A consumer that cannot write (a pipe nobody reads)
 * stops reading the sink, which pauses the model's reply: memory stays
 * bounded and the loop never blocks. EPIPE cancels the turn. */
#include "app/cli.h"
#include "app/cmds.h"
#include "app/outq.h"
#include "app/parts.h"
#include "app/prompt_report.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/readfile.h"
#include "base/termsafe.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "engine/host.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROMPT_MAX (64u * 1024u * 1024u)
#define PROMPTS_MAX 64
#define DRAIN_MS 60000 /* how long a closing run waits before it says it still waits */

struct hl {
	struct cli *c;
	bool json, cont;
	const char *session_opt;
	struct parts_opts o;
	const char *prompt_args[PROMPTS_MAX];
	size_t n_prompts;
	char *prompts[PROMPTS_MAX];
	/* the session */
	char id[SESSION_ID_MAX + 1];
	bool with_settings; /* an opened session: the call is chosen with its settings */
	/* parts */
	struct parts p;
	struct outq *out;
	uv_signal_t sigint, sigterm, sighup;
	bool signals_on;
	/* the run */
	struct prompt_report rep;
	size_t expected;     /* turns this run waits for */
	bool stopping;       /* no further turn: a failure, a signal, EPIPE */
	bool finished;
	int signals;
	bool text_ended_nl, wrote_text;
	struct cerr fail;    /* a failure before any turn started */
};

/* ---- arguments and the prompts ---- */

static int read_all(int fd, struct buf *b, struct cerr *err)
{
	switch (readfile_fd(fd, PROMPT_MAX, b)) {
	case READFILE_OK:
		return 0;
	case READFILE_TOO_BIG:
		return cerr_set(err, CERR_USAGE, 0, "the prompt is larger than %u bytes", PROMPT_MAX);
	default:
		return cerr_set(err, CERR_IO, errno, "cannot read standard input");
	}
}

/* -p TEXT, -p - (stdin), and for the first -p TEXT a pipe or a file on
 * stdin appended (never a terminal or a device such as /dev/null). */
static int build_prompt(const char *arg, bool take_stdin, char **out, struct cerr *err)
{
	struct buf b = BUF_INIT;
	struct stat st;
	bool piped = fstat(0, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode));
	if (strcmp(arg, "-") == 0) {
		if (read_all(0, &b, err) < 0)
			goto fail;
	} else {
		buf_adds(&b, arg);
		if (piped && take_stdin) {
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
	const char *nul = memchr(b.p, '\0', b.len);
	if (nul || !utf8_valid(b.p, b.len, &bad)) {
		cerr_set(err, CERR_USAGE, 0, "the prompt is not UTF-8 text (byte %zu)",
			 nul ? (size_t)(nul - b.p) : bad);
		goto fail;
	}
	*out = buf_detach(&b, NULL);
	return 0;
fail:
	buf_release(&b);
	return -1;
}

static int build_prompts(struct hl *h, struct cerr *err)
{
	size_t dashes = 0;
	for (size_t i = 0; i < h->n_prompts; i++)
		dashes += strcmp(h->prompt_args[i], "-") == 0;
	if (dashes > 1)
		return cerr_set(err, CERR_USAGE, 0, "only one -p - can read standard input");
	for (size_t i = 0; i < h->n_prompts; i++)
		if (build_prompt(h->prompt_args[i], i == 0 && dashes == 0, &h->prompts[i], err) < 0)
			return -1;
	return 0;
}

static int parse_args(struct hl *h, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		if (strcmp(a, "-p") == 0 || strcmp(a, "--prompt") == 0) {
			if (h->n_prompts == PROMPTS_MAX)
				return cli_usage(NULL, "at most %d prompts in one run", PROMPTS_MAX);
			slot = &h->prompt_args[h->n_prompts++];
		} else if (strcmp(a, "--session") == 0)
			slot = &h->session_opt;
		else if (strcmp(a, "-c") == 0 || strcmp(a, "--continue") == 0)
			h->cont = true;
		else if ((slot = parts_opts_slot(&h->o, a)))
			;
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
	if (h->n_prompts == 0)
		return cli_usage(NULL, "-p needs a prompt");
	if (h->cont && h->session_opt)
		return cli_usage(NULL, "--session and -c cannot be used together");
	struct cerr err;
	if (parts_opts_check(&h->o, &err) < 0)
		return cli_usage(NULL, "%s", err.msg);
	return 0;
}

/* ---- output ---- */

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx);

static void out_str(struct hl *h, const char *s, size_t n)
{
	outq_write(h->out, s, n);
	if (outq_full(h->out))
		sink_read_stop(h->p.sink); /* the reply pauses until stdout drains */
}

static void on_drain(void *ud)
{
	struct hl *h = ud;
	sink_read_start(h->p.sink, read_cb, h);
}

static void stop(struct hl *h)
{
	h->stopping = true;
	if (h->p.host && *h->id)
		host_cancel(h->p.host, h->id); /* the partial answer is kept; queued input stays */
}

static void on_out_error(void *ud, int uverr)
{
	struct hl *h = ud;
	(void)uverr;
	/* Nobody reads the answer any more: stop paying for it. */
	stop(h);
	sink_read_start(h->p.sink, read_cb, h); /* writes are dropped from now on */
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
	if (h->json) {
		buf_add(&h->rep.text, s, n); /* only --json's result line prints it */
		return;
	}
	if (n == 0)
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

/* Text mode: a turn's answer ends with a newline; a failure is said on
 * stderr. */
static void print_turn_end(struct hl *h, const cJSON *t)
{
	if (h->json)
		return;
	if (h->wrote_text && !h->text_ended_nl)
		out_str(h, "\n", 1);
	h->wrote_text = false;
	const char *outcome = str_of(t, "outcome");
	if (vocab_outcome_of(outcome) == VO_COMPLETED && !cJSON_GetObjectItem(t, "saved"))
		return;
	const char *msg = str_of(cJSON_GetObjectItem(t, "error"), "message");
	const char *save = str_of(t, "save_error");
	cli_printf(stderr, "cairn: turn %s %s%s%s%s%s\n", str_of(t, "turn"), outcome,
		   msg ? ": " : "", msg ? msg : "", save ? "; not saved: " : "", save ? save : "");
}

/* ---- shutdown ---- */

/* The host closed: close what is this run's own, the output last (its
 * queue flushed). */
static void own_closed(void *ctx)
{
	struct hl *h = ctx;
	uv_close((uv_handle_t *)&h->sigint, NULL);
	uv_close((uv_handle_t *)&h->sigterm, NULL);
	uv_close((uv_handle_t *)&h->sighup, NULL);
	outq_close(h->out, NULL, NULL);
}

static void finish(struct hl *h)
{
	if (h->finished)
		return;
	h->finished = true;
	if (h->json && *h->id && (h->rep.settled > 0 || h->fail.cls == CERR_OK))
		out_json_line(h, prompt_report_result(&h->rep, h->id));
	if (*h->id && h->rep.settled > 0)
		cli_printf(stderr, "cairn: session %s\n", h->id);
	if (h->p.host && *h->id) {
		const struct host_input *in;
		size_t n = host_queued(h->p.host, h->id, &in);
		if (n)
			cli_printf(stderr, "cairn: %zu prompt%s still queued in session %s\n", n,
				   n == 1 ? "" : "s", h->id);
	}
	parts_close(&h->p, DRAIN_MS, own_closed, h);
}

static void fail_run(struct hl *h, const struct cerr *err)
{
	if (h->fail.cls == CERR_OK && h->rep.settled == 0)
		h->fail = *err;
	prompt_report_fail(&h->rep, err);
	h->stopping = true;
	finish(h);
}

/* Done once every turn this run waits for settled, or once it stops and
 * no turn runs. */
static void check_done(struct hl *h)
{
	if (h->finished || !h->p.host)
		return;
	bool running = host_state(h->p.host, h->id) == HOST_TURN;
	if (h->rep.settled >= h->expected || (h->stopping && !running))
		finish(h);
}

/* ---- the consumer of the sink ---- */

/* A tool call waits for approval: with nobody to ask, it is denied with a
 * reason the model reads. */
static void answer(struct hl *h, const cJSON *req)
{
	const char *id = str_of(req, "request_id");
	struct cerr err;
	/* Advice that holds: read-only only when that policy would allow it
	 * (never when it is the policy that asked). */
	const char *by = str_of(req, "allowed_by");
	bool ro = by && strcmp(by, "read-only") == 0;
	cli_printf(stderr, "cairn: denied %s (nobody to ask: use --approve %s)\n",
		   str_of(req, "summary") ? str_of(req, "summary") : "a tool call",
		   ro ? "read-only or all" : "all");
	if (id && host_respond(h->p.host, h->id, id, "deny",
			       "nobody can approve tool calls in this headless run", NULL, NULL,
			       &err) < 0)
		cli_printf(stderr, "cairn: %s\n", err.msg);
}

static void read_cb(struct sink *s, const struct sink_item *it, void *ctx)
{
	(void)s;
	struct hl *h = ctx;
	struct cerr err;
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
		switch (it->notice) {
		case SINK_NOTICE_UNSAVED:
			h->stopping = true;
			break;
		case SINK_NOTICE_INTERACTION:
			answer(h, it->data);
			break;
		case SINK_NOTICE_SAVED:
		case SINK_NOTICE_HELD:
		case SINK_NOTICE_TOOL_CALL:
		case SINK_NOTICE_UNKNOWN:
			break;
		}
		break;
	case SINK_MARKER:
		if (it->marker == SINK_MARKER_TURN_DONE) {
			/* Everything before it was applied (printed): settle. */
			if (!prompt_report_done(&h->rep, it->data, clock_unix_ms()))
				h->stopping = true;
			if (host_applied(h->p.host, it, &err) < 0)
				cli_printf(stderr, "cairn: %s\n", err.msg);
		} else if (it->marker == SINK_MARKER_SETTLED) {
			bool ok = cJSON_IsTrue(cJSON_GetObjectItem(it->data, "ok"));
			const char *msg = str_of(cJSON_GetObjectItem(it->data, "error"), "message");
			if (!prompt_report_settled(&h->rep, ok, msg))
				h->stopping = true;
			print_turn_end(h, cJSON_GetArrayItem(h->rep.turns,
							     cJSON_GetArraySize(h->rep.turns) - 1));
			if (h->stopping)
				stop(h); /* the queue stays held */
			check_done(h);
		}
		break;
	}
}

static void signal_cb(uv_signal_t *sg, int signum)
{
	struct hl *h = sg->data;
	if (++h->signals > 1 && signum == SIGINT)
		_exit(130); /* a second interrupt while draining: at once */
	if (h->signals == 1)
		cli_printf(stderr, "cairn: canceling; saving what arrived (interrupt again to quit now)\n");
	stop(h);
	check_done(h);
}

/* ---- the turns ---- */

static void sent(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct hl *h = ctx;
	(void)r;
	if (err) {
		/* Never started nor queued: it counts as failed. */
		h->expected--;
		cli_printf(stderr, "cairn: prompt not sent: %s\n", err->msg);
		prompt_report_fail(&h->rep, err);
		stop(h);
		check_done(h);
	}
}

static int send_all(struct hl *h, struct cerr *err)
{
	h->expected = h->n_prompts;
	h->rep.turn_started = clock_unix_ms();
	for (size_t i = 0; i < h->n_prompts; i++) {
		struct host_send s = {.text = h->prompts[i]};
		if (host_send(h->p.host, h->id, &s, sent, h, err) < 0) {
			h->expected = i;
			if (i == 0)
				return -1;
			cli_printf(stderr, "cairn: prompt %zu not sent: %s\n", i + 1, err->msg);
			prompt_report_fail(&h->rep, err);
			h->stopping = true;
			break;
		}
	}
	return 0;
}

/* The system prompt was read on a worker (parts_load_prompt): choose the
 * call with it and send the prompts. */
static void prompt_read(void *ctx)
{
	struct hl *h = ctx;
	struct cerr e;
	struct host_settings set = {0};
	if (h->with_settings)
		host_settings(h->p.host, h->id, &set, &e);
	if (h->stopping) {
		finish(h);
		return;
	}
	if (parts_select_call(&h->p, h->id, h->with_settings ? &set : NULL, NULL, &e) < 0 ||
	    send_all(h, &e) < 0)
		fail_run(h, &e);
}

static void opened(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct hl *h = ctx;
	(void)r;
	if (err) {
		fail_run(h, err);
		return;
	}
	const struct host_input *in;
	size_t n = host_queued(h->p.host, h->id, &in);
	for (size_t i = 0; i < n; i++)
		cli_printf(stderr, "cairn: queued by an earlier run, not sent: %s\n", in[i].input_id);
	h->with_settings = true;
	parts_load_prompt(&h->p, prompt_read, h);
}

static void created(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)ctx;
	(void)r;
	(void)err; /* a new session in memory: nothing can fail */
}

static int start(struct hl *h, struct cerr *err)
{
	if (*h->id)
		return host_open(h->p.host, h->id, opened, h, err);
	if (host_create(h->p.host, h->p.cwd, NULL, h->id, created, h, err) < 0)
		return -1;
	parts_load_prompt(&h->p, prompt_read, h);
	return 0;
}

static void recovered(void *ctx, size_t n, size_t failed, const struct cerr *err)
{
	(void)ctx;
	if (n)
		cli_printf(stderr, "cairn: recovered %zu interrupted session%s\n", n, n == 1 ? "" : "s");
	if (failed)
		cli_printf(stderr, "cairn: %zu interrupted session%s could not be recovered "
			   "(see 'cairn doctor')\n", failed, failed == 1 ? "" : "s");
	(void)err; /* no catalog to ask: nothing to recover */
}

int cmd_prompt(struct cli *c, int argc, char **argv)
{
	struct hl *h = xcalloc(1, sizeof *h);
	h->c = c;
	prompt_report_init(&h->rep);
	struct cerr err = {0};
	int code = parse_args(h, argc, argv);
	if (code != 0)
		goto out;
	if (build_prompts(h, &err) < 0 || parts_open(&h->p, c, &h->o, h->cont, &err) < 0)
		goto fail;
	if (h->session_opt)
		snprintf(h->id, sizeof h->id, "%s", h->session_opt);
	else if (h->cont)
		snprintf(h->id, sizeof h->id, "%s", h->p.latest);
	signal(SIGPIPE, SIG_IGN);
	struct outq_hooks oh = {on_drain, on_out_error, h};
	h->out = outq_new(&h->p.loop, 1, &oh);
	uv_signal_t *sigs[] = {&h->sigint, &h->sigterm, &h->sighup};
	int signums[] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++) {
		uv_signal_init(&h->p.loop, sigs[i]);
		sigs[i]->data = h;
		uv_signal_start(sigs[i], signal_cb, signums[i]);
		uv_unref((uv_handle_t *)sigs[i]);
	}
	sink_read_start(h->p.sink, read_cb, h);
	if (h->cont && !*h->id) {
		/* The parts are open: they close through the loop like any run's. */
		cerr_set(&err, CERR_MISSING, 0, "no session to continue in %s", h->p.cwd);
		fail_run(h, &err);
	} else if (start(h, &err) < 0) {
		fail_run(h, &err);
	}
	if (!h->finished && host_recover_interrupted(h->p.host, recovered, h, &err) < 0)
		cli_printf(stderr, "cairn: %s\n", err.msg);
	uv_run(&h->p.loop, UV_RUN_DEFAULT);
	code = h->fail.cls != CERR_OK ? cli_fail(&h->fail) : h->rep.exit_code;
	goto out;
fail:
	code = cli_fail(&err);
out:
	parts_release(&h->p);
	prompt_report_release(&h->rep);
	for (size_t i = 0; i < h->n_prompts; i++)
		free(h->prompts[i]);
	free(h);
	return code;
}
