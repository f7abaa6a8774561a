/* chatview.c — the chat screen's frame: the transcript's turns rendered
 * block by block (a block is laid out again only when its clock moved,
 * and a streaming answer only from its open block on, tui/textmsg.h), the
 * view anchored at the end or where the user scrolled to, the approval
 * prompt, the queue, the composer and the status line. Every text drawn
 * went through the renderer, which makes it safe for the terminal. */
#include "tui/chat_int.h"

#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "tui/chat_cmd.h"
#include "tui/keytab.h"

#define GUTTER 2        /* cells before a block's text */
#define BODY_GUTTER 4   /* cells before a tool's output */
#define COLLAPSED_ROWS 5 /* a collapsed output shows this many lines */
#define COMPOSER_MAX 8  /* rows the composer grows to */
#define QUEUE_MAX 3     /* queued prompts listed above the composer */

enum { PAIR_CODE = 1, PAIR_ERROR, PAIR_ACCENT };

/* ---- styles ---- */

static attr_t attr_of(const struct chat *c, unsigned st)
{
	attr_t a = A_NORMAL;
	bool colors = c->tty && tty_colors(c->tty);
	if (st & TS_BOLD)
		a |= A_BOLD;
	if (st & TS_ITALIC)
		a |= A_ITALIC;
	if (st & (TS_CODE | TS_CODEBLOCK))
		a |= colors ? COLOR_PAIR(PAIR_CODE) : (st & TS_CODE ? A_BOLD : A_NORMAL);
	if (st & (TS_DIM | TS_MARK | TS_URL | TS_QUOTE))
		a |= A_DIM;
	if (st & TS_LINK)
		a |= A_UNDERLINE;
	if (TS_HEADING_LEVEL(st))
		a |= A_BOLD | (TS_HEADING_LEVEL(st) == 1 ? A_UNDERLINE : A_NORMAL);
	return a;
}

static void draw_tline(const struct chat *c, const struct tline *l, int maxcells)
{
	int used = 0;
	for (size_t i = 0; i < l->n && used < maxcells; i++) {
		const struct tspan *s = &l->spans[i];
		attrset(attr_of(c, s->style));
		addnstr(l->text + s->off, (int)s->len);
		used += (int)s->cells;
	}
	attrset(A_NORMAL);
}

/* ---- rendering a block ---- */

static struct textmsg *plain(struct textmsg *m, unsigned style, int width, const char *s)
{
	textmsg_free(m);
	m = textmsg_new(TEXTMSG_PLAIN, style, width);
	textmsg_append(m, s, strlen(s));
	return m;
}

static const char *status_words(const struct transcript_tool *t, char *buf, size_t cap)
{
	switch (t->status) {
	case TR_STATUS_OK:
		if (t->has_exit_code)
			snprintf(buf, cap, "exit %" PRId64, t->exit_code);
		else
			snprintf(buf, cap, "done");
		return buf;
	case TR_STATUS_ERROR:
		if (t->has_signal)
			snprintf(buf, cap, "killed by signal %" PRId64, t->signal);
		else if (t->has_exit_code)
			snprintf(buf, cap, "exit %" PRId64, t->exit_code);
		else
			snprintf(buf, cap, "error");
		return buf;
	case TR_STATUS_DENIED:
		return t->note ? (snprintf(buf, cap, "denied: %s", t->note), buf) : "denied";
	case TR_STATUS_CANCELED:
		return "canceled";
	case TR_STATUS_NOT_EXECUTED:
		return "not executed";
	case TR_STATUS_OUTCOME_UNKNOWN:
		return "outcome unknown";
	case TR_STATUS_NONE:
		break;
	}
	if (t->approval == TR_APPROVAL_WAITING)
		return "waiting for approval";
	if (t->started) {
		int64_t s = (clock_unix_ms() - t->started_ms) / 1000;
		snprintf(buf, cap, "running %" PRId64 "s", s < 0 ? 0 : s);
		return buf;
	}
	return t->args_state == TR_ARGS_STREAMING ? "preparing" : "";
}

