/* chat_files.c — the chat screen's files, off the loop (see chat_files.h).
 *
 * The clipboard file, root/clipboard.txt, is replaced whole (mode 0600):
 * what OSC 52 may not have put on the clipboard. The editor's file is a
 * new root/prompt-XXXXXX (mkstemp, 0600) holding the composer's text;
 * once the editor exits it is read back, at most the cap the screen asks
 * for (base/readfile: a regular file only), and removed either way. */
#include "app/chat_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/readfile.h"
#include "base/xalloc.h"

struct files {
	struct chat_files ops; /* first: what chat_files_new returns */
	uv_loop_t *loop;
	char *root;
};

enum cf_op { CF_CLIP, CF_EDIT_WRITE, CF_EDIT_READ, CF_EDIT_REMOVE };

struct cf_req {
	uv_work_t w;
	enum cf_op op;
	char *path;      /* the file (CF_EDIT_WRITE: its template until made) */
	struct buf text; /* what is written, or what was read */
	size_t max;      /* CF_EDIT_READ: bytes at most */
	chat_file_cb cb; /* NULL: CF_EDIT_REMOVE */
	void *ctx;
	/* written by the worker, read on the loop after it */
	struct cerr err;
	int rc;
};

/* Write all of b to fd: 0, or -1 with errno. */
static int write_all(int fd, const struct buf *b)
{
	size_t off = 0;
	while (off < b->len) {
		ssize_t w = write(fd, b->p + off, b->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

static void clip_write(struct cf_req *r)
{
	int fd = open(r->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd < 0 ? -1 : write_all(fd, &r->text);
	int e = errno;
	if (fd >= 0 && close(fd) < 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	if (rc < 0)
		r->rc = cerr_set(&r->err, CERR_IO, e, "cannot write %s: %s", r->path, strerror(e));
}

static void edit_write(struct cf_req *r)
{
	int fd = mkstemp(r->path);
	int rc = fd < 0 ? -1 : write_all(fd, &r->text);
	int e = errno;
	if (fd >= 0 && close(fd) < 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	if (rc < 0) {
		if (fd >= 0)
			unlink(r->path);
		r->rc = cerr_set(&r->err, CERR_IO, e, "%s", strerror(e));
	}
}

static void edit_read(struct cf_req *r)
{
	enum readfile_rc rc = readfile_path(r->path, r->max, &r->text);
	int e = errno;
	unlink(r->path);
	switch (rc) {
	case READFILE_OK:
		buf_addc(&r->text, '\0'); /* NUL terminated for the callback */
		r->text.len--;
		return;
	case READFILE_TOO_BIG:
		r->rc = cerr_set(&r->err, CERR_USAGE, 0, "it is larger than %zu bytes, the limit", r->max);
		break;
	case READFILE_ABSENT:
		r->rc = cerr_set(&r->err, CERR_MISSING, 0, "the editor removed it");
		break;
	case READFILE_NOT_REGULAR:
		r->rc = cerr_set(&r->err, CERR_USAGE, 0, "it is no longer a regular file");
		break;
	case READFILE_OPEN_ERROR:
	case READFILE_READ_ERROR:
		r->rc = cerr_set(&r->err, CERR_IO, e, "%s", strerror(e));
		break;
	}
	buf_release(&r->text);
}

static void work(uv_work_t *w)
{
	struct cf_req *r = w->data;
	switch (r->op) {
	case CF_CLIP:
		clip_write(r);
		break;
	case CF_EDIT_WRITE:
		edit_write(r);
		break;
	case CF_EDIT_READ:
		edit_read(r);
		break;
	case CF_EDIT_REMOVE:
		unlink(r->path);
		break;
	}
}

static void after(uv_work_t *w, int status)
{
	struct cf_req *r = w->data;
	(void)status; /* nothing cancels these */
	if (r->cb)
		r->cb(r->ctx, r->path, r->rc == 0 ? (r->text.p ? r->text.p : "") : NULL,
		      r->rc == 0 ? r->text.len : 0, r->rc == 0 ? NULL : &r->err);
	buf_release(&r->text);
	free(r->path);
	free(r);
}

/* Queue op on path (owned by the request from here) with text (copied). */
static int queue(struct files *f, enum cf_op op, char *path, const char *text, size_t n,
		 size_t max, chat_file_cb cb, void *ctx, struct cerr *err)
{
	struct cf_req *r = xcalloc(1, sizeof *r);
	r->w.data = r;
	r->op = op;
	r->path = path;
	r->max = max;
	r->cb = cb;
	r->ctx = ctx;
	buf_init(&r->text);
	if (text)
		buf_add(&r->text, text, n);
	int rc = uv_queue_work(f->loop, &r->w, work, after);
	if (rc < 0) {
		buf_release(&r->text);
		free(r->path);
		free(r);
		return cerr_set(err, CERR_IO, 0, "cannot queue the file's work: %s", uv_strerror(rc));
	}
	return 0;
}

static int ops_clip_write(void *fctx, const char *text, size_t n, chat_file_cb cb, void *ctx,
			  struct cerr *err)
{
	struct files *f = fctx;
	return queue(f, CF_CLIP, xasprintf("%s/clipboard.txt", f->root), text, n, 0, cb, ctx, err);
}

static int ops_edit_write(void *fctx, const char *text, size_t n, chat_file_cb cb, void *ctx,
			  struct cerr *err)
{
	struct files *f = fctx;
	return queue(f, CF_EDIT_WRITE, xasprintf("%s/prompt-XXXXXX", f->root), text, n, 0, cb, ctx,
		     err);
}

static int ops_edit_read(void *fctx, const char *path, size_t max, chat_file_cb cb, void *ctx,
			 struct cerr *err)
{
	return queue(fctx, CF_EDIT_READ, xstrdup(path), NULL, 0, max, cb, ctx, err);
}

static void ops_edit_remove(void *fctx, const char *path)
{
	struct cerr err; /* libuv refuses only work without a function: never here */
	(void)queue(fctx, CF_EDIT_REMOVE, xstrdup(path), NULL, 0, 0, NULL, NULL, &err);
}

struct chat_files *chat_files_new(uv_loop_t *loop, const char *root)
{
	struct files *f = xcalloc(1, sizeof *f);
	f->loop = loop;
	f->root = xstrdup(root);
	f->ops = (struct chat_files){.clip_write = ops_clip_write, .edit_write = ops_edit_write,
				     .edit_read = ops_edit_read, .edit_remove = ops_edit_remove,
				     .fctx = f};
	return &f->ops;
}

void chat_files_free(struct chat_files *ops)
{
	if (!ops)
		return;
	struct files *f = ops->fctx;
	free(f->root);
	free(f);
}
