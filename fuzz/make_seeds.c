/* make_seeds.c — the seed corpus of fuzz_log, written without cairn's code:
 * plain libzstd frames (content size + checksum, as the format requires)
 * around hand-written JSON lines.
 *
 *   make_seeds DIR   writes log-*.zst (whole logs: valid, torn, damaged,
 *                    unsupported) and lines-*.txt (frame contents, which
 *                    fuzz_log also frames behind a header). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

struct out {
	unsigned char *p;
	size_t len, cap;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (o->len + n > o->cap) {
		o->cap = (o->len + n) * 2;
		o->p = realloc(o->p, o->cap);
		if (!o->p)
			abort();
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
}

/* Append content as one frame with content size and checksum. */
static void frame(struct out *o, const char *content, size_t n)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
	size_t bound = ZSTD_compressBound(n);
	unsigned char *buf = malloc(bound);
	size_t r = ZSTD_compress2(c, buf, bound, content, n);
	if (!buf || ZSTD_isError(r))
		abort();
	put(o, buf, r);
	free(buf);
	ZSTD_freeCCtx(c);
}

static void frame_s(struct out *o, const char *content)
{
	frame(o, content, strlen(content));
}

static void save(const char *dir, const char *name, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

#define HDR(fmt, id) \
	"{\"seq\":0,\"t\":1700000000000,\"type\":\"session/header\",\"data\":{\"format\":" fmt \
	",\"id\":\"" id "\",\"created_at\":1700000000000,\"cwd\":\"/home/u/project\"}}\n"

static const char batch_turn[] =
	"{\"seq\":1,\"t\":1700000000001,\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{\"parent_turn\":null,\"client_submit_id\":\"s1\"}}\n"
	"{\"seq\":2,\"t\":1700000000002,\"type\":\"user/message\",\"turn\":\"t1\",\"data\":{\"text\":\"h\\u00e9llo \\\"x\\\" \\\\ \\ud83d\\ude00 \xe2\x9c\x93\"}}\n"
	"{\"seq\":3,\"t\":1700000000003,\"type\":\"tool/call\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c1\",\"name\":\"read\",\"args\":{\"path\":\"a\",\"n\":[1,2.5,-3e2,true,null]}}}\n"
	"{\"seq\":4,\"t\":1700000000004,\"type\":\"tool/started\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c1\"}}\n"
	"{\"seq\":5,\"t\":1700000000005,\"type\":\"tool/call\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c2\",\"name\":\"ls\",\"args\":{}}}\n";
static const char batch_end[] =
	"{\"seq\":6,\"t\":1700000000006,\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c1\",\"status\":\"ok\",\"output\":\"x\",\"exit_code\":0,\"truncated\":false}}\n"
	"{\"seq\":7,\"t\":1700000000007,\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c2\",\"status\":\"not_executed\",\"synthetic\":true,\"source_seqs\":[5]}}\n"
	"{\"seq\":8,\"t\":1700000000008,\"type\":\"assistant/text\",\"turn\":\"t1\",\"data\":{\"text\":\"done\"}}\n"
	"{\"seq\":9,\"t\":1700000000009,\"type\":\"x/future\",\"ignorable\":true,\"data\":{\"k\":1}}\n"
	"{\"seq\":10,\"t\":1700000000010,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"completed\",\"usage\":{\"in\":1}}}\n";
static const char batch_misc[] =
	"{\"seq\":11,\"t\":1700000000011,\"type\":\"session/meta\",\"data\":{\"title\":\"t\",\"pinned\":true}}\n"
	"{\"seq\":12,\"t\":1700000000012,\"type\":\"session/settings\",\"data\":{\"provider\":\"p\",\"model\":null,\"system_prompt\":\"s\"}}\n"
	"{\"seq\":13,\"t\":1700000000013,\"type\":\"turn/start\",\"turn\":\"t2\",\"data\":{}}\n"
	"{\"seq\":14,\"t\":1700000000014,\"type\":\"request/prepared\",\"turn\":\"t2\",\"data\":{}}\n"
	"{\"seq\":15,\"t\":1700000000015,\"type\":\"assistant/reasoning\",\"turn\":\"t2\",\"data\":{\"text\":\"hm\"}}\n"
	"{\"seq\":16,\"t\":1700000000016,\"type\":\"step/end\",\"turn\":\"t2\",\"data\":{}}\n"
	"{\"seq\":17,\"t\":1700000000017,\"type\":\"input/queued\",\"data\":{\"input_id\":\"i\",\"text\":\"q\"}}\n"
	"{\"seq\":18,\"t\":1700000000018,\"type\":\"input/dequeued\",\"data\":{\"input_id\":\"i\"}}\n"
	"{\"seq\":19,\"t\":1700000000019,\"type\":\"branch/rewind\",\"data\":{\"to_turn\":\"t1\"}}\n";

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR\n");
		return 2;
	}
	const char *dir = argv[1];
	struct out o = {0};

	frame_s(&o, HDR("1", "01HZX0000000000000000000AA"));
	save(dir, "log-header-only.zst", o.p, o.len);
	size_t hdr_len = o.len;

	frame_s(&o, batch_turn);
	size_t open_len = o.len;
	save(dir, "log-open-turn.zst", o.p, o.len);
	frame_s(&o, batch_end);
	frame_s(&o, batch_misc);
	save(dir, "log-full.zst", o.p, o.len);
	save(dir, "log-torn.zst", o.p, o.len - 7);
	save(dir, "log-torn-short.zst", o.p, o.len - (o.len - open_len) + 2);

	unsigned char *bad = malloc(o.len);
	memcpy(bad, o.p, o.len);
	bad[hdr_len + (open_len - hdr_len) / 2] ^= 0x10;
	save(dir, "log-corrupt.zst", bad, o.len);
	free(bad);

	/* A frame over one zstd block (128 KiB of content). */
	struct out big = {0};
	frame_s(&big, HDR("1", "big"));
	size_t n = 200 * 1024;
	char *line = malloc(n + 128);
	int k = snprintf(line, 128, "{\"seq\":1,\"t\":2,\"type\":\"assistant/text\",\"turn\":\"t\",\"data\":{\"text\":\"");
	for (size_t i = (size_t)k; i < n; i++)
		line[i] = "abcdefghij0123456789 "[(i * 7 + i / 13) % 21];
	memcpy(line + n, "\"}}\n", 4);
	frame(&big, line, n + 4);
	save(dir, "log-multiblock.zst", big.p, big.len);
	free(line);
	free(big.p);

	struct out u = {0};
	frame_s(&u, HDR("2", "fmt2"));
	frame_s(&u, "{\"seq\":1,\"t\":2,\"type\":\"user/message\",\"data\":{\"text\":\"x\"}}\n");
	save(dir, "log-format2.zst", u.p, u.len);
	u.len = 0;
	frame_s(&u, HDR("1", "unknown"));
	frame_s(&u, "{\"seq\":1,\"t\":2,\"type\":\"x/required\",\"data\":{}}\n");
	save(dir, "log-unknown-type.zst", u.p, u.len);
	free(u.p);

	/* Frame contents for the framed paths: lines continuing after a
	 * header (seq from 1), and a header line alone. */
	const char *b1 = batch_turn;
	save(dir, "lines-turn.txt", b1, strlen(b1));
	char renum[4096];
	snprintf(renum, sizeof renum,
		 "{\"seq\":1,\"t\":1,\"type\":\"tool/result\",\"turn\":\"t1\",\"data\":{\"call_id\":\"c1\",\"status\":\"outcome_unknown\",\"source_seqs\":[3]}}\n"
		 "{\"seq\":2,\"t\":1,\"type\":\"turn/end\",\"turn\":\"t1\",\"data\":{\"outcome\":\"interrupted\",\"error\":{\"m\":\"x\"}}}\n"
		 "{\"seq\":3,\"t\":9007199254740991,\"type\":\"y.z-w_1/a\",\"ignorable\":false,\"data\":{}}\n");
	save(dir, "lines-closers.txt", renum, strlen(renum));
	const char one[] = "{\"seq\":1,\"t\":2,\"type\":\"user/message\",\"data\":{\"text\":\"\\u0041\\n\\t\\/\"}}\n";
	save(dir, "lines-one.txt", one, sizeof one - 1);
	const char hdr[] = HDR("1", "a-b_C9");
	save(dir, "lines-header.txt", hdr, sizeof hdr - 1);
	/* Numbers a double cannot hold (rejected: they would read back as
	 * null and 0), one per line so a mutation can keep any one; the edges
	 * a double does hold; a null turn (rejected). */
	const char unstorable[] =
		"{\"seq\":1,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"n\",\"x\":1e400,\"y\":-1e400,\"z\":1e-400}}\n"
		"{\"seq\":2,\"t\":1,\"type\":\"x/n\",\"ignorable\":true,\"data\":{\"a\":[2e-324,1.8e308,-0.0e-999]}}\n"
		"{\"seq\":3,\"t\":1,\"type\":\"user/message\",\"turn\":null,\"data\":{\"text\":\"t\"}}\n";
	save(dir, "lines-unstorable.txt", unstorable, sizeof unstorable - 1);
	const char edges[] =
		"{\"seq\":1,\"t\":1,\"type\":\"user/message\",\"data\":{\"text\":\"e\",\"n\":[5e-324,1e-320,"
		"1.7976931348623157e308,-1.7976931348623157e308,0e-999,-0.0,1e-300,2.2250738585072014e-308]}}\n";
	save(dir, "lines-number-edges.txt", edges, sizeof edges - 1);
	struct out nl = {0};
	frame_s(&nl, HDR("1", "numbers"));
	frame_s(&nl, edges);
	frame_s(&nl, unstorable);
	save(dir, "log-unstorable-numbers.zst", nl.p, nl.len);
	free(nl.p);
	free(o.p);
	return 0;
}
