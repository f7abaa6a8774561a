/* keytab.c — the chat screen's key table (keytab.h) and the two texts made
 * from it: the help screen and docs/keys.md. */
#include "tui/keytab.h"

#include <stdbool.h>
#include <string.h>

#define CH(c, m) {.cp = (c), .sym = KEYSYM_CHAR, .mods = (m)}
#define SY(s, m) {.cp = 0, .sym = (s), .mods = (m)}
#define FN(n) {.cp = (n), .sym = KEYSYM_F, .mods = 0}
#define CTRL KEYMOD_CTRL
#define ALT KEYMOD_ALT
#define SHIFT KEYMOD_SHIFT

static const struct keybinding table[] = {
	/* the composer */
	{SY(KEYSYM_ENTER, 0), KEYCTX_COMPOSER, KEYACT_SEND,
	 "send the prompt; while a turn runs, queue it (the status line says queued N)"},
	{SY(KEYSYM_ENTER, ALT), KEYCTX_COMPOSER, KEYACT_NEWLINE, "insert a newline"},
	{CH('j', CTRL), KEYCTX_COMPOSER, KEYACT_NEWLINE, "insert a newline"},
	{SY(KEYSYM_TAB, 0), KEYCTX_COMPOSER, KEYACT_COMPLETE,
	 "complete a slash command: /new, /model, /approve, /title, /save, /help, /quit"},
	{SY(KEYSYM_LEFT, 0), KEYCTX_COMPOSER, KEYACT_LEFT, "move back one character"},
	{CH('b', CTRL), KEYCTX_COMPOSER, KEYACT_LEFT, "move back one character"},
	{SY(KEYSYM_RIGHT, 0), KEYCTX_COMPOSER, KEYACT_RIGHT, "move forward one character"},
	{CH('f', CTRL), KEYCTX_COMPOSER, KEYACT_RIGHT, "move forward one character"},
	{CH('b', ALT), KEYCTX_COMPOSER, KEYACT_WORD_LEFT, "move to the start of the previous word"},
	{SY(KEYSYM_LEFT, CTRL), KEYCTX_COMPOSER, KEYACT_WORD_LEFT, "move to the start of the previous word"},
	{CH('f', ALT), KEYCTX_COMPOSER, KEYACT_WORD_RIGHT, "move to the end of the next word"},
	{SY(KEYSYM_RIGHT, CTRL), KEYCTX_COMPOSER, KEYACT_WORD_RIGHT, "move to the end of the next word"},
	{CH('a', CTRL), KEYCTX_COMPOSER, KEYACT_LINE_START, "move to the start of the line"},
	{CH('e', CTRL), KEYCTX_COMPOSER, KEYACT_LINE_END, "move to the end of the line"},
	{SY(KEYSYM_UP, 0), KEYCTX_COMPOSER, KEYACT_UP,
	 "move up a row; on the first row, show the previous prompt from the history"},
	{SY(KEYSYM_DOWN, 0), KEYCTX_COMPOSER, KEYACT_DOWN,
	 "move down a row; on the last row, show the next prompt, and after the newest the draft"},
	{SY(KEYSYM_BACKSPACE, 0), KEYCTX_COMPOSER, KEYACT_BACKSPACE, "delete the character before the cursor"},
	{SY(KEYSYM_DELETE, 0), KEYCTX_COMPOSER, KEYACT_DELETE, "delete the character at the cursor"},
	{CH('d', CTRL), KEYCTX_COMPOSER, KEYACT_DELETE, "delete the character at the cursor"},
	{CH('k', CTRL), KEYCTX_COMPOSER, KEYACT_KILL_TO_END,
	 "kill to the end of the line (at its end, the newline); kills in a row are yanked as one"},
	{CH('u', CTRL), KEYCTX_COMPOSER, KEYACT_KILL_TO_START,
	 "kill to the start of the line (at its start, the newline before)"},
	{CH('w', CTRL), KEYCTX_COMPOSER, KEYACT_KILL_WORD_BACK, "kill the word before the cursor"},
	{CH('y', CTRL), KEYCTX_COMPOSER, KEYACT_YANK, "yank: insert the text killed last"},
	{CH('g', CTRL), KEYCTX_COMPOSER, KEYACT_EDITOR, "edit the prompt in $VISUAL or $EDITOR"},

	/* the composer when empty */
	{SY(KEYSYM_ENTER, 0), KEYCTX_EMPTY, KEYACT_SEND_WAITING, "send the first waiting queued prompt"},
	{CH('?', 0), KEYCTX_EMPTY, KEYACT_HELP, "show every key"},
	{CH('f', CTRL), KEYCTX_EMPTY, KEYACT_SEARCH, "search the transcript"},
	{CH('d', CTRL), KEYCTX_EMPTY, KEYACT_QUIT, "quit"},

	/* queued prompts that wait */
	{SY(KEYSYM_UP, ALT), KEYCTX_QUEUED, KEYACT_PULL_QUEUED,
	 "pull the last waiting prompt back into the composer to edit (never over unsent text)"},
	{CH('d', ALT), KEYCTX_QUEUED, KEYACT_DROP_QUEUED, "delete the last waiting prompt"},

	/* a running turn */
	{SY(KEYSYM_ESC, 0), KEYCTX_TURN, KEYACT_CANCEL,
	 "cancel the running turn; what streamed so far is kept and shown as canceled"},

	/* the whole screen */
	{CH('c', CTRL), KEYCTX_GLOBAL, KEYACT_INTERRUPT, "cancel the running turn; a second Ctrl-C within 2 s quits"},
	{FN(1), KEYCTX_GLOBAL, KEYACT_HELP, "show every key"},
	{SY(KEYSYM_PGUP, 0), KEYCTX_GLOBAL, KEYACT_SCROLL_PAGE_UP, "scroll the transcript up a page"},
	{SY(KEYSYM_PGDN, 0), KEYCTX_GLOBAL, KEYACT_SCROLL_PAGE_DOWN, "scroll the transcript down a page"},
	{SY(KEYSYM_HOME, 0), KEYCTX_GLOBAL, KEYACT_SCROLL_TOP,
	 "go to the start of the transcript (a long one reads earlier turns in)"},
	{SY(KEYSYM_END, 0), KEYCTX_GLOBAL, KEYACT_SCROLL_BOTTOM,
	 "go to the end of the transcript and follow the stream again"},
	{SY(KEYSYM_UP, SHIFT), KEYCTX_GLOBAL, KEYACT_SELECT_PREV, "select the previous message or code block"},
	{SY(KEYSYM_DOWN, SHIFT), KEYCTX_GLOBAL, KEYACT_SELECT_NEXT, "select the next message or code block"},
	{CH('c', ALT), KEYCTX_GLOBAL, KEYACT_COPY,
	 "copy the selected message or code block (none selected: the last answer) to the clipboard "
	 "through OSC 52 and to clipboard.txt in the data root"},
	{CH('o', ALT), KEYCTX_GLOBAL, KEYACT_EXPAND, "expand or collapse the selected tool output or reasoning"},
	{CH('z', CTRL), KEYCTX_GLOBAL, KEYACT_SUSPEND, "suspend cairn (fg brings it back)"},
	{CH('l', CTRL), KEYCTX_GLOBAL, KEYACT_REDRAW, "redraw the screen"},

	/* an approval prompt */
	{CH('y', 0), KEYCTX_APPROVAL, KEYACT_ALLOW_ONCE, "allow this call once"},
	{CH('a', 0), KEYCTX_APPROVAL, KEYACT_ALLOW_SESSION, "allow this tool for the rest of the session"},
	{CH('n', 0), KEYCTX_APPROVAL, KEYACT_DENY, "deny this call"},
	{CH('d', 0), KEYCTX_APPROVAL, KEYACT_DENY_NOTE, "deny with a note for the model"},

	/* searching */
	{SY(KEYSYM_ENTER, 0), KEYCTX_SEARCH, KEYACT_SEARCH_NEXT, "go to the next match, towards the start"},
	{CH('f', CTRL), KEYCTX_SEARCH, KEYACT_SEARCH_NEXT, "go to the next match, towards the start"},
	{SY(KEYSYM_UP, 0), KEYCTX_SEARCH, KEYACT_SEARCH_NEXT, "go to the next match, towards the start"},
	{SY(KEYSYM_DOWN, 0), KEYCTX_SEARCH, KEYACT_SEARCH_PREV, "go to the previous match, towards the end"},
	{SY(KEYSYM_ESC, 0), KEYCTX_SEARCH, KEYACT_CLOSE, "close the search"},

	/* the help screen */
	{SY(KEYSYM_ESC, 0), KEYCTX_HELP, KEYACT_CLOSE, "close the help"},
	{CH('q', 0), KEYCTX_HELP, KEYACT_CLOSE, "close the help"},
	{FN(1), KEYCTX_HELP, KEYACT_CLOSE, "close the help"},
};

