/* test_sse.c — the SSE parser: line ends (LF, CRLF, CR, a CR and its LF in
 * different pieces), comments, multi-line data, event/id/retry per the
 * WHATWG rules, the BOM, the bound on an event, and the same events for
 * every way of cutting the input in two or three pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "engine/sse.h"

/* What the events were: "name[data]" each, data's LFs shown as '|'. */
struct rec {
	struct buf out;
	int stop_after; /* stop with code 7 after this many events (0: never) */
	int n;
};

static int on_event(void *ud, const char *name, const char *d, size_t len)
{
	struct rec *r = ud;
	assert_int_equal(d[len], '\0');
	buf_adds(&r->out, name);
	buf_addc(&r->out, '[');
	for (size_t i = 0; i < len; i++)
		buf_addc(&r->out, d[i] == '\n' ? '|' : d[i]);
	buf_addc(&r->out, ']');
	r->n++;
	return r->stop_after && r->n == r->stop_after ? 7 : 0;
}

/* Parse in[0..n) cut at a and b (a <= b <= n); the events as a string the
 * caller frees; *rc the first non-zero result (else 0). */
static char *parse_cut(const char *in, size_t n, size_t a, size_t b, size_t max, int *rc)
{
	struct rec r = {BUF_INIT, 0, 0};
	buf_adds(&r.out, "");
	struct sse *s = sse_new(max, on_event, &r);
	int x = sse_feed(s, in, a);
	if (!x)
		x = sse_feed(s, in + a, b - a);
	if (!x)
		x = sse_feed(s, in + b, n - b);
	if (rc)
		*rc = x;
	sse_free(s);
	return buf_detach(&r.out, NULL);
}

/* in, parsed whole and cut in two at every offset and in three at every
 * pair of offsets, gives the events `want`. */
