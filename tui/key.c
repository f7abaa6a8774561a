/* key.c — key values and the decoder from get_wch results (key.h). The
 * decoder is a small state machine: ground, after ESC, inside a CSI or SS3
 * sequence, skipping an X10 mouse report, inside a bracketed paste. Keys
 * it cannot name (unknown sequences, mouse reports it did not ask for) are
 * dropped rather than passed on as text: an ESC must never reach the
 * composer as a character typed. */
#include "tui/key.h"

#include "base/buf.h"
#include "base/utf8.h"
#include "base/xalloc.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct key key_char(uint32_t cp, unsigned mods)
{
	return (struct key){.cp = cp, .sym = KEYSYM_CHAR, .mods = (uint8_t)mods};
}

struct key key_sym(enum keysym sym, unsigned mods)
{
	return (struct key){.cp = 0, .sym = (uint8_t)sym, .mods = (uint8_t)mods};
}

bool key_equal(struct key a, struct key b)
{
	return a.sym == b.sym && a.mods == b.mods && a.cp == b.cp;
}

static const char *const sym_names[KEYSYM_COUNT] = {
	[KEYSYM_ENTER] = "Enter",	    [KEYSYM_TAB] = "Tab",	  [KEYSYM_BACKSPACE] = "Backspace",
	[KEYSYM_DELETE] = "Delete",	    [KEYSYM_INSERT] = "Insert",	  [KEYSYM_ESC] = "Esc",
	[KEYSYM_UP] = "Up",		    [KEYSYM_DOWN] = "Down",	  [KEYSYM_LEFT] = "Left",
	[KEYSYM_RIGHT] = "Right",	    [KEYSYM_HOME] = "Home",	  [KEYSYM_END] = "End",
	[KEYSYM_PGUP] = "PgUp",		    [KEYSYM_PGDN] = "PgDn",	  [KEYSYM_F] = "F",
	[KEYSYM_PASTE_BEGIN] = "PasteBegin", [KEYSYM_PASTE_END] = "PasteEnd", [KEYSYM_RESIZE] = "Resize",
	[KEYSYM_MOUSE] = "Mouse",
};

size_t key_label(struct key k, char *out, size_t cap)
{
	struct buf b = BUF_INIT;
	/* letters with Ctrl or Alt are named by their capital, as keyboards
	 * show them; Alt with a capital is Alt-Shift */
	if (k.sym == KEYSYM_CHAR && (k.mods & KEYMOD_ALT) && k.cp >= 'A' && k.cp <= 'Z') {
		k.mods |= KEYMOD_SHIFT;
		k.cp += 'a' - 'A';
	}
	if (k.mods & KEYMOD_CTRL)
		buf_adds(&b, "Ctrl-");
	if (k.mods & KEYMOD_ALT)
		buf_adds(&b, "Alt-");
	if (k.mods & KEYMOD_SHIFT)
		buf_adds(&b, "Shift-");
	if (k.sym == KEYSYM_CHAR) {
		if (k.cp == ' ') {
			buf_adds(&b, "Space");
		} else if (k.cp < 0x20 || k.cp == 0x7f) {
			buf_printf(&b, "U+%04X", (unsigned)k.cp);
		} else {
			char u[4];
			uint32_t cp = (k.mods & (KEYMOD_CTRL | KEYMOD_ALT)) && k.cp >= 'a' && k.cp <= 'z' ? k.cp - 32 : k.cp;
			buf_add(&b, u, utf8_encode(cp, u));
		}
	} else if (k.sym < KEYSYM_COUNT && sym_names[k.sym]) {
		buf_adds(&b, sym_names[k.sym]);
		if (k.sym == KEYSYM_F)
			buf_add_int(&b, k.cp);
	} else {
		buf_adds(&b, "?");
	}
	size_t n = b.len;
	if (cap > 0) {
		size_t c = n < cap ? n : cap - 1;
		memcpy(out, b.p, c);
		out[c] = '\0';
	}
	buf_release(&b);
	return n;
}

/* ---- decoder ---- */

