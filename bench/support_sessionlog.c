/* support_sessionlog.c — generated session logs and the raw load baseline
 * (see support_sessionlog.h). */
#include "bench/support_sessionlog.h"
#include "base/err.h"
#include "base/xalloc.h"
#include "bench/support_bench.h"
#include "persist/fsops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

void append_or_die(struct log *lg, const struct log_event *evs, size_t n)
{
	struct cerr e;
	if (log_append(lg, log_next_seq(lg), evs, n, NULL, &e) < 0)
		die_err("log_append", &e);
}

static const char *const words[] = {
	"the", "a", "function", "returns", "error", "file", "buffer", "when", "is", "not",
	"we", "should", "check", "this", "that", "value", "in", "of", "to", "and", "for",
	"test", "fails", "because", "pointer", "NULL", "struct", "log", "append", "frame",
	"seq", "turn", "call", "result", "with", "length", "size_t", "int", "return", "-1",
	"errno", "EIO", "fsync", "write", "read", "path", "directory", "session", "line",
	"JSON", "parse", "zstd", "compress", "header", "cursor", "lock", "open", "close",
	"Makefile", "build", "warning:", "unused", "variable", "src/main.c:42:7", "{", "}",
	"if", "(n", "==", "0)", "+=", "ok", "let's", "now", "I'll", "look", "at", "déjà",
	"naïve", "—", "→", "✓", "café", "über", "日本語", "🙂",
};

/* Pseudo-prose of about n bytes, with the odd newline, quote and tab so the
 * JSON carries escapes, and some non-ASCII so UTF-8 is exercised. */
void gen_text(struct buf *b, size_t n)
{
	buf_reset(b);
	size_t nw = sizeof words / sizeof words[0];
	while (b->len < n) {
		if (b->len) {
			unsigned r = rnd_in(0, 99);
			buf_addc(b, r < 4 ? '\n' : r < 5 ? '\t' : ' ');
		}
		const char *w = words[rnd() % nw];
		if (rnd_in(0, 49) == 0) {
			buf_addc(b, '"');
			buf_adds(b, w);
			buf_addc(b, '"');
		} else {
			buf_adds(b, w);
		}
	}
}


void batcher_flush(struct batcher *bt)
{
	if (bt->n == 0)
		return;
	append_or_die(bt->lg, bt->evs, bt->n);
	bt->frames++;
	for (size_t i = 0; i < bt->n; i++)
		cJSON_Delete(bt->data[i]);
	bt->total += bt->n;
	bt->n = 0;
	if (bt->total >= bt->target)
		bt->done = true;
}

void batcher_add(struct batcher *bt, const char *type, const char *turn, cJSON *data)
{
	if (bt->done) {
		cJSON_Delete(data);
		return;
	}
	bt->data[bt->n] = data;
	bt->evs[bt->n++] = (struct log_event){.type = type, .turn = turn, .data = data};
	if (bt->total + bt->n >= bt->target || bt->n == 8)
		batcher_flush(bt);
}

static const char *const paths[] = {
	"persist/log.c", "persist/scan.c", "base/json.c", "tui/view.c", "engine/turn.c",
	"Makefile", "docs/format.md", "tests/unit/test_log.c", "README.md", "app/main.c",
};

static cJSON *tool_args(const char *name, struct buf *tmp)
{
	cJSON *a = cJSON_CreateObject();
	const char *path = paths[rnd() % (sizeof paths / sizeof paths[0])];
	if (strcmp(name, "read_file") == 0) {
		cJSON_AddStringToObject(a, "path", path);
		cJSON_AddNumberToObject(a, "offset", rnd_in(1, 400));
		cJSON_AddNumberToObject(a, "limit", 200);
	} else if (strcmp(name, "bash") == 0) {
		cJSON_AddStringToObject(a, "command", "make -j2 BUILD=build test 2>&1 | tail -n 40");
		cJSON_AddNumberToObject(a, "timeout_ms", 120000);
		cJSON_AddBoolToObject(a, "background", 0);
	} else if (strcmp(name, "edit_file") == 0) {
		cJSON_AddStringToObject(a, "path", path);
		gen_text(tmp, rnd_in(40, 300));
		cJSON_AddStringToObject(a, "old_string", tmp->p);
		gen_text(tmp, rnd_in(40, 300));
		cJSON_AddStringToObject(a, "new_string", tmp->p);
		cJSON_AddBoolToObject(a, "replace_all", rnd_in(0, 9) == 0);
	} else {
		cJSON_AddStringToObject(a, "pattern", "log_append\\(|scan_fd\\(");
		cJSON *ps = cJSON_AddArrayToObject(a, "paths");
		for (unsigned i = rnd_in(1, 3); i > 0; i--)
			cJSON_AddItemToArray(ps, cJSON_CreateString(paths[rnd() % 10]));
		cJSON_AddBoolToObject(a, "case_insensitive", 1);
		cJSON_AddNumberToObject(a, "max_results", 50);
	}
	return a;
}

