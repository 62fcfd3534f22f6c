/*
 * core/util/fsid.h: acting on files as another user, on one thread.
 *
 * A root process that works for another user (a daemon serving a pool
 * that user owns, a command that user sent it) must not open for them
 * what they could not open themselves.  Linux checks file access against
 * a thread's file-system identity (fsuid, fsgid, supplementary groups),
 * and credentials are per thread in the kernel: the raw system calls
 * change only the calling thread (glibc's setgroups() would change every
 * thread of the process), so one thread can act for a user while the
 * others go on as root.  Capabilities that are not about files
 * (CAP_LEASE, CAP_SYS_ADMIN) stay.
 */
#ifndef MAPPERFS_FSID_H
#define MAPPERFS_FSID_H

#include <stdbool.h>
#include <sys/types.h>

struct fsid_saved {
	bool switched;
	uid_t fsuid;		/* as it was */
	gid_t fsgid;
	int nr_groups;
	gid_t groups[64];	/* a root process's own groups: few */
};

/*
 * Makes @uid and @gid this thread's file-system identity, with @gid its
 * only group, if the process is root and @uid is not 0 (nothing
 * otherwise: a process of the user's own already checks as the user).
 * Nests: fsid_restore() puts back what was before.  Never blocks.  0, or
 * -errno (then nothing changed).
 */
int fsid_take(uid_t uid, gid_t gid, struct fsid_saved *saved);
/*
 * Makes @gid this thread's fsgid alone, its fsuid and groups as they are:
 * what it creates then belongs to that group.  Needs CAP_SETGID.  Put
 * back with fsid_restore().  0, or -errno (then nothing changed).
 */
int fsid_take_group(gid_t gid, struct fsid_saved *saved);
/* Puts back what fsid_take() or fsid_take_group() found.  Never blocks. */
void fsid_restore(const struct fsid_saved *saved);

#endif
