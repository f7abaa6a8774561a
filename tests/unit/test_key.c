/* test_key.c — tui/key.h: the decoder turns get_wch results (characters,
 * KEY_* codes, the ESC prefix, CSI sequences, a bracketed paste) into keys,
 * and real ncurses on a pseudo-terminal delivers a paste and Alt-Up the way
 * the decoder expects. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <curses.h>
#include <fcntl.h>
#include <locale.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>
#include <utf8proc.h>

#include "base/buf.h"
#include "tui/key.h"

/* Feed s as get_wch would return its characters (UTF-8 decoded). */
static void feed_str(struct keydec *d, const char *s)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	size_t n = strlen(s);
	while (n > 0) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t len = utf8proc_iterate(p, (utf8proc_ssize_t)n, &cp);
		assert_true(len > 0);
		keydec_feed(d, false, (uint32_t)cp);
		p += len;
		n -= (size_t)len;
	}
}

/* Every key ready, as "Ctrl-A Alt-B Enter", a paste as Paste[text]. */
static char *drain(struct keydec *d)
{
	struct buf b = BUF_INIT;
	struct key k;
	buf_adds(&b, "");
	while (keydec_next(d, &k)) {
		if (b.len)
			buf_addc(&b, ' ');
		if (k.sym == KEYSYM_PASTE_END) {
			size_t len;
			const char *t = keydec_text(d, &len);
			buf_adds(&b, "Paste[");
			buf_add(&b, t, len);
			buf_adds(&b, "]");
			continue;
		}
		char name[64];
		key_label(k, name, sizeof name);
		buf_adds(&b, name);
	}
	return buf_detach(&b, NULL);
}

static void expect_keys(struct keydec *d, const char *want)
{
	char *got = drain(d);
	if (strcmp(got, want) != 0)
		fail_msg("keys '%s', expected '%s'", got, want);
	free(got);
}

/* in arrives in one burst, then the input pauses (key.h's sequence). */
static void decode(const char *in, const char *want)
{
	struct keydec *d = keydec_new();
	feed_str(d, in);
	keydec_expire(d);
	keydec_pause(d);
	expect_keys(d, want);
	keydec_free(d);
}

static void test_controls_enter_tab_backspace(void **state)
{
	(void)state;
	decode("\x01\x05\x02\x06\x0b\x15\x17\x19", "Ctrl-A Ctrl-E Ctrl-B Ctrl-F Ctrl-K Ctrl-U Ctrl-W Ctrl-Y");
	/* nonl(): Enter is CR, Ctrl-J is LF and they differ */
	decode("\r\n", "Enter Ctrl-J");
	decode("\t\x7f\x08", "Tab Backspace Backspace");
	decode("\x03\x04\x07\x1a", "Ctrl-C Ctrl-D Ctrl-G Ctrl-Z");
	/* NUL and the four controls past Z */
	struct keydec *d = keydec_new();
	keydec_feed(d, false, 0);
	feed_str(d, "\x1c\x1d\x1f a\xc3\xa9?");
	expect_keys(d, "Ctrl-Space Ctrl-\\ Ctrl-] Ctrl-_ Space a \xc3\xa9 ?");
	keydec_free(d);
}

static void test_alt_by_esc_prefix(void **state)
{
	(void)state;
	decode("\x1b" "b\x1b" "f", "Alt-B Alt-F");
	decode("\x1b\r", "Alt-Enter");
	decode("\x1b\x7f", "Alt-Backspace");
	decode("\x1b\x01", "Ctrl-Alt-A");
	struct keydec *d = keydec_new();
	keydec_feed(d, false, 0x1b);
	keydec_feed(d, true, KEY_UP);
	expect_keys(d, "Alt-Up");
	keydec_free(d);
}

static void test_lone_esc_waits_for_expire(void **state)
{
	(void)state;
	struct keydec *d = keydec_new();
	keydec_feed(d, false, 0x1b);
	assert_true(keydec_waiting(d));
	expect_keys(d, "");
	keydec_expire(d);
	assert_false(keydec_waiting(d));
	expect_keys(d, "Esc");
	/* two quick presses are two Esc keys, then typing goes on */
	feed_str(d, "\x1b\x1b");
	keydec_expire(d);
	feed_str(d, "x");
	expect_keys(d, "Esc Esc x");
	/* an ESC [ that nothing follows was Alt-[ */
	feed_str(d, "\x1b[");
	keydec_expire(d);
	expect_keys(d, "Alt-[");
	keydec_free(d);
}