static void render_tool(struct chat *c, struct bview *v, const struct transcript_block *b)
{
	const struct transcript_tool *t = transcript_block_tool(b);
	char words[256];
	const char *st = status_words(t, words, sizeof words);
	char *head = xasprintf("%s%s%s%s%s", t->name ? t->name : "tool", t->target ? ": " : "",
			       t->target ? t->target : "", *st ? "  — " : "", st);
	v->head = plain(v->head, TS_BOLD, c->width - GUTTER, head);
	free(head);
	size_t n;
	const char *out = transcript_block_text(b, &n);
	textmsg_free(v->body);
	v->body = NULL;
	if (out && n) {
		v->body = textmsg_new(TEXTMSG_PLAIN, TS_DIM, c->width - BODY_GUTTER);
		textmsg_append(v->body, out, n);
	}
	v->collapsed = !transcript_block_expanded(b);
}

static void render_block(struct chat *c, struct bview *v, const struct transcript_block *b)
{
	size_t n;
	const char *text = transcript_block_text(b, &n);
	if (!text)
		n = 0;
	switch (transcript_block_kind(b)) {
	case TR_PROMPT:
		v->head = plain(v->head, TS_BOLD, c->width - GUTTER, text ? text : "");
		break;
	case TR_TEXT:
		/* Only what arrived since: the renderer re-lays its open block. */
		if (!v->head || n < v->head_src) {
			textmsg_free(v->head);
			v->head = textmsg_new(TEXTMSG_MARKDOWN, TS_NORMAL, c->width - GUTTER);
			v->head_src = 0;
		}
		if (n > v->head_src)
			textmsg_append(v->head, text + v->head_src, n - v->head_src);
		v->head_src = n;
		break;
	case TR_REASONING:
		if (transcript_block_expanded(b)) {
			v->head = plain(v->head, TS_DIM | TS_ITALIC, c->width - GUTTER, text ? text : "");
		} else {
			char line[96];
			snprintf(line, sizeof line, "thinking (%zu characters; expand to read)", n);
			v->head = plain(v->head, TS_DIM | TS_ITALIC, c->width - GUTTER, line);
		}
		break;
	case TR_TOOL:
		render_tool(c, v, b);
		break;
	case TR_OUTCOME:
		v->head = plain(v->head, TS_BOLD, c->width - GUTTER, text ? text : "");
		break;
	}
	v->version = transcript_block_version(b);
}

static size_t body_shown(const struct bview *v)
{
	size_t n = v->body ? textmsg_count(v->body) : 0;
	return v->collapsed && n > COLLAPSED_ROWS ? COLLAPSED_ROWS : n;
}

static size_t block_lines(const struct bview *v)
{
	size_t n = (v->head ? textmsg_count(v->head) : 0) + body_shown(v);
	if (v->body && v->collapsed && textmsg_count(v->body) > COLLAPSED_ROWS)
		n++; /* "... N more lines" */
	return n;
}

static void bview_release(struct bview *v)
{
	textmsg_free(v->head);
	textmsg_free(v->body);
	memset(v, 0, sizeof *v);
}

static void tview_release(struct tview *tv)
{
	for (size_t i = 0; i < tv->n; i++)
		bview_release(&tv->v[i]);
	free(tv->v);
	memset(tv, 0, sizeof *tv);
}

void chatview_reset(struct chat *c)
{
	for (size_t k = 0; k < c->nviews; k++)
		tview_release(&c->views[k]);
	free(c->views);
	c->views = NULL;
	c->nviews = 0;
	c->evicted = 0;
}

static struct tview *render_turn(struct chat *c, size_t k)
{
	if (k >= c->nviews) {
		size_t n = transcript_end(c->tr) > k ? transcript_end(c->tr) : k + 1;
		c->views = xreallocarray(c->views, n, sizeof *c->views);
		memset(c->views + c->nviews, 0, (n - c->nviews) * sizeof *c->views);
		c->nviews = n;
	}
	struct tview *tv = &c->views[k];
	const struct transcript_turn *t = transcript_turn(c->tr, k);
	if (!t) {
		tview_release(tv);
		return tv;
	}
	if (tv->v && tv->version == transcript_turn_version(t) && tv->width == c->width)
		return tv;
	if (tv->width != c->width)
		tview_release(tv);
	size_t n = transcript_turn_blocks(t);
	if (n > tv->n) {
		tv->v = xreallocarray(tv->v, n, sizeof *tv->v);
		memset(tv->v + tv->n, 0, (n - tv->n) * sizeof *tv->v);
		tv->n = n;
	}
	tv->lines = 0;
	for (size_t i = 0; i < n; i++) {
		const struct transcript_block *b = transcript_turn_block(t, i);
		struct bview *v = &tv->v[i];
		if (!v->head || v->version != transcript_block_version(b))
			render_block(c, v, b);
		tv->lines += block_lines(v) + 1; /* a blank line after each block */
	}
	tv->version = transcript_turn_version(t);
	tv->width = c->width;
	return tv;
}

