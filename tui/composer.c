/* composer.c — the composer's text, editing, kills and history
 * (composer.h). The text is an array of logical lines, each its own byte
 * array: typing touches one line, a paste splits into lines in one pass,
 * and layout (composer_layout.c) keeps each line's rows until that line
 * changes. */
#include "tui/composer_int.h"

#include "base/termsafe.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "tui/grapheme.h"
#include "tui/keytab.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- lines ---- */

static void line_reserve(struct cline *l, size_t extra)
{
	if (l->len + extra <= l->cap)
		return;
	size_t cap = l->cap ? l->cap : 16;
	while (cap < l->len + extra)
		cap *= 2;
	l->p = xrealloc(l->p, cap);
	l->cap = cap;
}

static void line_insert(struct cline *l, size_t at, const char *s, size_t n)
{
	if (n == 0)
		return;
	line_reserve(l, n);
	memmove(l->p + at + n, l->p + at, l->len - at);
	memcpy(l->p + at, s, n);
	l->len += n;
	composer_line_edited(l, at, 0, n);
}

static void line_erase(struct cline *l, size_t at, size_t n)
{
	if (n == 0)
		return;
	memmove(l->p + at, l->p + at + n, l->len - at - n);
	l->len -= n;
	composer_line_edited(l, at, n, 0);
}

static void line_release(struct cline *l)
{
	free(l->p);
	free(l->rows);
}

/* Make room for k new (empty) lines at index at. */
static void lines_open(struct composer *c, size_t at, size_t k)
{
	if (c->n_lines + k > c->lines_cap) {
		size_t cap = c->lines_cap ? c->lines_cap : 8;
		while (cap < c->n_lines + k)
			cap *= 2;
		c->lines = xreallocarray(c->lines, cap, sizeof *c->lines);
		c->lines_cap = cap;
	}
	memmove(c->lines + at + k, c->lines + at, (c->n_lines - at) * sizeof *c->lines);
	/* every line has storage, so that p + offset is never NULL + 0 */
	for (size_t i = at; i < at + k; i++)
		c->lines[i] = (struct cline){.p = xmalloc(16), .cap = 16, .rows_width = -1, .dirty = SIZE_MAX};
	c->n_lines += k;
}

/* Remove lines [at, at + k), freeing them. */
static void lines_close(struct composer *c, size_t at, size_t k)
{
	for (size_t i = at; i < at + k; i++)
		line_release(&c->lines[i]);
	memmove(c->lines + at, c->lines + at + k, (c->n_lines - at - k) * sizeof *c->lines);
	c->n_lines -= k;
}

/* ---- cleaning ---- */

/* s[0..n) as the composer keeps text: valid UTF-8 (a bad byte or NUL is
 * U+FFFD), LF for CR LF and CR, controls but LF and tab made inert text. */
static void clean(struct buf *out, const char *s, size_t n)
{
	struct buf t = BUF_INIT;
	buf_grow(&t, n);
	size_t i = 0;
	while (i < n) {
		size_t bad = n - i;
		if (utf8_valid(s + i, n - i, &bad))
			bad = n - i;
		size_t end = i + bad, run = i; /* s[run..j) is copied as it is */
		for (size_t j = i; j < end; j++) {
			char ch = s[j];
			if (ch != '\0' && ch != '\r')
				continue;
			buf_add(&t, s + run, j - run);
			if (ch == '\0')
				buf_adds(&t, "\xef\xbf\xbd");
			else if (!(j + 1 < n && s[j + 1] == '\n'))
				buf_addc(&t, '\n');
			run = j + 1;
		}
		buf_add(&t, s + run, end - run);
		if (end < n) {
			buf_adds(&t, "\xef\xbf\xbd");
			end++;
		}
		i = end;
	}
	termsafe_add(out, t.p ? t.p : "", t.len, TERMSAFE_TEXT);
	buf_release(&t);
}

/* ---- lifecycle and the whole text ---- */

struct composer *composer_new(void)
{
	struct composer *c = xcalloc(1, sizeof *c);
	lines_open(c, 0, 1);
	c->goal = -1;
	buf_init(&c->killed);
	buf_init(&c->show);
	c->kept = xcalloc(1, sizeof *c->kept);
	return c;
}

