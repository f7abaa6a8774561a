/* fifo_draft.c — the writer's side of FIFO_DRAFT items: consecutive drafts
 * of one project become one write of the newest text (draft.c does it). */
#include "persist/draft.h"
#include "persist/fifo_int.h"
#include "persist/pathkey.h"

#include <stdlib.h>
#include <string.h>

struct fifo_item *fifo_draft_run(struct fifo *f, struct fifo_item *it)
{
	char *key = pathkey_project(it->cwd);
	struct fifo_item *last = it;
	while (last->next && last->next->kind == FIFO_DRAFT) {
		char *k = pathkey_project(last->next->cwd);
		bool same = strcmp(k, key) == 0;
		free(k);
		if (!same)
			break;
		last = last->next;
	}
	free(key);
	struct cerr err = {0};
	if (draft_save(f->st, last->cwd, last->text, &err) < 0)
		fifo_fail_items(it, last, &err);
	return last;
}
