/* prompt_report.c — the turns of a headless run and its exit code
 * (prompt_report.h). */
#include "app/prompt_report.h"
#include "persist/vocab.h"

#include <string.h>

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

void prompt_report_init(struct prompt_report *r)
{
	memset(r, 0, sizeof *r);
	r->turns = cJSON_CreateArray();
	buf_init(&r->text);
}

void prompt_report_release(struct prompt_report *r)
{
	cJSON_Delete(r->turns);
	buf_release(&r->text);
}

int prompt_report_exit_of(const cJSON *done, bool settled_ok)
{
	const char *outcome = str_of(done, "outcome");
	const char *cls = str_of(cJSON_GetObjectItem(done, "error"), "class");
	if (!outcome)
		return EXIT_UNCERTAIN;
	if (strcmp(outcome, "not_started") == 0) {
		/* The store's class says why it did not start (io, locked, ...). */
		enum cerr_class c;
		return cerr_class_of(cls, &c) && c != CERR_OK ? cerr_exit_code(c) : CERR_IO;
	}
	if (!settled_ok)
		return EXIT_UNCERTAIN;
	switch (vocab_outcome_of(outcome)) {
	case VO_COMPLETED: return 0;
	case VO_CANCELED: return EXIT_CANCELED;
	case VO_FAILED:
	case VO_INTERRUPTED:
	case VO_UNKNOWN:
		break;
	}
	switch (vocab_error_of(cls)) {
	case VE_PROVIDER: return EXIT_PROVIDER;
	case VE_DELIVERY_UNKNOWN: return EXIT_DELIVERY;
	case VE_STEP_LIMIT: return EXIT_STEP_LIMIT;
	case VE_CAPTURE_FAILED:
	case VE_INTERRUPTED:
	case VE_OTHER:
		break;
	}
	return EXIT_UNCERTAIN;
}

bool prompt_report_done(struct prompt_report *r, const cJSON *done, int64_t now_ms)
{
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "turn", str_of(done, "turn") ? str_of(done, "turn") : "");
	const char *outcome = str_of(done, "outcome") ? str_of(done, "outcome") : "failed";
	cJSON_AddStringToObject(t, "outcome", outcome);
	cJSON_AddStringToObject(t, "text", r->text.p ? r->text.p : "");
	const cJSON *u = cJSON_GetObjectItem(done, "usage");
	cJSON_AddItemToObject(t, "usage", u ? cJSON_Duplicate(u, 1) : cJSON_CreateNull());
	const cJSON *e = cJSON_GetObjectItem(done, "error");
	if (e)
		cJSON_AddItemToObject(t, "error", cJSON_Duplicate(e, 1));
	cJSON_AddNumberToObject(t, "duration_ms", (double)(now_ms - r->turn_started));
	/* kept until settled: its exit code needs the save's outcome */
	cJSON_AddItemToObject(t, "done", cJSON_Duplicate(done, 1));
	cJSON_AddItemToArray(r->turns, t);
	buf_reset(&r->text);
	r->turn_started = now_ms;
	return vocab_outcome_of(outcome) == VO_COMPLETED;
}

bool prompt_report_settled(struct prompt_report *r, bool ok, const char *message)
{
	cJSON *t = cJSON_GetArrayItem(r->turns, cJSON_GetArraySize(r->turns) - 1);
	if (!t)
		return ok;
	cJSON *done = cJSON_DetachItemFromObject(t, "done");
	const char *outcome = str_of(done, "outcome");
	bool started = outcome && strcmp(outcome, "not_started") != 0;
	if (!ok && started) {
		cJSON_AddStringToObject(t, "saved", "uncertain");
		if (message)
			cJSON_AddStringToObject(t, "save_error", message);
	}
	int code = prompt_report_exit_of(done, ok || !started);
	if (r->exit_code == 0)
		r->exit_code = code;
	r->settled++;
	cJSON_Delete(done);
	return ok;
}

void prompt_report_fail(struct prompt_report *r, const struct cerr *err)
{
	if (r->exit_code == 0)
		r->exit_code = cerr_exit_code(err->cls);
}

cJSON *prompt_report_result(const struct prompt_report *r, const char *session)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "result");
	cJSON_AddStringToObject(o, "session", session);
	cJSON *turns = cJSON_Duplicate(r->turns, 1);
	for (cJSON *t = turns->child; t; t = t->next)
		cJSON_DeleteItemFromObject(t, "done");
	cJSON_AddItemToObject(o, "turns", turns);
	for (const cJSON *t = r->turns->child; t; t = t->next)
		if (cJSON_GetObjectItem(t, "saved")) {
			cJSON_AddStringToObject(o, "saved", "uncertain");
			break;
		}
	cJSON_AddNumberToObject(o, "exit", r->exit_code);
	return o;
}
