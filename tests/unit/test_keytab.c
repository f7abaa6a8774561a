/* test_keytab.c — tui/keytab.h: every key issue 14 names is in the table
 * with its action, contexts take precedence in order, no key is bound twice
 * in one context, and the help text shows every entry. With --markdown it
 * prints docs/keys.md instead, the slash commands' part (tui/chat_cmd.c)
 * last (tests/cli/test_keys_doc.sh compares). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "tui/key.h"
#include "tui/chat_cmd.h"
#include "tui/keytab.h"

#define BIT KEYCTX_BIT
#define TYPING (BIT(KEYCTX_COMPOSER) | BIT(KEYCTX_GLOBAL))

static struct key fkey(uint32_t n)
{
	struct key k = key_sym(KEYSYM_F, 0);
	k.cp = n;
	return k;
}

static void expect_act(struct key k, unsigned active, enum keyact want)
{
	const struct keybinding *b = keytab_find(k, active);
	char name[48];
	key_label(k, name, sizeof name);
	if (want == KEYACT_NONE) {
		if (b)
			fail_msg("%s (contexts %#x) acts (%d: %s), expected text", name, active, b->act, b->help);
		return;
	}
	if (!b)
		fail_msg("%s (contexts %#x) is not bound", name, active);
	if (b->act != want)
		fail_msg("%s (contexts %#x) does %d (%s), expected %d", name, active, b->act, b->help, want);
}

/* The keys of issue 14's "Composer and keys" and "Transcript" sections. */
static void test_every_key_the_issue_names(void **state)
{
	(void)state;
	unsigned empty = TYPING | BIT(KEYCTX_EMPTY);
	expect_act(key_sym(KEYSYM_ENTER, 0), TYPING, KEYACT_SEND);
	expect_act(key_sym(KEYSYM_ENTER, 0), TYPING | BIT(KEYCTX_TURN), KEYACT_SEND); /* queues */
	expect_act(key_sym(KEYSYM_ENTER, 0), empty | BIT(KEYCTX_QUEUED), KEYACT_SEND_WAITING);
	expect_act(key_sym(KEYSYM_ENTER, KEYMOD_ALT), TYPING, KEYACT_NEWLINE);
	expect_act(key_char('j', KEYMOD_CTRL), TYPING, KEYACT_NEWLINE);
	expect_act(key_char('a', KEYMOD_CTRL), TYPING, KEYACT_LINE_START);
	expect_act(key_char('e', KEYMOD_CTRL), TYPING, KEYACT_LINE_END);
	expect_act(key_char('b', KEYMOD_CTRL), TYPING, KEYACT_LEFT);
	expect_act(key_char('f', KEYMOD_CTRL), TYPING, KEYACT_RIGHT);
	expect_act(key_char('k', KEYMOD_CTRL), TYPING, KEYACT_KILL_TO_END);
	expect_act(key_char('u', KEYMOD_CTRL), TYPING, KEYACT_KILL_TO_START);
	expect_act(key_char('w', KEYMOD_CTRL), TYPING, KEYACT_KILL_WORD_BACK);
	expect_act(key_char('y', KEYMOD_CTRL), TYPING, KEYACT_YANK);
	expect_act(key_char('b', KEYMOD_ALT), TYPING, KEYACT_WORD_LEFT);
	expect_act(key_char('f', KEYMOD_ALT), TYPING, KEYACT_WORD_RIGHT);
	expect_act(key_char('B', KEYMOD_ALT), TYPING, KEYACT_WORD_LEFT); /* Caps Lock */
	expect_act(key_sym(KEYSYM_UP, 0), TYPING, KEYACT_UP);
	expect_act(key_sym(KEYSYM_DOWN, 0), TYPING, KEYACT_DOWN);
	expect_act(key_char('g', KEYMOD_CTRL), TYPING, KEYACT_EDITOR);
	expect_act(key_sym(KEYSYM_TAB, 0), TYPING, KEYACT_COMPLETE);
	expect_act(key_sym(KEYSYM_UP, KEYMOD_ALT), TYPING | BIT(KEYCTX_QUEUED), KEYACT_PULL_QUEUED);
	expect_act(key_char('d', KEYMOD_ALT), TYPING | BIT(KEYCTX_QUEUED), KEYACT_DROP_QUEUED);
	expect_act(key_sym(KEYSYM_ESC, 0), TYPING | BIT(KEYCTX_TURN), KEYACT_CANCEL);
	expect_act(key_sym(KEYSYM_ESC, 0), empty, KEYACT_NONE); /* Esc Esc: kept for the rewind picker */
	expect_act(key_char('c', KEYMOD_CTRL), TYPING | BIT(KEYCTX_TURN), KEYACT_INTERRUPT);
	expect_act(key_char('c', KEYMOD_CTRL), empty, KEYACT_INTERRUPT);
	expect_act(key_char('d', KEYMOD_CTRL), empty, KEYACT_QUIT);
	expect_act(key_char('d', KEYMOD_CTRL), TYPING, KEYACT_DELETE);
	expect_act(fkey(1), TYPING, KEYACT_HELP);
	expect_act(key_char('?', 0), empty, KEYACT_HELP);
	expect_act(key_char('?', 0), TYPING, KEYACT_NONE); /* typed text */
	expect_act(key_char('f', KEYMOD_CTRL), empty, KEYACT_SEARCH);
	expect_act(key_sym(KEYSYM_PGUP, 0), TYPING, KEYACT_SCROLL_PAGE_UP);
	expect_act(key_sym(KEYSYM_PGDN, 0), TYPING, KEYACT_SCROLL_PAGE_DOWN);
	expect_act(key_sym(KEYSYM_HOME, 0), TYPING, KEYACT_SCROLL_TOP);
	expect_act(key_sym(KEYSYM_END, 0), TYPING, KEYACT_SCROLL_BOTTOM);
	expect_act(key_char('c', KEYMOD_ALT), TYPING, KEYACT_COPY);
	expect_act(key_char('o', KEYMOD_ALT), TYPING, KEYACT_EXPAND);
	expect_act(key_char('z', KEYMOD_CTRL), TYPING, KEYACT_SUSPEND);
	/* approvals: y a n d, before the composer */
	unsigned appr = TYPING | BIT(KEYCTX_APPROVAL);
	expect_act(key_char('y', 0), appr, KEYACT_ALLOW_ONCE);
	expect_act(key_char('a', 0), appr, KEYACT_ALLOW_SESSION);
	expect_act(key_char('n', 0), appr, KEYACT_DENY);
	expect_act(key_char('d', 0), appr, KEYACT_DENY_NOTE);
	expect_act(key_char('y', 0), TYPING, KEYACT_NONE);
	/* search and help */
	unsigned search = TYPING | BIT(KEYCTX_SEARCH);
	expect_act(key_sym(KEYSYM_ENTER, 0), search, KEYACT_SEARCH_NEXT);
	expect_act(key_sym(KEYSYM_ESC, 0), search | BIT(KEYCTX_TURN), KEYACT_CLOSE);
	expect_act(key_char('q', 0), BIT(KEYCTX_HELP) | BIT(KEYCTX_GLOBAL), KEYACT_CLOSE);
	expect_act(fkey(1), BIT(KEYCTX_HELP) | BIT(KEYCTX_GLOBAL), KEYACT_CLOSE);
	/* nothing active: nothing bound */
	expect_act(key_sym(KEYSYM_ENTER, 0), 0, KEYACT_NONE);
}

