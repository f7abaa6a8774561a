/* bench_render.c — the transcript renderer streaming an answer: a
 * generated 20,000-word markdown answer (paragraphs, headings, nested
 * lists, fenced code, tables, quotes, some CJK) appended in pieces of about
 * four words, lines read after each piece as the screen reads them,
 * against a 2,000-word answer of the same make in the same run. Only the
 * open block is parsed and rendered again per piece, so the cost per word
 * must not grow with the answer (target: long / short <= 1.5). For
 * reference: the whole long answer rendered at once, and one width change
 * of it (what a SIGWINCH costs); and one 2,000-word code block streamed
 * the same way, the case the target leaves out: an open block is parsed
 * and laid out whole for every piece, so its cost per word grows with its
 * own length.
 *
 * Options: --rounds=N (default 7), --width=N (default 100). Unknown
 * options are ignored (bench/run.sh passes the same to every bench). */
#include "base/buf.h"
#include "base/clock.h"
#include "bench/support_bench.h"
#include "tui/textmsg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void words(struct buf *b, unsigned n, size_t *count)
{
	for (unsigned i = 0; i < n; i++) {
		if (i)
			buf_addc(b, ' ');
		unsigned k = rnd_in(0, 99);
		if (k < 3)
			buf_printf(b, "**%s**", bench_words[rnd_in(0, BENCH_N_WORDS - 1)]);
		else if (k < 6)
			buf_printf(b, "`%s()`", bench_words[rnd_in(0, BENCH_N_WORDS - 1)]);
		else if (k < 7)
			buf_printf(b, "[%s](https://example.com/%s)", bench_words[rnd_in(0, BENCH_N_WORDS - 1)],
				   bench_words[rnd_in(0, BENCH_N_WORDS - 1)]);
		else if (k < 9)
			buf_adds(b, bench_zh_words[rnd_in(0, BENCH_N_ZH_WORDS - 1)]);
		else
			buf_adds(b, bench_words[rnd_in(0, BENCH_N_WORDS - 1)]);
		if (rnd_in(0, 11) == 0)
			buf_addc(b, ',');
	}
	*count += n;
}

/* A markdown answer of at least n words, the same make whatever n. */
static void gen_answer(struct buf *b, size_t n, uint64_t seed)
{
	size_t count = 0;
	rng_seed(seed);
	buf_reset(b);
	while (count < n) {
		unsigned kind = rnd_in(0, 19);
		if (kind < 2) {
			buf_adds(b, rnd_in(0, 1) ? "## " : "### ");
			words(b, rnd_in(2, 6), &count);
		} else if (kind < 5) {
			bool ordered = rnd_in(0, 1);
			unsigned items = rnd_in(3, 7);
			for (unsigned i = 0; i < items; i++) {
				if (ordered)
					buf_printf(b, "%u. ", i + 1);
				else
					buf_adds(b, "- ");
				words(b, rnd_in(4, 25), &count);
				buf_addc(b, '\n');
				if (rnd_in(0, 4) == 0) {
					buf_adds(b, ordered ? "   - " : "  - ");
					words(b, rnd_in(3, 12), &count);
					buf_addc(b, '\n');
				}
			}
		} else if (kind < 7) {
			buf_adds(b, "```c\n");
			unsigned lines = rnd_in(4, 16);
			for (unsigned i = 0; i < lines; i++) {
				buf_adds(b, rnd_in(0, 2) ? "\t" : "");
				words(b, rnd_in(2, 9), &count);
				buf_adds(b, ";\n");
			}
			buf_adds(b, "```");
		} else if (kind < 8) {
			buf_adds(b, "| name | value | note |\n|------|------:|:----:|\n");
			unsigned rows = rnd_in(2, 6);
			for (unsigned i = 0; i < rows; i++) {
				buf_adds(b, "| ");
				words(b, 1, &count);
				buf_printf(b, " | %u | ", rnd_in(1, 9999));
				words(b, rnd_in(1, 4), &count);
				buf_adds(b, " |\n");
			}
		} else if (kind < 9) {
			buf_adds(b, "> ");
			words(b, rnd_in(10, 40), &count);
		} else {
			words(b, rnd_in(30, 120), &count);
		}
		buf_adds(b, "\n\n");
	}
}

/* One fenced code block of at least n words: a long open block, which
 * is parsed and laid out again whole for every piece. */
static void gen_code(struct buf *b, size_t n, uint64_t seed)
{
	size_t count = 0;
	rng_seed(seed);
	buf_reset(b);
	buf_adds(b, "```c\n");
	while (count < n) {
		buf_adds(b, rnd_in(0, 2) ? "\t" : "");
		words(b, rnd_in(2, 9), &count);
		buf_adds(b, ";\n");
	}
	buf_adds(b, "```\n");
}

/* Streams src in pieces of four words, reading the count and the last
 * line after each; returns the ms taken. */