static void test_csi_and_ss3_sequences(void **state)
{
	(void)state;
	decode("\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F", "Up Down Right Left Home End");
	decode("\x1b[1;3A\x1b[1;5C\x1b[1;2B\x1b[1;7D", "Alt-Up Ctrl-Right Shift-Down Ctrl-Alt-Left");
	decode("\x1b[2~\x1b[3~\x1b[3;5~\x1b[5~\x1b[6~\x1b[1~\x1b[4~", "Insert Delete Ctrl-Delete PgUp PgDn Home End");
	decode("\x1bOP\x1bOS\x1b[15~\x1b[24~\x1b[1;2P", "F1 F4 F5 F12 Shift-F1");
	decode("\x1bOA\x1bOM", "Up Enter");
	decode("\x1b[Z", "Shift-Tab");
	/* CSI u and xterm's modifyOtherKeys */
	decode("\x1b[13;3u\x1b[97;5u\x1b[27;5;13~", "Alt-Enter Ctrl-A Ctrl-Enter");
	/* ESC ESC [ A: Alt-Up as some terminals send it */
	decode("\x1b\x1b[A", "Alt-Up");
}

static void test_unknown_sequences_are_dropped_never_typed(void **state)
{
	(void)state;
	/* a device attribute reply, an SGR and an X10 mouse report, focus
	 * reports, an unknown final: none becomes text */
	decode("\x1b[?1;2c" "a" "\x1b[<0;10;5M" "b" "\x1b[M !!" "c" "\x1b[I\x1b[O" "d" "\x1b[99~" "e",
	       "a b c d e");
	/* a sequence cut by a control: the control still counts */
	decode("\x1b[1\x01", "Ctrl-A");
	/* an overlong parameter list is dropped whole */
	decode("\x1b[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1A" "z", "z");
}

static void test_ncurses_codes(void **state)
{
	(void)state;
	struct keydec *d = keydec_new();
	static const int codes[] = {KEY_UP, KEY_NPAGE, KEY_PPAGE, KEY_HOME, KEY_END, KEY_DC,
				    KEY_BACKSPACE, KEY_ENTER, KEY_BTAB, KEY_SR, KEY_F(1), KEY_F(13),
				    KEY_F(29), KEY_RESIZE};
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		keydec_feed(d, true, (uint32_t)codes[i]);
	expect_keys(d, "Up PgDn PgUp Home End Delete Backspace Enter Shift-Tab Shift-Up F1 Shift-F1 Ctrl-F5 Resize");
	/* an unknown code is dropped */
	keydec_feed(d, true, KEY_SUSPEND);
	expect_keys(d, "");
	keydec_free(d);
}

static int fake_code_of(const char *cap, void *arg)
{
	(void)arg;
	if (strcmp(cap, "kUP3") == 0)
		return 600;
	if (strcmp(cap, "kDC5") == 0)
		return 601;
	if (strcmp(cap, "kDN3") == 0)
		return 602;
	return -1;
}

static void test_extended_codes_bound_from_terminfo(void **state)
{
	(void)state;
	struct keydec *d = keydec_new();
	keydec_bind_terminfo(d, fake_code_of, NULL);
	keydec_feed(d, true, 600);
	keydec_feed(d, true, 601);
	keydec_feed(d, true, 602);
	keydec_feed(d, true, 603);
	expect_keys(d, "Alt-Up Ctrl-Delete Alt-Down");
	keydec_free(d);
}

static void test_bracketed_paste_is_one_text(void **state)
{
	(void)state;
	/* Enter, Tab, Ctrl keys and ESC inside a paste are text, CR LF and CR
	 * become LF, and a partial end marker is text too; what follows the
	 * end before the input pauses is pasted too */
	decode("\x1b[200~hello\r\nworld\rx\ty\x01\x1b[20x\x1b[201z\x1b\x1b[201~a",
	       "PasteBegin Paste[hello\nworld\nx\ty\x01\x1b[20x\x1b[201z\x1b] Paste[\x1b[201~a]");
	decode("\x1b[200~e\xcc\x81 \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xe4\xb8\xad\x1b[201~",
	       "PasteBegin Paste[e\xcc\x81 \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xe4\xb8\xad]");
	decode("\x1b[200~\x1b[201~", "PasteBegin Paste[]");
	/* silence does not end a paste; the rest arrives later */
	struct keydec *d = keydec_new();
	feed_str(d, "\x1b[200~ab");
	keydec_expire(d);
	expect_keys(d, "PasteBegin");
	feed_str(d, "c\x1b[20");
	keydec_expire(d);
	keydec_pause(d);
	feed_str(d, "1~");
	keydec_pause(d);
	feed_str(d, "d");
	expect_keys(d, "Paste[abc] d");
	/* ncurses' KEY_ENTER inside a paste is a newline */
	feed_str(d, "\x1b[200~a");
	keydec_feed(d, true, KEY_ENTER);
	keydec_feed(d, true, KEY_UP);
	feed_str(d, "b\x1b[201~");
	expect_keys(d, "PasteBegin Paste[a\nb]");
	keydec_free(d);
}

