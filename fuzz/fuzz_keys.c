/* fuzz_keys.c — libFuzzer target for the chat screen's input path: the key
 * decoder (tui/key.c), the key table (tui/keytab.c) and the composer
 * (tui/composer.c), driven as the screen drives them.
 *
 * The input is a script of get_wch results and screen calls: a byte is a
 * character (0x00-0xf7, C0 and C1 included); 0xf8 c1 c2 c3 is the code point
 * c1<<16|c2<<8|c3 (surrogates and values past U+10FFFF included); 0xf9 k is
 * a KEY_* code (0401 + k); 0xfa is the escape delay passing; 0xfb w lays the
 * composer out at width w % 90 + 1; 0xfc sends (take, then history); 0xfd
 * puts the composer's text back (composer_set); 0xfe is the input pausing
 * (keydec_pause). After every key the composer must hold valid UTF-8 with
 * no control but newline and tab, every layout must keep the cursor inside
 * its width and window, and from a paste's start to the pause after its
 * end nothing but pasted text arrives (whatever end markers the paste
 * holds); a violation aborts. Run with fuzz/run.sh. */
#include "base/buf.h"
#include "tui/composer.h"
#include "tui/grapheme.h"
#include "tui/key.h"
#include "tui/keytab.h"

#include <curses.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                      \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "fuzz_keys: invariant failed: %s (%s:%d)\n", #cond, \
				__FILE__, __LINE__);                                       \
			abort();                                                           \
		}                                                                          \
	} while (0)

static void check_text(const struct composer *c)
{
	size_t len;
	char *t = composer_text(c, &len);
	REQUIRE(composer_cursor(c) <= len);
	for (size_t i = 0; i < len;) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)t + i, (utf8proc_ssize_t)(len - i), &cp);
		REQUIRE(l > 0);
		REQUIRE(cp >= 0x20 || cp == '\n' || cp == '\t');
		REQUIRE(cp != 0x7f && !(cp >= 0x80 && cp <= 0x9f) && cp != 0x202e && cp != 0x200f);
		i += (size_t)l;
	}
	free(t);
}

static void check_layout(struct composer *c, int width)
{
	struct composer_row rows[8];
	struct composer_view v;
	composer_layout(c, width, 8, rows, &v);
	REQUIRE(v.shown >= 1 && v.shown <= 8 && v.top + v.shown <= v.rows);
	REQUIRE(v.cursor_y < v.shown);
	REQUIRE(v.cursor_x >= 0 && v.cursor_x < width);
	for (size_t i = 0; i < v.shown; i++) {
		REQUIRE(rows[i].cells >= 0);
		if (rows[i].cells > width)
			REQUIRE(grapheme_next(rows[i].text, rows[i].len) == rows[i].len);
		for (size_t j = 0; j < rows[i].len; j++)
			REQUIRE((unsigned char)rows[i].text[j] >= 0x20);
	}
}

/* in_paste: a paste began and the input has not paused after its end. */
static void apply_keys(struct composer *c, struct keydec *d, bool *in_paste)
{
	struct key k;
	while (keydec_next(d, &k)) {
		size_t n;
		const char *t = keydec_text(d, &n);
		REQUIRE((k.sym == KEYSYM_PASTE_END) == (t != NULL));
		if (k.sym == KEYSYM_PASTE_BEGIN)
			*in_paste = true;
		else if (*in_paste)
			REQUIRE(k.sym == KEYSYM_PASTE_END); /* a paste never sends or edits */
		/* a control never arrives as a character to type */
		if (k.sym == KEYSYM_CHAR && !(k.mods & KEYMOD_CTRL))
			REQUIRE(k.cp >= 0x20 && k.cp != 0x7f);
		if (t) {
			composer_insert(c, t, n);
		} else {
			unsigned active = KEYCTX_BIT(KEYCTX_COMPOSER) | KEYCTX_BIT(KEYCTX_GLOBAL);
			if (composer_empty(c))
				active |= KEYCTX_BIT(KEYCTX_EMPTY);
			const struct keybinding *b = keytab_find(k, active);
			if (b)
				composer_apply(c, b->act);
			else
				composer_type(c, k);
		}
		check_text(c);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	struct composer *c = composer_new();
	struct keydec *d = keydec_new();
	bool in_paste = false;
	composer_history_add(c, "an earlier prompt\nof two lines", 30);
	for (size_t i = 0; i < size; i++) {
		uint8_t b = data[i];
		if (b < 0xf8) {
			keydec_feed(d, false, b);
		} else if (b == 0xf8 && i + 3 < size) {
			keydec_feed(d, false, (uint32_t)data[i + 1] << 16 | (uint32_t)data[i + 2] << 8 | data[i + 3]);
			i += 3;
		} else if (b == 0xf9 && i + 1 < size) {
			keydec_feed(d, true, (uint32_t)(KEY_BREAK + data[++i]));
		} else if (b == 0xfa) {
			keydec_expire(d);
		} else if (b == 0xfe) {
			keydec_pause(d);
			apply_keys(c, d, &in_paste);
			if (!keydec_pasting(d))
				in_paste = false;
		} else if (b == 0xfb && i + 1 < size) {
			check_layout(c, data[++i] % 90 + 1);
		} else if (b == 0xfc) {
			size_t len;
			char *t = composer_take(c, &len);
			REQUIRE(composer_empty(c) && !composer_edited(c));
			composer_history_add(c, t, len);
			free(t);
		} else if (b == 0xfd) {
			size_t len;
			char *t = composer_text(c, &len);
			composer_set(c, t, len);
			size_t len2;
			char *t2 = composer_text(c, &len2);
			REQUIRE(len2 == len && memcmp(t, t2, len) == 0); /* clean text stays as it is */
			free(t);
			free(t2);
		}
		apply_keys(c, d, &in_paste);
	}
	keydec_expire(d);
	keydec_pause(d);
	apply_keys(c, d, &in_paste);
	check_layout(c, 1);
	check_layout(c, 80);
	keydec_free(d);
	composer_free(c);
	return 0;
}
