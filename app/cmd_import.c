/* cmd_import.c — `cairn import [--new-id] [--json] FILE|-`: a session
 * exported as JSON Lines (docs/format.md, "Export file") becomes a session
 * of this data root, its identity kept. The file is checked whole before
 * anything is written (persist/import.h); standard input is first spooled
 * to a nameless private file in the data root. */
#include "app/cli.h"
#include "app/cmds.h"
#include "base/ulid.h"
#include "persist/import.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file with no name in the root (O_TMPFILE), or one unlinked at once
 * where the file system has none: nothing is left behind, whatever
 * happens. Caller closes the descriptor. */
static int spool_fd(struct store *st, struct cerr *err)
{
	int rootfd = store_root_fd(st);
	int fd = openat(rootfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	char path[4096];
	snprintf(path, sizeof path, "%s/.import-XXXXXX", store_root(st));
	fd = mkstemp(path);
	if (fd < 0)
		return cerr_set(err, CERR_IO, errno, "cannot make a temporary file in '%s'",
				store_root(st));
	unlink(path);
	return fd;
}

static int spool_stdin(int fd, struct cerr *err)
{
	char chunk[65536];
	for (;;) {
		ssize_t r = read(STDIN_FILENO, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return cerr_set(err, CERR_IO, errno, "cannot read standard input");
		if (r == 0)
			return 0;
		for (ssize_t off = 0; off < r;) {
			ssize_t w = write(fd, chunk + off, (size_t)(r - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return cerr_set(err, CERR_IO, errno, "cannot spool standard input");
			off += w;
		}
	}
}

int cmd_import(struct cli *c, int argc, char **argv)
{
	const struct command *me = cli_find("import");
	bool json = false, new_id = false;
	const char *src = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--new-id") == 0)
			new_id = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage(me, "unknown option '%s'", argv[i]);
		else if (src)
			return cli_usage(me, "one FILE (or - for standard input) only");
		else
			src = argv[i];
	}
	if (!src)
		return cli_usage(me, "give the FILE to import (- for standard input)");
	struct cerr err;
	struct store *st = NULL;
	struct import *im = NULL;
	void *map = NULL;
	size_t len = 0;
	int fd = -1, code = 0;
	if (cli_open_store(c, true, &st, &err) < 0)
		goto fail;
	if (strcmp(src, "-") == 0) {
		if ((fd = spool_fd(st, &err)) < 0 || spool_stdin(fd, &err) < 0)
			goto fail;
	} else if ((fd = open(src, O_RDONLY | O_CLOEXEC)) < 0) {
		cerr_set(&err, errno == ENOENT ? CERR_MISSING : CERR_IO, errno, "cannot open '%s'", src);
		goto fail;
	}
	struct stat sb;
	if (fstat(fd, &sb) < 0) {
		cerr_set(&err, CERR_IO, errno, "cannot read '%s'", src);
		goto fail;
	}
	len = (size_t)sb.st_size;
	if (len) {
		map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			map = NULL;
			cerr_set(&err, CERR_IO, errno, "cannot read '%s'", src);
			goto fail;
		}
	}
	char fresh[ULID_LEN + 1];
	if (new_id)
		ulid_new(fresh);
	struct log_mark dur;
	if (import_parse(map ? map : "", len, new_id ? fresh : NULL, &im, &err) < 0) {
		cerr_prefix(&err, "%s", strcmp(src, "-") == 0 ? "standard input" : src);
		goto fail;
	}
	if (import_publish(st, im, &dur, &err) < 0)
		goto fail;
	bool behind = cli_note_durable(st, import_id(im), dur);
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", import_id(im));
		if (import_title(im))
			cJSON_AddStringToObject(o, "title", import_title(im));
		else
			cJSON_AddNullToObject(o, "title");
		cJSON_AddNumberToObject(o, "events", (double)import_events(im));
		cJSON_AddNumberToObject(o, "blobs", (double)import_blobs(im));
		cJSON_AddStringToObject(o, "catalog", behind ? "behind" : "current");
		cli_print_json(o);
	} else {
		cli_printf(stdout, "%s\n", import_id(im));
	}
	goto out;
fail:
	code = cli_fail(&err);
out:
	if (map)
		munmap(map, len);
	if (fd >= 0)
		close(fd);
	import_free(im);
	store_close(st);
	return code;
}
