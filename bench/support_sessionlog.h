/* support_sessionlog.h — realistic session logs for the load benches
 * (bench_log, bench_load): pseudo-prose, a turn's events batched the way a
 * session commits them (bench/README.md, test 3), written through
 * log_append; and the raw baseline that decompresses every frame and
 * cJSON-parses every line. */
#ifndef CAIRN_BENCH_SUPPORT_SESSIONLOG_H
#define CAIRN_BENCH_SUPPORT_SESSIONLOG_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "persist/log.h"

/* Collects events into durable batches and appends them to the log. */
struct batcher {
	struct log *lg;
	struct log_event evs[8];
	cJSON *data[8];
	size_t n;
	size_t total, target; /* events written, header included */
	size_t frames;
	bool done;
};

/* Append evs[0..n) at the log's next seq; dies on failure. */
void append_or_die(struct log *lg, const struct log_event *evs, size_t n);
/* Pseudo-prose of about n bytes into b (reset first). */
void gen_text(struct buf *b, size_t n);
/* Add one event (data taken over) to the batch; a full batch is appended. */
void batcher_add(struct batcher *bt, const char *type, const char *turn, cJSON *data);
/* Append the pending batch, if any. */
void batcher_flush(struct batcher *bt);
/* One turn of the mix, numbered turn_no; tmp is scratch. */
void gen_turn(struct batcher *bt, unsigned turn_no, struct buf *tmp);
/* One turn of small events (a line ~200 bytes on average: a prompt,
 * streamed text, a small tool call and result), 1 to 3 events a frame. */
void gen_small_turn(struct batcher *bt, unsigned turn_no, struct buf *tmp);

/* Writes a session of about `events` events for project in st through
 * log_append (syncs skipped while building, one real fsync at the end);
 * gen adds one turn; with last, a final turn of 4 events follows whose
 * answer is that text. Its id goes into id when not NULL. Returns the
 * log's path (the caller frees). */
char *sessionlog_build(struct store *st, const char *project, size_t events,
		       void (*gen)(struct batcher *, unsigned, struct buf *), const char *last,
		       char id[64]);

/* Baseline: what any reader of these bytes must at least do — decompress
 * each frame (checksum verified by zstd) and cJSON-parse each line, keeping
 * the results as a load does (keep) or freeing each tree at once. */
struct raw_load {
	char **contents;
	size_t n_contents;
	cJSON **roots;
	size_t n_roots;
	size_t content_bytes;
};

/* Returns the number of lines parsed; free a kept result with raw_free. */
size_t raw_load(const char *path, size_t expect, bool keep, struct raw_load *rl);
void raw_free(struct raw_load *rl);

#endif
