/* tool_files_int.h — what the file tools' bodies share (tool_files.c,
 * tool_write.c, tool_edit.c, tool_grep.c). A job is filled on the loop,
 * run on a worker, and read back on the loop after it: the worker touches
 * nothing else but the disk and the job's cancel flag. */
#ifndef CAIRN_TOOL_FILES_INT_H
#define CAIRN_TOOL_FILES_INT_H

#include <dirent.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "engine/tool.h"

/* Bytes looked at to tell a binary file from text. */
#define TOOL_FILES_SNIFF 8192

struct tool_job {
	/* In: copied on the loop before the worker starts. */
	char *path;         /* resolved against the cwd; NULL when absent */
	char *shown;        /* the path as the model gave it, for messages */
	char *text1, *text2; /* write: content; edit: old/new string; grep: pattern, glob */
	long start_line, end_line; /* read_file: 0 when absent */
	size_t read_max, grep_max, out_max;
	atomic_bool canceled; /* set on the loop, read by the worker */
	/* Out: written by the worker, read on the loop after it. */
	enum tool_status status;
	struct buf out;     /* what the model reads, before the cap */
	char *diff;         /* edit_file: the unified diff (owned) */
	bool wrote;         /* a write reached its final name (it stays) */
};

/* Append a formatted error to j->out and mark the job TOOL_ERROR. */
void tool_files_fail(struct tool_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Does the sample p[0..n) look like a binary file (a NUL, or many bytes
 * that are not UTF-8)? */
bool tool_files_binary(const char *p, size_t n);
/* Read the regular file path whole (at most max bytes) into b; -1 after
 * tool_files_fail with a message the model can act on. */
int tool_files_load(struct tool_job *j, const char *path, size_t max, struct buf *b);

/* The names in d but . and .. (and .git when skip_git), sorted bytewise;
 * *n of them. The caller frees them with tool_files_names_free. */
char **tool_files_names(DIR *d, bool skip_git, size_t *n);
void tool_files_names_free(char **names, size_t n);

/* The bodies, run on the worker. */
void tool_write_file(struct tool_job *j);
void tool_edit_file(struct tool_job *j);
void tool_grep_run(struct tool_job *j);

/* Replace path with data[0..n) atomically: a temporary file in the same
 * directory, fsynced, renamed over the target, the directory fsynced. A
 * symlink is followed to its target (the link stays); an existing file
 * keeps its mode (and owner when permitted); missing parent directories
 * are created (their names appended to *made, which may be NULL). On
 * success *created says the file did not exist, *target (caller frees)
 * is the file written when a link was followed, else NULL. -1 after
 * tool_files_fail; a cancel seen before the rename leaves nothing. */
int tool_write_atomic(struct tool_job *j, const char *path, const char *data, size_t n,
		      bool *created, char **target, struct buf *made);

#endif
