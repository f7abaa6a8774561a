/* support_tline.h — the renderer tests' check of a display line: no wider
 * than the width, its cells the sum of its spans', each span measured as
 * wrap measures, and nothing a terminal acts on (valid UTF-8, no C0, DEL,
 * C1 or bidi override).
 *
 * Include it after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_TLINE_H
#define CAIRN_SUPPORT_TLINE_H

#include <stddef.h>

#include "tui/textlines.h"

/* Fails the test (naming line i) unless l holds up at width. */
void support_check_tline(const struct tline *l, int width, size_t i);

#endif
