/* log.c — the session log writer: atomic first publication, CAS appends
 * through an append cursor, failure cleanup and torn-tail cutting. */
#include "persist/log.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/sha256.h"
#include "base/ulid.h"
#include "base/utf8.h"
#include "base/xalloc.h"
#include "persist/event.h"
#include "persist/frame.h"
#include "persist/fsops.h"
#include "persist/leftover.h"
#include "persist/load.h"
#include "persist/lock.h"
#include "persist/replace.h"
#include "persist/safefs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where the next append goes: the revision this handle wrote last. */
struct cursor {
	bool valid;
	struct revision rev;
};

struct log {
	struct store *st;       /* borrowed; NULL for a log opened by path */
	struct session_ref ref;
	char *path;             /* for messages */
	char *fname;            /* file name inside dirfd */
	int keyfd, dirfd, lockfd, fd;
	char id[SESSION_ID_MAX + 1];
	char *cwd;
	int64_t created_at;
	cJSON *extra;           /* header extras until publication */
	bool published;
	bool poisoned;          /* an fsync or cleanup failed: re-read before use */
	bool synced_known;      /* synced_len is a length this handle synced */
	uint64_t synced_len;    /* the file length at this handle's last sync */
	bool pending;           /* log_write wrote frames log_sync has not synced */
	struct cursor pending_from; /* the cursor before the first of them */
	bool syncing;           /* between log_sync_begin and log_sync_end: */
	struct cursor sync_from; /* the cursor before the frames it took */
	uint64_t sync_upto;     /* the length they end at */
	struct cursor cur;
	struct scan *scan;      /* the last read (a compact one's status fields) */
	bool compact;           /* reads are compact loads (log_open_load) */
	struct load *load;      /* a compact handle's last read, until taken */
	struct scan_opts wm;    /* durable watermark for every read */
	bool head_known;        /* head: the digest of the log's frame 0 */
	uint8_t head[SHA256_LEN];
	int64_t batch_t;        /* the time given to the last batch's events */
	uint64_t cut_bytes;
	struct frame_codec *fc;
};

static struct log *log_alloc(void)
{
	struct log *lg = xcalloc(1, sizeof *lg);
	lg->keyfd = lg->dirfd = lg->lockfd = lg->fd = -1;
	lg->fc = frame_codec_new();
	return lg;
}

void log_close(struct log *lg)
{
	if (!lg)
		return;
	fs_close_quiet(lg->fd);
	lock_release(lg->lockfd);
	fs_close_quiet(lg->dirfd);
	fs_close_quiet(lg->keyfd);
	scan_free(lg->scan);
	load_free(lg->load);
	cJSON_Delete(lg->extra);
	frame_codec_free(lg->fc);
	free(lg->path);
	free(lg->fname);
	free(lg->cwd);
	free(lg);
}

uint64_t log_next_seq(const struct log *lg)
{
	return lg->published ? lg->cur.rev.next_seq : 1;
}

const char *log_id(const struct log *lg)
{
	return lg->id;
}

const char *log_path(const struct log *lg)
{
	return lg->path;
}

int log_fd(const struct log *lg)
{
	return lg->fd;
}

const struct scan *log_scan(const struct log *lg)
{
	return lg->scan;
}

struct log_mark log_durable(const struct log *lg)
{
	struct log_mark m = {0};
	if (lg->published && lg->synced_known && !lg->poisoned && lg->cur.valid &&
	    lg->synced_len == lg->cur.rev.len && lg->head_known) {
		memcpy(m.head, lg->head, SHA256_LEN);
		m.rev = lg->cur.rev;
		struct stat st;
		if (fsops->fstat(lg->fd, &st) == 0 && (uint64_t)st.st_size == m.rev.len)
			m.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	}
	return m;
}

int64_t log_batch_time(const struct log *lg)
{
	return lg->batch_t;
}

uint64_t log_cut_bytes(const struct log *lg)
{
	return lg->cut_bytes;
}

void log_drop_scan(struct log *lg)
{
	scan_free(lg->scan);
	lg->scan = NULL;
	load_free(lg->load);
	lg->load = NULL;
}