const struct keybinding *keytab_entries(size_t *n)
{
	*n = sizeof table / sizeof table[0];
	return table;
}

/* Alt with a capital letter is the same key as with the small one: what
 * the terminal sends for Alt-B with Caps Lock on. */
static struct key normal(struct key k)
{
	if (k.sym == KEYSYM_CHAR && (k.mods & KEYMOD_ALT) && k.cp >= 'A' && k.cp <= 'Z') {
		k.cp += 'a' - 'A';
		k.mods &= (uint8_t)~KEYMOD_SHIFT;
	}
	return k;
}

const struct keybinding *keytab_find(struct key k, unsigned active)
{
	k = normal(k);
	for (int ctx = 0; ctx < KEYCTX_COUNT; ctx++) {
		if (!(active & KEYCTX_BIT(ctx)))
			continue;
		for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
			if (table[i].ctx == (enum keyctx)ctx && key_equal(table[i].key, k))
				return &table[i];
	}
	return NULL;
}

static const struct {
	const char *title, *about;
} ctx_text[KEYCTX_COUNT] = {
	[KEYCTX_APPROVAL] = {"Approval", "a tool call waits for an answer (policy ask); keys typed before it "
					 "appeared never answer it"},
	[KEYCTX_HELP] = {"Help", "the help screen (F1, or ? on an empty composer)"},
	[KEYCTX_SEARCH] = {"Search", "searching the transcript (Ctrl-F on an empty composer)"},
	[KEYCTX_EMPTY] = {"Empty composer", "nothing typed yet"},
	[KEYCTX_QUEUED] = {"Waiting prompts", "queued prompts wait after a canceled or failed turn or a "
					  "failed save"},
	[KEYCTX_TURN] = {"Running turn", "a turn is being answered"},
	[KEYCTX_COMPOSER] = {"Composer", "editing the prompt"},
	[KEYCTX_GLOBAL] = {"Everywhere", "anywhere on the chat screen"},
};

