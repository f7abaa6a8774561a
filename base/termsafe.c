/* termsafe.c — text made safe to show on a terminal (see termsafe.h for
 * what is shown how). One byte-level pass with its own strict UTF-8
 * decoder: it must tell a sequence that is wrong from one that is only
 * cut short, which a streaming caller keeps for its next piece. */
#include "base/termsafe.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static const char hex[] = "0123456789abcdef";

/* The well-formed UTF-8 sequence at s[0..n) (no overlongs, no surrogates,
 * nothing past U+10FFFF): its length, with *cp set. 0 when s[0] starts none;
 * then *cut says whether every byte up to n still fitted, i.e. more input
 * could complete it. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp, bool *cut)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
	*cut = false;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	uint32_t v = c & (0xff >> (len + 1));
	for (size_t i = 1; i < len; i++) {
		if (i >= n) {
			*cut = true;
			return 0;
		}
		unsigned char b = s[i];
		if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf))
			return 0;
		v = v << 6 | (b & 0x3f);
	}
	*cp = v;
	return len;
}

/* C1 controls and the bidi controls that reorder what follows them. */
static bool inert_cp(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static void add_u4(struct buf *out, uint32_t cp)
{
	char e[6] = {'\\', 'u', hex[cp >> 12 & 15], hex[cp >> 8 & 15], hex[cp >> 4 & 15], hex[cp & 15]};
	buf_add(out, e, sizeof e);
}

size_t termsafe_add(struct buf *out, const char *s, size_t n, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	bool keep_ws = flags & TERMSAFE_TEXT;
	size_t i = 0, run = 0; /* s[run..i) is shown as it is, copied in one go */
	buf_grow(out, n);
	while (i < n) {
		unsigned char c = p[i];
		if ((c >= 0x20 && c < 0x7f) || (keep_ws && (c == '\n' || c == '\t'))) {
			i++;
			continue;
		}
		uint32_t cp = 0;
		bool cut = false;
		size_t len = c < 0x80 ? 0 : utf8_seq(p + i, n - i, &cp, &cut);
		if (len && !inert_cp(cp)) {
			i += len;
			continue;
		}
		buf_add(out, p + run, i - run);
		if (len == 0 && cut && (flags & TERMSAFE_PARTIAL))
			return i; /* the rest may complete it */
		if (c < 0x20 || c == 0x7f) {
			char e[2] = {'^', (char)(c ^ 0x40)}; /* ESC ^[, DEL ^? */
			buf_add(out, e, 2);
			i++;
		} else if (len == 0) {
			char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
			buf_add(out, e, 4);
			i++;
		} else {
			add_u4(out, cp);
			i += len;
		}
		run = i;
	}
	buf_add(out, p + run, i - run);
	return n;
}

char *termsafe_str(const char *s, unsigned flags)
{
	struct buf b = BUF_INIT;
	s = s ? s : "";
	termsafe_add(&b, s, strlen(s), flags & ~(unsigned)TERMSAFE_PARTIAL);
	return buf_detach(&b, NULL);
}

void termsafe_printf(struct buf *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	termsafe_vprintf(out, fmt, ap);
	va_end(ap);
}

/* Append one numeric conversion. spec is a single checked conversion built
 * by termsafe_vprintf from a format the compiler checked against its
 * arguments, hence the non-literal format here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void add_one(struct buf *out, const char *spec, char len, char conv, va_list *ap)
{
	char tmp[512];
	int r;
	switch (conv) {
	case 'd':
	case 'i':
		switch (len) {
		case 'l': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, long)); break;
		case 'q': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, long long)); break;
		case 'z': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, ssize_t)); break;
		case 'j': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, intmax_t)); break;
		case 't': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, ptrdiff_t)); break;
		default: r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, int)); break;
		}
		break;
	case 'u':
	case 'o':
	case 'x':
	case 'X':
		switch (len) {
		case 'l': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, unsigned long)); break;
		case 'q': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, unsigned long long)); break;
		case 'z': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, size_t)); break;
		case 'j': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, uintmax_t)); break;
		case 't': r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, ptrdiff_t)); break;
		default: r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, unsigned)); break;
		}
		break;
	case 'p':
		r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, void *));
		break;
	default: /* e f g a, upper case too */
		if (len == 'L')
			r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, long double));
		else
			r = snprintf(tmp, sizeof tmp, spec, va_arg(*ap, double));
		break;
	}
	if (r > 0)
		buf_add(out, tmp, (size_t)r < sizeof tmp ? (size_t)r : sizeof tmp - 1);
}
#pragma GCC diagnostic pop

/* Append s[0..n) made safe, padded to width (left-justified with '-'). */
static void add_field(struct buf *out, const char *s, size_t n, int width, bool left)
{
	size_t start = out->len;
	termsafe_add(out, s, n, TERMSAFE_LINE);
	size_t shown = out->len - start;
	if (width <= 0 || shown >= (size_t)width)
		return;
	size_t pad = (size_t)width - shown;
	buf_grow(out, pad);
	if (!left) {
		memmove(out->p + start + pad, out->p + start, shown);
		memset(out->p + start, ' ', pad);
	} else {
		memset(out->p + out->len, ' ', pad);
	}
	out->len += pad;
	out->p[out->len] = '\0';
}

