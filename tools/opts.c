#include "opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "size.h"
#include "store.h"

int opts_next(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
	      const struct option *longopts, int first)
{
	int c;

	if (first) {
		optind = 0;
		opterr = 0;
	}
	c = getopt_long(argc, argv, ":", longopts, NULL);
	if (c == '?' && optopt) {
		cmd_usage_error(ctx, what, "unknown option '-%c' (see 'mapperctl %s --help')",
				optopt, what);
		return OPTS_ERROR;
	}
	if (c == '?') {
		cmd_usage_error(ctx, what, "unknown option '%s' (see 'mapperctl %s --help')",
				argv[optind - 1], what);
		return OPTS_ERROR;
	}
	if (c == ':') {
		cmd_usage_error(ctx, what, "option '%s' needs a value",
				argv[optind - 1]);
		return OPTS_ERROR;
	}
	return c;
}

int opts_json_args(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
		   int *as_json, int min, int max, const char *missing)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ 0 }
	};
	int c;

	*as_json = 0;
	for (int first = 1; (c = opts_next(ctx, what, argc, argv, longopts, first)) != -1;
	     first = 0) {
		if (c != 'j')
			return CMD_USAGE;
		*as_json = 1;
	}
	return opts_args(ctx, what, argc, argv, min, max, missing);
}

int opts_args(struct cmd_ctx *ctx, const char *what, int argc, char **argv,
	      int min, int max, const char *missing)
{
	int n = argc - optind;

	if (n < min)
		return cmd_usage_error(ctx, what, "missing %s (see 'mapperctl %s --help')",
				       missing, what);
	if (n > max)
		return cmd_usage_error(ctx, what, "unexpected argument '%s'",
				       argv[optind + max]);
	return 0;
}

int opts_size(struct cmd_ctx *ctx, const char *what, const char *arg,
	      uint64_t *out)
{
	int r = parse_size(arg, out);

	if (r == -ERANGE)
		return cmd_error(ctx, what, "size '%s' is too large", arg);
	if (r && arg[0] == '-')
		return cmd_error(ctx, what, "size '%s' is negative", arg);
	if (r)
		return cmd_error(ctx, what, "invalid size '%s': use a whole number of bytes with an optional K, M, G or T suffix",
				 arg);
	return 0;
}

int opts_block_size(struct cmd_ctx *ctx, const char *what, const char *arg,
		    uint64_t *out)
{
	int r = opts_size(ctx, what, arg, out);

	if (r)
		return r;
	if (!*out)
		return cmd_error(ctx, what, "size '%s' must be larger than zero", arg);
	if (*out % OPTS_BLOCK)
		return cmd_error(ctx, what, "size '%s' is not a multiple of 4 KiB", arg);
	return 0;
}

int opts_name(struct cmd_ctx *ctx, const char *what, const char *name)
{
	if (!name_valid(name))
		return cmd_error(ctx, what, "invalid name '%s': " NAME_RULES, name);
	return 0;
}

/* Appends the id of device @name to ids unless it is there already. */
static int add_device(struct cmd_ctx *ctx, const char *what, const char *name,
		      int64_t *ids, size_t *nr)
{
	struct device_rec d;
	int r;

	r = store_device_get(ctx->store, name, &d);
	if (r == -ENOENT)
		return cmd_error(ctx, what, "no device '%s'", name);
	if (r)
		return opts_store_error(ctx, what, "look up devices", r);
	for (size_t i = 0; i < *nr; i++)
		if (ids[i] == d.id)
			return 0;
	ids[(*nr)++] = d.id;
	return 0;
}

int opts_devices(struct cmd_ctx *ctx, const char *what, char **args,
		 size_t nr_args, int64_t **ids, size_t *nr)
{
	size_t cap = 0;
	int64_t *v;
	int r = 0;

	*ids = NULL;
	*nr = 0;
	if (!nr_args)
		return 0;
	for (size_t i = 0; i < nr_args; i++)
		cap += strlen(args[i]) / 2 + 1;	/* names are at least 1 char */
	v = malloc(cap * sizeof(*v));
	if (!v)
		return cmd_error(ctx, what, "out of memory");
	for (size_t i = 0; !r && i < nr_args; i++) {
		char *list = strdup(args[i]), *save = NULL, *name;

		if (!list) {
			r = cmd_error(ctx, what, "out of memory");
			break;
		}
		if (!list[strspn(list, ",")])
			r = cmd_error(ctx, what, "--on needs a device name");
		for (name = strtok_r(list, ",", &save); !r && name;
		     name = strtok_r(NULL, ",", &save))
			r = add_device(ctx, what, name, v, nr);
		free(list);
	}
	if (r) {
		free(v);
		*nr = 0;
		return r;
	}
	*ids = v;
	return 0;
}

int opts_store_error(struct cmd_ctx *ctx, const char *what, const char *doing,
		     int r)
{
	if (r == -EBUSY)
		return cmd_error(ctx, what, "cannot %s: the pool database is busy", doing);
	return cmd_error(ctx, what, "cannot %s: %s", doing, strerror(-r));
}

void opts_live_result(struct cmd_ctx *ctx, const char *what, int r)
{
	if (r)
		fprintf(ctx->err, "mapperctl: %s: warning: done, but the daemon could not follow: %s\n",
			what, strerror(-r));
}

int opts_begin_volume(struct cmd_ctx *ctx, const char *what, struct volume_rec *v)
{
	int r = store_begin(ctx->store);

	if (r)
		return opts_store_error(ctx, what, "start a transaction", r);
	r = store_volume_insert(ctx->store, v);
	if (r == -EEXIST)
		return cmd_error(ctx, what, "volume '%s' exists", v->name);
	if (r)
		return opts_store_error(ctx, what, "record the volume", r);
	return 0;
}

int opts_end_transaction(struct cmd_ctx *ctx, const char *what, int r)
{
	if (!r) {
		r = store_commit(ctx->store);
		if (r)
			r = opts_store_error(ctx, what, "commit", r);
	}
	if (r)
		store_rollback(ctx->store);
	return r;
}
