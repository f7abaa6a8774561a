/* pathkey.h — names under the data root: session ids and project keys.
 *
 * Neither can escape the root: ids are [A-Za-z0-9_-]{1,64} not starting
 * with '-', and a project key is an escaped, bounded encoding of an absolute
 * cwd that never contains '/', is never "." or "..", and is at most
 * PATHKEY_MAX bytes. The key is chosen once, when a session is created. */
#ifndef CAIRN_PATHKEY_H
#define CAIRN_PATHKEY_H

#include <stdbool.h>

#define SESSION_ID_MAX 64
#define PATHKEY_MAX 160
#define PATHKEY_NO_CWD "_no-cwd"

/* True when id is an acceptable session id. */
bool pathkey_valid_id(const char *id);
/* The project key of cwd (NULL -> "_no-cwd"); caller frees. */
char *pathkey_project(const char *cwd);
/* True when name could be a project key directory (no '/', not . or ..). */
bool pathkey_valid_key(const char *name);

#endif
