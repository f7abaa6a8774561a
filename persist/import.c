/* import.c — an export file checked whole, then published as a new log:
 * blobs first, then the log re-batched into frames, one no-overwrite
 * rename (the log's first publication). */
#include "persist/import.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/sha256.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "persist/blob.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/limits.h"
#include "persist/scan.h"
#include "persist/vocab.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMPORT_CHUNK_MAX (512u * 1024u) /* decoded bytes of one blob line */

struct imp_blob {
	struct blob_ref ref;   /* as the events name it */
	size_t named_line;     /* the first event line naming it */
	size_t first_line;     /* its first chunk's line (0: none yet) */
	struct buf data;       /* decoded so far */
};

struct import {
	char id[SESSION_ID_MAX + 1];
	char *cwd;             /* NULL: a null cwd */
	char *title;
	struct buf frames;     /* the log: header frame, then event frames */
	size_t head_len;
	uint64_t next_seq;
	struct imp_blob *blobs;
	size_t n_blobs, cap_blobs;
};

const char *import_id(const struct import *im) { return im->id; }
const char *import_title(const struct import *im) { return im->title; }
size_t import_events(const struct import *im) { return (size_t)im->next_seq; }
size_t import_blobs(const struct import *im) { return im->n_blobs; }

void import_free(struct import *im)
{
	if (!im)
		return;
	for (size_t i = 0; i < im->n_blobs; i++)
		buf_release(&im->blobs[i].data);
	free(im->blobs);
	free(im->cwd);
	free(im->title);
	buf_release(&im->frames);
	free(im);
}

static struct imp_blob *find_blob(struct import *im, const char *hex)
{
	for (size_t i = 0; i < im->n_blobs; i++)
		if (strcmp(im->blobs[i].ref.sha256, hex) == 0)
			return &im->blobs[i];
	return NULL;
}

static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Standard base64 with padding, strictly: -1 for anything else. */
static int b64_decode(const char *s, size_t n, struct buf *out)
{
	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		int pad = 0;
		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)s[i + k];
			if (c == '=' && i + 4 == n && k >= 2 && (k == 3 || s[i + 3] == '=')) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad || (v[k] = b64_val(c)) < 0)
				return -1;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		char b[3] = {(char)(w >> 16), (char)(w >> 8), (char)w};
		/* Bits the padding drops must be zero: one encoding per text. */
		if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
			return -1;
		buf_add(out, b, (size_t)(3 - pad));
	}
	return 0;
}

struct parser {
	struct import *im;
	const char *new_id;
	struct frame_codec *fc;
	struct buf content;    /* the frame being filled */
	struct buf line;       /* a rewritten line */
	size_t lineno;
};

static int flush_frame(struct parser *ps, struct cerr *err)
{
	if (!ps->content.len)
		return 0;
	if (frame_encode(ps->fc, ps->content.p, ps->content.len, &ps->im->frames) < 0)
		return cerr_set(err, CERR_IO, 0, "cannot compress the imported log");
	buf_reset(&ps->content);
	return 0;
}

/* The header (seq 0): format 1, its identity kept, or the new id with
 * imported_from. Alone in frame 0, as every log's header. */
static int take_header(struct parser *ps, struct event *ev, const char **out, size_t *out_len,
		       struct cerr *err)
{
	struct import *im = ps->im;
	if (ev->vtype != VT_SESSION_HEADER)
		return cerr_set(err, CERR_CORRUPT, 0, "line 1: the first event is '%s', not a "
				"session/header", ev->type);
	int64_t format;
	if (!json_get_int(cJSON_GetObjectItemCaseSensitive(ev->data, "format"), 0, INT64_MAX,
			  &format) || format != VOCAB_FORMAT)
		return cerr_set(err, CERR_UNSUPPORTED, 0,
				"line 1: the header's format is not %d, the one this cairn reads",
				VOCAB_FORMAT);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(ev->data, "id");
	const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(ev->data, "cwd");
	if (!cJSON_IsString(id) || strlen(id->valuestring) > SESSION_ID_MAX)
		return cerr_set(err, CERR_CORRUPT, 0, "line 1: the header's id is not a session id");
	im->cwd = cJSON_IsString(cwd) ? xstrdup(cwd->valuestring) : NULL;
	if (!ps->new_id) {
		snprintf(im->id, sizeof im->id, "%s", id->valuestring);
		return 0;
	}
	snprintf(im->id, sizeof im->id, "%s", ps->new_id);
	cJSON *data = cJSON_Duplicate(ev->data, 1);
	cJSON *from = cJSON_CreateObject();
	cJSON_AddStringToObject(from, "id", id->valuestring);
	cJSON_ReplaceItemInObjectCaseSensitive(data, "id", cJSON_CreateString(ps->new_id));
	if (cJSON_GetObjectItemCaseSensitive(data, "imported_from"))
		cJSON_ReplaceItemInObjectCaseSensitive(data, "imported_from", from);
	else
		cJSON_AddItemToObject(data, "imported_from", from);
	buf_reset(&ps->line);
	event_format(&ps->line, 0, ev->t, ev->type, NULL, false, data);
	cJSON_Delete(data);
	*out = ps->line.p;
	*out_len = ps->line.len - 1;
	return 0;
}

