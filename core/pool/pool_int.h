/*
 * core/pool/pool_int.h: the pool service's in-memory pool, shared by its files
 * (pool*.c, one per kind of volume) and nobody else.
 *
 * The pool holds every record of the store but the map pages, and the
 * live objects built from them: open raw devices, targets, thin pools,
 * the served volume set.  Only the admin path (under p->admin) reads or
 * changes the records and arrays here; the I/O path sees the served set
 * and the targets, which are published with RCU.  Arrays that publishing
 * grows are reserved before the store transaction, so that once a change
 * committed, showing it in memory cannot fail.
 */
#ifndef MAPPERFS_POOL_INT_H
#define MAPPERFS_POOL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fsid.h"
#include "log.h"
#include "send_stream.h"
#include "tags.h"
#include "pool.h"
#include "target_type.h"
#include "thin.h"
#include "thin_pool.h"
#include "volset.h"

struct device;
struct target;
struct thin_pool;

struct pool_device {
	struct device_rec rec;
	struct device *dev;		/* open, or NULL: failed */
	char *failure;			/* why it is not open, or NULL */
	struct tags tags;		/* as recorded (pool_tag.c) */
	/* Where its next layout copy goes: not its last good one's slot; dev_lock. */
	unsigned int layout_slot;
};

/* What the monitor saw of a thin pool last time (its watch hook, pool_thin.c). */
struct pool_thin_events {
	struct thin_pool_raised raised;	/* of the running thin pool, as last seen */
	uint64_t extend_failed_ms;	/* last autoextend that failed, or 0 */
};

struct pool_volume {
	struct volume_rec rec;
	const struct target_type *type;
	struct volume *served;		/* its served volume, or NULL */
	bool published;			/* served is in the served set */
	char *failure;			/* why it is not served, or NULL */
	bool broken;			/* its records are: reloading cannot help */
	struct tags tags;		/* as recorded (pool_tag.c) */
	struct {			/* mirrored: linear, thin-pool */
		char *new_log;		/* its log's name until recorded, or NULL */
	} mirror;
	union {
		struct stripe_rec stripe;	/* linear, striped (pool_stripe.c) */
		struct {		/* switch */
			struct switch_rec rec;
			struct switch_path_rec *paths;
		} sw;
		struct {		/* thin-pool */
			/*
			 * Its row, never NULL once attached or created: behind a
			 * pointer because its event command makes it 4 KiB, which
			 * every volume of a pool of 100,000 would carry.
			 */
			struct thin_pool_rec *rec;
			struct thin_pool *pool;		/* running, or NULL */
			struct target *data;		/* its data area, while running */
			const struct thin_meta_ops *ops;
			void *arg;			/* the port's, while open */
			struct pool_thin_events ev;	/* the monitor's */
		} tp;
		struct {		/* thin */
			struct thin_rec rec;	/* .dir as recorded: commits move it */
			struct thin_origin_rec *origin;	/* or NULL */
			/* Its origin image while served (the target owns it), or NULL. */
			struct target *image;
			/* Why reload could not lift the image's fence, or NULL. */
			char *unfence_failure;
			/* Its usage as pool_thin_usage_gather found it, if known. */
			struct thin_usage usage;
			bool usage_known;
		} thin;
	};
};

/*
 * What the host's caches may hold that operations made untrue, since it
 * last asked (pool_stale.c, whose lock guards it).
 */
#define POOL_STALE_MAX	64
struct pool_stale {
	struct {
		int64_t id;			/* a volume's file, or -1: */
		char name[POOL_NAME_MAX + 1];	/* a name in the mount ("" for a file) */
	} v[POOL_STALE_MAX];
	unsigned int nr;
	bool overflow;			/* more were noted: every served volume */
};

/* The running thin pools, for pool_space() from any thread (RCU). */
struct pool_thins {
	size_t nr;
	struct thin_pool *v[];
};

struct pool {
	char *dir;
	uint64_t sync_rate;		/* bytes/s of mirrors' background copies; 0: no limit */
	struct uuid uuid;
	struct pool_meta *meta;
	pthread_mutex_t admin;		/* one operation at a time: pool_admin_lock() */
	_Atomic pid_t admin_tid;	/* the thread that holds it, or 0 */
	/*
	 * Device add and remove, one at a time, across their device I/O,
	 * which the admin lock must not wait for (pool_device.c).
	 */
	pthread_mutex_t dev_lock;
	_Atomic pid_t dev_lock_tid;	/* the thread that holds it, or 0 */

	struct pool_device **devs;	/* by id; changes under admin and dev_lock */
	size_t nr_devs, cap_devs;
	struct pool_volume **vols;	/* by id */
	size_t nr_vols, cap_vols;
	struct extent_rec *ext;		/* every extent, by volume then seq */
	size_t nr_ext, cap_ext;

	struct volset served;
	struct pool_stale stale;
	struct pool_thins *_Atomic thins;
	_Atomic uint64_t space_total;	/* bytes of all data areas */
	_Atomic uint64_t space_free;	/* bytes allocation can take (space.h) */

