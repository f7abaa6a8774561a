/* test_tool_files.c — engine/tool_files.c, tool_write.c, tool_edit.c and
 * tool_grep.c on real files in a private directory, each run on a real
 * libuv loop: read_file's numbered lines, ranges, size cap and binary
 * detection; write_file's atomic replace (2 MB read back, mode kept,
 * through a symlink); edit_file's uniqueness and diff; list_dir's order and
 * marks; grep's regex, glob, bound and errors; wrong arguments; cancel. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "base/buf.h"
#include "base/xalloc.h"
#include "engine/tool_int.h"
#include "support_fixture.h"

struct done {
	int calls;
	struct tool_result r; /* the fields taken from the callback's result */
};

static void on_done(void *ctx, struct tool_run *run, struct tool_result *r)
{
	struct done *d = ctx;
	(void)run;
	d->calls++;
	d->r = *r; /* the receiver takes the fields */
}

static void done_release(struct done *d)
{
	tool_result_release(&d->r);
	memset(d, 0, sizeof *d);
}

static char dir[64];

static int setup(void **state)
{
	char root[80];
	return tmp_root("toolfiles", dir, sizeof dir, root, sizeof root);
}

static int teardown(void **state)
{
	rm_rf(dir);
	return 0;
}

/* Run tool name with the JSON arguments in cwd dir on a fresh loop; the
 * completed result (the caller releases it). */
