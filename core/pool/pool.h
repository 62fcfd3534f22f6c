/*
 * core/pool/pool.h: the pool service, mapperfs's control plane.
 *
 * A pool is a directory holding one metadata store and the raw devices
 * registered in it, the volumes made on them and the thin pools.  Every
 * admin operation is one function here, used the same way by both hosts:
 * `mapperctl` with no daemon running opens the pool in-process, and the
 * daemon opens it once and runs the same functions for the requests its
 * control socket carries.  Nothing here knows FUSE or SQL; the store is a
 * port (pool_meta.h) and each kind of volume a target type
 * (target_type.h).
 *
 * Every change goes the same way:
 *   1. validate against the pool as held in memory (names, sizes, space,
 *      who uses what), and prepare what publishing will need (tables,
 *      targets), so that publishing cannot fail;
 *   2. make it durable: one store transaction, with no device I/O inside
 *      it (a label is written before it begins);
 *   3. publish: the in-memory pool, the served volumes and their maps now
 *      show the change.
 * A change that fails in 1 or 2 leaves memory and the store as they were.
 *
 * Faults are confined: a raw device that is missing or wrong, a damaged
 * thin pool or a missing origin fails that device, pool or volume, which
 * then shows as failed with its reason in status and list and in the log;
 * everything else is served.  Opening never deletes anything that belongs
 * to what did not load.
 *
 * Operations are serialised by the pool's admin lock; they may block on
 * the store and on device I/O, never call them on the I/O path.  Each
 * returns 0 or -errno and, on error, a one-line reason that names the
 * object in @err ("volume 'vm1' is open").  The served volumes are read by
 * the I/O path under RCU (pool_served()).
 */
#ifndef MAPPERFS_POOL_H
#define MAPPERFS_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "pool_meta.h"
#include "tags.h"

struct json;
struct pool;
struct volset_array;

#define POOL_ERROR_LEN	512

/* Why an operation failed: one line for people. */
struct pool_error {
	char msg[POOL_ERROR_LEN];
};

/* Sets @err's message and returns @r (a -errno), for `return pool_fail(...)`. */
int pool_fail(struct pool_error *err, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Takes the pool's single-writer lock, DIR/lock (flock, exclusive,
 * non-blocking; the file is made 0600): the daemon holds it for its life,
 * an offline mapperctl for one command.  @who ("mapperfs", "'device add'")
 * is written in the file, with the pid, for pool_lock_holder().  Returns
 * the descriptor to keep open, -EBUSY if another process holds it, or the
 * -errno of opening it (regfile.h: -ELOOP, -EINVAL, -EMLINK for what is
 * not a regular file of its own).
 */
int pool_lock(const char *dir, const char *who);
/*
 * Who holds DIR/lock, for messages: "mapperfs (pid 12)", "'device add'
 * (pid 34)", in @buf; "another process" when it cannot be known.  Returns
 * the holder's pid, or 0.  Reads /proc/locks.
 */
pid_t pool_lock_holder(const char *dir, char *buf, size_t len);

/*
 * Names the command this thread is about to run ("mapperctl remove lv1"),
 * for the layout archive's entries (pool_layout.c); "" or NULL: none.
 */
void pool_set_command(const char *line);

/*
 * recover: rebuilds DIR/pool.db from the layout copies on the raw devices
 * at @paths (pool_recover.c says how), and the thin volumes of each thin
 * pool of @dumps from its dump; a readable pool.db, and copies the
 * devices mark stale (the layout outgrew their metadata area), are refused
 * unless @force.  All or nothing.  Prints what it found and did to @out.  Takes
 * the pool's lock.
 */
struct pool_recover_dump {
	const char *pool;		/* a thin pool of the layout */
	const char *path;		/* its `dump` (thin_dump XML), absolute */
};

struct pool_recover_spec {
	const char *dir;
	char *const *paths;
	size_t nr_paths;
	bool force;			/* a readable pool.db, missing devices, stale copies */
	const struct pool_recover_dump *dumps;
	size_t nr_dumps;
};
int pool_recover(const struct pool_recover_spec *s, pool_meta_open_fn *open_meta,
		 FILE *out, struct pool_error *err);

/*
 * restore-layout: puts the linear and switch volumes of a layout (@len
 * bytes of @text, read from @file) back into the pool at @dir, which no
 * daemon serves; thin pools and volumes stay.  Prints the plan to @out;
 * @dry_run stops there.  Takes the pool's lock.
 */
struct pool_restore_layout_spec {
	const char *dir;
	const char *file;		/* for messages */
	const char *text;
	size_t len;
	bool dry_run;
	bool force;			/* thin volumes of the layout that are gone */
};
int pool_restore_layout(const struct pool_restore_layout_spec *s,
			pool_meta_open_fn *open_meta, FILE *out, struct pool_error *err);

/*
 * backup: writes the pool's current layout (layout.h) to @f.  Reads the
 * store under the admin lock.
 */
int pool_backup(struct pool *p, FILE *f, struct pool_error *err);

/* Makes a new pool in @dir (created, mode 0700, if missing): init. */
int pool_create(const char *dir, pool_meta_open_fn *open_meta,
		struct pool_error *err);