enum state {
	ST_GROUND,
	ST_ESC,	  /* ESC seen (esc_count of them) */
	ST_CSI,	  /* ESC [ seen, collecting up to the final byte */
	ST_SS3,	  /* ESC O seen */
	ST_MOUSE, /* an X10 mouse report: skip its three bytes */
	ST_PASTE, /* inside ESC [ 200 ~ ... ESC [ 201 ~ */
	/* A paste's end marker was read, and nothing after it yet: the end
	 * is final only once the input pauses (keydec_pause). */
	ST_PASTE_TAIL,
	/* Input came right after a paste's end, before any pause: pasted
	 * text too, up to the next end marker (then ST_PASTE_TAIL again) or
	 * the pause. */
	ST_PASTE_MORE,
};

struct event {
	struct key key;
	char *text; /* a paste's text, owned; NULL otherwise */
	size_t len;
};

struct binding {
	int code;
	struct key key;
};

struct keydec {
	enum state st;
	int esc_count;	 /* ESCs in a row before the sequence (2: Alt via ESC ESC) */
	char seq[32];	 /* the CSI bytes after ESC [ */
	size_t seq_len;
	bool seq_overflow;
	int mouse_left;
	struct buf paste;
	size_t end_match; /* bytes of a marker (ESC [ 20x ~) matched inside a paste */
	char marker;	  /* its x: '0' (a start inside a paste) or '1' (an end) */
	bool end_was_text; /* ST_PASTE_MORE: the end marker before it was pasted text */
	bool paste_cr;	  /* the last pasted character was CR */
	struct event *q;
	size_t q_head, q_len, q_cap;
	char *cur_text; /* the text of the event keydec_next returned last */
	size_t cur_len;
	struct binding *binds;
	size_t n_binds;
};

struct keydec *keydec_new(void)
{
	struct keydec *d = xcalloc(1, sizeof *d);
	buf_init(&d->paste);
	return d;
}

void keydec_free(struct keydec *d)
{
	if (!d)
		return;
	for (size_t i = d->q_head; i < d->q_len; i++)
		free(d->q[i].text);
	free(d->q);
	free(d->cur_text);
	free(d->binds);
	buf_release(&d->paste);
	free(d);
}

void keydec_bind(struct keydec *d, int code, struct key k)
{
	for (size_t i = 0; i < d->n_binds; i++) {
		if (d->binds[i].code == code) {
			d->binds[i].key = k;
			return;
		}
	}
	d->binds = xrealloc(d->binds, (d->n_binds + 1) * sizeof *d->binds);
	d->binds[d->n_binds++] = (struct binding){code, k};
}

void keydec_bind_terminfo(struct keydec *d, int (*code_of)(const char *cap, void *arg), void *arg)
{
	/* xterm's names: the key's cap plus the modifier parameter 2..8. */
	static const struct {
		const char *cap;
		enum keysym sym;
	} caps[] = {
		{"kUP", KEYSYM_UP},   {"kDN", KEYSYM_DOWN},  {"kLFT", KEYSYM_LEFT}, {"kRIT", KEYSYM_RIGHT},
		{"kHOM", KEYSYM_HOME}, {"kEND", KEYSYM_END}, {"kPRV", KEYSYM_PGUP}, {"kNXT", KEYSYM_PGDN},
		{"kIC", KEYSYM_INSERT}, {"kDC", KEYSYM_DELETE},
	};
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
		for (int m = 2; m <= 8; m++) {
			char name[16];
			snprintf(name, sizeof name, "%s%d", caps[i].cap, m);
			int code = code_of(name, arg);
			if (code > 0)
				keydec_bind(d, code, key_sym(caps[i].sym, (unsigned)(m - 1)));
		}
	}
}

static void push_event(struct keydec *d, struct key k, char *text, size_t len)
{
	if (d->q_head == d->q_len)
		d->q_head = d->q_len = 0;
	if (d->q_len == d->q_cap) {
		if (d->q_head > 0) {
			memmove(d->q, d->q + d->q_head, (d->q_len - d->q_head) * sizeof *d->q);
			d->q_len -= d->q_head;
			d->q_head = 0;
		}
		if (d->q_len == d->q_cap) {
			d->q_cap = d->q_cap ? 2 * d->q_cap : 16;
			d->q = xrealloc(d->q, d->q_cap * sizeof *d->q);
		}
	}
	d->q[d->q_len++] = (struct event){k, text, len};
}

static void push(struct keydec *d, struct key k)
{
	push_event(d, k, NULL, 0);
}

