#include "cmd_report.h"

int cmd_report_parse(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
		     const struct option *options, struct report *rep)
{
	char why[REPORT_ERROR_LEN];
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, what, argc, argv, options, first)) != -1;
	     first = 0) {
		r = report_option(rep, c, optarg);
		if (r <= 0) {
			report_release(rep);
			return r ? cmd_error(ctx, what, "out of memory") : CMD_USAGE;
		}
	}
	r = cmd_args(ctx, what, argc, argv, 0, 0, "");
	if (!r && report_prepare(rep, why))
		r = cmd_error(ctx, what, "%s", why);
	if (r)
		report_release(rep);
	return r;
}