static void drop_kept(struct composer *c)
{
	for (size_t i = 0; i <= c->n_hist; i++) {
		free(c->kept[i]);
		c->kept[i] = NULL;
	}
}

void composer_free(struct composer *c)
{
	if (!c)
		return;
	lines_close(c, 0, c->n_lines);
	free(c->lines);
	drop_kept(c);
	free(c->kept);
	for (size_t i = 0; i < c->n_hist; i++)
		free(c->hist[i]);
	free(c->hist);
	buf_release(&c->killed);
	buf_release(&c->show);
	free(c);
}

char *composer_text(const struct composer *c, size_t *len)
{
	struct buf b = BUF_INIT;
	buf_adds(&b, "");
	for (size_t i = 0; i < c->n_lines; i++) {
		if (i)
			buf_addc(&b, '\n');
		buf_add(&b, c->lines[i].p, c->lines[i].len);
	}
	return buf_detach(&b, len);
}

/* Insert text already clean at the cursor. */
static void insert_clean(struct composer *c, const char *s, size_t n)
{
	const char *nl = memchr(s, '\n', n);
	if (!nl) {
		line_insert(&c->lines[c->cl], c->co, s, n);
		c->co += n;
		return;
	}
	size_t k = 0; /* the new lines */
	for (const char *q = nl; q; q = memchr(q + 1, '\n', (size_t)(s + n - q - 1)))
		k++;
	lines_open(c, c->cl + 1, k);
	struct cline *first = &c->lines[c->cl];
	struct cline *last = &c->lines[c->cl + k];
	/* what followed the cursor goes to the end of the last new line */
	line_insert(last, 0, first->p + c->co, first->len - c->co);
	line_erase(first, c->co, first->len - c->co);
	size_t piece = (size_t)(nl - s);
	line_insert(first, c->co, s, piece);
	const char *q = nl + 1;
	for (size_t i = 1; i <= k; i++) {
		const char *e = i < k ? memchr(q, '\n', (size_t)(s + n - q)) : s + n;
		line_insert(&c->lines[c->cl + i], 0, q, (size_t)(e - q));
		if (i == k)
			c->co = (size_t)(e - q);
		q = e + 1;
	}
	c->cl += k;
}

/* Move the cursor forward to a cluster boundary if it is inside one (text
 * typed before a combining mark joins it). */
static void snap_forward(struct composer *c)
{
	struct cline *l = &c->lines[c->cl];
	size_t f = grapheme_floor(l->p, l->len, c->co);
	if (f != c->co)
		c->co = f + grapheme_next(l->p + f, l->len - f);
}

static void clear_text(struct composer *c)
{
	lines_close(c, 1, c->n_lines - 1);
	line_erase(&c->lines[0], 0, c->lines[0].len);
	c->cl = c->co = 0;
	c->top = 0;
}

static void replace_clean(struct composer *c, const char *s, size_t n)
{
	clear_text(c);
	insert_clean(c, s, n);
}

char *composer_take(struct composer *c, size_t *len)
{
	char *t = composer_text(c, len);
	clear_text(c);
	drop_kept(c);
	c->hpos = c->n_hist;
	c->edited = false;
	composer_plain_command(c);
	return t;
}

void composer_set(struct composer *c, const char *s, size_t n)
{
	struct buf b = BUF_INIT;
	clean(&b, s, n);
	replace_clean(c, b.p ? b.p : "", b.len);
	buf_release(&b);
	drop_kept(c);
	c->hpos = c->n_hist;
	c->edited = false;
	composer_plain_command(c);
}

void composer_restore(struct composer *c, const char *s, size_t n)
{
	composer_set(c, s, n);
	c->edited = true;
}

bool composer_empty(const struct composer *c)
{
	return c->n_lines == 1 && c->lines[0].len == 0;
}

bool composer_edited(const struct composer *c)
{
	if (c->edited && !composer_empty(c))
		return true;
	for (size_t i = 0; i <= c->n_hist; i++)
		if (c->kept[i] && c->kept[i][0])
			return true;
	return false;
}

