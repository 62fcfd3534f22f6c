/*
 * device add: registers a raw device and writes the pool's label on it
 * (pool_device_add).
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "opts.h"
#include "size.h"
#include "tag_opts.h"

#define WHAT "device add"

static const struct option options[] = {
	{ "create", required_argument, NULL, 'c' },
	{ "name", required_argument, NULL, 'n' },
	{ "force", no_argument, NULL, 'f' },
	TAG_ADD_OPTION,
	{ 0 }
};

static int device_add_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct tag_opts tags = TAG_OPTS_INIT;
	struct pool_device_spec s = { 0 };
	char size[SIZE_STR_LEN];
	struct pool_error err;
	struct device_rec d;
	const char *create = NULL;
	int c, r;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT, argc, argv, options, first)) != -1;
	     first = 0) {
		switch (c) {
		case 'c': create = optarg; break;
		case 'n': s.name = optarg; break;
		case 'f': s.force = true; break;
		default:
			r = tag_opts_parse(ctx, WHAT, &tags, c, optarg);
			if (r)
				goto out;
		}
	}
	r = cmd_args(ctx, WHAT, argc, argv, 1, 1, "the device, file or NBD URI PATH");
	if (r)
		goto out;
	s.path = argv[ctx->optind];
	if (create && opts_size(create, &s.create_size, &err))
		r = cmd_fail(ctx, WHAT, &err);
	else if (create && !s.create_size)
		r = cmd_error(ctx, WHAT, "--create needs a size larger than zero");
	else if (pool_device_add(ctx->pool, &s, &d, &err))
		r = cmd_fail(ctx, WHAT, &err);
	if (r)
		goto out;
	fprintf(ctx->out, "added device '%s' ('%s', %s)\n", d.name, d.path,
		format_size(d.size, size));
	r = tag_opts_tag_new(&tags, ctx, WHAT, TAG_ON_DEVICE, d.name);
out:
	tag_opts_release(&tags);
	return r;
}

const struct cmd cmd_device_add = {
	.name = "device add",
	.usage =
		"device add PATH [--create SIZE] [--name NAME] [--force] [--addtag TAG]...\n"
		"\n"
		"Registers the block device or file PATH in the pool and writes the\n"
		"pool's label at its start; volumes use it from 1 MiB on.  PATH may be\n"
		"an NBD export, as a libnbd URI: nbd://HOST[:PORT]/EXPORT or\n"
		"nbd+unix:///EXPORT?socket=SOCKET (the daemon's -o nbd_timeout says how\n"
		"long its requests wait for a server that went away); over TLS with a\n"
		"pre-shared key, nbds://IDENTITY@HOST/EXPORT?tls-psk-file=KEYS (KEYS\n"
		"as nbdkit --tls-psk reads it, mode 0600, checked at each connection).\n"
		"\n"
		"  --create SIZE  create the file PATH with SIZE bytes first (K, M, G, T)\n"
		"  --name NAME    the device's name (default: the file name of PATH, or\n"
		"                 an NBD URI's export name)\n"
		"  --force        take over a device that carries a mapperfs label\n"
		"  --addtag TAG   tags it (see 'mapperctl device set'); repeatable\n",
	.run = device_add_run,
	.options = options,
	.needs_pool = 1,
	.path_positional = 1,
};