	struct pool_monitor *monitor;	/* autoextend and events */
	_Atomic bool streams_stopped;	/* pool_stop_streams: sends and receives end */
	dev_t mount_dev;		/* st_dev of the daemon's mount, or 0 */
	/* The pool directory's owner: whom hooks, origins and its commands act as. */
	struct fsid_user owner;
	/* The layout's number, copies and archive (pool_layout.c). */
	uint64_t layout_seq;		/* of the store's layout; admin */
	char *layout_unwritten;		/* its text, not yet on the devices; admin */
	size_t layout_unwritten_len;
	/*
	 * Its records (the text after the "layout" line) as the last change
	 * read them back, or NULL: the next change archives these under a
	 * header of its own instead of reading the layout back again; admin.
	 */
	char *layout_records;
	size_t layout_records_len;
	/* Their entry being written by a thread of its own, or NULL; admin. */
	struct pool_archiver *archiver;
	uint64_t layout_written;	/* newest copy written; dev_lock */
	uint64_t layout_fitted;		/* newest copy that fitted a device's area; dev_lock */
	/*
	 * The devices' copies are older than the layout, which does not fit
	 * their areas even deflated (said once at warning); and the sizes of
	 * the last layout written, as text and as its copy: status shows them.
	 */
	_Atomic bool layout_stale;
	_Atomic size_t layout_text_bytes;
	_Atomic size_t layout_copy_bytes;
	bool layout_frozen;		/* no copy, archive entry or number (pool_open_frozen) */
	/*
	 * The daemon's copier: a thread that writes the newest layout to the
	 * devices, so that no change waits on a device (pool_layout.c).
	 */
	struct pool_copier *copier;	/* NULL: copies are written inline */
	/*
	 * The exports (pool_export.c), by volume id, and how each fares as
	 * the host said; admin.  Their volume and served fields are filled
	 * only in copies (pool_exports).
	 */
	struct pool_export_info *exports;
	size_t nr_exports;
	/* What PRAGMA quick_check found at open: the first problem, how many. */
	char *damage;			/* NULL: none */
	size_t nr_damage;
};

/*
 * Takes and lets go of the admin lock, which every operation holds while
 * it reads or changes the pool; the holder is noted for
 * pool_busy_thread().
 */
void pool_admin_lock(struct pool *p);
void pool_admin_unlock(struct pool *p);


/* ---- lookups (admin path) --------------------------------------------- */

struct pool_volume *pool_volume_by_name(struct pool *p, const char *name);
struct pool_volume *pool_volume_by_id(struct pool *p, int64_t id);
struct pool_device *pool_device_by_name(struct pool *p, const char *name);
struct pool_device *pool_device_by_id(struct pool *p, int64_t id);
/*
 * Whether @d is an NBD device that lost its connection and has none yet;
 * if so, and @why is not NULL, what happened and when, in @why.
 */
bool pool_device_reconnecting(const struct pool_device *d, char *why, size_t len);
/*
 * Checks TLS key file @path as the pool takes one (psk_file.h: the pool
 * owner's or root's, nobody else's, parses) and puts its first identity
 * in @identity (PSK_IDENTITY_MAX + 1 bytes): an export's (pool_export.c)
 * or an NBD device's.  0, or -errno with "TLS key file '...' ..." in @err.
 */
int pool_check_psk(struct pool *p, const char *path, char *identity, struct pool_error *err);

/*
 * Finds volume @name for an operation: -ENOENT "no volume 'x'", and, when
 * @kind is not NULL, -EINVAL unless it is of that type.  Failed volumes
 * are refused with their reason unless @failed_ok.  A receive's staging
 * volume (POOL_STAGING_PREFIX) is refused, -EBUSY, saying what it is:
 * only the receive changes it, so that what it applied is what the
 * stream said (pool_receive.c).
 */
int pool_volume_get(struct pool *p, const char *name,
		    const struct target_type *kind, bool failed_ok,
		    struct pool_volume **out, struct pool_error *err);
/*
 * The same, a staging volume included: for the receive itself, and for
 * what only reads (status, check).
 */
int pool_volume_get_staged(struct pool *p, const char *name,
		    const struct target_type *kind, bool failed_ok,
		    struct pool_volume **out, struct pool_error *err);

/*
 * Everything that takes space on the devices: every extent, every range a
 * volume uses without owning it (its type's placed hook: a switch path
 * placed by hand, with seq POOL_PLACED_SEQ + its index), and @extra (a
 * plan).  Free space, allocation, placement by hand and check all go by
 * it, so nothing lands on a range in use.  *out malloc'ed (not NULL);
 * 0 or -ENOMEM.
 */
#define POOL_PLACED_SEQ	(1u << 31)
/*
 * A mirrored volume's extents are numbered leg by leg: leg k's from
 * k * POOL_LEG_SEQ on (pool_mirror.c).  A volume of one leg is leg 0.
 * Below it, a striped volume's stripes (records.h: STRIPE_SEQ_SHIFT).
 */
#define POOL_LEG_SEQ	(1u << 28)
/*
 * Where a volume being moved off a device (pool_move.c) is going: pieces
 * numbered POOL_MOVE_SEQ + (source device id << 16) + i, in volume order,
 * counted in no leg (POOL_LEG_MOVE).
 */
#define POOL_MOVE_SEQ	(1u << 30)
#define POOL_MOVE_DEVICE_MAX	((1 << 14) - 1)	/* source device ids a seq can carry */
#define POOL_LEG_MOVE	255u

static inline unsigned int pool_extent_leg(const struct extent_rec *e)
{
	if (e->seq >= POOL_PLACED_SEQ)
		return 0;
	return e->seq >= POOL_MOVE_SEQ ? POOL_LEG_MOVE : e->seq / POOL_LEG_SEQ % 4;
}

static inline int64_t pool_move_source(const struct extent_rec *e)
{
	return (int64_t)((e->seq - POOL_MOVE_SEQ) >> 16);
}
int pool_used(struct pool *p, const struct extent_rec *extra, size_t nr_extra,
	      struct extent_rec **out, size_t *nr);

/* @v's extents: a slice of p->ext.  *nr is 0 when it has none. */
const struct extent_rec *pool_extents_of(struct pool *p, int64_t volume,
					 size_t *nr);

