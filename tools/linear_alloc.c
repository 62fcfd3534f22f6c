#include "linear_alloc.h"

#include <errno.h>
#include <stdlib.h>

#include "opts.h"
#include "size.h"
#include "space.h"
#include "store.h"

/* Prints the -ENOSPC error: which devices, and how much they have free. */
static int no_space(struct cmd_ctx *ctx, const char *what, uint64_t length,
		    const int64_t *devs, size_t nr_devs)
{
	char want[SIZE_STR_LEN], have[SIZE_STR_LEN];
	struct device_rec *all = NULL;
	uint64_t free_total = 0, f;
	char *names = NULL;
	size_t nr_all = 0, len = 0;
	FILE *m;
	int r;

	r = store_device_list(ctx->store, &all, &nr_all);
	if (r)
		return opts_store_error(ctx, what, "list devices", r);
	if (!nr_all)
		return cmd_error(ctx, what, "not enough free space for %s: the pool has no devices (run 'mapperctl device add')",
				 format_size(length, want));
	m = open_memstream(&names, &len);
	if (!m) {
		free(all);
		return cmd_error(ctx, what, "out of memory");
	}
	for (size_t i = 0, n = 0; i < nr_all; i++) {
		size_t k = 0;

		while (k < nr_devs && devs[k] != all[i].id)
			k++;
		if (nr_devs && k == nr_devs)
			continue;
		if (!space_free_bytes(ctx->store, &all[i], &f))
			free_total += f;
		fprintf(m, "%s%s", n++ ? ", " : "", all[i].name);
	}
	fclose(m);
	r = cmd_error(ctx, what, "not enough free space for %s on device(s) %s (%s free)",
		      format_size(length, want), names ? names : "",
		      format_size(free_total, have));
	free(names);
	free(all);
	return r;
}

int linear_alloc_append(struct cmd_ctx *ctx, const char *what, int64_t volume,
			uint32_t seq, uint64_t length, const int64_t *devs,
			size_t nr_devs)
{
	struct space_range *pieces = NULL;
	size_t nr = 0;
	int r;

	r = space_allocate(ctx->store, devs, nr_devs, length, &pieces, &nr);
	if (r == -ENOSPC)
		return no_space(ctx, what, length, devs, nr_devs);
	if (r)
		return opts_store_error(ctx, what, "allocate space", r);
	for (size_t i = 0; !r && i < nr; i++) {
		struct extent_rec e = {
			.volume = volume,
			.seq = seq + (uint32_t)i,
			.device = pieces[i].device,
			.dev_offset = pieces[i].offset,
			.length = pieces[i].length,
		};

		r = store_extent_insert(ctx->store, &e);
	}
	free(pieces);
	if (r)
		return opts_store_error(ctx, what, "record the volume's extents", r);
	return 0;
}
