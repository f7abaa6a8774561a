/* tty.c — taking the terminal for a screen and giving it back
 * (tty.h). The restore bytes and the saved termios are kept in statics
 * so that a fatal signal's handler can put the terminal back with
 * async-signal-safe calls only. */
#include "tui/tty.h"

#include <curses.h>
#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xalloc.h"

#define ESCDELAY_MS 25 /* a lone Esc acts at once; slower links split sequences */
#define PASTE_ON "\033[?2004h"
#define PASTE_OFF "\033[?2004l"
#define MOUSE_OFF "\033[?1000l\033[?1002l\033[?1006l"

struct tty {
	int infd, outfd;
	struct buf ahead; /* keys typed before the terminal was taken */
	FILE *in, *out; /* ncurses' streams on duplicates of the descriptors */
	SCREEN *scr;
	bool colors;
};

/* ---- what a fatal signal's handler uses: set at open, cleared at close ---- */

static const int fatal_signals[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
enum { N_FATAL = sizeof fatal_signals / sizeof *fatal_signals };
static struct sigaction fatal_old[N_FATAL];
static volatile sig_atomic_t restore_armed;
static int restore_infd = -1, restore_outfd = -1;
static struct termios restore_tios;
static char restore_bytes[256];
static size_t restore_len;

static void fatal_cb(int sig)
{
	if (restore_armed) {
		restore_armed = 0;
		ssize_t w = write(restore_outfd, restore_bytes, restore_len);
		(void)w;
		tcsetattr(restore_infd, TCSANOW, &restore_tios);
	}
	/* Hand the signal to whoever had it (a sanitizer's report, or the
	 * default: a core dump); it is blocked until this handler returns. */
	for (int i = 0; i < N_FATAL; i++)
		if (fatal_signals[i] == sig)
			sigaction(sig, &fatal_old[i], NULL);
	raise(sig);
}

/* Append a terminfo capability (NULL or absent: nothing). */
static void add_cap(const char *name)
{
	char *s = tigetstr(name);
	if (!s || s == (char *)-1)
		return;
	size_t n = strlen(s);
	if (restore_len + n < sizeof restore_bytes) {
		memcpy(restore_bytes + restore_len, s, n);
		restore_len += n;
	}
}

static void add_bytes(const char *s)
{
	size_t n = strlen(s);
	if (restore_len + n < sizeof restore_bytes) {
		memcpy(restore_bytes + restore_len, s, n);
		restore_len += n;
	}
}

static void arm_restore(struct tty *t, const struct termios *saved)
{
	restore_len = 0;
	add_bytes(PASTE_OFF MOUSE_OFF);
	add_cap("sgr0");
	add_cap("cnorm");
	add_cap("rmkx");
	add_cap("rmcup");
	restore_infd = t->infd;
	restore_outfd = t->outfd;
	restore_tios = *saved;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fatal_cb;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < N_FATAL; i++)
		sigaction(fatal_signals[i], &sa, &fatal_old[i]);
	restore_armed = 1;
}