/* A paste's end is final only once the input pauses after it: a paste
 * that holds the end marker itself (tmux passes it through) never sends,
 * whatever follows the faked end. */
static void test_paste_end_is_final_only_after_a_pause(void **state)
{
	(void)state;
	/* the faked end, then CR: kept as text, the CR a newline, never Enter */
	decode("\x1b[200~text\x1b[201~\rMORE\x1b[201~", "PasteBegin Paste[text] Paste[\x1b[201~\nMORE]");
	decode("\x1b[200~text\x1b[201~\r\x1b[201~", "PasteBegin Paste[text] Paste[\x1b[201~\n]");
	decode("\x1b[200~a\x1b[201~\x1b[201~", "PasteBegin Paste[a] Paste[\x1b[201~]");
	/* keys and sequences after it are text too, and its own end need not come */
	decode("\x1b[200~a\x1b[201~b\r\x03\x1b[A\x04", "PasteBegin Paste[a] Paste[\x1b[201~b\n\x03\x1b[A\x04]");
	/* a partial marker at the pause is text */
	decode("\x1b[200~a\x1b[201~\x1b[20", "PasteBegin Paste[a] Paste[\x1b[201~\x1b[20]");
	/* a second paste right behind the first: both markers between them go */
	decode("\x1b[200~a\x1b[201~\x1b[200~b\x1b[201~", "PasteBegin Paste[a] Paste[b]");
	decode("\x1b[200~a\x1b[200~b\x1b[201~", "PasteBegin Paste[ab]");

	/* ... and the second lasts until its end marker, whatever the pauses */
	struct keydec *d = keydec_new();
	feed_str(d, "\x1b[200~a\x1b[201~\x1b[200~b");
	keydec_pause(d);
	assert_true(keydec_pasting(d));
	feed_str(d, "\rc");
	keydec_pause(d);
	feed_str(d, "\x1b[201~");
	keydec_pause(d);
	expect_keys(d, "PasteBegin Paste[a] Paste[b\nc]");
	keydec_free(d);

	d = keydec_new();
	feed_str(d, "\x1b[200~one");
	assert_true(keydec_pasting(d));
	assert_false(keydec_paste_ending(d));
	keydec_pause(d); /* a paste without its end goes on */
	assert_true(keydec_pasting(d));
	feed_str(d, "\x1b[201~");
	assert_true(keydec_pasting(d)); /* still read as a paste (keypad off) */
	assert_true(keydec_paste_ending(d));
	assert_false(keydec_waiting(d));
	keydec_expire(d); /* the escape delay changes nothing here */
	assert_true(keydec_paste_ending(d));
	expect_keys(d, "PasteBegin Paste[one]"); /* shown at once, before the pause */
	keydec_pause(d);
	assert_false(keydec_pasting(d));
	assert_false(keydec_paste_ending(d));
	expect_keys(d, "");
	/* after the pause, Enter is Enter */
	feed_str(d, "\r");
	expect_keys(d, "Enter");
	keydec_free(d);
}

static void test_paste_of_one_megabyte(void **state)
{
	(void)state;
	struct keydec *d = keydec_new();
	feed_str(d, "\x1b[200~");
	size_t n = 1 << 20;
	for (size_t i = 0; i < n; i++)
		keydec_feed(d, false, i % 64 == 63 ? '\r' : 'a' + (uint32_t)(i % 26));
	feed_str(d, "\x1b[201~");
	struct key k;
	assert_true(keydec_next(d, &k));
	assert_int_equal(k.sym, KEYSYM_PASTE_BEGIN);
	assert_true(keydec_next(d, &k));
	assert_int_equal(k.sym, KEYSYM_PASTE_END);
	size_t len;
	const char *t = keydec_text(d, &len);
	assert_int_equal(len, n);
	assert_int_equal(t[63], '\n');
	assert_int_equal(t[0], 'a');
	assert_false(keydec_next(d, &k));
	assert_null(keydec_text(d, &len));
	keydec_free(d);
}

