/*
 * change: sets a thin pool's policies online, as lvchange does
 * (pool_change_thin_pool): what a full pool does, the low-water mark,
 * zeroing, discard passdown, autoextend, the metadata limit, the event
 * command.
 */
#include <errno.h>
#include <stdbool.h>
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
	{ "when-full", required_argument, NULL, 'w' },
	{ "low-water", required_argument, NULL, 'l' },
	{ "zero", required_argument, NULL, 'z' },
	{ 0 }
};

/* "on" or "off" into *out. */
static int parse_on_off(const char *option, const char *arg, bool *out, struct pool_error *err)
{
	if (strcmp(arg, "on") && strcmp(arg, "off"))
		return pool_fail(err, -EINVAL, "--%s takes on or off, not '%s'", option, arg);
	*out = !strcmp(arg, "on");
	return 0;
}

/* One option's value into @p; sets its bit in *fields. */
static int parse_value(int c, const char *arg, struct thin_pool_rec *p, unsigned int *fields,
		       struct pool_error *err)
{
	switch (c) {
	case 'D':
		*fields |= POOL_TP_DISCARD_PASSDOWN;
		return parse_on_off("discard-passdown", arg, &p->discard_passdown, err);
	case 'z':
		*fields |= POOL_TP_ZERO;
		return parse_on_off("zero", arg, &p->zero, err);
	case 'w':
		*fields |= POOL_TP_WHEN_FULL;
		return opts_when_full(arg, p, err);
	case 'l':
		*fields |= POOL_TP_LOW_WATER;
		return opts_percent(arg, "low-water mark", 0, &p->low_water, err);
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

/* The policies as they are now, on one line; an autoextend that never grows says off. */
static void print_policies(FILE *out, const char *name, const struct thin_pool_rec *now)
{
	char limit[SIZE_STR_LEN], autoextend[64], when_full[32];

	if (now->autoextend_threshold < 100)
		snprintf(autoextend, sizeof(autoextend), "past %u%% by %u%%",
			 now->autoextend_threshold, now->autoextend_percent);
	else
		snprintf(autoextend, sizeof(autoextend), "off");
	if (now->wait)
		snprintf(when_full, sizeof(when_full), "wait:%u", now->wait_seconds);
	else
		snprintf(when_full, sizeof(when_full), "error");
	fprintf(out, "thin pool '%s': when full %s, low water %u%%, zero %s, discard passdown %s, autoextend %s, metadata limit %s, event command %s\n",
		name, when_full, now->low_water, now->zero ? "on" : "off",
		now->discard_passdown ? "on" : "off", autoextend,
		now->metadata_limit ? format_size(now->metadata_limit, limit) : "default",
		now->on_event[0] ? "set" : "none");
}

static int change_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct thin_pool_rec policy = { 0 }, now;
	unsigned int fields = 0;
	struct pool_error err;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		if (c == CMD_OPTION_ERROR || !strchr("DTPMEwlz", c))
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
	print_policies(ctx->out, argv[ctx->optind], &now);
	return CMD_OK;
}

const struct cmd cmd_change = {
	.name = "change",
	.usage =
		"change POOL [--when-full error|wait:SECONDS] [--low-water PCT] [--zero on|off]\n"
		"            [--discard-passdown on|off] [--autoextend-threshold PCT]\n"
		"            [--autoextend-percent PCT] [--metadata-limit SIZE] [--on-event CMD]\n"
		"\n"
		"Changes the policies of thin pool POOL online (see 'create thin-pool\n"
		"--help' for what each means), each at once: a writer waiting for a\n"
		"full pool fails when it turns to --when-full error, and the next one\n"
		"waits when it turns to wait; a new low-water mark sets or clears\n"
		"low_water_crossed; --zero applies to the next block a write fills.\n"
		"--metadata-limit 0 goes back to the default; --on-event '' removes\n"
		"the command; --autoextend-threshold 100 turns autoextend off.  A limit\n"
		"below what the maps take already is refused.  Prints the policies as\n"
		"they are now.\n",
	.run = change_run,
	.options = options,
	.needs_pool = 1,
};
