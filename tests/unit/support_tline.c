/* support_tline.c — see support_tline.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "base/utf8.h"
#include "tests/unit/support_tline.h"
#include "tui/wrap.h"

void support_check_tline(const struct tline *l, int width, size_t i)
{
	int sum = 0;
	for (size_t k = 0; k < l->n; k++) {
		const char *s = l->text + l->spans[k].off;
		size_t len = l->spans[k].len;
		assert_true(utf8_valid(s, len, NULL));
		for (size_t j = 0; j < len; j++) {
			unsigned char c = (unsigned char)s[j];
			assert_false(c < 0x20 || c == 0x7f);
			if (c == 0xc2 && j + 1 < len) /* no C1 as UTF-8 */
				assert_false((unsigned char)s[j + 1] >= 0x80 && (unsigned char)s[j + 1] <= 0x9f);
		}
		assert_null(memmem(s, len, "\xe2\x80\xae", 3)); /* U+202E */
		assert_int_equal(wrap_cells(s, len), l->spans[k].cells);
		sum += (int)l->spans[k].cells;
	}
	assert_int_equal(sum, l->cells);
	if (l->cells > width)
		fail_msg("line %zu is %d cells, width %d", i, l->cells, width);
}
