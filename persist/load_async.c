/* load_async.c — load and prepare on a libuv worker (see load_async.h). */
#include "persist/load_async.h"
#include "base/bgprio.h"
#include "base/xalloc.h"
#include "persist/prepare.h"
#include "persist/store.h"

#include <stdlib.h>
#include <unistd.h>

struct load_req {
	uv_work_t work;
	char *root, *id;
	bool has_opts;
	struct scan_opts opts;
	size_t tail;               /* > 0: load_tail of at least this many events */
	load_async_fn load_cb;     /* one of the three is set */
	prepare_async_fn prepare_cb;
	load_map_fn map_cb;
	load_map_work_fn map;      /* with map_cb: runs on the worker */
	void *made;                /* what map made of the load */
	void *ctx;
	/* Results, written by the worker, read on the loop after it. */
	struct load *load;
	struct prepared *prepared;
	struct cerr err;
	int rc;
};

/* On the worker: open the log read-only by id and read it. */
static void work(uv_work_t *w)
{
	struct load_req *r = w->data;
	struct store *st;
	struct session_ref ref;
	const struct scan_opts *o = r->has_opts ? &r->opts : NULL;
	bgprio_enter(); /* libuv's worker serves background work only */
	r->rc = -1;
	if (store_open(r->root, false, &st, &r->err) < 0)
		return;
	int fd = -1;
	if (store_resolve(st, r->id, &ref, &r->err) == 0)
		fd = store_open_log(st, &ref, false, &r->err);
	if (fd >= 0) {
		if (r->prepare_cb)
			r->rc = prepare_fd(fd, o, &r->prepared, &r->err);
		else if (r->tail)
			r->rc = load_tail(fd, r->tail, o, &r->load, &r->err);
		else
			r->rc = load_fd(fd, o, &r->load, &r->err);
		close(fd);
	}
	store_close(st);
	if (r->map && r->rc == 0) { /* the load goes once mapped, on the worker */
		r->made = r->map(r->ctx, r->id, r->load);
		load_free(r->load);
		r->load = NULL;
	}
}

/* On the loop: hand the result over and free the request. */
static void after(uv_work_t *w, int status)
{
	struct load_req *r = w->data;
	bool canceled = status == UV_ECANCELED;
	const struct cerr *err = canceled || r->rc == 0 ? NULL : &r->err;
	if (r->prepare_cb)
		r->prepare_cb(r->ctx, r->prepared, err, canceled);
	else if (r->map_cb)
		r->map_cb(r->ctx, r->made, err, canceled);
	else
		r->load_cb(r->ctx, r->load, err, canceled);
	free(r->root);
	free(r->id);
	free(r);
}

/* Queue r (its callbacks and options set by the caller) for root and id. */
static int queue(uv_loop_t *loop, struct load_req *r, const char *root, const char *id,
		 struct load_req **req, struct cerr *err)
{
	r->work.data = r;
	r->root = xstrdup(root);
	r->id = xstrdup(id);
	int rc = uv_queue_work(loop, &r->work, work, after);
	if (rc < 0) {
		free(r->root);
		free(r->id);
		free(r);
		return cerr_set(err, CERR_IO, 0, "cannot queue the load: %s", uv_strerror(rc));
	}
	if (req)
		*req = r;
	return 0;
}

static struct load_req *req_new(const struct scan_opts *o, size_t tail, void *ctx)
{
	struct load_req *r = xcalloc(1, sizeof *r);
	r->has_opts = o != NULL;
	if (o)
		r->opts = *o;
	r->tail = tail;
	r->ctx = ctx;
	return r;
}

int load_async_queue(uv_loop_t *loop, const char *root, const char *id, const struct scan_opts *o,
		     load_async_fn load_cb, prepare_async_fn prepare_cb, void *ctx,
		     struct load_req **req, struct cerr *err)
{
	struct load_req *r = req_new(o, 0, ctx);
	r->load_cb = load_cb;
	r->prepare_cb = prepare_cb;
	return queue(loop, r, root, id, req, err);
}

int load_async(uv_loop_t *loop, const char *root, const char *id, const struct scan_opts *o,
	       load_async_fn cb, void *ctx, struct load_req **req, struct cerr *err)
{
	return load_async_queue(loop, root, id, o, cb, NULL, ctx, req, err);
}

int load_map_async(uv_loop_t *loop, const char *root, const char *id, size_t min_events,
		   load_map_work_fn map, load_map_fn cb, void *ctx, struct load_req **req,
		   struct cerr *err)
{
	struct load_req *r = req_new(NULL, min_events, ctx);
	r->map = map;
	r->map_cb = cb;
	return queue(loop, r, root, id, req, err);
}

bool load_async_cancel(struct load_req *r)
{
	return uv_cancel((uv_req_t *)&r->work) == 0;
}
