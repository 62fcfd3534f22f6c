/*
 * meta/migrate.c: the schema, one step per version.
 *
 * PRAGMA user_version is the schema version; 0 is an empty file.  Step N
 * takes a database at version N - 1 to version N, and runs in one
 * transaction together with the user_version update, so a database is
 * always at a version that some step produced, never in between.  Steps
 * are never edited once released: a change to the schema is a new step
 * appended to steps[], and that one line is all the runner needs.
 *
 * Step 1 also inserts the pool row, with a fresh uuid: "version >= 1" then
 * means "this is a mapperfs pool", which store_open() checks.  Since a
 * database only starts from version 0 when the pool is being created,
 * no step ever finds an older pool without its row.
 *
 * The runner re-reads user_version inside each step's write transaction,
 * so two processes opening an old pool at once apply each step once.
 */
#include "migrate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "store_int.h"
#include "uuid.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Version 1: the pool, its raw devices, linear volumes and their extents. */
static int step1_pool_devices_volumes(struct store *s)
{
	static const char schema[] =
		"CREATE TABLE pool ("
		" id INTEGER PRIMARY KEY CHECK (id = 1),"
		" uuid TEXT NOT NULL,"
		" created INTEGER NOT NULL);"
		/* AUTOINCREMENT: ids become inode numbers, never reused. */
		"CREATE TABLE device ("
		" id INTEGER PRIMARY KEY AUTOINCREMENT,"
		" name TEXT NOT NULL UNIQUE,"
		" path TEXT NOT NULL UNIQUE,"
		" uuid TEXT NOT NULL,"
		" size INTEGER NOT NULL);"
		"CREATE TABLE volume ("
		" id INTEGER PRIMARY KEY AUTOINCREMENT,"
		" name TEXT NOT NULL UNIQUE,"
		" kind TEXT NOT NULL"
		"  CHECK (kind IN ('linear', 'thin', 'thin-pool', 'switch')),"
		" size INTEGER NOT NULL,"
		" created INTEGER NOT NULL);"
		"CREATE TABLE extent ("
		" volume INTEGER NOT NULL REFERENCES volume(id) ON DELETE CASCADE,"
		" seq INTEGER NOT NULL,"
		" device INTEGER NOT NULL REFERENCES device(id),"
		" dev_offset INTEGER NOT NULL,"
		" length INTEGER NOT NULL,"
		" PRIMARY KEY (volume, seq));"
		"CREATE INDEX extent_by_device ON extent(device, dev_offset);";
	char text[UUID_STR_LEN];
	struct uuid uuid;
	sqlite3_stmt *st;
	int r;

	r = store_exec(s, schema);
	if (r)
		return r;
	r = uuid_generate(&uuid);
	if (r)
		return r;
	uuid_format(&uuid, text);
	r = store_stmt(s, "INSERT INTO pool (id, uuid, created) VALUES (1, ?, ?)",
		       &st);
	if (r)
		return r;
	sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
	return store_step_done(s, st);
}

/*
 * Version 2: thin pools and thin volumes.  A volume's map is pages: a
 * directory (a blob of little-endian int64 leaf ids, 0 for none) and
 * leaves (blobs of THIN_LEAF_ENTRIES little-endian u32, data block + 1,
 * 0 for a hole; 2 KiB, so one row stays in one SQLite page).  Page ids
 * are per pool.  Reference counts are derived at load (thin_meta.h).
 * thin_origin names a thin volume's read-only external origin: another
 * volume, or an image file.
 */
static int step2_thin(struct store *s)
{
	static const char schema[] =
		"CREATE TABLE thin_pool ("
		" volume INTEGER PRIMARY KEY REFERENCES volume(id) ON DELETE CASCADE,"
		" block_size INTEGER NOT NULL,"
		" zero INTEGER NOT NULL,"
		" when_full TEXT NOT NULL CHECK (when_full IN ('error', 'wait')),"
		" wait_seconds INTEGER NOT NULL,"
		" low_water INTEGER NOT NULL);"
		"CREATE TABLE thin ("
		" volume INTEGER PRIMARY KEY REFERENCES volume(id) ON DELETE CASCADE,"
		" pool INTEGER NOT NULL REFERENCES thin_pool(volume),"
		" dir INTEGER NOT NULL);"
		"CREATE INDEX thin_by_pool ON thin(pool);"
		"CREATE TABLE thin_dir ("
		" pool INTEGER NOT NULL REFERENCES thin_pool(volume) ON DELETE CASCADE,"
		" id INTEGER NOT NULL,"
		" leaves BLOB NOT NULL,"
		" PRIMARY KEY (pool, id));"
		"CREATE TABLE thin_leaf ("
		" pool INTEGER NOT NULL REFERENCES thin_pool(volume) ON DELETE CASCADE,"
		" id INTEGER NOT NULL,"
		" map BLOB NOT NULL,"
		" PRIMARY KEY (pool, id));"
		/* Written with the volume row, so a live create knows it at once. */
		"CREATE TABLE thin_origin ("
		" volume INTEGER PRIMARY KEY REFERENCES volume(id) ON DELETE CASCADE,"
		" origin_volume INTEGER REFERENCES volume(id),"
		" origin_path TEXT,"
		" CHECK ((origin_volume IS NULL) != (origin_path IS NULL)));"
		"CREATE INDEX thin_origin_by_volume ON thin_origin(origin_volume);";

	return store_exec(s, schema);
}

