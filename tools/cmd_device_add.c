/*
 * device add: registers a raw device and writes the pool's label on it.
 *
 * The label is what lets the daemon refuse a device that moved or was
 * swapped, so a device that carries the label of any pool, this one or
 * another, is refused unless --force: adding it twice would let two
 * owners hand out the same bytes.  The store row and the label go
 * together: the row is inserted in a transaction that commits only after
 * the label is on the device.  A file made by --create is removed again
 * if the command fails, so a failed command leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "device.h"
#include "opts.h"
#include "size.h"
#include "store.h"

#define WHAT "device add"
#define DEVICE_MIN_SIZE (DEVICE_DATA_OFFSET + (1u << 20))	/* bytes */

struct add_args {
	const char *path;
	const char *name;		/* NULL: the file name of path */
	const char *create;		/* the --create size, or NULL */
	int force;
};

static int parse(struct cmd_ctx *ctx, int argc, char **argv,
		 struct add_args *a)
{
	static const struct option longopts[] = {
		{ "create", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		{ 0 }
	};
	int c, r;

	for (int first = 1; (c = opts_next(ctx, WHAT, argc, argv, longopts, first)) != -1;
	     first = 0) {
		switch (c) {
		case 'c': a->create = optarg; break;
		case 'n': a->name = optarg; break;
		case 'f': a->force = 1; break;
		default: return CMD_USAGE;
		}
	}
	r = opts_args(ctx, WHAT, argc, argv, 1, 1, "the device or file PATH");
	if (r)
		return r;
	a->path = argv[optind];
	if (!a->name) {
		const char *slash = strrchr(a->path, '/');

		a->name = slash ? slash + 1 : a->path;
	}
	return opts_name(ctx, WHAT, a->name);
}

/* Creates @path with @size bytes; refuses to touch an existing file. */
static int create_file(struct cmd_ctx *ctx, const char *path, uint64_t size)
{
	int fd, r = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		return cmd_error(ctx, WHAT, "file '%s' exists (leave out --create to add it as it is)",
				 path);
	if (fd < 0)
		return cmd_error(ctx, WHAT, "cannot create '%s': %s", path, strerror(errno));
	if (ftruncate(fd, (off_t)size) < 0) {
		r = cmd_error(ctx, WHAT, "cannot size '%s' to %" PRIu64 " bytes: %s", path,
			      size, strerror(errno));
		unlink(path);
	}
	close(fd);
	return r;
}

/* Refuses a name or path the pool has already. */
static int check_unregistered(struct cmd_ctx *ctx, const char *name,
			      const char *path)
{
	struct device_rec *all = NULL;
	size_t nr = 0;
	int r;

	r = store_device_list(ctx->store, &all, &nr);
	if (r)
		return opts_store_error(ctx, WHAT, "list devices", r);
	for (size_t i = 0; !r && i < nr; i++) {
		if (!strcmp(all[i].name, name))
			r = cmd_error(ctx, WHAT, "device '%s' exists", name);
		else if (!strcmp(all[i].path, path))
			r = cmd_error(ctx, WHAT, "'%s' is registered already as device '%s'",
				      path, all[i].name);
	}
	free(all);
	return r;
}

static int check_device(struct cmd_ctx *ctx, struct device *dev, int force)
{
	char have[SIZE_STR_LEN], need[SIZE_STR_LEN];
	struct device_label l;
	int r;

	if (dev->size < DEVICE_MIN_SIZE)
		return cmd_error(ctx, WHAT, "device '%s' is too small (%s; at least %s)",
				 dev->path, format_size(dev->size, have),
				 format_size(DEVICE_MIN_SIZE, need));
	r = device_label_read(dev, &l);
	if (r == -ENODATA || force)
		return 0;
	if (!r)
		return cmd_error(ctx, WHAT, "device '%s' already belongs to a pool (use --force to take it over)",
				 dev->path);
	if (r == -EBADMSG)
		return cmd_error(ctx, WHAT, "device '%s' carries a damaged mapperfs label (use --force to take it over)",
				 dev->path);
	return cmd_error(ctx, WHAT, "cannot read the label of '%s': %s", dev->path,
			 strerror(-r));
}

/* Inserts the row, writes the label, commits: both or neither. */
static int register_device(struct cmd_ctx *ctx, const char *name,
			   struct device *dev, int64_t *id)
{
	struct device_rec d = { .size = dev->size };
	struct device_label l = { .size = dev->size };
	int r;

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.path, sizeof(d.path), "%s", dev->path);
	r = uuid_generate(&d.uuid);
	if (r)
		return cmd_error(ctx, WHAT, "cannot generate a uuid: %s", strerror(-r));
	l.device = d.uuid;
	r = store_pool_uuid(ctx->store, &l.pool);
	if (r)
		return opts_store_error(ctx, WHAT, "read the pool's uuid", r);
	r = store_begin(ctx->store);
	if (r)
		return opts_store_error(ctx, WHAT, "start a transaction", r);
	r = store_device_insert(ctx->store, &d);
	if (r == -EEXIST) {
		r = cmd_error(ctx, WHAT, "device '%s' or path '%s' is registered already",
			      name, dev->path);
		goto err_rollback;
	}
	if (r) {
		r = opts_store_error(ctx, WHAT, "register the device", r);
		goto err_rollback;
	}
	r = device_label_write(dev, &l);
	if (r) {
		r = cmd_error(ctx, WHAT, "cannot write the label on '%s': %s",
			      dev->path, strerror(-r));
		goto err_rollback;
	}
	r = store_commit(ctx->store);
	if (r) {
		r = opts_store_error(ctx, WHAT, "commit", r);
		goto err_rollback;
	}
	*id = d.id;
	return 0;

err_rollback:
	store_rollback(ctx->store);
	return r;
}