const struct load *log_load(const struct log *lg)
{
	return lg->load;
}

struct load *log_take_load(struct log *lg)
{
	struct load *l = lg->load;
	lg->load = NULL;
	if (!l)
		return NULL;
	const struct scan *s = load_scan(l);
	/* Only a read of the file as it is now: nothing cut, appended or
	 * left unsure since. */
	if (lg->poisoned || lg->pending || lg->syncing || !lg->cur.valid ||
	    s->status != SCAN_OK || !revision_same(&s->rev, &lg->cur.rev)) {
		load_free(l);
		return NULL;
	}
	return l;
}

/* Read the file open at lg->fd: a compact load (its status fields into
 * *out, the load kept in lg->load) for a compact handle unless full, else
 * a strict scan keeping every event. */
static int read_file(struct log *lg, bool full, struct scan **out, struct cerr *err)
{
	load_free(lg->load);
	lg->load = NULL;
	if (full || !lg->compact)
		return scan_fd_opts(lg->fd, &lg->wm, out, err);
	struct load *l;
	if (load_fd(lg->fd, &lg->wm, &l, err) < 0)
		return -1;
	*out = load_scan_copy(l);
	lg->load = l;
	return 0;
}

struct revision log_revision_of(const struct log *lg)
{
	return lg->scan ? lg->scan->rev : (struct revision){0};
}

/* (Re)open the file and read it in full; set the cursor from the read.
 * Fails closed on corrupt and unsupported logs and on a foreign header. */
static int reread(struct log *lg, bool full, struct cerr *err)
{
	/* A failed sync may have left the log's directory entry not durable
	 * (publication): sync it before building on what is read. */
	if (lg->poisoned && safefs_fsync_dir(lg->dirfd, lg->path, err) < 0)
		return -1;
	fs_close_quiet(lg->fd);
	lg->fd = -1;
	lg->cur.valid = false;
	lg->fd = safefs_openfile(lg->dirfd, lg->fname, O_RDWR, err);
	if (lg->fd < 0) {
		if (err->cls == CERR_MISSING)
			cerr_set(err, CERR_MISSING, 0, "no log '%s'", lg->path);
		return -1;
	}
	struct scan *s;
	if (read_file(lg, full, &s, err) < 0)
		return -1;
	/* After a failed sync the page cache may hold bytes the disk never
	 * got (their pages can be marked clean anyway). They were never
	 * acknowledged: cut back to what this handle last synced rather
	 * than build on them. */
	if (lg->poisoned && lg->synced_known && s->rev.len > lg->synced_len) {
		int cut_failed = fsops->ftruncate(lg->fd, (off_t)lg->synced_len) < 0 ||
				 fsops->fsync(lg->fd) < 0;
		int e = errno;
		scan_free(s);
		if (cut_failed)
			return cerr_set(err, CERR_IO, e, "cannot cut unsynced bytes of '%s'", lg->path);
		if (read_file(lg, full, &s, err) < 0)
			return -1;
	}
	scan_free(lg->scan);
	lg->scan = s;
	if (s->status == SCAN_CORRUPT || s->status == SCAN_UNSUPPORTED) {
		*err = s->err;
		cerr_prefix(err, "'%s'", lg->path);
		return -1;
	}
	if (lg->st && strcmp(s->id, lg->ref.id) != 0)
		return cerr_set(err, CERR_CORRUPT, 0, "'%s' holds session '%s', not '%s'", lg->path,
				s->id, lg->ref.id);
	if (lg->published && strcmp(s->id, lg->id) != 0)
		return cerr_set(err, CERR_CONFLICT, 0, "'%s' was replaced by session '%s'", lg->path,
				s->id);
	snprintf(lg->id, sizeof lg->id, "%s", s->id);
	lg->published = true;
	lg->poisoned = false;
	lg->head_known = s->head_known;
	memcpy(lg->head, s->head, SHA256_LEN);
	lg->cur = (struct cursor){true, s->rev};
	if (s->status == SCAN_TORN)
		lg->cur.rev.len = s->good_len; /* appends go after the cut */
	return 0;
}

