/*
 * tools/cmd_report.h: the part of a listing command (list, device list)
 * that is the same for every report: its options and arguments.
 */
#ifndef MAPPERFS_CMD_REPORT_H
#define MAPPERFS_CMD_REPORT_H

#include "cmd.h"
#include "report.h"

/*
 * Parses @argv's report options (@options, which report_option() takes)
 * into @rep, begun with report_init(), checks that no positional argument
 * is left and prepares the report.  CMD_OK, or an exit status after a
 * message, with @rep released.
 */
int cmd_report_parse(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
		     const struct option *options, struct report *rep);

#endif
