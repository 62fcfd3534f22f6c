/*
 * core/pool/target_type.h: the kinds of volume, registered as device-mapper
 * registers its target types.
 *
 * A volume's kind is a string in the store ("linear", "switch", "thin",
 * "thin-pool"); everywhere else it is the target type that string names,
 * found once when the volume is loaded or created.  A type carries the
 * hooks the pool service calls for what differs between kinds: building
 * the live objects from the records, growing, removing, and reporting.
 * So a new kind is one file with one table, and nothing compares kind
 * strings.
 *
 * Every hook runs on the admin path, under the pool's admin lock, and may
 * block.  Hooks a kind does not have are filled with defaults when the
 * types are registered, so callers never test for NULL.
 */
#ifndef MAPPERFS_TARGET_TYPE_H
#define MAPPERFS_TARGET_TYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct extent_rec;
struct json;
struct volume_rec;
struct pool;
struct pool_check;
struct pool_meta_image;
struct pool_error;
struct pool_volume;
struct pool_volume_info;
struct target;

struct target_type {
	const char *name;		/* as stored */
	/* What messages call one and several: "thin pool".  Default "volume". */
	const char *noun, *nouns;
	/*
	 * The kind in a sentence ("cannot extend switch volume 'v'"),
	 * where the stored name is a CLI word ("thin-pool").  Default: name.
	 */
	const char *words;
	bool served;			/* a file in the mount (not a thin pool) */
	/* Move can copy its extents off a device: it has build_over (set at registration). */
	bool movable;
	/*
	 * Move carves each extent it carries in one piece of the extent's
	 * length on one device, never spread over free ranges: the kind
	 * needs every extent whole (a switch path reaches the volume's size
	 * in one run).  Default false.
	 */
	bool moves_whole;
	/*
	 * Order of building at open: lower first (thin pools before their
	 * volumes, origins before the thin volumes that read them).
	 */
	unsigned int build_order;

