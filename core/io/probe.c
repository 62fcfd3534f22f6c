/*
 * core/io/probe.c: what a device or file holds already.
 *
 * libblkid knows file systems, partition tables, RAID and LVM members;
 * it does not know virtual disk images, whose headers are plain magic
 * numbers at fixed places (as qemu-img's probes read them), so those are
 * read here.  Both only read.
 */
#include "probe.h"

#include <blkid/blkid.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct image_magic {
	const char *name;
	uint64_t offset;		/* bytes from the start */
	const char *magic;
	size_t len;
};

static const struct image_magic images[] = {
	{ "qcow2 (or qcow)", 0, "QFI\xfb", 4 },
	{ "QED", 0, "QEF\0", 4 },
	{ "VMDK", 0, "KDMV", 4 },
	{ "VMDK descriptor", 0, "# Disk DescriptorFile", 21 },
	{ "VDI", 64, "\x7f\x10\xda\xbe", 4 },
	{ "VHDX", 0, "vhdxfile", 8 },
	{ "VHD", 0, "conectix", 8 },
};

int probe_image_format(int fd, char *out, size_t len)
{
	unsigned char head[128];
	ssize_t n = pread(fd, head, sizeof(head), 0);

	if (n < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		const struct image_magic *m = &images[i];

		if ((size_t)n >= m->offset + m->len &&
		    !memcmp(head + m->offset, m->magic, m->len)) {
			snprintf(out, len, "a %s disk image", m->name);
			return 1;
		}
	}
	return 0;
}

/* libblkid's verdict on @fd: "a file system (ext4)" ... */
static int probe_blkid(int fd, char *out, size_t len)
{
	const char *type = NULL, *usage = NULL, *pttype = NULL;
	blkid_probe pr = blkid_new_probe();
	int r;

	if (!pr)
		return -ENOMEM;
	if (blkid_probe_set_device(pr, fd, 0, 0)) {
		blkid_free_probe(pr);
		return -EIO;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	r = blkid_do_safeprobe(pr);
	if (r == 0) {
		blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
		blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
		blkid_probe_lookup_value(pr, "PTTYPE", &pttype, NULL);
		if (pttype)
			snprintf(out, len, "a partition table (%s)", pttype);
		else
			snprintf(out, len, "%s (%s)",
				 usage && !strcmp(usage, "filesystem") ? "a file system" :
				 usage && !strcmp(usage, "raid") ? "a RAID or volume group member" :
				 usage && !strcmp(usage, "crypto") ? "an encrypted volume" :
				 "a signature", type ? type : "unknown");
	} else if (r == -2) {
		snprintf(out, len, "several signatures (ambiguous)");
	}
	blkid_free_probe(pr);
	return r == 0 || r == -2 ? 1 : r == 1 ? 0 : -EIO;
}

int probe_signature(int fd, char *out, size_t len)
{
	int r = probe_image_format(fd, out, len);

	return r ? r : probe_blkid(fd, out, len);
}
