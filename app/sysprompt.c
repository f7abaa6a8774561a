/* sysprompt.c — the default prompt, prompt files and AGENTS.md (sysprompt.h). */
#include "app/sysprompt.h"
#include "base/buf.h"
#include "base/readfile.h"
#include "base/xalloc.h"
#include "engine/textfix.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void sysprompt_release(struct sysprompt *sp)
{
	free(sp->text);
	for (size_t i = 0; i < sp->nfiles; i++)
		free(sp->files[i]);
	free(sp->files);
	memset(sp, 0, sizeof *sp);
}

/* Read path whole (valid UTF-8 made of it). 1: absent, 2: not a regular
 * file (a directory, a FIFO: never read), 0: read, -1: error. */
static int read_text(const char *path, char **out, struct cerr *err)
{
	struct buf b = BUF_INIT;
	int rc = 0;
	switch (readfile_path(path, SYSPROMPT_FILE_MAX, &b)) {
	case READFILE_OK:
		*out = textfix_string(b.p ? b.p : "", b.len);
		break;
	case READFILE_ABSENT:
		rc = 1;
		break;
	case READFILE_NOT_REGULAR:
		rc = 2; /* a directory named AGENTS.md is not instructions */
		break;
	case READFILE_OPEN_ERROR:
		rc = cerr_set(err, CERR_IO, errno, "cannot open '%s'", path);
		break;
	case READFILE_READ_ERROR:
		rc = cerr_set(err, CERR_IO, errno, "cannot read '%s'", path);
		break;
	case READFILE_TOO_BIG:
		rc = cerr_set(err, CERR_USAGE, 0, "'%s' is larger than %d KiB", path,
			      SYSPROMPT_FILE_MAX / 1024);
		break;
	}
	buf_release(&b);
	return rc;
}

static void note_file(struct sysprompt *sp, const char *path)
{
	sp->files = xreallocarray(sp->files, sp->nfiles + 1, sizeof *sp->files);
	sp->files[sp->nfiles++] = xstrdup(path);
}

/* Append path's AGENTS.md when there is one. */
static int add_agents(struct sysprompt *sp, struct buf *b, const char *dir, struct cerr *err)
{
	char *path = xasprintf("%s%sAGENTS.md", dir, dir[strlen(dir) - 1] == '/' ? "" : "/");
	char *text = NULL;
	int r = read_text(path, &text, err);
	if (r == 0) {
		buf_printf(b, "\n\n# Instructions from %s\n\n", path);
		buf_adds(b, text);
		note_file(sp, path);
	}
	free(text);
	free(path);
	return r < 0 ? -1 : 0;
}

static bool has_git(const char *dir)
{
	char *p = xasprintf("%s%s.git", dir, dir[strlen(dir) - 1] == '/' ? "" : "/");
	struct stat st;
	bool yes = lstat(p, &st) == 0; /* a directory, or a worktree's file */
	free(p);
	return yes;
}

/* The directories from the repository root down to cwd (cwd alone when
 * no .git is above it), as prefixes of cwd: lens[i] bytes of cwd. */
static size_t repo_chain(const char *cwd, size_t *lens, size_t max)
{
	size_t n = strlen(cwd), cuts[512], ncut = 0;
	while (n > 1 && cwd[n - 1] == '/')
		n--;
	/* cuts: cwd, then each parent, up to "/". */
	for (size_t k = n; ncut < sizeof cuts / sizeof cuts[0];) {
		cuts[ncut++] = k;
		if (k <= 1)
			break;
		while (k > 1 && cwd[k - 1] != '/')
			k--;
		if (k > 1)
			k--; /* drop the slash, except the root's */
	}
	size_t root = 0; /* index in cuts of the repository root */
	bool found = false;
	for (size_t i = 0; i < ncut && !found; i++) {
		char *d = xstrndup(cwd, cuts[i]);
		if (has_git(d))
			root = i, found = true;
		free(d);
	}
	size_t c = 0;
	for (size_t i = found ? root + 1 : 1; i-- > 0 && c < max;)
		lens[c++] = cuts[i];
	return c;
}

int sysprompt_build(const struct config *cfg, const char *system_file, const char *cwd,
		    int64_t now_ms, struct sysprompt *sp, struct cerr *err)
{
	memset(sp, 0, sizeof *sp);
	struct buf b = BUF_INIT;
	char *text = NULL, *cfgfile = NULL;
	const char *file = system_file;
	sp->base_from = "--system";
	if (!file && cfg->system_prompt_file) {
		file = cfgfile = cfg->system_prompt_file[0] == '/' || !cfg->dir
					 ? xstrdup(cfg->system_prompt_file)
					 : xasprintf("%s/%s", cfg->dir, cfg->system_prompt_file);
		sp->base_from = "config";
	}
	if (file) {
		int r = read_text(file, &text, err);
		if (r != 0) {
			if (r == 1)
				cerr_set(err, CERR_MISSING, 0, "no system prompt file '%s'", file);
			else if (r == 2)
				cerr_set(err, CERR_USAGE, 0, "system prompt file '%s' is not a regular file",
					 file);
			goto fail;
		}
		buf_adds(&b, text);
		note_file(sp, file);
	} else if (cfg->system_prompt) {
		buf_adds(&b, cfg->system_prompt);
		sp->base_from = "config";
	} else {
		time_t t = (time_t)(now_ms / 1000);
		struct tm tm;
		char day[32] = "";
		if (localtime_r(&t, &tm))
			strftime(day, sizeof day, "%Y-%m-%d", &tm);
		buf_printf(&b, "You are cairn, a chat assistant in a terminal. The working directory "
			       "is %s. Today is %s.", cwd, day);
		sp->base_from = "default";
	}
	if (cfg->dir && add_agents(sp, &b, cfg->dir, err) < 0)
		goto fail;
	size_t lens[512];
	size_t n = repo_chain(cwd, lens, sizeof lens / sizeof lens[0]);
	for (size_t i = 0; i < n; i++) {
		char *d = xstrndup(cwd, lens[i] ? lens[i] : 1);
		/* The configuration directory inside the repository: read once. */
		int r = cfg->dir && strcmp(cfg->dir, d) == 0 ? 0 : add_agents(sp, &b, d, err);
		free(d);
		if (r < 0)
			goto fail;
	}
	free(text);
	free(cfgfile);
	sp->text = buf_detach(&b, NULL);
	return 0;
fail:
	free(text);
	free(cfgfile);
	buf_release(&b);
	sysprompt_release(sp);
	return -1;
}