/*
 * Resolves device names (each may be a comma list) to distinct open
 * devices in the order given; *out malloc'ed (NULL and 0 for none).
 */
int pool_devices_named(struct pool *p, char *const *names, size_t nr_names,
		       struct pool_device ***out, size_t *nr,
		       struct pool_error *err);

/* ---- the store -------------------------------------------------------- */

/*
 * Runs @record(@arg) inside one store transaction and commits it; on any
 * error rolls back and sets @err ("cannot <doing>: ...").  Blocks on the
 * store (the busy timeout is the retry); no device I/O may happen in
 * @record.
 */
int pool_record(struct pool *p, const char *doing,
		int (*record)(struct pool *p, void *arg), void *arg,
		struct pool_error *err);
/*
 * pool_record without the layout's archive entry and device copies: for
 * the volumes' last-write times, which change no layout worth keeping.
 */
int pool_record_unarchived(struct pool *p, const char *doing,
			   int (*record)(struct pool *p, void *arg), void *arg,
			   struct pool_error *err);
/* "cannot <doing>: the pool database is locked by another process" ... */
int pool_store_fail(struct pool_error *err, int r, const char *doing);

/*
 * The pool directory @dir, made (mkdir -p, 0700) if missing: it must be
 * this user's and writable by nobody else.  init and recover.
 */
int pool_dir_make(const char *dir, struct pool_error *err);
/*
 * pool_open, but keeping no layout, at open or after: no device copy, no
 * archive entry, no new number (recover's own open, which a failure
 * undoes, and whose success the next open writes out).
 */
int pool_open_frozen(const char *dir, pool_meta_open_fn *open_meta, struct pool **out,
		     struct pool_error *err);

/* ---- the layout: archive and device copies (pool_layout.c) ---------- */

struct layout;
/* The store's layout: records and switch tables.  0 or -errno. */
int pool_layout_load(struct pool_meta *m, struct layout *out);
/* @l as text (malloc'ed).  0 or -ENOMEM. */
int pool_layout_text(const struct layout *l, char **text, size_t *len);
/*
 * Writes @len bytes of @text as archive entry @seq of the pool in
 * @pool_dir (POOL/archive/SEQ.layout, whole or not at all), then prunes
 * old entries.  0 or -errno.
 */
int pool_archive_write(const char *pool_dir, uint64_t seq, const char *text, size_t len);
/*
 * pool_record's: archive the layout before a change (waiting for the
 * entry pool_layout_archive_start began, if it did); number the new one
 * after.
 */
void pool_layout_before(struct pool *p);
/*
 * Begins the archive entry of a change that pool_record will record, on a
 * thread of its own, so that its writes and fsyncs run while the change
 * does what must come before its transaction (a thin pool's commit of
 * what is pending: a flush of the data devices and a commit of its
 * pages); pool_record still waits for it before the transaction.  Only
 * when the last change's records are kept (no read of the store, which
 * the change is using); otherwise pool_record writes it.  Admin lock
 * held.  Does not block.
 */
void pool_layout_archive_start(struct pool *p);
/*
 * Waits for the entry pool_layout_archive_start began, if any (a failure
 * is said at warning): whether there was one.  Blocks on the archive's
 * fsyncs.  Admin lock held.
 */
bool pool_layout_archive_wait(struct pool *p);
void pool_layout_after(struct pool *p);
/*
 * The store's layout changed, or may have, without a new number
 * (pool_record_unarchived): the next archive entry reads it back.
 */
void pool_layout_forget(struct pool *p);
/*
 * Writes layout @seq (@len bytes of @text, freed) on every open device,
 * under the device lock, unless a newer one was written, then prunes the
 * archive.  Blocks on the devices; never under the admin lock.
 */
void pool_layout_flush(struct pool *p, char *text, size_t len, uint64_t seq);
/* At open: numbers the layouts from the devices' copies, rewrites stale ones. */
void pool_layout_open(struct pool *p);
/*
 * Starts the copier (the daemon, with pool_watch): from then on the copies
 * are written by a thread of their own.  Stop writes what is pending and
 * joins it (pool_close).  0 or -errno.
 */
int pool_layout_copier_start(struct pool *p);
void pool_layout_copier_stop(struct pool *p);

/* ---- publishing (cannot fail once reserved) ------------------------------- */

/* Room for @vols more volumes and @ext more extents.  0 or -ENOMEM. */
int pool_reserve(struct pool *p, size_t vols, size_t ext);
/*
 * Adds @v (committed) to the pool; serves it if it has a volume.  O(1)
 * for a volume whose id is past every other's (a new row's), plus a
 * change of the served set and a recount of the space, O(V) each.
 */
void pool_volume_publish(struct pool *p, struct pool_volume *v);
/*
 * The same for @n volumes at once, with one change of the served set
 * and one recount: restore publishes 100,000.
 */
void pool_volumes_publish(struct pool *p, struct pool_volume *const *v, size_t n);
/*
 * Puts @v's served volume in the mount (the served set) unless it is
 * inactive, failed or shown already; hide takes it out (waits for
 * readers).  0 or -ENOMEM.
 */
int pool_volume_show(struct pool *p, struct pool_volume *v);
void pool_volume_hide(struct pool *p, struct pool_volume *v);
/*
 * The same for @n volumes with one new served set and one grace period,
 * where one call each would copy the set and wait n times: a thin pool
 * of many volumes starts and stops in O(V log V).  Show: 0 or -ENOMEM
 * (none shown).
 */
int pool_volumes_show(struct pool *p, struct pool_volume *const *v, size_t n);

