/* err.c — error classes, messages and exit codes. */
#include "base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cerr_set(struct cerr *err, enum cerr_class cls, int errnum, const char *fmt, ...)
{
	if (!err)
		return -1;
	err->cls = cls;
	err->sys_errno = errnum;
	err->outcome_unknown = false;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	if (errnum && n >= 0 && (size_t)n < sizeof err->msg)
		snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(errnum));
	return -1;
}

void cerr_clear(struct cerr *err)
{
	if (!err)
		return;
	err->cls = CERR_OK;
	err->sys_errno = 0;
	err->outcome_unknown = false;
	err->msg[0] = '\0';
}

void cerr_prefix(struct cerr *err, const char *fmt, ...)
{
	if (!err)
		return;
	char pre[256], old[sizeof err->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof pre, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	size_t n = strlen(pre);
	if (n > sizeof err->msg - 3)
		n = sizeof err->msg - 3;
	memcpy(err->msg, pre, n);
	memcpy(err->msg + n, ": ", 2);
	size_t rest = sizeof err->msg - n - 3;
	size_t m = strnlen(old, rest);
	memcpy(err->msg + n + 2, old, m);
	err->msg[n + 2 + m] = '\0';
}

const char *cerr_class_name(enum cerr_class cls)
{
	switch (cls) {
	case CERR_OK: return "ok";
	case CERR_IO: return "io";
	case CERR_USAGE: return "usage";
	case CERR_MISSING: return "missing";
	case CERR_CORRUPT: return "corrupt";
	case CERR_UNSUPPORTED: return "unsupported";
	case CERR_CONFLICT: return "conflict";
	case CERR_LOCKED: return "locked";
	case CERR_BUSY: return "busy";
	}
	return "io";
}

bool cerr_class_of(const char *name, enum cerr_class *cls)
{
	for (int c = CERR_OK; name && c <= CERR_BUSY; c++)
		if (strcmp(cerr_class_name((enum cerr_class)c), name) == 0) {
			*cls = (enum cerr_class)c;
			return true;
		}
	return false;
}

int cerr_exit_code(enum cerr_class cls)
{
	return (int)cls;
}

int cerr_severity(enum cerr_class cls)
{
	/* Damage outranks everything; a plain usage slip ranks lowest. */
	static const int rank[] = {
		[CERR_OK] = 0, [CERR_USAGE] = 1, [CERR_MISSING] = 2, [CERR_LOCKED] = 3, [CERR_BUSY] = 3,
		[CERR_CONFLICT] = 4, [CERR_IO] = 5, [CERR_UNSUPPORTED] = 6, [CERR_CORRUPT] = 7,
	};
	return (unsigned)cls < sizeof rank / sizeof rank[0] ? rank[cls] : 5;
}