/* From the terminal's bytes to the action: the decoder's keys are the
 * table's keys. */
static void test_decoded_keys_find_their_entries(void **state)
{
	(void)state;
	static const struct {
		const char *bytes;
		enum keyact act;
	} cases[] = {
		{"\r", KEYACT_SEND},	      {"\x1b\r", KEYACT_NEWLINE},	 {"\n", KEYACT_NEWLINE},
		{"\x1b" "b", KEYACT_WORD_LEFT}, {"\x1b[1;5D", KEYACT_WORD_LEFT}, {"\x0b", KEYACT_KILL_TO_END},
		{"\x7f", KEYACT_BACKSPACE},   {"\x1b[3~", KEYACT_DELETE},	 {"\x1bOP", KEYACT_HELP},
		{"\x1b[5~", KEYACT_SCROLL_PAGE_UP}, {"\x1b[1;2A", KEYACT_SELECT_PREV}, {"\x07", KEYACT_EDITOR},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct keydec *d = keydec_new();
		for (const char *p = cases[i].bytes; *p; p++)
			keydec_feed(d, false, (unsigned char)*p);
		keydec_expire(d);
		struct key k;
		assert_true(keydec_next(d, &k));
		expect_act(k, TYPING, cases[i].act);
		assert_false(keydec_next(d, &k));
		keydec_free(d);
	}
}

