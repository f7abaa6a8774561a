/* fifo_spill.c — content too big for an event goes to a blob before the
 * event is appended (blob.h): a pasted file in a user/message, a queued
 * prompt, a tool's output or arguments, a system prompt in
 * session/settings. The writer
 * does it for every producer, under the session's lock, so no producer has
 * to, and a huge paste is saved instead of being refused for the log's
 * line limit. */
#include "persist/fifo_int.h"

#include <stdlib.h>
#include <string.h>

#include "persist/blob.h"
#include "persist/vocab.h"

/* The text field of an event type that may hold long content, or NULL. */
static const char *long_field(const char *type, const cJSON *data)
{
	switch (vocab_type_of(type)) {
	case VT_USER_MESSAGE:
	case VT_INPUT_QUEUED:
		return "text";
	case VT_TOOL_RESULT:
		return "output";
	case VT_SESSION_SETTINGS:
		return "system_prompt"; /* AGENTS.md files add up */
	case VT_TOOL_CALL:
		/* a write_file of a large file; arguments the log could not
		 * keep as JSON are their text as sent, args_raw */
		return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(data, "args_raw")) ? "args_raw"
											 : "args";
	default:
		return NULL;
	}
}

int fifo_spill_batch(struct log *lg, cJSON *events, struct cerr *err)
{
	int dirfd = -1;
	for (cJSON *ev = events ? events->child : NULL; ev; ev = ev->next) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
		cJSON *data = cJSON_GetObjectItemCaseSensitive(ev, "data");
		const char *field = cJSON_IsString(type) ? long_field(type->valuestring, data) : NULL;
		if (!field || !cJSON_IsObject(data) || cJSON_GetObjectItemCaseSensitive(data, "blob"))
			continue; /* a producer that wrote its blob itself is left alone */
		cJSON *text = cJSON_GetObjectItemCaseSensitive(data, field);
		/* Arguments are an object: their JSON text is what goes. */
		char *printed = text && !cJSON_IsString(text) ? cJSON_PrintUnformatted(text) : NULL;
		const char *s = printed ? printed : cJSON_IsString(text) ? text->valuestring : NULL;
		if (!s || strlen(s) <= BLOB_INLINE_MAX) {
			free(printed);
			continue;
		}
		if (dirfd < 0 && (dirfd = log_dir(lg, err)) < 0) {
			free(printed);
			return -1;
		}
		struct blob_ref ref;
		char *keep = NULL;
		int r = blob_spill(dirfd, s, strlen(s), &ref, &keep, err);
		free(printed);
		if (r < 0)
			return -1;
		if (r == 1) {
			cJSON_ReplaceItemInObjectCaseSensitive(data, field, cJSON_CreateString(keep));
			blob_ref_to_data(data, &ref);
			free(keep);
		}
	}
	return 0;
}