static int take_event(struct parser *ps, const char *p, size_t n, struct cerr *err)
{
	struct import *im = ps->im;
	uint64_t seq = im->next_seq;
	struct event ev;
	if (event_parse(p, n, seq, &ev, err) < 0) {
		cerr_prefix(err, "line %zu", ps->lineno);
		return -1;
	}
	int ret = -1;
	const char *out = p;
	size_t out_len = n;
	if (seq == 0) {
		if (take_header(ps, &ev, &out, &out_len, err) < 0)
			goto done;
	} else if (ev.vtype == VT_SESSION_HEADER) {
		cerr_set(err, CERR_CORRUPT, 0, "line %zu: a second session/header", ps->lineno);
		goto done;
	}
	struct blob_ref ref;
	int named = blob_ref_from_data(ev.data, &ref, err);
	if (named < 0) {
		cerr_prefix(err, "line %zu", ps->lineno);
		goto done;
	}
	if (named) {
		struct imp_blob *b = find_blob(im, ref.sha256);
		if (b && b->ref.size != ref.size) {
			cerr_set(err, CERR_CORRUPT, 0, "line %zu: blob %s has size %llu here and %llu "
				 "on line %zu", ps->lineno, ref.sha256, (unsigned long long)ref.size,
				 (unsigned long long)b->ref.size, b->named_line);
			goto done;
		}
		if (!b) {
			if (im->n_blobs == im->cap_blobs) {
				im->cap_blobs = im->cap_blobs ? im->cap_blobs * 2 : 8;
				im->blobs = xrealloc(im->blobs, im->cap_blobs * sizeof *im->blobs);
			}
			im->blobs[im->n_blobs++] = (struct imp_blob){.ref = ref,
								    .named_line = ps->lineno,
								    .data = BUF_INIT};
		}
	}
	if (ev.vtype == VT_SESSION_META) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev.data, "title");
		if (t) {
			free(im->title);
			im->title = cJSON_IsString(t) ? xstrdup(t->valuestring) : NULL;
		}
	}
	if (ps->new_id && ev.vtype == VT_TURN_START &&
	    cJSON_GetObjectItemCaseSensitive(ev.data, "client_submit_id")) {
		cJSON_DeleteItemFromObjectCaseSensitive(ev.data, "client_submit_id");
		buf_reset(&ps->line);
		event_format(&ps->line, ev.seq, ev.t, ev.type, ev.turn, ev.ignorable, ev.data);
		out = ps->line.p;
		out_len = ps->line.len - 1;
	}
	/* Re-batched: frames of at most FRAME_MAX_CONTENT, the header alone. */
	if (ps->content.len + out_len + 1 > FRAME_MAX_CONTENT && flush_frame(ps, err) < 0)
		goto done;
	buf_add(&ps->content, out, out_len);
	buf_addc(&ps->content, '\n');
	if (seq == 0) {
		if (flush_frame(ps, err) < 0)
			goto done;
		im->head_len = im->frames.len;
	}
	im->next_seq = seq + 1;
	ret = 0;
done:
	event_release(&ev);
	return ret;
}

static bool get_u64(const cJSON *o, const char *key, uint64_t max, uint64_t *out)
{
	int64_t v;
	if (!json_get_int(cJSON_GetObjectItemCaseSensitive(o, key), 0, (int64_t)max, &v))
		return false;
	*out = (uint64_t)v;
	return true;
}