static void test_table_is_well_formed(void **state)
{
	(void)state;
	size_t n;
	const struct keybinding *t = keytab_entries(&n);
	bool used[KEYACT_COUNT] = {false};
	for (size_t i = 0; i < n; i++) {
		char name[48];
		key_label(t[i].key, name, sizeof name);
		assert_true(t[i].ctx < KEYCTX_COUNT);
		assert_true(t[i].act > KEYACT_NONE && t[i].act < KEYACT_COUNT);
		used[t[i].act] = true;
		size_t hl = strlen(t[i].help);
		if (hl == 0 || t[i].help[hl - 1] == '.' || (t[i].help[0] >= 'A' && t[i].help[0] <= 'Z'))
			fail_msg("%s: help '%s' is not lowercase words without a final period", name, t[i].help);
		if (strchr(t[i].help, '|'))
			fail_msg("%s: help '%s' would break the table in docs/keys.md", name, t[i].help);
		for (size_t j = 0; j < i; j++) {
			if (t[j].ctx == t[i].ctx && key_equal(t[j].key, t[i].key))
				fail_msg("%s is bound twice in %s", name, keytab_ctx_title(t[i].ctx));
			/* one action, one text: the help lists its keys together */
			if (t[j].ctx == t[i].ctx && t[j].act == t[i].act && strcmp(t[j].help, t[i].help) != 0)
				fail_msg("%s: two texts for one action in %s", name, keytab_ctx_title(t[i].ctx));
		}
		/* a character a user types as text is bound only where typing
		 * does not go to the composer, or on an empty composer */
		if (t[i].key.sym == KEYSYM_CHAR && t[i].key.mods == 0)
			assert_true(t[i].ctx == KEYCTX_APPROVAL || t[i].ctx == KEYCTX_HELP || t[i].ctx == KEYCTX_EMPTY);
	}
	for (int a = KEYACT_NONE + 1; a < KEYACT_COUNT; a++)
		if (!used[a])
			fail_msg("action %d has no key", a);
	for (int c = 0; c < KEYCTX_COUNT; c++) {
		assert_true(strlen(keytab_ctx_title((enum keyctx)c)) > 0);
		const char *about = keytab_ctx_about((enum keyctx)c);
		assert_true(about[0] >= 'a' && about[0] <= 'z');
	}
}