const char *keytab_ctx_title(enum keyctx ctx)
{
	return ctx < KEYCTX_COUNT ? ctx_text[ctx].title : "?";
}

const char *keytab_ctx_about(enum keyctx ctx)
{
	return ctx < KEYCTX_COUNT ? ctx_text[ctx].about : "?";
}

/* The order the texts show the contexts in: the table's. */
static size_t ctx_order(enum keyctx out[KEYCTX_COUNT])
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		bool seen = false;
		for (size_t j = 0; j < n; j++)
			seen |= out[j] == table[i].ctx;
		if (!seen)
			out[n++] = table[i].ctx;
	}
	return n;
}

/* Visit each action of ctx once, with all its keys joined by ", ". */
static void each_action(enum keyctx ctx, void (*fn)(const char *keys, const char *help, void *arg), void *arg)
{
	size_t n = sizeof table / sizeof table[0];
	for (size_t i = 0; i < n; i++) {
		if (table[i].ctx != ctx)
			continue;
		bool first = true;
		for (size_t j = 0; j < i; j++)
			first &= !(table[j].ctx == ctx && table[j].act == table[i].act);
		if (!first)
			continue;
		struct buf keys = BUF_INIT;
		for (size_t j = i; j < n; j++) {
			if (table[j].ctx != ctx || table[j].act != table[i].act)
				continue;
			char name[48];
			key_label(table[j].key, name, sizeof name);
			if (keys.len)
				buf_adds(&keys, ", ");
			buf_adds(&keys, name);
		}
		fn(keys.p, table[i].help, arg);
		buf_release(&keys);
	}
}

struct help_arg {
	struct buf *out;
	int keys_width, width;
};