static cJSON *text_data(struct buf *tmp, unsigned lo, unsigned hi)
{
	gen_text(tmp, rnd_in(lo, hi));
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", tmp->p);
	return d;
}

/* Assistant text streamed in chunks, committed 1-3 chunks per batch. */
static void assistant_chunks(struct batcher *bt, const char *turn, struct buf *tmp)
{
	for (unsigned c = rnd_in(2, 8); c > 0 && !bt->done; c--) {
		batcher_add(bt, "assistant/text", turn, text_data(tmp, 30, 300));
		if (rnd_in(0, 2) == 0)
			batcher_flush(bt);
	}
	batcher_flush(bt);
}

void gen_turn(struct batcher *bt, unsigned turn_no, struct buf *tmp)
{
	static const char *const tools[] = {"read_file", "bash", "edit_file", "grep"};
	char turn[40], call_id[48];
	snprintf(turn, sizeof turn, "t%08u-%06u", turn_no, (unsigned)(rnd() % 1000000));
	cJSON *d = cJSON_CreateObject();
	char sub[32];
	snprintf(sub, sizeof sub, "sub-%u", turn_no);
	cJSON_AddStringToObject(d, "client_submit_id", sub);
	batcher_add(bt, "turn/start", turn, d);
	batcher_add(bt, "user/message", turn, text_data(tmp, 40, 1200));
	batcher_flush(bt);
	unsigned steps = rnd_in(0, 4);
	for (unsigned s = 0; s <= steps && !bt->done; s++) {
		batcher_add(bt, "request/prepared", turn, cJSON_CreateObject());
		batcher_flush(bt);
		assistant_chunks(bt, turn, tmp);
		if (s == steps)
			break;
		const char *name = tools[rnd() % 4];
		snprintf(call_id, sizeof call_id, "call_%u_%u_%08x", turn_no, s, (unsigned)rnd());
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "call_id", call_id);
		cJSON_AddStringToObject(d, "name", name);
		cJSON_AddItemToObject(d, "args", tool_args(name, tmp));
		batcher_add(bt, "tool/call", turn, d);
		batcher_flush(bt);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "call_id", call_id);
		batcher_add(bt, "tool/started", turn, d);
		batcher_flush(bt);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "call_id", call_id);
		bool err = rnd_in(0, 9) == 0;
		cJSON_AddStringToObject(d, "status", err ? "error" : "ok");
		gen_text(tmp, rnd_in(100, 3000));
		cJSON_AddStringToObject(d, "output", tmp->p);
		if (strcmp(name, "bash") == 0)
			cJSON_AddNumberToObject(d, "exit_code", err ? 2 : 0);
		batcher_add(bt, "tool/result", turn, d);
		batcher_add(bt, "step/end", turn, cJSON_CreateObject());
		batcher_flush(bt);
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", "completed");
	cJSON *u = cJSON_AddObjectToObject(d, "usage");
	cJSON_AddNumberToObject(u, "input_tokens", rnd_in(1000, 120000));
	cJSON_AddNumberToObject(u, "output_tokens", rnd_in(10, 4000));
	cJSON_AddNumberToObject(u, "cache_read_tokens", rnd_in(0, 100000));
	batcher_add(bt, "step/end", turn, cJSON_CreateObject());
	batcher_add(bt, "turn/end", turn, d);
	batcher_flush(bt);
}

/* A turn of small events (mean ~200 bytes a line): a prompt, streamed
 * text, a small tool call and result, 1 to 3 events a frame. */
void gen_small_turn(struct batcher *bt, unsigned turn_no, struct buf *tmp)
{
	char turn[24], call[32];
	snprintf(turn, sizeof turn, "t%07u", turn_no);
	batcher_add(bt, "turn/start", turn, cJSON_CreateObject());
	gen_text(tmp, rnd_in(20, 330));
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "text", tmp->p);
	batcher_add(bt, "user/message", turn, d);
	batcher_flush(bt);
	for (unsigned k = rnd_in(2, 8); k > 0 && !bt->done; k--) {
		gen_text(tmp, rnd_in(30, 215));
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "text", tmp->p);
		batcher_add(bt, "assistant/text", turn, d);
		if (rnd_in(0, 2) == 0)
			batcher_flush(bt);
	}
	snprintf(call, sizeof call, "call_%u", turn_no);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "call_id", call);
	cJSON_AddStringToObject(d, "name", "read_file");
	cJSON_AddItemToObject(d, "args", cJSON_CreateObject());
	batcher_add(bt, "tool/call", turn, d);
	batcher_flush(bt);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "call_id", call);
	cJSON_AddStringToObject(d, "status", "ok");
	gen_text(tmp, rnd_in(30, 270));
	cJSON_AddStringToObject(d, "output", tmp->p);
	batcher_add(bt, "tool/result", turn, d);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "outcome", "completed");
	batcher_add(bt, "turn/end", turn, d);
	batcher_flush(bt);
}

