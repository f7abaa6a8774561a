/* strmap.h — a small open-addressing hash map from strings to size_t.
 * Keys are borrowed: they must outlive the map. Embedded: strmap_init /
 * strmap_release. */
#ifndef CAIRN_STRMAP_H
#define CAIRN_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

struct strmap {
	const char **keys; /* private */
	size_t *vals;      /* private */
	size_t cap, count; /* private; count is read-only */
};

void strmap_init(struct strmap *m);
void strmap_release(struct strmap *m);
/* Insert or overwrite key -> val. */
void strmap_put(struct strmap *m, const char *key, size_t val);
/* Look key up; true and *val when present. */
bool strmap_get(const struct strmap *m, const char *key, size_t *val);
/* Remove key; true when it was present (its key may be freed after). */
bool strmap_del(struct strmap *m, const char *key);

#endif
