/* support_fake.h — the fake model server (tests/fake/fake_model.py) as a
 * child process of a test: started with a script, on 127.0.0.1 and an
 * ephemeral port, recording every request it received. The helpers that
 * check fail the running cmocka test. Include after <cmocka.h>. */
#ifndef CAIRN_SUPPORT_FAKE_H
#define CAIRN_SUPPORT_FAKE_H

#include <sys/types.h>

#include <cjson/cJSON.h>

struct fake {
	pid_t pid;
	int port;
	char dir[64];     /* its scratch directory (script, record) */
	char record[128]; /* the request record, one JSON line each */
};

/* tests/fake/fake_model.py, found from the test binary (<root>/<build>/tests/);
 * static storage. */
const char *fake_script_path(void);
/* Start the server with script (JSON text) and extra arguments (NULL-ended). */
void fake_start(struct fake *f, const char *script, const char *const *extra);
/* Stop it (SIGTERM, reaped) and remove its directory. */
void fake_stop(struct fake *f);
/* The requests it recorded, as a JSON array the caller frees. */
cJSON *fake_requests(const struct fake *f);
/* "http://127.0.0.1:<port><path>"; the caller frees it. */
char *fake_url(const struct fake *f, const char *path);

#endif