static int add(struct cmd_ctx *ctx, const struct add_args *a, int64_t *id)
{
	char abs[PATH_MAX], size[SIZE_STR_LEN];
	struct device *dev;
	int r;

	if (!realpath(a->path, abs))
		return cmd_error(ctx, WHAT, "cannot open '%s': %s", a->path, strerror(errno));
	r = check_unregistered(ctx, a->name, abs);
	if (r)
		return r;
	r = device_open(abs, 0, &dev);
	if (r == -ENOTBLK)
		return cmd_error(ctx, WHAT, "'%s' is neither a block device nor a regular file",
				 abs);
	if (r)
		return cmd_error(ctx, WHAT, "cannot open '%s': %s", abs, strerror(-r));
	r = check_device(ctx, dev, a->force);
	if (!r)
		r = register_device(ctx, a->name, dev, id);
	if (!r)
		fprintf(ctx->out, "added device '%s' ('%s', %s)\n", a->name, abs,
			format_size(dev->size, size));
	device_close(dev);
	return r;
}

static int device_add_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct add_args a = { 0 };
	uint64_t size = 0;
	int64_t id = 0;
	int r;

	r = parse(ctx, argc, argv, &a);
	if (!r && a.create)
		r = opts_size(ctx, WHAT, a.create, &size);
	if (r)
		return r;
	r = check_unregistered(ctx, a.name, "");
	if (!r && a.create)
		r = create_file(ctx, a.path, size);
	if (r)
		return r;
	r = add(ctx, &a, &id);
	if (r) {
		if (a.create)
			unlink(a.path);
		return r;
	}
	if (ctx->live)
		opts_live_result(ctx, WHAT, ctx->live->device_changed(ctx->live_arg, id));
	return CMD_OK;
}

const struct cmd cmd_device_add = {
	.name = "device add",
	.usage =
		"device add PATH [--create SIZE] [--name NAME] [--force]\n"
		"\n"
		"Registers the block device or file PATH in the pool and writes the\n"
		"pool's label at its start; volumes use it from 1 MiB on.\n"
		"\n"
		"  --create SIZE  create the file PATH with SIZE bytes first (K, M, G, T)\n"
		"  --name NAME    the device's name (default: the file name of PATH)\n"
		"  --force        take over a device that carries a mapperfs label\n",
	.run = device_add_run,
	.needs_store = 1,
};
