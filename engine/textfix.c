/* textfix.c — streaming UTF-8 repair, JSON escape rewriting, piece cuts. */
#include "engine/textfix.h"
#include "base/utf8.h"

#include <stdint.h>
#include <string.h>

static const char fffd[] = "\xef\xbf\xbd";

/* How many bytes the sequence led by b takes (0: b cannot lead one), and
 * the range its second byte must fall in. Surrogates (ED A0..BF) are let
 * through here: the caller pairs them. */
static int seq_len(unsigned char b, unsigned char *lo, unsigned char *hi)
{
	*lo = 0x80, *hi = 0xbf;
	if (b >= 0xc2 && b <= 0xdf)
		return 2;
	if (b >= 0xe0 && b <= 0xef) {
		if (b == 0xe0)
			*lo = 0xa0;
		return 3;
	}
	if (b >= 0xf0 && b <= 0xf4) {
		if (b == 0xf0)
			*lo = 0x90;
		if (b == 0xf4)
			*hi = 0x8f;
		return 4;
	}
	return 0;
}

/* How many bytes of p[0..n) form a well-formed prefix of the sequence led
 * by p[0] (need: its full length). */
static size_t valid_prefix(const unsigned char *p, size_t n, int need)
{
	unsigned char lo, hi;
	seq_len(p[0], &lo, &hi);
	size_t k = 1;
	while (k < n && k < (size_t)need) {
		unsigned char a = k == 1 ? lo : 0x80, z = k == 1 ? hi : 0xbf;
		if (p[k] < a || p[k] > z)
			break;
		k++;
	}
	return k;
}

/* A 3-byte generalized sequence ED A0..AF xx is a high surrogate, ED
 * B0..BF xx a low one. */
static bool is_high(const unsigned char *p)
{
	return p[0] == 0xed && p[1] >= 0xa0 && p[1] <= 0xaf;
}

static bool is_low(const unsigned char *p)
{
	return p[0] == 0xed && p[1] >= 0xb0 && p[1] <= 0xbf;
}

static void add_cp(struct buf *out, uint32_t cp)
{
	char u[4];
	buf_add(out, u, utf8_encode(cp, u));
}

static uint32_t surrogate_of(const unsigned char *p)
{
	return 0xd000u | (uint32_t)(p[1] & 0x3f) << 6 | (uint32_t)(p[2] & 0x3f);
}

/* Repair p[0..n); when !final, a tail that may still complete is held. */
static void fix(struct textfix *tf, const unsigned char *p, size_t n, bool final, struct buf *out)
{
	size_t i = 0, run = 0;
	while (i < n) {
		unsigned char b = p[i];
		if (b >= 0x01 && b < 0x80) {
			i++;
			continue;
		}
		buf_add(out, p + run, i - run);
		run = i;
		unsigned char lo, hi;
		int need = b ? seq_len(b, &lo, &hi) : 0;
		if (need == 0) { /* NUL, a stray continuation byte, C0/C1, F5.. */
			buf_add(out, fffd, 3);
			run = ++i;
			continue;
		}
		size_t k = valid_prefix(p + i, n - i, need);
		if (k < (size_t)need) {
			if (i + k == n && !final)
				goto hold;
			buf_add(out, fffd, 3); /* one per maximal invalid subpart */
			run = i += k;
			continue;
		}
		if (is_high(p + i)) {
			size_t r = n - i - 3; /* bytes after the high surrogate */
			if (r >= 3 && is_low(p + i + 3) && p[i + 5] >= 0x80 && p[i + 5] <= 0xbf) {
				uint32_t h = surrogate_of(p + i), l = surrogate_of(p + i + 3);
				add_cp(out, 0x10000u + ((h - 0xd800u) << 10) + (l - 0xdc00u));
				run = i += 6;
				continue;
			}
			/* The low half may still come: nothing after the high one,
			 * or a prefix of a low surrogate. */
			bool maybe = r == 0 || (p[i + 3] == 0xed && (r == 1 || (p[i + 4] >= 0xb0 && p[i + 4] <= 0xbf)));
			if (maybe && r < 3 && !final)
				goto hold;
			buf_add(out, fffd, 3);
			run = i += 3;
			continue;
		}
		if (is_low(p + i)) {
			buf_add(out, fffd, 3);
			run = i += 3;
			continue;
		}
		i += (size_t)need; /* well-formed: stays in the run */
	}
	buf_add(out, p + run, n - run);
	tf->nheld = 0;
	return;
hold:
	tf->nheld = n - i;
	memmove(tf->held, p + i, tf->nheld);
}

