/* cmds.h — the subcommands' entry points (one file each in app/). */
#ifndef CAIRN_CMDS_H
#define CAIRN_CMDS_H

#include <cjson/cJSON.h>

#include "app/cli.h"

int cmd_log(struct cli *c, int argc, char **argv);
int cmd_inspect(struct cli *c, int argc, char **argv);
int cmd_repair(struct cli *c, int argc, char **argv);

/* The `inspect --json` object of a scan; path may be NULL. Caller frees. */
cJSON *inspect_json(const struct scan *s, const char *path);

#endif