/* A character outside any sequence, with extra modifiers (Alt after ESC). */
static void ground_char(struct keydec *d, uint32_t c, unsigned mods)
{
	if (c == '\r')
		push(d, key_sym(KEYSYM_ENTER, mods));
	else if (c == '\t')
		push(d, key_sym(KEYSYM_TAB, mods));
	else if (c == 8 || c == 0x7f)
		push(d, key_sym(KEYSYM_BACKSPACE, mods));
	else if (c == 0)
		push(d, key_char(' ', mods | KEYMOD_CTRL));
	else if (c < 27) /* Ctrl-A .. Ctrl-Z, Ctrl-J (LF) included */
		push(d, key_char('a' + c - 1, mods | KEYMOD_CTRL));
	else if (c < 0x20) /* Ctrl-\ Ctrl-] Ctrl-^ Ctrl-_ */
		push(d, key_char(c + 0x40, mods | KEYMOD_CTRL));
	else
		push(d, key_char(c, mods));
}

/* A KEY_* code from ncurses (or a bound extended one). */
static void ground_code(struct keydec *d, uint32_t code, unsigned mods)
{
	static const struct {
		int code;
		enum keysym sym;
		unsigned mods;
	} codes[] = {
		{KEY_UP, KEYSYM_UP, 0},
		{KEY_DOWN, KEYSYM_DOWN, 0},
		{KEY_LEFT, KEYSYM_LEFT, 0},
		{KEY_RIGHT, KEYSYM_RIGHT, 0},
		{KEY_HOME, KEYSYM_HOME, 0},
		{KEY_END, KEYSYM_END, 0},
		{KEY_PPAGE, KEYSYM_PGUP, 0},
		{KEY_NPAGE, KEYSYM_PGDN, 0},
		{KEY_DC, KEYSYM_DELETE, 0},
		{KEY_IC, KEYSYM_INSERT, 0},
		{KEY_BACKSPACE, KEYSYM_BACKSPACE, 0},
		{KEY_ENTER, KEYSYM_ENTER, 0},
		{KEY_BTAB, KEYSYM_TAB, KEYMOD_SHIFT},
		{KEY_SR, KEYSYM_UP, KEYMOD_SHIFT},
		{KEY_SF, KEYSYM_DOWN, KEYMOD_SHIFT},
		{KEY_SLEFT, KEYSYM_LEFT, KEYMOD_SHIFT},
		{KEY_SRIGHT, KEYSYM_RIGHT, KEYMOD_SHIFT},
		{KEY_SHOME, KEYSYM_HOME, KEYMOD_SHIFT},
		{KEY_SEND, KEYSYM_END, KEYMOD_SHIFT},
		{KEY_SPREVIOUS, KEYSYM_PGUP, KEYMOD_SHIFT},
		{KEY_SNEXT, KEYSYM_PGDN, KEYMOD_SHIFT},
		{KEY_SDC, KEYSYM_DELETE, KEYMOD_SHIFT},
		{KEY_SIC, KEYSYM_INSERT, KEYMOD_SHIFT},
		{KEY_RESIZE, KEYSYM_RESIZE, 0},
		{KEY_MOUSE, KEYSYM_MOUSE, 0},
	};
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		if ((uint32_t)codes[i].code == code) {
			push(d, key_sym(codes[i].sym, codes[i].mods | mods));
			return;
		}
	}
	if (code >= (uint32_t)KEY_F(1) && code <= (uint32_t)KEY_F(63)) {
		/* terminfo's kf13.. are F1.. with Shift, Ctrl, Ctrl-Shift, Alt,
		 * Alt-Shift in blocks of twelve, as xterm sends them. */
		static const unsigned block_mods[] = {
			0, KEYMOD_SHIFT, KEYMOD_CTRL, KEYMOD_CTRL | KEYMOD_SHIFT, KEYMOD_ALT, KEYMOD_ALT | KEYMOD_SHIFT,
		};
		uint32_t n = code - (uint32_t)KEY_F(1);
		struct key k = key_sym(KEYSYM_F, block_mods[n / 12] | mods);
		k.cp = n % 12 + 1;
		push(d, k);
		return;
	}
	for (size_t i = 0; i < d->n_binds; i++) {
		if ((uint32_t)d->binds[i].code == code) {
			struct key k = d->binds[i].key;
			k.mods |= (uint8_t)mods;
			push(d, k);
			return;
		}
	}
	/* any other code (KEY_SUSPEND, KEY_CANCEL, ...): nothing the screen uses */
}

