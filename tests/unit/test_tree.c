/* test_tree.c — the turn tree (persist/tree.c): parents resolved when a
 * turn starts (absent: the previous start; null: a root; a name: its
 * latest start so far, never one after), the active leaf moved by starts
 * and rewinds, the path from the root, and a deep chain walked without
 * recursion. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "persist/tree.h"

static void expect_path(const struct tree *t, size_t k, const size_t *want, size_t n)
{
	size_t *p;
	assert_int_equal(tree_path(t, k, &p), n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(p[i], want[i]);
	free(p);
}

static void test_parents_are_resolved_when_a_turn_starts(void **state)
{
	(void)state;
	struct tree *t = tree_new();
	assert_int_equal(tree_leaf(t), TREE_NONE);
	assert_int_equal(tree_start(t, "a", 1, TREE_PARENT_ABSENT, NULL), 0);
	assert_int_equal(tree_parent(t, 0), TREE_NONE); /* absent, nothing before: a root */
	assert_int_equal(tree_start(t, "b", 2, TREE_PARENT_ABSENT, NULL), 1);
	assert_int_equal(tree_parent(t, 1), 0);
	assert_int_equal(tree_start(t, "c", 3, TREE_PARENT_NULL, NULL), 2);
	assert_int_equal(tree_parent(t, 2), TREE_NONE);
	assert_int_equal(tree_start(t, "d", 4, TREE_PARENT_NAMED, "a"), 3);
	assert_int_equal(tree_parent(t, 3), 0);
	assert_int_equal(tree_start(t, "e", 5, TREE_PARENT_NAMED, "zz"), 4);
	assert_int_equal(tree_parent(t, 4), TREE_NONE); /* never started: a root */
	/* "a" again: a new entry; a name now means it, an earlier parent does not move */
	assert_int_equal(tree_start(t, "a", 6, TREE_PARENT_NAMED, "a"), 5);
	assert_int_equal(tree_parent(t, 5), 0);
	assert_int_equal(tree_find(t, "a"), 5);
	assert_int_equal(tree_start(t, "f", 7, TREE_PARENT_NAMED, "a"), 6);
	assert_int_equal(tree_parent(t, 6), 5);
	assert_int_equal(tree_parent(t, 3), 0);
	assert_int_equal(tree_seq(t, 5), 6);
	assert_string_equal(tree_id(t, 6), "f");
	assert_int_equal(tree_count(t), 7);
	assert_int_equal(tree_leaf(t), 6);
	expect_path(t, tree_leaf(t), (size_t[]){0, 5, 6}, 3);
	tree_free(t);
}

static void test_rewinds_move_the_leaf(void **state)
{
	(void)state;
	struct tree *t = tree_new();
	assert_false(tree_rewind(t, TREE_TO_NAMED, "a")); /* nothing started yet */
	tree_start(t, "a", 1, TREE_PARENT_NULL, NULL);
	tree_start(t, "b", 2, TREE_PARENT_NAMED, "a");
	assert_true(tree_rewind(t, TREE_TO_NAMED, "a"));
	assert_int_equal(tree_leaf(t), 0);
	expect_path(t, tree_leaf(t), (size_t[]){0}, 1);
	assert_false(tree_rewind(t, TREE_TO_ABSENT, NULL));
	assert_false(tree_rewind(t, TREE_TO_NAMED, "nope"));
	assert_int_equal(tree_leaf(t), 0);
	assert_true(tree_rewind(t, TREE_TO_NULL, NULL));
	assert_int_equal(tree_leaf(t), TREE_NONE);
	expect_path(t, tree_leaf(t), NULL, 0);
	tree_start(t, "c", 4, TREE_PARENT_NULL, NULL); /* a later start is the leaf */
	assert_int_equal(tree_leaf(t), 2);
	assert_true(tree_rewind(t, TREE_TO_NAMED, "b")); /* a checkout */
	expect_path(t, tree_leaf(t), (size_t[]){0, 1}, 2);
	tree_free(t);
}

/* 100,000 turns in one chain: the path is walked, not recursed. */
static void test_a_deep_chain(void **state)
{
	(void)state;
	struct tree *t = tree_new();
	char id[32];
	for (size_t k = 0; k < 100000; k++) {
		snprintf(id, sizeof id, "t%zu", k + 1);
		tree_start(t, id, k, TREE_PARENT_ABSENT, NULL);
	}
	size_t *p;
	assert_int_equal(tree_path(t, tree_leaf(t), &p), 100000);
	assert_int_equal(p[0], 0);
	assert_int_equal(p[99999], 99999);
	free(p);
	assert_int_equal(tree_find(t, "t50000"), 49999);
	tree_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parents_are_resolved_when_a_turn_starts),
		cmocka_unit_test(test_rewinds_move_the_leaf),
		cmocka_unit_test(test_a_deep_chain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