/*
 * Opens the pool in @dir: reads the store, opens and checks every raw
 * device (label, size; exclusively), builds every volume and thin pool
 * and serves them.  What fails to load is kept as failed, with its reason;
 * only a store that cannot be read fails the whole open.  The caller holds
 * pool_lock().  Checks the database's pages too (PRAGMA quick_check), and
 * keeps what it finds for pool_failures(): the rows read back whole are
 * served.  Blocks: O(database size + devices + volumes + thin map pages).
 */
int pool_open(const char *dir, pool_meta_open_fn *open_meta, struct pool **out,
	      struct pool_error *err);
/*
 * Starts watching the thin pools, as dmeventd does: autoextend and event
 * commands (pool_monitor.c), each killed after @event_timeout_s.  The
 * daemon does, once open; an offline mapperctl does not (its command
 * would grow pools as a side effect).  0 or -errno.  pool_close() stops
 * it.
 */
int pool_watch(struct pool *p, uint32_t event_timeout_s);
/*
 * Whether @p is watched (the daemon's): background copies of mirrors and
 * moves run only then; an offline command's wait for the next daemon.
 */
bool pool_watched(const struct pool *p);
/*
 * Tells the pool the device number (st_dev) of the mount that serves its
 * volumes, before any admin request: a raw device or an origin whose
 * bytes come from it is refused (pool_device_add, create thin --origin).
 */
void pool_set_mount(struct pool *p, dev_t mount_dev);
#define POOL_EVENT_TIMEOUT_S	60	/* dmeventd-like: a hook gets a minute */
/*
 * Commits and stops every thin pool, then frees everything.  No volume may
 * be in use.
 */
void pool_close(struct pool *p);
const char *pool_dir(const struct pool *p);
struct fsid_user;
/*
 * The owner of the pool directory as the user database knows them (read
 * at open): whom a root process acts as for the pool (fsid.h).
 */
const struct fsid_user *pool_owner(const struct pool *p);

/*
 * Tries again what failed to load (raw devices, thin pools, volumes), as
 * opening does, once its cause is gone (a device back in place, an origin
 * restored), and what is served but fails (a thin volume whose origin
 * image a writer reached: served again if nobody writes it now and it is
 * as recorded); what is served and well is not touched.  Records that
 * are damaged stay failed.  *recovered and *failed count volumes and
 * devices, *failed every one that status shows failed; @still names the
 * first that is still failed, and why ("raw device 'd1' cannot be
 * opened: ..."), or is "".
 */
int pool_reload(struct pool *p, size_t *recovered, size_t *failed,
		struct pool_error *still, struct pool_error *err);

/*
 * The thread (its tid) whom the pool's operations wait for now: the one
 * that holds the admin lock, else the one adding or removing a raw
 * device (whose device I/O holds no other operation up); 0 if none.  The daemon names it to a
 * client that waits ("waiting for 'device add' (pid N)").  Never blocks.
 */
pid_t pool_busy_thread(struct pool *p);

/*
 * Calls @fn with one line per fault that keeps something out of service,
 * naming all it keeps out: "device 'd1' is failed (cannot be opened: No
 * such file or directory): thin pool 'tp' and volumes 'a', 'b' are not
 * served", "volume 'x' is not served: its origin '/img' is missing".  A
 * volume failed only because of another fault is not a line of its own.
 * First, if PRAGMA quick_check found the pool database damaged at open
 * (an index page, say, that no row read meets): "pool database
 * '/p/pool.db' is damaged: Page 8: ...".  The daemon's start-up tells
 * these; the details are in the log.
 */
void pool_failures(struct pool *p, void (*fn)(void *arg, const char *line), void *arg);

/*
 * Commits every thin pool (shutdown, or a SIGTERM).  Returns the first
 * error; each is logged.
 */
int pool_commit_all(struct pool *p);

/* ---- raw devices ----------------------------------------------------- */

/*
 * How a request's backing I/O can wait on the pool's devices: never
 * (every device is memory, tmpfs, whose I/O is a copy that never
 * sleeps); on the network only (the other devices are NBD exports,
 * whose requests the io engine parks: engine.h); or on a block (some
 * device is read and written with O_DIRECT, a disk file system or a
 * block device, where the thread sleeps).  A device not open (it may
 * come back: a server that starts later) counts as a block device.
 * Takes the admin lock; O(devices).
 */
enum pool_io { POOL_IO_MEMORY, POOL_IO_NETWORK, POOL_IO_BLOCKS };
enum pool_io pool_io_kind(struct pool *p);

struct pool_device_spec {
	const char *path;		/* absolute */
	const char *name;		/* NULL: the file name of path */
	uint64_t create_size;		/* bytes: create the file first; 0: it exists */
	bool force;			/* take over a device with another pool's label */
};

/*
 * Registers a raw device and writes the pool's label on it.  Blocks on
 * the device, holding up only other device adds and removes: the admin
 * lock is taken only to record and publish (pool_device.c).
 */
int pool_device_add(struct pool *p, const struct pool_device_spec *s,
		    struct device_rec *out, struct pool_error *err);
/*
 * Unregisters an unused device, then wipes its label if it is still this
 * pool's; blocks on the device as add does.
 */
int pool_device_remove(struct pool *p, const char *name, struct pool_error *err);

/* ---- volumes --------------------------------------------------------- */