/* The modifier parameter of a CSI sequence ("1;3" -> Alt). */
static unsigned csi_mods(const int *p, int np, int at)
{
	return at < np && p[at] > 1 ? (unsigned)(p[at] - 1) & 7 : 0;
}

static void csi_final(struct keydec *d, char final)
{
	int p[4] = {0};
	int np = 0;
	bool private_ = false;
	for (size_t i = 0; i < d->seq_len; i++) {
		char c = d->seq[i];
		if (c >= '0' && c <= '9') {
			if (np == 0)
				np = 1;
			if (np <= 4 && p[np - 1] < 100000)
				p[np - 1] = p[np - 1] * 10 + (c - '0');
		} else if (c == ';') {
			np = np == 0 ? 2 : np + 1;
		} else if (c == '<' || c == '?' || c == '>' || c == '=') {
			private_ = true;
		}
	}
	if (np > 4)
		np = 4;
	if (private_ || d->seq_overflow)
		return; /* SGR mouse reports, replies to queries: not keys */
	enum keysym sym = KEYSYM_COUNT;
	switch (final) {
	case 'A': sym = KEYSYM_UP; break;
	case 'B': sym = KEYSYM_DOWN; break;
	case 'C': sym = KEYSYM_RIGHT; break;
	case 'D': sym = KEYSYM_LEFT; break;
	case 'H': sym = KEYSYM_HOME; break;
	case 'F': sym = KEYSYM_END; break;
	case 'Z': push(d, key_sym(KEYSYM_TAB, KEYMOD_SHIFT)); return;
	case 'P': case 'Q': case 'R': case 'S': {
		struct key k = key_sym(KEYSYM_F, csi_mods(p, np, 1));
		k.cp = (uint32_t)(final - 'P' + 1);
		push(d, k);
		return;
	}
	case 'M':
		if (np == 0)
			d->st = ST_MOUSE, d->mouse_left = 3;
		return;
	case 'u': /* CSI code ; mods u (fixterms, kitty) */
		if (np >= 1) {
			unsigned m = csi_mods(p, np, 1);
			if (p[0] == 27)
				push(d, key_sym(KEYSYM_ESC, m));
			else
				ground_char(d, (uint32_t)p[0], m);
		}
		return;
	case '~':
		break;
	default:
		return; /* focus reports and the like */
	}
	if (sym != KEYSYM_COUNT) {
		push(d, key_sym(sym, csi_mods(p, np, 1)));
		return;
	}
	unsigned m = csi_mods(p, np, 1);
	switch (np ? p[0] : 0) {
	case 1: case 7: push(d, key_sym(KEYSYM_HOME, m)); return;
	case 4: case 8: push(d, key_sym(KEYSYM_END, m)); return;
	case 2: push(d, key_sym(KEYSYM_INSERT, m)); return;
	case 3: push(d, key_sym(KEYSYM_DELETE, m)); return;
	case 5: push(d, key_sym(KEYSYM_PGUP, m)); return;
	case 6: push(d, key_sym(KEYSYM_PGDN, m)); return;
	case 27: /* xterm modifyOtherKeys: CSI 27 ; mods ; code ~ */
		if (np >= 3)
			ground_char(d, (uint32_t)p[2], csi_mods(p, np, 1));
		return;
	case 200:
		d->st = ST_PASTE;
		d->end_match = 0;
		d->paste_cr = false;
		buf_reset(&d->paste);
		push(d, key_sym(KEYSYM_PASTE_BEGIN, 0));
		return;
	default:
		break;
	}
	/* F-keys: 11..15 F1..F5, 17..21 F6..F10, 23 24 F11 F12 */
	static const int fnum[] = {11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 23, 24};
	for (int i = 0; i < 12; i++) {
		if (np && p[0] == fnum[i]) {
			struct key k = key_sym(KEYSYM_F, m);
			k.cp = (uint32_t)i + 1;
			push(d, k);
			return;
		}
	}
}