void textfix_feed(struct textfix *tf, const char *s, size_t n, struct buf *out)
{
	if (tf->nheld == 0) {
		fix(tf, (const unsigned char *)s, n, false, out);
		return;
	}
	/* Deltas are small: join the held bytes and the delta in one copy. */
	struct buf w = BUF_INIT;
	buf_add(&w, tf->held, tf->nheld);
	buf_add(&w, s, n);
	fix(tf, (const unsigned char *)w.p, w.len, false, out);
	buf_release(&w);
}

void textfix_finish(struct textfix *tf, struct buf *out)
{
	unsigned char h[sizeof tf->held];
	size_t n = tf->nheld;
	memcpy(h, tf->held, n);
	tf->nheld = 0;
	fix(tf, h, n, true, out);
}

char *textfix_string(const char *s, size_t n)
{
	struct textfix tf = TEXTFIX_INIT;
	struct buf b = BUF_INIT;
	fix(&tf, (const unsigned char *)s, n, true, &b);
	return buf_detach(&b, NULL);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The code unit of the escape "\uXXXX" at s[i..n), or -1. */
static long u_escape(const char *s, size_t n, size_t i)
{
	if (i + 6 > n || s[i] != '\\' || s[i + 1] != 'u')
		return -1;
	long v = 0;
	for (size_t k = 2; k < 6; k++) {
		int h = hexval(s[i + k]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/* The backslash at s[i] starts an escape: a lone surrogate or \u0000 is
 * rewritten (what precedes it since *run copied to out first); returns
 * where the scan goes on. */
static size_t fix_escape(const char *s, size_t n, size_t i, size_t *run, struct buf *out,
			 bool *changed)
{
	long u = u_escape(s, n, i);
	if (u < 0)
		return i + 1 < n ? i + 2 : i + 1; /* any other escape: skip its letter */
	bool hi = u >= 0xd800 && u <= 0xdbff, lo = u >= 0xdc00 && u <= 0xdfff;
	if (hi) {
		long next = u_escape(s, n, i + 6);
		if (next >= 0xdc00 && next <= 0xdfff)
			return i + 12; /* a proper pair: cJSON joins it */
	}
	if (u != 0 && !hi && !lo)
		return i + 6;
	buf_add(out, s + *run, i - *run);
	if (u == 0) {
		buf_adds(out, "\\ufffd");
	} else {
		unsigned char w[3] = {0xed, (unsigned char)(0x80 | ((u >> 6) & 0x3f)),
				      (unsigned char)(0x80 | (u & 0x3f))};
		buf_add(out, w, 3);
	}
	*changed = true;
	return *run = i + 6;
}

bool textfix_json_escapes(const char *s, size_t n, struct buf *out)
{
	bool changed = false;
	size_t run = 0, i = 0;
	if (!memchr(s, '\0', n)) {
		/* No NUL, as nearly always: only backslashes matter, and an
		 * escape can only be inside a string (outside one the text is
		 * not JSON whatever is rewritten), so jump from one to the next
		 * (a byte-at-a-time scan cost more than cJSON's parse). */
		const char *bs;
		while (i < n && (bs = memchr(s + i, '\\', n - i)))
			i = fix_escape(s, n, (size_t)(bs - s), &run, out, &changed);
		buf_add(out, s + run, n - run);
		return changed;
	}
	bool in_str = false;
	while (i < n) {
		char c = s[i];
		if (c == '\0') {
			buf_add(out, s + run, i - run);
			buf_adds(out, in_str ? "\\ufffd" : " ");
			changed = true;
			run = ++i;
			continue;
		}
		if (c == '"') {
			in_str = !in_str;
			i++;
			continue;
		}
		if (!in_str || c != '\\') {
			i++;
			continue;
		}
		i = fix_escape(s, n, i, &run, out, &changed);
	}
	buf_add(out, s + run, n - run);
	return changed;
}

size_t textfix_piece(const char *s, size_t n, size_t max)
{
	size_t used = 0, i = 0;
	while (i < n) {
		unsigned char b = (unsigned char)s[i];
		size_t len = 1, cost;
		if (b >= 0xf0)
			len = 4;
		else if (b >= 0xe0)
			len = 3;
		else if (b >= 0xc0)
			len = 2;
		if (len > n - i)
			len = n - i;
		if (b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f')
			cost = 2;
		else if (b < 0x20)
			cost = 6;
		else
			cost = len;
		if (used + cost > max)
			break;
		used += cost;
		i += len;
	}
	return i;
}