char *sessionlog_build(struct store *st, const char *project, size_t events,
		       void (*gen)(struct batcher *, unsigned, struct buf *), const char *last,
		       char id[64])
{
	const struct fsops *saved = fsops;
	fsops = fsops_nosync();
	struct log *lg;
	struct cerr e;
	if (log_create(st, NULL, project, NULL, &lg, &e) < 0)
		die_err("log_create", &e);
	struct batcher bt = {.lg = lg, .total = 1, .target = events};
	struct buf tmp = BUF_INIT;
	for (unsigned t = 1; !bt.done; t++)
		gen(&bt, t, &tmp);
	if (last) {
		cJSON *d[4] = {cJSON_CreateObject(), cJSON_CreateObject(), cJSON_CreateObject(),
			       cJSON_CreateObject()};
		cJSON_AddStringToObject(d[1], "text", "the last prompt");
		cJSON_AddStringToObject(d[2], "text", last);
		cJSON_AddStringToObject(d[3], "outcome", "completed");
		const struct log_event evs[4] = {
			{.type = "turn/start", .turn = "tlast", .data = d[0]},
			{.type = "user/message", .turn = "tlast", .data = d[1]},
			{.type = "assistant/text", .turn = "tlast", .data = d[2]},
			{.type = "turn/end", .turn = "tlast", .data = d[3]},
		};
		append_or_die(lg, evs, 4);
		for (int i = 0; i < 4; i++)
			cJSON_Delete(d[i]);
	}
	fsops = saved;
	buf_release(&tmp);
	char *path = xstrdup(log_path(lg));
	if (id)
		snprintf(id, 64, "%s", log_id(lg));
	log_close(lg);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		die("fsync %s: %s", path, strerror(errno));
	close(fd);
	return path;
}

/* Baseline: what any reader of these bytes must at least do — decompress
 * each frame (checksum verified by zstd) and cJSON-parse each line, keeping
 * the results as a load does. Returns the number of lines parsed. */

size_t raw_load(const char *path, size_t expect, bool keep, struct raw_load *rl)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		die("fstat: %s", strerror(errno));
	size_t n = (size_t)sb.st_size;
	uint8_t *p = xmalloc(n);
	if (fs_pread_all(fd, p, n, 0) != (ssize_t)n)
		die("read %s", path);
	close(fd);
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	size_t cap = 1024, lines = 0;
	memset(rl, 0, sizeof *rl);
	if (keep) {
		rl->contents = xmalloc(cap * sizeof *rl->contents);
		rl->roots = xmalloc(expect * sizeof *rl->roots);
	}
	for (size_t pos = 0; pos < n;) {
		size_t flen = ZSTD_findFrameCompressedSize(p + pos, n - pos);
		unsigned long long csize = ZSTD_getFrameContentSize(p + pos, n - pos);
		if (ZSTD_isError(flen) || csize == ZSTD_CONTENTSIZE_ERROR ||
		    csize == ZSTD_CONTENTSIZE_UNKNOWN)
			die("baseline: bad frame at %zu", pos);
		char *out = xmalloc((size_t)csize + 1);
		size_t r = ZSTD_decompressDCtx(dctx, out, (size_t)csize, p + pos, flen);
		if (ZSTD_isError(r) || r != csize)
			die("baseline: decompress at %zu: %s", pos, ZSTD_getErrorName(r));
		rl->content_bytes += r;
		for (const char *q = out, *end = out + r; q < end;) {
			const char *nl = memchr(q, '\n', (size_t)(end - q));
			cJSON *v = cJSON_ParseWithLength(q, (size_t)(nl - q));
			if (!v)
				die("baseline: parse failed");
			if (keep && lines < expect)
				rl->roots[rl->n_roots++] = v;
			else
				cJSON_Delete(v);
			lines++;
			q = nl + 1;
		}
		if (keep) {
			if (rl->n_contents == cap)
				rl->contents = xreallocarray(rl->contents, cap *= 2, sizeof *rl->contents);
			rl->contents[rl->n_contents++] = out;
		} else {
			free(out);
		}
		pos += flen;
	}
	ZSTD_freeDCtx(dctx);
	free(p);
	return lines;
}

void raw_free(struct raw_load *rl)
{
	for (size_t i = 0; i < rl->n_roots; i++)
		cJSON_Delete(rl->roots[i]);
	for (size_t i = 0; i < rl->n_contents; i++)
		free(rl->contents[i]);
	free(rl->roots);
	free(rl->contents);
}

