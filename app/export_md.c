/* export_md.c — the Markdown export of a session's active path
 * (export_md.h). The turn tree is persist/tree.h's: an event
 * belongs to the latest turn started with its envelope "turn". A turn is
 * rendered twice: once to find the longest backtick run of its texts,
 * then with fences one backtick longer (four at least), so that nothing
 * an answer or a tool wrote can open or close them. */
#include "app/export_md.h"
#include "app/export_blob.h"
#include "base/json.h"
#include "base/termsafe.h"
#include "base/xalloc.h"
#include "persist/tree.h"
#include "persist/vocab.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct md {
	const struct scan *s;
	int dirfd;
	const struct export_md_opts *o;
	struct buf *out;
	size_t fence;   /* backticks in this turn's fences */
	size_t longest; /* longest backtick run of the texts added */
	bool pending;   /* a text ended: its blank line is owed */
	struct buf blob;
};

static void add_date(struct buf *b, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char s[32];
	if (ms < 0 || !gmtime_r(&t, &tm) || !strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(s, sizeof s, "unknown");
	buf_adds(b, s);
}

/* Text written as it is, its backtick runs measured. */
static void add_text(struct md *m, const char *s, size_t n)
{
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		run = s[i] == '`' ? run + 1 : 0;
		if (run > m->longest)
			m->longest = run;
	}
	buf_add(m->out, s, n);
}

static void add_fenced(struct md *m, const char *info, const char *s, size_t n)
{
	for (size_t i = 0; i < m->fence; i++)
		buf_addc(m->out, '`');
	buf_adds(m->out, info);
	buf_addc(m->out, '\n');
	add_text(m, s, n);
	if (n && s[n - 1] != '\n')
		buf_addc(m->out, '\n');
	for (size_t i = 0; i < m->fence; i++)
		buf_addc(m->out, '`');
	buf_adds(m->out, "\n\n");
}

/* A one-line field (a name, an id) in a code span, on one line. */
static void add_span(struct md *m, const char *s)
{
	struct buf t = BUF_INIT;
	for (const char *p = s ? s : ""; *p; p++)
		buf_addc(&t, *p == '\n' || *p == '\r' ? ' ' : *p);
	size_t run = 0, longest = 0;
	for (size_t i = 0; i < t.len; i++) {
		run = t.p[i] == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	for (size_t i = 0; i <= longest; i++)
		buf_addc(m->out, '`');
	buf_adds(m->out, longest ? " " : "");
	add_text(m, t.p, t.len);
	buf_adds(m->out, longest ? " " : "");
	for (size_t i = 0; i <= longest; i++)
		buf_addc(m->out, '`');
	buf_release(&t);
}

static const char *str_field(const cJSON *data, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int render_event(struct md *m, const struct event *ev, enum vocab_type *prev,
			struct cerr *err)
{
	const cJSON *d = ev->data;
	enum vocab_type vt = ev->vtype;
	const char *oc = vt == VT_TURN_END ? str_field(d, "outcome") : NULL;
	bool silent = (vt == VT_ASSISTANT_REASONING && !m->o->reasoning) ||
		      (vt == VT_TURN_END && (!oc || strcmp(oc, "completed") == 0)) ||
		      (vt != VT_USER_MESSAGE && vt != VT_ASSISTANT_TEXT &&
		       vt != VT_ASSISTANT_REASONING && vt != VT_TOOL_CALL &&
		       vt != VT_INTERACTION_ANSWER && vt != VT_TOOL_RESULT && vt != VT_TURN_END);
	if (silent)
		return 0;
	/* One answer written in pieces is joined as it was written. */
	bool joined = vt == VT_ASSISTANT_TEXT && *prev == VT_ASSISTANT_TEXT;
	if (m->pending && !joined)
		buf_adds(m->out, "\n\n");
	m->pending = false;
	switch (vt) {
	case VT_USER_MESSAGE:
		buf_adds(m->out, "**Prompt**\n\n");
		goto text;
	case VT_ASSISTANT_TEXT:
		if (!joined)
			buf_adds(m->out, "**Answer**\n\n");
		goto text;
	case VT_ASSISTANT_REASONING:
		if (!m->o->reasoning)
			return 0;
		buf_adds(m->out, "**Reasoning**\n\n");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "redacted"))) {
			buf_adds(m->out, "*(redacted by the provider)*\n\n");
			break;
		}
		goto text;
	case VT_TOOL_CALL: {
		buf_adds(m->out, "**Tool call** ");
		add_span(m, str_field(d, "name"));
		buf_adds(m->out, " · ");
		add_span(m, str_field(d, "call_id"));
		bool incomplete = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "incomplete"));
		const char *raw = str_field(d, "args_raw");
		buf_adds(m->out, incomplete ? " — arguments cut off\n\n"
				 : raw     ? " — arguments not a JSON object\n\n"
					   : "\n\n");
		int r = export_blob(m->dirfd, d, ev->seq, &m->blob, err);
		if (r < 0)
			return -1;
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(d, "args");
		if (r == 1) {
			add_fenced(m, "json", m->blob.p, m->blob.len);
		} else if (raw) {
			add_fenced(m, "", raw, strlen(raw));
		} else if (cJSON_IsString(args)) {
			add_fenced(m, "", args->valuestring, strlen(args->valuestring));
		} else {
			char *a = json_print(args);
			add_fenced(m, "json", a ? a : "", a ? strlen(a) : 0);
			free(a);
		}
		break;
	}
	case VT_INTERACTION_ANSWER: {
		const char *dec = str_field(d, "decision");
		buf_adds(m->out, "*Approval answered: ");
		add_text(m, dec ? dec : "unknown", strlen(dec ? dec : "unknown"));
		buf_adds(m->out, "*\n\n");
		break;
	}
	case VT_TOOL_RESULT: {
		const char *st = str_field(d, "status");
		buf_adds(m->out, "**Result** of ");
		add_span(m, str_field(d, "call_id"));
		buf_adds(m->out, ": ");
		if (st && strcmp(st, "denied") == 0)
			buf_adds(m->out, "**denied**");
		else if (st && strcmp(st, "canceled") == 0)
			buf_adds(m->out, "**canceled**");
		else
			buf_adds(m->out, st ? st : "unknown");
		const cJSON *ec = cJSON_GetObjectItemCaseSensitive(d, "exit_code");
		if (cJSON_IsNumber(ec))
			buf_printf(m->out, ", exit code %lld", (long long)ec->valuedouble);
		if (!m->o->tool_output) {
			buf_adds(m->out, " (output left out)\n\n");
			break;
		}
		buf_adds(m->out, "\n\n");
		int r = export_blob(m->dirfd, d, ev->seq, &m->blob, err);
		if (r < 0)
			return -1;
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(d, "output");
		if (r == 1) {
			add_fenced(m, "", m->blob.p, m->blob.len);
		} else if (cJSON_IsString(out)) {
			add_fenced(m, "", out->valuestring, strlen(out->valuestring));
		} else if (out && !cJSON_IsNull(out)) {
			char *a = json_print(out);
			add_fenced(m, "json", a ? a : "", a ? strlen(a) : 0);
			free(a);
		}
		break;
	}
	case VT_TURN_END: {
		const char *cls = NULL, *msg = NULL;
		vocab_turn_error(cJSON_GetObjectItemCaseSensitive(d, "error"), &cls, &msg);
		buf_adds(m->out, "*This turn ");
		buf_adds(m->out, strcmp(oc, "canceled") == 0      ? "was canceled"
				 : strcmp(oc, "interrupted") == 0 ? "was interrupted"
				 : strcmp(oc, "failed") == 0      ? "failed"
								  : "ended");
		if (msg) {
			buf_adds(m->out, ": ");
			add_text(m, msg, strlen(msg));
		}
		buf_adds(m->out, "*\n\n");
		break;
	}
	default:
		return 0;
	}
	*prev = vt;
	return 0;
