/*
 * change: sets a thin pool's policies online, as lvchange does
 * (pool_change_thin_pool): discard passdown, autoextend, the metadata
 * limit, the event command.
 */
#include <errno.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "size.h"

#define WHAT "change"

static const struct option options[] = {
	{ "discard-passdown", required_argument, NULL, 'D' },
	{ "autoextend-threshold", required_argument, NULL, 'T' },
	{ "autoextend-percent", required_argument, NULL, 'P' },
	{ "metadata-limit", required_argument, NULL, 'M' },
	{ "on-event", required_argument, NULL, 'E' },
	{ 0 }
};

/* One option's value into @p; sets its bit in *fields. */
static int parse_value(int c, const char *arg, struct thin_pool_rec *p, unsigned int *fields,
		       struct pool_error *err)
{
	switch (c) {
	case 'D':
		*fields |= POOL_TP_DISCARD_PASSDOWN;
		if (!strcmp(arg, "on") || !strcmp(arg, "off")) {
			p->discard_passdown = !strcmp(arg, "on");
			return 0;
		}
		return pool_fail(err, -EINVAL, "--discard-passdown takes on or off, not '%s'", arg);
	case 'T':
		*fields |= POOL_TP_AUTOEXTEND_THRESHOLD;
		return opts_percent(arg, "autoextend threshold", POOL_AUTOEXTEND_THRESHOLD_MIN,
				    &p->autoextend_threshold, err);
	case 'P':
		*fields |= POOL_TP_AUTOEXTEND_PERCENT;
		return opts_number(arg, "autoextend percent", 0, POOL_AUTOEXTEND_PERCENT_MAX,
				   &p->autoextend_percent, err);
	case 'M':
		*fields |= POOL_TP_METADATA_LIMIT;
		return opts_size(arg, &p->metadata_limit, err);
	default:
		*fields |= POOL_TP_ON_EVENT;
		if (strlen(arg) >= sizeof(p->on_event))
			return pool_fail(err, -EINVAL, "--on-event needs a command shorter than %zu bytes",
					 sizeof(p->on_event));
		snprintf(p->on_event, sizeof(p->on_event), "%s", arg);
		return 0;
	}
}

static int change_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct thin_pool_rec policy = { 0 }, now;
	char limit[SIZE_STR_LEN];
	unsigned int fields = 0;
	struct pool_error err;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == CMD_OPTION_ERROR || !strchr("DTPME", c))
			return CMD_USAGE;
		if (parse_value(c, optarg, &policy, &fields, &err))
			return cmd_error(ctx, WHAT, "%s", err.msg);
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the thin POOL");
	if (r)
		return r;
	if (!fields)
		return cmd_usage_error(ctx, WHAT, "nothing to change (see 'mapperctl %s --help')", WHAT);
	if (pool_change_thin_pool(ctx->pool, argv[ctx->optind], &policy, fields, &now, &err))
		return cmd_fail(ctx, WHAT, &err);
	fprintf(ctx->out, "thin pool '%s': discard passdown %s, autoextend %u%% by %u%%, metadata limit %s, event command %s\n",
		argv[ctx->optind], now.discard_passdown ? "on" : "off", now.autoextend_threshold,
		now.autoextend_percent,
		now.metadata_limit ? format_size(now.metadata_limit, limit) : "default",
		now.on_event[0] ? "set" : "none");
	return CMD_OK;
}

const struct cmd cmd_change = {
	.name = "change",
	.usage =
		"change POOL [--discard-passdown on|off] [--autoextend-threshold PCT]\n"
		"            [--autoextend-percent PCT] [--metadata-limit SIZE] [--on-event CMD]\n"
		"\n"
		"Changes the policies of thin pool POOL online (see 'create thin-pool\n"
		"--help' for what each means).  --metadata-limit 0 goes back to the\n"
		"default; --on-event '' removes the command.  A limit below what the\n"
		"maps take already is refused.\n",
	.run = change_run,
	.options = options,
	.needs_pool = 1,
};