static int take_chunk(struct parser *ps, const cJSON *o, struct cerr *err)
{
	struct import *im = ps->im;
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "blob");
	const cJSON *b64 = cJSON_GetObjectItemCaseSensitive(o, "base64");
	uint64_t size, offset;
	if (!cJSON_IsString(h) || !blob_valid_hex(h->valuestring) || !cJSON_IsString(b64) ||
	    !get_u64(o, "size", BLOB_MAX, &size) || !get_u64(o, "offset", BLOB_MAX, &offset))
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: a blob line needs \"blob\" (64 "
				"lowercase hex digits), \"size\", \"offset\" and \"base64\"", ps->lineno);
	struct imp_blob *b = find_blob(im, h->valuestring);
	if (!b)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: blob %s is named by no event",
				ps->lineno, h->valuestring);
	if (size != b->ref.size)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: blob %s has size %llu; line %zu "
				"names it with %llu", ps->lineno, b->ref.sha256,
				(unsigned long long)size, b->named_line,
				(unsigned long long)b->ref.size);
	if (offset != b->data.len)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: blob %s continues at offset %llu, "
				"not %zu", ps->lineno, b->ref.sha256, (unsigned long long)offset,
				b->data.len);
	size_t before = b->data.len;
	if (b64_decode(b64->valuestring, strlen(b64->valuestring), &b->data) < 0)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: blob %s: \"base64\" is not base64",
				ps->lineno, b->ref.sha256);
	if (b->data.len - before > IMPORT_CHUNK_MAX || b->data.len > size)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: blob %s: a chunk of %zu bytes "
				"(at most %u, and within its size %llu)", ps->lineno, b->ref.sha256,
				b->data.len - before, IMPORT_CHUNK_MAX, (unsigned long long)size);
	if (!b->first_line)
		b->first_line = ps->lineno;
	return 0;
}

static int take_trailer(struct parser *ps, const cJSON *o, struct cerr *err)
{
	struct import *im = ps->im;
	uint64_t v, fmt, events, blobs;
	if (!get_u64(o, "cairn_export", UINT32_MAX, &v) || !get_u64(o, "format", UINT32_MAX, &fmt) ||
	    !get_u64(o, "events", INT64_MAX, &events) || !get_u64(o, "blobs", INT64_MAX, &blobs))
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: the trailer needs \"cairn_export\", "
				"\"format\", \"events\" and \"blobs\" as integers", ps->lineno);
	if (v != 1 || fmt != VOCAB_FORMAT)
		return cerr_set(err, CERR_UNSUPPORTED, 0, "line %zu: export %llu of format %llu; this "
				"cairn reads export 1 of format %d", ps->lineno,
				(unsigned long long)v, (unsigned long long)fmt, VOCAB_FORMAT);
	if (events != im->next_seq || blobs != im->n_blobs)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: the trailer counts %llu events and "
				"%llu blobs; the file holds %llu and %zu", ps->lineno,
				(unsigned long long)events, (unsigned long long)blobs,
				(unsigned long long)im->next_seq, im->n_blobs);
	return 0;
}

/* One line: an event while they last, then blob chunks, then the trailer. */
enum part { PART_EVENTS, PART_BLOBS, PART_DONE };

static int take_line(struct parser *ps, const char *p, size_t n, enum part *part,
		     struct cerr *err)
{
	if (*part == PART_DONE)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: text after the trailer", ps->lineno);
	if (n > EVENT_MAX_LINE)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu is %zu bytes; the limit is %u",
				ps->lineno, n, EVENT_MAX_LINE);
	size_t bad;
	if (!utf8_valid(p, n, &bad))
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu is not UTF-8 (byte %zu)", ps->lineno,
				bad + 1);
	const char *why;
	cJSON *o = json_parse_strict(p, n, &why);
	if (!o)
		return cerr_set(err, CERR_CORRUPT, 0, "line %zu: %s", ps->lineno, why);
	int ret;
	if (!cJSON_IsObject(o))
		ret = cerr_set(err, CERR_CORRUPT, 0, "line %zu is not a JSON object", ps->lineno);
	else if (cJSON_GetObjectItemCaseSensitive(o, "cairn_export")) {
		ret = take_trailer(ps, o, err);
		*part = PART_DONE;
	} else if (cJSON_GetObjectItemCaseSensitive(o, "blob") &&
		   !cJSON_GetObjectItemCaseSensitive(o, "seq")) {
		*part = PART_BLOBS;
		ret = take_chunk(ps, o, err);
	} else if (*part == PART_BLOBS)
		ret = cerr_set(err, CERR_CORRUPT, 0, "line %zu: an event after the blobs", ps->lineno);
	else
		ret = take_event(ps, p, n, err);
	cJSON_Delete(o);
	return ret;
}