size_t chatview_turn_lines(struct chat *c, size_t k)
{
	return render_turn(c, k)->lines;
}

/* Display line i of turn k. */
static struct vline line_at(struct chat *c, size_t k, size_t i)
{
	struct vline out = {.gutter = "  "};
	struct tview *tv = render_turn(c, k);
	const struct transcript_turn *t = transcript_turn(c->tr, k);
	for (size_t j = 0; j < tv->n && t; j++) {
		struct bview *v = &tv->v[j];
		enum transcript_kind kind = transcript_block_kind(transcript_turn_block(t, j));
		size_t nh = v->head ? textmsg_count(v->head) : 0;
		if (i < nh) {
			out.line = textmsg_line(v->head, i);
			if (c->selected && c->sel_turn == k && c->sel_block == j)
				out.gutter = "= ", out.gutter_style = TS_BOLD; /* selected, for copy */
			else if (i == 0 && kind == TR_PROMPT)
				out.gutter = "> ", out.gutter_style = TS_BOLD;
			else if (i == 0 && kind == TR_TOOL)
				out.gutter = "* ", out.gutter_style = TS_BOLD;
			return out;
		}
		i -= nh;
		size_t nb = body_shown(v);
		if (i < nb) {
			out.gutter = "  | ";
			out.gutter_style = TS_DIM;
			out.line = textmsg_line(v->body, i);
			return out;
		}
		i -= nb;
		if (v->body && v->collapsed && textmsg_count(v->body) > COLLAPSED_ROWS) {
			if (i == 0) {
				out.gutter = "  | ";
				out.gutter_style = TS_DIM;
				out.literal = "... more lines (Alt-O expands)";
				out.style = TS_DIM;
				return out;
			}
			i--;
		}
		if (i == 0)
			return out; /* the blank line after the block */
		i--;
	}
	return out;
}

/* ---- layout ---- */

static int queue_rows(const struct chat *c)
{
	size_t q = transcript_queued(c->tr);
	return q == 0 ? 0 : (int)(q > QUEUE_MAX ? QUEUE_MAX + 1 : q);
}

static int composer_rows(struct chat *c)
{
	struct composer_row rows[COMPOSER_MAX];
	struct composer_view v;
	composer_layout(c->comp, COLS > GUTTER ? COLS - GUTTER : 1, COMPOSER_MAX, rows, &v);
	int n = (int)v.rows;
	return n < 1 ? 1 : n > COMPOSER_MAX ? COMPOSER_MAX : n;
}

int chatview_area(const struct chat *c)
{
	int used = 1 /* status */ + 1 /* rule */ + composer_rows((struct chat *)c) + queue_rows(c) +
		   (transcript_pending_approval(c->tr) ? 2 : 0);
	int area = LINES - used;
	return area < 1 ? 1 : area;
}

/* ---- scrolling ---- */

/* The anchor of the top line when following the end. */
static void anchor_from_end(struct chat *c)
{
	size_t end = transcript_end(c->tr), first = transcript_dropped(c->tr);
	long need = chatview_area(c);
	c->top_turn = end ? end - 1 : first;
	c->top_line = 0;
	for (size_t k = end; k-- > first;) {
		size_t n = chatview_turn_lines(c, k);
		c->top_turn = k;
		if ((long)n >= need) {
			c->top_line = n - (size_t)need;
			return;
		}
		need -= (long)n;
		c->top_line = 0;
	}
}