static void ss3_final(struct keydec *d, uint32_t c)
{
	switch (c) {
	case 'A': push(d, key_sym(KEYSYM_UP, 0)); break;
	case 'B': push(d, key_sym(KEYSYM_DOWN, 0)); break;
	case 'C': push(d, key_sym(KEYSYM_RIGHT, 0)); break;
	case 'D': push(d, key_sym(KEYSYM_LEFT, 0)); break;
	case 'H': push(d, key_sym(KEYSYM_HOME, 0)); break;
	case 'F': push(d, key_sym(KEYSYM_END, 0)); break;
	case 'M': push(d, key_sym(KEYSYM_ENTER, 0)); break;
	case 'P': case 'Q': case 'R': case 'S': {
		struct key k = key_sym(KEYSYM_F, 0);
		k.cp = c - 'P' + 1;
		push(d, k);
		break;
	}
	default: break;
	}
}

/* An end marker that turned out to be pasted text goes into the text as
 * the terminal sent it (the screen shows its ESC as ^[). */
static void keep_faked_end(struct keydec *d)
{
	if (d->end_was_text) {
		d->end_was_text = false;
		buf_adds(&d->paste, "\033[201~");
	}
}

static void paste_add(struct keydec *d, uint32_t c)
{
	char u[4];
	keep_faked_end(d);
	if (c == '\n' && d->paste_cr) { /* CR LF: the LF was already added for CR */
		d->paste_cr = false;
		return;
	}
	d->paste_cr = c == '\r';
	if (c == '\r')
		c = '\n';
	buf_add(&d->paste, u, utf8_encode(c, u));
}

/* The pasted text so far as one PASTE_END (a paste's end, or what came
 * after it before the pause). */
static void paste_flush(struct keydec *d)
{
	size_t len = 0;
	char *text = buf_detach(&d->paste, &len);
	push_event(d, key_sym(KEYSYM_PASTE_END, 0), text, len);
}

/* A partial marker was text after all. */
static void paste_unmatch(struct keydec *d)
{
	static const char head[] = "\033[20";
	for (size_t i = 0; i < d->end_match; i++)
		paste_add(d, i < sizeof head - 1 ? (unsigned char)head[i] : (unsigned char)d->marker);
	d->end_match = 0;
}

/* One character inside a paste: text, or part of a marker. The end
 * marker ends what was pasted so far; a start marker inside a paste is
 * dropped (right after an end: a second paste, which lasts until its own
 * end marker). */
static void paste_char(struct keydec *d, uint32_t c)
{
	static const char head[] = "\033[20";
	size_t m = d->end_match;
	bool more = m < sizeof head - 1 ? c == (unsigned char)head[m]
		    : m == sizeof head - 1 ? c == '0' || c == '1'
					   : c == '~';
	if (more) {
		if (m == sizeof head - 1)
			d->marker = (char)c;
		if (++d->end_match < sizeof head + 1)
			return;
		d->end_match = 0;
		if (d->marker == '1') {
			keep_faked_end(d);
			paste_flush(d);
			d->st = ST_PASTE_TAIL;
		} else if (d->st == ST_PASTE_MORE) {
			/* A second paste right behind the first: both markers
			 * go, and like any paste it lasts until its end marker */
			d->end_was_text = false;
			d->st = ST_PASTE;
		}
		return;
	}
	paste_unmatch(d);
	if (c == 0x1b)
		d->end_match = 1;
	else
		paste_add(d, c);
}

