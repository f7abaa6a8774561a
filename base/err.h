/* err.h — the one error convention of cairn.
 *
 * Functions that can fail return 0 on success and -1 on failure, after
 * filling a caller-provided struct cerr with a stable class (DESIGN §4.7),
 * the errno when one applies, and a git-style message (lowercase, no final
 * period, subjects in quotes). The class doubles as the CLI exit code. */
#ifndef CAIRN_ERR_H
#define CAIRN_ERR_H

#include <stdbool.h>

enum cerr_class {
	CERR_OK = 0,
	CERR_IO = 1,          /* an I/O error, with errno */
	CERR_USAGE = 2,       /* the caller asked for something invalid */
	CERR_MISSING = 3,     /* no such session or file */
	CERR_CORRUPT = 4,     /* committed data is damaged; needs a human */
	CERR_UNSUPPORTED = 5, /* format version or required event unknown */
	CERR_CONFLICT = 6,    /* expected seq/revision changed underneath */
	CERR_LOCKED = 7,      /* another process owns the writer lock */
	CERR_BUSY = 8,        /* the session runs a turn or an exclusive operation */
};

struct cerr {
	enum cerr_class cls;
	int sys_errno;        /* 0 when no errno applies */
	bool outcome_unknown; /* a write may or may not be durable */
	char msg[512];
};

/* Fill err (which may be NULL) and return -1. errnum 0 means none. */
int cerr_set(struct cerr *err, enum cerr_class cls, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Reset err to CERR_OK with an empty message. */
void cerr_clear(struct cerr *err);
/* Prefix err's message with "what: " (keeps class and errno). */
void cerr_prefix(struct cerr *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Stable lowercase name of a class ("io", "corrupt", ...); static storage. */
const char *cerr_class_name(enum cerr_class cls);
/* The class named name (NULL allowed) into *cls: false when no class has
 * that name. */
bool cerr_class_of(const char *name, enum cerr_class *cls);
/* The CLI exit code of a class. */
int cerr_exit_code(enum cerr_class cls);
/* Rank for "most severe" comparisons (higher is more severe). */
int cerr_severity(enum cerr_class cls);

#endif