	/*
	 * A type that refines another of the same stored name (a striped
	 * volume is stored as "linear" with a stripe row): whether the volume
	 * @rec of the store's image @img is of this type.  Default: NULL, the
	 * type of every volume of its name that no refining type claims.
	 */
	bool (*claims)(const struct volume_rec *rec, const struct pool_meta_image *img);
	/* Takes the kind's rows for @v from the store's image.  Default: none. */
	int (*attach)(struct pool_volume *v, const struct pool_meta_image *img);
	/*
	 * Builds @v's live objects from its records (the devices are open).
	 * On failure, sets @err; the service then keeps @v as failed.
	 */
	int (*build)(struct pool *p, struct pool_volume *v, struct pool_error *err);
	/*
	 * A target serving @v over the extents @e[0..n) in place of its
	 * recorded ones: leg 0, in seq order, numbered as @v's own (a
	 * striped volume's carry their stripe).  Move (pool_move.c) builds
	 * with it @v as it is and as it will be, the two legs of the mirror
	 * that carries the move, and then serves @v as it became: so the
	 * target must map every request at once, never MAP_DEFER (mirror.h).
	 * The devices must be open.  0, or -errno with @err set.  Default:
	 * none, and the kind does not move (movable false).
	 */
	int (*build_over)(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			  size_t n, struct target **out, struct pool_error *err);
	/*
	 * A move's finishing transaction makes @e[0..n) (as build_over
	 * takes them) @v's extents: what the kind records of its places
	 * besides them (a switch volume's path rows, which hold device and
	 * offset), inside that transaction, its extents as they were still
	 * in memory.  No device I/O.  0 or -errno.  Default: nothing.
	 */
	int (*record_moved)(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			    size_t n);
	/*
	 * The same in memory, once committed, before @v's extents change
	 * there and before it is reloaded onto its plain target.  Cannot
	 * fail.  Default: nothing.
	 */
	void (*publish_moved)(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			      size_t n);
	/*
	 * Grows @v to @size bytes (> its size, validated as a size): the
	 * whole change, validate, record, publish.  Default: refused.
	 */
	int (*extend)(struct pool *p, struct pool_volume *v, uint64_t size,
		      char *const *on, size_t nr_on, struct pool_error *err);
	/*
	 * Shrinks @v to @size bytes (0 < @size < its size, a multiple of
	 * 4 KiB), which nobody has open (the caller holds it alone): the
	 * whole change, validate, record, publish; the bytes past @size are
	 * lost.  Default: refused.
	 */
	int (*reduce)(struct pool *p, struct pool_volume *v, uint64_t size,
		      struct pool_error *err);
	/*
	 * Deletes @v: records, then memory (pool_volume_forget).  Default:
	 * stop serving it (refused while open), delete its records, forget.
	 */
	int (*remove)(struct pool *p, struct pool_volume *v, struct pool_error *err);
	/*
	 * Checks what only this kind knows of @v (records, maps), reporting
	 * each breach with pool_breach().  Default: nothing more than the
	 * extent checks every volume gets.  0, or -errno if it could not look.
	 */
	int (*check)(struct pool *p, struct pool_volume *v, struct pool_check *c,
		     struct pool_error *err);
	/*
	 * Why @v, built and served, fails now all the same (a thin pool
	 * whose metadata commits have failed for too long), in @why of @len
	 * bytes; false if it does not.  status and list show it as they show
	 * a volume that could not be built.  Default: never.
	 */
	bool (*failing)(struct pool_volume *v, char *why, size_t len);
	/*
	 * Tries to serve @v again, built but failing (its failing hook says
	 * so), once the cause is gone: reload.  0 if it no longer fails;
	 * else -errno, and its failing hook says why it still does.  Admin
	 * lock held.  Default: -EAGAIN, nothing to try (it fails until the
	 * kind itself stops failing it).
	 */
	int (*recover)(struct pool *p, struct pool_volume *v);
	/*
	 * Calls @fn with each range of a device that @v uses without owning
	 * it as an extent (a switch path placed by hand), so that nothing is
	 * allocated or placed over it and check sees it (pool_used()): @v's
	 * id, seq POOL_PLACED_SEQ + an index, device, offset, length.
	 * Default: none.
	 */
	void (*placed)(struct pool *p, struct pool_volume *v,
		       void (*fn)(void *arg, const struct extent_rec *range), void *arg);
	/*
	 * The volume @v is built on, whose failure fails it too (a thin
	 * volume's pool, or its origin volume), or NULL (pool_fault.c).
	 * Default: none.
	 */
	struct pool_volume *(*needs)(struct pool *p, struct pool_volume *v);
	/*
	 * The file or block device @v reads without owning it (a thin
	 * volume's external origin image), which may therefore not become a
	 * raw device of the pool, or NULL.  Default: none.
	 */
	const char *(*image)(struct pool_volume *v);
	/* Adds the kind's members to @v's status object.  Default: none. */
	void (*status)(struct pool *p, struct pool_volume *v, struct json *j);
	/* Fills the kind's columns of @v's line in list.  Default: none. */
	void (*info)(struct pool *p, struct pool_volume *v, struct pool_volume_info *out);
	/*
	 * What the monitor (pool_monitor.c) does for @v on each of its
	 * passes, about once a second and whenever a kick woke it: raise the
	 * kind's events (pool_monitor_event), grow it (a thin pool's
	 * autoextend).  Admin lock held.  Default: nothing.
	 */
	void (*watch)(struct pool *p, struct pool_volume *v);
	/* Frees the kind's live objects and records.  Default: nothing. */
	void (*release)(struct pool *p, struct pool_volume *v);
	/*
	 * The target @v runs on, which may be a mirror (pool_volume_mirror).
	 * Default: its served target, or NULL.
	 */
	struct target *(*runs_on)(const struct pool_volume *v);
	/*
	 * Runs @v on @t (taken) from now on, online (a move's mirror, then
	 * its plain table): requests that began on the old target finish on
	 * it.  Returns the old one for the caller to destroy, or NULL if @t
	 * could not be taken (and was destroyed).  Blocks for a grace period.
	 * Default: volume_reload of its served volume.
	 */
	struct target *(*reload)(struct pool_volume *v, struct target *t);
	/*
	 * Bytes @v's extents are used in whole (a thin pool's block): a move
	 * carves their new places in multiples of it.  Default: 1.
	 */
	uint64_t (*grain)(const struct pool_volume *v);
};

/* Fills in the defaults, once; before any type is used. */
void target_types_register(void);
/* The type named @name, or NULL. */
const struct target_type *target_type_find(const char *name);

/*
 * The type of volume @rec loaded from the store's image @img: a refining
 * type that claims it, else the type named by its kind; NULL if none.
 */
const struct target_type *target_type_load(const struct volume_rec *rec,
					   const struct pool_meta_image *img);

/* The types, defined in their own files; registered, they are complete. */
extern struct target_type linear_type, switch_type, thin_type, thin_pool_type;
/* A linear volume with a stripe row, stored as kind "linear": it claims it. */
extern struct target_type striped_type;

#endif