/* A hand-placed piece of a linear volume. */
struct pool_segment {
	const char *arg;		/* as the user wrote it, for messages */
	const char *device;		/* its name */
	uint64_t offset;		/* bytes into the device's data area */
	uint64_t length;		/* bytes */
};

struct pool_linear_spec {
	const char *name;
	uint64_t size;			/* bytes, from the free space; or 0 and: */
	const struct pool_segment *segs;	/* placed by hand, in order */
	size_t nr_segs;
	char *const *on;		/* allocate on these devices only, in order */
	size_t nr_on;
	bool read_only;
	unsigned int mirrors;		/* extra copies, each on devices of its own */
	/*
	 * pool_create_striped's (0 for pool_create_linear): stripes over
	 * this many devices (2..16), in chunks of stripe_size bytes (a power
	 * of two from 4 KiB); by size, never segments.
	 */
	uint32_t stripes;
	uint32_t stripe_size;
};

struct pool_switch_path {
	const char *arg;		/* as written, for messages */
	const char *device;
	bool owned;			/* allocate its space (else at offset) */
	uint64_t offset;		/* bytes into the data area, unless owned */
};

struct pool_switch_spec {
	const char *name;
	uint64_t size;			/* bytes */
	uint64_t region_size;		/* bytes */
	const struct pool_switch_path *paths;
	size_t nr_paths;
	bool read_only;
};

/* The ranges of a thin pool's policies, as the service checks them. */
#define POOL_AUTOEXTEND_THRESHOLD_MIN	50	/* percent used; 100: never (LVM's) */
#define POOL_AUTOEXTEND_PERCENT_MAX	1000	/* percent of its size */
#define POOL_MAX_THINS_MAX		(1u << 24)	/* thin-metadata-size --max-thins */

struct pool_thin_pool_spec {
	const char *name;
	uint64_t size;			/* bytes; rounded down to whole blocks */
	struct thin_pool_rec policy;	/* all but .volume */
	char *const *on;
	size_t nr_on;
	unsigned int mirrors;		/* extra copies of its data: 0 to 3 */
};

struct pool_thin_spec {
	const char *name;
	const char *pool;		/* the thin pool's name */
	uint64_t size;			/* bytes */
	const char *origin;		/* a volume's name, an absolute path, or NULL */
	bool read_only;
	/*
	 * Receive's own (pool_receive.c): @name is a staging name
	 * (POOL_STAGING_PREFIX and a valid name), and the volume is made
	 * inactive.
	 */
	bool staging;
};

/* Each fills @out (may be NULL) with the volume as created. */
/* Bytes/s a mirror's resync or rebuild, or a move's copy, takes by default. */
#define POOL_SYNC_RATE	(256ull << 20)

/*
 * The rate of every mirror's and move's background copy from now on,
 * bytes/s (0: no limit): the daemon's -o sync_rate.  Admin lock taken.
 */
void pool_set_sync_rate(struct pool *p, uint64_t bytes_per_s);

/* A move of every volume off a raw device (pvmove). */
struct pool_move_spec {
	const char *device;		/* the device to empty */
	const char *to;			/* where to, or NULL: any other */
	const char *volume;		/* only this volume, or NULL: all */
	bool abort;			/* end the moves off @device where they are */
};

/*
 * Starts moving every volume off @s->device (or aborts the moves): linear
 * volumes are copied online onto new extents by the daemon, which
 * finishes each move when its copy is in sync (pool_move.c); a mirror's
 * leg there is replaced.  *started: volumes started (or aborted).
 * Refused, naming them, if any volume there cannot move.
 */
int pool_move(struct pool *p, const struct pool_move_spec *s, unsigned int *started,
	      struct pool_error *err);

/*
 * Takes the failed legs of mirror @name back whose devices answer again
 * (lvchange --refresh): each catches up in the background on the regions
 * written while it was away.  *readded: legs taken back.  -ENODEV if a
 * failed leg's device is not open, and none could be taken back.
 */
int pool_refresh(struct pool *p, const char *name, unsigned int *readded,
		 struct pool_error *err);

/*
 * Rebuilds the leg of mirrored volume @name that lies on device
 * @leg_device on new extents carved from device @to_device, online: the
 * old leg is failed in the mirror's log, the store swaps the extents, and
 * the mirror rebuilds the new leg in the background.  -EBUSY if the leg
 * is the last in sync.
 */
int pool_replace_leg(struct pool *p, const char *name, const char *leg_device,
		     const char *to_device, struct pool_error *err);
int pool_create_linear(struct pool *p, const struct pool_linear_spec *s,
		       struct volume_rec *out, struct pool_error *err);
/* A striped linear volume (dm-stripe, lvcreate -i -I; pool_stripe.c). */
int pool_create_striped(struct pool *p, const struct pool_linear_spec *s,
			struct volume_rec *out, struct pool_error *err);
int pool_create_switch(struct pool *p, const struct pool_switch_spec *s,
		       struct volume_rec *out, struct pool_error *err);
int pool_create_thin_pool(struct pool *p, const struct pool_thin_pool_spec *s,
			  struct volume_rec *out, struct pool_error *err);
int pool_create_thin(struct pool *p, const struct pool_thin_spec *s,
		     struct volume_rec *out, struct pool_error *err);
