/* xalloc.h — allocation that aborts on out-of-memory (tmux xmalloc style).
 * Running out of memory is not a recoverable condition for cairn; the care
 * goes to the errors storage really meets. Every returned pointer is owned by
 * the caller and released with free(). */
#ifndef CAIRN_XALLOC_H
#define CAIRN_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* Grow an array to hold at least `need` elements of `size` bytes. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
/* xstrdup, where NULL stays NULL. */
char *xstrdup_opt(const char *s);
char *xstrndup(const char *s, size_t n);
/* Give memory freed in bulk back to the system (glibc keeps it in its
 * arenas otherwise: a long log's parse, freed, would stay resident).
 * Elsewhere nothing. */
void xalloc_trim(void);
/* printf into a new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
