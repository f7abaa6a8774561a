/* export_blob.c — a blob's whole content for an export (export_blob.h). */
#include "app/export_blob.h"
#include "persist/blob.h"

int export_blob(int dirfd, const cJSON *data, uint64_t seq, struct buf *out, struct cerr *err)
{
	struct blob_ref ref;
	buf_reset(out);
	int r = data ? blob_ref_from_data(data, &ref, err) : 0;
	if (r <= 0)
		return r;
	if (blob_read(dirfd, &ref, out, err) < 0) {
		/* Content a durable event names is lost: corrupt (format.md §12). */
		err->cls = CERR_CORRUPT;
		cerr_prefix(err, "event %llu", (unsigned long long)seq);
		return -1;
	}
	return 1;
}
