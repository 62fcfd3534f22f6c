/*
 * tools/cmd_parse.h: the parse lock, for cmd_dispatch (cmd.c) alone.
 * Commands parse with cmd_next_option() and the others of cmd.h.
 */
#ifndef MAPPERFS_CMD_PARSE_H
#define MAPPERFS_CMD_PARSE_H

#include "cmd.h"

/* Takes the parse lock for @c's options; blocks while another command parses. */
void cmd_parse_begin(struct cmd_ctx *ctx, const struct cmd *c);
/* Lets it go, keeping getopt's optind in @ctx; a no-op if not parsing. */
void cmd_parse_end(struct cmd_ctx *ctx);

#endif
