/* pathkey.c — session id validation and the cwd -> project key encoding.
 *
 * Encoding: '/' becomes '-'; bytes in [A-Za-z0-9._] stay; every other byte,
 * '-' and '%' included, becomes %XX. So "/home/a b" -> "-home-a%20b". An
 * absolute cwd starts with '/', so its key starts with '-'; a relative one's
 * key starts with '~'.
 * Keys longer than PATHKEY_MAX keep a prefix and end in "~" + 16 hex digits
 * of a 64-bit FNV-1a hash of the whole cwd. */
#include "persist/pathkey.h"
#include "base/buf.h"
#include "base/xalloc.h"

#include <stdint.h>
#include <string.h>

bool pathkey_valid_id(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > SESSION_ID_MAX || id[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

bool pathkey_valid_key(const char *name)
{
	size_t n = strlen(name);
	return n > 0 && n <= PATHKEY_MAX && !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

char *pathkey_project(const char *cwd)
{
	static const char hex[] = "0123456789ABCDEF";
	if (!cwd || !*cwd)
		return xstrdup(PATHKEY_NO_CWD);
	struct buf b = BUF_INIT;
	/* A relative cwd (cairn itself always stores absolute ones) starts
	 * with '~', so it never collides with an absolute one. */
	if (cwd[0] != '/')
		buf_addc(&b, '~');
	for (const unsigned char *p = (const unsigned char *)cwd; *p; p++) {
		unsigned char c = *p;
		if (c == '/')
			buf_addc(&b, '-');
		else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '.' || c == '_')
			buf_addc(&b, (char)c);
		else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			buf_add(&b, e, 3);
		}
	}
	if (b.len > PATHKEY_MAX) {
		uint64_t h = 14695981039346656037ull;
		for (const unsigned char *p = (const unsigned char *)cwd; *p; p++)
			h = (h ^ *p) * 1099511628211ull;
		size_t keep = PATHKEY_MAX - 17;
		/* Never cut an escape in half. */
		if (keep >= 1 && b.p[keep - 1] == '%')
			keep -= 1;
		else if (keep >= 2 && b.p[keep - 2] == '%')
			keep -= 2;
		b.len = keep;
		buf_printf(&b, "~%016llx", (unsigned long long)h);
	}
	return buf_detach(&b, NULL);
}
