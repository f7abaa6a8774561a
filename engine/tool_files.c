/* tool_files.c — the file tools' runs (tool_int.h): arguments checked and
 * copied on the loop, the disk work on a libuv worker, the result capped
 * and handed over on the loop; read_file and list_dir live here, the
 * writing tools in tool_write.c and tool_edit.c, grep in tool_grep.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bgprio.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "engine/tool_files_int.h"
#include "engine/tool_int.h"
#include "engine/tool_output.h"

#define LIST_MAX 1000
/* Room kept under the model's cap for read_file's closing note. */
#define READ_NOTE_ROOM 256

enum tool_kind { K_READ, K_WRITE, K_EDIT, K_LIST, K_GREP };

static const struct {
	const char *name;
	enum tool_kind kind;
} kinds[] = {
	{"read_file", K_READ}, {"write_file", K_WRITE}, {"edit_file", K_EDIT},
	{"list_dir", K_LIST},  {"grep", K_GREP},
};

struct files_run {
	struct tool_run run; /* first: the handle tool_start hands out */
	uv_work_t work;
	enum tool_kind kind;
	bool bad_args; /* the job already holds the error; the worker skips */
	struct tool_job job;
	struct tool_limits lim; /* resolved */
	tool_done_fn cb;
	void *cb_ctx;
};

void tool_files_fail(struct tool_job *j, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (j->out.len > 0 && j->out.p[j->out.len - 1] != '\n')
		buf_addc(&j->out, '\n');
	buf_adds(&j->out, msg);
	j->status = TOOL_ERROR;
}

bool tool_files_binary(const char *p, size_t n)
{
	if (memchr(p, '\0', n))
		return true;
	/* Count the bytes that do not start a valid character; a sample cut
	 * mid-character loses at most 3 at its end. More than one in ten is
	 * not a text in any UTF-8 sense (a Latin-1 text has one accented
	 * letter in tens). */
	size_t bad = 0, i = 0, at;
	while (i < n) {
		if (utf8_valid(p + i, n - i, &at))
			break;
		bad++;
		i += at + 1;
	}
	return n >= 16 && bad * 10 > n;
}