/* A snapshot to take: thin volume @origin's content as new volume @name. */
struct pool_snapshot_pair {
	const char *origin;
	const char *name;
};

struct pool_snapshot_spec {
	const struct pool_snapshot_pair *pairs;
	size_t nr;			/* > 1: a group, taken at one instant */
	bool active;			/* in the mount at once (else inactive, LVM's default) */
	bool read_only;
	bool staging;			/* receive's own: the names are staging names */
};

/*
 * O(1) snapshots of thin volumes, online.  Every origin is suspended
 * before any is shared and resumed after all are recorded, so a group's
 * snapshots agree with each other; all are recorded in one transaction:
 * all or nothing.  @out (may be NULL) gets the @nr new volumes.
 */
int pool_snapshot(struct pool *p, const struct pool_snapshot_spec *s,
		  struct volume_rec *out, struct pool_error *err);
/* Gives thin volume @name (not open) the content of @snap. */
int pool_rollback(struct pool *p, const char *name, const char *snap,
		  struct pool_error *err);
/*
 * Grows volume @name to @size bytes (a thin pool by whole blocks, taking
 * the space from @on, or from any device).  Fills @out with the result.
 */
int pool_extend(struct pool *p, const char *name, uint64_t size,
		char *const *on, size_t nr_on, struct volume_rec *out,
		struct pool_error *err);
/*
 * Shrinks volume @name to @size bytes (lvreduce): 0 < @size < its size,
 * a multiple of 4 KiB (a striped volume rounds it up to whole rows); the
 * bytes past it are lost.  Refused (-EBUSY) while a file on it is open,
 * which it stays closed to meanwhile; refused for a read-only volume, one
 * that a thin volume reads as its origin, and kinds that cannot shrink
 * (-EOPNOTSUPP: switch volumes, thin pools).  Linear and striped volumes
 * free their extents past it, thin volumes unmap their blocks there.
 * Fills @out with the result.
 */
int pool_reduce(struct pool *p, const char *name, uint64_t size, struct volume_rec *out,
		struct pool_error *err);
/*
 * The life cycle of a volume (pool_volume.c), online.  Rename: open
 * files keep working; the new name shows in the mount at once.
 * Read-only: writes in flight finish, later writes and discards fail with
 * EROFS, opening the file for writing too.  Activation (LVM's): an
 * inactive volume is not a file in the mount, so it cannot be opened;
 * deactivating an open one is refused (-EBUSY).  Its records, extents
 * and map stay.  Thin pools are neither read-only nor inactive (-EINVAL).
 */
int pool_rename(struct pool *p, const char *name, const char *new_name,
		struct pool_error *err);
int pool_set_read_only(struct pool *p, const char *name, bool read_only,
		       struct pool_error *err);
/*
 * Whether a truncate of the volume's file may shrink the volume
 * (pool_truncate): the administrator's consent, recorded, off for a new
 * volume.  Online; -EINVAL for a thin pool, -ENOENT for no such volume,
 * -EOPNOTSUPP to allow it on a mirror (a truncate cannot shrink one).
 */
int pool_set_allow_shrink(struct pool *p, const char *name, bool allow,
			  struct pool_error *err);
int pool_activate(struct pool *p, const char *name, bool active, struct pool_error *err);
/*
 * Adds tags @add and removes tags @del (LVM's --addtag, --deltag) of the
 * volume or thin pool (@on TAG_ON_VOLUME), or the device (TAG_ON_DEVICE),
 * @name, failed or not, in one transaction, online; removals first, so a
 * tag both removed and added stays.  Adding a tag it carries or removing
 * one it does not is no error.  -EINVAL naming a tag that breaks the rule
 * (tags.h), before anything is looked at; -ENOENT for no such owner.
 */
int pool_tag(struct pool *p, enum tag_owner on, const char *name,
	     char *const *add, size_t nr_add, char *const *del, size_t nr_del,
	     struct pool_error *err);

/* ---- exports: volumes served over NBD (pool_export.c) ------------------ */

/* How an export fares, as the daemon last said (pool_export_set_state). */
enum pool_export_state {
	POOL_EXPORT_STOPPED,		/* no daemon serves the pool */
	POOL_EXPORT_SERVING,		/* its nbdkit runs */
	POOL_EXPORT_RESTARTING,		/* its nbdkit exited; started again soon */
	POOL_EXPORT_FAILED,		/* it cannot be started (reason); tried again */
};

/* "stopped", "serving", "restarting", "failed". */
const char *pool_export_state_name(enum pool_export_state s);

/* Room for any pool_export_uri(): a socket path, a key file's, an identity. */
#define POOL_EXPORT_URI_MAX	(2 * PATH_MAX)

struct pool_export_info {
	struct export_rec rec;
	char uri[POOL_EXPORT_URI_MAX];	/* pool_export_uri() of rec */
	char volume[POOL_NAME_MAX + 1];	/* its volume's name */
	bool served;			/* its volume's file is in the mount */
	enum pool_export_state state;
	int pid;			/* its nbdkit's, or 0 */
	char reason[POOL_ERROR_LEN];	/* why restarting or failed, or "" */
};