/* Every blob whole, with its digest. */
static int check_blobs(struct import *im, struct cerr *err)
{
	for (size_t i = 0; i < im->n_blobs; i++) {
		struct imp_blob *b = &im->blobs[i];
		if (b->data.len != b->ref.size)
			return cerr_set(err, CERR_CORRUPT, 0, "line %zu: blob %s: the file holds %zu of "
					"its %llu bytes", b->first_line ? b->first_line : b->named_line,
					b->ref.sha256, b->data.len, (unsigned long long)b->ref.size);
		uint8_t d[SHA256_LEN];
		char hex[SHA256_HEX_LEN + 1];
		sha256(b->data.p, b->data.len, d);
		sha256_hex(d, hex);
		if (strcmp(hex, b->ref.sha256) != 0)
			return cerr_set(err, CERR_CORRUPT, 0, "line %zu: blob %s: its bytes have digest %s",
					b->first_line ? b->first_line : b->named_line, b->ref.sha256,
					hex);
	}
	return 0;
}

int import_parse(const char *p, size_t n, const char *new_id, struct import **out,
		 struct cerr *err)
{
	struct import *im = xcalloc(1, sizeof *im);
	im->frames = (struct buf)BUF_INIT;
	struct parser ps = {.im = im, .new_id = new_id, .fc = frame_codec_new(),
			    .content = BUF_INIT, .line = BUF_INIT};
	enum part part = PART_EVENTS;
	int ret = -1;
	const char *q = p, *end = p + n;
	while (q < end) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		ps.lineno++;
		if (!nl) {
			cerr_set(err, CERR_CORRUPT, 0, "line %zu has no line end: the file is cut short",
				 ps.lineno);
			goto out;
		}
		if (take_line(&ps, q, (size_t)(nl - q), &part, err) < 0)
			goto out;
		q = nl + 1;
	}
	if (part != PART_DONE) {
		cerr_set(err, CERR_CORRUPT, 0, "line %zu: the file ends without its trailer: it is "
			 "cut short", ps.lineno + 1);
		goto out;
	}
	if (flush_frame(&ps, err) < 0 || check_blobs(im, err) < 0)
		goto out;
	/* The log as every reader will see it: the same rules, once more. */
	struct scan *s = scan_buffer((const uint8_t *)im->frames.p, im->frames.len);
	if (s->status != SCAN_OK || s->rev.next_seq != im->next_seq) {
		*err = s->err;
		if (s->status == SCAN_OK)
			cerr_set(err, CERR_CORRUPT, 0, "the log reads back with %llu events, not %llu",
				 (unsigned long long)s->rev.next_seq, (unsigned long long)im->next_seq);
		else
			cerr_prefix(err, "as a log");
		scan_free(s);
		goto out;
	}
	scan_free(s);
	ret = 0;
out:
	frame_codec_free(ps.fc);
	buf_release(&ps.content);
	buf_release(&ps.line);
	if (ret < 0)
		import_free(im);
	else
		*out = im;
	return ret;
}

/* Is id a session's, live or in the trash? */
static bool id_taken(struct store *st, const char *area, const char *id)
{
	struct session_ref ref = {0};
	struct cerr e;
	int found = store_resolve_in(st, area, id, &ref, &e);
	return (found == 0 || e.cls == CERR_CORRUPT) && strcmp(ref.id, id) == 0;
}

int import_publish(struct store *st, struct import *im, struct log_mark *dur, struct cerr *err)
{
	if (id_taken(st, STORE_SESSIONS, im->id))
		return cerr_set(err, CERR_CONFLICT, 0, "session '%s' already exists (--new-id imports "
				"it under a new id)", im->id);
	if (id_taken(st, STORE_TRASH, im->id))
		return cerr_set(err, CERR_CONFLICT, 0, "session '%s' is in the trash ('cairn restore' "
				"brings it back; --new-id imports it under a new id)", im->id);
	struct log *lg;
	if (log_create(st, im->id, im->cwd, NULL, &lg, err) < 0)
		return -1;
	int ret = -1;
	int dirfd = log_dir(lg, err);
	if (dirfd < 0)
		goto out;
	for (size_t i = 0; i < im->n_blobs; i++) {
		struct blob_ref ref;
		if (blob_write(dirfd, im->blobs[i].data.p, im->blobs[i].data.len, &ref, err) < 0)
			goto out;
	}
	if (log_publish_frames(lg, &im->frames, im->head_len, im->next_seq, err) < 0)
		goto out;
	*dur = log_durable(lg);
	ret = 0;
out:
	log_close(lg);
	return ret;
}
