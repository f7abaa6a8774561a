/* strmap.c — linear-probing string map (FNV-1a hashes). */
#include "base/strmap.h"
#include "base/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

void strmap_init(struct strmap *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->count = 0;
}

void strmap_release(struct strmap *m)
{
	free(m->keys);
	free(m->vals);
	strmap_init(m);
}

static void insert(struct strmap *m, const char *key, size_t val)
{
	size_t i = (size_t)hash(key) & (m->cap - 1);
	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->count++;
	m->keys[i] = key;
	m->vals[i] = val;
}

void strmap_put(struct strmap *m, const char *key, size_t val)
{
	if ((m->count + 1) * 2 > m->cap) {
		struct strmap old = *m;
		m->cap = old.cap ? old.cap * 2 : 16;
		m->keys = xcalloc(m->cap, sizeof *m->keys);
		m->vals = xcalloc(m->cap, sizeof *m->vals);
		m->count = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.keys[i])
				insert(m, old.keys[i], old.vals[i]);
		free(old.keys);
		free(old.vals);
	}
	insert(m, key, val);
}

bool strmap_get(const struct strmap *m, const char *key, size_t *val)
{
	if (!m->cap)
		return false;
	size_t i = (size_t)hash(key) & (m->cap - 1);
	while (m->keys[i]) {
		if (strcmp(m->keys[i], key) == 0) {
			*val = m->vals[i];
			return true;
		}
		i = (i + 1) & (m->cap - 1);
	}
	return false;
}

bool strmap_del(struct strmap *m, const char *key)
{
	if (!m->cap)
		return false;
	size_t mask = m->cap - 1;
	size_t i = (size_t)hash(key) & mask;
	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & mask;
	if (!m->keys[i])
		return false;
	m->keys[i] = NULL;
	m->count--;
	/* Linear probing has no tombstones: move back each later entry of the
	 * run whose home slot is not between the hole and itself, or a
	 * lookup would stop at the hole before reaching it. */
	for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
		size_t h = (size_t)hash(m->keys[j]) & mask;
		bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
		if (stays)
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->keys[j] = NULL;
		i = j;
	}
	return true;
}
