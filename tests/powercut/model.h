/*
 * tests/powercut/model.h: what a power cut at position P may leave of the
 * volumes a journal (journal.h) describes.
 *
 * An operation journaled with positions q and a (journal.h) was issued
 * by a cut at P if q <= P (the daemon's own issue point is q or later,
 * and what is issued at P may be in flight at P), and acknowledged if
 * a <= P.
 *
 * Admin changes.  A volume whose creation (create, snapshot) returned by
 * P must exist unless its removal was issued by P; one whose creation was
 * not issued by P, or whose removal returned by P, must not; otherwise
 * either, but whole.  A size is the last one acknowledged by P or one
 * issued after it; a switch table likewise, and exactly one of them.
 *
 * Data.  Every 512-byte sector of a volume has a history of versions:
 * what it held first (zeros, or the external origin's sector), then each
 * write or discard that covered it, in order; a snapshot starts with its
 * origin's versions issued before the snapshot returned (those still in
 * flight when it was issued may or may not be in it).  A switch volume's
 * sectors live on its paths: the history belongs to the path the region
 * pointed at when the write was made.  A version is acknowledged at its
 * own return if it was written with RWF_DSYNC (the FUA of files), else
 * at the first fsync of its volume that returned after it, or at a
 * snapshot of the volume issued after it returned: at the snapshot's return, or at P
 * if the snapshot is in the image, since the commit that made it durable
 * made the origin's data durable too.  At a cut at
 * P, a sector must read the newest version acknowledged by P, or a newer
 * one issued by P.  Reading an older version is a lost acknowledged
 * write; reading anything else (another volume's data, a write from
 * after the cut, garbage) is an inconsistency.
 */
#ifndef POWERCUT_MODEL_H
#define POWERCUT_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "journal.h"

enum vol_kind_m { M_POOL, M_LINEAR, M_SWITCH, M_THIN };

/* A volume as the image shows it, filled in by the caller. */
struct image_vol {
	bool present;
	char kind[16];
	uint64_t size;			/* bytes */
	const char *dump;		/* switch: its table, tokens joined by '_' */
};

struct model;

/* How a sector compares with what the model allows. */
enum verdict {
	SECTOR_OK,
	SECTOR_LOST,			/* an acknowledged version was lost */
	SECTOR_WRONG,			/* not a version it may hold */
};

/*
 * Prepares the model of journal @j at cut @pos.  @image(arg, name, out)
 * tells what the image holds of each volume.  0 or -ENOMEM.
 */
int model_build(const struct journal *j, uint64_t pos,
		void (*image)(void *arg, const char *name, struct image_vol *out),
		void *arg, struct model **out);
void model_free(struct model *m);

/* The volumes, by index: name, kind. */
int model_nr_vols(const struct model *m);
const char *model_vol_name(const struct model *m, int v);
enum vol_kind_m model_vol_kind(const struct model *m, int v);

/*
 * Checks volume @v's presence, kind, size and (switch) table against the
 * image; calls @report once per breach with a one-line message.  Returns
 * the number of breaches; *check_data says whether its data can be
 * checked (present, and its table known).
 */
int model_check_admin(struct model *m, int v,
		      void (*report)(void *arg, const char *msg), void *arg,
		      bool *check_data);

/*
 * Checks sector @sector (index) of volume @v against @data (512 bytes as
 * read through the mount).  On SECTOR_LOST, *lost_op is the journal
 * index of the acknowledged version that was lost; on either failure,
 * @why gets a phrase.
 */
enum verdict model_check_sector(const struct model *m, int v, uint64_t sector,
				const void *data, int *lost_op, char *why, size_t why_len);

#endif