/*
 * Builds every volume that has no failure yet (at open), or every one
 * that failed but is not broken (@retry: reload), in build order, and
 * shows those built in the mount at once.  Admin lock held (or the pool
 * not yet shared).  Returns how many it built.
 */
size_t pool_build_volumes(struct pool *p, bool retry);

/*
 * The monitor's retry (pool_reload.c): probes each raw device that is
 * not open (device_answers, up to @probe_ms each, no lock held) and, if
 * one answers, reloads the pool (pool_reload).  Takes the admin lock;
 * call it without.  *answered: how many answered.  Returns how many
 * devices and volumes came back.
 */
size_t pool_reload_absent(struct pool *p, unsigned int probe_ms, size_t *answered);
void pool_volumes_hide(struct pool *p, struct pool_volume *const *v, size_t n);
/* A new volume's record committed as @rec: its id and times, in @v and served. */
void pool_volume_recorded(struct pool_volume *v, const struct volume_rec *rec);
/* Adds committed extents to the model. */
void pool_extents_publish(struct pool *p, const struct extent_rec *e, size_t nr);
/* Takes volume @volume's extents numbered [@first, @last] out of memory. */
void pool_extents_unpublish(struct pool *p, int64_t volume, uint32_t first, uint32_t last);
/*
 * Takes @v out of the pool and the served set, and frees it (its type's
 * release first).  Its records are gone from the store already.
 */
void pool_volume_forget(struct pool *p, struct pool_volume *v);
/* The same for @n volumes in one pass over the pool: O((V + n) log n). */
void pool_volumes_forget(struct pool *p, struct pool_volume *const *v, size_t n);
/*
 * Notes for the host (pool_take_stale) that volume @id's size, mode or
 * content changed other than through its file, or that @name no longer
 * names what it named in the mount.  Never fail; never block for long.
 */
void pool_stale_file(struct pool *p, int64_t id);
void pool_stale_name(struct pool *p, const char *name);
/* Recounts the space figures after extents or devices changed. */
void pool_space_update(struct pool *p);
/* Republishes the list of running thin pools (pool_thin.c). */
int pool_thins_update(struct pool *p);

/* ---- building --------------------------------------------------------- */

/* A zeroed volume of @type with @rec. */
struct pool_volume *pool_volume_new(const struct volume_rec *rec,
				    const struct target_type *type);
void pool_volume_free(struct pool *p, struct pool_volume *v);
/*
 * Records why @v cannot be served, and logs it once, as a detail (info):
 * what people are told is the fault behind it, once (pool_failures()).
 */
void pool_volume_failed(struct pool_volume *v, const char *why);
/* The same for records that are damaged: only a repair can help. */
void pool_volume_broken(struct pool_volume *v, const char *why);
/*
 * Wraps target @t as the served volume of @v (not yet published).
 * Takes @t, also on failure.  0 or -ENOMEM.
 */
int pool_volume_serve(struct pool_volume *v, struct target *t);

/*
 * The open devices behind @v's extents, as linear segments (or thin
 * areas, the same shape); *out malloc'ed.  -ENODEV with @err naming the
 * device that is not open.
 */
struct linear_seg;
int pool_volume_segs(struct pool *p, struct pool_volume *v,
		     const struct extent_rec *extra, size_t nr_extra,
		     struct linear_seg **out, unsigned int *nr,
		     struct pool_error *err);
/* The same for leg @leg of a mirrored volume (pool_volume_segs: leg 0). */
int pool_leg_segs(struct pool *p, struct pool_volume *v, unsigned int leg,
		  const struct extent_rec *extra, size_t nr_extra,
		  struct linear_seg **out, unsigned int *nr, struct pool_error *err);
/* The same for the extents @e[0..n), all of them, in order. */
int pool_extents_segs(struct pool *p, const struct extent_rec *e, size_t n,
		      struct linear_seg **out, unsigned int *nr, struct pool_error *err);
/* Legs of @v: 1 unless it is mirrored.  O(its extents). */
unsigned int pool_volume_legs(struct pool *p, const struct pool_volume *v);
/* The same counting @extra too (the extents of a volume being made). */
unsigned int pool_volume_legs_with(struct pool *p, const struct pool_volume *v,
				   const struct extent_rec *extra, size_t nr_extra);
/*
 * How to shrink a mirror, which neither reduce nor a truncate does yet:
 * the tail of their refusals, a format taking the mirror's --mirrors
 * (its legs - 1).
 */
#define POOL_MIRROR_SHRINK_INSTEAD "copy what it holds to a smaller mirror instead: " \
	"'mapperctl create linear NEW --size SIZE --mirrors %u', then dd its first SIZE " \
	"bytes into NEW's file (or qemu-img convert -n)"

/* ---- mirrored linear volumes (pool_mirror.c) ---- */
#define POOL_LEGS_MAX	4	/* MIRROR_LEGS_MAX */
/*
 * Carves @legs legs of @size bytes from the devices @on (all when
 * @nr_on is 0), each on devices no other leg uses: extents of leg k
 * numbered from k * POOL_LEG_SEQ, volume id 0.  *out malloc'ed.
 */
int pool_mirror_plan(struct pool *p, uint64_t size, unsigned int legs, char *const *on,
		     size_t nr_on, struct extent_rec **out, size_t *nr, struct pool_error *err);
/*
 * A mirror of @legs legs over @v's extents and @extra, in *@out: what a
 * mirrored linear volume is served on, and a mirrored thin pool's data
 * area.
 */
