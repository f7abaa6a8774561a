/* export_json.c — the JSON Lines export (export_json.h). */
#include "app/export_json.h"
#include "app/export_blob.h"
#include "base/strmap.h"
#include "base/termsafe.h"
#include "base/xalloc.h"
#include "persist/blob.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

static void add_base64(struct buf *out, const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	buf_grow(out, (n + 2) / 3 * 4);
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		char q[4] = {tab[v >> 18], tab[v >> 12 & 63], tab[v >> 6 & 63], tab[v & 63]};
		buf_add(out, q, 4);
	}
	if (i < n) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
		char q[4] = {tab[v >> 18], tab[v >> 12 & 63], i + 1 < n ? tab[v >> 6 & 63] : '=', '='};
		buf_add(out, q, 4);
	}
}

int export_json(const struct scan *s, int dirfd, struct buf *out, struct cerr *err)
{
	size_t n_events = 0, n_blobs = 0;
	/* The events as `log cat` prints them. */
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		if (!ev->kind)
			continue;
		termsafe_json(out, ev->line, ev->line_len);
		buf_addc(out, '\n');
		n_events++;
	}
	/* Then each distinct blob they name, in order of first mention. */
	struct strmap seen;
	strmap_init(&seen);
	struct buf b = BUF_INIT;
	int rc = 0;
	for (size_t i = 0; i < s->n_events && rc == 0; i++) {
		const struct event *ev = &s->events[i];
		struct blob_ref ref;
		size_t dummy;
		if (!ev->kind || !ev->data || blob_ref_from_data(ev->data, &ref, err) != 1 ||
		    strmap_get(&seen, ref.sha256, &dummy))
			continue;
		/* The key is the event's own string, which outlives the map. */
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(ev->data, "blob"), "sha256");
		strmap_put(&seen, h->valuestring, 1);
		if (export_blob(dirfd, ev->data, ev->seq, &b, err) < 0) {
			rc = -1;
			break;
		}
		size_t off = 0;
		do {
			size_t n = b.len - off < EXPORT_JSON_CHUNK ? b.len - off : EXPORT_JSON_CHUNK;
			buf_printf(out, "{\"blob\":\"%s\",\"size\":%zu,\"offset\":%zu,\"base64\":\"",
				   ref.sha256, b.len, off);
			add_base64(out, (const unsigned char *)b.p + off, n);
			buf_adds(out, "\"}\n");
			off += n;
		} while (off < b.len);
		n_blobs++;
	}
	buf_release(&b);
	strmap_release(&seen);
	if (rc < 0)
		return -1;
	buf_printf(out, "{\"cairn_export\":1,\"format\":1,\"events\":%zu,\"blobs\":%zu}\n", n_events,
		   n_blobs);
	return 0;
}
