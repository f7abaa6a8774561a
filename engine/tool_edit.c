/* tool_edit.c — edit_file: one exact, unique string replaced, written back
 * with the atomic replace of tool_write.c, and shown as a unified diff of
 * the changed lines. No match or several are errors the model can act on:
 * the file is left as it was. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "engine/tool_files_int.h"

/* Files edit_file reads whole at most. */
#define EDIT_MAX ((size_t)64 << 20)
/* Lines of context around a change, as diff -u. */
#define CONTEXT 3
/* Match lines listed when old_string is ambiguous. */
#define LIST_LINES 20

static size_t count_nl(const char *p, const char *end)
{
	size_t n = 0;
	for (; p < end; p++)
		n += *p == '\n';
	return n;
}

/* The start of the line holding p[i]. */
static size_t line_start(const char *p, size_t i)
{
	while (i > 0 && p[i - 1] != '\n')
		i--;
	return i;
}

/* The end of the line holding p[i] (just after its newline, or n). */
static size_t line_end(const char *p, size_t n, size_t i)
{
	const char *nl = i < n ? memchr(p + i, '\n', n - i) : NULL;
	return nl ? (size_t)(nl - p) + 1 : n;
}

/* Lines in p[0..n): newlines, plus one for an unterminated last line. */
static long lines_in(const char *p, size_t n)
{
	return (long)count_nl(p, p + n) + (n > 0 && p[n - 1] != '\n');
}

/* Each line of p[0..n) prefixed with mark. */
static void add_lines(struct buf *d, char mark, const char *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t e = line_end(p, n, i);
		buf_addc(d, mark);
		buf_add(d, p + i, e - i);
		if (p[e - 1] != '\n')
			buf_adds(d, "\n\\ No newline at end of file\n");
		i = e;
	}
}

/* The unified diff of replacing old[pos..pos+ol) by what makes nw. */
static char *make_diff(const char *shown, const char *old, size_t oldlen, const char *nw,
		       size_t newlen, size_t pos, size_t ol, size_t nl)
{
	/* The changed lines: from the line the match starts on to the end of
	 * the lines its end reaches in either text (the rest is the same). */
	size_t ls = line_start(old, pos);
	size_t le = line_end(old, oldlen, pos + ol - 1);
	size_t ne = nl ? line_end(nw, newlen, pos + nl - 1) : pos == ls ? pos : line_end(nw, newlen, pos);
	size_t tail = oldlen - le < newlen - ne ? oldlen - le : newlen - ne;
	le = oldlen - tail;
	ne = newlen - tail;
	size_t cs = ls;
	for (int k = 0; k < CONTEXT && cs > 0; k++)
		cs = line_start(old, cs - 1);
	size_t ce = le;
	for (int k = 0; k < CONTEXT && ce < oldlen; k++)
		ce = line_end(old, oldlen, ce);
	size_t nce = ce - le + ne;
	long first = 1 + (long)count_nl(old, old + cs);
	long ocount = lines_in(old + cs, ce - cs), ncount = lines_in(nw + cs, nce - cs);
	struct buf d = BUF_INIT;
	buf_printf(&d, "--- a/%s\n+++ b/%s\n", shown, shown);
	buf_printf(&d, "@@ -%ld,%ld +%ld,%ld @@\n", ocount ? first : first - 1, ocount,
		   ncount ? first : first - 1, ncount);
	add_lines(&d, ' ', old + cs, ls - cs);
	add_lines(&d, '-', old + ls, le - ls);
	add_lines(&d, '+', nw + ls, ne - ls);
	add_lines(&d, ' ', old + le, ce - le);
	return buf_detach(&d, NULL);
}

/* s[0..n) without its leading and trailing blanks: start in *b, length returned. */
static size_t trim(const char *s, size_t n, const char **b)
{
	while (n > 0 && isspace((unsigned char)*s))
		s++, n--;
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	*b = s;
	return n;
}

