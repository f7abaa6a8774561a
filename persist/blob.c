/* blob.c — content-addressed blob files in a session's blobs/ folder:
 * durable writes (temp, fsync, rename, fsync of the folder), verified
 * reads, the "blob" reference in event data, and the sweep of blobs no
 * durable event names. See blob.h for the contracts. */
#include "persist/blob.h"
#include "base/json.h"
#include "base/strmap.h"
#include "base/xalloc.h"
#include "persist/fsops.h"
#include "persist/load.h"
#include "persist/replace.h"
#include "persist/safefs.h"
#include "persist/scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (64u * 1024u)
#define TMP_PREFIX ".blob."
#define TMP_SUFFIX ".tmp"

bool blob_valid_hex(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (i == SHA256_HEX_LEN || !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == SHA256_HEX_LEN;
}

static bool is_tmp_name(const char *s)
{
	size_t n = strlen(s), p = sizeof TMP_PREFIX - 1, q = sizeof TMP_SUFFIX - 1;
	return n > p + q && strncmp(s, TMP_PREFIX, p) == 0 && strcmp(s + n - q, TMP_SUFFIX) == 0;
}

/* blobs/ under dirfd; with create, made 0700 (and dirfd synced). */
static int open_blob_dir(int dirfd, bool create, struct cerr *err)
{
	return safefs_opendir(dirfd, BLOB_DIR, create, NULL, err);
}

/* Write to a descriptor that is not a session file (standard output):
 * plain write(2), retrying short writes and EINTR. */
static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Hash the open file fd (st_size bytes) and compare with ref. Also copies
 * the bytes to out (may be NULL) or writes them to outfd (-1: none). */
static int hash_fd(int fd, const struct blob_ref *ref, struct buf *out, int outfd,
		   struct cerr *err)
{
	struct stat st;
	if (fsops->fstat(fd, &st) < 0)
		return cerr_set(err, CERR_IO, errno, "cannot stat blob '%s'", ref->sha256);
	uint64_t size = (uint64_t)st.st_size;
	if (ref->size != BLOB_SIZE_ANY && size != ref->size)
		return cerr_set(err, CERR_CORRUPT, 0, "blob '%s' is %llu bytes, not %llu", ref->sha256,
				(unsigned long long)size, (unsigned long long)ref->size);
	if (size > BLOB_MAX)
		return cerr_set(err, CERR_CORRUPT, 0,
				"blob '%s' is %llu bytes; the limit is BLOB_MAX = %llu", ref->sha256,
				(unsigned long long)size, (unsigned long long)BLOB_MAX);
	char *chunk = xmalloc(CHUNK);
	struct sha256_ctx *h = sha256_new();
	uint64_t off = 0;
	int ret = -1;
	for (;;) {
		ssize_t r = fs_pread_all(fd, chunk, CHUNK, (off_t)off);
		if (r < 0) {
			cerr_set(err, CERR_IO, errno, "cannot read blob '%s'", ref->sha256);
			goto out;
		}
		if (r == 0)
			break;
		sha256_update(h, chunk, (size_t)r);
		if (out)
			buf_add(out, chunk, (size_t)r);
		if (outfd >= 0 && write_all(outfd, chunk, (size_t)r) < 0) {
			cerr_set(err, CERR_IO, errno, "cannot write blob '%s'", ref->sha256);
			goto out;
		}
		off += (uint64_t)r;
		if (off > size) /* grew while read: not the file we sized */
			break;
	}
	uint8_t d[SHA256_LEN];
	char hex[SHA256_HEX_LEN + 1];
	sha256_final(h, d);
	h = NULL;
	sha256_hex(d, hex);
	if (off != size || strcmp(hex, ref->sha256) != 0) {
		cerr_set(err, CERR_CORRUPT, 0, "blob '%s' does not match its digest (%llu bytes read)",
			 ref->sha256, (unsigned long long)off);
		goto out;
	}
	ret = 0;
out:
	sha256_free(h);
	free(chunk);
	return ret;
}

/* Open blob ref read-only under dirfd (its blobs/ folder), naming it in
 * errors: missing -> CERR_MISSING, not a regular file -> CERR_CORRUPT. */
static int open_blob(int dirfd, const struct blob_ref *ref, struct cerr *err)
{
	if (!blob_valid_hex(ref->sha256))
		return cerr_set(err, CERR_USAGE, 0, "'%s' is not a blob name (64 lowercase hex digits)",
				ref->sha256);
	int bdir = open_blob_dir(dirfd, false, err);
	if (bdir < 0) {
		if (err->cls == CERR_MISSING)
			cerr_set(err, CERR_MISSING, 0, "blob '%s' is missing (no %s/ folder)", ref->sha256,
				 BLOB_DIR);
		return -1;
	}
	int fd = safefs_openfile(bdir, ref->sha256, O_RDONLY, err);
	fs_close_quiet(bdir);
	if (fd < 0) {
		if (err->cls == CERR_MISSING)
			cerr_set(err, CERR_MISSING, 0, "blob '%s' is missing", ref->sha256);
		else
			cerr_prefix(err, "blob '%s'", ref->sha256);
	}
	return fd;
}

static int read_blob(int dirfd, const struct blob_ref *ref, struct buf *out, int outfd,
		     struct cerr *err)
{
	int fd = open_blob(dirfd, ref, err);
	if (fd < 0)
		return -1;
	int rc = hash_fd(fd, ref, out, outfd, err);
	fs_close_quiet(fd);
	return rc;
}

int blob_verify(int dirfd, const struct blob_ref *ref, struct cerr *err)
{
	return read_blob(dirfd, ref, NULL, -1, err);
}

int blob_read(int dirfd, const struct blob_ref *ref, struct buf *out, struct cerr *err)
{
	size_t before = out->len;
	if (read_blob(dirfd, ref, out, -1, err) < 0) {
		out->len = before; /* nothing of a blob that did not verify */
		return -1;
	}
	return 0;
}

int blob_copy_to_fd(int dirfd, const struct blob_ref *ref, int outfd, struct cerr *err)
{
	/* Verified first, so a damaged blob prints nothing; hashed again as
	 * it is copied, since blobs/ may be changed by hand meanwhile. */
	if (blob_verify(dirfd, ref, err) < 0)
		return -1;
	return read_blob(dirfd, ref, NULL, outfd, err);
}

/* The blob already in place is ref's: sync it and its folder again, as an
 * earlier writer may have failed before its syncs. 1: done; 0: absent or
 * damaged (write it); -1: error. */
static int keep_existing(int bdir, const struct blob_ref *ref, struct cerr *err)
{
	int fd = safefs_openfile(bdir, ref->sha256, O_RDONLY, err);
	if (fd < 0)
		return err->cls == CERR_MISSING || err->cls == CERR_CORRUPT ? 0 : -1;
	int rc = hash_fd(fd, ref, NULL, -1, err);
	if (rc < 0) {
		fs_close_quiet(fd);
		return err->cls == CERR_CORRUPT ? 0 : -1;
	}
	if (fsops->fsync(fd) < 0) {
		cerr_set(err, CERR_IO, errno, "cannot sync blob '%s'", ref->sha256);
		fs_close_quiet(fd);
		return -1;
	}
	fs_close_quiet(fd);
	if (safefs_fsync_dir(bdir, BLOB_DIR, err) < 0)
		return -1;
	return 1;
}

int blob_write(int dirfd, const void *p, size_t n, struct blob_ref *ref, struct cerr *err)
{
	if ((uint64_t)n > BLOB_MAX)
		return cerr_set(err, CERR_USAGE, 0, "blob is %zu bytes; the limit is BLOB_MAX = %llu", n,
				(unsigned long long)BLOB_MAX);
	uint8_t d[SHA256_LEN];
	sha256(p, n, d);
	sha256_hex(d, ref->sha256);
	ref->size = n;
	int bdir = open_blob_dir(dirfd, true, err);
	if (bdir < 0)
		return -1;
	int ret = -1, kept = keep_existing(bdir, ref, err);
	if (kept != 0) {
		ret = kept > 0 ? 0 : -1;
		goto out;
	}
	/* Random, so threads and processes never share a temporary file. */
	uint8_t rnd[8];
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		cerr_set(err, CERR_IO, errno, "cannot name a temporary file for blob '%s'", ref->sha256);
		goto out;
	}
	char tmp[64];
	snprintf(tmp, sizeof tmp, TMP_PREFIX "%02x%02x%02x%02x%02x%02x%02x%02x" TMP_SUFFIX, rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	struct replace r = {.dirfd = bdir, .tmp = tmp, .name = ref->sha256, .data = p, .len = n};
	/* Replacing: a file of that name holds other bytes (damaged) or is
	 * the same blob renamed in by another writer meanwhile. A temporary
	 * file left behind by a failure is removed by the next repair. */
	switch (replace_file(&r, err)) {
	case REPLACE_DONE:
		ret = 0;
		break;
	case REPLACE_OPEN:
		/* safefs's classified error. */
		cerr_prefix(err, "blob '%s'", ref->sha256);
		break;
	case REPLACE_SYNC:
		cerr_set(err, CERR_IO, r.sys_errno, "cannot sync blob '%s'", ref->sha256);
		break;
	case REPLACE_RENAME:
		cerr_set(err, CERR_IO, r.sys_errno, "cannot rename blob '%s' into place", ref->sha256);
		break;
	case REPLACE_DIRSYNC:
		/* Complete under its name, but maybe not after a power loss. */
		cerr_set(err, CERR_IO, r.sys_errno, "cannot sync directory '%s'", BLOB_DIR);
		cerr_prefix(err, "blob '%s'", ref->sha256);
		err->outcome_unknown = true;
		break;
	default: /* write, close */
		cerr_set(err, CERR_IO, r.sys_errno, "cannot write blob '%s'", ref->sha256);
		break;
	}
out:
	fs_close_quiet(bdir);
	return ret;
}

int blob_ref_from_data(const cJSON *data, struct blob_ref *ref, struct cerr *err)
{
	const cJSON *b = cJSON_IsObject(data) ? cJSON_GetObjectItemCaseSensitive(data, "blob") : NULL;
	if (!b)
		return 0;
	return blob_ref_from_json(b, ref, err) < 0 ? -1 : 1;
}

int blob_ref_from_json(const cJSON *b, struct blob_ref *ref, struct cerr *err)
{
	const cJSON *h = cJSON_IsObject(b) ? cJSON_GetObjectItemCaseSensitive(b, "sha256") : NULL;
	const cJSON *z = cJSON_IsObject(b) ? cJSON_GetObjectItemCaseSensitive(b, "size") : NULL;
	int64_t size;
	if ( !cJSON_IsString(h) || !blob_valid_hex(h->valuestring))
		return cerr_set(err, CERR_CORRUPT, 0,
				"field 'blob' needs \"sha256\": 64 lowercase hex digits");
	if (!json_get_int(z, 0, (int64_t)BLOB_MAX, &size))
		return cerr_set(err, CERR_CORRUPT, 0,
				"field 'blob' needs \"size\": an integer from 0 to BLOB_MAX = %llu",
				(unsigned long long)BLOB_MAX);
	snprintf(ref->sha256, sizeof ref->sha256, "%s", h->valuestring);
	ref->size = (uint64_t)size;
	return 0;
}

void blob_ref_to_data(cJSON *data, const struct blob_ref *ref)
{
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "sha256", ref->sha256);
	cJSON_AddNumberToObject(b, "size", (double)ref->size);
	cJSON_DeleteItemFromObjectCaseSensitive(data, "blob");
	cJSON_AddItemToObject(data, "blob", b);
}

