/*
 * fs/ops.h: the FUSE low-level operations of the volume directory.
 *
 * The mount is one flat directory (inode 1) holding one regular file per
 * volume (inode = volume id + 1).  Files are opened with direct_io: the
 * kernel's page cache never holds volume data, so what a snapshot,
 * rollback or another opener changed is what the next read sees, and
 * requests keep their size on the way to the backing devices.
 * Attributes and entries are never cached (timeouts 0): a size changed by
 * `mapperctl extend` or a volume created shows at once.
 */
#ifndef MAPPERFS_OPS_H
#define MAPPERFS_OPS_H

#include <fuse_lowlevel.h>

#define ROOT_INO		FUSE_ROOT_ID
#define OPS_MAX_BACKGROUND	128	/* async requests in flight per mount */

extern const struct fuse_lowlevel_ops mapperfs_ops;

#endif