static struct done run_lim(const char *name, const char *args, const struct tool_limits *lim)
{
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	struct tool_ctx ctx = {.loop = &loop, .cwd = dir};
	if (lim)
		ctx.limits = *lim;
	cJSON *a = cJSON_Parse(args);
	assert_non_null(a);
	struct done d = {0};
	struct cerr err;
	struct tool_run *run = tool_files_start(&ctx, name, a, on_done, &d, &err);
	assert_non_null(run);
	cJSON_Delete(a); /* borrowed for the call only */
	assert_int_equal(d.calls, 0); /* never from inside the start */
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(d.calls, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
	assert_non_null(d.r.output);
	return d;
}

static struct done run(const char *name, const char *args)
{
	return run_lim(name, args, NULL);
}

/* A JSON object of string fields: key, value, ..., NULL (caller frees). */
static char *args_of(const char *key, ...)
{
	cJSON *o = cJSON_CreateObject();
	va_list ap;
	va_start(ap, key);
	for (const char *k = key; k; k = va_arg(ap, const char *))
		cJSON_AddStringToObject(o, k, va_arg(ap, const char *));
	va_end(ap);
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static void put(const char *name, const char *text)
{
	spit(path_in(dir, "%s", name), text, strlen(text), O_TRUNC);
}

static void expect_error(struct done *d, const char *part)
{
	assert_int_equal(d->r.status, TOOL_ERROR);
	if (!strstr(d->r.output, part))
		fail_msg("'%s' not in '%s'", part, d->r.output);
}

static void expect_text(const char *got, const char *want)
{
	if (strcmp(got, want) != 0)
		fail_msg("got:\n%s\nwant:\n%s", got, want);
}

static void test_read_file_numbers_lines_and_takes_a_range(void **state)
{
	put("ten.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10");
	struct done d = run("read_file", "{\"path\":\"ten.txt\",\"start_line\":3,\"end_line\":5}");
	assert_int_equal(d.r.status, TOOL_OK);
	expect_text(d.r.output, "     3\tl3\n     4\tl4\n     5\tl5\n");
	done_release(&d);
	d = run("read_file", "{\"path\":\"ten.txt\",\"start_line\":9}");
	expect_text(d.r.output, "     9\tl9\n    10\tl10\n");
	assert_false(d.r.truncated);
	assert_null(d.r.full);
	done_release(&d);
	/* An absolute path works as well. */
	char *a = xasprintf("{\"path\":\"%s/ten.txt\",\"end_line\":1}", dir);
	d = run("read_file", a);
	expect_text(d.r.output, "     1\tl1\n");
	free(a);
	done_release(&d);
	d = run("read_file", "{\"path\":\"ten.txt\",\"start_line\":11}");
	expect_error(&d, "start_line 11 is past the end of 'ten.txt' (10 lines)");
	done_release(&d);
	d = run("read_file", "{\"path\":\"ten.txt\",\"start_line\":5,\"end_line\":4}");
	expect_error(&d, "end_line 4 is before start_line 5");
	done_release(&d);
	put("empty.txt", "");
	d = run("read_file", "{\"path\":\"empty.txt\"}");
	assert_int_equal(d.r.status, TOOL_OK);
	expect_text(d.r.output, "[empty file 'empty.txt']\n");
	done_release(&d);
}

/* A file larger than what is shown at once stops at a line boundary and
 * says where to read on; reading on continues with the next line. */
static void test_read_file_stops_at_the_cap_and_says_how_to_read_on(void **state)
{
	struct buf b = BUF_INIT;
	for (int i = 1; i <= 5000; i++)
		buf_printf(&b, "line %05d %s\n", i, "................................................");
	spit(path_in(dir, "big.txt"), b.p, b.len, O_TRUNC);
	buf_release(&b);
	struct done d = run("read_file", "{\"path\":\"big.txt\"}");
	assert_int_equal(d.r.status, TOOL_OK);
	assert_false(d.r.truncated); /* stopped on a line, never cut in the middle */
	assert_true(strlen(d.r.output) <= TOOL_RESULT_MAX_DEFAULT);
	const char *note = strstr(d.r.output, "read on with start_line=");
	assert_non_null(note);
	long next = atol(note + strlen("read on with start_line="));
	assert_true(next > 100 && next < 5000);
	char want[64];
	snprintf(want, sizeof want, "%6ld\tline %05ld ", next - 1, next - 1);
	assert_non_null(strstr(d.r.output, want)); /* the last line shown is whole */
	done_release(&d);
	char *a = xasprintf("{\"path\":\"big.txt\",\"start_line\":%ld,\"end_line\":%ld}", next, next);
	d = run("read_file", a);
	snprintf(want, sizeof want, "%6ld\tline %05ld ", next, next);
	assert_true(strncmp(d.r.output, want, strlen(want)) == 0);
	free(a);
	done_release(&d);
	/* read_max bounds it too, below the model's cap. */
	struct tool_limits lim = {.read_max = 1000};
	d = run_lim("read_file", "{\"path\":\"big.txt\"}", &lim);
	const char *stop = strstr(d.r.output, "[stopped after line ");
	assert_non_null(stop);
	assert_true((size_t)(stop - d.r.output) <= 1000);
	assert_non_null(strstr(stop, "read on with start_line="));
	done_release(&d);
	/* One line longer than the budget is shown cut, and says so. */
	lim = (struct tool_limits){.read_max = 300};
	char line[2000];
	memset(line, 'x', sizeof line - 2);
	line[sizeof line - 2] = '\n';
	line[sizeof line - 1] = '\0';
	put("long.txt", line);
	d = run_lim("read_file", "{\"path\":\"long.txt\"}", &lim);
	assert_non_null(strstr(d.r.output, "[line 1 is longer than"));
	assert_true(strlen(d.r.output) < 600);
	done_release(&d);
}

static void test_read_file_refuses_binary_files(void **state)
{
	spit(path_in(dir, "nul.bin"), "text\0more", 9, O_TRUNC);
	struct done d = run("read_file", "{\"path\":\"nul.bin\"}");
	expect_error(&d, "binary file, 9 bytes");
	done_release(&d);
	/* No NUL, but mostly bytes that are not UTF-8. */
	unsigned char noise[4096];
	srand(7);
	for (size_t i = 0; i < sizeof noise; i++)
		noise[i] = (unsigned char)(0x80 + rand() % 0x80);
	spit(path_in(dir, "noise.bin"), noise, sizeof noise, O_TRUNC);
	d = run("read_file", "{\"path\":\"noise.bin\"}");
	expect_error(&d, "binary file, 4096 bytes");
	done_release(&d);
	/* A Latin-1 text with a few accents is text: shown, the bytes as U+FFFD. */
	put("latin1.txt", "caf\xe9 au lait, cr\xe8me br\xfbl\xe9\x65, and a long plain English tail\n");
	d = run("read_file", "{\"path\":\"latin1.txt\"}");
	assert_int_equal(d.r.status, TOOL_OK);
	assert_non_null(strstr(d.r.output, "caf\xef\xbf\xbd au lait"));
	done_release(&d);
	put("utf8.txt", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n");
	d = run("read_file", "{\"path\":\"utf8.txt\"}");
	expect_text(d.r.output, "     1\t\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n");
	done_release(&d);
}

static void test_read_file_of_a_directory_or_missing_file_is_an_error(void **state)
{
	assert_int_equal(mkdir(path_in(dir, "sub"), 0755), 0);
	struct done d = run("read_file", "{\"path\":\"sub\"}");
	expect_error(&d, "'sub' is a directory; list_dir");
	done_release(&d);
	d = run("read_file", "{\"path\":\"nope.txt\"}");
	expect_error(&d, "cannot open 'nope.txt': No such file or directory");
	done_release(&d);
	d = run("edit_file", "{\"path\":\"nope.txt\",\"old_string\":\"a\",\"new_string\":\"b\"}");
	expect_error(&d, "cannot open 'nope.txt'");
	done_release(&d);
	d = run("list_dir", "{\"path\":\"nope\"}");
	expect_error(&d, "cannot open directory 'nope'");
	done_release(&d);
	d = run("grep", "{\"pattern\":\"x\",\"path\":\"nope\"}");
	expect_error(&d, "cannot search 'nope'");
	done_release(&d);
}

/* Entries of dir other than . and .. (a leftover temporary file shows). */
static int entries(const char *path)
{
	DIR *d = opendir(path);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void test_write_file_of_2_mb_reads_back_whole(void **state)
{
	size_t n = 2u << 20;
	char *content = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		content[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
	content[n] = '\0';
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", "deep/er/big.txt");
	cJSON_AddStringToObject(o, "content", content);
	char *args = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	struct done d = run("write_file", args);
	assert_int_equal(d.r.status, TOOL_OK);
	char want[256];
	snprintf(want, sizeof want, "wrote %zu bytes to deep/er/big.txt (created; created the "
				    "directories %s/deep, %s/deep/er)\n", n, dir, dir);
	expect_text(d.r.output, want);
	done_release(&d);
	size_t got;
	uint8_t *back = slurp(path_in(dir, "deep/er/big.txt"), &got);
	assert_int_equal(got, n);
	assert_memory_equal(back, content, n);
	free(back);
	assert_int_equal(entries(path_in(dir, "deep/er")), 1);
	/* Written again: replaced. */
	d = run("write_file", args);
	snprintf(want, sizeof want, "wrote %zu bytes to deep/er/big.txt (replaced)\n", n);
	expect_text(d.r.output, want);
	done_release(&d);
	free(args);
	free(content);
}

static void test_write_file_keeps_the_mode_and_writes_through_a_symlink(void **state)
{
	const char *f = path_in(dir, "run.sh");
	put("run.sh", "old\n");
	assert_int_equal(chmod(f, 0751), 0);
	struct stat before, after;
	assert_int_equal(stat(f, &before), 0);
	struct done d = run("write_file", "{\"path\":\"run.sh\",\"content\":\"#!/bin/sh\\necho new\\n\"}");
	expect_text(d.r.output, "wrote 19 bytes to run.sh (replaced)\n");
	done_release(&d);
	assert_int_equal(stat(f, &after), 0);
	assert_int_equal(after.st_mode & 07777, 0751);
	assert_true(after.st_ino != before.st_ino); /* replaced by a rename, not rewritten */
	assert_int_equal(entries(dir), 1);          /* no temporary file left */

	/* Through a relative symlink: the target replaced, the link kept. */
	assert_int_equal(symlink("run.sh", path_in(dir, "link")), 0);
	d = run("write_file", "{\"path\":\"link\",\"content\":\"via link\\n\"}");
	assert_int_equal(d.r.status, TOOL_OK);
	assert_non_null(strstr(d.r.output, "through the symlink to"));
	done_release(&d);
	struct stat ls;
	assert_int_equal(lstat(path_in(dir, "link"), &ls), 0);
	assert_true(S_ISLNK(ls.st_mode));
	char t[64];
	ssize_t tn = readlink(path_in(dir, "link"), t, sizeof t);
	assert_int_equal(tn, 6);
	assert_memory_equal(t, "run.sh", 6);
	size_t n;
	uint8_t *back = slurp(f, &n);
	assert_int_equal(n, 9);
	assert_memory_equal(back, "via link\n", 9);
	free(back);
	assert_int_equal(stat(f, &after), 0);
	assert_int_equal(after.st_mode & 07777, 0751);
	assert_int_equal(entries(dir), 2);

	/* A dangling link: the target is created where it points. */
	assert_int_equal(symlink("made.txt", path_in(dir, "dangling")), 0);
	d = run("write_file", "{\"path\":\"dangling\",\"content\":\"x\"}");
	assert_non_null(strstr(d.r.output, "(created; through the symlink to"));
	done_release(&d);
	assert_true(exists(path_in(dir, "made.txt")));
	assert_int_equal(lstat(path_in(dir, "dangling"), &ls), 0);
	assert_true(S_ISLNK(ls.st_mode));

	/* A directory cannot be written over. */
	assert_int_equal(mkdir(path_in(dir, "d"), 0755), 0);
	d = run("write_file", "{\"path\":\"d\",\"content\":\"x\"}");
	expect_error(&d, "cannot write 'd': it is a directory");
	done_release(&d);
}

static void test_edit_file_with_no_match_or_several_leaves_the_file_unchanged(void **state)
{
	static const char text[] = "alpha\n    beta = 1\ngamma\ndelta\nbeta = 1\n";
	put("e.txt", text);
	struct done d = run("edit_file", "{\"path\":\"e.txt\",\"old_string\":\"beta = 1\","
					 "\"new_string\":\"beta = 2\"}");
	expect_error(&d, "old_string matches 2 times in 'e.txt' (at lines 2, 5)");
	done_release(&d);
	assert_same_file(path_in(dir, "e.txt"), (const uint8_t *)text, sizeof text - 1);
	d = run("edit_file", "{\"path\":\"e.txt\",\"old_string\":\"gamma ray\","
			     "\"new_string\":\"x\"}");
	expect_error(&d, "old_string not found in 'e.txt'");
	assert_non_null(strstr(d.r.output, "hint: the nearest line is 3: gamma"));
	done_release(&d);
	/* Line numbers copied from read_file are named as the reason. */
	d = run("edit_file", "{\"path\":\"e.txt\",\"old_string\":\"     4\\tdelta\","
			     "\"new_string\":\"x\"}");
	expect_error(&d, "hint: old_string starts with a line number");
	done_release(&d);
	/* Overlapping matches are several. */
	put("aaa.txt", "aaa\n");
	d = run("edit_file", "{\"path\":\"aaa.txt\",\"old_string\":\"aa\",\"new_string\":\"b\"}");
	expect_error(&d, "matches 2 times");
	done_release(&d);
	d = run("edit_file", "{\"path\":\"aaa.txt\",\"old_string\":\"aa\",\"new_string\":\"aa\"}");
	expect_error(&d, "old_string and new_string are the same");
	done_release(&d);
	assert_same_file(path_in(dir, "e.txt"), (const uint8_t *)text, sizeof text - 1);
	assert_same_file(path_in(dir, "aaa.txt"), (const uint8_t *)"aaa\n", 4);
	assert_int_equal(entries(dir), 2);
}

/* Edit f (holding text) and expect the file after and the diff. */
static void expect_edit(const char *text, const char *old, const char *nw, const char *after,
			const char *diff)
{
	put("f.txt", text);
	assert_int_equal(chmod(path_in(dir, "f.txt"), 0640), 0);
	char *a = args_of("path", "f.txt", "old_string", old, "new_string", nw, NULL);
	struct done d = run("edit_file", a);
	free(a);
	assert_int_equal(d.r.status, TOOL_OK);
	assert_non_null(d.r.extra);
	const cJSON *df = cJSON_GetObjectItem(d.r.extra, "diff");
	assert_true(cJSON_IsString(df));
	expect_text(df->valuestring, diff);
	assert_non_null(strstr(d.r.output, diff));
	assert_true(strncmp(d.r.output, "edited f.txt: replaced 1 occurrence at line ", 44) == 0);
	done_release(&d);
	assert_same_file(path_in(dir, "f.txt"), (const uint8_t *)after, strlen(after));
	struct stat st;
	assert_int_equal(stat(path_in(dir, "f.txt"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
}

static void test_edit_file_replaces_once_and_shows_a_unified_diff(void **state)
{
	expect_edit("line1\nline2\nline3\nline4\nline5\nline6\nline7\nline8\nline9\n", "line5\n",
		    "five\nfive-b\n",
		    "line1\nline2\nline3\nline4\nfive\nfive-b\nline6\nline7\nline8\nline9\n",
		    "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,8 @@\n line2\n line3\n line4\n-line5\n"
		    "+five\n+five-b\n line6\n line7\n line8\n");
	/* Inside a line, at the top: no context above. */
	expect_edit("int x = 1;\nint y = 2;\n", "x = 1", "x = 10", "int x = 10;\nint y = 2;\n",
		    "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n-int x = 1;\n+int x = 10;\n int y = 2;\n");
	/* A whole line deleted. */
	expect_edit("a\nb\nc\n", "b\n", "", "a\nc\n",
		    "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,2 @@\n a\n-b\n c\n");
	/* A line joined with the next one. */
	expect_edit("a\nb\nc\n", "a\n", "x", "xb\nc\n",
		    "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,2 @@\n-a\n-b\n+xb\n c\n");
	/* The last line has no newline. */
	expect_edit("a\nb", "b", "c", "a\nc",
		    "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of "
		    "file\n+c\n\\ No newline at end of file\n");
}

static void test_list_dir_sorts_and_marks_entries(void **state)
{
	put("b.txt", "hello");
	put(".hidden", "");
	assert_int_equal(mkdir(path_in(dir, "a"), 0755), 0);
	assert_int_equal(symlink("b.txt", path_in(dir, "c")), 0);
	assert_int_equal(symlink("a", path_in(dir, "d")), 0);
	struct buf big = BUF_INIT;
	buf_grow(&big, 20000);
	big.len = 20000;
	memset(big.p, 'z', big.len);
	spit(path_in(dir, "e.dat"), big.p, big.len, O_TRUNC);
	buf_release(&big);
	struct done d = run("list_dir", "{}");
	assert_int_equal(d.r.status, TOOL_OK);
	expect_text(d.r.output, ".: 6 entries\n.hidden  0 B\na/\nb.txt  5 B\nc -> b.txt\nd -> a/\n"
				"e.dat  19.5 KiB\n");
	done_release(&d);
	d = run("list_dir", "{\"path\":\"b.txt\"}");
	expect_error(&d, "'b.txt' is not a directory; read_file");
	done_release(&d);
	/* Bounded: the first 1,000 by name, then a note. */
	assert_int_equal(mkdir(path_in(dir, "many"), 0755), 0);
	for (int i = 0; i < 1005; i++)
		put(path_in("many", "f%04d", i), "");
	d = run("list_dir", "{\"path\":\"many\"}");
	assert_true(strncmp(d.r.output, "many: 1005 entries\nf0000  0 B\n", 30) == 0);
	assert_non_null(strstr(d.r.output, "f0999  0 B\n[... 5 more entries not shown"));
	assert_null(strstr(d.r.output, "f1000"));
	done_release(&d);
}

static void grep_tree(void)
{
	assert_int_equal(mkdir(path_in(dir, "src"), 0755), 0);
	assert_int_equal(mkdir(path_in(dir, "src/deep"), 0755), 0);
	assert_int_equal(mkdir(path_in(dir, ".git"), 0755), 0);
	put("src/a.c", "int main(void)\n{\n\treturn foo();\n}\n");
	put("src/b.h", "int foo(void);\n");
	put("src/deep/c.c", "/* fooo */\nbar\n");
	put(".git/config", "foo\n");
	spit(path_in(dir, "src/bin.o"), "foo\0\1\2", 6, O_TRUNC);
	put("notes.txt", "no match here\nFOO upper\n");
}

static void test_grep_finds_regex_matches_with_a_glob(void **state)
{
	grep_tree();
	struct done d = run("grep", "{\"pattern\":\"fo+\\\\(\"}");
	assert_int_equal(d.r.status, TOOL_OK);
	expect_text(d.r.output, "src/a.c:3:\treturn foo();\nsrc/b.h:1:int foo(void);\n"
				"[1 binary file skipped]\n");
	done_release(&d);
	d = run("grep", "{\"pattern\":\"fo{2,}\",\"path\":\"src\"}");
	expect_text(d.r.output, "src/a.c:3:\treturn foo();\nsrc/b.h:1:int foo(void);\n"
				"src/deep/c.c:1:/* fooo */\n[1 binary file skipped]\n");
	done_release(&d);
	d = run("grep", "{\"pattern\":\"foo\",\"glob\":\"*.c\"}");
	expect_text(d.r.output, "src/a.c:3:\treturn foo();\nsrc/deep/c.c:1:/* fooo */\n");
	done_release(&d);
	/* One file as the path. */
	d = run("grep", "{\"pattern\":\"^[A-Z]+ \",\"path\":\"notes.txt\"}");
	expect_text(d.r.output, "notes.txt:2:FOO upper\n");
	done_release(&d);
	d = run("grep", "{\"pattern\":\"nothing-like-this\"}");
	assert_int_equal(d.r.status, TOOL_OK);
	assert_non_null(strstr(d.r.output, "no matches for 'nothing-like-this' in '.' (5 files searched)"));
	done_release(&d);
}

static void test_grep_is_bounded_and_cuts_long_lines(void **state)
{
	struct buf b = BUF_INIT;
	for (int i = 1; i <= 50; i++)
		buf_printf(&b, "match %d\n", i);
	for (int i = 0; i < 1000; i++)
		buf_adds(&b, "long");
	buf_adds(&b, " match\n");
	spit(path_in(dir, "m.txt"), b.p, b.len, O_TRUNC);
	buf_release(&b);
	struct tool_limits lim = {.grep_max = 3};
	struct done d = run_lim("grep", "{\"pattern\":\"match\"}", &lim);
	expect_text(d.r.output, "m.txt:1:match 1\nm.txt:2:match 2\nm.txt:3:match 3\n[stopped at 3 "
				"matching lines; narrow the pattern, path or glob to see the rest]\n");
	done_release(&d);
	d = run("grep", "{\"pattern\":\"long\"}");
	assert_non_null(strstr(d.r.output, "m.txt:51:longlong"));
	assert_non_null(strstr(d.r.output, " [... 3606 more bytes of this line]\n"));
	assert_true(strlen(d.r.output) < 500);
	done_release(&d);
}

static void test_grep_with_an_invalid_regex_is_an_error(void **state)
{
	struct done d = run("grep", "{\"pattern\":\"a(b\"}");
	expect_error(&d, "invalid regular expression 'a(b': ");
	assert_non_null(strstr(d.r.output, "POSIX extended"));
	done_release(&d);
}

static void test_wrong_or_missing_arguments_name_the_parameter(void **state)
{
	put("x.txt", "x\n");
	static const struct {
		const char *name, *args, *want;
	} cases[] = {
		{"read_file", "{}", "missing parameter 'path' (a string)"},
		{"read_file", "{\"path\":5}", "parameter 'path' must be a string"},
		{"read_file", "{\"path\":\"\"}", "parameter 'path' is empty"},
		{"read_file", "{\"path\":\"x.txt\",\"start_line\":\"2\"}", "parameter 'start_line' must be a line number"},
		{"read_file", "{\"path\":\"x.txt\",\"end_line\":1.5}", "parameter 'end_line' must be a line number"},
		{"read_file", "{\"path\":\"x.txt\",\"start_line\":0}", "parameter 'start_line' must be a line number"},
		{"read_file", "[\"x.txt\"]", "the arguments must be a JSON object"},
		{"write_file", "{\"path\":\"y.txt\"}", "missing parameter 'content'"},
		{"write_file", "{\"path\":\"y.txt\",\"content\":[1]}", "parameter 'content' must be a string"},
		{"edit_file", "{\"path\":\"x.txt\",\"old_string\":\"x\"}", "missing parameter 'new_string'"},
		{"edit_file", "{\"path\":\"x.txt\",\"old_string\":\"\",\"new_string\":\"y\"}", "parameter 'old_string' is empty"},
		{"list_dir", "{\"path\":true}", "parameter 'path' must be a string"},
		{"grep", "{\"path\":\".\"}", "missing parameter 'pattern'"},
		{"grep", "{\"pattern\":\"x\",\"glob\":3}", "parameter 'glob' must be a string"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct done d = run(cases[i].name, cases[i].args);
		expect_error(&d, cases[i].want);
		done_release(&d);
	}
	assert_false(exists(path_in(dir, "y.txt")));
	/* An unknown name: NULL, usage, and the callback never runs. */
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	struct tool_ctx ctx = {.loop = &loop, .cwd = dir};
	struct done d = {0};
	struct cerr err;
	cJSON *a = cJSON_CreateObject();
	assert_null(tool_files_start(&ctx, "shell", a, on_done, &d, &err));
	assert_int_equal(err.cls, CERR_USAGE);
	cJSON_Delete(a);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(d.calls, 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Every libuv worker held until released, so a queued run stays queued. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int held, open_gate;

static void hold_work(uv_work_t *w)
{
	pthread_mutex_lock(&gate);
	held++;
	pthread_cond_broadcast(&gate_cv);
	while (!open_gate)
		pthread_cond_wait(&gate_cv, &gate);
	pthread_mutex_unlock(&gate);
}

static void hold_after(uv_work_t *w, int status)
{
}

static void test_cancel_before_the_work_runs_changes_nothing(void **state)
{
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	uv_work_t holds[4]; /* UV_THREADPOOL_SIZE: main sets 4 */
	held = open_gate = 0;
	for (int i = 0; i < 4; i++)
		assert_int_equal(uv_queue_work(&loop, &holds[i], hold_work, hold_after), 0);
	pthread_mutex_lock(&gate);
	while (held < 4)
		pthread_cond_wait(&gate_cv, &gate);
	pthread_mutex_unlock(&gate);
	struct tool_ctx ctx = {.loop = &loop, .cwd = dir};
	cJSON *a = cJSON_Parse("{\"path\":\"w.txt\",\"content\":\"never\"}");
	struct done d = {0};
	struct cerr err;
	struct tool_run *run = tool_files_start(&ctx, "write_file", a, on_done, &d, &err);
	cJSON_Delete(a);
	assert_non_null(run);
	run->cancel(run);
	pthread_mutex_lock(&gate);
	open_gate = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.r.status, TOOL_CANCELED);
	expect_text(d.r.output, "canceled by the user; not run: nothing was changed\n");
	done_release(&d);
	assert_false(exists(path_in(dir, "w.txt")));
	assert_int_equal(uv_loop_close(&loop), 0);
}

struct late {
	struct tool_run *run;
	const char *path;
	bool saw_write;
};

/* On the loop, before the run's completion can be handled: wait until the
 * worker's rename shows, then cancel. */
static void cancel_after_write(uv_timer_t *t)
{
	struct late *l = t->data;
	for (int i = 0; i < 5000 && !l->saw_write; i++) {
		if (exists(l->path))
			l->saw_write = true;
		else
			usleep(1000);
	}
	l->run->cancel(l->run);
	uv_close((uv_handle_t *)t, NULL);
}

static void test_cancel_after_the_write_keeps_it_and_says_so(void **state)
{
	uv_loop_t loop;
	assert_int_equal(uv_loop_init(&loop), 0);
	struct tool_ctx ctx = {.loop = &loop, .cwd = dir};
	cJSON *a = cJSON_Parse("{\"path\":\"w.txt\",\"content\":\"kept\\n\"}");
	struct done d = {0};
	struct cerr err;
	struct late l = {.path = path_in(dir, "w.txt")};
	l.run = tool_files_start(&ctx, "write_file", a, on_done, &d, &err);
	cJSON_Delete(a);
	assert_non_null(l.run);
	uv_timer_t t;
	assert_int_equal(uv_timer_init(&loop, &t), 0);
	t.data = &l;
	assert_int_equal(uv_timer_start(&t, cancel_after_write, 0, 0), 0);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_true(l.saw_write);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.r.status, TOOL_CANCELED);
	assert_non_null(strstr(d.r.output, "after the file was written; the write stays"));
	done_release(&d);
	assert_same_file(path_in(dir, "w.txt"), (const uint8_t *)"kept\n", 5);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	setenv("UV_THREADPOOL_SIZE", "4", 1);
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_read_file_numbers_lines_and_takes_a_range),
		T(test_read_file_stops_at_the_cap_and_says_how_to_read_on),
		T(test_read_file_refuses_binary_files),
		T(test_read_file_of_a_directory_or_missing_file_is_an_error),
		T(test_write_file_of_2_mb_reads_back_whole),
		T(test_write_file_keeps_the_mode_and_writes_through_a_symlink),
		T(test_edit_file_with_no_match_or_several_leaves_the_file_unchanged),
		T(test_edit_file_replaces_once_and_shows_a_unified_diff),
		T(test_list_dir_sorts_and_marks_entries),
		T(test_grep_finds_regex_matches_with_a_glob),
		T(test_grep_is_bounded_and_cuts_long_lines),
		T(test_grep_with_an_invalid_regex_is_an_error),
		T(test_wrong_or_missing_arguments_name_the_parameter),
		T(test_cancel_before_the_work_runs_changes_nothing),
		T(test_cancel_after_the_write_keeps_it_and_says_so),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