/*
 * Exports volume @name over NBD where @e says (its volume and
 * tls_identity are not read, and are set as recorded): records it, for
 * the daemon to serve while it runs (fs/exporter.c).  Checks first, in
 * one line each: the volume exists, is a file (not a thin pool), is
 * active, not failed, and not exported; the address is no other
 * export's; a Unix path is absolute, short enough for a socket, in a
 * directory that exists, and nothing is there yet; a TCP address is
 * numeric with a port, and free now (a listening socket is made and
 * closed); a TLS key file passes psk_file_open for the pool's owner.
 * Blocks on the store.  0, or -ENOENT, -EINVAL, -EEXIST, -EADDRINUSE,
 * -EADDRNOTAVAIL, -EPERM (key file), -EBUSY (store), -errno.
 */
int pool_export(struct pool *p, const char *name, struct export_rec *e,
		struct pool_error *err);
/* Stops exporting volume @name.  -ENOENT: no such volume, or not exported. */
int pool_unexport(struct pool *p, const char *name, struct pool_error *err);

/*
 * Every export, with its volume's name and state, by volume id; *out
 * malloc'ed (free()), NULL and 0 when none.  Takes the admin lock.
 * 0 or -ENOMEM.
 */
int pool_exports(struct pool *p, struct pool_export_info **out, size_t *nr);

/*
 * The host says how volume @volume's export fares: its state, its
 * nbdkit's @pid (0: none) and @reason (NULL: none).  Nothing if it is no
 * longer exported.  Takes the admin lock.
 */
void pool_export_set_state(struct pool *p, int64_t volume, enum pool_export_state s, int pid,
			   const char *reason);

/*
 * The NBD URI of @e in @buf: "nbd+unix:///?socket=PATH", "nbd://ADDR:PORT",
 * or with TLS "nbds://IDENTITY@ADDR:PORT/?tls-psk-file=FILE" (and
 * nbds+unix), as libnbd's clients take it.
 */
void pool_export_uri(const struct export_rec *e, char *buf, size_t len);

/*
 * A volume file's truncate to @size bytes (the daemon's setattr): its own
 * size does nothing; a larger one grows the volume as pool_extend does
 * (-ENOSPC where there is no room), but to exactly @size: for a striped
 * volume one that is not whole rows is -EINVAL, not rounded up; a
 * read-only one -EROFS.  A smaller
 * one shrinks the volume as pool_reduce does where the volume allows it
 * (pool_set_allow_shrink), though the truncating file has it open:
 * @holds of its holders are the truncate's own (its request's, its
 * file's), and another one is -EBUSY; a mirror is -EOPNOTSUPP, a volume
 * being moved -EBUSY, a size that is not a multiple of 4 KiB (of a
 * striped volume's row) -EINVAL, and reduce's own refusals stand.  Where
 * it is not allowed, a smaller size is refused (-EPERM: a file only
 * grows, and the message says how to allow it and that pool_reduce
 * shrinks), unless all it would cut off is zeros the daemon knows of
 * (volume.h: zeros_from): then it does nothing and succeeds.
 * A refusal's message starts with "volume 'NAME'", for the daemon's log.
 * Volume @id as the mount shows it.  Blocks on the admin lock, and a
 * shrink on the devices and the store.
 */
int pool_truncate(struct pool *p, int64_t id, uint64_t size, int holds,
		  struct pool_error *err);

/*
 * Records when each volume was last written (their files' mtime), for
 * the next start, if any was.  pool_close() does; failures are logged.
 */
void pool_record_times(struct pool *p);

/*
 * Server-side copy (copy_file_range on the mount): up to @len bytes of
 * volume @src at @src_off to volume @dst at @dst_off, clipped to both.
 * Between thin volumes of one pool whose offsets sit alike in their
 * blocks, whole blocks are shared, not copied (no space, no data moved;
 * the first write to either copies); the rest is read and written with
 * engine @e (the caller's thread's), at most 64 MiB per call, except the
 * source's holes, and the whole blocks of a thin @dst that read zeros:
 * @dst is discarded there (it reads zeros; a thin @dst allocates
 * nothing).  @how counts the bytes done, by how (short is fine:
 * call again).  The caller holds both volumes (open files).  Takes the
 * admin lock while it shares, never while it copies: call outside any
 * RCU read section.  0 (with bytes done unless the range is empty), or
 * -errno: -EROFS (@dst read-only), -ENOSPC, -EIO.
 */
struct pool_copied {
	uint64_t shared;	/* of blocks the source maps, shared: not copied */
	uint64_t copied;	/* read and written */
	uint64_t holes;		/* holes of the source, left holes in the destination */
	uint64_t zeros;		/* data that read zeros: whole blocks of a thin
				 * destination, discarded, not written */
};
struct engine;
struct volume;
int pool_clone_range(struct pool *p, struct volume *src, uint64_t src_off,
		     struct volume *dst, uint64_t dst_off, uint64_t len,
		     struct engine *e, struct pool_copied *how);
/*
 * `mapperctl clone SRC DST`: the first size(SRC) bytes of volume DST
 * (which must exist: -ENOENT says so) become SRC's, as pool_clone_range
 * does it (DST at least as large; the rest of DST stays).  Online or
 * offline; DST is held alone meanwhile (volume_hold_alone): -EBUSY while
 * a file is open on it, and it cannot be opened until the copy is done.
 * @how counts the bytes of SRC by how they were done.
 */
int pool_clone(struct pool *p, const char *src, const char *dst, struct pool_copied *how,
	       struct pool_error *err);

