/* tree.h — a session's turn tree (format §8): one entry per turn/start,
 * each with its parent entry, and the active leaf that branch/rewind
 * events and later turn/starts move. The one place that resolves the
 * tree's names, so that prepare (what a session is) and the model's
 * context (what it is sent) agree.
 *
 * Rules, fed in log order:
 * - every turn/start is an entry (a turn id started again is a new entry;
 *   a name means the latest entry with it so far);
 * - its parent: parent_turn absent → the entry of the previous turn/start
 *   in log order (none: a root); null → a root; a name → the latest entry
 *   with that name started before it (a name never started: a root);
 * - a turn/start makes its entry the active leaf; a branch/rewind makes
 *   its to_turn the active leaf (null: before the first turn, no leaf);
 *   one whose to_turn is absent or names no turn started before it moves
 *   nothing.
 * A parent always comes before its child, so the tree has no cycle. */
#ifndef CAIRN_TREE_H
#define CAIRN_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* No entry: a root's parent, the leaf before the first turn, a name
 * never started. */
#define TREE_NONE SIZE_MAX

/* What a turn/start says of its parent_turn. */
enum tree_parent {
	TREE_PARENT_ABSENT, /* no parent_turn: the previous turn/start */
	TREE_PARENT_NULL,   /* parent_turn null: a root */
	TREE_PARENT_NAMED,  /* parent_turn a string */
};

/* What a branch/rewind says of its to_turn. */
enum tree_to {
	TREE_TO_ABSENT, /* no to_turn: nothing moves */
	TREE_TO_NULL,   /* null: before the first turn */
	TREE_TO_NAMED,
};

struct tree;

/* A new, empty tree; free with tree_free. */
struct tree *tree_new(void);
void tree_free(struct tree *t);
/* Add the turn/start of turn id (copied) at seq whose parent_turn is how
 * (name: the string when TREE_PARENT_NAMED); its entry, numbered from 0
 * in log order. */
size_t tree_start(struct tree *t, const char *id, uint64_t seq, enum tree_parent how,
		  const char *name);
/* Apply a branch/rewind whose to_turn is how (name as above): true when
 * it moved the active leaf, false when it names nothing started. */
bool tree_rewind(struct tree *t, enum tree_to how, const char *name);

/* Entries so far; entry k's id (owned by t), turn/start seq and parent
 * (TREE_NONE: a root). */
size_t tree_count(const struct tree *t);
const char *tree_id(const struct tree *t, size_t k);
uint64_t tree_seq(const struct tree *t, size_t k);
size_t tree_parent(const struct tree *t, size_t k);
/* The latest entry with this id so far, or TREE_NONE. */
size_t tree_find(const struct tree *t, const char *id);
/* The active leaf, or TREE_NONE (before the first turn, or no turn yet). */
size_t tree_leaf(const struct tree *t);
/* The path from the root to entry k (TREE_NONE: empty), root first, into
 * *out (caller frees; NULL when empty); its length. */
size_t tree_path(const struct tree *t, size_t k, size_t **out);

#endif
