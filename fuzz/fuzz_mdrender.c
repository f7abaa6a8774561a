/* fuzz_mdrender.c — libFuzzer target for the transcript renderer
 * (tui/textmsg.c, mdrender.c, mdtable.c, wrap.c).
 *
 * The first byte of an input picks the width (2 to 129); the rest is the
 * message. It is rendered whole, as markdown and as plain text, and again
 * streamed in pieces cut at pseudo-random offsets drawn from the input
 * (characters cut too). The invariants: streaming gives exactly the lines
 * of the whole text; no line is wider than the width; every span is valid
 * UTF-8 without C0, DEL or C1 controls and measures what wrap_cells says;
 * a width change equals a fresh rendering. Run with fuzz/run.sh. */
#include "base/utf8.h"
#include "tui/textmsg.h"
#include "tui/wrap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                       \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "fuzz_mdrender: invariant failed: %s (%s:%d)\n", #cond, \
				__FILE__, __LINE__);                                        \
			abort();                                                            \
		}                                                                           \
	} while (0)

static void check_inert(const struct textmsg *m, int width)
{
	for (size_t i = 0; i < textmsg_count(m); i++) {
		struct tline l = textmsg_line(m, i);
		int sum = 0;
		for (size_t k = 0; k < l.n; k++) {
			const char *s = l.text + l.spans[k].off;
			size_t len = l.spans[k].len;
			REQUIRE(utf8_valid(s, len, NULL));
			for (size_t j = 0; j < len; j++) {
				unsigned char c = (unsigned char)s[j];
				REQUIRE(c >= 0x20 && c != 0x7f);
				REQUIRE(!(c == 0xc2 && j + 1 < len && (unsigned char)s[j + 1] < 0xa0));
			}
			REQUIRE(wrap_cells(s, len) == (int)l.spans[k].cells);
			sum += (int)l.spans[k].cells;
		}
		REQUIRE(sum == l.cells);
		REQUIRE(l.cells <= (width < 2 ? 2 : width));
	}
}

static void same_lines(const struct textmsg *a, const struct textmsg *b)
{
	REQUIRE(textmsg_count(a) == textmsg_count(b));
	for (size_t i = 0; i < textmsg_count(a); i++) {
		struct tline x = textmsg_line(a, i), y = textmsg_line(b, i);
		REQUIRE(x.n == y.n && x.cells == y.cells);
		for (size_t k = 0; k < x.n; k++) {
			REQUIRE(x.spans[k].len == y.spans[k].len);
			REQUIRE(x.spans[k].style == y.spans[k].style);
			REQUIRE(!memcmp(x.text + x.spans[k].off, y.text + y.spans[k].off, x.spans[k].len));
		}
	}
}

static void one_kind(enum textmsg_kind kind, const char *s, size_t n, int width)
{
	struct textmsg *whole = textmsg_new(kind, TS_NORMAL, width);
	textmsg_append(whole, s, n);
	check_inert(whole, width);
	struct textmsg *m = textmsg_new(kind, TS_NORMAL, width);
	uint32_t x = 2166136261u;
	for (size_t i = 0; i < n; i++)
		x = (x ^ (uint8_t)s[i]) * 16777619u;
	for (size_t i = 0; i < n;) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		size_t k = 1 + x % 24;
		if (k > n - i)
			k = n - i;
		textmsg_append(m, s + i, k);
		i += k;
	}
	same_lines(whole, m);
	/* a width change of the streamed one equals a fresh rendering */
	int w2 = 2 + (int)(x % 97);
	textmsg_set_width(m, w2);
	struct textmsg *fresh = textmsg_new(kind, TS_NORMAL, w2);
	textmsg_append(fresh, s, n);
	same_lines(fresh, m);
	check_inert(m, w2);
	textmsg_free(fresh);
	textmsg_free(m);
	textmsg_free(whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int width = 2 + data[0] % 128;
	const char *s = (const char *)data + 1;
	one_kind(TEXTMSG_MARKDOWN, s, size - 1, width);
	one_kind(TEXTMSG_PLAIN, s, size - 1, width);
	return 0;
}
