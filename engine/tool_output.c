/* tool_output.c — capped, valid tool output (tool_output.h). */
#include "engine/tool_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "engine/textfix.h"

/* Back from i to the start of the character it is in. */
static size_t char_start(const char *s, size_t i)
{
	while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
		i--;
	return i;
}

char *tool_output_cap(const char *p, size_t n, size_t max, bool *truncated)
{
	char *v = textfix_string(p ? p : "", p ? n : 0);
	size_t len = strlen(v);
	if (truncated)
		*truncated = len > max;
	if (len <= max)
		return v;
	/* Two thirds of the room for the head, the rest for the tail: the
	 * start says what ran, the end how it ended. */
	size_t head = char_start(v, max * 2 / 3);
	size_t tail = char_start(v, len - (max - head));
	if (tail < head)
		tail = head;
	/* A tail that starts mid-line starts at the next line when that is near. */
	const char *nl = memchr(v + tail, '\n', len - tail < 200 ? len - tail : 200);
	if (nl && (size_t)(nl - v) + 1 < len)
		tail = (size_t)(nl - v) + 1;
	struct buf b = BUF_INIT;
	buf_add(&b, v, head);
	if (head > 0 && v[head - 1] != '\n')
		buf_addc(&b, '\n');
	buf_printf(&b, "[... %zu bytes cut ...]\n", tail - head);
	buf_add(&b, v + tail, len - tail);
	free(v);
	return buf_detach(&b, NULL);
}
