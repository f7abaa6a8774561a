/* tool_output.h — what the model reads of a tool's output: valid UTF-8,
 * capped to its head and tail with a note of what was cut in between. */
#ifndef CAIRN_TOOL_OUTPUT_H
#define CAIRN_TOOL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

/* p[0..n) made valid UTF-8 (invalid bytes and NUL become U+FFFD), and when
 * it is longer than max bytes, its head and tail (each cut on a character
 * boundary, the tail starting on a line when one starts near) joined by a
 * line "[... N bytes cut ...]"; the result never exceeds max bytes plus
 * that note. *truncated (may be NULL) says whether anything was cut. The
 * caller frees the result. */
char *tool_output_cap(const char *p, size_t n, size_t max, bool *truncated);

#endif