/* Open path for reading as a regular file; -1 after a message. */
static int open_regular(struct tool_job *j, const char *path, struct stat *st)
{
	/* O_NONBLOCK: a FIFO must not hang the worker; it is refused below. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		tool_files_fail(j, "cannot open '%s': %s", j->shown, strerror(errno));
		return -1;
	}
	if (fstat(fd, st) < 0) {
		tool_files_fail(j, "cannot stat '%s': %s", j->shown, strerror(errno));
		close(fd);
		return -1;
	}
	if (S_ISDIR(st->st_mode)) {
		tool_files_fail(j, "'%s' is a directory; list_dir shows its entries", j->shown);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		tool_files_fail(j, "'%s' is not a regular file", j->shown);
		close(fd);
		return -1;
	}
	return fd;
}

/* Read up to n bytes at the file's current offset; the count or -1. */
static ssize_t read_full(int fd, char *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int tool_files_load(struct tool_job *j, const char *path, size_t max, struct buf *b)
{
	struct stat st;
	int fd = open_regular(j, path, &st);
	if (fd < 0)
		return -1;
	if ((size_t)st.st_size > max) {
		tool_files_fail(j, "'%s' is too large (%lld bytes; at most %zu)", j->shown,
				(long long)st.st_size, max);
		close(fd);
		return -1;
	}
	/* One byte more than the size: a file that grew is read to its end. */
	buf_grow(b, (size_t)st.st_size + 1);
	for (;;) {
		buf_grow(b, 65536);
		ssize_t r = read_full(fd, b->p + b->len, 65536);
		if (r < 0) {
			tool_files_fail(j, "cannot read '%s': %s", j->shown, strerror(errno));
			close(fd);
			return -1;
		}
		b->len += (size_t)r;
		b->p[b->len] = '\0';
		if (r < 65536)
			break;
		if (b->len > max) {
			tool_files_fail(j, "'%s' is too large (more than %zu bytes)", j->shown, max);
			close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}

/* read_file: the lines start_line..end_line, each numbered as cat -n does
 * ("%6ld\t"), stopping at the byte budget with a note that says how to
 * read on. */
static void read_file(struct tool_job *j)
{
	struct stat st;
	int fd = open_regular(j, j->path, &st);
	if (fd < 0)
		return;
	char *chunk = xmalloc(65536);
	ssize_t n = read_full(fd, chunk, 65536);
	if (n < 0) {
		tool_files_fail(j, "cannot read '%s': %s", j->shown, strerror(errno));
		goto out;
	}
	if (tool_files_binary(chunk, (size_t)n < TOOL_FILES_SNIFF ? (size_t)n : TOOL_FILES_SNIFF)) {
		tool_files_fail(j, "binary file, %lld bytes: '%s' is not shown", (long long)st.st_size,
				j->shown);
		goto out;
	}
	if (n == 0) {
		if (j->start_line > 1)
			tool_files_fail(j, "start_line %ld is past the end of '%s' (empty file)",
					j->start_line, j->shown);
		else
			buf_printf(&j->out, "[empty file '%s']\n", j->shown);
		goto out;
	}
	long first = j->start_line > 0 ? j->start_line : 1;
	long line = 1;          /* the line the next byte belongs to */
	bool at_start = true;   /* the next byte starts a line */
	size_t budget = j->read_max < j->out_max ? j->read_max : j->out_max;
	size_t line_at = 0;     /* where the line being shown starts in out */
	long stopped = 0;       /* the last line shown whole when the budget ran out */
	bool cut_line = false;  /* a line longer than the budget was shown cut */
	while (n > 0) {
		for (ssize_t i = 0; i < n; i++) {
			char c = chunk[i];
			if (j->end_line > 0 && line > j->end_line)
				goto done;
			if (line >= first) {
				if (at_start) {
					line_at = j->out.len;
					buf_printf(&j->out, "%6ld\t", line);
				}
				if (j->out.len + 1 > budget) {
					if (line_at > 0) {
						/* Lines are shown whole: this one waits
						 * for the next read. */
						j->out.len = line_at;
						j->out.p[line_at] = '\0';
						stopped = line - 1;
					} else {
						/* One line fills the budget: show what fits. */
						stopped = line;
						cut_line = true;
					}
					goto done;
				}
				buf_addc(&j->out, c);
			}
			at_start = c == '\n';
			if (at_start)
				line++;
		}
		if (atomic_load(&j->canceled))
			goto out;
		n = read_full(fd, chunk, 65536);
		if (n < 0) {
			tool_files_fail(j, "cannot read '%s': %s", j->shown, strerror(errno));
			goto out;
		}
	}
	if (!at_start)
		buf_addc(&j->out, '\n'); /* the last line had no newline; the model needs none */
	if (line - (at_start ? 1 : 0) < first) {
		long total = line - (at_start ? 1 : 0);
		buf_reset(&j->out);
		tool_files_fail(j, "start_line %ld is past the end of '%s' (%ld lines)", first, j->shown,
				total);
		goto out;
	}
done:
	if (stopped > 0 || cut_line) {
		if (cut_line) {
			/* Keep the cut on a character boundary. */
			size_t at = j->out.len;
			while (at > 0 && ((unsigned char)j->out.p[at - 1] & 0xC0) == 0x80)
				at--;
			if (at > 0 && ((unsigned char)j->out.p[at - 1] & 0xC0) == 0xC0)
				at--;
			j->out.len = at;
			j->out.p[at] = '\0';
			buf_printf(&j->out, "\n[line %ld is longer than the %zu bytes shown at once; "
					    "grep finds text in it]\n", stopped, budget);
		}
		if (stopped > 0 && stopped >= first)
			buf_printf(&j->out,
				   "[stopped after line %ld: %zu bytes shown at most per read; file is "
				   "%lld bytes; read on with start_line=%ld]\n",
				   stopped, budget, (long long)st.st_size, stopped + 1);
	}
out:
	free(chunk);
	close(fd);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **tool_files_names(DIR *d, bool skip_git, size_t *count)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *nm = de->d_name;
		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 ||
		    (skip_git && strcmp(nm, ".git") == 0))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = xreallocarray(names, cap, sizeof *names);
		}
		names[n++] = xstrdup(nm);
	}
	/* Sorted: the same tree reads the same, in the same order. */
	qsort(names, n, sizeof *names, name_cmp);
	*count = n;
	return names;
}

void tool_files_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void add_size(struct buf *b, off_t size)
{
	if (size < 10240)
		buf_printf(b, "%lld B", (long long)size);
	else if (size < 10LL << 20)
		buf_printf(b, "%.1f KiB", (double)size / 1024);
	else if (size < 10LL << 30)
		buf_printf(b, "%.1f MiB", (double)size / (1 << 20));
	else
		buf_printf(b, "%.1f GiB", (double)size / (1 << 30));
}

/* list_dir: the entries sorted by name, one a line: "name/" for a
 * directory, "name -> target" for a symlink, "name  size" for a file. */
static void list_dir(struct tool_job *j)
{
	DIR *d = opendir(j->path);
	if (!d) {
		int e = errno;
		struct stat st;
		if (e == ENOTDIR && stat(j->path, &st) == 0)
			tool_files_fail(j, "'%s' is not a directory; read_file shows a file", j->shown);
		else
			tool_files_fail(j, "cannot open directory '%s': %s", j->shown, strerror(e));
		return;
	}
	size_t n;
	char **names = tool_files_names(d, false, &n);
	int dfd = dirfd(d);
	size_t shown = n < LIST_MAX ? n : LIST_MAX;
	buf_printf(&j->out, "%s: %zu entr%s\n", j->shown, n, n == 1 ? "y" : "ies");
	for (size_t i = 0; i < shown; i++) {
		struct stat st;
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			buf_printf(&j->out, "%s  (cannot stat: %s)\n", names[i], strerror(errno));
			continue;
		}
		buf_adds(&j->out, names[i]);
		if (S_ISDIR(st.st_mode)) {
			buf_addc(&j->out, '/');
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t len = readlinkat(dfd, names[i], target, sizeof target - 1);
			target[len < 0 ? 0 : len] = '\0';
			struct stat to;
			bool dir = fstatat(dfd, names[i], &to, 0) == 0 && S_ISDIR(to.st_mode);
			buf_printf(&j->out, " -> %s%s", target, dir ? "/" : "");
		} else if (S_ISREG(st.st_mode)) {
			buf_adds(&j->out, "  ");
			add_size(&j->out, st.st_size);
		} else {
			buf_adds(&j->out, S_ISFIFO(st.st_mode)	? "  (fifo)"
					  : S_ISSOCK(st.st_mode) ? "  (socket)"
								 : "  (device)");
		}
		buf_addc(&j->out, '\n');
	}
	if (n > shown)
		buf_printf(&j->out, "[... %zu more entries not shown; grep with a glob finds files by name]\n",
			   n - shown);
	tool_files_names_free(names, n);
	closedir(d);
}

