/*
 * core/pool/pool_meta.c: what the store port's image needs beyond its
 * declaration (pool_meta.h); a file of its own at the bottom of the
 * service, so that both the service and the layout text use it.
 */
#include "pool_meta.h"

#include <stdlib.h>
#include <string.h>

void pool_meta_image_release(struct pool_meta_image *img)
{
	free(img->devices);
	free(img->volumes);
	free(img->extents);
	free(img->stripes);
	free(img->switches);
	free(img->switch_paths);
	free(img->thin_pools);
	free(img->thins);
	free(img->origins);
	free(img->tags);
	free(img->exports);
	memset(img, 0, sizeof(*img));
}
