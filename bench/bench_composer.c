/* bench_composer.c — the chat screen's composer under a large paste (issue
 * 14: "a 1 MB paste stays responsive").
 *
 *   1. a paste of 1 MB against one of 100 KB, both of the same prose (ASCII,
 *      Chinese, tabs, newlines), each into an empty composer and laid out
 *      once at 80 x 10 as the screen does after it: time per byte of the
 *      1 MB paste over time per byte of the 100 KB one. Target: ratio < 3
 *      (linear is 1, a little more when 1 MB no longer fits the caches; a
 *      quadratic insert would give about 10).
 *   2. the same for the decoder: the paste's characters fed one by one as
 *      get_wch returns them, then the one paste event. Target: ratio < 3.
 *   3. a keystroke after the 1 MB paste: one character typed and the
 *      composer laid out again, against the same in an empty composer; the
 *      ratio says what the large text costs per key. Target: under 1 ms
 *      (a sixteenth of a 60 Hz frame).
 *   4. the same in a 1 MB single line, the cursor in its middle (the line's
 *      bytes move and it is laid out again: informational).
 *
 * Medians of --rounds=N (default 9). Exit 0 whatever the figures. */
#include "base/buf.h"
#include "base/clock.h"
#include "bench/support_bench.h"
#include "tui/composer.h"
#include "tui/key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static int rounds = 9;

static double paste_ms(const struct buf *text)
{
	double t[64];
	for (int r = 0; r < rounds; r++) {
		struct composer *c = composer_new();
		struct composer_row rows[10];
		struct composer_view v;
		uint64_t t0 = clock_mono_ns();
		composer_insert(c, text->p, text->len);
		composer_layout(c, 80, 10, rows, &v);
		t[r] = ms_since(t0);
		composer_free(c);
	}
	return median(t, (size_t)rounds);
}

static double decode_ms(const struct buf *text)
{
	/* the code points get_wch would return, decoded beforehand */
	utf8proc_int32_t *cps = malloc((text->len + 16) * sizeof *cps);
	size_t n = 0;
	for (size_t i = 0; i < text->len;) {
		utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)text->p + i,
						      (utf8proc_ssize_t)(text->len - i), &cps[n]);
		if (l <= 0)
			die("prose is not UTF-8 at %zu", i);
		i += (size_t)l;
		n++;
	}
	double t[64];
	for (int r = 0; r < rounds; r++) {
		struct keydec *d = keydec_new();
		uint64_t t0 = clock_mono_ns();
		const char *begin = "\033[200~", *end = "\033[201~";
		for (const char *p = begin; *p; p++)
			keydec_feed(d, false, (uint32_t)*p);
		for (size_t i = 0; i < n; i++)
			keydec_feed(d, false, (uint32_t)cps[i]);
		for (const char *p = end; *p; p++)
			keydec_feed(d, false, (uint32_t)*p);
		struct key k;
		size_t len = 0;
		while (keydec_next(d, &k))
			if (k.sym == KEYSYM_PASTE_END)
				keydec_text(d, &len);
		t[r] = ms_since(t0);
		if (len == 0)
			die("no paste decoded");
		keydec_free(d);
	}
	free(cps);
	return median(t, (size_t)rounds);
}

/* The median time of one key typed and laid out, in microseconds. */
static double key_us(struct composer *c)
{
	struct composer_row rows[10];
	struct composer_view v;
	composer_layout(c, 80, 10, rows, &v);
	double t[64];
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = clock_mono_ns();
		for (int i = 0; i < 100; i++) {
			composer_insert(c, "x", 1);
			composer_layout(c, 80, 10, rows, &v);
		}
		t[r] = ms_since(t0) * 1000.0 / 100;
	}
	return median(t, (size_t)rounds);
}

static void ratio_row(const char *metric, double big_ms, size_t big, double small_ms, size_t small)
{
	char o[32], r[32];
	double per_big = big_ms / (double)big, per_small = small_ms / (double)small;
	snprintf(o, sizeof o, "%.1f ms", big_ms);
	snprintf(r, sizeof r, "%.2f ms", small_ms);
	double ratio = per_big / per_small;
	add_row(metric, o, r, ratio, true, "< 3", ratio < 3 ? "PASS" : "MISS");
}

int main(int argc, char **argv)
{
	bench_set_name("bench_composer");
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--rounds=", 9) == 0)
			rounds = atoi(argv[i] + 9);
		else
			die("unknown option '%s'", argv[i]);
	}
	if (rounds < 1 || rounds > 64)
		die("--rounds must be 1..64");
	struct buf big = BUF_INIT, small = BUF_INIT;
	rng_seed(14);
	gen_prose(&big, 1 << 20, true);
	rng_seed(14);
	gen_prose(&small, 100 << 10, true);

	double p_small = paste_ms(&small), p_big = paste_ms(&big);
	ratio_row("1. paste 1 MB vs 100 KB, per byte", p_big, big.len, p_small, small.len);
	double d_small = decode_ms(&small), d_big = decode_ms(&big);
	ratio_row("2. decode 1 MB paste vs 100 KB, per byte", d_big, big.len, d_small, small.len);

	struct composer *empty = composer_new();
	struct composer *pasted = composer_new();
	composer_insert(pasted, big.p, big.len);
	double k_empty = key_us(empty), k_big = key_us(pasted);
	char o[32], r[32];
	snprintf(o, sizeof o, "%.1f us", k_big);
	snprintf(r, sizeof r, "%.1f us", k_empty);
	add_row("3. key + layout after 1 MB paste vs empty", o, r, k_big / k_empty, true, "< 1000 us",
		k_big < 1000 ? "PASS" : "MISS");

	for (size_t i = 0; i < big.len; i++)
		if (big.p[i] == '\n')
			big.p[i] = ' ';
	struct composer *line = composer_new();
	composer_insert(line, big.p, big.len);
	composer_set_cursor(line, big.len / 2);
	double k_line = key_us(line);
	snprintf(o, sizeof o, "%.1f us", k_line);
	add_row("4. key mid 1 MB single line (info)", o, r, k_line / k_empty, true, "(info)", "");

	composer_free(empty);
	composer_free(pasted);
	composer_free(line);
	buf_release(&big);
	buf_release(&small);
	print_table("100 KB / empty", 44, 8, 10);
	return 0;
}
