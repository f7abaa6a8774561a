/* sysprompt.h — the system prompt in effect for a turn.
 *
 * The base: the file given on the command line (--system FILE), else the
 * configuration's system_prompt_file or system_prompt, else a short
 * default naming cairn, the working directory and the date. Then every
 * AGENTS.md that exists: the global one in the configuration directory,
 * then one per directory from the repository root (the nearest directory
 * above the working directory holding .git; none: the working directory
 * alone) down to the working directory, each under a heading naming it. */
#ifndef CAIRN_SYSPROMPT_H
#define CAIRN_SYSPROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "app/config.h"

#define SYSPROMPT_FILE_MAX (256 * 1024) /* bytes of one prompt or AGENTS.md file */

struct sysprompt {
	char *text;     /* the prompt, valid UTF-8 */
	const char *base_from; /* "--system", "config" or "default" */
	char **files;   /* the files read, in order (base file first when one) */
	size_t nfiles;
};

/* Build the prompt for cwd (absolute) at now_ms (its local date) into *sp
 * (release with sysprompt_release). system_file (may be NULL) is
 * --system's argument. A file that exists but cannot be read, or is too
 * large, fails with CERR_IO or CERR_USAGE naming it; a missing --system
 * or configured file is CERR_MISSING. */
int sysprompt_build(const struct config *cfg, const char *system_file, const char *cwd,
		    int64_t now_ms, struct sysprompt *sp, struct cerr *err);
void sysprompt_release(struct sysprompt *sp);

#endif
