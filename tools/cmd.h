/*
 * tools/cmd.h: the admin commands: parse a command line, call the pool
 * service (core/pool/pool.h), print what it says.
 *
 * The same command table serves both places a command runs.  mapperctl
 * runs it on the pool it opened itself when no daemon serves the pool,
 * and otherwise sends the command line over the daemon's control socket
 * (wire.h), where the daemon runs it on the pool it serves.  Either way
 * the command calls the same service function, so each operation has one
 * implementation; a command knows nothing of SQL, FUSE or the daemon.
 *
 * A command writes its normal output to ctx->out and one-line errors to
 * ctx->err ("mapperctl: create linear: volume 'x' exists"), and returns an
 * exit status: 0 success, 2 (CMD_USAGE) for a command line of the wrong
 * shape (an unknown option, a missing or unexpected argument, options
 * that exclude each other), 1 (CMD_FAIL) for anything else, a value that
 * is wrong included ("invalid size 'abc'", "unknown --format 'yaml'").  Below the commands
 * (opts.h, the service) functions return 0 or -errno and say why in a
 * struct pool_error; the commands print it.
 */
#ifndef MAPPERFS_CMD_H
#define MAPPERFS_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pool.h"

enum cmd_exit {
	CMD_OK = 0,
	CMD_FAIL = 1,
	CMD_USAGE = 2,
};

struct cmd_ctx {
	struct pool *pool;		/* NULL for init and --help */
	const char *pool_dir;
	pool_meta_open_fn *open_meta;	/* for init */
	const struct pool_host *host;	/* the daemon that runs it; NULL offline */
	/*
	 * The command's input file (struct cmd's input_option), opened by
	 * mapperctl and read from here, online or offline; -1 if not given.
	 */
	int input;
	/*
	 * The file the command writes (struct cmd's output_option), opened
	 * by mapperctl, online or offline; -1 if the command has none.
	 */
	int output;
	/*
	 * The daemon's client, whose going away ends a send or receive it
	 * runs (pool.h: pool_stream_caller); NULL offline.
	 */
	const struct pool_stream_caller *caller;
	FILE *out;
	FILE *err;
	/* Set by the parse (cmd_next_option): the first positional argument. */
	int optind;
	bool parsing;			/* holds the parse lock (cmd.c) */
};

struct cmd {
	const char *name;		/* "list", "device add", "create linear" */
	const char *usage;		/* the --help text, after "usage: mapperctl " */
	int (*run)(struct cmd_ctx *ctx, int argc, char **argv);
	const struct option *options;	/* long options; NULL: none */
	/*
	 * Short options, getopt's way (":o:"): each the val of a long
	 * option, which it is another name for.  NULL: none.
	 */
	const char *short_options;
	unsigned int needs_pool : 1;	/* 0 only for init */
	/*
	 * Changes nothing (a report): a daemon that is stopping still runs
	 * it.
	 */
	unsigned int reads_only : 1;
	/*
	 * Which arguments are paths, made absolute by mapperctl before the
	 * command line leaves it (the daemon resolves nothing against its own
	 * working directory): the long options of @path_options; those of
	 * @path_or_name_options, whose value names a volume if it has no '/'
	 * and no file of that name is in the working directory; and the
	 * positional argument @path_positional (1 = the first; 0 = none).
	 */
	const char *const *path_options;
	const char *const *path_or_name_options;
	unsigned int path_positional;
	/*
	 * The long option ("file") whose value is a file the command reads:
	 * mapperctl opens it ("-": its standard input) and hands it over
	 * (ctx->input), so a pipe or a FIFO works as well as a file, and the
	 * daemon never waits on a writer.  NULL: none.
	 */
	const char *input_option;
	/*
	 * The long option ("output") whose value is a file the command
	 * writes, standard output if it is "-" or not given: mapperctl opens
	 * it with its caller's rights and hands it over (ctx->output), so the
	 * daemon, which may run as root, creates no file for anyone.  A
	 * command has an input_option or an output_option, not both (a
	 * request carries one file).  NULL: none.
	 */
	const char *output_option;
	/*
	 * The file of input_option or output_option is a stream of any size
	 * (send, receive): a pipe, a FIFO or a terminal is handed over as it
	 * is, not through a memory file, and the command reads or writes it
	 * at the pace of the other end, in the daemon too.  A regular file
	 * is handled as for any command (an output through a temporary).
	 */
	unsigned int streams : 1;
};

/* Bytes of a command's input at most (a switch table of 2^28 regions fits). */
#define CMD_INPUT_MAX	(1ull << 30)

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
 * exit status.  Threads may run commands at once: only their parses take
 * turns (cmd_next_option).
 */
int cmd_dispatch(struct cmd_ctx *ctx, int argc, char **argv);

/*
 * @path made absolute against the working directory, malloc'ed; NULL with
 * @err set if it cannot be.
 */
char *cmd_absolute(const char *path, struct pool_error *err);

/*
 * mapperctl's side: makes the path arguments of command @c (argv after its
 * name words) absolute, in place.  New strings are left for exit to free.
 * 0, or -errno with @err set.
 */
int cmd_absolute_paths(const struct cmd *c, int argc, char **argv,
		       struct pool_error *err);

