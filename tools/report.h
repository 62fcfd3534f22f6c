/*
 * tools/report.h: the objects that describe devices and volumes, shared by
 * `device list --json` and `status`, so each has one shape everywhere.
 */
#ifndef MAPPERFS_REPORT_H
#define MAPPERFS_REPORT_H

#include <stdint.h>

#include "cmd.h"
#include "json.h"
#include "store.h"

/* Adds "name", "path", "uuid", "size", "used", "free" (bytes) to an object. */
void report_device(struct json *j, const struct device_rec *d,
		   uint64_t free_bytes);

/*
 * Adds "name", "kind", "size", "segments": [{"device", "offset", "length"}]
 * (offset within the device's data area) or, for a switch volume,
 * "region_size", "region_count" and "paths": [{"index", "device",
 * "offset", "regions" (how many the table gives it), and the daemon's
 * counters}], then "daemon", and the daemon's live fields to an object.  Returns 0, or CMD_FAIL after printing the error.
 */
int report_volume(struct cmd_ctx *ctx, const char *what, struct json *j,
		  const struct volume_rec *v);

/*
 * For a thin volume: "pool", "mapped_bytes", "exclusive_bytes",
 * "shared_bytes"; for a thin pool: "block_size", "data_used_bytes",
 * "data_total_bytes", "metadata_bytes", "when_full", "low_water_crossed"
 * and the other policies.  With the daemon, its pool commits first, so
 * the figures are current.  0, or CMD_FAIL after printing the error.
 */
int report_thin(struct cmd_ctx *ctx, const char *what, struct json *j,
		const struct volume_rec *v);

#endif