size_t composer_cursor(const struct composer *c)
{
	size_t off = 0;
	for (size_t i = 0; i < c->cl; i++)
		off += c->lines[i].len + 1;
	return off + c->co;
}

void composer_set_cursor(struct composer *c, size_t off)
{
	size_t i = 0;
	while (i + 1 < c->n_lines && off > c->lines[i].len) {
		off -= c->lines[i].len + 1;
		i++;
	}
	struct cline *l = &c->lines[i];
	c->cl = i;
	c->co = grapheme_floor(l->p, l->len, off < l->len ? off : l->len);
	composer_plain_command(c);
}

void composer_plain_command(struct composer *c)
{
	c->killing = false;
	c->goal = -1;
}

/* ---- editing ---- */

bool composer_insert(struct composer *c, const char *s, size_t n)
{
	composer_plain_command(c);
	if (n == 0)
		return false;
	struct buf b = BUF_INIT;
	clean(&b, s, n);
	insert_clean(c, b.p, b.len);
	buf_release(&b);
	snap_forward(c);
	c->edited = true;
	return true;
}

bool composer_newline(struct composer *c)
{
	return composer_insert(c, "\n", 1);
}

/* Remove the text from (l1, o1) to (l2, o2), the first not after the
 * second, appending it to out when out is not NULL; the cursor goes to
 * (l1, o1). */
static void erase_range(struct composer *c, size_t l1, size_t o1, size_t l2, size_t o2, struct buf *out)
{
	struct cline *a = &c->lines[l1];
	if (l1 == l2) {
		if (out)
			buf_add(out, a->p + o1, o2 - o1);
		line_erase(a, o1, o2 - o1);
	} else {
		if (out) {
			buf_add(out, a->p + o1, a->len - o1);
			for (size_t i = l1 + 1; i < l2; i++) {
				buf_addc(out, '\n');
				buf_add(out, c->lines[i].p, c->lines[i].len);
			}
			buf_addc(out, '\n');
			buf_add(out, c->lines[l2].p, o2);
		}
		struct cline *b = &c->lines[l2];
		line_erase(a, o1, a->len - o1);
		line_insert(a, o1, b->p + o2, b->len - o2);
		lines_close(c, l1 + 1, l2 - l1);
	}
	c->cl = l1;
	c->co = o1;
	c->edited = true;
	/* what was on either side may now be one cluster (a ZWJ before an
	 * emoji): the cursor goes to its start, not inside it */
	struct cline *l = &c->lines[l1];
	c->co = grapheme_floor(l->p, l->len, c->co);
}

/* One step back / forward over a cluster or a line break, from (*l, *o);
 * false at the start / end of the text. *cp is the first code point of
 * what was stepped over ('\n' for a line break). */
static bool step_back(const struct composer *c, size_t *l, size_t *o, uint32_t *cp)
{
	if (*o == 0) {
		if (*l == 0)
			return false;
		(*l)--;
		*o = c->lines[*l].len;
		*cp = '\n';
		return true;
	}
	const struct cline *ln = &c->lines[*l];
	*o = grapheme_prev(ln->p, ln->len, *o);
	*cp = grapheme_first(ln->p + *o, ln->len - *o);
	return true;
}

static bool step_fwd(const struct composer *c, size_t *l, size_t *o, uint32_t *cp)
{
	const struct cline *ln = &c->lines[*l];
	if (*o == ln->len) {
		if (*l + 1 == c->n_lines)
			return false;
		(*l)++;
		*o = 0;
		*cp = '\n';
		return true;
	}
	*cp = grapheme_first(ln->p + *o, ln->len - *o);
	*o += grapheme_next(ln->p + *o, ln->len - *o);
	return true;
}

static bool step(const struct composer *c, size_t *l, size_t *o, uint32_t *cp, bool back)
{
	return back ? step_back(c, l, o, cp) : step_fwd(c, l, o, cp);
}

