/* textmsg.c — a streamed message as display lines (see textmsg.h).
 *
 * The source is split into blocks at line boundaries: blocks before the
 * open offset are closed (their lines kept, their source slice remembered
 * for a width change), the text from the open offset on is parsed and
 * rendered again on every append. For markdown, a top-level block is
 * closed once the block after it starts on a complete line: CommonMark
 * reads block structure line by line, so a later line can no longer join
 * it to what follows (a partial line can: "- a\n---" is a list and a rule,
 * "- a\n---x" one list). cmark-gfm reports a table that took over the
 * last line of a paragraph with the paragraph at line 0; such a node is
 * kept in one block with the node after it. Each closed block is rendered
 * from its own slice, so its lines do not depend on where the stream was
 * cut.
 *
 * An open fenced code block (a long one is common) is the exception to
 * "parse the open block again": while no line could close it, its
 * complete lines are laid out once and kept, and only the partial last
 * line is laid out per append (see code_fast). */
#include "tui/textmsg.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "tui/mdrender.h"
#include "tui/wrap.h"

struct block {
	size_t off, len;    /* its source slice */
	size_t first_line;  /* lines in the blocks before it */
	struct textlines *tl;
};

struct textmsg {
	enum textmsg_kind kind;
	unsigned style;
	int width;
	struct buf src;
	struct block *blocks;
	size_t nblocks, capblocks;
	size_t closed_lines;
	size_t open_off;        /* the open block starts here */
	struct textlines *open; /* its lines */
	struct mdrender *md;
	struct wrap *wrap;
	size_t *starts; /* scratch: line starts of the open text */
	size_t capstarts;
	/* The open block as a fenced code block, laid out line by line: */
	struct textlines *code; /* its gap line, info line and complete lines */
	size_t code_at;         /* the open_off it is for; SIZE_MAX: none */
	size_t code_done;       /* its complete lines end here */
	size_t code_base;       /* lines before the first content line */
	char fence;             /* the fence character */
	bool code_ok;           /* false: a line could close it, parse it */
	bool code_used;         /* the open lines are code, then open */
};

struct textmsg *textmsg_new(enum textmsg_kind kind, unsigned style, int width)
{
	struct textmsg *m = xcalloc(1, sizeof *m);
	m->kind = kind;
	m->style = style;
	m->width = width;
	buf_init(&m->src);
	buf_grow(&m->src, 256); /* src.p is never NULL: offsets into it are taken */
	m->open = textlines_new();
	m->code = textlines_new();
	m->code_at = SIZE_MAX;
	m->md = mdrender_new();
	m->wrap = wrap_new();
	return m;
}

void textmsg_free(struct textmsg *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nblocks; i++)
		textlines_free(m->blocks[i].tl);
	free(m->blocks);
	textlines_free(m->open);
	textlines_free(m->code);
	mdrender_free(m->md);
	wrap_free(m->wrap);
	buf_release(&m->src);
	free(m->starts);
	free(m);
}

/* Plain text s[0..n): each line (a CR before its newline dropped) wrapped
 * on its own. */
static void render_plain(struct textmsg *m, const char *s, size_t n, struct textlines *out)
{
	struct wrap_opts o = {m->width, WRAP_WORDS, NULL, NULL, 0, 0, 0};
	wrap_begin(m->wrap, out, &o);
	while (n > 0) {
		const char *nl = memchr(s, '\n', n);
		size_t k = nl ? (size_t)(nl - s) : n;
		size_t show = nl && k > 0 && s[k - 1] == '\r' ? k - 1 : k;
		wrap_add(m->wrap, s, show, m->style);
		if (!nl || k + 1 == n)
			break; /* a final newline ends the last line, starts none */
		wrap_add(m->wrap, "\n", 1, m->style);
		s += k + 1;
		n -= k + 1;
	}
	wrap_end(m->wrap);
}

/* The lines of a slice; with lead, an empty line first (the gap between
 * two top-level blocks). */
static void render_slice(struct textmsg *m, size_t off, size_t len, bool lead,
			 struct textlines *out, cmark_node *doc)
{
	if (m->kind == TEXTMSG_PLAIN) {
		render_plain(m, m->src.p + off, len, out);
		return;
	}
	cmark_node *own = doc ? NULL : mdrender_parse(m->src.p + off, len);
	cmark_node *d = doc ? doc : own;
	if (lead && cmark_node_first_child(d))
		textlines_end_line(out);
	mdrender_doc(m->md, d, m->width, out);
	if (own)
		cmark_node_free(own);
}