/* Deletes volume @name (not open) and frees what only it used. */
int pool_remove(struct pool *p, const char *name, struct pool_error *err);

/*
 * Applies dm-switch's set_region_mappings arguments to switch volume
 * @name, all or nothing; *changed counts the regions that changed path,
 * *nr_regions the volume's regions.
 */
int pool_switch_map(struct pool *p, const char *name, size_t argc,
		    char *const *argv, uint64_t *changed, uint64_t *nr_regions,
		    struct pool_error *err);
/* Writes switch volume @name's table as mappings to @f. */
int pool_switch_dump(struct pool *p, const char *name, FILE *f,
		     struct pool_error *err);

/* The policies of a thin pool that change can set. */
enum pool_thin_pool_fields {
	POOL_TP_DISCARD_PASSDOWN	= (1 << 0),
	POOL_TP_AUTOEXTEND_THRESHOLD	= (1 << 1),
	POOL_TP_AUTOEXTEND_PERCENT	= (1 << 2),
	POOL_TP_METADATA_LIMIT		= (1 << 3),	/* 0: the estimate */
	POOL_TP_ON_EVENT		= (1 << 4),	/* "": none */
	POOL_TP_WHEN_FULL		= (1 << 5),	/* wait and wait_seconds */
	POOL_TP_LOW_WATER		= (1 << 6),
	POOL_TP_ZERO			= (1 << 7),
};

/*
 * Sets the @fields of thin pool @name from @policy, online (lvchange's
 * job), each taking effect at once on the running pool: a writer waiting
 * for space fails when the pool turns to error, the low-water flag
 * follows a new mark, zeroing applies to the next block filled.  A
 * metadata limit below what its maps take is refused.  Fills @out with
 * the policies as they are now.
 */
int pool_change_thin_pool(struct pool *p, const char *name,
			  const struct thin_pool_rec *policy, unsigned int fields,
			  struct thin_pool_rec *out, struct pool_error *err);

/* ---- thin pool administration (thin-provisioning-tools' jobs) -------- */

enum pool_dump_format {
	POOL_DUMP_XML,			/* thin_dump's (thin_image.h) */
	POOL_DUMP_JSON,			/* the same tree as JSON */
};

/*
 * Writes the maps of thin pool @name, from a committed consistent point
 * (online: the pool commits and holds its commits during the read), to
 * @out: superblock, devices (dev_id = volume id, plus their name and
 * size), single and range mappings; @what says what it holds and what
 * it could not.  Refuses a failed pool or maps that break an invariant
 * (repair first).  O(pages + mapped blocks).
 */
struct pool_dumped {
	size_t nr_volumes;		/* devices in the dump */
	/*
	 * Volumes that read an external origin where they have not written:
	 * thin_dump's XML has no place for it, so restored they read zeros
	 * there.  How many, and the first one's name.
	 */
	size_t nr_external;
	char first_external[256];
};
int pool_thin_dump(struct pool *p, const char *name, enum pool_dump_format format,
		   FILE *out, struct pool_dumped *what, struct pool_error *err);
/*
 * Creates thin volumes and their maps in thin pool @name (running, with
 * no volumes) from thin_dump XML read from @xml: data block numbers are
 * the pool's blocks, whose content stays; the dump's pool may be larger
 * if every mapping fits @name.  Volumes take the names and sizes given in
 * @s, else the XML's name/size attributes, else "thin<dev_id>" and the
 * end of their last mapping (a device that maps nothing and has no size
 * is refused); a snapshot_of attribute that names a device of the dump
 * is restored as the volume's origin.  @report gets a line per volume;
 * with @dry_run nothing else happens.  All or nothing: one store
 * transaction, then the pool is started again from it.
 */
struct pool_restore_volume {
	uint64_t dev_id;
	const char *name;		/* NULL: the XML's, or thin<dev_id> */
	uint64_t size;			/* bytes; 0: the XML's, or its mappings' end */
};

struct pool_restore_spec {
	FILE *xml;
	bool dry_run;
	bool force;			/* map data blocks that are holes (they read zeros) */
	const struct pool_restore_volume *vols;	/* names and sizes given */
	size_t nr_vols;
};

int pool_thin_restore(struct pool *p, const char *name, const struct pool_restore_spec *s,
		      void (*report)(void *arg, const char *line), void *arg,
		      struct pool_error *err);
/*
 * Rebuilds the maps of thin pool @name from the pages that can be read,
 * dropping what cannot; @report gets each lost range, per volume by name,
 * and a summary.  Its volumes must be closed.  The pool is served again
 * after (a failed one comes back into service).
 */
int pool_thin_repair(struct pool *p, const char *name,
		     void (*report)(void *arg, const char *line), void *arg,
		     struct pool_error *err);
/* Discards every free block of thin pool @name (thin_trim); *bytes done. */
int pool_thin_trim(struct pool *p, const char *name, uint64_t *bytes,
		   struct pool_error *err);
/*
 * The metadata a thin pool of @pool_size bytes in blocks of @block_size
 * with up to @max_thins volumes needs at most (thin_metadata_size's job),
 * in *bytes: the default of a pool's metadata limit uses it.  Pure.
 * -EINVAL, or -EFBIG for a pool larger than a thin pool may be.
 */
