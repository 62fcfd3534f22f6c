/*
 * fuzz_pool_open: the pool service opening a pool whose database is
 * damaged (the input as pool.db, and pool.db-wal after POOLDIR_WAL:
 * pooldir.h), with the one small file device the seeds register intact
 * and labelled as the database says, so that damage in the volumes,
 * extents, switch tables and thin pages is met by the code that builds
 * them, not stopped at the device check.  A pool that opens is then
 * reported, checked and reloaded, as `mapperctl status`, `list`,
 * `switch-map --dump`, `check` and `reload` would; every volume is
 * extended by 1 MiB (an admin change on a damaged pool); and it is closed.
 *
 * Contract (pool.h): pool_open() returns 0 or -errno with a reason, keeps
 * what it cannot load as failed, and never crashes or leaks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "json.h"
#include "log.h"
#include "pool.h"
#include "pool_port.h"
#include "pooldir.h"

static const char *dir;
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	dir = pooldir_init();
	FUZZ_CHECK(pool_lock(dir, "fuzz") >= 0);	/* held for the process's life */
	devnull = fopen("/dev/null", "w");
	FUZZ_CHECK(devnull);
	return 0;
}

static void check_failure(int r, const struct pool_error *err)
{
	FUZZ_CHECK(r < 0 && err->msg[0]);
}

static void ignore(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

#define EXTEND_BY	(1u << 20)	/* bytes */

static void use_volumes(struct pool *p)
{
	struct pool_volume_info *v = NULL;
	struct pool_error err = { "" };
	struct json j;
	size_t nr = 0;
	int r;

	FUZZ_CHECK(pool_volume_infos(p, &v, &nr) == 0);
	for (size_t i = 0; i < nr; i++) {
		json_init(&j, devnull, JSON_COMPACT);
		r = pool_status(p, v[i].rec.name, NULL, &j, &err);
		if (r)
			check_failure(r, &err);
		if (!strcmp(v[i].rec.kind, "switch")) {
			r = pool_switch_dump(p, v[i].rec.name, devnull, &err);
			if (r)
				check_failure(r, &err);
		}
		if (v[i].rec.size <= UINT64_MAX - EXTEND_BY) {
			r = pool_extend(p, v[i].rec.name, v[i].rec.size + EXTEND_BY,
					NULL, 0, NULL, &err);
			if (r)
				check_failure(r, &err);
		}
	}
	pool_volume_infos_release(v, nr);
}

static void report(struct pool *p)
{
	struct pool_device_info *d = NULL;
	struct pool_error err = { "" }, still;
	size_t nr, recovered, failed, breaches;
	struct json j;
	int r;

	json_init(&j, devnull, JSON_COMPACT);
	if ((r = pool_status(p, NULL, NULL, &j, &err)))
		check_failure(r, &err);
	json_init(&j, devnull, JSON_TEXT);
	if ((r = pool_list(p, &j, &err)))
		check_failure(r, &err);
	json_init(&j, devnull, JSON_COMPACT);
	if ((r = pool_devices(p, &j, &err)))
		check_failure(r, &err);
	FUZZ_CHECK(pool_device_infos(p, &d, &nr) == 0);
	pool_device_infos_release(d, nr);
	use_volumes(p);
	if ((r = pool_check(p, NULL, ignore, ignore, NULL, &breaches, &err)))
		check_failure(r, &err);
	if ((r = pool_reload(p, &recovered, &failed, &still, &err)))
		check_failure(r, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pool_error err = { "" };
	struct pool *p = NULL;
	int r;

	fuzz_log_trim();
	pooldir_write(data, size, true);
	pooldir_make_device();
	r = pool_open(dir, pool_port_open, &p, &err);
	if (r) {
		check_failure(r, &err);
		log_warn("pool_open: %s", err.msg);
		return 0;
	}
	report(p);
	pool_close(p);
	return 0;
}