static void work(uv_work_t *w)
{
	struct files_run *run = w->data;
	struct tool_job *j = &run->job;
	bgprio_enter(); /* libuv's workers serve background work only */
	if (run->bad_args || atomic_load(&j->canceled))
		return;
	switch (run->kind) {
	case K_READ:
		read_file(j);
		break;
	case K_WRITE:
		tool_write_file(j);
		break;
	case K_EDIT:
		tool_edit_file(j);
		break;
	case K_LIST:
		list_dir(j);
		break;
	case K_GREP:
		tool_grep_run(j);
		break;
	}
}

static void job_release(struct tool_job *j)
{
	free(j->path);
	free(j->shown);
	free(j->text1);
	free(j->text2);
	free(j->diff);
	buf_release(&j->out);
}

/* On the loop: the result capped and handed over; the run freed after. */
static void after(uv_work_t *w, int status)
{
	struct files_run *run = w->data;
	struct tool_job *j = &run->job;
	struct tool_result r = {.status = j->status, .exit_code = -1};
	if (status == UV_ECANCELED || (atomic_load(&j->canceled) && !run->bad_args)) {
		r.status = TOOL_CANCELED;
		buf_reset(&j->out);
		if (j->wrote)
			buf_adds(&j->out, "canceled by the user after the file was written; the write "
					  "stays: read the file before changing it again\n");
		else
			buf_adds(&j->out, "canceled by the user; not run: nothing was changed\n");
	}
	tool_result_text(&r, j->out.p, j->out.len, &run->lim);
	if (j->diff && r.status == TOOL_OK) {
		r.extra = cJSON_CreateObject();
		char *d = tool_output_cap(j->diff, strlen(j->diff), run->lim.full_max, NULL);
		cJSON_AddStringToObject(r.extra, "diff", d);
		free(d);
	}
	run->cb(run->cb_ctx, &run->run, &r);
	job_release(j);
	free(run);
}

/* A string argument: its copy in *out (NULL when absent and optional);
 * false after a message naming it. */
static bool arg_string(struct tool_job *j, const cJSON *args, const char *key, bool required,
		       char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
	if (!v || cJSON_IsNull(v)) {
		if (!required)
			return true;
		tool_files_fail(j, "missing parameter '%s' (a string)", key);
		return false;
	}
	if (!cJSON_IsString(v) || !v->valuestring) {
		tool_files_fail(j, "parameter '%s' must be a string", key);
		return false;
	}
	*out = xstrdup(v->valuestring);
	return true;
}

/* A line number argument (an integer >= 1), 0 when absent. */
static bool arg_line(struct tool_job *j, const cJSON *args, const char *key, long *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
	*out = 0;
	if (!v || cJSON_IsNull(v))
		return true;
	double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
	if (!cJSON_IsNumber(v) || d != (double)(long)d || d < 1 || d > 1e15) {
		tool_files_fail(j, "parameter '%s' must be a line number (an integer from 1)", key);
		return false;
	}
	*out = (long)d;
	return true;
}