/* Lines from the anchor to the end, up to limit. */
static long lines_below(struct chat *c, long limit)
{
	long n = 0;
	for (size_t k = c->top_turn; k < transcript_end(c->tr) && n < limit; k++)
		n += (long)chatview_turn_lines(c, k) - (k == c->top_turn ? (long)c->top_line : 0);
	return n;
}

void chatview_scroll(struct chat *c, long delta)
{
	if (c->follow) {
		if (delta >= 0)
			return;
		anchor_from_end(c);
		c->follow = false;
	}
	size_t first = transcript_dropped(c->tr);
	while (delta < 0) {
		if (c->top_line > 0) {
			c->top_line--;
		} else if (c->top_turn > first) {
			c->top_turn--;
			size_t n = chatview_turn_lines(c, c->top_turn);
			c->top_line = n ? n - 1 : 0;
		} else {
			chat_page_earlier(c); /* at the first turn held */
			break;
		}
		delta++;
	}
	while (delta > 0) {
		size_t n = chatview_turn_lines(c, c->top_turn);
		if (c->top_line + 1 < n)
			c->top_line++;
		else if (c->top_turn + 1 < transcript_end(c->tr))
			c->top_turn++, c->top_line = 0;
		else
			break;
		delta--;
	}
	/* The end in view again: follow the stream. */
	if (lines_below(c, chatview_area(c) + 1) <= chatview_area(c))
		c->follow = true;
}

void chatview_home(struct chat *c)
{
	c->follow = false;
	c->top_turn = transcript_dropped(c->tr);
	c->top_line = 0;
	if (lines_below(c, chatview_area(c) + 1) <= chatview_area(c))
		c->follow = true;
	chat_page_earlier(c); /* the top of what is held: earlier turns next */
}

void chatview_toggle_expand(struct chat *c)
{
	for (size_t k = transcript_end(c->tr); k-- > transcript_dropped(c->tr);) {
		const struct transcript_turn *t = transcript_turn(c->tr, k);
		for (size_t i = transcript_turn_blocks(t); i-- > 0;) {
			const struct transcript_block *b = transcript_turn_block(t, i);
			enum transcript_kind kind = transcript_block_kind(b);
			if (kind == TR_TOOL || kind == TR_REASONING) {
				transcript_block_set_expanded(c->tr, b, !transcript_block_expanded(b));
				return;
			}
		}
	}
}

void chatview_show_block(struct chat *c, size_t k, size_t i)
{
	/* Its turn's first line at the top, then down to the block. */
	c->follow = false;
	c->top_turn = k;
	c->top_line = 0;
	struct tview *tv = render_turn(c, k);
	for (size_t j = 0; j < i && j < tv->n; j++)
		c->top_line += block_lines(&tv->v[j]) + 1;
	if (lines_below(c, chatview_area(c) + 1) <= chatview_area(c))
		c->follow = true;
}

/* ---- drawing ---- */

static void draw_vline(struct chat *c, int y, const struct vline *l)
{
	move(y, 0);
	attrset(attr_of(c, l->gutter_style));
	addstr(l->gutter);
	attrset(A_NORMAL);
	int room = COLS - (int)strlen(l->gutter);
	if (l->literal) {
		attrset(attr_of(c, l->style));
		addnstr(l->literal, room);
		attrset(A_NORMAL);
	} else {
		draw_tline(c, &l->line, room);
	}
	clrtoeol();
}

/* Rendered lines are kept only near the view: turns well above it are
 * laid out again if the user scrolls back to them. */
#define KEEP_TURNS 16

static void evict(struct chat *c)
{
	size_t below = c->top_turn > KEEP_TURNS ? c->top_turn - KEEP_TURNS : 0;
	for (size_t k = c->evicted; k < below && k < c->nviews; k++)
		tview_release(&c->views[k]);
	if (below > c->evicted)
		c->evicted = below;
	else if (below < c->evicted)
		c->evicted = below; /* scrolled back: these are rendered again as drawn */
}

