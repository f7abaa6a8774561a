/* json_int.h — the lexical pieces json.c (strict parsing over cJSON) and
 * json_check.c (the same rules without a tree) share. base/ only. */
#ifndef CAIRN_JSON_INT_H
#define CAIRN_JSON_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline bool json_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline int json_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at s[0..n)? */
static inline bool json_hex4(const char *s, size_t n)
{
	return n >= 4 && json_hex_digit(s[0]) >= 0 && json_hex_digit(s[1]) >= 0 && json_hex_digit(s[2]) >= 0 &&
	       json_hex_digit(s[3]) >= 0;
}

/* Skip plain string bytes from s[i], 8 at a time: none a quote, a
 * backslash or a control character (SWAR tests). Returns the offset of the
 * first byte that is one, or where fewer than 8 bytes are left. (The
 * lowest flagged byte of a group is exact: only bytes above a true match
 * can be flagged falsely, by the borrow.) */
static inline size_t json_skip_plain(const char *s, size_t i, size_t n)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	while (i + 8 <= n) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
		uint64_t special = (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w)) & high;
		if (special) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			i += (size_t)__builtin_ctzll(special) / 8;
#endif
			break;
		}
		i += 8;
	}
	return i;
}

/* The double the number literal s[0..n) denotes, as strtod reads it. */
double json_literal_double(const char *s, size_t n);
/* Check the RFC 8259 number at s[*i..n) and advance past it; *unstorable
 * gets why a double cannot hold it, or NULL. */
bool json_lex_number(const char *s, size_t n, size_t *i, const char **unstorable);
/* json_get_int's test on a number's double value. */
bool json_double_int(double d, int64_t min, int64_t max, int64_t *out);

#endif