/*
 * mapperctl's side: opens the value of command @c's input_option in argv
 * (after its name words) for reading, "-" as standard input, and puts it
 * in *input (-1 if the option is not given).  What is not a regular file
 * (a pipe, a FIFO, a terminal, a character device) is read to its end
 * here, at most CMD_INPUT_MAX bytes, into a memory file: the daemon then
 * reads a file that is whole; unless @c streams, which gets it as it is,
 * and its standard input if the option is not given.  0, or -errno with
 * @err set ("cannot read 'F': ...", "'F' holds more than 1 GiB").
 */
int cmd_open_input(const struct cmd *c, int argc, char **argv, int *input,
		   struct pool_error *err);
/*
 * The file mapperctl opened for the command (@fd: ctx->input or
 * ctx->output), as a stdio stream of the command's own, @mode "r" or "w";
 * NULL after one line naming it @name ("cannot read 'F': mapperctl did
 * not open it").  The command closes the stream; @fd stays open.
 */
FILE *cmd_stream(struct cmd_ctx *ctx, const char *what, int fd, const char *mode,
		 const char *name);

/*
 * Where a command's output goes, as mapperctl opened it (cmd_open_output,
 * tools/cmd_output.c).  A regular file F is never written in place: the
 * command writes a new temporary beside it, renamed onto F once the
 * command succeeded (git's lockfile, sort -o), so a command that fails
 * leaves F as it was.  Anything else (a pipe, a terminal, a FIFO, a
 * character device) gets a memory file, copied there once the command
 * succeeded, so that the daemon never waits on a slow reader.
 */
struct cmd_output {
	int fd;				/* what the command writes; -1: none */
	int dest;			/* where a memory file goes after; -1: fd is it */
	const char *path;		/* the file named, or NULL for standard output */
	char *tmp;			/* the temporary renamed onto path; NULL: none */
};
#define CMD_OUTPUT_INIT { .fd = -1, .dest = -1 }

/*
 * mapperctl's side: opens the value of command @c's output_option in argv
 * (after its name words) for writing: standard output for "-" or none,
 * the caller's own descriptor for /dev/stdout, /dev/stderr, /dev/fd/N and
 * /proc/self/fd/N, otherwise the path, through no link.  For a regular
 * file, or none yet, a new temporary in its directory (0600, or the
 * file's mode).  Refused before anything is written: a file of the pool
 * in @pool_dir (pool.db and its -wal/-shm, mapperfs.log, mapperfs.pid,
 * lock), a file that carries a mapperfs device label (any pool's raw
 * device), a file or directory of a mapperfs mount (a volume), a
 * directory, a symbolic link.  *out stays CMD_OUTPUT_INIT if @c has no
 * output_option.  0, or -errno with @err set, one line naming the file
 * ("refusing to write 'F': it is the pool's own file").
 */
int cmd_open_output(const struct cmd *c, const char *pool_dir, int argc, char **argv,
		    struct cmd_output *out, struct pool_error *err);

/*
 * mapperctl's side, once the command ended with exit status @status: if
 * it succeeded, syncs a temporary and renames it onto its file, or copies
 * a memory file to where it goes; if it failed, removes the temporary,
 * leaving the file named as it was.  Closes what cmd_open_output opened.
 * 0, or -errno with @err set ("cannot write 'F': ...").
 */
int cmd_close_output(struct cmd_output *o, int status, struct pool_error *err);

/* Prints "mapperctl: <what>: <message>" to ctx->err; returns CMD_FAIL. */
int cmd_error(struct cmd_ctx *ctx, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, returning CMD_USAGE. */
int cmd_usage_error(struct cmd_ctx *ctx, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * A command's --pool names a thin pool; one that holds a '/' is the
 * global --pool DIR put after the command: says so, CMD_USAGE.  Else 0.
 */
int cmd_thin_pool_option(struct cmd_ctx *ctx, const char *what, const char *arg);
/* Prints @err's message; returns CMD_FAIL. */
int cmd_fail(struct cmd_ctx *ctx, const char *what, const struct pool_error *err);
/*
 * Prints "mapperctl: <what>: <message>" to ctx->err for a command that
 * succeeds all the same: what a person should know of its result.
 */
void cmd_note(struct cmd_ctx *ctx, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Parsing, for the commands: cmd_next_option() returns the next option's
 * val (its value in optarg), -1 when the options are done
 * (argv[ctx->optind..argc) are the positional arguments), or
 * CMD_OPTION_ERROR after printing "unknown option" or "option needs a
 * value".  It starts a fresh parse with @first.  getopt keeps its state
 * in globals, so parses take turns: from the start of a command to the
 * -1 or the error, a command holds the parse lock, and reads optarg only
 * then; after it, ctx->optind, never getopt's optind.
 */
#define CMD_OPTION_ERROR	(-2)
int cmd_next_option(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
		    const struct option *options, int first);
/* Checks that min..max positional arguments are left; @missing names one. */
int cmd_args(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
	     int min, int max, const char *missing);
/*
 * Parses a command whose only option is --json: sets *as_json, and checks
 * min..max positional arguments.  0, or CMD_USAGE after a message.
 */
int cmd_json_args(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
		  int *as_json, int min, int max, const char *missing);

struct json;
/* The counts of a send or receive as fields of the object @j is in (cmd_send.c). */
void cmd_json_streamed(struct json *j, const struct pool_streamed *s);

#endif
