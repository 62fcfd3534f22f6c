/*
 * device remove: unregisters a device no volume uses, then wipes the
 * pool's label from it so that it can be added again (here or to another
 * pool) without --force.  The label is wiped only after the commit, and
 * only if it is still the one this pool wrote.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "device.h"
#include "opts.h"
#include "store.h"

#define WHAT "device remove"

/* Refuses a device that any extent lies on, naming a volume. */
static int check_unused(struct cmd_ctx *ctx, const struct device_rec *d)
{
	struct extent_rec *e = NULL;
	struct volume_rec v;
	size_t nr = 0;
	int r;

	r = store_extents_on_device(ctx->store, d->id, &e, &nr);
	if (r)
		return opts_store_error(ctx, WHAT, "read the device's extents", r);
	if (nr && !store_volume_get_by_id(ctx->store, e[0].volume, &v))
		r = cmd_error(ctx, WHAT, "device '%s' is in use by volume '%s'",
			      d->name, v.name);
	else if (nr)
		r = cmd_error(ctx, WHAT, "device '%s' is in use", d->name);
	free(e);
	return r;
}

/* Best effort: the device is gone from the pool whatever happens here. */
static void wipe_label(struct cmd_ctx *ctx, const struct device_rec *d)
{
	struct device_label l;
	struct uuid pool;
	struct device *dev;

	if (store_pool_uuid(ctx->store, &pool) || device_open(d->path, 0, &dev))
		return;
	if (!device_label_read(dev, &l) && uuid_equal(&l.pool, &pool) &&
	    uuid_equal(&l.device, &d->uuid) && device_zero(dev, 0, LABEL_SIZE, 0))
		fprintf(ctx->err, "mapperctl: %s: warning: cannot wipe the label of '%s'\n",
			WHAT, d->path);
	device_close(dev);
}

static int delete_device(struct cmd_ctx *ctx, const struct device_rec *d)
{
	int r;

	r = store_begin(ctx->store);
	if (r)
		return opts_store_error(ctx, WHAT, "start a transaction", r);
	r = store_device_delete(ctx->store, d->id);
	if (r == -EBUSY)
		r = cmd_error(ctx, WHAT, "device '%s' is in use", d->name);
	else if (r)
		r = opts_store_error(ctx, WHAT, "unregister the device", r);
	return opts_end_transaction(ctx, WHAT, r);
}

static int device_remove_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { { 0 } };
	struct device_rec d;
	int r;

	if (opts_next(ctx, WHAT, argc, argv, longopts, 1) != -1)
		return CMD_USAGE;
	r = opts_args(ctx, WHAT, argc, argv, 1, 1, "the device NAME");
	if (r)
		return r;
	r = store_device_get(ctx->store, argv[optind], &d);
	if (r == -ENOENT)
		return cmd_error(ctx, WHAT, "no device '%s'", argv[optind]);
	if (r)
		return opts_store_error(ctx, WHAT, "look up the device", r);
	r = check_unused(ctx, &d);
	if (!r)
		r = delete_device(ctx, &d);
	if (r)
		return r;
	wipe_label(ctx, &d);
	if (ctx->live)
		opts_live_result(ctx, WHAT, ctx->live->device_changed(ctx->live_arg, d.id));
	fprintf(ctx->out, "removed device '%s'\n", d.name);
	return CMD_OK;
}

const struct cmd cmd_device_remove = {
	.name = "device remove",
	.usage =
		"device remove NAME\n"
		"\n"
		"Unregisters the device NAME, which no volume may use, and wipes the\n"
		"pool's label from it.\n",
	.run = device_remove_run,
	.needs_store = 1,
};
