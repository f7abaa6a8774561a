/* test_host_page.c — host_page_read: a session's log read for a screen on
 * a worker. Its end and a page of earlier turns come in the log's order
 * and only what map made reaches the loop; a page asked past the start is
 * the whole log, not a tail; damage is a classified error by kind (a
 * preview or a page refuses it, a view-only read shows what is valid); a
 * session that is not there is CERR_MISSING; a closing host starts no
 * read. */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "persist/scan.h"
#include "persist/store.h"
#include "tests/unit/support_fixture.h"
#include "tests/unit/support_host.h"

static pthread_t loop_thread;

/* What a map saw of a page: one line per event, "seq type turn". */
struct seen {
	struct buf lines;
	size_t n;
	bool tail, on_loop_thread;
	uint64_t first_seq, last_seq;
};

static void *map_page(void *ctx, const char *id, const struct host_page *p)
{
	(void)ctx;
	(void)id;
	struct seen *s = calloc(1, sizeof *s);
	s->n = host_page_count(p);
	s->tail = host_page_is_tail(p);
	s->on_loop_thread = pthread_equal(pthread_self(), loop_thread);
	for (size_t i = 0; i < s->n; i++) {
		struct host_page_event ev;
		cJSON *line = host_page_event(p, i, &ev);
		assert_non_null(line);
		const cJSON *type = cJSON_GetObjectItem(line, "type");
		if (i == 0)
			s->first_seq = ev.seq;
		s->last_seq = ev.seq;
		buf_printf(&s->lines, "%llu %s %s\n", (unsigned long long)ev.seq, type->valuestring,
			   ev.turn ? ev.turn : "-");
		cJSON_Delete(line);
	}
	return s;
}

struct got {
	int calls;
	struct seen *s;
	struct cerr err;
	bool failed, canceled;
};

static void on_page(void *ctx, void *made, const struct cerr *err, bool canceled)
{
	struct got *g = ctx;
	g->calls++;
	g->s = made;
	g->canceled = canceled;
	if (err) {
		g->failed = true;
		g->err = *err;
	}
}

static void seen_free(struct seen *s)
{
	if (s)
		buf_release(&s->lines);
	free(s);
}

/* Events [from, n) of the log as "seq type turn" lines; caller frees. */
static char *want_lines(const struct scan *s, size_t from)
{
	struct buf b = BUF_INIT;
	for (size_t i = from; i < s->n_events; i++)
		buf_printf(&b, "%llu %s %s\n", (unsigned long long)s->events[i].seq, s->events[i].type,
			   s->events[i].turn ? s->events[i].turn : "-");
	return b.p;
}

/* A session of n turns in x->id, its host closed and started again. Each
 * prompt is 20 KB of letters that compress poorly, so that the log is
 * longer than the first window a read of its end takes. */
static void make_turns(struct hx *x, int n)
{
	struct host_call c = hx_offline_call();
	hx_create(x, &c);
	static char text[20 * 1024 + 1];
	uint32_t r = 12345;
	for (int i = 0; i < n; i++) {
		for (size_t k = 0; k + 1 < sizeof text; k++) {
			r = r * 1103515245u + 12345u;
			text[k] = (char)('a' + (r >> 16) % 26);
		}
		hx_send(x, text, NULL);
		WAIT(x, x->settled == i + 1);
	}
	hx_stop(x);
	hx_start(x);
	loop_thread = pthread_self();
}

static void read_page(struct hx *x, const char *id, enum host_page_kind kind, size_t min_events,
		      struct got *g)
{
	struct cerr err;
	*g = (struct got){0};
	assert_int_equal(host_page_read(x->h, id, kind, min_events, map_page, on_page, g, NULL, &err), 0);
	assert_int_equal(g->calls, 0); /* never from inside the call */
	WAIT(x, g->calls == 1);
}

