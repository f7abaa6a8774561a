/* crashwriter.c — the writer process of the crash test (tests/cli/test_crash.sh).
 *
 *   crashwriter DATA_DIR ID|--new [MAX_BATCHES]
 *	append deterministic batches to a session in a loop until killed (or
 *	MAX_BATCHES); after each durable append write "ACK <next_seq>\n" to
 *	stdout with one write(2). --new first prints "ID <id>\n" once the
 *	session exists. Reopening repairs what a kill left (torn tail, open
 *	turn) and prints "REPAIR <first_seq> <next_seq>\n"; then, before the
 *	first append, "READY <next_seq>\n".
 *   crashwriter --check LAST_ACK ID [PREFIX_FILE] < <(cairn log cat ID)
 *	verify a log's events against the same generator: every batch whole
 *	and exact, synthetic closers exactly where a turn was left open, and
 *	nothing below LAST_ACK missing. With PREFIX_FILE, the input must also
 *	start with that file's bytes (the acknowledged lines of the previous
 *	check), which are then replaced by this check's acknowledged lines.
 *	Prints "OK <events> <closer runs>".
 *
 * The content of a batch is a function of its first seq and of whether a
 * turn is open, so any process can tell what the log must hold. */
#include "base/buf.h"
#include "base/xalloc.h"
#include "persist/log.h"
#include "persist/repair.h"
#include "persist/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define BATCH_MAX 8
#define BIG_TEXT (160u * 1024u) /* more than one zstd block in a frame */

/* The generator's view of the session: is a turn open, and with what call. */
struct gstate {
	uint64_t salt;     /* from the session id: sessions differ */
	bool open;
	uint64_t turn_seq; /* turn id is "t<turn_seq>" */
	uint64_t call_seq; /* call id is "c<call_seq>", its tool/call's seq */
	bool started;
};

struct gevent {
	const char *type;
	char turn[32]; /* empty: no turn */
	cJSON *data;
};

struct gbatch {
	struct gevent ev[BATCH_MAX];
	size_t n;
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t salt_of(const char *id)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (const char *p = id; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

/* The text of the event at seq: usually short, sometimes over 128 KiB,
 * with characters JSON must escape and multi-byte UTF-8. */
static cJSON *text_data(uint64_t salt, uint64_t seq, const char *field)
{
	static const char alphabet[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \"\\/\n\t{}";
	uint64_t h = mix(mix(seq ^ salt) ^ 0x7e47u);
	size_t len = 8 + h % 240;
	if (h % 41 == 0)
		len = BIG_TEXT + h % 4096;
	char *s = xmalloc(len + 64);
	int off = snprintf(s, 64, "seq %" PRIu64 " \xc3\xa9\xe2\x9c\x93 ", seq);
	uint64_t r = h | 1;
	for (size_t i = (size_t)off; i < len; i++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		s[i] = alphabet[r % (sizeof alphabet - 1)];
	}
	s[len > (size_t)off ? len : (size_t)off] = '\0';
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, field, s);
	free(s);
	return d;
}

static struct gevent *add(struct gbatch *b, const char *type, const struct gstate *st, cJSON *data)
{
	struct gevent *e = &b->ev[b->n++];
	e->type = type;
	e->turn[0] = '\0';
	if (st && st->open)
		snprintf(e->turn, sizeof e->turn, "t%" PRIu64, st->turn_seq);
	e->data = data;
	return e;
}

static cJSON *call_id_data(const struct gstate *st)
{
	char id[32];
	snprintf(id, sizeof id, "c%" PRIu64, st->call_seq);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "call_id", id);
	return d;
}

/* The batch that starts at seq pos in state *st; updates *st. */
static void generate(uint64_t pos, struct gstate *st, struct gbatch *b)
{
	uint64_t h = mix(pos ^ st->salt);
	b->n = 0;
	if (!st->open && h % 4 == 0) {
		/* Open a turn that a later batch finishes: a kill in between
		 * leaves it for repair to close. */
		st->open = true;
		st->turn_seq = pos;
		st->call_seq = pos + 2;
		st->started = (h >> 4) & 1;
		add(b, "turn/start", st, cJSON_CreateObject());
		add(b, "user/message", st, text_data(st->salt, pos + 1, "text"));
		cJSON *d = call_id_data(st);
		cJSON_AddStringToObject(d, "name", "echo");
		cJSON *args = cJSON_AddObjectToObject(d, "args");
		cJSON_AddNumberToObject(args, "seq", (double)st->call_seq);
		add(b, "tool/call", st, d);
		if (st->started)
			add(b, "tool/started", st, call_id_data(st));
	} else if (!st->open) {
		size_t n = 1 + (h >> 8) % 5;
		for (size_t i = 0; i < n; i++)
			add(b, "user/message", NULL, text_data(st->salt, pos + i, "text"));
	} else if (h % 3 == 0) {
		if (!st->started)
			add(b, "tool/started", st, call_id_data(st));
		cJSON *r = call_id_data(st);
		cJSON_AddStringToObject(r, "status", "ok");
		cJSON_AddItemToObject(r, "output", text_data(st->salt, pos + b->n, "stdout"));
		add(b, "tool/result", st, r);
		add(b, "assistant/text", st, text_data(st->salt, pos + b->n, "text"));
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "outcome", "completed");
		add(b, "turn/end", st, e);
		st->open = false;
	} else {
		size_t n = 1 + (h >> 8) % 4;
		for (size_t i = 0; i < n; i++)
			add(b, "assistant/text", st, text_data(st->salt, pos + i, "text"));
	}
}