/* Backspace (back) or Delete. */
static bool erase_one(struct composer *c, bool back)
{
	composer_plain_command(c);
	size_t l = c->cl, o = c->co;
	uint32_t cp;
	if (!step(c, &l, &o, &cp, back))
		return false;
	if (back)
		erase_range(c, l, o, c->cl, c->co, NULL);
	else
		erase_range(c, c->cl, c->co, l, o, NULL);
	return true;
}

bool composer_backspace(struct composer *c)
{
	return erase_one(c, true);
}

bool composer_delete(struct composer *c)
{
	return erase_one(c, false);
}

/* Kill (l1, o1)..(l2, o2); forward kills add after what a run of kills
 * already holds, backward ones before. */
static bool kill_range(struct composer *c, size_t l1, size_t o1, size_t l2, size_t o2, bool backward)
{
	bool run = c->killing;
	composer_plain_command(c);
	if (l1 == l2 && o1 == o2) {
		c->killing = run;
		return false;
	}
	if (!run)
		buf_reset(&c->killed);
	if (backward) {
		struct buf b = BUF_INIT;
		erase_range(c, l1, o1, l2, o2, &b);
		buf_add(&b, c->killed.p ? c->killed.p : "", c->killed.len);
		buf_release(&c->killed);
		c->killed = b;
	} else {
		erase_range(c, l1, o1, l2, o2, &c->killed);
	}
	c->killing = true;
	return true;
}

bool composer_kill_to_end(struct composer *c)
{
	struct cline *l = &c->lines[c->cl];
	if (c->co < l->len)
		return kill_range(c, c->cl, c->co, c->cl, l->len, false);
	if (c->cl + 1 < c->n_lines)
		return kill_range(c, c->cl, c->co, c->cl + 1, 0, false);
	return kill_range(c, c->cl, c->co, c->cl, c->co, false);
}

bool composer_kill_to_start(struct composer *c)
{
	if (c->co > 0)
		return kill_range(c, c->cl, 0, c->cl, c->co, true);
	if (c->cl > 0)
		return kill_range(c, c->cl - 1, c->lines[c->cl - 1].len, c->cl, 0, true);
	return kill_range(c, c->cl, c->co, c->cl, c->co, true);
}

static bool is_space(uint32_t cp)
{
	return cp == '\n' || cp == '\t' || utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_ZS;
}

static bool is_word(uint32_t cp)
{
	if (cp == '_')
		return true;
	utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)cp);
	return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
	       (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO) ||
	       (k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME);
}

/* Step back (or forward) over clusters while want(cp) == in, from (*l, *o). */
static void skip_while(const struct composer *c, size_t *l, size_t *o, bool (*want)(uint32_t), bool in,
		       bool back)
{
	for (;;) {
		size_t l2 = *l, o2 = *o;
		uint32_t cp;
		if (!step(c, &l2, &o2, &cp, back) || want(cp) != in)
			return;
		*l = l2, *o = o2;
	}
}

bool composer_kill_word_back(struct composer *c)
{
	size_t l = c->cl, o = c->co;
	skip_while(c, &l, &o, is_space, true, true);
	skip_while(c, &l, &o, is_space, false, true);
	return kill_range(c, l, o, c->cl, c->co, true);
}

bool composer_yank(struct composer *c)
{
	composer_plain_command(c);
	if (c->killed.len == 0)
		return false;
	insert_clean(c, c->killed.p, c->killed.len);
	snap_forward(c);
	c->edited = true;
	return true;
}

/* ---- moving ---- */

static bool move_to(struct composer *c, size_t l, size_t o)
{
	composer_plain_command(c);
	bool moved = l != c->cl || o != c->co;
	c->cl = l;
	c->co = o;
	return moved;
}

bool composer_left(struct composer *c)
{
	size_t l = c->cl, o = c->co;
	uint32_t cp;
	step_back(c, &l, &o, &cp);
	return move_to(c, l, o);
}

bool composer_right(struct composer *c)
{
	size_t l = c->cl, o = c->co;
	uint32_t cp;
	step_fwd(c, &l, &o, &cp);
	return move_to(c, l, o);
}