/* old_string was not found: say so, with what may help the next try. */
static void not_found(struct tool_job *j, const struct buf *file)
{
	const char *o = j->text1;
	tool_files_fail(j, "old_string not found in '%s' (it must match the file's text exactly, "
			   "whitespace included; no change made)", j->shown);
	const char *q = o;
	while (*q == ' ')
		q++;
	if (isdigit((unsigned char)*q)) {
		while (isdigit((unsigned char)*q))
			q++;
		if (*q == '\t')
			buf_adds(&j->out, "\nhint: old_string starts with a line number and a tab as "
					  "read_file shows them; leave those out");
	}
	/* The first non-blank line of old_string, looked for line by line. */
	const char *ln = o;
	size_t len = 0;
	for (const char *p = o; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		len = trim(p, n, &ln);
		if (len)
			break;
		p += n + (e != NULL);
	}
	if (!len)
		return;
	long best_line = 0, line = 1;
	size_t best = 0, best_n = 0;
	const char *best_p = NULL;
	for (size_t i = 0; i < file->len; line++) {
		size_t e = line_end(file->p, file->len, i);
		const char *t;
		size_t n = trim(file->p + i, e - i, &t);
		size_t common = 0;
		while (common < n && common < len && t[common] == ln[common])
			common++;
		if (common > best) {
			best = common;
			best_line = line;
			best_p = t;
			best_n = n;
		}
		if (common == len && n == len)
			break; /* the same text with other blanks around it */
		i = e;
	}
	if (best_p && best >= 4 && best * 2 >= len)
		buf_printf(&j->out, "\nhint: the nearest line is %ld: %.*s", best_line,
			   (int)(best_n < 200 ? best_n : 200), best_p);
}

void tool_edit_file(struct tool_job *j)
{
	struct buf old = BUF_INIT, nw = BUF_INIT;
	char *target = NULL;
	if (tool_files_load(j, j->path, EDIT_MAX, &old) < 0)
		goto out;
	if (tool_files_binary(old.p, old.len < TOOL_FILES_SNIFF ? old.len : TOOL_FILES_SNIFF)) {
		tool_files_fail(j, "binary file, %zu bytes: edit_file changes text files only",
				old.len);
		goto out;
	}
	const char *o = j->text1, *n = j->text2;
	size_t ol = strlen(o), nl = strlen(n), count = 0, pos = 0;
	size_t line = 1;
	const char *counted = old.p, *from = old.p, *end = old.p + old.len, *hit;
	struct buf where = BUF_INIT;
	/* Overlapping matches count too: "aa" is ambiguous in "aaa". */
	while ((hit = memmem(from, (size_t)(end - from), o, ol))) {
		line += count_nl(counted, hit);
		counted = hit;
		if (count == 0)
			pos = (size_t)(hit - old.p);
		if (count < LIST_LINES)
			buf_printf(&where, "%s%zu", count ? ", " : "", line);
		count++;
		from = hit + 1;
	}
	if (count == 0) {
		not_found(j, &old);
	} else if (count > 1) {
		tool_files_fail(j, "old_string matches %zu times in '%s' (at lines %s%s); it must "
				   "match exactly once: include more of the surrounding text (no "
				   "change made)", count, j->shown, where.p,
				count > LIST_LINES ? ", ..." : "");
	}
	buf_release(&where);
	if (count != 1)
		goto out;
	buf_add(&nw, old.p, pos);
	buf_add(&nw, n, nl);
	buf_add(&nw, old.p + pos + ol, old.len - pos - ol);
	bool created = false;
	if (tool_write_atomic(j, j->path, nw.p, nw.len, &created, &target, NULL) < 0)
		goto out;
	j->diff = make_diff(j->shown, old.p, old.len, nw.p, nw.len, pos, ol, nl);
	long first = 1 + (long)count_nl(old.p, old.p + pos);
	long last = first + (long)count_nl(n, n + nl);
	buf_printf(&j->out, "edited %s: replaced 1 occurrence at line %ld", j->shown, first);
	if (last > first)
		buf_printf(&j->out, " (now lines %ld-%ld)", first, last);
	if (target)
		buf_printf(&j->out, "; through the symlink to %s", target);
	buf_addc(&j->out, '\n');
	buf_adds(&j->out, j->diff);
out:
	free(target);
	buf_release(&old);
	buf_release(&nw);
}