int pool_thin_metadata_size(uint64_t block_size, uint64_t pool_size, uint64_t max_thins,
			    uint64_t *bytes, struct pool_error *err);

/* ---- send and receive (pool_send.c, pool_receive.c) ------------------ */

/*
 * Where a receive stages what it applies (pool_receive.c): a thin volume
 * named so, which no name a person gives can be, inactive.
 */
#define POOL_STAGING_PREFIX	".recv."

/*
 * Who waits for a send or a receive, asked as often as the daemon's stop
 * is (SEND_POLL_MS) while the stream flows or waits on its pipe: gone()
 * true ends the stream as a stop does (the daemon's client, mapperctl,
 * was killed: its command ends with it, as a local one would).
 */
struct pool_stream_caller {
	bool (*gone)(void *arg);
	void *arg;
};

struct pool_send_spec {
	const char *name;		/* the thin volume to send */
	const char *since;		/* a snapshot to send the changes since, or NULL */
	/*
	 * 0, or the byte of the stream where a receive cut short stopped:
	 * only the rest is written (SEND_RESUMED), the stream before it
	 * read and summed all the same, so that its checksums hold.
	 */
	uint64_t resume_at;
	int fd;				/* where the stream goes; blocking */
	const struct pool_stream_caller *caller;	/* or NULL: none that can go */
};

/* What a send or a receive carried. */
struct pool_streamed {
	bool incremental;
	uint64_t bytes;			/* of the stream */
	uint64_t records;		/* data and hole records */
	uint64_t data_bytes;		/* volume bytes carried as data */
	uint64_t hole_bytes;		/* volume bytes carried as holes */
	uint64_t resumed_at;		/* stream bytes sent or applied before, or 0 */
	char base[POOL_NAME_MAX + 1];	/* receive: the base's name here, or "" */
};

/*
 * Writes thin volume @s->name to @s->fd as a send stream
 * (core/util/send_stream.h): every mapped range, or with @s->since only
 * the blocks whose mapping differs from that snapshot's (pool_diff), as
 * data where the volume maps them and holes where it no longer does.
 * The volume is held alone meanwhile, so it must not be open (-EBUSY:
 * send a snapshot of a volume in use), and cannot be opened until the
 * send ends.  Streams: memory stays one chunk whatever the size.  Blocks
 * on the volume's reads and on @s->fd (a pipe's reader) for as long as
 * they take; the admin lock only while it looks up and compares maps.
 * 0 or -errno (-EPIPE: the reader went away).
 */
int pool_send(struct pool *p, const struct pool_send_spec *s, struct pool_streamed *out,
	      struct pool_error *err);

struct pool_receive_spec {
	const char *name;		/* the volume (or snapshot) to make */
	const char *thin_pool;		/* a full stream's thin pool; NULL: the only one */
	bool active;			/* in the mount at once (else inactive, as snapshots) */
	int fd;				/* the stream; blocking */
	const struct pool_stream_caller *caller;	/* or NULL: none that can go */
};

/*
 * Applies the send stream on @s->fd as new read-only thin volume
 * @s->name, all or nothing: into a staging volume (POOL_STAGING_PREFIX
 * @name; an incremental stream's a snapshot of its base, found by
 * identity), committing and recording its place every
 * POOL_RECEIVE_CHECKPOINT bytes, then in one transaction renamed to
 * @name with the sender's identity.  A stream that stops early, or a
 * daemon that stops (pool_stop_streams), leaves the staging volume and
 * its place (-ENODATA): the same receive again goes on from there.  Any
 * other failure removes it.  -EEXIST (@name exists), -ENOENT (the base
 * is not here), -EBADMSG (a malformed or corrupt stream), -ESTALE (not
 * the stream whose receive was cut short), -EBUSY (a receive of @name
 * runs), or -errno.
 */
#define POOL_RECEIVE_CHECKPOINT	(256ull << 20)
int pool_receive(struct pool *p, const struct pool_receive_spec *s, struct pool_streamed *out,
		 struct pool_error *err);
/*
 * The daemon stops: every send and receive that waits on its pipe (a
 * stalled ssh) ends within SEND_POLL_MS, a receive keeping what it applied
 * to go on from later, so that none holds the daemon.  Never blocks.
 */
void pool_stop_streams(struct pool *p);
/* Removes the staging volume of a receive of @name cut short.  -ENOENT: none. */
int pool_receive_abort(struct pool *p, const char *name, struct pool_error *err);

/* ---- reports --------------------------------------------------------- */

/*
 * Calls @fn for each run of blocks that differ between thin volumes @a and
 * @b (same pool), in units of *block_size bytes.
 */
int pool_diff(struct pool *p, const char *a, const char *b,
	      int (*fn)(void *arg, uint64_t first, uint64_t count), void *arg,
	      uint32_t *block_size, struct pool_error *err);

/*
 * Verifies the metadata of every thin pool (or of the one named): the
 * committed pages against each other and against the counts the pool
 * keeps in memory.  @breach gets each broken invariant as one line naming
 * the pool; @summary one line per pool checked.  *breaches counts them.
 */
int pool_check(struct pool *p, const char *name,
	       void (*breach)(void *arg, const char *msg),
	       void (*summary)(void *arg, const char *msg), void *arg,
	       size_t *breaches, struct pool_error *err);

