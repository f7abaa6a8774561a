/* test_chat_cmd.c — tui/chat_cmd.h: the slash commands' one table is well
 * formed (names start with '/', none twice, each with its help and
 * handler), chat_cmd_find finds exactly its names, and what is made from
 * it names every command: Tab's line of the key table, the help screen's
 * part and docs/keys.md's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "tui/chat_cmd.h"
#include "tui/key.h"
#include "tui/keytab.h"

static void test_table_is_well_formed(void **state)
{
	(void)state;
	size_t n;
	const struct chat_command *t = chat_cmd_entries(&n);
	assert_true(n >= 7);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(t[i].name);
		assert_int_equal(t[i].name[0], '/');
		assert_true(strcspn(t[i].name, " \t\n") == strlen(t[i].name));
		assert_non_null(t[i].help);
		assert_true(t[i].help[0] >= 'a' && t[i].help[0] <= 'z');
		assert_true(t[i].help[strlen(t[i].help) - 1] != '.');
		assert_non_null(t[i].run);
		for (size_t j = 0; j < i; j++)
			if (strcmp(t[i].name, t[j].name) == 0)
				fail_msg("%s twice", t[i].name);
		assert_ptr_equal(chat_cmd_find(t[i].name), &t[i]);
	}
	assert_null(chat_cmd_find("/frobnicate"));
	assert_null(chat_cmd_find("/ti")); /* a prefix is not a name */
	assert_null(chat_cmd_find("title"));
}

/* Tab's help in the key table lists the commands it completes: the
 * table's names, all of them, in its order, and nothing else. */
static void test_tab_names_the_table(void **state)
{
	(void)state;
	size_t nk, n;
	const struct keybinding *k = keytab_entries(&nk);
	const struct chat_command *t = chat_cmd_entries(&n);
	const char *tab = NULL;
	for (size_t i = 0; i < nk; i++)
		if (k[i].act == KEYACT_COMPLETE)
			tab = k[i].help;
	assert_non_null(tab);
	const char *list = strchr(tab, '/');
	assert_non_null(list);
	struct buf want = BUF_INIT;
	for (size_t i = 0; i < n; i++)
		buf_printf(&want, "%s%s", i ? ", " : "", t[i].name);
	if (strcmp(list, want.p) != 0)
		fail_msg("Tab says '%s', the table has '%s'", list, want.p);
	buf_release(&want);
}

static void test_help_and_markdown_show_every_command(void **state)
{
	(void)state;
	size_t n;
	const struct chat_command *t = chat_cmd_entries(&n);
	struct buf help = BUF_INIT, md = BUF_INIT;
	chat_cmd_help(&help, 22, 0);
	chat_cmd_markdown(&md);
	assert_non_null(strstr(help.p, "\nSlash commands: "));
	assert_non_null(strstr(md.p, "\n## Slash commands\n"));
	for (size_t i = 0; i < n; i++) {
		char row[160];
		snprintf(row, sizeof row, "\n  %s%s%s", t[i].name, t[i].args ? " " : "",
			 t[i].args ? t[i].args : "");
		if (!strstr(help.p, row) || !strstr(help.p, t[i].help))
			fail_msg("the help screen lacks %s", t[i].name);
		snprintf(row, sizeof row, "| `%s", t[i].name);
		if (!strstr(md.p, row) || !strstr(md.p, t[i].help))
			fail_msg("docs/keys.md lacks %s", t[i].name);
	}
	/* A bar in a command's words never splits the markdown table's row. */
	for (const char *l = md.p; (l = strstr(l, "\n| `")); l++) {
		const char *end = strchr(l + 1, '\n');
		int cells = 0;
		for (const char *p = l + 1; p < end; p++)
			cells += *p == '|' && p[-1] != '\\';
		assert_int_equal(cells, 3);
	}
	buf_release(&help);
	buf_release(&md);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_well_formed),
		cmocka_unit_test(test_tab_names_the_table),
		cmocka_unit_test(test_help_and_markdown_show_every_command),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