/* The largest cut <= at that starts a character of valid UTF-8 s. */
static size_t char_start(const char *s, size_t at)
{
	while (at > 0 && ((unsigned char)s[at] & 0xC0) == 0x80)
		at--;
	return at;
}

int blob_spill(int dirfd, const char *text, size_t n, struct blob_ref *ref, char **inline_text,
	       struct cerr *err)
{
	_Static_assert(BLOB_INLINE_HEAD + BLOB_INLINE_TAIL + 256 <= BLOB_INLINE_MAX,
		       "what stays inline fits the inline limit");
	*inline_text = NULL;
	if (n <= BLOB_INLINE_MAX)
		return 0;
	if (blob_write(dirfd, text, n, ref, err) < 0)
		return -1;
	size_t head = char_start(text, BLOB_INLINE_HEAD);
	size_t tail = char_start(text, n - BLOB_INLINE_TAIL);
	struct buf b = BUF_INIT;
	buf_add(&b, text, head);
	buf_printf(&b, "\n[... %zu bytes omitted; the whole text is blob %s, %zu bytes ...]\n",
		   tail - head, ref->sha256, n);
	buf_add(&b, text + tail, n - tail);
	*inline_text = buf_detach(&b, NULL);
	return 1;
}

size_t blob_check_scan(int dirfd, const struct scan *s, size_t *named,
		       void (*report)(void *ctx, const struct blob_ref *ref, uint64_t seq,
				      const struct cerr *err),
		       void *ctx)
{
	size_t bad = 0, refs = 0;
	for (size_t i = 0; i < s->n_events; i++) {
		const struct event *ev = &s->events[i];
		struct blob_ref ref;
		struct cerr err;
		/* Events of unknown types are not checked by the vocabulary:
		 * a malformed field there names nothing. */
		int has = blob_ref_from_data(ev->data, &ref, &err);
		if (has <= 0)
			continue;
		refs++;
		if (blob_verify(dirfd, &ref, &err) == 0)
			continue;
		if (err.cls == CERR_MISSING)
			err.cls = CERR_CORRUPT; /* a durable event names it: committed data is lost */
		cerr_prefix(&err, "session '%s', event %llu", s->id ? s->id : "?",
			    (unsigned long long)ev->seq);
		report(ctx, &ref, ev->seq, &err);
		bad++;
	}
	if (named)
		*named = refs;
	return bad;
}

