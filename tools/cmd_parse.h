/*
 * tools/cmd_parse.h: the parse lock, for cmd_dispatch (cmd.c) alone, and
 * the look-up mapperctl's file opening shares (cmd.c, cmd_output.c).
 * Commands parse with cmd_next_option() and the others of cmd.h.
 */
#ifndef MAPPERFS_CMD_PARSE_H
#define MAPPERFS_CMD_PARSE_H

#include "cmd.h"

/* Takes the parse lock for @c's options; blocks while another command parses. */
void cmd_parse_begin(struct cmd_ctx *ctx, const struct cmd *c);
/* Lets it go, keeping getopt's optind in @ctx; a no-op if not parsing. */
void cmd_parse_end(struct cmd_ctx *ctx);

/*
 * mapperctl's side: the last value of long option @name in argv (a
 * command line after its name words), or NULL.  Uses getopt's globals:
 * not for the daemon's threads.
 */
const char *cmd_option_value(const struct cmd *c, int argc, char **argv, const char *name);

#endif