static void test_labels(void **state)
{
	(void)state;
	char s[32];
	assert_int_equal(key_label(key_char('a', KEYMOD_CTRL), s, sizeof s), 6);
	assert_string_equal(s, "Ctrl-A");
	key_label(key_sym(KEYSYM_ENTER, KEYMOD_ALT), s, sizeof s);
	assert_string_equal(s, "Alt-Enter");
	struct key f = key_sym(KEYSYM_F, 0);
	f.cp = 1;
	key_label(f, s, sizeof s);
	assert_string_equal(s, "F1");
	key_label(key_char('B', KEYMOD_ALT), s, sizeof s);
	assert_string_equal(s, "Alt-Shift-B");
	key_label(key_char(' ', 0), s, sizeof s);
	assert_string_equal(s, "Space");
	/* truncated like snprintf */
	assert_int_equal(key_label(key_sym(KEYSYM_BACKSPACE, KEYMOD_CTRL | KEYMOD_ALT), s, 6), 18);
	assert_string_equal(s, "Ctrl-");
	assert_true(key_equal(key_char('j', KEYMOD_CTRL), key_char('j', KEYMOD_CTRL)));
	assert_false(key_equal(key_char('j', KEYMOD_CTRL), key_char('j', 0)));
}

/* ---- real ncurses on a pseudo-terminal ---- */

static int tinfo_code_of(const char *cap, void *arg)
{
	(void)arg;
	char *s = tigetstr(cap);
	if (s == NULL || s == (char *)-1)
		return -1;
	return key_defined(s);
}

/* Write bytes to the terminal, read every get_wch result, let the escape
 * delay pass, and return the keys. */
static char *through_ncurses(int master, struct keydec *d, const char *bytes)
{
	assert_int_equal(write(master, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
	for (;;) {
		wint_t wc;
		int rc = get_wch(&wc);
		if (rc == ERR)
			break;
		keydec_feed(d, rc == KEY_CODE_YES, (uint32_t)wc);
		/* inside a paste ncurses must not turn text into keys */
		keypad(stdscr, !keydec_pasting(d));
	}
	keydec_expire(d);
	keydec_pause(d); /* get_wch waited its timeout: the input paused */
	keypad(stdscr, !keydec_pasting(d));
	char junk[4096];
	while (read(master, junk, sizeof junk) > 0) /* what ncurses drew */
		;
	return drain(d);
}

/* The calling sequence key.h gives: keypad off while a paste lasts, so a
 * sequence inside it (here Delete's) stays text. */
static void test_real_ncurses_passes_paste_and_alt_up(void **state)
{
	(void)state;
	int master, slave;
	/* get_wch decodes UTF-8 only under a UTF-8 locale, as the screen sets */
	bool utf8 = setlocale(LC_CTYPE, "C.UTF-8") != NULL;
	if (openpty(&master, &slave, NULL, NULL, NULL) != 0)
		skip();
	fcntl(master, F_SETFL, O_NONBLOCK);
	FILE *f = fdopen(slave, "r+");
	assert_non_null(f);
	SCREEN *scr = newterm("xterm-256color", f, f);
	if (scr == NULL) { /* no terminfo entry here: nothing to check against */
		fclose(f);
		close(master);
		skip();
	}
	set_term(scr);
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	set_escdelay(25);
	timeout(150);
	struct keydec *d = keydec_new();
	keydec_bind_terminfo(d, tinfo_code_of, NULL);
	struct { const char *in, *want; } cases[] = {
		{"\x1b[200~one\rtwo\x1b[3~\x1b[201~", "PasteBegin Paste[one\ntwo\x1b[3~]"},
		/* a paste that fakes its end: the CR after it is a newline */
		{"\x1b[200~a\x1b[201~\rb\x1b[201~", "PasteBegin Paste[a] Paste[\x1b[201~\nb]"},
		{"\x1b[1;3A\x1b[A\x1b[3;5~", "Alt-Up Up Ctrl-Delete"},
		{"\r\n\x01", "Enter Ctrl-J Ctrl-A"},
		{"\x1b" "b", "Alt-B"},
		{"\x1b", "Esc"},
		{"\xe4\xb8\xad\xc3\xa9", "\xe4\xb8\xad \xc3\xa9"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0] - !utf8; i++) {
		char *got = through_ncurses(master, d, cases[i].in);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: keys '%s', expected '%s'", i, got, cases[i].want);
		free(got);
	}
	keydec_free(d);
	endwin();
	delscreen(scr);
	fclose(f);
	close(master);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_controls_enter_tab_backspace),
		cmocka_unit_test(test_alt_by_esc_prefix),
		cmocka_unit_test(test_lone_esc_waits_for_expire),
		cmocka_unit_test(test_csi_and_ss3_sequences),
		cmocka_unit_test(test_unknown_sequences_are_dropped_never_typed),
		cmocka_unit_test(test_ncurses_codes),
		cmocka_unit_test(test_extended_codes_bound_from_terminfo),
		cmocka_unit_test(test_bracketed_paste_is_one_text),
		cmocka_unit_test(test_paste_end_is_final_only_after_a_pause),
		cmocka_unit_test(test_paste_of_one_megabyte),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_real_ncurses_passes_paste_and_alt_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
