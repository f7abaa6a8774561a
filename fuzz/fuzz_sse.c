/* fuzz_sse.c — libFuzzer target for the SSE parser (engine/sse.c).
 *
 * Each input is parsed whole, one byte at a time, and in pieces cut at
 * pseudo-random offsets drawn from the input itself, each way with the
 * default bound and with a small one (so the limit path is reached). The
 * invariant: every split gives the same event sequence, the same result,
 * the same last ID, retry and pending state; events never hold a line
 * terminator where the spec forbids one. Run with fuzz/run.sh. */
#include "base/buf.h"
#include "engine/sse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                       \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "fuzz_sse: invariant failed: %s (%s:%d)\n", #cond,  \
				__FILE__, __LINE__);                                        \
			abort();                                                            \
		}                                                                           \
	} while (0)

#define SMALL_MAX 64u

struct run {
	struct buf events; /* name NUL len NUL data, per event */
	size_t max;
	int rc;
	int pending;
	long long retry;
	struct buf last_id;
};

static int on_event(void *ud, const char *name, const char *d, size_t len)
{
	struct run *r = ud;
	REQUIRE(name); /* "" when the name held a NUL: names are C strings */
	REQUIRE(!strpbrk(name, "\r\n"));
	REQUIRE(d[len] == '\0');
	REQUIRE(len <= r->max);
	REQUIRE(!memchr(d, '\r', len));
	buf_adds(&r->events, name);
	buf_addc(&r->events, '\0');
	buf_add_int(&r->events, (int64_t)len);
	buf_addc(&r->events, '\0');
	buf_add(&r->events, d, len);
	return 0;
}

/* Parse the input cut into pieces: step 0 means pseudo-random cuts. */
static void parse(struct run *r, const uint8_t *p, size_t n, size_t max, size_t step)
{
	memset(r, 0, sizeof *r);
	r->max = max ? max : SSE_EVENT_MAX;
	struct sse *s = sse_new(max, on_event, r);
	uint32_t x = 2166136261u;
	for (size_t i = 0; i < n; i++)
		x = (x ^ p[i]) * 16777619u;
	size_t off = 0;
	while (off < n && r->rc == 0) {
		size_t k = step;
		if (!k) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			k = x % 9; /* empty pieces too */
		}
		if (k > n - off)
			k = n - off;
		r->rc = sse_feed(s, p + off, k);
		off += k;
	}
	r->pending = sse_pending(s);
	r->retry = sse_retry_ms(s);
	buf_adds(&r->last_id, sse_last_id(s));
	sse_free(s);
}

static void same(const struct run *a, const struct run *b)
{
	REQUIRE(a->rc == b->rc);
	REQUIRE(a->rc == 0 || a->rc == SSE_E_LIMIT);
	REQUIRE(a->events.len == b->events.len);
	REQUIRE(a->events.len == 0 || memcmp(a->events.p, b->events.p, a->events.len) == 0);
	REQUIRE(a->retry == b->retry);
	REQUIRE(a->last_id.len == b->last_id.len);
	REQUIRE(a->last_id.len == 0 || memcmp(a->last_id.p, b->last_id.p, a->last_id.len) == 0);
	if (a->rc == 0)
		REQUIRE(a->pending == b->pending);
}

static void release(struct run *r)
{
	buf_release(&r->events);
	buf_release(&r->last_id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t limits[] = {0, SMALL_MAX};
	for (size_t l = 0; l < 2; l++) {
		struct run whole, bytes, cuts;
		parse(&whole, data, size, limits[l], size ? size : 1);
		parse(&bytes, data, size, limits[l], 1);
		parse(&cuts, data, size, limits[l], 0);
		same(&whole, &bytes);
		same(&whole, &cuts);
		release(&whole);
		release(&bytes);
		release(&cuts);
	}
	return 0;
}
