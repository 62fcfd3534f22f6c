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

/* A user as the user database knows them. */
struct fsid_user {
	uid_t uid;
	gid_t gid;		/* primary group */
	gid_t *groups;		/* every group it is in, malloc'ed */
	int nr_groups;
};

/*
 * @uid as the user database knows it: its primary group and every group
 * it is a member of; a uid with no entry gets @gid and no other group.
 * Blocks on the user database.  0 or -ENOMEM; fsid_user_release frees.
 */
int fsid_user_init(struct fsid_user *u, uid_t uid, gid_t gid);
void fsid_user_release(struct fsid_user *u);

struct fsid_saved {
	bool switched;
	uid_t fsuid;		/* as it was */
	gid_t fsgid;
	int nr_groups;
	gid_t groups[64];	/* a root process's own groups: few */
};

/*
 * Makes user @u this thread's file-system identity (fsuid, fsgid and its
 * groups) if the process is root and @u is not (nothing otherwise: a
 * process of the user's own already checks as the user).  Nests:
 * fsid_restore() puts back what was before.  Never blocks.  0, or -errno
 * (then nothing changed).
 */
int fsid_take(const struct fsid_user *u, struct fsid_saved *saved);
/*
 * Makes @gid this thread's fsgid alone, its fsuid and groups as they are:
 * what it creates then belongs to that group.  Needs CAP_SETGID.  Put
 * back with fsid_restore().  0, or -errno (then nothing changed).
 */
int fsid_take_group(gid_t gid, struct fsid_saved *saved);
/* Puts back what fsid_take() or fsid_take_group() found.  Never blocks. */
void fsid_restore(const struct fsid_saved *saved);

#endif