static void disarm_restore(void)
{
	restore_armed = 0;
	for (int i = 0; i < N_FATAL; i++)
		sigaction(fatal_signals[i], &fatal_old[i], NULL);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* ---- open and close ---- */

static void modes(struct tty *t)
{
	raw(); /* Ctrl-C, Ctrl-Z, Ctrl-S are keys the screen answers */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	meta(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	intrflush(stdscr, FALSE);
	leaveok(stdscr, FALSE);
	write_all(t->outfd, PASTE_ON, strlen(PASTE_ON));
}

/* Keys typed before the screen existed went through the terminal's
 * cooked mode, where Enter (CR) became LF: take them now, whole lines and
 * the unfinished one alike, with LF back to CR, so an Enter among them
 * sends as the user meant. */
static void read_ahead(struct tty *t, const struct termios *saved)
{
	struct termios raw = *saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_iflag &= ~(tcflag_t)ICRNL;
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(t->infd, TCSANOW, &raw) < 0)
		return;
	char chunk[4096];
	ssize_t r;
	while ((r = read(t->infd, chunk, sizeof chunk)) > 0)
		for (ssize_t i = 0; i < r; i++)
			buf_addc(&t->ahead, chunk[i] == '\n' && (saved->c_iflag & ICRNL) ? '\r' : chunk[i]);
}

/* The terminal type must be one terminfo knows and able to move the
 * cursor (cup): on a terminal without (TERM=dumb, a printing terminal)
 * every frame would run together on one line. Asked of terminfo alone,
 * before anything is read or written. 0, or -1 with err naming the
 * variable and its value. */
static int check_type(const char *type, int outfd, struct cerr *err)
{
	char name[96];
	if (type && *type)
		snprintf(name, sizeof name, "TERM=%s", type);
	else
		snprintf(name, sizeof name, "TERM (not set, so xterm)");
	TERMINAL *before = cur_term;
	int found = 0;
	if (setupterm(type && *type ? type : "xterm", outfd, &found) != OK) {
		set_curterm(before);
		return cerr_set(err, CERR_UNSUPPORTED, 0,
				"%s is unknown to terminfo; the chat screen needs a terminal type it knows "
				"(cairn -p works without)", name);
	}
	const char *cup = tigetstr("cup");
	bool moves = cup && cup != (char *)-1 && *cup;
	del_curterm(set_curterm(before));
	if (!moves)
		return cerr_set(err, CERR_UNSUPPORTED, 0,
				"%s cannot address the cursor; the chat screen needs one (cairn -p works without)",
				name);
	return 0;
}

struct tty *tty_open(int infd, int outfd, struct cerr *err)
{
	if (!isatty(infd) || !isatty(outfd)) {
		cerr_set(err, CERR_USAGE, 0, "the chat screen needs a terminal");
		return NULL;
	}
	const char *type = getenv("TERM");
	if (check_type(type, outfd, err) < 0)
		return NULL;
	struct termios saved;
	if (tcgetattr(infd, &saved) < 0) {
		cerr_set(err, CERR_IO, errno, "cannot read the terminal's modes");
		return NULL;
	}
	struct tty *t = xcalloc(1, sizeof *t);
	t->infd = infd;
	t->outfd = outfd;
	read_ahead(t, &saved);
	int din = dup(infd), dout = dup(outfd);
	t->in = din >= 0 ? fdopen(din, "r") : NULL;
	t->out = dout >= 0 ? fdopen(dout, "w") : NULL;
	if (!t->in || !t->out) {
		cerr_set(err, CERR_IO, errno, "cannot open the terminal");
		goto fail;
	}
	/* ncursesw draws UTF-8 (and line drawing) only in a UTF-8 locale. */
	setlocale(LC_CTYPE, "");
	t->scr = newterm(type && *type ? type : "xterm", t->out, t->in);
	if (!t->scr) { /* checked above: only a terminfo entry that went away */
		cerr_set(err, CERR_UNSUPPORTED, 0, "terminal type '%s' is unknown to terminfo",
			 type ? type : "");
		goto fail;
	}
	set_term(t->scr);
	set_escdelay(ESCDELAY_MS);
	modes(t);
	mousemask(BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
	mouseinterval(0);
	const char *nc = getenv("NO_COLOR");
	t->colors = has_colors() && !(nc && *nc);
	if (t->colors) {
		start_color();
		use_default_colors(); /* the user's own background, light or dark */
	}
	arm_restore(t, &saved);
	return t;
fail:
	if (t->in)
		fclose(t->in);
	else if (din >= 0)
		close(din);
	if (t->out)
		fclose(t->out);
	else if (dout >= 0)
		close(dout);
	tcsetattr(infd, TCSANOW, &saved);
	buf_release(&t->ahead);
	free(t);
	return NULL;
}

void tty_close(struct tty *t)
{
	if (!t)
		return;
	endwin();
	write_all(t->outfd, PASTE_OFF MOUSE_OFF, strlen(PASTE_OFF MOUSE_OFF));
	disarm_restore();
	tcsetattr(t->infd, TCSADRAIN, &restore_tios); /* endwin's, and raw's undone */
	delscreen(t->scr);
	fclose(t->in);
	fclose(t->out);
	buf_release(&t->ahead);
	free(t);
}

const char *tty_typeahead(const struct tty *t, size_t *n)
{
	*n = t->ahead.len;
	return t->ahead.p;
}

void tty_release(struct tty *t)
{
	def_prog_mode();
	endwin();
	write_all(t->outfd, PASTE_OFF MOUSE_OFF, strlen(PASTE_OFF MOUSE_OFF));
	restore_armed = 0;
}

void tty_retake(struct tty *t)
{
	reset_prog_mode();
	modes(t);
	restore_armed = 1;
	clearok(curscr, TRUE); /* what was on the terminal is gone */
}

void tty_suspend(struct tty *t)
{
	tty_release(t);
	/* Stop the whole job as the shell expects (the default action of
	 * SIGTSTP); execution continues here once it is resumed. */
	struct sigaction dfl, old;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGTSTP, &dfl, &old);
	kill(0, SIGTSTP);
	sigaction(SIGTSTP, &old, NULL);
	tty_retake(t);
}

void tty_resize(struct tty *t)
{
	struct winsize ws;
	if (ioctl(t->outfd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
		resizeterm(ws.ws_row, ws.ws_col);
}

int tty_infd(const struct tty *t)
{
	return t->infd;
}

bool tty_colors(const struct tty *t)
{
	return t->colors;
}

int tty_write(struct tty *t, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(t->outfd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

enum tty_bell tty_bell_auto(void)
{
	static const char *const shows_osc9[] = {"iTerm.app", "WezTerm", "ghostty"};
	const char *prog = getenv("TERM_PROGRAM"), *tmux = getenv("TMUX"), *sty = getenv("STY");
	if (!prog || (tmux && *tmux) || (sty && *sty))
		return TTY_BELL_BEL;
	for (size_t i = 0; i < sizeof shows_osc9 / sizeof *shows_osc9; i++)
		if (strcmp(prog, shows_osc9[i]) == 0)
			return TTY_BELL_OSC9;
	return TTY_BELL_BEL;
}