static void close_block(struct textmsg *m, size_t off, size_t len)
{
	struct textlines *tl = textlines_new();
	render_slice(m, off, len, m->closed_lines > 0, tl, NULL);
	if (m->nblocks == m->capblocks) {
		m->capblocks = m->capblocks ? 2 * m->capblocks : 16;
		m->blocks = xreallocarray(m->blocks, m->capblocks, sizeof *m->blocks);
	}
	struct block *b = &m->blocks[m->nblocks++];
	b->off = off;
	b->len = len;
	b->first_line = m->closed_lines;
	b->tl = tl;
	m->closed_lines += textlines_count(tl);
}

/* Line starts of src[open_off..): line L (1-based) starts at starts[L-1]
 * (relative); a line is complete when a later start exists. Returns how
 * many starts. Line ends are \n, \r\n and \r, as cmark reads them. */
static void add_start(struct textmsg *m, size_t *k, size_t at)
{
	if (*k == m->capstarts) {
		m->capstarts = m->capstarts ? 2 * m->capstarts : 64;
		m->starts = xreallocarray(m->starts, m->capstarts, sizeof *m->starts);
	}
	m->starts[(*k)++] = at;
}

static size_t line_starts(struct textmsg *m)
{
	const char *s = m->src.p + m->open_off;
	size_t n = m->src.len - m->open_off, k = 0;
	add_start(m, &k, 0);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
			i++;
		if (s[i] == '\n' || s[i] == '\r')
			add_start(m, &k, i + 1);
	}
	return k;
}

struct group {
	int start, end; /* lines; start 0: not known yet */
	bool takes_next; /* holds a node with a wrong position */
};

/* Groups the top-level nodes of doc into blocks that can be cut apart.
 * Returns how many, in *out (the caller frees it). */
static size_t group_nodes(cmark_node *doc, struct group **out)
{
	struct group *g = NULL;
	size_t n = 0, cap = 0;
	for (cmark_node *c = cmark_node_first_child(doc); c; c = cmark_node_next(c)) {
		int sl = cmark_node_get_start_line(c), el = cmark_node_get_end_line(c);
		bool sane = sl >= 1 && el >= sl;
		struct group *cur = n ? &g[n - 1] : NULL;
		/* A node with a wrong position goes with the node after it; a
		 * node that starts inside a group (it cannot, but then) joins it. */
		if (cur && (cur->takes_next || (sane && sl <= cur->end))) {
			if (sane) {
				if (!cur->start || sl < cur->start)
					cur->start = sl;
				if (el > cur->end)
					cur->end = el;
				cur->takes_next = false;
			}
			continue;
		}
		int prev_end = cur ? cur->end : 0; /* cur moves with the array */
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			g = xreallocarray(g, cap, sizeof *g);
		}
		g[n].start = sane ? sl : 0;
		g[n].end = sane ? el : prev_end;
		g[n].takes_next = !sane;
		n++;
	}
	/* A group whose start never became known, or that starts inside the
	 * one before it (cmark-gfm can give a setext heading the line after
	 * it as its end), joins the one before it. */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k > 0 && (!g[i].start || g[i].start <= g[k - 1].end)) {
			if (g[i].end > g[k - 1].end)
				g[k - 1].end = g[i].end;
			continue;
		}
		g[k++] = g[i];
		if (!g[k - 1].start)
			g[k - 1].start = 1;
		if (g[k - 1].end < g[k - 1].start)
			g[k - 1].end = g[k - 1].start;
	}
	*out = g;
	return k;
}

/* The end of the complete line starting at s[i] (after its line end) and
 * in *content the end of its text; 0 while it has no line end yet. A CR
 * at the very end may still be the first half of a CRLF: not an end yet. */
static size_t line_end(const char *s, size_t n, size_t i, size_t *content)
{
	for (size_t j = i; j < n; j++) {
		if (s[j] == '\n' || s[j] == '\r') {
			if (s[j] == '\r' && j + 1 >= n)
				return 0;
			*content = j;
			return s[j] == '\r' && s[j + 1] == '\n' ? j + 2 : j + 1;
		}
	}
	return 0;
}

/* Whether s[0..n), after up to three spaces, starts with at least min
 * fence characters c: a line that may close the block (min 3), or may
 * become one (min 1, a partial line). */