/* Cells of UTF-8 text (the table's texts are of single-width characters). */
static int cells(const char *s, size_t n)
{
	int c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* text after a first line's start (at column col), wrapped at spaces to
 * width, the lines after the first indented by indent; a word longer than
 * a line stays whole (the screen cuts it). */
static void wrap_text(struct buf *out, const char *text, int col, int indent, int width)
{
	if (width > 0 && width - indent < 16)
		indent = width > 20 ? 4 : 0; /* too narrow for the column: a small indent */
	const char *p = text;
	bool line_start = true;
	while (*p) {
		const char *w = p;
		while (*p && *p != ' ')
			p++;
		int wc = cells(w, (size_t)(p - w));
		if (!line_start && width > 0 && col + 1 + wc > width) {
			buf_printf(out, "\n%*s", indent, "");
			col = indent;
			line_start = true;
		}
		if (!line_start) {
			buf_addc(out, ' ');
			col++;
		}
		buf_add(out, w, (size_t)(p - w));
		col += wc;
		line_start = false;
		while (*p == ' ')
			p++;
	}
	buf_addc(out, '\n');
}

void keytab_help_row(struct buf *out, const char *keys, const char *help, int keys_width, int width)
{
	size_t before = out->len;
	buf_printf(out, "  %-*s ", keys_width, keys);
	wrap_text(out, help, cells(out->p + before, out->len - before), 2 + keys_width + 1, width);
}

void keytab_help_heading(struct buf *out, const char *title, const char *about, int width)
{
	buf_printf(out, "%s: ", title);
	int col = cells(title, strlen(title)) + 2;
	wrap_text(out, about, col, col, width);
}

static void help_line(const char *keys, const char *help, void *arg)
{
	struct help_arg *h = arg;
	keytab_help_row(h->out, keys, help, h->keys_width, h->width);
}

void keytab_help(struct buf *out, int keys_width, int width)
{
	enum keyctx order[KEYCTX_COUNT];
	size_t n = ctx_order(order);
	struct help_arg h = {out, keys_width, width};
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_addc(out, '\n');
		keytab_help_heading(out, keytab_ctx_title(order[i]), keytab_ctx_about(order[i]), width);
		each_action(order[i], help_line, &h);
	}
}

static void md_row(const char *keys, const char *help, void *arg)
{
	buf_printf(arg, "| %s | %s |\n", keys, help);
}

void keytab_markdown(struct buf *out)
{
	buf_adds(out,
		 "# Keys\n"
		 "\n"
		 "<!-- Made from the key table in tui/keytab.c and the slash commands'\n"
		 "     table in tui/chat_cmd.c: edit a table, then\n"
		 "     build/tests/test_keytab --markdown > docs/keys.md -->\n"
		 "\n"
		 "The chat screen (`cairn` with no command, on a terminal) acts on keys\n"
		 "through one table, which also makes its help screen (F1, or `?` on an\n"
		 "empty composer) and this page. Each key acts in a context; when several\n"
		 "apply, the first in the order below wins: an approval, the help screen\n"
		 "and a search take the keys first, then the empty composer, waiting\n"
		 "prompts and a running turn, then the composer, then the whole screen.\n"
		 "\n"
		 "Alt is the Alt or Meta key, or Esc typed just before the key (within\n"
		 "25 ms). Esc alone acts at once; Esc Esc on an idle screen is kept for\n"
		 "the rewind picker of a later release, as is the session browser.\n"
		 "Pasted text (bracketed paste) is inserted as it is, newlines included;\n"
		 "it never sends. Control characters in it are kept as visible text\n"
		 "(ESC as `^[`). This holds for a paste that contains the terminal's\n"
		 "end-of-paste marker itself (`ESC [ 201 ~`, which tmux passes through)\n"
		 "followed by Enter: the marker cannot be told from the terminal's own\n"
		 "by its bytes, but the terminal sends a paste in one go and nothing\n"
		 "right behind it, so a paste ends only when the input pauses (10 ms)\n"
		 "after its end marker. What arrives before that pause is pasted text\n"
		 "too: the marker kept as text, a carriage return a newline.\n");
	enum keyctx order[KEYCTX_COUNT];
	size_t n = ctx_order(order);
	for (size_t i = 0; i < n; i++) {
		buf_printf(out, "\n## %s\n\n%c%s.\n\n| Key | Action |\n|---|---|\n", keytab_ctx_title(order[i]),
			   keytab_ctx_about(order[i])[0] - 'a' + 'A', keytab_ctx_about(order[i]) + 1);
		each_action(order[i], md_row, out);
	}
}
