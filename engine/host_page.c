/* host_page.c — a session's log read for a screen, on a worker (see
 * host.h, host_page_read). The read is persist/load_async's: the log
 * opened read-only by id, its end (load_tail) or all of it, then handed
 * to the caller's map on the same worker; only what map made reaches the
 * loop. Damage is judged here, by kind, so the screen gets a classified
 * error instead of a model of a log it cannot trust. */
#include "engine/host.h"

#include <stdlib.h>

#include "base/xalloc.h"
#include "engine/host_int.h"
#include "persist/load_async.h"

struct host_page {
	const struct load *l;
};

struct host_page_req {
	struct load_req *lr;
	enum host_page_kind kind;
	host_page_map_fn map;
	host_page_cb cb;
	void *ctx;
	struct cerr err; /* written on the worker when the load was refused */
	bool refused;
};

size_t host_page_count(const struct host_page *p)
{
	return load_count(p->l);
}

bool host_page_is_tail(const struct host_page *p)
{
	return load_is_tail(p->l);
}

cJSON *host_page_event(const struct host_page *p, size_t i, struct host_page_event *ev)
{
	const struct load_event *le = load_event(p->l, i);
	cJSON *line = load_json(p->l, i);
	*ev = (struct host_page_event){
		.type = (enum vocab_type)le->type,
		.turn = load_turn(p->l, i),
		.seq = le->seq,
		.t_ms = le->t,
		.data = line ? cJSON_GetObjectItem(line, "data") : NULL,
	};
	return line;
}

/* Whether kind accepts what the scan found; err set when not. */
static bool acceptable(enum host_page_kind kind, const struct scan *sc, struct cerr *err)
{
	if (sc->status == SCAN_OK || kind == HOST_PAGE_VALID)
		return true;
	if (kind == HOST_PAGE_EARLIER && sc->status == SCAN_TORN)
		return true; /* a writer's append seen half done: its valid part */
	if (sc->status == SCAN_UNSUPPORTED) {
		cerr_set(err, CERR_UNSUPPORTED, 0, "the log needs a newer cairn: %s", sc->err.msg);
		return false;
	}
	if (sc->status == SCAN_TORN)
		cerr_set(err, CERR_CORRUPT, 0, "the log ends in a torn write at byte %llu",
			 (unsigned long long)sc->good_len);
	else
		cerr_set(err, CERR_CORRUPT, 0, "the log is damaged at byte %llu: %s",
			 (unsigned long long)sc->damage_at, sc->err.msg);
	return false;
}

/* On the worker, with the load. */
static void *work(void *ctx, const char *id, const struct load *l)
{
	struct host_page_req *r = ctx;
	if (!acceptable(r->kind, load_scan(l), &r->err)) {
		r->refused = true;
		return NULL;
	}
	struct host_page p = {l};
	return r->map(r->ctx, id, &p);
}

/* On the loop. */
static void done(void *ctx, void *made, const struct cerr *err, bool canceled)
{
	struct host_page_req *r = ctx;
	r->cb(r->ctx, made, r->refused ? &r->err : err, canceled);
	free(r);
}

int host_page_read(struct host *h, const char *id, enum host_page_kind kind, size_t min_events,
		   host_page_map_fn map, host_page_cb cb, void *ctx, struct host_page_req **req,
		   struct cerr *err)
{
	if (h->closing)
		return cerr_set(err, CERR_USAGE, 0, "the host is closing");
	if ((kind == HOST_PAGE_END || kind == HOST_PAGE_EARLIER) && min_events == 0)
		return cerr_set(err, CERR_USAGE, 0, "a page of no events");
	struct host_page_req *r = xcalloc(1, sizeof *r);
	*r = (struct host_page_req){.kind = kind, .map = map, .cb = cb, .ctx = ctx};
	if (load_map_async(h->d.loop, h->root, id, min_events, work, done, r, &r->lr, err) < 0) {
		free(r);
		return -1;
	}
	if (req)
		*req = r;
	return 0;
}

bool host_page_cancel(struct host_page_req *r)
{
	return load_async_cancel(r->lr);
}
