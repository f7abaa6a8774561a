/* cmds.h — the subcommands' entry points (one file each in app/). */
#ifndef CAIRN_CMDS_H
#define CAIRN_CMDS_H

#include <cjson/cJSON.h>

#include "app/cli.h"
#include "persist/catalog.h"
#include "persist/log.h"

int cmd_log(struct cli *c, int argc, char **argv);
int cmd_import(struct cli *c, int argc, char **argv);
int cmd_inspect(struct cli *c, int argc, char **argv);
int cmd_repair(struct cli *c, int argc, char **argv);
int cmd_sessions(struct cli *c, int argc, char **argv);
int cmd_search(struct cli *c, int argc, char **argv);
int cmd_rename(struct cli *c, int argc, char **argv);
int cmd_pin(struct cli *c, int argc, char **argv);
int cmd_unpin(struct cli *c, int argc, char **argv);
int cmd_rm(struct cli *c, int argc, char **argv);
int cmd_restore(struct cli *c, int argc, char **argv);
int cmd_purge(struct cli *c, int argc, char **argv);
int cmd_doctor(struct cli *c, int argc, char **argv);
int cmd_config(struct cli *c, int argc, char **argv);
int cmd_export(struct cli *c, int argc, char **argv);

struct catalog;
struct cat_session;
/* Open the store and its catalog, reconciled with the directories. When
 * it cannot be (nothing can be written: a full disk, a read-only root),
 * the catalog as it is, read only, with a warning on stderr: sessions
 * written or removed since its last update are missing or still shown. */
int cli_open_catalog(struct cli *c, bool create, struct store **st, struct catalog **cat,
		     struct cerr *err);
/* The durable watermark the catalog holds for id (o->known false when
 * none or no catalog). Never fails: a catalog that exists but cannot be
 * read is a warning on stderr. */
void cli_watermark(struct store *st, const char *id, struct cat_watermark *o);
struct log;
/* Healing: lg (open, so its writer lock held) was read whole and every
 * frame is complete and valid, past a watermark that lags or is missing:
 * fdatasync it and return true, so that cli_note_durable raises the
 * watermark to all of it. False for anything else (sid NULL: a log outside
 * the root, which has no catalog). */
bool cli_heal(struct log *lg, const char *sid);
/* After a durable write: reconcile the catalog and record the watermark.
 * A failure is the catalog-behind warning (cli_warn_behind), never an
 * error: the log is the truth, the catalog lags. True when behind. */
bool cli_note_durable(struct store *st, const char *id, struct log_mark dur);
struct log_event;
/* The same after a durable append of evs[0..n) at seqs first_seq.. (t of
 * events without one: batch_t): projected onto the session's row without
 * reading the log again when the row is at first_seq, else as
 * cli_note_durable. */
bool cli_note_append(struct store *st, const char *id, uint64_t first_seq, int64_t batch_t,
		     const struct log_event *evs, size_t n, struct log_mark dur);
/* Open the store and its catalog without the reconciliation (the catalog
 * as writes left it), read only when it cannot be opened for writing. */
int cli_open_catalog_nosync(struct cli *c, struct store **st, struct catalog **cat,
			    struct cerr *err);
/* A positive integer option value. */
int cli_parse_limit(const char *s, size_t *out);
/* Append the --json object of a listed session to b. */
struct buf;
void session_json(struct buf *b, const struct cat_session *s);
/* Append the `sessions --json` array of a listing (catalog_list_each's
 * arguments) to b, streamed from the query without copies. */
int sessions_json(struct catalog *cat, bool all, bool trash, const char *project, size_t limit,
		  struct buf *b, struct cerr *err);

/* The `inspect --json` object of a scan; path may be NULL. Caller frees. */
cJSON *inspect_json(const struct scan *s, const char *path);

/* cairn with no command, on a terminal: the chat screen (cmd_chat.c);
 * argv holds only its options. */
int cmd_chat(struct cli *c, int argc, char **argv);
/* cairn -p: one turn headless (cmd_prompt.c); argv is main's, whole. */
int cmd_prompt(struct cli *c, int argc, char **argv);

#endif