int pool_mirror_build(struct pool *p, struct pool_volume *v, unsigned int legs,
		      const struct extent_rec *extra, size_t nr_extra, struct target **out,
		      struct pool_error *err);
/*
 * The mirror @v runs on: a mirrored linear volume's target, a mirrored
 * thin pool's data area; NULL for none (not a mirror, or not running).
 */
struct target *pool_volume_mirror(const struct pool_volume *v);
/*
 * The monitor's pass over mirror @v: records in pool.db which legs are not
 * in sync when that changed, for a lost log to go by (pool_mirror_build).
 * Admin lock held.
 */
void pool_mirror_note_stale(struct pool *p, struct pool_volume *v);
/* Serves @v as a mirror of @legs legs over its extents and @extra. */
int pool_mirror_serve(struct pool *p, struct pool_volume *v, unsigned int legs,
		      const struct extent_rec *extra, size_t nr_extra, struct pool_error *err);
/* @v was recorded: its log takes its id's name. */
void pool_mirror_recorded(struct pool *p, struct pool_volume *v);
/* Frees what serve kept in @v; a log never recorded is deleted. */
void pool_mirror_release(struct pool_volume *v);
/* Deletes the logs (mirror, move) of removed volume @id. */
void pool_mirror_forget_log(struct pool *p, int64_t id);
/* Grows every leg of @v on its own devices to @size: the whole change. */
int pool_mirror_extend(struct pool *p, struct pool_volume *v, unsigned int legs,
		       uint64_t size, struct pool_error *err);
/*
 * Replaces the leg of mirror @v on @from by one carved on @to (NULL: on
 * devices no other leg uses).  Admin lock held.
 */
int pool_replace_leg_locked(struct pool *p, struct pool_volume *v, struct pool_device *from,
			    struct pool_device *to, struct pool_error *err);
/* Whether @v is a mirror with a leg not in sync since a failure or replace. */
bool pool_volume_degraded(struct pool *p, struct pool_volume *v);
/*
 * check's lines for mirror @v: legs not in sync and why, and its
 * write-intent log as on disk (missing, damaged, regions marked); a
 * degraded mirror is not a breach of the records.
 */
struct pool_check;
void pool_mirror_check(struct pool *p, struct pool_volume *v, unsigned int legs,
		       struct pool_check *c);
/* list's columns of mirror @v: legs, Cpy%Sync, degraded. */
void pool_mirror_info(struct pool_volume *v, unsigned int legs, struct pool_volume_info *out);
/* ---- a thin pool's data area (pool_thin_data.c) ---- */
/*
 * @tp's data area over its extents and @extra, cut to whole blocks per
 * area (a plain pool's): *@bytes of it.
 */
int pool_thin_data_segs(struct pool *p, struct pool_volume *tp, const struct extent_rec *extra,
			size_t nr_extra, struct linear_seg **out, unsigned int *nr,
			uint64_t *bytes, struct pool_error *err);
/*
 * Builds tp->tp.data over its extents and @extra, unless it was built
 * already: a mirror of its legs, or a linear target; *@bytes of it.
 */
int pool_thin_data_open(struct pool *p, struct pool_volume *tp, const struct extent_rec *extra,
			size_t nr_extra, uint64_t *bytes, struct pool_error *err);
/* Destroys tp->tp.data (after the thin pool over it closed). */
void pool_thin_data_close(struct pool_volume *tp);
/* thin_pool_type's build_over: a linear data area over @e, whole blocks each. */
int pool_thin_data_build_over(struct pool *p, struct pool_volume *tp,
			      const struct extent_rec *e, size_t n, struct target **out,
			      struct pool_error *err);
/* thin_pool_type's reload: @tp's data area runs on @t; the old one returned. */
struct target *pool_thin_data_reload(struct pool_volume *tp, struct target *t);
/* ---- moves (pool_move.c) ---- */
/* The device @v is being moved off, or -1. */
int64_t pool_move_source_of(struct pool *p, const struct pool_volume *v);
/*
 * The remove of the kinds that may be mirrored or moved: the default one,
 * then the logs of @v's mirror or move in flight deleted.
 */
int pool_remove_with_logs(struct pool *p, struct pool_volume *v, struct pool_error *err);
/* The mirror that carries @v's move in flight, in *@out. */
int pool_move_build(struct pool *p, struct pool_volume *v, struct target **out,
		    struct pool_error *err);
/* Serves @v, being moved, as the mirror that carries the move. */
int pool_move_serve(struct pool *p, struct pool_volume *v, struct pool_error *err);
/* Ends @v's move where it is: its pieces deleted, served as it was. */
int pool_move_abort(struct pool *p, struct pool_volume *v, struct pool_error *err);
/* The monitor's pass: finishes @v's move once its copy is in sync. */
void pool_move_watch(struct pool *p, struct pool_volume *v);
/* Adds "move": from, copy_percent. */
void pool_move_status(struct pool *p, struct pool_volume *v, struct json *j);
/*
 * check's summary line for @v if it is being moved: off which device, how
 * much of the copy is done (as status's copy_percent).  Not a breach.
 */
void pool_move_check(struct pool *p, struct pool_volume *v, struct pool_check *c);
/* list's Cpy%Sync of @v, being moved: how much of its copy is done. */
void pool_move_info(struct pool_volume *v, struct pool_volume_info *out);

/* Adds "mirror": legs, their states and segments, sync progress. */
void pool_mirror_status(struct pool *p, struct pool_volume *v, unsigned int legs,
			struct json *j);

/*
 * Carves @length bytes for volume @volume from @devs (all devices when
 * @nr_devs is 0), first fit, as extents numbered from @seq; *out
 * malloc'ed.  -ENOSPC with a message saying what is free.
 */
