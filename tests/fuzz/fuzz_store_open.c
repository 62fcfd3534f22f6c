/*
 * fuzz_store_open: store_open() on a damaged pool database (the input
 * as pool.db, and pool.db-wal after POOLDIR_WAL: pooldir.h), then every
 * read the pool service and the thin pools make of an open store.
 *
 * Contract (store.h): each call returns 0 or one of the errnos the
 * header lists, never crashes, and leaks nothing whatever the file holds.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "fuzz.h"
#include "pooldir.h"
#include "store.h"
#include "store_switch.h"
#include "thin_store.h"

#define PAGES_MAX	64	/* pages read per thin pool: enough to meet damage */

static char db[PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	snprintf(db, sizeof(db), "%s/pool.db", pooldir_init());
	return 0;
}

/* The errnos store.h promises (and -ENOMEM, which every call may give). */
static int check(int r)
{
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EEXIST || r == -EUCLEAN ||
		   r == -EPROTONOSUPPORT || r == -EBUSY || r == -ENOSPC ||
		   r == -EROFS || r == -ECANCELED || r == -EIO || r == -ENOMEM);
	return r;
}

static void read_pages(struct store *s, int64_t pool)
{
	int64_t *ids = NULL;
	size_t nr = 0;

	if (!check(store_thin_dir_ids(s, pool, &ids, &nr))) {
		for (size_t i = 0; i < nr && i < PAGES_MAX; i++) {
			struct thin_dir_rec d = { 0 };

			if (!check(store_thin_dir_get(s, pool, ids[i], &d)))
				free(d.leaves);
		}
		free(ids);
	}
	ids = NULL;
	if (!check(store_thin_leaf_ids(s, pool, &ids, &nr))) {
		for (size_t i = 0; i < nr && i < PAGES_MAX; i++) {
			struct thin_leaf_rec *l = malloc(sizeof(*l));

			FUZZ_CHECK(l);
			check(store_thin_leaf_get(s, pool, ids[i], l));
			free(l);
		}
		free(ids);
	}
}

static void read_all(struct store *s)
{
	struct device_rec *devs = NULL;
	struct volume_rec *vols = NULL;
	struct extent_rec *ext = NULL;
	struct switch_rec *sw = NULL;
	struct switch_path_rec *paths = NULL;
	struct thin_pool_rec *tps = NULL;
	struct thin_rec *thins = NULL;
	struct thin_origin_rec *origins = NULL;
	size_t nr;
	struct uuid uuid;
	int64_t max;
	int version;

	check(store_pool_uuid(s, &uuid));
	check(store_schema_version(s, &version));
	if (!check(store_device_list(s, &devs, &nr)))
		free(devs);
	if (!check(store_volume_list(s, &vols, &nr)))
		free(vols);
	if (!check(store_extent_list(s, &ext, &nr)))
		free(ext);
	if (!check(store_switch_path_list(s, &paths, &nr)))
		free(paths);
	if (!check(store_switch_list(s, &sw, &nr))) {
		for (size_t i = 0; i < nr; i++) {
			void *blob = NULL;
			size_t len;

			if (!check(store_switch_table_get(s, sw[i].volume, &blob, &len)))
				free(blob);
		}
		free(sw);
	}
	if (!check(store_thin_list(s, &thins, &nr)))
		free(thins);
	if (!check(store_thin_origin_list(s, &origins, &nr)))
		free(origins);
	if (!check(store_thin_pool_list(s, &tps, &nr))) {
		for (size_t i = 0; i < nr; i++) {
			check(store_thin_max_page(s, tps[i].volume, &max));
			read_pages(s, tps[i].volume);
		}
		free(tps);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store *s = NULL;

	fuzz_log_trim();
	pooldir_write(data, size, false);
	if (!check(store_open(db, 0, &s))) {
		read_all(s);
		store_close(s);
	}
	return 0;
}