void termsafe_vprintf(struct buf *out, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	const char *p = fmt;
	while (*p) {
		const char *pct = strchr(p, '%');
		if (!pct) {
			buf_adds(out, p);
			break;
		}
		buf_add(out, p, (size_t)(pct - p));
		const char *q = pct + 1;
		if (*q == '%') {
			buf_addc(out, '%');
			p = q + 1;
			continue;
		}
		/* %[flags][width][.precision][length]conversion, with the '*'
		 * values fetched here and written into spec as numbers. */
		char spec[64];
		size_t k = 0;
		spec[k++] = '%';
		bool left = false;
		while (*q && strchr("-+ #0", *q)) {
			left |= *q == '-';
			if (k < 8)
				spec[k++] = *q;
			q++;
		}
		bool minus = left;
		int width = 0, prec = -1;
		if (*q == '*') {
			width = va_arg(aq, int);
			if (width < 0)
				left = true, width = -width;
			q++;
		} else {
			while (*q >= '0' && *q <= '9')
				width = width * 10 + (*q++ - '0');
		}
		if (*q == '.') {
			q++;
			prec = 0;
			if (*q == '*') {
				prec = va_arg(aq, int);
				prec = prec < 0 ? -1 : prec;
				q++;
			} else {
				while (*q >= '0' && *q <= '9')
					prec = prec * 10 + (*q++ - '0');
			}
		}
		char len = 0; /* h, H (hh), l, q (ll), L, z, j, t */
		if (*q == 'h')
			len = q[1] == 'h' ? (q += 2, 'H') : (q++, 'h');
		else if (*q == 'l')
			len = q[1] == 'l' ? (q += 2, 'q') : (q++, 'l');
		else if (*q && strchr("Lzjt", *q))
			len = *q++;
		char conv = *q;
		if (!conv || !strchr("diouxXeEfFgGaAcsp", conv))
			abort(); /* %n or a malformed format: never in cairn's own */
		p = q + 1;
		if (conv == 's' || conv == 'c') {
			char ch;
			const char *s;
			size_t n;
			if (conv == 'c') {
				ch = (char)va_arg(aq, int);
				s = &ch, n = 1;
			} else {
				s = va_arg(aq, const char *);
				s = s ? s : "(null)";
				n = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
			}
			add_field(out, s, n, width, left);
			continue;
		}
		if (left && !minus)
			spec[k++] = '-';
		if (width > 0)
			k += (size_t)snprintf(spec + k, sizeof spec - k, "%d", width);
		if (prec >= 0)
			k += (size_t)snprintf(spec + k, sizeof spec - k, ".%d", prec);
		/* The length letters as printf spells them. */
		const char *lm = len == 'H' ? "hh" : len == 'q' ? "ll" : len == 'h' ? "h" :
				 len == 'l' ? "l" : len == 'L' ? "L" : len == 'z' ? "z" :
				 len == 'j' ? "j" : len == 't' ? "t" : "";
		snprintf(spec + k, sizeof spec - k, "%s%c", lm, conv);
		add_one(out, spec, len == 'H' || len == 'h' ? 0 : len, conv, &aq);
	}
	va_end(aq);
}

/* JSON's two-character escape for c, or NULL. */
static const char *json_short_escape(unsigned char c)
{
	switch (c) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\n': return "\\n";
	case '\r': return "\\r";
	case '\t': return "\\t";
	case '\b': return "\\b";
	case '\f': return "\\f";
	}
	return NULL;
}

/* Append p[0..n) escaped: a whole JSON text (text), whose quotes and
 * escapes are kept and whose strings are tracked, or the content of one
 * string (!text), whose quotes and backslashes are escaped too. */
static void json_escape(struct buf *out, const unsigned char *p, size_t n, bool text)
{
	bool in_str = !text;
	size_t i = 0, run = 0; /* p[run..i) is copied as it is, in one go */
	buf_grow(out, n);
	while (i < n) {
		unsigned char c = p[i];
		uint32_t cp = c;
		size_t len = 1;
		if (c >= 0x20 && c < 0x7f) {
			if (text) {
				if (c == '"')
					in_str = !in_str;
				else if (c == '\\' && i + 1 < n && p[i + 1] >= 0x20 && p[i + 1] < 0x7f)
					i++; /* an escape: its next byte goes with it */
				i++;
				continue;
			}
			if (c != '"' && c != '\\') {
				i++;
				continue;
			}
		} else if (c >= 0x80) {
			bool cut;
			len = utf8_seq(p + i, n - i, &cp, &cut);
			if (len && !inert_cp(cp)) {
				i += len;
				continue;
			}
		} else if (!in_str && (c == '\n' || c == '\t' || c == '\r')) {
			i++; /* whitespace between values */
			continue;
		}
		/* Any other C0 cannot be raw in valid JSON, and inside a string
		 * its escape is exact. */
		buf_add(out, p + run, i - run);
		const char *e = json_short_escape(c);
		if (e)
			buf_add(out, e, 2);
		else
			add_u4(out, len ? cp : 0xfffd);
		i += len ? len : 1;
		run = i;
	}
	buf_add(out, p + run, i - run);
}

void termsafe_json(struct buf *out, const char *s, size_t n)
{
	json_escape(out, (const unsigned char *)s, n, true);
}

void termsafe_json_string(struct buf *out, const char *s)
{
	buf_addc(out, '"');
	json_escape(out, (const unsigned char *)s, strlen(s), false);
	buf_addc(out, '"');
}
