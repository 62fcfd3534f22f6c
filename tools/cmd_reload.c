/*
 * reload: tries again what failed to load, once the cause is gone (a raw
 * device back in place, an origin restored), and what fails though
 * served (an origin image a writer reached), without a restart
 * (pool_reload).
 */
#include "cmd.h"
#include "json.h"

#define WHAT "reload"

static int reload_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err, still;
	size_t recovered, failed;
	int as_json, r;
	struct json j;

	r = cmd_json_args(ctx, WHAT, argc, argv, &as_json, 0, 0, "");
	if (r)
		return r;
	if (pool_reload(ctx->pool, &recovered, &failed, &still, &err))
		return cmd_fail(ctx, WHAT, &err);
	if (as_json) {		/* and, if anything is still failed, the line below */
		json_init(&j, ctx->out, JSON_PRETTY);
		json_object_begin(&j, NULL);
		json_u64(&j, "recovered", recovered);
		json_u64(&j, "failed", failed);
		if (failed)
			json_string(&j, "first_failed", still.msg);
		json_object_end(&j);
	}
	if (failed > 1)
		return cmd_error(ctx, WHAT, "%zu recovered, %zu still failed: %s, and %zu more "
				 "(see 'mapperctl status')", recovered, failed, still.msg,
				 failed - 1);
	if (failed)
		return cmd_error(ctx, WHAT, "%zu recovered, 1 still failed: %s", recovered,
				 still.msg);
	if (!as_json)
		fprintf(ctx->out, "%zu recovered, nothing failed\n", recovered);
	return CMD_OK;
}

const struct cmd cmd_reload = {
	.name = "reload",
	.usage =
		"reload [--json]\n"
		"\n"
		"Tries again to open the raw devices and build the thin pools and\n"
		"volumes that failed (see 'mapperctl status'), as the daemon does when\n"
		"it starts, once the cause is gone, and serves again a thin volume\n"
		"whose origin image a writer reached, if nobody writes it now and it\n"
		"is as it was.  What is served and well is not touched.\n"
		"Exits 1 if anything is still failed, in one line that names the\n"
		"first and why.\n"
		"\n"
		"  --json  print {\"recovered\", \"failed\"}, and \"first_failed\" (why)\n"
		"          when anything is still failed (which still exits 1)\n",
	.run = reload_run,
	.needs_pool = 1,
};