int pool_allocate(struct pool *p, int64_t volume, uint32_t seq,
		  uint64_t length, struct pool_device **devs, size_t nr_devs,
		  struct extent_rec **out, size_t *nr, struct pool_error *err);

/*
 * The same, preferring the free range at @prefer on devs[0] (UINT64_MAX:
 * none), in extents of whole @grain bytes (a thin pool's blocks; 1: any)
 * (space.h).
 */
int pool_allocate_after(struct pool *p, int64_t volume, uint32_t seq,
			uint64_t length, struct pool_device **devs, size_t nr_devs,
			uint64_t prefer, uint64_t grain, struct extent_rec **out, size_t *nr,
			struct pool_error *err);

/*
 * The first place on @d, from a SPACE_ALIGN boundary, where @length bytes
 * are free in one piece, given every range in use and @extra (a plan):
 * what a switch path needs, at create and when it moves.  0, -ENOSPC or
 * -ENOMEM.
 */
int pool_find_whole(struct pool *p, const struct pool_device *d, uint64_t length,
		    const struct extent_rec *extra, size_t nr_extra, uint64_t *offset);

/* New extents for a volume that grows. */
struct extent_plan {
	struct extent_rec *ext;		/* numbered after the volume's last; malloc'ed */
	size_t nr_ext;
};

/*
 * Plans @more bytes for @v from the devices @on (all when @nr_on is 0),
 * after its last extent, in extents of whole @grain bytes, and reserves
 * the room to publish them.
 */
int pool_plan_extents(struct pool *p, struct pool_volume *v, uint64_t more,
		      uint64_t grain, char *const *on, size_t nr_on, struct extent_plan *out,
		      struct pool_error *err);
/* Records the planned extents and @v's new @size in one transaction. */
int pool_record_extents(struct pool *p, struct pool_volume *v, uint64_t size,
			const struct extent_plan *plan, struct pool_error *err);

/* ---- shrinking (pool_reduce.c) ---------------------------------------- */

/*
 * What reducing does to a volume's extents: each entry names one extent
 * (volume, seq) and its new length, 0 for an extent that goes.
 */
struct extent_cut {
	struct extent_rec *v;		/* malloc'ed */
	size_t nr;
};

/*
 * Plans keeping the first @keep bytes of the extents @e[0..n) (in seq
 * order, as one run): the one that straddles @keep is shortened, those
 * after it go.  Appends to @c.  0 or -ENOMEM.
 */
int pool_cut_plan(const struct extent_rec *e, size_t n, uint64_t keep, struct extent_cut *c);
/*
 * @e[0..n) with @c applied (lengths changed, extents gone dropped), in a
 * malloc'ed *out.  0 or -ENOMEM.
 */
int pool_cut_apply(const struct extent_rec *e, size_t n, const struct extent_cut *c,
		   struct extent_rec **out, size_t *nr);
/* Records @c and @v's new @size in one transaction (pool_record). */
int pool_cut_record(struct pool *p, struct pool_volume *v, uint64_t size,
		    const struct extent_cut *c, struct pool_error *err);
/* Shows the committed @c in the model: the space is free at once.  Cannot fail. */
void pool_cut_publish(struct pool *p, const struct extent_cut *c);
/* linear_type's reduce hook. */
int pool_linear_reduce(struct pool *p, struct pool_volume *v, uint64_t size,
		       struct pool_error *err);
/* thin_type's reduce hook (pool_thin_reduce.c). */
int pool_thin_reduce(struct pool *p, struct pool_volume *v, uint64_t size,
		     struct pool_error *err);

/* Adds "segments": [{device, offset, length}] for @v's extents. */
void pool_report_segments(struct pool *p, struct pool_volume *v, struct json *j);

/* Opening: gives the devices and volumes loaded their tags (pool_tag.c). */
int pool_tags_attach(struct pool *p, const struct pool_meta_image *img,
		     struct pool_error *err);

/* Opening: the exports recorded, each as stopped (pool_export.c). */
int pool_exports_attach(struct pool *p, const struct pool_meta_image *img,
			struct pool_error *err);
/*
 * -EBUSY, "volume 'v' is exported (...): unexport it first", if @v is
 * exported: what takes its file away (remove, rename, deactivate) must
 * not pull it from under its nbdkit.  Admin lock held.
 */
int pool_export_refuse(struct pool *p, const struct pool_volume *v, struct pool_error *err);
/* Adds "export": {...} for @v if it is exported (status, list --json). */
void pool_report_export(struct pool *p, struct json *j, const struct pool_volume *v);
/* A malloc'ed copy of @v's export for the tables, or NULL (none, or no memory). */
struct pool_export_info *pool_export_info_of(struct pool *p, const struct pool_volume *v);
/*
 * Whether NBD URI @uri reaches one of @p's own exports (its Unix socket,
 * or its TCP address as the URI's host resolves); its volume's name in
 * @volume.  A raw device there would be the pool's own volume, reached
 * through its own mount.  May block on a name lookup; takes the admin lock.
 */
bool pool_export_named_by(struct pool *p, const char *uri, char *volume, size_t len);

/* Opening (pool_lifecycle.c): the devices first. */
int pool_devices_open(struct pool *p, const struct pool_meta_image *img,
		      struct pool_error *err);
/* Opens failed device @d again and checks it.  0 if it is open now. */
int pool_device_attach(struct pool *p, struct pool_device *d);

/* ---- thin pools ------------------------------------------------------- */