static void draw_transcript(struct chat *c, int area)
{
	if (c->follow)
		anchor_from_end(c);
	size_t k = c->top_turn, i = c->top_line;
	int y = 0;
	for (; y < area && k < transcript_end(c->tr); y++) {
		size_t n = chatview_turn_lines(c, k);
		if (i >= n) {
			k++, i = 0, y--;
			continue;
		}
		struct vline l = line_at(c, k, i);
		draw_vline(c, y, &l);
		i++;
	}
	for (; y < area; y++) {
		move(y, 0);
		clrtoeol();
	}
	evict(c);
}

static void draw_help(struct chat *c, int area)
{
	struct buf b = BUF_INIT;
	keytab_help(&b, 22, COLS > 2 ? COLS - 2 : 1);
	chat_cmd_help(&b, 22, COLS > 2 ? COLS - 2 : 1);
	struct textmsg *m = textmsg_new(TEXTMSG_PLAIN, TS_NORMAL, COLS > 2 ? COLS - 2 : 1);
	textmsg_append(m, b.p ? b.p : "", b.len);
	buf_release(&b);
	size_t n = textmsg_count(m);
	if (c->help_top < 0)
		c->help_top = 0;
	if ((size_t)c->help_top > n)
		c->help_top = (int)n;
	for (int y = 0; y < area; y++) {
		move(y, 0);
		size_t i = (size_t)c->help_top + (size_t)y;
		if (i < n) {
			addstr("  ");
			struct tline l = textmsg_line(m, i);
			draw_tline(c, &l, COLS - 2);
		}
		clrtoeol();
	}
	textmsg_free(m);
}

/* One line of text cut to the width, made safe by the renderer. */
static void draw_text_line(struct chat *c, int y, const char *s, unsigned style, attr_t extra)
{
	struct textmsg *m = textmsg_new(TEXTMSG_PLAIN, style, COLS > 0 ? COLS : 1);
	textmsg_append(m, s, strlen(s));
	move(y, 0);
	attrset(extra);
	if (textmsg_count(m)) {
		struct tline l = textmsg_line(m, 0);
		for (size_t i = 0; i < l.n; i++) {
			attrset(attr_of(c, l.spans[i].style) | extra);
			addnstr(l.text + l.spans[i].off, (int)l.spans[i].len);
		}
	}
	attrset(extra);
	clrtoeol();
	attrset(A_NORMAL);
	textmsg_free(m);
}

static void draw_queue(struct chat *c, int y)
{
	size_t q = transcript_queued(c->tr);
	size_t from = q > QUEUE_MAX ? q - QUEUE_MAX : 0;
	if (q > QUEUE_MAX) {
		char more[64];
		snprintf(more, sizeof more, "  (%zu more queued)", from);
		draw_text_line(c, y++, more, TS_DIM, A_NORMAL);
	}
	for (size_t k = from; k < q; k++) {
		const char *id;
		const char *t = transcript_queued_text(c->tr, k, &id, NULL);
		const char *nl = t ? strchr(t, '\n') : NULL;
		char *line = xasprintf("  queued: %.*s%s", nl ? (int)(nl - t) : (int)strlen(t ? t : ""),
				       t ? t : "", nl ? " ..." : "");
		draw_text_line(c, y++, line, TS_DIM, A_NORMAL);
		free(line);
	}
}

static void draw_approval(struct chat *c, int y, const struct transcript_tool *t)
{
	/* The request's summary names the tool itself ("shell: ls -la") */
	char *q = t->summary ? xasprintf("  allow %s ?", t->summary)
			     : xasprintf("  allow %s: %s ?", t->name ? t->name : "tool", t->target ? t->target : "");
	draw_text_line(c, y, q, TS_BOLD, tty_colors(c->tty) ? COLOR_PAIR(PAIR_ACCENT) : A_NORMAL);
	free(q);
	draw_text_line(c, y + 1,
		       c->mode == CHAT_NOTE ? "  type the note for the model, Enter denies with it, Esc goes back"
				 : "  y allow once   a allow for this session   n deny   d deny with a note",
		       TS_DIM, A_NORMAL);
}