int log_refresh(struct log *lg, struct cerr *err)
{
	/* Only this handle's own staleness: a change made by anyone else is
	 * for the caller's revision fence to report, not to absorb. */
	if (lg->published && lg->scan && !lg->poisoned && lg->scan->rev.next_seq == lg->cur.rev.next_seq &&
	    (!lg->compact || lg->load))
		return 0;
	return log_reread(lg, err);
}

int log_reread(struct log *lg, struct cerr *err)
{
	if (!lg->published)
		return cerr_set(err, CERR_MISSING, 0, "'%s' has no log yet", lg->path);
	return reread(lg, false, err);
}

int log_reread_full(struct log *lg, struct cerr *err)
{
	if (!lg->published)
		return cerr_set(err, CERR_MISSING, 0, "'%s' has no log yet", lg->path);
	return reread(lg, true, err);
}

int log_open(struct store *st, const char *id, struct log **out, struct cerr *err)
{
	return log_open_opts(st, id, NULL, out, err);
}

int log_open_path(const char *path, struct log **out, struct cerr *err)
{
	return log_open_path_opts(path, NULL, out, err);
}

/* Trust the watermark instead of reading the whole log: the file is
 * exactly as long as it says, its frame 0 is the one it names, and the
 * frame the next batch goes after is intact (load_last: its checksum, its
 * lines, its seqs ending where the watermark does). Then every byte is
 * durable (acknowledged after a sync) and the cursor starts at its end.
 * The cost is frame 0 and the last frame, not the log. A last frame that
 * fails is left to the full read, which classifies it (corruption below
 * the watermark) and fails closed. */
static int start_at_watermark(struct log *lg, bool *started, struct cerr *err)
{
	*started = false;
	lg->fd = safefs_openfile(lg->dirfd, lg->fname, O_RDWR, err);
	if (lg->fd < 0) {
		if (err->cls == CERR_MISSING)
			cerr_set(err, CERR_MISSING, 0, "no log '%s'", lg->path);
		return -1;
	}
	struct stat st;
	if (fsops->fstat(lg->fd, &st) < 0 || (uint64_t)st.st_size != lg->wm.wm_len)
		return 0;
	struct load *l;
	if (load_last(lg->fd, &lg->wm, &l, err) < 0)
		return -1;
	const struct scan *s = load_scan(l);
	bool intact = s->status == SCAN_OK && s->head_known && s->wm_applied &&
		      s->rev.len == lg->wm.wm_len && s->rev.next_seq == lg->wm.wm_seq;
	if (intact)
		memcpy(lg->head, s->head, SHA256_LEN);
	load_free(l);
	if (!intact)
		return 0;
	snprintf(lg->id, sizeof lg->id, "%s", lg->ref.id);
	lg->published = true;
	lg->head_known = true;
	lg->cur = (struct cursor){true, {st.st_dev, st.st_ino, lg->wm.wm_len, lg->wm.wm_seq}};
	lg->synced_known = true;
	lg->synced_len = lg->wm.wm_len;
	*started = true;
	return 0;
}

static int open_session(struct store *st, const char *id, const struct scan_opts *wm,
			bool from_end, bool compact, struct log **out, struct cerr *err)
{
	struct log *lg = log_alloc();
	lg->st = st;
	lg->compact = compact;
	if (wm)
		lg->wm = *wm;
	if (!pathkey_valid_id(id)) {
		log_close(lg);
		return cerr_set(err, CERR_USAGE, 0, "'%s' is not a session id", id);
	}
	if (store_find_in(st, STORE_SESSIONS, id, &lg->ref, err) < 0)
		goto fail;
	if (strcmp(lg->ref.id, id) != 0) {
		cerr_set(err, CERR_MISSING, 0, "no session '%s'", id);
		goto fail;
	}
	lg->fname = xstrdup(LOG_FILE);
	lg->path = store_log_path(st, &lg->ref, false);
	if (store_open_session_dir(st, &lg->ref, false, &lg->keyfd, &lg->dirfd, err) < 0)
		goto fail;
	lg->lockfd = lock_take(lg->keyfd, lg->ref.id, lg->dirfd, err);
	if (lg->lockfd < 0)
		goto fail;
	bool started = false;
	if (from_end && lg->wm.watermark && lg->wm.wm_len > 0 &&
	    start_at_watermark(lg, &started, err) < 0)
		goto fail;
	if (!started && reread(lg, false, err) < 0)
		goto fail;
	*out = lg;
	return 0;
fail:
	log_close(lg);
	return -1;
}