static void expect_events(const char *in, size_t n, const char *want)
{
	int rc;
	char *whole = parse_cut(in, n, n, n, 0, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(whole, want);
	free(whole);
	for (size_t a = 0; a <= n; a++)
		for (size_t b = a; b <= n; b++) {
			char *got = parse_cut(in, n, a, b, 0, &rc);
			assert_int_equal(rc, 0);
			if (strcmp(got, want) != 0)
				fail_msg("cut at %zu and %zu: got '%s', want '%s'", a, b, got, want);
			free(got);
		}
}

#define EXPECT(lit, want) expect_events(lit, sizeof lit - 1, want)

static void test_cr_lf_and_crlf_all_end_lines(void **state)
{
	EXPECT("data: a\n\n", "message[a]");
	EXPECT("data: a\r\n\r\n", "message[a]");
	EXPECT("data: a\r\r", "message[a]");
	EXPECT("data: a\r\ndata: b\rdata: c\n\r\n", "message[a|b|c]");
	/* CR LF is one line end; CR CR and LF CR are two. */
	EXPECT("data: x\r\ndata: y\r\n\r\n", "message[x|y]");
	EXPECT("data: x\n\rdata: y\n\n", "message[x]message[y]");
	EXPECT("data: x\r\rdata: y\r\r", "message[x]message[y]");
}

static void test_cr_then_lf_in_the_next_piece(void **state)
{
	/* A parser that forgets the CR at the end of a piece sees the LF as a
	 * blank line and dispatches "x" alone. */
	static const char in[] = "data: x\r\ndata: y\r\n\r\n";
	size_t cr = strlen("data: x\r");
	char *got = parse_cut(in, sizeof in - 1, cr, cr, 0, NULL);
	assert_string_equal(got, "message[x|y]");
	free(got);
}

static void test_comments_are_skipped_and_bare_fields_empty(void **state)
{
	EXPECT(": keep-alive\n\n", "");
	EXPECT(":\ndata: a\n: between\ndata: b\n\n", "message[a|b]");
	EXPECT("data\n\n", "message[]");
	EXPECT("data:\n\n", "message[]");
	EXPECT("data:\ndata:\n\n", "message[|]");
	EXPECT("data:  two\n\n", "message[ two]");
	EXPECT("data:no-space\n\n", "message[no-space]");
	EXPECT("data: a: b\n\n", "message[a: b]");
	EXPECT("Data: a\ndata : b\nfoo: c\n\n", ""); /* names are exact */
	EXPECT("\n\n\n", "");
}

static void test_event_name_lasts_one_dispatched_event(void **state)
{
	EXPECT("event: ping\ndata: 1\n\n", "ping[1]");
	/* The name lasts one event; an event without data dispatches nothing
	 * and still resets the name. */
	EXPECT("event: a\ndata: 1\n\ndata: 2\n\n", "a[1]message[2]");
	EXPECT("event: a\n\ndata: 2\n\n", "message[2]");
	EXPECT("event: a\nevent: b\ndata: 3\n\n", "b[3]");
	EXPECT("event:\ndata: 4\n\n", "message[4]");
	EXPECT("event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n"
	       "event: content_block_delta\r\ndata: {\"text\":\"h\xc3\xa9\"}\r\n\r\n"
	       ": ping\r\n\r\nevent: message_stop\r\ndata: {}\r\n\r\n",
	       "message_start[{\"type\":\"message_start\"}]"
	       "content_block_delta[{\"text\":\"h\xc3\xa9\"}]message_stop[{}]");
}

static void test_last_id_and_retry_follow_valid_fields_only(void **state)
{
	struct rec r = {BUF_INIT, 0, 0};
	struct sse *s = sse_new(0, on_event, &r);
	assert_string_equal(sse_last_id(s), "");
	assert_int_equal(sse_retry_ms(s), -1);
	static const char a[] = "id: 5\nretry: 1500\ndata: a\n\n";
	assert_int_equal(sse_feed(s, a, sizeof a - 1), 0);
	assert_string_equal(sse_last_id(s), "5");
	assert_int_equal(sse_retry_ms(s), 1500);
	/* An id holding a NUL is ignored; a retry with a non-digit too. */
	static const char b[] = "id: 6\0x\nretry: 15x\nretry: \ndata: b\n\n";
	assert_int_equal(sse_feed(s, b, sizeof b - 1), 0);
	assert_string_equal(sse_last_id(s), "5");
	assert_int_equal(sse_retry_ms(s), 1500);
	/* The ID is set at dispatch, even by an event with no data, and
	 * persists until changed; "id" alone empties it. */
	static const char c[] = "id: 7\n\n";
	assert_int_equal(sse_feed(s, c, sizeof c - 1), 0);
	assert_string_equal(sse_last_id(s), "7");
	static const char d[] = "id: 8\ndata: x\n";
	assert_int_equal(sse_feed(s, d, sizeof d - 1), 0);
	assert_string_equal(sse_last_id(s), "7"); /* not dispatched yet */
	assert_int_equal(sse_feed(s, "\n", 1), 0);
	assert_string_equal(sse_last_id(s), "8");
	assert_int_equal(sse_feed(s, "id\n\n", 4), 0);
	assert_string_equal(sse_last_id(s), "");
	assert_string_equal(r.out.p, "message[a]message[b]message[x]");
	sse_free(s);
	buf_release(&r.out);
}

static void test_only_one_leading_bom_is_skipped(void **state)
{
	EXPECT("\xef\xbb\xbf"
	       "data: a\n\n",
	       "message[a]");
	/* Only one BOM, only at the start: a second is part of the field name. */
	EXPECT("\xef\xbb\xbf\xef\xbb\xbf"
	       "data: a\n\ndata: b\n\n",
	       "message[b]");
	EXPECT("data: \xef\xbb\xbf\n\n", "message[\xef\xbb\xbf]");
	/* A BOM's first bytes that turn out not to be one are kept. */
	EXPECT("\xef\xbb"
	       "data: a\n\ndata: b\n\n",
	       "message[b]");
}

static void test_incomplete_event_is_not_dispatched(void **state)
{
	struct rec r = {BUF_INIT, 0, 0};
	buf_adds(&r.out, "");
	struct sse *s = sse_new(0, on_event, &r);
	assert_false(sse_pending(s));
	assert_int_equal(sse_feed(s, "data: a\n", 8), 0);
	assert_true(sse_pending(s));
	assert_int_equal(sse_feed(s, "dat", 3), 0);
	assert_true(sse_pending(s));
	assert_string_equal(r.out.p, "");
	assert_int_equal(sse_feed(s, "a: b\n\n", 6), 0);
	assert_false(sse_pending(s));
	assert_string_equal(r.out.p, "message[a|b]");
	sse_free(s);
	buf_release(&r.out);
}

static void test_callback_stops_the_feed(void **state)
{
	struct rec r = {BUF_INIT, 2, 0};
	buf_adds(&r.out, "");
	struct sse *s = sse_new(0, on_event, &r);
	static const char in[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
	assert_int_equal(sse_feed(s, in, sizeof in - 1), 7);
	assert_string_equal(r.out.p, "message[1]message[2]");
	sse_free(s);
	buf_release(&r.out);
}

static void test_event_over_the_bound_fails_for_good(void **state)
{
	int rc;
	/* Within the bound: line + data + name of one event <= 32. */
	static const char ok[] = "event: e\ndata: 0123456789\ndata: 0123\n\n";
	char *got = parse_cut(ok, sizeof ok - 1, 0, 0, 32, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(got, "e[0123456789|0123]");
	free(got);
	/* The bound is per event: many events of that size pass. */
	struct buf many = BUF_INIT;
	for (int i = 0; i < 1000; i++)
		buf_adds(&many, ok);
	got = parse_cut(many.p, many.len, many.len / 3, many.len / 2, 32, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(strlen(got), 1000 * strlen("e[0123456789|0123]"));
	free(got);
	buf_release(&many);
	/* One more data line takes it over (line 10 + data 22 + name 1), at
	 * every cut. */
	static const char big[] = "event: e\ndata: 0123456789\ndata: 0123456789\ndata: 0123\n\ndata: z\n\n";
	for (size_t a = 0; a < sizeof big; a++) {
		got = parse_cut(big, sizeof big - 1, a, a, 32, &rc);
		assert_int_equal(rc, SSE_E_LIMIT);
		assert_string_equal(got, "");
		free(got);
	}
	/* A line that never ends, fed a byte at a time, fails as soon as it
	 * passes the bound: memory stays bounded. */
	struct rec r = {BUF_INIT, 0, 0};
	struct sse *s = sse_new(100, on_event, &r);
	size_t fed = 0;
	while ((rc = sse_feed(s, "x", 1)) == 0)
		fed++;
	assert_int_equal(rc, SSE_E_LIMIT);
	assert_int_equal(fed, 100);
	/* Dead for good. */
	assert_int_equal(sse_feed(s, "\n\n", 2), SSE_E_LIMIT);
	assert_int_equal(sse_feed(s, "", 0), SSE_E_LIMIT);
	sse_free(s);
	buf_release(&r.out);
	/* The default bound is SSE_EVENT_MAX. */
	size_t n = SSE_EVENT_MAX + 16;
	char *huge = malloc(n);
	memset(huge, 'x', n);
	memcpy(huge, "data: ", 6);
	got = parse_cut(huge, n, n / 2, n / 2, 0, &rc);
	assert_int_equal(rc, SSE_E_LIMIT);
	free(got);
	free(huge);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cr_lf_and_crlf_all_end_lines),
		cmocka_unit_test(test_cr_then_lf_in_the_next_piece),
		cmocka_unit_test(test_comments_are_skipped_and_bare_fields_empty),
		cmocka_unit_test(test_event_name_lasts_one_dispatched_event),
		cmocka_unit_test(test_last_id_and_retry_follow_valid_fields_only),
		cmocka_unit_test(test_only_one_leading_bom_is_skipped),
		cmocka_unit_test(test_incomplete_event_is_not_dispatched),
		cmocka_unit_test(test_callback_stops_the_feed),
		cmocka_unit_test(test_event_over_the_bound_fails_for_good),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