static double stream(const struct buf *src, int width, size_t *lines)
{
	uint64_t t0 = clock_mono_ns();
	struct textmsg *m = textmsg_new(TEXTMSG_MARKDOWN, TS_NORMAL, width);
	size_t i = 0, cells = 0;
	while (i < src->len) {
		size_t j = i;
		for (int w = 0; w < 4 && j < src->len; w++) {
			while (j < src->len && src->p[j] != ' ' && src->p[j] != '\n')
				j++;
			while (j < src->len && (src->p[j] == ' ' || src->p[j] == '\n'))
				j++;
		}
		textmsg_append(m, src->p + i, j - i);
		size_t n = textmsg_count(m);
		if (n)
			cells += (size_t)textmsg_line(m, n - 1).cells;
		i = j;
	}
	*lines = textmsg_count(m) + (cells & 0); /* cells: keep the reads */
	textmsg_free(m);
	return ms_since(t0);
}

static size_t count_words(const struct buf *b)
{
	size_t n = 0;
	for (size_t i = 0; i < b->len; i++)
		if ((i == 0 || b->p[i - 1] == ' ' || b->p[i - 1] == '\n') && b->p[i] != ' ' && b->p[i] != '\n')
			n++;
	return n;
}

int main(int argc, char **argv)
{
	int rounds = 7, width = 100;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--rounds=", 9))
			rounds = atoi(argv[i] + 9);
		else if (!strncmp(argv[i], "--width=", 8))
			width = atoi(argv[i] + 8);
	}
	if (rounds < 1)
		rounds = 1;
	bench_set_name("bench_render");
	struct buf longa = BUF_INIT, shorta = BUF_INIT;
	gen_answer(&longa, 20000, 42);
	gen_answer(&shorta, 2000, 43);
	size_t wl = count_words(&longa), ws = count_words(&shorta);
	fprintf(stderr, "bench_render: answers of %zu and %zu words (%zu and %zu bytes), width %d\n", wl,
		ws, longa.len, shorta.len, width);
	double *rl = calloc((size_t)rounds, sizeof *rl), *rs = calloc((size_t)rounds, sizeof *rs);
	double *ratio = calloc((size_t)rounds, sizeof *ratio);
	size_t lines_l = 0, lines_s = 0;
	for (int r = -1; r < rounds; r++) { /* one warm-up round */
		double s1 = stream(&shorta, width, &lines_s);
		double l = stream(&longa, width, &lines_l);
		double s2 = stream(&shorta, width, &lines_s);
		double s = (s1 + s2) / 2; /* the short one on both sides of the long */
		if (r < 0)
			continue;
		rl[r] = l * 1000.0 / (double)wl;
		rs[r] = s * 1000.0 / (double)ws;
		ratio[r] = rl[r] / rs[r];
		fprintf(stderr, "    round %d: long %.0f ms (%.2f us/word), short %.1f ms (%.2f us/word)\n",
			r + 1, l, rl[r], s, rs[r]);
	}
	double ml = median(rl, (size_t)rounds), ms = median(rs, (size_t)rounds);
	double mr = median(ratio, (size_t)rounds);
	char o[32], b[32], metric[96];
	snprintf(metric, sizeof metric, "stream %zu words in 4-word pieces vs %zu, per word", wl, ws);
	snprintf(o, sizeof o, "%.2f us", ml);
	snprintf(b, sizeof b, "%.2f us", ms);
	add_row(metric, o, b, mr, true, "<= 1.50", mr <= 1.5 ? "PASS" : "MISS");

	/* For reference: one long code block, the case the target leaves out. */
	struct buf code = BUF_INIT;
	gen_code(&code, 2000, 44);
	size_t wc = count_words(&code), lines_c = 0;
	double c = stream(&code, width, &lines_c);
	snprintf(metric, sizeof metric, "  one code block of %zu words (%zu lines), per word", wc, lines_c);
	snprintf(o, sizeof o, "%.2f us", c * 1000.0 / (double)wc);
	add_row(metric, o, b, c * 1000.0 / (double)wc / ms, true, "(info)", "-");
	buf_release(&code);

	/* For reference: the whole long answer at once, and a width change. */
	uint64_t t0 = clock_mono_ns();
	struct textmsg *m = textmsg_new(TEXTMSG_MARKDOWN, TS_NORMAL, width);
	textmsg_append(m, longa.p, longa.len);
	double whole = ms_since(t0);
	t0 = clock_mono_ns();
	textmsg_set_width(m, width - 17);
	double rewrap = ms_since(t0);
	snprintf(metric, sizeof metric, "  %zu words at once, %zu lines", wl, lines_l);
	snprintf(o, sizeof o, "%.1f ms", whole);
	add_row(metric, o, "", 0, false, "(info)", "-");
	snprintf(metric, sizeof metric, "  width change of those %zu lines", textmsg_count(m));
	snprintf(o, sizeof o, "%.1f ms", rewrap);
	add_row(metric, o, "", 0, false, "(info)", "-");
	textmsg_free(m);
	(void)lines_s;
	print_table("short", 52, 8, 8);
	free(rl), free(rs), free(ratio);
	buf_release(&longa);
	buf_release(&shorta);
	return 0;
}