/* The copied, checked arguments of kind; false after a message. */
static bool take_args(struct tool_job *j, enum tool_kind kind, const cJSON *args, const char *cwd)
{
	if (!cJSON_IsObject(args)) {
		tool_files_fail(j, "the arguments must be a JSON object");
		return false;
	}
	bool path_required = kind != K_LIST && kind != K_GREP;
	if (!arg_string(j, args, "path", path_required, &j->shown))
		return false;
	if (!j->shown)
		j->shown = xstrdup(".");
	if (!j->shown[0]) {
		tool_files_fail(j, "parameter 'path' is empty");
		return false;
	}
	if (j->shown[0] == '/' || !cwd || !cwd[0])
		j->path = xstrdup(j->shown);
	else
		j->path = xasprintf("%s/%s", cwd, j->shown);
	switch (kind) {
	case K_READ:
		if (!arg_line(j, args, "start_line", &j->start_line) ||
		    !arg_line(j, args, "end_line", &j->end_line))
			return false;
		if (j->end_line > 0 && j->end_line < (j->start_line > 0 ? j->start_line : 1)) {
			tool_files_fail(j, "end_line %ld is before start_line %ld", j->end_line,
					j->start_line > 0 ? j->start_line : 1);
			return false;
		}
		return true;
	case K_WRITE:
		return arg_string(j, args, "content", true, &j->text1);
	case K_EDIT:
		if (!arg_string(j, args, "old_string", true, &j->text1) ||
		    !arg_string(j, args, "new_string", true, &j->text2))
			return false;
		if (!j->text1[0]) {
			tool_files_fail(j, "parameter 'old_string' is empty; write_file creates or "
					   "replaces a whole file");
			return false;
		}
		if (strcmp(j->text1, j->text2) == 0) {
			tool_files_fail(j, "old_string and new_string are the same: nothing to change");
			return false;
		}
		return true;
	case K_GREP:
		if (!arg_string(j, args, "pattern", true, &j->text1) ||
		    !arg_string(j, args, "glob", false, &j->text2))
			return false;
		if (!j->text1[0]) {
			tool_files_fail(j, "parameter 'pattern' is empty");
			return false;
		}
		return true;
	case K_LIST:
		return true;
	}
	return true;
}

/* tool_cancel: a run not started is dropped by libuv (after() sees
 * UV_ECANCELED); a running body sees the flag at its next check. */
static void files_cancel(struct tool_run *handle)
{
	struct files_run *run = (struct files_run *)handle;
	atomic_store(&run->job.canceled, true);
	uv_cancel((uv_req_t *)&run->work);
}

struct tool_run *tool_files_start(const struct tool_ctx *ctx, const char *name, const cJSON *args,
				  tool_done_fn cb, void *cb_ctx, struct cerr *err)
{
	size_t k = 0;
	while (k < sizeof kinds / sizeof kinds[0] && strcmp(kinds[k].name, name) != 0)
		k++;
	if (k == sizeof kinds / sizeof kinds[0]) {
		cerr_set(err, CERR_USAGE, 0, "unknown tool '%s'", name);
		return NULL;
	}
	struct files_run *run = xcalloc(1, sizeof *run);
	run->lim = tool_limits_resolve(&ctx->limits);
	const struct tool_limits *l = &run->lim;
	run->run.cancel = files_cancel;
	run->work.data = run;
	run->kind = kinds[k].kind;
	run->cb = cb;
	run->cb_ctx = cb_ctx;
	struct tool_job *j = &run->job;
	buf_init(&j->out);
	atomic_init(&j->canceled, false);
	j->status = TOOL_OK;
	j->read_max = l->read_max;
	j->grep_max = l->grep_max;
	/* What read_file shows at once fits what the model reads, so a long
	 * file is read on by line numbers, never cut in its middle. */
	j->out_max = l->result_max > 2 * READ_NOTE_ROOM ? l->result_max - READ_NOTE_ROOM
							: READ_NOTE_ROOM;
	run->bad_args = !take_args(j, run->kind, args, ctx->cwd);
	/* Even an argument error completes through the worker queue: the
	 * callback never runs inside this call. */
	int rc = uv_queue_work(ctx->loop, &run->work, work, after);
	if (rc < 0) {
		cerr_set(err, CERR_IO, 0, "cannot queue tool '%s': %s", name, uv_strerror(rc));
		job_release(j);
		free(run);
		return NULL;
	}
	return &run->run;
}

