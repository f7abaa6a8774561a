/* fifohold.c — a process that holds a session open through the FIFO, as a
 * chat host does (tests/cli/test_hold_cli.sh).
 *
 *   fifohold DATA_DIR ID
 *	post fifo_open(ID); once it completes print "HELD <next_seq>
 *	<closers>\n" (or "ERR <class> <message>\n" and exit with the class);
 *	then keep the session held until stdin ends, release it, close the
 *	FIFO and exit 0. */
#include "base/err.h"
#include "persist/fifo.h"
#include "persist/prepare.h"
#include "persist/scan.h"

#include <stdio.h>
#include <unistd.h>

#include <uv.h>

struct got {
	int calls;
	int code;
};

static void opened(struct fifo_item *it, void *ctx, const struct fifo_receipt *r,
		   const struct cerr *err)
{
	(void)it;
	struct got *g = ctx;
	g->calls++;
	if (err) {
		printf("ERR %d %s\n", (int)err->cls, err->msg);
		g->code = (int)err->cls;
	} else {
		printf("HELD %llu %zu\n", (unsigned long long)r->next_seq, r->closers);
		prepared_free(r->prepared);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fifohold DATA_DIR ID\n");
		return 2;
	}
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct cerr err = {0};
	struct fifo *f = fifo_new(&loop, argv[1], &(struct fifo_opts){.helpers = 0}, &err);
	if (!f) {
		fprintf(stderr, "fifohold: %s\n", err.msg);
		return 1;
	}
	struct got g = {0, 0};
	if (fifo_post(f, fifo_open(argv[2]), opened, &g, &err) < 0)
		return 1;
	while (g.calls == 0)
		uv_run(&loop, UV_RUN_ONCE);
	if (g.code == 0) {
		char buf[64];
		while (read(0, buf, sizeof buf) > 0)
			;
		fifo_post(f, fifo_release(argv[2]), NULL, NULL, &err);
	}
	fifo_close_wait(f, UINT64_MAX);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return g.code;
}