/*
 * Version 3: switch volumes.  The region table is one blob of packed
 * words per volume (see store_switch.h); paths name a device and an
 * offset, and keep the device from being deleted.
 */
static int step3_switch(struct store *s)
{
	return store_exec(s,
		"CREATE TABLE switch ("
		" volume INTEGER PRIMARY KEY REFERENCES volume(id) ON DELETE CASCADE,"
		" region_size INTEGER NOT NULL CHECK (region_size > 0),"
		" nr_regions INTEGER NOT NULL CHECK (nr_regions > 0),"
		" nr_paths INTEGER NOT NULL CHECK (nr_paths BETWEEN 2 AND 256),"
		" entry_bits INTEGER NOT NULL CHECK (entry_bits BETWEEN 1 AND 8),"
		" regions BLOB NOT NULL);"
		"CREATE TABLE switch_path ("
		" volume INTEGER NOT NULL REFERENCES switch(volume) ON DELETE CASCADE,"
		" idx INTEGER NOT NULL,"
		" device INTEGER NOT NULL REFERENCES device(id),"
		" dev_offset INTEGER NOT NULL,"
		" PRIMARY KEY (volume, idx));"
		"CREATE INDEX switch_path_by_device ON switch_path(device);");
}

/*
 * Version 4: what thin pool administration needs.  Per thin pool: discard
 * passdown (on by default, as dm-thin's), LVM's autoextend threshold and
 * percent (100: never), a limit for its map pages (0: the estimate for
 * its size) and the command its events run.  Per thin volume: the volume
 * it was snapshotted from, forgotten when that one is removed.
 */
static int step4_thin_admin(struct store *s)
{
	return store_exec(s,
		"ALTER TABLE thin_pool ADD COLUMN discard_passdown INTEGER NOT NULL DEFAULT 1;"
		"ALTER TABLE thin_pool ADD COLUMN autoextend_threshold INTEGER NOT NULL DEFAULT 100"
		" CHECK (autoextend_threshold BETWEEN 50 AND 100);"
		"ALTER TABLE thin_pool ADD COLUMN autoextend_percent INTEGER NOT NULL DEFAULT 20"
		" CHECK (autoextend_percent BETWEEN 0 AND 1000);"
		"ALTER TABLE thin_pool ADD COLUMN metadata_limit INTEGER NOT NULL DEFAULT 0;"
		"ALTER TABLE thin_pool ADD COLUMN on_event TEXT;"
		"ALTER TABLE thin ADD COLUMN snapshot_of INTEGER"
		" REFERENCES volume(id) ON DELETE SET NULL;");
}

/*
 * Version 5: the life cycle of a volume.  read_only: writes fail with
 * EROFS; active: it is a file in the mount (LVM's activation; snapshots
 * start inactive); modified: when it was last written, as the daemon
 * last recorded it (NULL: never), its files' mtime.  Volumes made before
 * are writable and active, as they were.
 */
static int step5_volume_life_cycle(struct store *s)
{
	return store_exec(s,
		"ALTER TABLE volume ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0"
		" CHECK (read_only IN (0, 1));"
		"ALTER TABLE volume ADD COLUMN active INTEGER NOT NULL DEFAULT 1"
		" CHECK (active IN (0, 1));"
		"ALTER TABLE volume ADD COLUMN modified INTEGER;");
}

/*
 * Version 6: an external origin image's identity, its size and mtime (ns)
 * when the thin volume was made, compared whenever it is opened, so that
 * an image changed while no daemon watched it is found.  NULL for
 * volumes made before (not compared) and for origin volumes.
 */
static int step6_origin_identity(struct store *s)
{
	return store_exec(s,
		"ALTER TABLE thin_origin ADD COLUMN origin_size INTEGER;"
		"ALTER TABLE thin_origin ADD COLUMN origin_mtime_ns INTEGER;");
}