/* Every digest an event of s names, as keys borrowed from s. */
static void named_set(const struct scan *s, struct strmap *m)
{
	strmap_init(m);
	for (size_t i = 0; i < s->n_events; i++) {
		struct blob_ref ref;
		struct cerr err;
		if (blob_ref_from_data(s->events[i].data, &ref, &err) > 0) {
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(s->events[i].data, "blob");
			strmap_put(m, cJSON_GetObjectItemCaseSensitive(b, "sha256")->valuestring, i);
		}
	}
}

/* Call fn for every entry of blobs/ under dirfd but . and .. Missing
 * blobs/: nothing to do. */
static int each_entry(int dirfd, int (*fn)(void *ctx, int bdir, const char *name), void *ctx,
		      struct cerr *err)
{
	int bdir = open_blob_dir(dirfd, false, err);
	if (bdir < 0)
		return err->cls == CERR_MISSING ? 0 : -1;
	DIR *d = safefs_list(bdir);
	int ret = 0;
	if (!d) {
		cerr_set(err, CERR_IO, errno, "cannot list '%s'", BLOB_DIR);
		fs_close_quiet(bdir);
		return -1;
	}
	struct dirent *de;
	while (ret == 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			ret = fn(ctx, bdir, de->d_name);
	closedir(d);
	fs_close_quiet(bdir);
	return ret;
}

/* Removals are not synced: a crash only brings an orphan back, and the
 * next repair removes it again. */
struct sweep {
	struct strmap named;
	size_t removed;
	struct cerr *err;
};

static int sweep_one(void *ctx, int bdir, const char *name)
{
	struct sweep *w = ctx;
	/* Only what a writer of blobs makes: anything else is not ours. */
	size_t at;
	if (!(blob_valid_hex(name) && !strmap_get(&w->named, name, &at)) && !is_tmp_name(name))
		return 0;
	if (fsops->unlinkat(bdir, name, 0) < 0) {
		if (errno == ENOENT)
			return 0;
		return cerr_set(w->err, CERR_IO, errno, "cannot remove blob '%s'", name);
	}
	w->removed++;
	return 0;
}

int blob_sweep(int dirfd, const struct scan *s, size_t *removed, struct cerr *err)
{
	struct sweep w = {.removed = 0, .err = err};
	named_set(s, &w.named);
	int rc = each_entry(dirfd, sweep_one, &w, err);
	strmap_release(&w.named);
	if (removed)
		*removed = w.removed;
	return rc;
}

static int count_one(void *ctx, int bdir, const char *name)
{
	(void)bdir;
	(void)name;
	++*(size_t *)ctx;
	return 0;
}

int blob_sweep_load(int dirfd, const struct load *l, size_t *removed, struct cerr *err)
{
	if (removed)
		*removed = 0;
	/* Most sessions have no blobs: then no event needs looking at. */
	size_t n = 0;
	if (each_entry(dirfd, count_one, &n, err) < 0)
		return -1;
	if (n == 0)
		return 0;
	/* Only a line holding "blob" (or an escape that could spell it)
	 * can name one: those are parsed, the trees kept for their keys. */
	struct sweep w = {.removed = 0, .err = err};
	strmap_init(&w.named);
	cJSON **keep = NULL;
	size_t n_keep = 0;
	for (size_t i = 0; i < load_count(l); i++) {
		size_t len;
		const char *line = load_line(l, i, &len);
		if (!memmem(line, len, "\"blob\"", 6) && !memmem(line, len, "\\u", 2))
			continue;
		cJSON *root = load_json(l, i);
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
		struct blob_ref ref;
		struct cerr e;
		if (root && blob_ref_from_data(data, &ref, &e) > 0) {
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(data, "blob");
			strmap_put(&w.named, cJSON_GetObjectItemCaseSensitive(b, "sha256")->valuestring, i);
			keep = xreallocarray(keep, n_keep + 1, sizeof *keep);
			keep[n_keep++] = root;
		} else {
			cJSON_Delete(root);
		}
	}
	int rc = each_entry(dirfd, sweep_one, &w, err);
	strmap_release(&w.named);
	for (size_t k = 0; k < n_keep; k++)
		cJSON_Delete(keep[k]);
	free(keep);
	if (removed)
		*removed = w.removed;
	return rc;
}

static int remove_one(void *ctx, int bdir, const char *name)
{
	struct cerr *err = ctx;
	if (fsops->unlinkat(bdir, name, 0) < 0 && errno != ENOENT)
		return cerr_set(err, CERR_IO, errno, "cannot remove blob '%s'", name);
	return 0;
}

int blob_remove_all(int dirfd, struct cerr *err)
{
	if (each_entry(dirfd, remove_one, err, err) < 0)
		return -1;
	if (fsops->unlinkat(dirfd, BLOB_DIR, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return cerr_set(err, CERR_IO, errno, "cannot remove '%s'", BLOB_DIR);
	return 0;
}