/* The limit of thin pool @tp's map pages in bytes: set, or the estimate. */
uint64_t pool_thin_metadata_limit(const struct pool_volume *tp);
/*
 * A thin pool of @size bytes in blocks of @bs bytes has at most
 * THIN_ALLOC_MAX_BLOCKS of them: create, extend and thin-metadata-size
 * refuse more in one message, naming the pool @name (NULL: none yet).
 * 0 or -EFBIG.
 */
int pool_thin_check_blocks(const char *name, uint32_t bs, uint64_t size,
			   struct pool_error *err);
/*
 * Map pages built afresh from a thin image (pool_thin_pages.c), for
 * restore and repair: a directory per device, leaves equal in content at
 * one slot shared.
 */
struct thin_image_dev;

/* A leaf: device @dev's entries at slot @slot (pool_thin_pages.c says why not the entries). */
struct image_leaf {
	int64_t id;
	const struct thin_image_dev *dev;
	uint32_t slot;
	uint64_t hash;			/* of the slot and the entries */
};

struct image_pages {
	struct thin_dir_rec *dirs;	/* one per image device */
	size_t nr_dirs;
	struct image_leaf *leaves;	/* distinct */
	size_t nr_leaves, cap_leaves;
	size_t *index;			/* hash table of leaves (index + 1) */
	size_t index_cap;
};

void image_pages_release(struct image_pages *n);
/*
 * Builds the directory of device @d, of @size bytes in blocks of
 * 1 << @shift, into @out, and its leaves into @n; ids from *next_id on.
 * O(slots + mapped blocks).  0 or -ENOMEM.
 */
int image_pages_build_dir(struct image_pages *n, const struct thin_image_dev *d, uint64_t size,
			  uint8_t shift, int64_t *next_id, struct thin_dir_rec *out);
