/* libs_floor.c — the memory floor of bench_turn: a program linked with the
 * same libraries as cairn that initialises the ones a headless turn uses
 * (libcurl's globals and a multi handle, a libuv loop, SQLite with an
 * in-memory database, zstd contexts, a cJSON parse, a SHA-256 through
 * libcrypto, a utf8proc lookup) and exits. Its peak
 * RSS is what any program built on them pays before doing anything.
 *
 * With --tty it also does what the chat screen does first with ncursesw:
 * the locale from the environment, newterm() on a new pseudo-terminal
 * ($TERM, else xterm-256color), raw mode, keypad, a window the size of the
 * screen with a line written to it, a refresh, endwin() — the floor of
 * bench_tui. */
#include <curses.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <utf8proc.h>
#include <uv.h>
#include <zstd.h>

/* ncursesw initialised on a pseudo-terminal of our own, its output
 * drained at the end (a screen's worth fits in the pty's buffer). */
static int init_curses(void)
{
	setlocale(LC_ALL, "");
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		return 1;
	FILE *f = fopen(ptsname(m), "r+");
	const char *term = getenv("TERM");
	SCREEN *sc = f ? newterm(term && *term ? term : "xterm-256color", f, f) : NULL;
	if (!sc)
		return 1;
	raw();
	noecho();
	keypad(stdscr, TRUE);
	WINDOW *w = newwin(LINES, COLS, 0, 0);
	mvwaddstr(w, LINES - 1, 0, " idle | floor");
	wnoutrefresh(w);
	doupdate();
	endwin();
	delwin(w);
	delscreen(sc);
	fclose(f);
	close(m);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--tty") == 0 && init_curses() != 0)
		return 1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	CURLM *m = curl_multi_init();
	CURL *e = curl_easy_init();
	uv_loop_t loop;
	if (!m || !e || uv_loop_init(&loop) != 0 || sqlite3_initialize() != SQLITE_OK)
		return 1;
	sqlite3 *db;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", NULL, NULL, NULL) != SQLITE_OK)
		return 1;
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	char src[] = "{\"type\":\"turn/start\",\"turn\":\"t1\",\"data\":{}}", dst[256], back[256];
	size_t z = ZSTD_compressCCtx(cc, dst, sizeof dst, src, sizeof src, 3);
	if (ZSTD_isError(z) || ZSTD_isError(ZSTD_decompressDCtx(dc, back, sizeof back, dst, z)))
		return 1;
	cJSON *j = cJSON_Parse(back);
	if (!j)
		return 1;
	cJSON_Delete(j);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdn;
	if (!EVP_Digest(src, sizeof src, md, &mdn, EVP_sha256(), NULL) ||
	    utf8proc_tolower(0x00C9) != 0x00E9)
		return 1;
	ZSTD_freeDCtx(dc);
	ZSTD_freeCCtx(cc);
	sqlite3_close(db);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
	curl_easy_cleanup(e);
	curl_multi_cleanup(m);
	curl_global_cleanup();
	return 0;
}
