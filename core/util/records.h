/*
 * core/util/records.h: the rows a pool is made of, in core's terms: devices,
 * volumes, extents, switch paths, thin pools, thin volumes and exports, as the
 * store keeps them and the service holds them in memory.  Plain data, no
 * behaviour: every layer that reasons about a pool's layout (free space,
 * names, thin images) reads these, so they sit at the bottom, below the
 * port that stores them (pool/pool_meta.h).
 */
#ifndef MAPPERFS_RECORDS_H
#define MAPPERFS_RECORDS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "tags.h"
#include "uuid.h"

#define POOL_NAME_MAX	64		/* bytes of a device or volume name */

/* A registered raw device. */
struct device_rec {
	int64_t id;
	char name[POOL_NAME_MAX + 1];
	char path[PATH_MAX];
	struct uuid uuid;
	uint64_t size;			/* bytes, when registered */
};

/*
 * A volume, or a thin pool (LVM's way: a pool is a hidden volume).  kind
 * names its target type (target_type.h).
 */
struct volume_rec {
	int64_t id;			/* never reused: inode numbers derive from it */
	char name[POOL_NAME_MAX + 1];
	char kind[16];
	uint64_t size;			/* bytes */
	int64_t created;		/* seconds since the epoch */
	int64_t modified;		/* seconds: last write recorded, or 0 */
	bool read_only;			/* writes fail with EROFS */
	bool inactive;			/* not a file in the mount (LVM's activation) */
	bool allow_shrink;		/* a truncate of its file may shrink it */
	uint8_t stale_legs;		/* a mirror's legs not in sync, bit per leg */
};

/* A piece of a raw device that a volume (or thin pool) owns. */
struct extent_rec {
	int64_t volume;
	uint32_t seq;			/* order within the volume, from 0 */
	int64_t device;
	uint64_t dev_offset;		/* bytes, >= DEVICE_DATA_OFFSET */
	uint64_t length;		/* bytes */
};

/*
 * A striped linear volume (dm-stripe): its extents interleaved over
 * @stripes stripes in chunks of @stripe_size bytes.  Which stripe an
 * extent belongs to is in its seq: stripe k's extents are numbered
 * (k << STRIPE_SEQ_SHIFT) + j, j from 0 in the stripe's order, so that
 * the volume's extents by seq are stripe 0's, then stripe 1's ...
 *
 * An extent's seq, bit by bit: 0-23 its place in its run, 24-27 its
 * stripe, 28-29 its mirror leg, 30 a move's piece, 31 a switch path placed
 * by hand (core/pool/pool_int.h has the last three).
 */
#define STRIPE_SEQ_SHIFT	24
struct stripe_rec {
	int64_t volume;
	uint32_t stripes;		/* 2..16 */
	uint32_t stripe_size;		/* bytes: a power of two, >= 4 KiB */
};

struct switch_rec {
	int64_t volume;
	uint64_t region_size;		/* bytes */
	uint64_t nr_regions;
	uint32_t nr_paths;
	uint32_t entry_bits;		/* per entry in the table blob */
};

struct switch_path_rec {
	int64_t volume;
	uint32_t idx;			/* from 0 */
	int64_t device;
	uint64_t dev_offset;		/* bytes: where volume byte 0 lands */
};

struct thin_pool_rec {
	int64_t volume;			/* the pool's volume id */
	uint32_t block_size;		/* bytes */
	bool zero;			/* zero new blocks */
	bool wait;			/* when full: wait (else error) */
	uint32_t wait_seconds;
	uint32_t low_water;		/* percent free */
	bool discard_passdown;		/* discard freed blocks on the raw devices */
	uint32_t autoextend_threshold;	/* percent used that grows the pool; 100: never */
	uint32_t autoextend_percent;	/* grow by this percent of its size */
	uint64_t metadata_limit;	/* bytes of map pages; 0: thin_metadata_estimate */
	char on_event[PATH_MAX];	/* shell command run on its events, or "" */
};

struct thin_rec {
	int64_t volume;
	int64_t pool;			/* the pool's volume id */
	int64_t dir;			/* page id of its directory */
	int64_t snapshot_of;		/* the volume it was a snapshot of, or 0 */
};

/*
 * A thin volume's external origin: a volume (id), or an image file, with
 * the image's identity when the volume was made, so that a change is found.
 */
struct thin_origin_rec {
	int64_t volume;			/* the thin volume */
	int64_t origin_volume;		/* 0 if a file */
	char origin_path[PATH_MAX];	/* "" if a volume */
	uint64_t origin_size;		/* bytes of the image; 0: not recorded */
	int64_t origin_mtime_ns;	/* its mtime, ns since the epoch; 0: not
					 * recorded, or a block device */
};

/*
 * A thin volume that came from another pool by `mapperctl receive`: the
 * sender's identity of what it holds (so that a later incremental stream
 * against it finds it), and, while it is still being received (staged),
 * how far the stream was applied: a record boundary, after the data
 * before it was committed.
 */
struct thin_received_rec {
	int64_t volume;
	struct uuid source;		/* the sender's identity of the volume sent */
	char source_name[POOL_NAME_MAX + 1];	/* its name there, for messages */
	bool staged;			/* still being received: the place below holds */
	uint32_t header_crc;		/* crc32 of the stream's header: which stream */
	uint64_t pos;			/* bytes of the stream applied and committed */
	uint32_t crc;			/* crc32 of those bytes */
	uint64_t records;		/* records among them */
	uint64_t data_bytes;		/* bytes of data they carried */
	uint64_t next;			/* bytes: where the volume was written up to */
};

/* What a tag is on: a volume (a thin pool too) or a raw device. */
enum tag_owner {
	TAG_ON_VOLUME,
	TAG_ON_DEVICE,
};

/* One tag (tags.h) of one volume or device. */
struct tag_rec {
	enum tag_owner on;
	int64_t owner;			/* the volume's or device's id */
	char tag[TAG_MAX + 1];
};

/* Where an export listens: a Unix socket or a TCP address. */
enum export_transport {
	EXPORT_UNIX,
	EXPORT_TCP,
};

/*
 * A volume served over NBD (mapperctl export): the daemon runs nbdkit on
 * its file while it serves the pool.  One per volume.
 */
struct export_rec {
	int64_t volume;
	enum export_transport transport;
	/* EXPORT_UNIX: the socket's absolute path; EXPORT_TCP: "ADDR:PORT", numeric */
	char address[PATH_MAX];
	bool read_only;			/* nbdkit -r: writes, trims, zeroes refused */
	/* A TLS key file (psk_file.h): TLS is required, with its keys; "": none. */
	char tls_psk[PATH_MAX];
	char tls_identity[65];		/* its first identity, for the clients' URI */
};

#endif
