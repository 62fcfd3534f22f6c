/*
 * core/io/probe.h: what a device or file holds already, so that mapperfs
 * neither writes over it unasked (device add) nor reads a disk image's
 * container as if it were the disk (an origin).  Reads only; blocks on
 * the device (admin path).
 */
#ifndef MAPPERFS_PROBE_H
#define MAPPERFS_PROBE_H

#include <stddef.h>

/*
 * A virtual disk image format at the start of @fd (qcow2, QED, VMDK, VDI,
 * VHD, VHDX): 1 and "a qcow2 (or qcow) disk image" in @out, 0 if none,
 * or -errno.
 */
int probe_image_format(int fd, char *out, size_t len);

/*
 * Any known signature: a disk image as above, or what libblkid finds (a
 * file system, a partition table, a RAID, LVM or encrypted member): 1 and
 * "a file system (ext4)" in @out, 0 if none, or -errno.
 */
int probe_signature(int fd, char *out, size_t len);

#endif