bool composer_word_left(struct composer *c)
{
	size_t l = c->cl, o = c->co;
	skip_while(c, &l, &o, is_word, false, true);
	skip_while(c, &l, &o, is_word, true, true);
	return move_to(c, l, o);
}

bool composer_word_right(struct composer *c)
{
	size_t l = c->cl, o = c->co;
	skip_while(c, &l, &o, is_word, false, false);
	skip_while(c, &l, &o, is_word, true, false);
	return move_to(c, l, o);
}

bool composer_line_start(struct composer *c)
{
	return move_to(c, c->cl, 0);
}

bool composer_line_end(struct composer *c)
{
	return move_to(c, c->cl, c->lines[c->cl].len);
}

/* ---- history ---- */

void composer_history_add(struct composer *c, const char *s, size_t n)
{
	struct buf b = BUF_INIT;
	clean(&b, s, n);
	if (c->n_hist > 0 && strlen(c->hist[c->n_hist - 1]) == b.len &&
	    memcmp(c->hist[c->n_hist - 1], b.p ? b.p : "", b.len) == 0) {
		buf_release(&b);
		return;
	}
	buf_adds(&b, "");
	c->hist = xreallocarray(c->hist, c->n_hist + 1, sizeof *c->hist);
	c->hist[c->n_hist] = buf_detach(&b, NULL);
	c->kept = xreallocarray(c->kept, c->n_hist + 2, sizeof *c->kept);
	/* the draft's slot stays last; the new entry has no edit */
	c->kept[c->n_hist + 1] = c->kept[c->n_hist];
	c->kept[c->n_hist] = NULL;
	if (c->hpos == c->n_hist)
		c->hpos++;
	c->n_hist++;
}

size_t composer_history_len(const struct composer *c)
{
	return c->n_hist;
}

void composer_history_show(struct composer *c, size_t i, bool at_end)
{
	size_t len;
	char *now = composer_text(c, &len);
	const char *orig = c->hpos < c->n_hist ? c->hist[c->hpos] : "";
	free(c->kept[c->hpos]);
	c->kept[c->hpos] = NULL;
	if (strcmp(now, orig) != 0)
		c->kept[c->hpos] = now;
	else
		free(now);
	char *src = c->kept[i];
	c->kept[i] = NULL;
	const char *text = src ? src : i < c->n_hist ? c->hist[i] : "";
	replace_clean(c, text, strlen(text));
	c->edited = src != NULL;
	free(src);
	c->hpos = i;
	composer_plain_command(c);
	if (!at_end) {
		c->cl = 0;
		c->co = 0;
	}
}

/* ---- keys ---- */

bool composer_apply(struct composer *c, int act)
{
	switch ((enum keyact)act) {
	case KEYACT_NEWLINE: composer_newline(c); return true;
	case KEYACT_LEFT: composer_left(c); return true;
	case KEYACT_RIGHT: composer_right(c); return true;
	case KEYACT_WORD_LEFT: composer_word_left(c); return true;
	case KEYACT_WORD_RIGHT: composer_word_right(c); return true;
	case KEYACT_LINE_START: composer_line_start(c); return true;
	case KEYACT_LINE_END: composer_line_end(c); return true;
	case KEYACT_UP: composer_up(c); return true;
	case KEYACT_DOWN: composer_down(c); return true;
	case KEYACT_BACKSPACE: composer_backspace(c); return true;
	case KEYACT_DELETE: composer_delete(c); return true;
	case KEYACT_KILL_TO_END: composer_kill_to_end(c); return true;
	case KEYACT_KILL_TO_START: composer_kill_to_start(c); return true;
	case KEYACT_KILL_WORD_BACK: composer_kill_word_back(c); return true;
	case KEYACT_YANK: composer_yank(c); return true;
	default: return false;
	}
}

bool composer_type(struct composer *c, struct key k)
{
	if (k.sym != KEYSYM_CHAR || (k.mods & (KEYMOD_CTRL | KEYMOD_ALT)))
		return false;
	char u[8];
	size_t n = utf8_encode(k.cp, u);
	return composer_insert(c, u, n);
}