text:
	*prev = vt;
	{
		int r = export_blob(m->dirfd, d, ev->seq, &m->blob, err);
		if (r < 0)
			return -1;
		if (r == 1) {
			add_text(m, m->blob.p, m->blob.len);
		} else {
			const char *t = str_field(d, "text");
			add_text(m, t ? t : "", t ? strlen(t) : 0);
		}
		m->pending = true;
	}
	return 0;
}

static int render_turn(struct md *m, size_t n, const struct event *start, const size_t *evs,
		       size_t n_evs, bool ended, struct cerr *err)
{
	buf_printf(m->out, "## Turn %zu · ", n);
	add_date(m->out, start->t);
	buf_adds(m->out, "\n\n");
	enum vocab_type prev = VT_UNKNOWN;
	for (size_t j = 0; j < n_evs; j++)
		if (render_event(m, &m->s->events[evs[j]], &prev, err) < 0)
			return -1;
	if (m->pending)
		buf_adds(m->out, "\n\n");
	m->pending = false;
	if (!ended)
		buf_adds(m->out, "*This turn has no end in the log: it was still running, or "
				 "interrupted.*\n\n");
	return 0;
}

int export_md(const struct scan *s, int dirfd, const struct export_md_opts *o, struct buf *out,
	      struct cerr *err)
{
	struct tree *t = tree_new();
	size_t *ent = xcalloc(s->n_events ? s->n_events : 1, sizeof *ent);
	const char *title = NULL, *provider = NULL, *model = NULL;
	int64_t last_t = s->created_at;
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		const cJSON *d = ev->data;
		ent[i] = TREE_NONE;
		if (!ev->kind)
			continue;
		last_t = ev->t;
		const cJSON *v;
		switch (ev->vtype) {
		case VT_SESSION_HEADER:
		case VT_SESSION_SETTINGS:
			if ((v = cJSON_GetObjectItemCaseSensitive(d, "provider")))
				provider = cJSON_IsString(v) ? v->valuestring : NULL;
			if ((v = cJSON_GetObjectItemCaseSensitive(d, "model")))
				model = cJSON_IsString(v) ? v->valuestring : NULL;
			break;
		case VT_SESSION_META:
			if ((v = cJSON_GetObjectItemCaseSensitive(d, "title")))
				title = cJSON_IsString(v) && *v->valuestring ? v->valuestring : NULL;
			break;
		case VT_TURN_START:
			v = cJSON_GetObjectItemCaseSensitive(d, "parent_turn");
			ent[i] = tree_start(t, ev->turn, ev->seq,
					    !v ? TREE_PARENT_ABSENT
					    : cJSON_IsString(v) ? TREE_PARENT_NAMED
								: TREE_PARENT_NULL,
					    cJSON_IsString(v) ? v->valuestring : NULL);
			break;
		case VT_BRANCH_REWIND:
			v = cJSON_GetObjectItemCaseSensitive(d, "to_turn");
			tree_rewind(t, !v ? TREE_TO_ABSENT : cJSON_IsString(v) ? TREE_TO_NAMED : TREE_TO_NULL,
				    cJSON_IsString(v) ? v->valuestring : NULL);
			break;
		default:
			if (ev->turn)
				ent[i] = tree_find(t, ev->turn);
			break;
		}
	}
	size_t *path = NULL;
	size_t n_path = tree_path(t, tree_leaf(t), &path);
	size_t n_ent = tree_count(t);
	size_t *pos = xcalloc(n_ent ? n_ent : 1, sizeof *pos);
	for (size_t k = 0; k < n_ent; k++)
		pos[k] = SIZE_MAX;
	for (size_t p = 0; p < n_path; p++)
		pos[path[p]] = p;
	/* Each path turn's events, in log order. */
	size_t *count = xcalloc(n_path + 1, sizeof *count);
	for (size_t i = 0; i < s->n_events; i++)
		if (ent[i] != TREE_NONE && pos[ent[i]] != SIZE_MAX)
			count[pos[ent[i]] + 1]++;
	for (size_t p = 0; p < n_path; p++)
		count[p + 1] += count[p];
	size_t *evs = xcalloc(count[n_path] ? count[n_path] : 1, sizeof *evs);
	size_t *fill = xcalloc(n_path + 1, sizeof *fill);
	size_t *start = xcalloc(n_path + 1, sizeof *start);
	bool *ended = xcalloc(n_path + 1, sizeof *ended);
	for (size_t i = 0; i < s->n_events; i++) {
		if (ent[i] == TREE_NONE || pos[ent[i]] == SIZE_MAX)
			continue;
		size_t p = pos[ent[i]];
		if (s->events[i].vtype == VT_TURN_START)
			start[p] = i;
		if (s->events[i].vtype == VT_TURN_END)
			ended[p] = true;
		evs[count[p] + fill[p]++] = i;
	}

	struct buf doc = BUF_INIT;
	struct buf *final = out;
	out = &doc;
	struct md m = {.s = s, .dirfd = dirfd, .o = o, .out = out, .blob = BUF_INIT};
	buf_adds(out, "# ");
	if (title) {
		/* A one-line field, its controls shown inert wherever it goes. */
		termsafe_add(out, title, strlen(title), TERMSAFE_LINE);
	} else {
		buf_adds(out, "Session ");
		buf_adds(out, s->id ? s->id : "");
	}
	buf_adds(out, "\n\n- id: ");
	add_span(&m, s->id);
	buf_adds(out, "\n- project: ");
	if (s->cwd)
		add_span(&m, s->cwd);
	else
		buf_adds(out, "none");
	buf_adds(out, "\n- model: ");
	if (model || provider) {
		struct buf pm = BUF_INIT;
		buf_printf(&pm, "%s%s%s", provider ? provider : "", provider && model ? "/" : "",
			   model ? model : "");
		add_span(&m, pm.p);
		buf_release(&pm);
	} else {
		buf_adds(out, "none");
	}
	buf_adds(out, "\n- created: ");
	add_date(out, s->created_at);
	buf_adds(out, "\n- updated: ");
	add_date(out, last_t);
	buf_printf(out, "\n- turns: %zu on this path\n\n", n_path);

	int rc = 0;
	for (size_t p = 0; p < n_path && rc == 0; p++) {
		/* First pass measures, second writes. */
		struct buf probe = BUF_INIT;
		m.out = &probe;
		m.fence = 4;
		m.longest = 0;
		rc = render_turn(&m, p + 1, &s->events[start[p]], evs + count[p], fill[p], ended[p], err);
		buf_release(&probe);
		m.out = out;
		if (rc < 0)
			break;
		m.fence = m.longest + 1 > 4 ? m.longest + 1 : 4;
		rc = render_turn(&m, p + 1, &s->events[start[p]], evs + count[p], fill[p], ended[p], err);
	}
	/* Every block ends with a blank line; the document with one LF. */
	if (rc == 0)
		buf_add(final, doc.p, doc.len > 1 ? doc.len - 1 : doc.len);
	buf_release(&doc);
	buf_release(&m.blob);
	free(ended);
	free(start);
	free(fill);
	free(evs);
	free(count);
	free(pos);
	free(path);
	free(ent);
	tree_free(t);
	return rc;
}