static void batch_release(struct gbatch *b)
{
	for (size_t i = 0; i < b->n; i++)
		cJSON_Delete(b->ev[i].data);
	b->n = 0;
}

/* One line, one write(2): a reader never sees an acknowledgement that was
 * not made, whenever the process dies. */
static void emit(const char *line)
{
	const char *p = line;
	size_t n = strlen(line);
	while (n > 0) {
		ssize_t w = write(1, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			exit(3);
		p += w;
		n -= (size_t)w;
	}
}

static int die(const char *what, const struct cerr *err)
{
	fprintf(stderr, "crashwriter: %s: %s\n", what, err->msg);
	return 1;
}

static int run_writer(const char *root, const char *id, unsigned long max_batches)
{
	struct store *st = NULL;
	struct log *lg = NULL;
	struct cerr err;
	struct gstate gs = {0};
	bool is_new = strcmp(id, "--new") == 0;
	if (store_open(root, true, &st, &err) < 0)
		return die("open store", &err);
	if (is_new) {
		if (log_create(st, NULL, NULL, NULL, &lg, &err) < 0)
			return die("create", &err);
	} else {
		if (log_open(st, id, &lg, &err) < 0)
			return die("open", &err);
		const struct scan *s = log_scan(lg);
		if (s->status == SCAN_TORN || scan_open_turn(s)) {
			struct repair_report rep;
			if (repair_log(lg, &rep, &err) < 0)
				return die("repair", &err);
			cJSON_Delete(rep.closers);
			char line[96];
			snprintf(line, sizeof line, "REPAIR %" PRIu64 " %" PRIu64 "\n", rep.first_seq,
				 rep.next_seq);
			emit(line);
		}
	}
	gs.salt = salt_of(log_id(lg));
	uint64_t next = log_next_seq(lg);
	if (!is_new) {
		char line[96];
		snprintf(line, sizeof line, "READY %" PRIu64 "\n", next);
		emit(line);
	}
	for (unsigned long k = 0; max_batches == 0 || k < max_batches; k++) {
		struct gbatch b;
		struct log_event evs[BATCH_MAX];
		generate(next, &gs, &b);
		for (size_t i = 0; i < b.n; i++)
			evs[i] = (struct log_event){b.ev[i].type, b.ev[i].turn[0] ? b.ev[i].turn : NULL,
						    false, b.ev[i].data, 0};
		uint64_t after;
		int r = log_append(lg, next, evs, b.n, &after, &err);
		batch_release(&b);
		if (r < 0)
			return die("append", &err);
		char line[96];
		if (is_new && next == 1) {
			snprintf(line, sizeof line, "ID %s\n", log_id(lg));
			emit(line);
		}
		next = after;
		snprintf(line, sizeof line, "ACK %" PRIu64 "\n", next);
		emit(line);
	}
	log_close(lg);
	store_close(st);
	return 0;
}

/* --- the checker ----------------------------------------------------------- */

static const char *str_field(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool is_synthetic(const cJSON *ev)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "data");
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "synthetic"));
}

static int fail_at(uint64_t seq, const char *why)
{
	printf("FAIL at seq %" PRIu64 ": %s\n", seq, why);
	return 1;
}

/* The closers repair must have appended for state st at L[pos...]. */
static int check_closers(cJSON **L, size_t n, size_t *pos, struct gstate *st)
{
	if (!st->open)
		return fail_at(*pos, "synthetic events where no turn was open");
	char turn[32], call[32];
	snprintf(turn, sizeof turn, "t%" PRIu64, st->turn_seq);
	snprintf(call, sizeof call, "c%" PRIu64, st->call_seq);
	if (*pos + 2 > n)
		return fail_at(*pos, "incomplete closers");
	const cJSON *r = L[*pos], *e = L[*pos + 1];
	const cJSON *rd = cJSON_GetObjectItemCaseSensitive(r, "data");
	const cJSON *ed = cJSON_GetObjectItemCaseSensitive(e, "data");
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(rd, "source_seqs");
	if (!same_str(str_field(r, "type"), "tool/result") || !same_str(str_field(r, "turn"), turn) ||
	    !same_str(str_field(rd, "call_id"), call) ||
	    !same_str(str_field(rd, "status"), st->started ? "outcome_unknown" : "not_executed") ||
	    cJSON_GetArraySize(src) != 1 || !cJSON_IsNumber(src->child) ||
	    (uint64_t)src->child->valuedouble != st->call_seq)
		return fail_at(*pos, "wrong synthetic tool/result");
	if (!same_str(str_field(e, "type"), "turn/end") || !same_str(str_field(e, "turn"), turn) ||
	    !same_str(str_field(ed, "outcome"), "interrupted") || !is_synthetic(e))
		return fail_at(*pos + 1, "wrong synthetic turn/end");
	*pos += 2;
	st->open = false;
	return 0;
}