/*
 * Version 7: tags (LVM's --addtag), on volumes and thin pools, and on raw
 * devices: a table per owner, so that a foreign key takes an owner's
 * tags with it when it is deleted.
 */
static int step7_tags(struct store *s)
{
	return store_exec(s,
		"CREATE TABLE volume_tag ("
		" volume INTEGER NOT NULL REFERENCES volume(id) ON DELETE CASCADE,"
		" tag TEXT NOT NULL,"
		" PRIMARY KEY (volume, tag)) WITHOUT ROWID;"
		"CREATE TABLE device_tag ("
		" device INTEGER NOT NULL REFERENCES device(id) ON DELETE CASCADE,"
		" tag TEXT NOT NULL,"
		" PRIMARY KEY (device, tag)) WITHOUT ROWID;");
}

/*
 * Version 8: the number of the pool's layout, as its raw devices' copies
 * carry it (core/pool/pool_layout.c), moved on by every change in the
 * change's own transaction: opening the pool can then tell a database
 * older than its devices (put back from a copy) from a stale device.
 */
static int step8_layout_seq(struct store *s)
{
	return store_exec(s, "ALTER TABLE pool ADD COLUMN layout_seq INTEGER NOT NULL DEFAULT 0;");
}

/*
 * Version 9: striped linear volumes (dm-stripe, lvcreate -i -I): the
 * number of stripes and the chunk size; the extents say which stripe
 * they belong to in their seq (records.h).  Linear volumes made before
 * have no row and are not striped.
 */
static int step9_stripes(struct store *s)
{
	return store_exec(s,
		"CREATE TABLE stripe ("
		" volume INTEGER PRIMARY KEY REFERENCES volume(id) ON DELETE CASCADE,"
		" stripes INTEGER NOT NULL CHECK (stripes BETWEEN 2 AND 16),"
		" stripe_size INTEGER NOT NULL"
		"  CHECK (stripe_size >= 4096 AND (stripe_size & (stripe_size - 1)) = 0));");
}

/*
 * Version 10: the administrator's consent that a truncate of a volume's
 * file shrinks the volume (set --allow-shrink), as lvreduce would.
 * Volumes made before only grow by a truncate, as they did.
 */
static int step10_allow_shrink(struct store *s)
{
	return store_exec(s,
		"ALTER TABLE volume ADD COLUMN allow_shrink INTEGER NOT NULL DEFAULT 0"
		" CHECK (allow_shrink IN (0, 1));");
}

/*
 * Version 11: which legs of a mirror are not in sync (failed, rebuilding,
 * catching up), as the daemon last saw: the write-intent log file says
 * so first, and this copy is what a lost log leaves to go by.
 */
static int step11_stale_legs(struct store *s)
{
	return store_exec(s,
		"ALTER TABLE volume ADD COLUMN stale_legs INTEGER NOT NULL DEFAULT 0"
		" CHECK (stale_legs BETWEEN 0 AND 15);");
}

/*
 * Version 12: volumes served over NBD (mapperctl export): where each
 * listens and whether it is read-only.  The daemon runs nbdkit for every
 * row while it serves the pool.  A volume is exported once; an address
 * serves one volume.  The row goes with its volume (the service refuses
 * to remove an exported one, but restore-layout deletes volume rows).
 */
static int step12_exports(struct store *s)
{
	return store_exec(s,
		"CREATE TABLE export ("
		" volume INTEGER PRIMARY KEY REFERENCES volume(id) ON DELETE CASCADE,"
		" transport TEXT NOT NULL CHECK (transport IN ('unix', 'tcp')),"
		" address TEXT NOT NULL,"
		" read_only INTEGER NOT NULL CHECK (read_only IN (0, 1)),"
		" UNIQUE (transport, address));");
}

/*
 * Version 13: thin volumes received from another pool (mapperctl receive):
 * the sender's identity of the volume (a uuid, core/pool/pool_send.c) and
 * its name there; while a receive is under way, its staging volume's
 * place in the stream (the stream_* columns, NULL once received), so
 * that a receive cut short goes on from there.
 */
static int step13_thin_received(struct store *s)
{
	return store_exec(s,
		"CREATE TABLE thin_received ("
		" volume INTEGER PRIMARY KEY REFERENCES volume(id) ON DELETE CASCADE,"
		" source_uuid TEXT NOT NULL,"
		" source_name TEXT NOT NULL,"
		" stream_header_crc INTEGER,"
		" stream_pos INTEGER,"
		" stream_crc INTEGER,"
		" stream_records INTEGER,"
		" stream_data_bytes INTEGER,"
		" stream_next INTEGER,"
		" CHECK ((stream_pos IS NULL) = (stream_next IS NULL)));"
		"CREATE INDEX thin_received_by_source ON thin_received(source_uuid);");
}