static void state_words(struct chat *c, const struct transcript_state *st, struct buf *b)
{
	int64_t s = (clock_unix_ms() - st->since_ms) / 1000;
	if (s < 0)
		s = 0;
	switch (st->activity) {
	case TR_IDLE:
		buf_adds(b, c->phase == CHAT_READY ? "idle" : c->phase == CHAT_FAILED ? "not open" : "opening");
		break;
	case TR_WAITING:
		buf_printf(b, "waiting %" PRId64 "s", s);
		break;
	case TR_STREAMING:
		buf_printf(b, "streaming %zu chars %" PRId64 "s", st->stream_chars, s);
		break;
	case TR_RUNNING_TOOL:
		buf_printf(b, "running tool %s %" PRId64 "s", st->tool ? st->tool : "", s);
		break;
	case TR_APPROVAL:
		buf_adds(b, "approval");
		break;
	}
}

/* The state first: on a narrow terminal the end is what is cut. */
static void draw_status(struct chat *c, int y)
{
	struct transcript_state st;
	transcript_state(c->tr, &st);
	struct buf b = BUF_INIT;
	buf_adds(&b, " ");
	if (c->phase == CHAT_VIEW_ONLY)
		buf_adds(&b, c->banner);
	else
		state_words(c, &st, &b);
	if (st.queued)
		buf_printf(&b, " | queued %zu", st.queued);
	if (st.unsaved)
		buf_adds(&b, " | unsaved (/save retries)");
	if (st.interrupted)
		buf_adds(&b, " | interrupted");
	if (*c->note)
		buf_printf(&b, " | %s", c->note);
	/* The session's title (its own, or its first prompt's); "new
	 * session" only for one without turns; a session whose start is not
	 * read yet (the preview of a long one) by its id. */
	const char *name = st.title;
	if (!name && !*c->id)
		name = "cairn";
	else if (!name)
		name = c->phase == CHAT_READY && transcript_end(c->tr) == 0 && !transcript_has_earlier(c->tr) ? "new session" : c->id;
	buf_printf(&b, " | %s", name);
	const char *prov = c->provider ? c->provider : st.provider;
	const char *model = c->model ? c->model : st.model;
	if (prov && strcmp(prov, "offline") == 0)
		buf_adds(&b, " | offline (built-in model, no network)");
	else if (prov)
		buf_printf(&b, " | %s %s", prov, model ? model : "");
	attr_t a = A_REVERSE;
	if (c->note_error && tty_colors(c->tty))
		a |= COLOR_PAIR(PAIR_ERROR);
	draw_text_line(c, y, b.p, TS_NORMAL, a);
	buf_release(&b);
}

static void colors_once(struct chat *c)
{
	static bool done;
	if (done || !c->tty || !tty_colors(c->tty))
		return;
	done = true;
	init_pair(PAIR_CODE, COLOR_CYAN, -1);
	init_pair(PAIR_ERROR, COLOR_RED, -1);
	init_pair(PAIR_ACCENT, COLOR_MAGENTA, -1); /* yellow vanishes on a light background */
}

void chatview_draw(struct chat *c)
{
	colors_once(c);
	int width = COLS - GUTTER - 2 > 8 ? COLS - GUTTER - 2 : 8;
	if (width != c->width) {
		chatview_reset(c);
		c->width = width;
	}
	const struct transcript_tool *tool = transcript_pending_approval(c->tr);
	int area = chatview_area(c);
	if (c->mode == CHAT_HELP)
		draw_help(c, area);
	else
		draw_transcript(c, area);
	int y = area;
	if (tool) {
		draw_approval(c, y, tool);
		y += 2;
	}
	draw_queue(c, y);
	y += queue_rows(c);
	move(y, 0);
	attrset(A_DIM);
	hline(ACS_HLINE, COLS);
	attrset(A_NORMAL);
	y++;
	struct composer_row rows[COMPOSER_MAX];
	struct composer_view v;
	int crow = composer_rows(c);
	composer_layout(c->comp, COLS > GUTTER ? COLS - GUTTER : 1, crow, rows, &v);
	for (int r = 0; r < crow; r++) {
		move(y + r, 0);
		addstr(r == 0 ? "> " : "  ");
		if ((size_t)r < v.shown)
			addnstr(rows[r].text, (int)rows[r].len);
		clrtoeol();
	}
	draw_status(c, LINES - 1);
	move(y + (int)v.cursor_y, GUTTER + v.cursor_x);
}