static void test_host_page_end_and_earlier_turns_in_order(void **state)
{
	struct hx *x = *state;
	make_turns(x, 8);
	struct scan *s = hx_read_log(x);
	assert_true(s->n_events > 20);

	/* The end: at least 5 events, the last ones, in the log's order. */
	struct got end;
	read_page(x, x->id, HOST_PAGE_END, 5, &end);
	assert_false(end.failed);
	assert_non_null(end.s);
	assert_false(end.s->on_loop_thread);
	assert_true(end.s->tail);
	assert_true(end.s->n >= 5 && end.s->n < s->n_events);
	char *want = want_lines(s, s->n_events - end.s->n);
	assert_string_equal(end.s->lines.p, want);
	free(want);

	/* A page back: more than held, still the log's end, in order. */
	struct got page;
	read_page(x, x->id, HOST_PAGE_EARLIER, end.s->n + 6, &page);
	assert_false(page.failed);
	assert_non_null(page.s);
	assert_true(page.s->n > end.s->n);
	assert_true(page.s->first_seq < end.s->first_seq);
	assert_true(page.s->last_seq == end.s->last_seq);
	want = want_lines(s, s->n_events - page.s->n);
	assert_string_equal(page.s->lines.p, want);
	free(want);

	/* A page past the start: the whole log from its header, no tail. */
	struct got all;
	read_page(x, x->id, HOST_PAGE_EARLIER, s->n_events + 1000, &all);
	assert_false(all.failed);
	assert_false(all.s->tail);
	assert_int_equal(all.s->n, s->n_events);
	want = want_lines(s, 0);
	assert_string_equal(all.s->lines.p, want);
	free(want);
	assert_non_null(strstr(all.s->lines.p, " session/header -\n"));
	assert_true(strstr(all.s->lines.p, " session/header -\n") < strchr(all.s->lines.p, '\n'));

	seen_free(end.s);
	seen_free(page.s);
	seen_free(all.s);
	scan_free(s);
}

static void test_host_page_of_a_damaged_log_is_a_classified_error(void **state)
{
	struct hx *x = *state;
	make_turns(x, 8);
	struct scan *s = hx_read_log(x);
	assert_true(s->n_frames > 4);
	/* A byte flipped inside a frame in the middle: committed data damaged. */
	const struct scan_frame *fr = &s->frames[s->n_frames / 2];
	uint64_t at = fr->offset + fr->len / 2;
	char *p = session_path(x->root, STORE_SESSIONS, x->cwd, x->id, LOG_FILE);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, (off_t)at), 1);
	c ^= 0x5a;
	assert_int_equal(pwrite(fd, &c, 1, (off_t)at), 1);
	close(fd);
	free(p);

	struct got page, end, valid;
	read_page(x, x->id, HOST_PAGE_EARLIER, s->n_events + 10, &page);
	assert_true(page.failed);
	assert_null(page.s); /* never mapped */
	assert_int_equal(page.err.cls, CERR_CORRUPT);
	assert_non_null(strstr(page.err.msg, "damaged at byte"));

	read_page(x, x->id, HOST_PAGE_END, s->n_events + 10, &end);
	assert_true(end.failed);
	assert_null(end.s);
	assert_int_equal(end.err.cls, CERR_CORRUPT);

	/* View-only: what is valid, up to the damage. */
	read_page(x, x->id, HOST_PAGE_VALID, 0, &valid);
	assert_false(valid.failed);
	assert_non_null(valid.s);
	assert_true(valid.s->n > 0 && valid.s->n <= s->frames[s->n_frames / 2].first_event);
	char *want = want_lines(s, 0);
	want[valid.s->lines.len] = '\0';
	assert_string_equal(valid.s->lines.p, want);
	free(want);
	seen_free(valid.s);
	scan_free(s);
}

static void test_host_page_of_no_session_is_missing(void **state)
{
	struct hx *x = *state;
	loop_thread = pthread_self();
	struct got g;
	read_page(x, "01ARYZ6S41TSV4RRFFQ69G5FAV", HOST_PAGE_END, 10, &g);
	assert_true(g.failed);
	assert_int_equal(g.err.cls, CERR_MISSING);
	assert_null(g.s);
	struct cerr err;
	assert_int_equal(host_page_read(x->h, "x", HOST_PAGE_EARLIER, 0, map_page, on_page, &g, NULL,
					&err),
			 -1);
	assert_int_equal(err.cls, CERR_USAGE);
	/* A closing host reads nothing more. */
	int hc = 0;
	assert_int_equal(host_close(x->h, clock_mono_ns() / 1000000 + 20000, hx_host_closed, &hc), 0);
	assert_int_equal(host_page_read(x->h, x->id[0] ? x->id : "01ARYZ6S41TSV4RRFFQ69G5FAV",
					HOST_PAGE_END, 10, map_page, on_page, &g, NULL, &err),
			 -1);
	assert_int_equal(err.cls, CERR_USAGE);
	WAIT(x, hc != 0);
	host_free(x->h);
	x->h = NULL;
	hx_close_parts(x);
	hx_start(x); /* for the teardown */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_host_page_end_and_earlier_turns_in_order, hx_setup,
						hx_teardown),
		cmocka_unit_test_setup_teardown(test_host_page_of_a_damaged_log_is_a_classified_error,
						hx_setup, hx_teardown),
		cmocka_unit_test_setup_teardown(test_host_page_of_no_session_is_missing, hx_setup,
						hx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