/*
 * Version 14: an export may require TLS: the key file its nbdkit reads
 * (--tls-psk) and the identity its clients connect as, both NULL for a
 * plain export.
 */
static int step14_export_tls(struct store *s)
{
	return store_exec(s,
		"ALTER TABLE export ADD COLUMN tls_psk TEXT;"
		"ALTER TABLE export ADD COLUMN tls_identity TEXT"
		" CHECK ((tls_psk IS NULL) = (tls_identity IS NULL));");
}

/*
 * Version 15: a thin pool's space map, the stored counts of its data
 * blocks (thin_meta.h: struct thin_space_rec), so that a start-up need
 * not derive them from every leaf.  space_valid says whether the chunks
 * match the leaves: every change of a leaf row clears it (the triggers),
 * and only the pool's own commit, which writes leaves and the chunks they
 * change in one transaction, sets it again.  Existing pools start stale:
 * their first load derives the counts and their next commit writes them.
 * And thin_dir.mapped, the blocks a map maps, which the pool's commit
 * keeps (NULL where a writer did not say: the load counts them).
 */
static int step15_thin_space(struct store *s)
{
	return store_exec(s,
		"ALTER TABLE thin_pool ADD COLUMN space_valid INTEGER NOT NULL DEFAULT 0;"
		"ALTER TABLE thin_dir ADD COLUMN mapped INTEGER;"
		"CREATE TABLE thin_space ("
		" pool INTEGER NOT NULL REFERENCES thin_pool(volume) ON DELETE CASCADE,"
		" chunk INTEGER NOT NULL,"
		" fields BLOB NOT NULL,"
		" overflow BLOB,"
		" PRIMARY KEY (pool, chunk));"
		"CREATE TRIGGER thin_leaf_insert_stales_space AFTER INSERT ON thin_leaf BEGIN"
		" UPDATE thin_pool SET space_valid = 0 WHERE volume = NEW.pool AND space_valid; END;"
		"CREATE TRIGGER thin_leaf_update_stales_space AFTER UPDATE ON thin_leaf BEGIN"
		" UPDATE thin_pool SET space_valid = 0 WHERE volume = NEW.pool AND space_valid; END;"
		"CREATE TRIGGER thin_leaf_delete_stales_space AFTER DELETE ON thin_leaf BEGIN"
		" UPDATE thin_pool SET space_valid = 0 WHERE volume = OLD.pool AND space_valid; END;");
}

/*
 * Version 16: a space map row's fields may be runs of equal words
 * (store_space.c), which a mapperfs of version 15 would read as damage.
 * Nothing to change: rows of 15 read as they are, and go over to runs as
 * their chunks change.
 */
static int step16_space_runs(struct store *s)
{
	(void)s;
	return 0;
}

/* steps[i] takes the schema from version i to version i + 1. */
static int (*const steps[])(struct store *s) = {
	step1_pool_devices_volumes,
	step2_thin,
	step3_switch,
	step4_thin_admin,
	step5_volume_life_cycle,
	step6_origin_identity,
	step7_tags,
	step8_layout_seq,
	step9_stripes,
	step10_allow_shrink,
	step11_stale_legs,
	step12_exports,
	step13_thin_received,
	step14_export_tls,
	step15_thin_space,
	step16_space_runs,
};

int migrate_latest(void)
{
	return (int)ARRAY_SIZE(steps);
}

/* Runs step @to (from @to - 1) unless someone else did it already. */
static int migrate_step(struct store *s, int to)
{
	char sql[64];
	int version;
	int r;

	r = store_exec(s, "BEGIN IMMEDIATE");
	if (r)
		return r;
	r = store_user_version(s, &version);
	if (r)
		goto err_rollback;
	if (version >= to)
		return store_exec(s, "COMMIT");
	r = steps[to - 1](s);
	if (r)
		goto err_rollback;
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", to);
	r = store_exec(s, sql);
	if (r)
		goto err_rollback;
	r = store_exec(s, "COMMIT");
	if (r)
		goto err_rollback;
	return 0;

err_rollback:
	store_rollback(s);
	log_error("cannot migrate the pool schema to version %d: %s", to,
		  strerror(-r));
	return r;
}

int migrate_run(struct store *s)
{
	int version;
	int r;

	r = store_user_version(s, &version);
	if (r)
		return r;
	if (version > migrate_latest())
		return -EPROTONOSUPPORT;
	for (int to = version + 1; to <= migrate_latest(); to++) {
		r = migrate_step(s, to);
		if (r)
			return r;
	}
	return 0;
}
