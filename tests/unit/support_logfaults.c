/* support_logfaults.c — the log fault tests' fixture (see support_logfaults.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/support_logfaults.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "persist/frame.h"
#include "persist/fsops.h"
#include "tests/unit/support_faultfs.h"
#include "tests/unit/support_fixture.h"

static char *log_file(const char *root)
{
	return session_path(root, STORE_SESSIONS, NULL, SID, LOG_FILE);
}

/* A fresh store root, tracked by the power-loss model from its creation;
 * fsops is the fault table, disarmed. */
void lf_open(struct fx *f)
{
	struct cerr err;
	assert_int_equal(tmp_root("cairn-faults", f->dir, sizeof f->dir, f->root, sizeof f->root), 0);
	f->path = log_file(f->root);
	assert_int_equal(store_open(f->root, true, &f->st, &err), 0);
	faultfs_install();
	assert_int_equal(faultfs_track(f->root), 0);
}

void lf_close(struct fx *f)
{
	faultfs_uninstall();
	store_close(f->st);
	rm_rf(f->dir);
	free(f->path);
}

static void add(struct batch *b, const char *type, const char *turn, cJSON *data)
{
	assert_true(b->n < 8);
	b->data[b->n] = data;
	b->ev[b->n] = (struct log_event){.type = type, .turn = turn, .data = data};
	b->n++;
}

static cJSON *obj(const char *k1, const char *v1, const char *k2, const char *v2)
{
	cJSON *o = cJSON_CreateObject();
	if (k1)
		cJSON_AddStringToObject(o, k1, v1);
	if (k2)
		cJSON_AddStringToObject(o, k2, v2);
	return o;
}

/* n user messages "<tag> i". */
void lf_msgs(struct batch *b, const char *tag, size_t n)
{
	char text[64];
	memset(b, 0, sizeof *b);
	for (size_t i = 0; i < n; i++) {
		snprintf(text, sizeof text, "%s %zu", tag, i);
		add(b, "user/message", NULL, obj("text", text, NULL, NULL));
	}
}

/* One message of len bytes that zstd cannot shrink much. */
void lf_big(struct batch *b, size_t len)
{
	char *text = xmalloc(len + 1);
	uint32_t seed = (uint32_t)len;
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1664525u + 1013904223u;
		text[i] = (char)('a' + (seed >> 24) % 26);
	}
	text[len] = '\0';
	memset(b, 0, sizeof *b);
	add(b, "assistant/text", NULL, obj("text", text, NULL, NULL));
	free(text);
}

/* A turn left open: two calls, the first one started. */
void lf_open_turn(struct batch *b)
{
	memset(b, 0, sizeof *b);
	add(b, "turn/start", "T1", obj(NULL, NULL, NULL, NULL));
	cJSON *call = obj("call_id", "c1", "name", "shell");
	cJSON_AddItemToObject(call, "args", obj("cmd", "ls", NULL, NULL));
	add(b, "tool/call", "T1", call);
	add(b, "tool/started", "T1", obj("call_id", "c1", NULL, NULL));
	call = obj("call_id", "c2", "name", "read");
	cJSON_AddItemToObject(call, "args", obj("path", "/x", NULL, NULL));
	add(b, "tool/call", "T1", call);
}

void lf_batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		cJSON_Delete(b->data[i]);
	b->n = 0;
}

void lf_snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->lines[i]);
		free(s->types[i]);
	}
	free(s->lines);
	free(s->types);
	memset(s, 0, sizeof *s);
}

/* Read path through fsops_real, whatever table is in force. */
void lf_snap_read(const char *path, struct snap *s)
{
	const struct fsops *saved = fsops;
	fsops = &fsops_real;
	memset(s, 0, sizeof *s);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		assert_int_equal(errno, ENOENT);
		fsops = saved;
		return;
	}
	struct scan *sc;
	struct cerr err;
	assert_int_equal(scan_fd(fd, &sc, &err), 0);
	close(fd);
	s->exists = true;
	s->status = sc->status;
	s->n = sc->n_events;
	s->next_seq = sc->rev.next_seq;
	s->open_turns = sc->n_open_turns;
	s->lines = xcalloc(s->n + 1, sizeof *s->lines);
	s->types = xcalloc(s->n + 1, sizeof *s->types);
	for (size_t i = 0; i < s->n; i++) {
		s->lines[i] = xstrndup(sc->events[i].line, sc->events[i].line_len);
		s->types[i] = xstrdup(sc->events[i].type);
	}
	scan_free(sc);
	fsops = saved;
}

/* got holds exactly acked, or (only when the outcome is unknown) acked plus
 * the n_extra events of the failed batch. Returns got's next seq. */
uint64_t lf_check_holds(const struct snap *got, const struct snap *acked, size_t n_extra,
			bool unknown, const char *what)
{
	if (!got->exists)
		fail_msg("%s: the log vanished", what);
	if (got->status != SCAN_OK && got->status != SCAN_TORN)
		fail_msg("%s: the log reads as %s", what, scan_status_name(got->status));
	if (got->n != acked->n && !(unknown && got->n == acked->n + n_extra))
		fail_msg("%s: %zu events on disk, %zu acknowledged (+%zu unknown: %d)", what, got->n,
			 acked->n, n_extra, unknown);
	for (size_t i = 0; i < acked->n; i++)
		if (strcmp(got->lines[i], acked->lines[i]) != 0)
			fail_msg("%s: event %zu changed:\n  %s\n  %s", what, i, acked->lines[i],
				 got->lines[i]);
	return got->next_seq;
}

/* The tree as a power loss now would leave it holds exactly `want`. */
void lf_check_survives(const struct fx *x, const struct snap *want, const char *what)
{
	char *dest = xasprintf("%s/crash", x->dir);
	rm_rf(dest);
	assert_int_equal(faultfs_crash_copy(x->root, dest), 0);
	char *p = log_file(dest);
	struct snap got;
	lf_snap_read(p, &got);
	if (!got.exists)
		fail_msg("%s: the acknowledged session is lost by a power loss", what);
	if (got.status != SCAN_OK || got.n != want->n)
		fail_msg("%s: after a power loss the log is %s with %zu events, %zu acknowledged", what,
			 scan_status_name(got.status), got.n, want->n);
	lf_check_holds(&got, want, 0, false, what);
	lf_snap_free(&got);
	free(p);
	rm_rf(dest);
	free(dest);
}

void lf_tear(const char *path)
{
	struct frame_codec *fc = frame_codec_new();
	struct buf fr = BUF_INIT;
	char content[8192];
	uint32_t seed = 1;
	for (size_t i = 0; i < sizeof content; i++) {
		seed = seed * 1664525u + 1013904223u;
		content[i] = (char)('A' + (seed >> 24) % 26);
	}
	assert_int_equal(frame_encode(fc, content, sizeof content, &fr), 0);
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, fr.p, fr.len / 2), (ssize_t)(fr.len / 2));
	close(fd);
	buf_release(&fr);
	frame_codec_free(fc);
}
