/* tree.c — a session's turn tree (rules in tree.h). */
#include "persist/tree.h"
#include "base/strmap.h"
#include "base/xalloc.h"

#include <stdlib.h>

struct entry {
	char *id;
	uint64_t seq;
	size_t parent;
};

struct tree {
	struct entry *e;
	size_t n, cap;
	struct strmap ids; /* id -> latest entry with it */
	size_t leaf;
};

struct tree *tree_new(void)
{
	struct tree *t = xcalloc(1, sizeof *t);
	strmap_init(&t->ids);
	t->leaf = TREE_NONE;
	return t;
}

void tree_free(struct tree *t)
{
	if (!t)
		return;
	strmap_release(&t->ids);
	for (size_t k = 0; k < t->n; k++)
		free(t->e[k].id);
	free(t->e);
	free(t);
}

size_t tree_find(const struct tree *t, const char *id)
{
	size_t k;
	return id && strmap_get(&t->ids, id, &k) ? k : TREE_NONE;
}

size_t tree_start(struct tree *t, const char *id, uint64_t seq, enum tree_parent how,
		  const char *name)
{
	size_t parent = TREE_NONE;
	if (how == TREE_PARENT_ABSENT)
		parent = t->n ? t->n - 1 : TREE_NONE;
	else if (how == TREE_PARENT_NAMED)
		parent = tree_find(t, name); /* before this entry takes the name */
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->e = xreallocarray(t->e, t->cap, sizeof *t->e);
	}
	t->e[t->n] = (struct entry){.id = xstrdup(id), .seq = seq, .parent = parent};
	strmap_put(&t->ids, t->e[t->n].id, t->n);
	t->leaf = t->n;
	return t->n++;
}

bool tree_rewind(struct tree *t, enum tree_to how, const char *name)
{
	if (how == TREE_TO_NULL) {
		t->leaf = TREE_NONE;
		return true;
	}
	size_t k = how == TREE_TO_NAMED ? tree_find(t, name) : TREE_NONE;
	if (k == TREE_NONE)
		return false;
	t->leaf = k;
	return true;
}

size_t tree_count(const struct tree *t)
{
	return t->n;
}

const char *tree_id(const struct tree *t, size_t k)
{
	return t->e[k].id;
}

uint64_t tree_seq(const struct tree *t, size_t k)
{
	return t->e[k].seq;
}

size_t tree_parent(const struct tree *t, size_t k)
{
	return t->e[k].parent;
}

size_t tree_leaf(const struct tree *t)
{
	return t->leaf;
}

size_t tree_path(const struct tree *t, size_t k, size_t **out)
{
	size_t depth = 0;
	for (size_t j = k; j != TREE_NONE; j = t->e[j].parent)
		depth++;
	*out = NULL;
	if (!depth)
		return 0;
	size_t *p = xreallocarray(NULL, depth, sizeof *p);
	size_t d = depth;
	for (size_t j = k; j != TREE_NONE; j = t->e[j].parent)
		p[--d] = j;
	*out = p;
	return depth;
}