static void test_help_and_markdown_show_every_entry(void **state)
{
	(void)state;
	struct buf help = BUF_INIT, md = BUF_INIT;
	keytab_help(&help, 20, 0);
	keytab_markdown(&md);
	size_t n;
	const struct keybinding *t = keytab_entries(&n);
	for (size_t i = 0; i < n; i++) {
		char name[48];
		key_label(t[i].key, name, sizeof name);
		assert_non_null(strstr(help.p, t[i].help));
		assert_non_null(strstr(md.p, t[i].help));
		assert_non_null(strstr(help.p, name));
		/* the row of this action in its context names the key */
		struct buf row = BUF_INIT;
		buf_printf(&row, "\n## %s\n", keytab_ctx_title(t[i].ctx));
		char *section = strstr(md.p, row.p);
		assert_non_null(section);
		buf_reset(&row);
		buf_printf(&row, " | %s |\n", t[i].help);
		char *hit = strstr(section, row.p);
		assert_non_null(hit);
		char *line = hit;
		while (line > md.p && line[-1] != '\n')
			line--;
		if (!memmem(line, (size_t)(hit - line), name, strlen(name)))
			fail_msg("docs row for '%s' lacks %s", t[i].help, name);
		buf_release(&row);
	}
	for (int c = 0; c < KEYCTX_COUNT; c++) {
		struct buf h = BUF_INIT;
		buf_printf(&h, "\n## %s\n", keytab_ctx_title((enum keyctx)c));
		assert_non_null(strstr(md.p, h.p));
		buf_release(&h);
	}
	/* keys grouped per action: "Alt-Enter, Ctrl-J" is one line */
	assert_non_null(strstr(help.p, "  Alt-Enter, Ctrl-J    insert a newline\n"));
	assert_non_null(strstr(md.p, "| Alt-Enter, Ctrl-J | insert a newline |\n"));
	buf_release(&help);
	buf_release(&md);
}

/* Line k of text (0-based), its length in *n; NULL past the end. */
static const char *nth_line(const char *text, size_t k, size_t *n)
{
	const char *p = text;
	for (; k > 0; k--) {
		p = strchr(p, '\n');
		if (!p)
			return NULL;
		p++;
	}
	if (!*p)
		return NULL;
	const char *e = strchr(p, '\n');
	*n = e ? (size_t)(e - p) : strlen(p);
	return p;
}

/* The help wrapped to a width: every line fits, and a wrapped line goes
 * on indented under where its text began (an action's description
 * column, a heading's words), its words the unwrapped line's, in order. */
static void test_help_wraps_under_its_column(void **state)
{
	(void)state;
	struct buf full = BUF_INIT;
	keytab_help(&full, 22, 0);
	static const int widths[] = {100, 78, 60};
	for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
		int width = widths[wi];
		struct buf h = BUF_INIT;
		keytab_help(&h, 22, width);
		size_t at = 0, wrapped_lines = 0;
		size_t fn;
		const char *fl;
		for (size_t fk = 0; (fl = nth_line(full.p, fk, &fn)); fk++) {
			size_t wn;
			const char *wl = nth_line(h.p, at++, &wn);
			assert_non_null(wl);
			assert_true(wn <= (size_t)width);
			/* the first part is the line's start, then whole words */
			assert_true(wn <= fn && memcmp(wl, fl, wn) == 0);
			size_t col = fn && fl[0] == ' ' ? 2 + 22 + 1 : (size_t)(strstr(fl, ": ") - fl) + 2;
			size_t done = wn;
			while (done < fn) {
				assert_int_equal(fl[done], ' ');
				done++;
				wl = nth_line(h.p, at++, &wn);
				assert_non_null(wl);
				assert_true(wn <= (size_t)width);
				assert_true(wn > col);
				for (size_t i = 0; i < col; i++)
					if (wl[i] != ' ')
						fail_msg("width %d: '%.*s' is not indented %zu", width, (int)wn, wl, col);
				assert_true(wl[col] != ' ');
				assert_true(done + wn - col <= fn && memcmp(wl + col, fl + done, wn - col) == 0);
				done += wn - col;
				wrapped_lines++;
			}
		}
		size_t n;
		assert_null(nth_line(h.p, at, &n));
		assert_true(wrapped_lines > 0); /* the widths do wrap some lines */
		buf_release(&h);
	}
	buf_release(&full);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
		struct buf md = BUF_INIT;
		keytab_markdown(&md);
		chat_cmd_markdown(&md);
		fwrite(md.p, 1, md.len, stdout);
		buf_release(&md);
		return ferror(stdout) ? 1 : 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_key_the_issue_names),
		cmocka_unit_test(test_decoded_keys_find_their_entries),
		cmocka_unit_test(test_table_is_well_formed),
		cmocka_unit_test(test_help_and_markdown_show_every_entry),
		cmocka_unit_test(test_help_wraps_under_its_column),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
