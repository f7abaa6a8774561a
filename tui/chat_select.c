/* chat_select.c — what Shift-Up and Shift-Down select and Alt-C copies:
 * the messages of the turns held (prompts and answers) and each answer's
 * code blocks (tui/mdcode.h), walked as one sequence from top to bottom,
 * an answer followed by its code blocks. From no selection, Shift-Up takes
 * the last item: the last code block of the last answer when it has one,
 * which is what is most often copied. The selected message is marked in
 * the gutter; a code block is named on the status line. */
#include "tui/chat_int.h"
#include "tui/mdcode.h"

#include <stdlib.h>

#include "base/xalloc.h"

static bool is_message(const struct transcript_block *b)
{
	enum transcript_kind k = transcript_block_kind(b);
	return k == TR_PROMPT || k == TR_TEXT;
}

static const struct transcript_block *block_at(const struct chat *c, size_t k, size_t i)
{
	const struct transcript_turn *t = transcript_turn(c->tr, k);
	return t && i < transcript_turn_blocks(t) ? transcript_turn_block(t, i) : NULL;
}

/* An answer's code blocks (a prompt is the user's text: none). */
static size_t codes_of(const struct transcript_block *b, struct mdcode **out)
{
	*out = NULL;
	size_t n;
	const char *s = b ? transcript_block_text(b, &n) : NULL;
	if (!s || transcript_block_kind(b) != TR_TEXT)
		return 0;
	return mdcode_blocks(s, n, out);
}

static size_t count_codes(const struct transcript_block *b)
{
	struct mdcode *v;
	size_t n = codes_of(b, &v);
	mdcode_free(v, n);
	return n;
}

/* The message block before or after (k, i) in the walk; false at an end. */
static bool next_message(const struct chat *c, size_t *kp, size_t *ip, bool back)
{
	size_t first = transcript_dropped(c->tr), end = transcript_end(c->tr);
	size_t k = *kp, i = *ip;
	for (;;) {
		if (back) {
			if (i > 0) {
				i--;
			} else if (k > first) {
				k--;
				const struct transcript_turn *t = transcript_turn(c->tr, k);
				size_t n = t ? transcript_turn_blocks(t) : 0;
				if (!n)
					continue;
				i = n - 1;
			} else {
				return false;
			}
		} else {
			const struct transcript_turn *t = transcript_turn(c->tr, k);
			if (t && i + 1 < transcript_turn_blocks(t)) {
				i++;
			} else if (k + 1 < end) {
				k++;
				i = 0;
				if (!transcript_turn_blocks(transcript_turn(c->tr, k)))
					continue;
			} else {
				return false;
			}
		}
		const struct transcript_block *b = block_at(c, k, i);
		if (b && is_message(b)) {
			*kp = k, *ip = i;
			return true;
		}
	}
}

void chat_select_move(struct chat *c, bool back)
{
	size_t first = transcript_dropped(c->tr), end = transcript_end(c->tr);
	if (end == first)
		return;
	bool sel = c->selected && block_at(c, c->sel_turn, c->sel_block);
	size_t k = sel ? c->sel_turn : end, i = sel ? c->sel_block : 0;
	long code = sel ? c->sel_code : -1;
	size_t codes = sel ? count_codes(block_at(c, k, i)) : 0;
	if (sel && back && code >= 0) {
		code--;
	} else if (sel && !back && code + 1 < (long)codes) {
		code++;
	} else if (next_message(c, &k, &i, back)) {
		codes = count_codes(block_at(c, k, i));
		code = back ? (long)codes - 1 : -1;
	} else if (!back) {
		c->selected = false; /* past the last: none */
		c->follow = true;
		chat_sayf(c, false, "nothing selected");
		return;
	} else {
		return; /* at the first: stays */
	}
	c->selected = true;
	c->sel_turn = k;
	c->sel_block = i;
	c->sel_code = code;
	chatview_show_block(c, k, i);
	if (code >= 0)
		chat_sayf(c, false, "code block %ld/%zu selected: Alt-C copies it",
			  code + 1, codes);
	else
		chat_sayf(c, false, "%s selected: Alt-C copies it",
			  transcript_block_kind(block_at(c, k, i)) == TR_PROMPT ? "the prompt" :
										  "the answer");
}

char *chat_select_text(struct chat *c, const char **what)
{
	const struct transcript_block *b =
		c->selected ? block_at(c, c->sel_turn, c->sel_block) : NULL;
	if (!b)
		return NULL;
	if (c->sel_code < 0) {
		size_t n;
		const char *s = transcript_block_text(b, &n);
		*what = "the selected message";
		return s ? xstrdup(s) : NULL;
	}
	struct mdcode *v;
	size_t n = codes_of(b, &v);
	char *text = NULL;
	if ((size_t)c->sel_code < n) {
		text = v[c->sel_code].text;
		v[c->sel_code].text = NULL;
		*what = "the selected code block";
	}
	mdcode_free(v, n);
	return text;
}