/* Leaf @i of @n, its entries made from its device's runs.  O(entries + log runs). */
void image_pages_leaf(const struct image_pages *n, size_t i, struct thin_leaf_rec *out);
/* Passes one line of a report to @report. */
void pool_report_line(void (*report)(void *, const char *), void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * A thin volume of @size bytes in a thin pool of blocks of @bs bytes is
 * a positive multiple of 4 KiB and its map at most THIN_DIR_SLOTS_MAX
 * leaves, computed in 64 bits that no size wraps; the message names
 * thin pool @pool (NULL: the block size).  0, -EINVAL or -EFBIG.
 */
int pool_thin_check_virtual_size(const char *pool, uint32_t bs, uint64_t size,
				 struct pool_error *err);
/* Grows thin pool @tp to @size bytes (admin lock held): extend's hook. */
int pool_thin_pool_grow(struct pool *p, struct pool_volume *tp, uint64_t size,
			char *const *on, size_t nr_on, struct pool_error *err);

/*
 * Restore and repair replace a thin pool's maps in the store, then serve
 * what they wrote: retire the pool's volumes (-EBUSY naming one that is
 * open, and then none is retired), stop the pool (unpublish its volumes,
 * final commit, forget the maps), record (deleting every page the pool
 * had), start it again from the store (its volumes served anew; a failed
 * pool comes back into service).  Starting does not look for pages no
 * volume reaches, which would read every page once more: a record that
 * failed leaves them to the next opening of the pool.
 */
int pool_thin_retire_members(struct pool *p, struct pool_volume *tp, struct pool_error *err);
void pool_thin_unretire_members(struct pool *p, struct pool_volume *tp);
void pool_thin_stop(struct pool *p, struct pool_volume *tp);
/*
 * The usage of every served thin volume, found at once (thin_usage_many:
 * each page shared by snapshots walked once) and kept in each for the
 * rows of one `list`, until pool_thin_usage_forget.  Admin lock held.
 * Out of memory, nothing is kept: each row walks its own map.
 */
void pool_thin_usage_gather(struct pool *p);
void pool_thin_usage_forget(struct pool *p);
int pool_thin_start(struct pool *p, struct pool_volume *tp, struct pool_error *err);

/*
 * The monitor (pool_monitor.c), dmeventd's part: a thread that calls
 * each volume's watch hook about once a second and when kicked (a thin
 * pool's raises its events and autoextends it), and runs the event
 * commands.  Started by pool_watch, stopped by pool_close.
 */
/*
 * @retry_absent (pool_reload_absent, given by the top of the service,
 * which the monitor does not call up to) looks after raw devices that
 * are not open, every few seconds.
 */
/*
 * The open NBD devices' idle work (nbd_link_tick): idle connections
 * closed, a lost server looked for.  Admin lock held; blocks up to a
 * second per device whose server is away.
 */
void pool_devices_tick(struct pool *p);

int pool_monitor_start(struct pool *p, uint32_t event_timeout_s,
		       size_t (*retry_absent)(struct pool *p, unsigned int probe_ms,
					      size_t *answered));
/* Stops the thread; kicks are still harmless until pool_monitor_free(). */
void pool_monitor_stop(struct pool *p);
void pool_monitor_free(struct pool *p);
/* Wakes the monitor (a thin pool's notify).  Never blocks for long. */
void pool_monitor_kick(void *pool);
/*
 * Raises thin pool @tp's @event: logged at @level (what an operator
 * should make of it: a full pool is a warning), and its event command
 * queued (pool_hooks.h) with the figures now.  Nothing when no monitor
 * runs (offline: events are the daemon's), the log line only when @tp
 * has no command.
 * Admin lock held; never waits for the command.
 */
void pool_monitor_event(struct pool *p, struct pool_volume *tp, const char *event,
			enum log_level level);

/* ---- faults (pool_fault.c) ---------------------------------------------- */

/*
 * What keeps a failed volume out of service: a failed raw device (.dev),
 * or a volume failed of its own (.vol, maybe the volume itself).
 */
struct pool_fault {
	struct pool_device *dev;
	struct pool_volume *vol;
};

/* The fault behind failed volume @v, following what it needs. */
struct pool_fault pool_fault_of(struct pool *p, struct pool_volume *v);
/*
 * The volumes fault @f keeps out of service besides itself, as "thin
 * pool 'tp' and volumes 'a', 'b'" in @buf ("" if none).  Names are listed
 * whole: those that do not fit are counted ("'a', 'b' and 28 more"), in a
 * @len of POOL_ERROR_LEN - 32 or more.  Returns how many.
 */
size_t pool_fault_victims(struct pool *p, struct pool_fault f, char *buf, size_t len);
/* Calls @fn once per fault: each failed device, each volume failed of its own. */
void pool_faults(struct pool *p, void (*fn)(void *arg, struct pool_fault f), void *arg);

/* ---- checking ------------------------------------------------------- */

struct pool_check {
	bool deep;			/* walk thin maps too (check), not only records */
	struct pool_volume *only;	/* breaches of this volume only, or NULL: all */
	/*
	 * Gets every breach as a line naming its volume (@v, or NULL);
	 * @counted is false for the other volume of a breach told already.
	 */
	void (*on_breach)(struct pool_check *c, struct pool_volume *v, const char *line,
			  bool counted);
	void (*report)(void *arg, const char *line);	/* check's printers */
	void (*summary)(void *arg, const char *line);
	void *arg;
	size_t n;			/* breaches so far */
	struct pool_volume **hit;	/* volumes with a breach so far; malloc'ed */
	size_t nr_hit, cap_hit;
};

/* One breach of @v's ("volume 'x': ..."), or of the pool (@v NULL). */
void pool_breach(struct pool_check *c, struct pool_volume *v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * The other volume of the breach just told (an overlap): kept out of
 * service at open as the first one is, but neither counted nor told again.
 */
void pool_breach_also(struct pool_check *c, struct pool_volume *v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * A breach of @v's that is not why @v is failed (pages a failed thin pool
 * leaves that no volume reaches): told and counted as pool_breach's, and
 * @v's failure is told too.
 */
void pool_breach_besides(struct pool_check *c, struct pool_volume *v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Whether @v had a breach in this check that says why it is failed. */
bool pool_check_hit(const struct pool_check *c, const struct pool_volume *v);
/* A line of check's summary ("thin pool 'tp': 2 volumes, ..."). */
void pool_summary(struct pool_check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A breach unless @v's extents add up to its size. */
void pool_check_extent_sum(struct pool *p, struct pool_volume *v, struct pool_check *c);
/*
 * At open: the records part of check; a volume whose records break an
 * invariant is kept out of service (broken, the breach its reason).
 */
void pool_check_records(struct pool *p);

/* The default remove: unserve (refused while open), delete, forget. */
int pool_remove_records(struct pool *p, struct pool_volume *v,
			struct pool_error *err);

/* Validates a new volume's name: well formed and free. */
int pool_check_new_name(struct pool *p, const char *name, struct pool_error *err);
/*
 * pool_remove, and pool_extend or pool_reduce to @size, of a receive's
 * staging volume: the receive's own, which pool_volume_get refuses to
 * every other command.  0 or -errno, said in @err.
 */
int pool_remove_staging(struct pool *p, const char *name, struct pool_error *err);
int pool_resize_staging(struct pool *p, const char *name, uint64_t size,
			struct pool_error *err);
/* @name is a receive's staging volume's (pool.h, POOL_STAGING_PREFIX). */
bool pool_is_staging_name(const char *name);
/*
 * The same for a receive's staging volume (pool.h, POOL_STAGING_PREFIX):
 * @staging says which rule @name follows.
 */
int pool_check_new_name_as(struct pool *p, const char *name, bool staging,
			   struct pool_error *err);

/*
 * The identity of thin volume @v that send streams carry (pool_send.c):
 * the sender's, if @v was received (not still staged), else the pool's
 * uuid with @v's id folded into its last 8 bytes (ids are never
 * reused).  Reads the store: admin lock held.  0 or -errno.
 */
int pool_thin_identity(struct pool *p, const struct pool_volume *v, struct uuid *out);
/* The same from @v's thin_received row as read already (@received), or NULL: none. */
void pool_thin_identity_of(struct pool *p, const struct pool_volume *v,
			   const struct thin_received_rec *received, struct uuid *out);
/*
 * What ends a send or a receive early: the daemon stopping
 * (pool_stop_streams) or its caller gone.  pool_stream_stop_init makes
 * @c->cancel, the hook send_stream.h asks; @c->caller_gone then tells
 * which of the two it was.
 */
struct pool_stream_stop {
	struct send_cancel cancel;
	struct pool *p;
	const struct pool_stream_caller *caller;	/* or NULL */
	bool caller_gone;
};
void pool_stream_stop_init(struct pool_stream_stop *c, struct pool *p,
			   const struct pool_stream_caller *caller);
/* Why a stream that was cancelled (-ECANCELED) ended, one phrase. */
const char *pool_stream_stop_why(const struct pool_stream_stop *c);
/*
 * Refuses @fd, opened from @path as @what ("device", "origin"), if its
 * bytes are this pool's own: a file of the daemon's mount (directly or
 * behind a loop device: a FUSE worker reading it would wait for itself,
 * for good) or a file of the pool itself (its database, log, pid file).
 * 0, or -errno with @err set.  May block on @path's file system.
 */
int pool_check_not_own(struct pool *p, int fd, const char *path, const char *what,
		       struct pool_error *err);

#endif