/* The daemon that serves a pool, as status shows it. */
struct pool_host {
	int pid;
	const char *transport;		/* its FUSE transport */
	const char *stopping;		/* NULL, or what it still serves as it stops */
};

/*
 * Reports as JSON (json.h decides the rendering): pool_status() one
 * volume by name, or with @name NULL the pool, its devices and every
 * volume; pool_list() an array of every volume with its usage;
 * pool_devices() an array of the devices.  Failed objects carry "state":
 * "failed" and "reason".  The pool's object says whether a daemon serves
 * it, which, over which FUSE transport, and whether it is stopping
 * (@host, from the host; NULL offline).
 */
int pool_status(struct pool *p, const char *name, const struct pool_host *host,
		struct json *j, struct pool_error *err);
int pool_list(struct pool *p, struct json *j, struct pool_error *err);
int pool_devices(struct pool *p, struct json *j, struct pool_error *err);

/* A volume or device and whether it is failed, for tables. */
struct pool_volume_info {
	struct volume_rec rec;		/* .modified: the last write while served, else 0 */
	bool file;			/* a kind that is a file when active (not a thin pool) */
	char reason[POOL_ERROR_LEN];	/* "" when it is served */
	char pool[POOL_NAME_MAX + 1];	/* a thin volume's pool, or "" */
	char origin[POOL_NAME_MAX + 1];	/* what a snapshot was taken of, or "" */
	/* lvs's Data% and Meta% in hundredths of a percent, -1 if none */
	int32_t data_pct, meta_pct;
	unsigned int legs;		/* a mirror's, or 0 */
	int32_t sync_pct;		/* a mirror's Cpy%Sync in hundredths, or -1 */
	/*
	 * a thin pool's "full" or "low-water" (status's data flags), a
	 * mirror's "degraded" (a leg failed), "reconnecting" (an NBD device
	 * under it waits for its server), or NULL
	 */
	const char *condition;
	char condition_why[96];		/* what the condition is about ("leg 1 failed: ..."), or "" */
	/*
	 * A thin volume's device id, as dump numbers it (dev_id: what
	 * thin_delta and thin_ls take), or 0.
	 */
	int64_t thin_id;
	/* A served thin volume's blocks in bytes: mapped, its own, shared. */
	bool has_usage;
	uint64_t mapped_bytes, exclusive_bytes, shared_bytes;
	uint32_t block_size;		/* a thin pool's, bytes; 0 for other kinds */
	uint32_t stripes;		/* a striped volume's stripes, or 0 */
	uint32_t stripe_size;		/* its chunk size in bytes, or 0 */
	char when_full[24];		/* a thin pool's "error" or "wait:SECONDS", or "" */
	struct tags tags;		/* a copy, freed by pool_volume_infos_release() */
	/* Its export, or NULL; malloc'ed, freed by pool_volume_infos_release() */
	struct pool_export_info *export;
};

struct pool_device_info {
	struct device_rec rec;
	uint64_t free;			/* bytes of its data area no extent uses */
	char reason[POOL_ERROR_LEN];	/* why failed, or reconnecting (NBD), else "" */
	bool reconnecting;		/* an NBD device waiting for its server */
	struct tags tags;		/* a copy, freed by pool_device_infos_release() */
};

/*
 * Every volume / device by id; *out malloc'ed, freed with the release
 * below.  0 or -ENOMEM.  Thin figures cost a walk of each thin volume's
 * map.
 */
int pool_volume_infos(struct pool *p, struct pool_volume_info **out, size_t *nr);
int pool_device_infos(struct pool *p, struct pool_device_info **out, size_t *nr);
void pool_volume_infos_release(struct pool_volume_info *v, size_t nr);
void pool_device_infos_release(struct pool_device_info *d, size_t nr);

/* ---- the daemon's view ----------------------------------------------- */

/*
 * The served volumes, sorted by id: call inside an RCU read section, the
 * array is valid until it ends.  Never blocks.
 */
struct volset_array *pool_served(struct pool *p);

/*
 * What the host's caches of the served volumes may hold that operations
 * made untrue since the last call (pool_stale.c): calls @file with the id
 * of each served volume whose size, mode or content changed other than
 * through its file (extend, set --read-only, switch map, clone into it,
 * rollback, restore, repair), then @name with each name that stopped
 * naming what it named in the mount (renamed, removed, deactivated), and
 * forgets them.  After more than POOL_STALE_MAX changes, @file is called
 * with every served volume, and the names past the limit are not told
 * (the host's name caches must expire).  Nothing noted, nothing called:
 * a report costs nothing.  Callers take turns: one returns once what it
 * took was told.  The callbacks run outside any RCU read section and may
 * block; an operation may run meanwhile.  Never waits for the admin lock.
 */
void pool_take_stale(struct pool *p, void (*file)(void *arg, int64_t id),
		     void (*name)(void *arg, const char *name), void *arg);

struct pool_space {
	uint64_t total;			/* bytes of all data areas */
	uint64_t free;			/* bytes: unallocated + free thin blocks */
	uint32_t block_size;		/* the smallest thin block size, or 4096 */
};

/* For statfs.  Never blocks on the admin lock. */
void pool_space(struct pool *p, struct pool_space *out);

#endif