int log_open_opts(struct store *st, const char *id, const struct scan_opts *wm, struct log **out,
		  struct cerr *err)
{
	return open_session(st, id, wm, false, false, out, err);
}

int log_open_load(struct store *st, const char *id, const struct scan_opts *wm, struct log **out,
		  struct cerr *err)
{
	return open_session(st, id, wm, false, true, out, err);
}

int log_open_end(struct store *st, const char *id, const struct scan_opts *wm, struct log **out,
		 struct cerr *err)
{
	return open_session(st, id, wm, true, false, out, err);
}

int log_settle(struct log *lg, struct cerr *err)
{
	const struct scan *s = lg->scan;
	if (!lg->published || lg->pending || lg->syncing || lg->poisoned || !s ||
	    s->status != SCAN_OK || !lg->cur.valid || lg->cur.rev.len != s->rev.len ||
	    (lg->synced_known && lg->synced_len == lg->cur.rev.len))
		return 0;
	if (fsops->fdatasync(lg->fd) < 0)
		return cerr_set(err, CERR_IO, errno, "cannot sync '%s'", lg->path);
	lg->synced_known = true;
	lg->synced_len = lg->cur.rev.len;
	return 0;
}

int log_open_path_opts(const char *path, const struct scan_opts *wm, struct log **out,
		       struct cerr *err)
{
	struct log *lg = log_alloc();
	if (wm)
		lg->wm = *wm;
	char *d = xstrdup(path), *b = xstrdup(path);
	lg->path = xstrdup(path);
	lg->fname = xstrdup(basename(b));
	lg->dirfd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(d);
	free(b);
	if (lg->dirfd < 0) {
		cerr_set(err, errno == ENOENT ? CERR_MISSING : CERR_IO, errno == ENOENT ? 0 : errno,
			 "cannot open the directory of '%s'", path);
		goto fail;
	}
	struct stat st;
	if (fsops->fstatat(lg->dirfd, lg->fname, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		cerr_set(err, errno == ENOENT ? CERR_MISSING : CERR_IO, errno == ENOENT ? 0 : errno,
			 "cannot open '%s'", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		/* Refused before anything (a lock file) is created beside it. */
		cerr_set(err, CERR_CORRUPT, 0, "'%s' is %s", path,
			 S_ISLNK(st.st_mode) ? "a symlink" : "not a regular file");
		goto fail;
	}
	lg->lockfd = lock_take(-1, lg->fname, lg->dirfd, err);
	if (lg->lockfd < 0 || reread(lg, false, err) < 0)
		goto fail;
	*out = lg;
	return 0;
fail:
	log_close(lg);
	return -1;
}

int log_create(struct store *st, const char *id, const char *cwd, const cJSON *extra,
	       struct log **out, struct cerr *err)
{
	char fresh[ULID_LEN + 1];
	if (!id) {
		ulid_new(fresh);
		id = fresh;
	}
	if (!pathkey_valid_id(id))
		return cerr_set(err, CERR_USAGE, 0, "'%s' is not a valid session id", id);
	/* The header is JSON, which holds only UTF-8: a directory name in
	 * another encoding would make a log that no reader accepts. */
	if (cwd && !utf8_valid(cwd, strlen(cwd), NULL))
		return cerr_set(err, CERR_USAGE, 0, "the cwd '%s' is not UTF-8", cwd);
	char *inf = extra ? json_nonfinite_path(extra, "data") : NULL;
	if (inf) {
		cerr_set(err, CERR_USAGE, 0, "header: %s: number out of range", inf);
		free(inf);
		return -1;
	}
	struct session_ref existing = {0};
	struct cerr e;
	int found = store_find_in(st, STORE_SESSIONS, id, &existing, &e);
	if ((found == 0 || e.cls == CERR_CORRUPT) && strcmp(existing.id, id) == 0)
		return cerr_set(err, CERR_CONFLICT, 0, "session '%s' already exists", id);
	struct log *lg = log_alloc();
	lg->st = st;
	snprintf(lg->id, sizeof lg->id, "%s", id);
	snprintf(lg->ref.id, sizeof lg->ref.id, "%s", id);
	char *key = pathkey_project(cwd);
	snprintf(lg->ref.key, sizeof lg->ref.key, "%s", key);
	free(key);
	lg->cwd = xstrdup_opt(cwd);
	lg->created_at = clock_unix_ms();
	lg->extra = extra ? cJSON_Duplicate(extra, 1) : NULL;
	lg->fname = xstrdup(LOG_FILE);
	lg->path = store_log_path(st, &lg->ref, false);
	*out = lg;
	return 0;
}

/* Serialize and validate a batch starting at seq; each line is checked by
 * the same parser readers use, so the store never writes what it would
 * reject. */
static int build_batch(struct buf *content, uint64_t seq, const struct log_event *evs, size_t n,
		       int64_t now, struct cerr *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct log_event *e = &evs[i];
		if (!e->type || !vocab_valid_type_name(e->type))
			return cerr_set(err, CERR_USAGE, 0, "event %zu: invalid type", i + 1);
		enum vocab_type vt = vocab_type_of(e->type);
		if (vt == VT_SESSION_HEADER)
			return cerr_set(err, CERR_USAGE, 0, "event %zu: the header is written by the store",
					i + 1);
		if (vt == VT_UNKNOWN && !e->ignorable)
			return cerr_set(err, CERR_USAGE, 0,
					"event %zu: unknown type '%s' (mark it \"ignorable\":true)",
					i + 1, e->type);
		if (e->data && !cJSON_IsObject(e->data))
			return cerr_set(err, CERR_USAGE, 0, "event %zu: data is not an object", i + 1);
		if (e->t < 0 || e->t > JSON_MAX_SAFE_INT)
			return cerr_set(err, CERR_USAGE, 0, "event %zu: time out of range", i + 1);
		/* Printed, an infinity or NaN would read back as null. */
		char *inf = e->data ? json_nonfinite_path(e->data, "data") : NULL;
		if (inf) {
			cerr_set(err, CERR_USAGE, 0, "event %zu: %s: number out of range", i + 1, inf);
			free(inf);
			return -1;
		}
		size_t start = content->len;
		event_format(content, seq + i, e->t ? e->t : now, e->type, e->turn, e->ignorable,
			     e->data);
		size_t len = content->len - start - 1;
		if (len > EVENT_MAX_LINE)
			return cerr_set(err, CERR_USAGE, 0,
					"event %zu: its line is %zu bytes; the limit is EVENT_MAX_LINE = %u "
					"(larger content goes to a blob)", i + 1, len, EVENT_MAX_LINE);
		if (!utf8_valid(content->p + start, len, NULL))
			return cerr_set(err, CERR_USAGE, 0, "event %zu is not valid UTF-8", i + 1);
		struct event ev;
		if (event_parse(content->p + start, len, seq + i, &ev, err) < 0) {
			err->cls = CERR_USAGE;
			return -1;
		}
		event_release(&ev);
	}
	if (content->len > FRAME_MAX_CONTENT)
		return cerr_set(err, CERR_USAGE, 0, "batch is %zu bytes; the limit is FRAME_MAX_CONTENT = %u",
				content->len, FRAME_MAX_CONTENT);
	return 0;
}

static void header_line(struct log *lg, struct buf *out)
{
	cJSON *data = cJSON_CreateObject();
	cJSON_AddNumberToObject(data, "format", VOCAB_FORMAT);
	cJSON_AddStringToObject(data, "id", lg->id);
	cJSON_AddNumberToObject(data, "created_at", (double)lg->created_at);
	if (lg->cwd)
		cJSON_AddStringToObject(data, "cwd", lg->cwd);
	else
		cJSON_AddNullToObject(data, "cwd");
	for (const cJSON *c = lg->extra ? lg->extra->child : NULL; c; c = c->next)
		if (!cJSON_GetObjectItemCaseSensitive(data, c->string))
			cJSON_AddItemToObject(data, c->string, cJSON_Duplicate(c, 1));
	event_format(out, 0, lg->created_at, vocab_type_name(VT_SESSION_HEADER), NULL, false,
		     data);
	cJSON_Delete(data);
}

/* Open (creating) the session folder and take its lock for a first
 * publication. Until we hold that lock, a leftover cleanup (leftover.h) may
 * remove the folder, which lock_take then reports as CERR_MISSING, or hold
 * the lock for a moment (CERR_LOCKED): start over in a fresh folder, a
 * bounded number of times. */
static int lock_new_session(struct log *lg, struct cerr *err)
{
	for (int attempt = 0;; attempt++) {
		if (lg->dirfd < 0 &&
		    store_open_session_dir(lg->st, &lg->ref, true, &lg->keyfd, &lg->dirfd, err) < 0)
			return -1;
		lg->lockfd = lock_take(lg->keyfd, lg->ref.id, lg->dirfd, err);
		if (lg->lockfd >= 0)
			return 0;
		if (attempt == 50 || (err->cls != CERR_MISSING && err->cls != CERR_LOCKED))
			return -1;
		if (err->cls == CERR_LOCKED) {
			struct stat st;
			if (fsops->fstatat(lg->dirfd, lg->fname, &st, AT_SYMLINK_NOFOLLOW) == 0)
				return cerr_set(err, CERR_CONFLICT, 0, "session '%s' already exists",
						lg->id);
			usleep(2000);
		}
		fs_close_quiet(lg->dirfd);
		fs_close_quiet(lg->keyfd);
		lg->dirfd = lg->keyfd = -1;
	}
}

int log_dir(struct log *lg, struct cerr *err)
{
	if (lg->lockfd < 0 && lock_new_session(lg, err) < 0)
		return -1;
	return lg->dirfd;
}

/* First publication: header frame + batch frame written to a staging file,
 * synced, renamed into place without overwriting, directory synced. */
static int publish(struct log *lg, const struct buf *frames, size_t head_len, uint64_t next_seq,
		   struct cerr *err)
{
	char staging[64];
	unsigned char rnd[6];
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		memset(rnd, 0, sizeof rnd);
	snprintf(staging, sizeof staging, ".%s.%02x%02x%02x%02x%02x%02x.tmp", LOG_FILE, rnd[0], rnd[1],
		 rnd[2], rnd[3], rnd[4], rnd[5]);
	if (lg->lockfd < 0 && lock_new_session(lg, err) < 0)
		return -1;
	struct stat st;
	if (fsops->fstatat(lg->dirfd, lg->fname, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return cerr_set(err, CERR_CONFLICT, 0, "session '%s' already exists", lg->id);
	/* Staging files of a writer killed here before: we hold the lock,
	 * and only the lock holder publishes, so they are dead. */
	leftover_remove_staging(lg->dirfd);
	struct replace r = {.dirfd = lg->dirfd,
			    .tmp = staging,
			    .name = lg->fname,
			    .data = frames->p,
			    .len = frames->len,
			    .noreplace = true,
			    .keep_fd = true};
	enum replace_step step = replace_file(&r, err);
	switch (step) {
	case REPLACE_DONE:
	case REPLACE_DIRSYNC:
		break;
	case REPLACE_OPEN:
		return -1; /* safefs's classified error */
	case REPLACE_WRITE:
		return cerr_set(err, CERR_IO, r.sys_errno, "cannot write '%s'", lg->path);
	case REPLACE_SYNC:
		return cerr_set(err, CERR_IO, r.sys_errno, "cannot sync '%s'", lg->path);
	default: /* rename */
		if (r.sys_errno == EEXIST)
			return cerr_set(err, CERR_CONFLICT, 0, "session '%s' already exists", lg->id);
		return cerr_set(err, CERR_IO, r.sys_errno, "cannot publish '%s'", lg->path);
	}
	if (fsops->fstat(r.fd, &st) < 0)
		memset(&st, 0, sizeof st);
	lg->fd = r.fd;
	lg->published = true;
	lg->head_known = true;
	sha256(frames->p, head_len, lg->head);
	lg->cur = (struct cursor){true, {st.st_dev, st.st_ino, frames->len, next_seq}};
	lg->synced_known = true; /* the staging file was synced in full */
	lg->synced_len = frames->len;
	if (step == REPLACE_DIRSYNC) {
		/* The rename happened but may not survive a power loss. */
		cerr_set(err, CERR_IO, r.sys_errno, "cannot sync directory '%s'", lg->path);
		lg->poisoned = true;
		err->outcome_unknown = true;
		return -1;
	}
	cJSON_Delete(lg->extra);
	lg->extra = NULL;
	return 0;
}

int log_publish_frames(struct log *lg, const struct buf *frames, size_t head_len,
		       uint64_t next_seq, struct cerr *err)
{
	if (lg->published)
		return cerr_set(err, CERR_CONFLICT, 0, "session '%s' already exists", lg->id);
	if (publish(lg, frames, head_len, next_seq, err) < 0)
		return -1;
	lg->batch_t = clock_unix_ms();
	return 0;
}

static bool cursor_matches(struct log *lg)
{
	struct stat a, b;
	if (!lg->cur.valid || lg->poisoned || lg->fd < 0)
		return false;
	if (fsops->fstat(lg->fd, &a) < 0 ||
	    fsops->fstatat(lg->dirfd, lg->fname, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return a.st_dev == lg->cur.rev.dev && a.st_ino == lg->cur.rev.ino && b.st_dev == a.st_dev &&
	       b.st_ino == a.st_ino && (uint64_t)a.st_size == lg->cur.rev.len;
}

/* Truncate to len and make it durable; the handle is poisoned if not. */
static void roll_back(struct log *lg, uint64_t len)
{
	if (fsops->ftruncate(lg->fd, (off_t)len) < 0 || fsops->fsync(lg->fd) < 0)
		lg->poisoned = true;
}

int log_cut_torn_tail(struct log *lg, const struct revision *rev, uint64_t *cut,
		      struct cerr *err)
{
	*cut = 0;
	if (!lg->scan || lg->scan->status != SCAN_TORN)
		return 0;
	struct stat a, b;
	if (fsops->fstat(lg->fd, &a) < 0 ||
	    fsops->fstatat(lg->dirfd, lg->fname, &b, AT_SYMLINK_NOFOLLOW) < 0)
		return cerr_set(err, CERR_IO, errno, "cannot stat '%s'", lg->path);
	if (a.st_dev != rev->dev || a.st_ino != rev->ino || b.st_dev != a.st_dev ||
	    b.st_ino != a.st_ino || (uint64_t)a.st_size != rev->len ||
	    !revision_same(&lg->scan->rev, rev))
		return cerr_set(err, CERR_CONFLICT, 0, "'%s' changed since it was read", lg->path);
	uint64_t good = lg->scan->good_len;
	if (fsops->ftruncate(lg->fd, (off_t)good) < 0) {
		lg->poisoned = true;
		return cerr_set(err, CERR_IO, errno, "cannot truncate '%s'", lg->path);
	}
	if (fsops->fsync(lg->fd) < 0) {
		lg->poisoned = true;
		cerr_set(err, CERR_IO, errno, "cannot sync '%s'", lg->path);
		err->outcome_unknown = true;
		return -1;
	}
	*cut = rev->len - good;
	lg->cut_bytes += *cut;
	lg->synced_known = true;
	lg->synced_len = good;
	lg->scan->status = SCAN_OK;
	lg->scan->rev.len = good;
	lg->cur = (struct cursor){true, {a.st_dev, a.st_ino, good, lg->scan->rev.next_seq}};
	return 0;
}

int log_write(struct log *lg, uint64_t expected, const struct log_event *evs, size_t n,
	      uint64_t *next_seq, struct cerr *err)
{
	if (n == 0) {
		if (next_seq)
			*next_seq = log_next_seq(lg);
		return 0;
	}
	if (lg->pending && lg->poisoned)
		return cerr_set(err, CERR_IO, 0,
				"'%s' has unsynced frames after a failed cleanup: sync them first",
				lg->path);
	/* Behind unsynced bytes of our own the cursor is the truth: a re-read
	 * now would build on them as if they were durable. */
	if (lg->published && !lg->pending && !lg->syncing && !cursor_matches(lg)) {
		if (reread(lg, false, err) < 0)
			return -1;
		if (lg->scan->status == SCAN_TORN) {
			struct revision rev = log_revision_of(lg);
			uint64_t cut;
			if (log_cut_torn_tail(lg, &rev, &cut, err) < 0)
				return -1;
		}
	}
	uint64_t seq = log_next_seq(lg);
	if (expected != seq)
		return cerr_set(err, CERR_CONFLICT, 0, "'%s' is at seq %llu, not %llu", lg->path,
				(unsigned long long)seq, (unsigned long long)expected);
	struct buf content = BUF_INIT, frames = BUF_INIT;
	int ret = -1;
	size_t head_len = 0;
	if (!lg->published) {
		header_line(lg, &content);
		if (frame_encode(lg->fc, content.p, content.len, &frames) < 0)
			goto encode_failed;
		head_len = frames.len;
		buf_reset(&content);
	}
	int64_t now = clock_unix_ms();
	if (build_batch(&content, seq, evs, n, now, err) < 0)
		goto out;
	if (frame_encode(lg->fc, content.p, content.len, &frames) < 0)
		goto encode_failed;
	if (!lg->published) {
		/* First publication is durable by itself (staging file synced,
		 * renamed, directory synced): nothing is left pending. */
		ret = publish(lg, &frames, head_len, seq + n, err);
		if (ret == 0)
			lg->batch_t = now;
		goto out;
	}
	if (fs_pwrite_all(lg->fd, frames.p, frames.len, (off_t)lg->cur.rev.len) < 0) {
		cerr_set(err, CERR_IO, errno, "cannot append to '%s'", lg->path);
		roll_back(lg, lg->cur.rev.len);
		goto out;
	}
	if (!lg->pending) {
		lg->pending = true;
		lg->pending_from = lg->cur;
	}
	lg->cur.rev.len += frames.len;
	lg->cur.rev.next_seq = seq + n;
	lg->batch_t = now;
	ret = 0;
	goto out;
encode_failed:
	cerr_set(err, CERR_IO, 0, "cannot compress batch for '%s'", lg->path);
out:
	if (ret == 0 && next_seq)
		*next_seq = lg->cur.rev.next_seq;
	buf_release(&content);
	buf_release(&frames);
	return ret;
}

bool log_sync_begin(struct log *lg)
{
	if (!lg->pending)
		return false;
	lg->pending = false;
	lg->syncing = true;
	lg->sync_from = lg->pending_from;
	lg->sync_upto = lg->cur.rev.len;
	return true;
}

int log_sync_fd(struct log *lg)
{
	return fsops->fdatasync(lg->fd) < 0 ? errno : 0;
}

int log_sync_end(struct log *lg, int errnum, struct cerr *err)
{
	lg->syncing = false;
	if (errnum) {
		/* Never retry a failed sync: its pages may already be marked
		 * clean. Remove every unsynced frame if we can (those written
		 * after the sync began too: they would follow a gap); either way
		 * the outcome is unknown and the next append re-reads from disk. */
		cerr_set(err, CERR_IO, errnum, "cannot sync '%s'", lg->path);
		err->outcome_unknown = true;
		lg->cur = lg->sync_from;
		lg->pending = false;
		roll_back(lg, lg->cur.rev.len);
		lg->poisoned = true;
		return -1;
	}
	lg->synced_known = true;
	lg->synced_len = lg->sync_upto;
	return 0;
}

int log_sync(struct log *lg, struct cerr *err)
{
	if (!log_sync_begin(lg))
		return 0;
	return log_sync_end(lg, log_sync_fd(lg), err);
}

bool log_pending(const struct log *lg)
{
	return lg->pending;
}

int log_append(struct log *lg, uint64_t expected, const struct log_event *evs, size_t n,
	       uint64_t *next_seq, struct cerr *err)
{
	uint64_t next;
	if (log_write(lg, expected, evs, n, &next, err) < 0 || log_sync(lg, err) < 0)
		return -1;
	if (next_seq)
		*next_seq = next;
	return 0;
}
