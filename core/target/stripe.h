/*
 * core/target/stripe.h: the striped target (dm-stripe): a volume
 * interleaved over N stripes in chunks of a power-of-two size.
 *
 * Chunk c of the volume (bytes [c * chunk, (c + 1) * chunk)) is chunk
 * c / N of stripe c % N.  A stripe is itself a list of pieces of raw
 * devices, concatenated (the extents its device gave it, and the ones
 * each extend added), so a chunk may straddle two pieces of its stripe.
 *
 * A request is cut where it must be and nowhere else: at the edge of a
 * chunk, where the next byte lives on another stripe, and at the edge of
 * a stripe's piece.  A request inside one chunk is one segment; two
 * chunks of one stripe are never joined, since the volume bytes between
 * them are on other stripes (segs_push joins only pieces contiguous in
 * both the buffer and the device).
 *
 * The table is immutable once published, as linear's: extend and reduce
 * build a new one and swap the pointer, the old one is freed after an RCU
 * grace period; map() is arithmetic and one binary search per piece over
 * the stripe's start offsets, atomic loads only.
 */
#ifndef MAPPERFS_STRIPE_H
#define MAPPERFS_STRIPE_H

#include <stdint.h>

#include "target.h"

struct device;

#define STRIPES_MIN		2
#define STRIPES_MAX		16		/* the bits an extent's seq has (records.h); LVM's is 128 */
#define STRIPE_CHUNK_MIN	4096u
#define STRIPE_CHUNK_DEFAULT	(64u * 1024)	/* lvcreate -I's default */
#define STRIPE_CHUNK_MAX	(1u << 30)

/* One piece of a stripe, in the stripe's order. */
struct stripe_piece {
	unsigned int stripe;		/* 0 .. nr_stripes - 1 */
	struct device *dev;
	uint64_t dev_off;		/* bytes */
	uint64_t len;			/* bytes, > 0 */
};

struct stripe_table;

/*
 * A table of @nr_stripes stripes in chunks of @chunk bytes (a power of
 * two, STRIPE_CHUNK_MIN..STRIPE_CHUNK_MAX) from @nr pieces, each
 * stripe's pieces in @v in their order (the stripes may interleave in
 * @v).  Every stripe needs one piece at least.  0, -EINVAL, -ENOMEM.
 */
int stripe_table_new(unsigned int nr_stripes, uint32_t chunk,
		     const struct stripe_piece *v, unsigned int nr,
		     struct stripe_table **out);
void stripe_table_free(struct stripe_table *tb);

/* A striped target serving @tb (taken, also on failure).  0 or -ENOMEM. */
int stripe_create(struct stripe_table *tb, struct target **out);

/*
 * Publishes @tb (taken) as @t's table.  Readers never wait; this waits
 * for the grace period that frees the old table (admin path).  Cannot
 * fail, so an admin change can publish after it committed.
 */
void stripe_publish(struct target *t, struct stripe_table *tb);

#endif