void keydec_feed(struct keydec *d, bool is_code, uint32_t wc)
{
	switch (d->st) {
	case ST_PASTE_TAIL:
		/* More input before the pause after a paste's end: the terminal
		 * sends nothing of its own right behind a paste, so this is the
		 * paste's own text that only looked like its end (a faked end
		 * marker inside the pasted text, as tmux passes it through). */
		d->st = ST_PASTE_MORE;
		d->end_match = 0;
		d->end_was_text = true;
		buf_reset(&d->paste);
		/* fall through */
	case ST_PASTE:
	case ST_PASTE_MORE:
		if (!is_code)
			paste_char(d, wc);
		else if (wc == (uint32_t)KEY_ENTER)
			paste_char(d, '\n');
		/* other codes: ncurses matched a key sequence inside the paste;
		 * its bytes are gone, and acting on it as a key would be worse */
		return;
	case ST_MOUSE:
		if (--d->mouse_left <= 0)
			d->st = ST_GROUND;
		return;
	case ST_ESC:
		if (is_code) {
			d->st = ST_GROUND;
			ground_code(d, wc, KEYMOD_ALT);
		} else if (wc == 0x1b && d->esc_count < 2) {
			d->esc_count++;
		} else if (wc == '[' || wc == 'O') {
			d->st = wc == '[' ? ST_CSI : ST_SS3;
			d->seq_len = 0;
			d->seq_overflow = false;
		} else {
			int extra = d->esc_count - 1; /* ESC ESC x: Esc, then Alt-x */
			d->st = ST_GROUND;
			while (extra-- > 0)
				push(d, key_sym(KEYSYM_ESC, 0));
			if (wc == 0x1b)
				push(d, key_sym(KEYSYM_ESC, KEYMOD_ALT));
			else
				ground_char(d, wc, KEYMOD_ALT);
		}
		return;
	case ST_CSI:
		if (is_code || wc < 0x20 || wc > 0x7e) {
			/* not a sequence after all: drop what was collected and
			 * take this input afresh */
			d->st = ST_GROUND;
			keydec_feed(d, is_code, wc);
			return;
		}
		if (wc >= 0x40) {
			d->st = ST_GROUND;
			/* ESC ESC [ ... is the same key with Alt (some terminals) */
			size_t before = d->q_len;
			csi_final(d, (char)wc);
			if (d->esc_count > 1 && d->q_len > before && d->q[d->q_len - 1].key.sym != KEYSYM_PASTE_BEGIN)
				d->q[d->q_len - 1].key.mods |= KEYMOD_ALT;
			return;
		}
		if (d->seq_len < sizeof d->seq)
			d->seq[d->seq_len++] = (char)wc;
		else
			d->seq_overflow = true;
		return;
	case ST_SS3:
		d->st = ST_GROUND;
		if (!is_code)
			ss3_final(d, wc);
		else
			ground_code(d, wc, 0);
		return;
	case ST_GROUND:
		break;
	}
	if (is_code) {
		ground_code(d, wc, 0);
	} else if (wc == 0x1b) {
		d->st = ST_ESC;
		d->esc_count = 1;
	} else {
		ground_char(d, wc, 0);
	}
}

bool keydec_pasting(const struct keydec *d)
{
	return d->st == ST_PASTE || d->st == ST_PASTE_TAIL || d->st == ST_PASTE_MORE;
}

bool keydec_paste_ending(const struct keydec *d)
{
	return d->st == ST_PASTE_TAIL || d->st == ST_PASTE_MORE;
}

void keydec_pause(struct keydec *d)
{
	if (d->st == ST_PASTE_MORE) {
		paste_unmatch(d);
		keep_faked_end(d);
		paste_flush(d);
	}
	if (d->st == ST_PASTE_MORE || d->st == ST_PASTE_TAIL)
		d->st = ST_GROUND;
}

bool keydec_waiting(const struct keydec *d)
{
	return d->st == ST_ESC || d->st == ST_CSI || d->st == ST_SS3 || d->st == ST_MOUSE;
}

void keydec_expire(struct keydec *d)
{
	switch (d->st) {
	case ST_ESC:
		for (int i = 0; i < d->esc_count; i++)
			push(d, key_sym(KEYSYM_ESC, 0));
		break;
	case ST_CSI:
	case ST_SS3: {
		/* ESC [ or ESC O alone: the user pressed Alt-[ or Alt-O; anything
		 * collected after it was typed too */
		size_t n = d->st == ST_CSI ? d->seq_len : 0;
		char seq[sizeof d->seq];
		memcpy(seq, d->seq, n);
		push(d, key_char(d->st == ST_CSI ? '[' : 'O', KEYMOD_ALT));
		d->st = ST_GROUND;
		for (size_t i = 0; i < n; i++)
			ground_char(d, (unsigned char)seq[i], 0);
		return;
	}
	default:
		break;
	}
	if (!keydec_pasting(d))
		d->st = ST_GROUND;
}

bool keydec_next(struct keydec *d, struct key *k)
{
	free(d->cur_text);
	d->cur_text = NULL;
	d->cur_len = 0;
	if (d->q_head == d->q_len)
		return false;
	struct event *e = &d->q[d->q_head++];
	*k = e->key;
	d->cur_text = e->text;
	d->cur_len = e->len;
	if (d->q_head == d->q_len)
		d->q_head = d->q_len = 0;
	return true;
}

const char *keydec_text(const struct keydec *d, size_t *len)
{
	*len = d->cur_len;
	return d->cur_text;
}