/* The whole of a file or stream; NULL when it cannot be read. */
static char *slurp(FILE *f, size_t *len)
{
	struct buf b = BUF_INIT;
	char chunk[65536];
	size_t r;
	while ((r = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_add(&b, chunk, r);
	if (ferror(f)) {
		buf_release(&b);
		return NULL;
	}
	buf_grow(&b, 1);
	return buf_detach(&b, len);
}

static int run_check(const char *last_ack_arg, const char *id, const char *prefix_path)
{
	uint64_t last_ack = strtoull(last_ack_arg, NULL, 10);
	cJSON **L = NULL;
	size_t n = 0, cap = 0, in_len = 0, prefix_end = 0;
	char *in = slurp(stdin, &in_len);
	if (!in)
		return fail_at(0, "cannot read standard input");
	/* Acknowledged events never change: the lines checked last time must
	 * come back byte for byte. */
	if (prefix_path) {
		FILE *pf = fopen(prefix_path, "rb");
		size_t plen = 0;
		char *prev = pf ? slurp(pf, &plen) : NULL;
		if (pf)
			fclose(pf);
		if (pf && (!prev || plen > in_len || memcmp(prev, in, plen) != 0)) {
			printf("FAIL: the acknowledged prefix changed since the last check\n");
			return 1;
		}
		free(prev);
	}
	for (size_t off = 0; off < in_len;) {
		char *nl = memchr(in + off, '\n', in_len - off);
		size_t len = nl ? (size_t)(nl - (in + off)) : in_len - off;
		cJSON *o = cJSON_ParseWithLength(in + off, len);
		if (!o)
			return fail_at(n, "log cat printed a line that is not JSON");
		const cJSON *seq = cJSON_GetObjectItemCaseSensitive(o, "seq");
		if (!cJSON_IsNumber(seq) || (uint64_t)seq->valuedouble != n)
			return fail_at(n, "seq not contiguous from 0");
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			L = xreallocarray(L, cap, sizeof *L);
		}
		L[n++] = o;
		off += len + (nl ? 1 : 0);
		if (n == last_ack)
			prefix_end = off;
	}
	if (n == 0 || !same_str(str_field(L[0], "type"), "session/header"))
		return fail_at(0, "no header first");
	if (n < last_ack) {
		printf("FAIL: %zu events, but seq %" PRIu64 " was acknowledged\n", n, last_ack - 1);
		return 1;
	}
	if (!same_str(str_field(cJSON_GetObjectItemCaseSensitive(L[0], "data"), "id"), id))
		return fail_at(0, "header of another session");
	struct gstate st = {.salt = salt_of(id)};
	size_t pos = 1, closer_runs = 0;
	while (pos < n) {
		if (is_synthetic(L[pos])) {
			if (check_closers(L, n, &pos, &st))
				return 1;
			closer_runs++;
			continue;
		}
		struct gbatch b;
		generate(pos, &st, &b);
		if (pos + b.n > n) {
			batch_release(&b);
			return fail_at(pos, "part of a batch is missing (appends must be all or nothing)");
		}
		for (size_t i = 0; i < b.n; i++) {
			const cJSON *ev = L[pos + i];
			const char *turn = str_field(ev, "turn");
			if (!same_str(str_field(ev, "type"), b.ev[i].type) ||
			    !same_str(turn, b.ev[i].turn[0] ? b.ev[i].turn : NULL) ||
			    !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(ev, "data"), b.ev[i].data, true)) {
				batch_release(&b);
				return fail_at(pos + i, "event differs from the one written");
			}
		}
		pos += b.n;
		batch_release(&b);
	}
	if (prefix_path) {
		FILE *pf = fopen(prefix_path, "wb");
		if (!pf || fwrite(in, 1, prefix_end, pf) != prefix_end || fclose(pf) != 0)
			return fail_at(0, "cannot write the prefix file");
	}
	free(in);
	printf("OK %zu %zu\n", n, closer_runs);
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(L[i]);
	free(L);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "--check") == 0)
		return run_check(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: crashwriter DATA_DIR ID|--new [MAX_BATCHES]\n"
				"       crashwriter --check LAST_ACK ID [PREFIX_FILE] < <(cairn log cat ID)\n");
		return 2;
	}
	return run_writer(argv[1], argv[2], argc == 4 ? strtoul(argv[3], NULL, 10) : 0);
}