static bool fence_like(const char *s, size_t n, char c, size_t min)
{
	size_t i = 0, k = 0;
	while (i < n && i < 3 && s[i] == ' ')
		i++;
	while (i + k < n && s[i + k] == c)
		k++;
	return k >= min;
}

/* Text cmark shows as it is: no NUL, valid UTF-8. */
static bool plain_bytes(const char *s, size_t n)
{
	return !memchr(s, '\0', n) && utf8_valid(s, n, NULL);
}

static void code_line(struct textmsg *m, const char *s, size_t n, struct textlines *out)
{
	struct wrap_opts o = {m->width, WRAP_CODE, NULL, NULL, 0, 0, TS_CODEBLOCK};
	wrap_begin(m->wrap, out, &o);
	wrap_add(m->wrap, s, n, TS_CODEBLOCK);
	wrap_end(m->wrap);
}

/* Starts the line-by-line layout of the open block when it is a fenced
 * code block at the left margin whose first line is complete: the lines
 * cmark gives for the fence line alone, but its empty content line. */
static bool code_start(struct textmsg *m)
{
	const char *s = m->src.p + m->open_off;
	size_t n = m->src.len - m->open_off, content;
	size_t end = line_end(s, n, 0, &content);
	m->code_at = m->open_off;
	m->code_ok = false;
	if (!end || (s[0] != '`' && s[0] != '~') || !plain_bytes(s, end))
		return false;
	cmark_node *doc = mdrender_parse(s, end);
	cmark_node *c = cmark_node_first_child(doc);
	int len = 0, offset = -1;
	char ch = 0;
	if (c && !cmark_node_next(c) && cmark_node_get_type(c) == CMARK_NODE_CODE_BLOCK &&
	    cmark_node_get_fenced(c, &len, &offset, &ch) && offset == 0) {
		textlines_clear(m->code);
		render_slice(m, m->open_off, end, m->closed_lines > 0, m->code, doc);
		textlines_truncate(m->code, textlines_count(m->code) - 1);
		m->code_base = textlines_count(m->code);
		m->fence = ch;
		m->code_done = m->open_off + end;
		m->code_ok = true;
	}
	cmark_node_free(doc);
	return m->code_ok;
}

/* Brings the open block's lines up to date without parsing it, when it
 * is an open fenced code block; false when the caller must parse it. */
static bool code_fast(struct textmsg *m)
{
	if (m->code_at != m->open_off && !code_start(m))
		return false;
	if (!m->code_ok)
		return false;
	const char *s = m->src.p;
	size_t n = m->src.len, content = 0, end;
	while ((end = line_end(s, n, m->code_done, &content)) != 0) {
		const char *line = s + m->code_done;
		size_t k = content - m->code_done;
		if (fence_like(line, k, m->fence, 3) || !plain_bytes(line, k)) {
			m->code_ok = false; /* may close it, or cmark rewrites it */
			return false;
		}
		code_line(m, line, k, m->code);
		m->code_done = end;
	}
	const char *part = s + m->code_done;
	size_t k = n - m->code_done;
	/* A final CR ends the line for cmark (an empty one too); a CRLF
	 * would end the same line. */
	bool cr = k && part[k - 1] == '\r';
	if (cr)
		k--;
	if (k && (fence_like(part, k, m->fence, 1) || !plain_bytes(part, k)))
		return false;
	if (!k && !cr && textlines_count(m->code) == m->code_base)
		return false; /* no content yet: cmark shows one empty line */
	textlines_clear(m->open);
	if (k || cr)
		code_line(m, part, k, m->open);
	m->code_used = true;
	return true;
}

/* The slice of group i of the open text: [*a, *b) relative to open_off. */
static void group_slice(const struct textmsg *m, const struct group *g, size_t ns, size_t *a,
			size_t *b)
{
	*a = m->starts[g->start - 1];
	*b = (size_t)g->end < ns ? m->starts[g->end] : m->src.len - m->open_off;
}

/* Lays out the open text group by group, each from its own slice as it
 * will be once closed (what lies between groups and after the last, blank
 * lines and reference definitions, shows nothing and resolves nothing).
 * doc is the parse of the whole open text, reused when one group is all
 * of it. */
