/* tool_grep.c — grep: a POSIX extended regex over the lines of a file or,
 * recursively, of a directory's files (sorted by name, .git and binary
 * files skipped, symlinks not followed so a link cycle cannot loop), each
 * match a line "path:line:text", bounded at grep_max matching lines. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "engine/tool_files_int.h"

/* Bytes of one matching line shown; a minified file's line is cut. */
#define LINE_SHOWN 400
/* Directory levels walked at most. */
#define DEPTH_MAX 64

struct grep {
	struct tool_job *j;
	regex_t re;
	const char *glob; /* NULL: every file */
	size_t matches, files, binary, unreadable;
	bool full; /* grep_max reached */
	char *line;
	size_t cap;
};

static bool stop(struct grep *g)
{
	return g->full || atomic_load(&g->j->canceled);
}

/* One matching line, cut at LINE_SHOWN bytes on a character boundary. */
static void add_match(struct grep *g, const char *shown, size_t lineno, const char *text, size_t n)
{
	struct buf *out = &g->j->out;
	buf_printf(out, "%s:%zu:", shown, lineno);
	if (n <= LINE_SHOWN) {
		buf_add(out, text, n);
	} else {
		size_t at = LINE_SHOWN;
		while (at > 0 && ((unsigned char)text[at] & 0xC0) == 0x80)
			at--;
		buf_add(out, text, at);
		buf_printf(out, " [... %zu more bytes of this line]", n - at);
	}
	buf_addc(out, '\n');
	if (++g->matches >= g->j->grep_max)
		g->full = true;
}

static void grep_file(struct grep *g, const char *path, const char *shown)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		g->unreadable += fd < 0;
		if (fd >= 0)
			close(fd);
		return;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		g->unreadable++;
		return;
	}
	char sniff[TOOL_FILES_SNIFF];
	size_t got = fread(sniff, 1, sizeof sniff, f);
	g->files++;
	if (tool_files_binary(sniff, got)) {
		g->binary++;
		fclose(f);
		return;
	}
	rewind(f);
	size_t lineno = 0;
	ssize_t n;
	while (!stop(g) && (n = getline(&g->line, &g->cap, f)) >= 0) {
		lineno++;
		if (n > 0 && g->line[n - 1] == '\n')
			g->line[--n] = '\0';
		if (regexec(&g->re, g->line, 0, NULL, 0) == 0)
			add_match(g, shown, lineno, g->line, (size_t)n);
	}
	fclose(f);
}

static void walk(struct grep *g, const char *path, const char *shown, int depth)
{
	DIR *d = opendir(path);
	if (!d) {
		g->unreadable++;
		return;
	}
	size_t n;
	char **names = tool_files_names(d, true, &n);
	closedir(d);
	size_t sl = strlen(shown);
	bool bare = strcmp(shown, ".") == 0 || strcmp(shown, "./") == 0;
	for (size_t i = 0; i < n && !stop(g); i++) {
		char *p = xasprintf("%s/%s", path, names[i]);
		char *s = bare ? xstrdup(names[i])
			       : xasprintf("%s%s%s", shown, sl && shown[sl - 1] == '/' ? "" : "/",
					   names[i]);
		struct stat st;
		if (lstat(p, &st) < 0) {
			g->unreadable++;
		} else if (S_ISDIR(st.st_mode)) {
			if (depth < DEPTH_MAX)
				walk(g, p, s, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			if (!g->glob || fnmatch(g->glob, names[i], 0) == 0)
				grep_file(g, p, s);
		}
		free(p);
		free(s);
	}
	tool_files_names_free(names, n);
}

void tool_grep_run(struct tool_job *j)
{
	struct grep g = {.j = j, .glob = j->text2};
	int rc = regcomp(&g.re, j->text1, REG_EXTENDED | REG_NOSUB | REG_NEWLINE);
	if (rc != 0) {
		char msg[256];
		regerror(rc, &g.re, msg, sizeof msg);
		tool_files_fail(j, "invalid regular expression '%s': %s (grep takes POSIX extended "
				   "regular expressions)", j->text1, msg);
		return;
	}
	struct stat st;
	if (stat(j->path, &st) < 0) {
		tool_files_fail(j, "cannot search '%s': %s", j->shown, strerror(errno));
	} else if (S_ISDIR(st.st_mode)) {
		walk(&g, j->path, j->shown, 0);
	} else {
		grep_file(&g, j->path, j->shown);
	}
	if (j->status == TOOL_OK) {
		if (g.matches == 0)
			buf_printf(&j->out, "no matches for '%s' in '%s' (%zu file%s searched)\n",
				   j->text1, j->shown, g.files, g.files == 1 ? "" : "s");
		if (g.full)
			buf_printf(&j->out, "[stopped at %zu matching lines; narrow the pattern, path or "
					    "glob to see the rest]\n", g.matches);
		if (g.binary)
			buf_printf(&j->out, "[%zu binary file%s skipped]\n", g.binary,
				   g.binary == 1 ? "" : "s");
		if (g.unreadable)
			buf_printf(&j->out, "[%zu file%s or directories could not be read]\n",
				   g.unreadable, g.unreadable == 1 ? "" : "s");
	}
	free(g.line);
	regfree(&g.re);
}
