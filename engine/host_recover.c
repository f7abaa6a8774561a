/* host_recover.c — start-up recovery of sessions a dead process left
 * running (host.h): the catalog names them (catalog_interrupted, on a
 * worker: no disk access on the loop), and each is opened through the
 * FIFO, which repairs it whatever the catalog says, then released. */
#include "engine/host_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "persist/catalog.h"
#include "persist/store.h"

struct recovery {
	uv_work_t w;
	struct host *h;
	char *root; /* a copy: the worker never touches the host */
	host_recover_cb cb;
	void *ctx;
	char **ids;
	size_t n, pending, recovered, failed;
	struct cerr err;
	bool asked;
};

static void ask(uv_work_t *w)
{
	struct recovery *rv = w->data;
	struct store *st = NULL;
	struct catalog *c = NULL;
	if (store_open(rv->root, false, &st, &rv->err) < 0 ||
	    catalog_open_ro(st, &c, &rv->err) < 0) {
		if (rv->err.cls == CERR_MISSING)
			rv->asked = true; /* no store or no catalog yet: nothing ran */
	} else if (catalog_interrupted(c, &rv->ids, &rv->n, &rv->err) == 0) {
		rv->asked = true;
	}
	catalog_close(c);
	store_close(st);
}

static void finish(struct recovery *rv)
{
	struct host *h = rv->h;
	rv->cb(rv->ctx, rv->recovered, rv->failed, NULL);
	for (size_t i = 0; i < rv->n; i++)
		free(rv->ids[i]);
	free(rv->ids);
	free(rv->root);
	free(rv);
	h->recoveries--;
	host_check_close(h);
}

static void one_done(struct recovery *rv, bool ok)
{
	if (ok)
		rv->recovered++;
	else
		rv->failed++;
	if (--rv->pending == 0)
		finish(rv);
}

static void released(void *ctx, const struct host_result *r, const struct cerr *err)
{
	(void)r;
	one_done(ctx, !err);
}

static void opened(void *ctx, const struct host_result *r, const struct cerr *err)
{
	struct recovery *rv = ctx;
	struct cerr e;
	if (err || host_release(rv->h, r->session, released, rv, &e) < 0)
		one_done(rv, false);
}

static void asked(uv_work_t *w, int status)
{
	struct recovery *rv = w->data;
	if (status < 0 && !rv->asked)
		cerr_set(&rv->err, CERR_IO, 0, "start-up recovery was canceled");
	if (rv->h->closing) { /* nothing is opened any more: next time */
		rv->asked = true;
		for (size_t i = 0; i < rv->n; i++)
			free(rv->ids[i]);
		rv->n = 0;
	}
	if (!rv->asked) {
		struct host *h = rv->h;
		rv->cb(rv->ctx, 0, 0, &rv->err);
		free(rv->ids);
		free(rv->root);
		free(rv);
		h->recoveries--;
		host_check_close(h);
		return;
	}
	rv->pending = 1; /* held until every open is posted */
	for (size_t i = 0; i < rv->n; i++) {
		struct cerr e;
		if (host_find(rv->h, rv->ids[i]))
			continue; /* ours already: its own open repaired it */
		rv->pending++;
		if (host_open(rv->h, rv->ids[i], opened, rv, &e) < 0)
			one_done(rv, false);
	}
	if (--rv->pending == 0)
		finish(rv);
}

int host_recover_interrupted(struct host *h, host_recover_cb cb, void *ctx, struct cerr *err)
{
	if (h->closing)
		return cerr_set(err, CERR_USAGE, 0, "the host is closing");
	struct recovery *rv = xcalloc(1, sizeof *rv);
	rv->w.data = rv;
	rv->h = h;
	rv->root = xstrdup(h->root);
	rv->cb = cb;
	rv->ctx = ctx;
	if (uv_queue_work(h->d.loop, &rv->w, ask, asked) != 0) {
		free(rv->root);
		free(rv);
		return cerr_set(err, CERR_IO, 0, "cannot queue work on the loop");
	}
	h->recoveries++;
	return 0;
}