static void render_open(struct textmsg *m, cmark_node *doc, const struct group *g, size_t ng,
			size_t ns)
{
	size_t n = m->src.len - m->open_off;
	textlines_clear(m->open);
	for (size_t i = 0; i < ng; i++) {
		size_t a, b;
		group_slice(m, &g[i], ns, &a, &b);
		bool lead = m->closed_lines > 0 || textlines_count(m->open) > 0;
		render_slice(m, m->open_off + a, b - a, lead, m->open,
			     ng == 1 && a == 0 && b == n ? doc : NULL);
	}
}

/* Closes the top-level blocks that nothing appended can change any more,
 * then lays out the open rest; with close false, only lays it out. */
static void update_markdown(struct textmsg *m, bool close)
{
	if (close && code_fast(m))
		return;
	m->code_used = false;
	for (;;) {
		size_t n = m->src.len - m->open_off;
		cmark_node *doc = mdrender_parse(m->src.p + m->open_off, n);
		struct group *g = NULL;
		size_t ng = group_nodes(doc, &g);
		size_t ns = line_starts(m);
		/* the last group whose first line is complete */
		size_t j = ng;
		while (j > 1 && !((size_t)g[j - 1].start < ns))
			j--;
		if (!close || ng < 2 || j < 2) {
			render_open(m, doc, g, ng, ns);
			cmark_node_free(doc);
			free(g);
			return;
		}
		size_t base = m->open_off, a, b;
		for (size_t i = 0; i + 1 < j; i++) {
			group_slice(m, &g[i], ns, &a, &b);
			close_block(m, base + a, b - a);
		}
		group_slice(m, &g[j - 1], ns, &a, &b);
		m->open_off = base + a;
		cmark_node_free(doc);
		free(g);
	}
}

static void update_plain(struct textmsg *m, size_t from)
{
	const char *s = m->src.p;
	size_t last = SIZE_MAX;
	for (size_t i = m->src.len; i > from; i--)
		if (s[i - 1] == '\n') {
			last = i - 1;
			break;
		}
	if (last != SIZE_MAX) {
		/* with its newline, so that a CR before it is seen as CRLF */
		close_block(m, m->open_off, last + 1 - m->open_off);
		m->open_off = last + 1;
	}
	textlines_clear(m->open);
	if (m->src.len > m->open_off)
		render_slice(m, m->open_off, m->src.len - m->open_off, false, m->open, NULL);
}

void textmsg_append(struct textmsg *m, const char *s, size_t n)
{
	size_t from = m->src.len;
	buf_add(&m->src, s, n);
	if (m->kind == TEXTMSG_PLAIN)
		update_plain(m, from);
	else
		update_markdown(m, true);
}

void textmsg_set_width(struct textmsg *m, int width)
{
	if (width == m->width)
		return;
	m->width = width;
	m->closed_lines = 0;
	m->code_at = SIZE_MAX; /* laid out again below, whole */
	m->code_used = false;
	for (size_t i = 0; i < m->nblocks; i++) {
		struct block *b = &m->blocks[i];
		textlines_clear(b->tl);
		render_slice(m, b->off, b->len, m->closed_lines > 0 && m->kind == TEXTMSG_MARKDOWN,
			     b->tl, NULL);
		b->first_line = m->closed_lines;
		m->closed_lines += textlines_count(b->tl);
	}
	textlines_clear(m->open);
	size_t n = m->src.len - m->open_off;
	if (m->kind == TEXTMSG_MARKDOWN)
		update_markdown(m, false);
	else if (n)
		render_slice(m, m->open_off, n, false, m->open, NULL);
}

/* The open block's lines in front of m->open: the kept code lines. */
static size_t head_count(const struct textmsg *m)
{
	return m->code_used ? textlines_count(m->code) : 0;
}

size_t textmsg_count(const struct textmsg *m)
{
	return m->closed_lines + head_count(m) + textlines_count(m->open);
}

struct tline textmsg_line(const struct textmsg *m, size_t i)
{
	if (i >= m->closed_lines) {
		i -= m->closed_lines;
		if (i < head_count(m))
			return textlines_get(m->code, i);
		return textlines_get(m->open, i - head_count(m));
	}
	size_t lo = 0, hi = m->nblocks; /* the last block whose first line <= i */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->blocks[mid].first_line <= i)
			lo = mid;
		else
			hi = mid;
	}
	return textlines_get(m->blocks[lo].tl, i - m->blocks[lo].first_line);
}

const char *textmsg_source(const struct textmsg *m, size_t *n)
{
	*n = m->src.len;
	return m->src.p ? m->src.p : "";
}
