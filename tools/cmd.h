/*
 * tools/cmd.h: every admin operation, one implementation, two transports.
 *
 * mapperctl parses nothing itself beyond the global options: it finds the
 * command in the table and either runs it here, on the pool it opened
 * (offline), or sends the argument vector over the daemon's control socket
 * (wire.h), where the daemon runs the very same function with its own
 * store and a `live` hook that makes the served volumes follow the change.
 * So there is one parser, one validation and one SQL path per operation.
 *
 * A command writes its normal output to ctx->out and one-line errors to
 * ctx->err ("mapperctl: create linear: volume 'x' exists"), and returns an
 * exit status: 0 success, 1 failure, 2 usage error.  It changes nothing
 * when it fails: every change is one store transaction, and the live hook
 * runs only after it committed.
 */
#ifndef MAPPERFS_CMD_H
#define MAPPERFS_CMD_H

#include <stdint.h>
#include <stdio.h>

struct store;
struct json;
struct thin_pool_counts;

enum cmd_exit {
	CMD_OK = 0,
	CMD_FAIL = 1,
	CMD_USAGE = 2,
};

/*
 * What the daemon does for a command that changed the pool.  Absent
 * offline (ctx->live == NULL).  Each returns 0 or -errno.
 */
struct live_ops {
	/*
	 * Before a volume (or thin pool) is deleted: stop serving it.
	 * -EBUSY if a file on it is open; then nothing changed.  A thin
	 * volume's map is dropped and committed here, before its volume row
	 * goes.
	 */
	int (*volume_removing)(void *arg, int64_t id);
	/*
	 * After a commit that created, resized, retabled or deleted volume
	 * @id: make the served volume match the store (load, replace the
	 * table, or drop it; also undoes volume_removing after a rollback).
	 */
	int (*volume_changed)(void *arg, int64_t id);
	/*
	 * After the volume row of thin volume @id was committed: create its
	 * map in pool @pool, empty or sharing thin volume @origin's (a
	 * snapshot, quiescing the origin's writes), commit the pool and
	 * serve it.
	 */
	int (*thin_created)(void *arg, int64_t id, int64_t pool, int64_t origin);
	/* Gives thin volume @id the map of @snap and commits the pool. */
	int (*thin_rollback)(void *arg, int64_t id, int64_t snap);
	/* Commits thin pool @pool, so the store shows what it serves. */
	int (*pool_sync)(void *arg, int64_t pool);
	/*
	 * Commits thin pool @pool and copies its in-memory block counts as
	 * of that commit (thin_pool_commit_counts), for check.
	 */
	int (*pool_counts)(void *arg, int64_t pool, struct thin_pool_counts *out);
	/* After a device was registered or removed in the store. */
	int (*device_changed)(void *arg, int64_t id);
	/* Adds live fields (open count, I/O counters) to a status object. */
	void (*volume_status)(void *arg, int64_t id, struct json *j);
	/*
	 * Adds path @path's live I/O counters ("reads", "writes",
	 * "read_bytes", "write_bytes") to the object of that path of switch
	 * volume @id; nothing if the daemon does not serve it.
	 */
	void (*switch_path_status)(void *arg, int64_t id, unsigned int path,
				   struct json *j);
};

struct cmd_ctx {
	struct store *store;		/* NULL for `init` and --help */
	const char *pool_dir;
	const struct live_ops *live;	/* NULL offline */
	void *live_arg;
	FILE *out;
	FILE *err;
};

struct cmd {
	const char *name;		/* "list", "device add", "create linear" */
	const char *usage;		/* the --help text, after "usage: mapperctl " */
	int (*run)(struct cmd_ctx *ctx, int argc, char **argv);
	unsigned int needs_store : 1;	/* 0 only for init */
	/*
	 * The long option ("--file") whose value names a file the command
	 * reads, or NULL.  The daemon has its own working directory, so
	 * mapperctl makes that value absolute before sending the request.
	 */
	const char *file_option;
};

/*
 * Finds the command that argv names (one or two words).  Returns it and
 * sets *words to how many argv entries its name used, or NULL.
 */
const struct cmd *cmd_find(int argc, char **argv, int *words);

/* 1 if argv asks for help (-h or --help before any "--"). */
int cmd_help_requested(int argc, char **argv);

/* Lists every command's synopsis, one per line, for `mapperctl --help`. */
void cmd_print_commands(FILE *f);

/*
 * Runs a whole command line (without "mapperctl" and the global options)
 * against ctx: finds the command, answers --help, runs it.  Returns the
 * exit status.
 */
int cmd_dispatch(struct cmd_ctx *ctx, int argc, char **argv);

/* Prints "mapperctl: <what>: <message>" to ctx->err; returns CMD_FAIL. */
int cmd_error(struct cmd_ctx *ctx, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, returning CMD_USAGE. */
int cmd_usage_error(struct cmd_ctx *ctx, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
