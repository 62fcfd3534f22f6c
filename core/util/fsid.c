/*
 * core/util/fsid.c: a thread's file-system identity, taken and put back
 * (fsid.h says why the raw system calls).
 */
#include "fsid.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

/* setfsuid and setfsgid answer the old id whatever happened: ask again. */
static bool set_fsid(uid_t uid, gid_t gid)
{
	syscall(SYS_setfsgid, gid);
	syscall(SYS_setfsuid, uid);
	return (uid_t)syscall(SYS_setfsuid, -1) == uid && (gid_t)syscall(SYS_setfsgid, -1) == gid;
}

/* Notes in @saved what this thread's identity is now.  0 or -errno. */
static int save(struct fsid_saved *saved)
{
	saved->switched = false;
	saved->fsuid = (uid_t)syscall(SYS_setfsuid, -1);
	saved->fsgid = (gid_t)syscall(SYS_setfsgid, -1);
	saved->nr_groups = getgroups(64, saved->groups);
	return saved->nr_groups < 0 ? -errno : 0;
}

int fsid_take_group(gid_t gid, struct fsid_saved *saved)
{
	int r = save(saved);

	if (r)
		return r;
	if (!set_fsid(saved->fsuid, gid)) {
		set_fsid(saved->fsuid, saved->fsgid);
		return -EPERM;
	}
	saved->switched = true;
	return 0;
}

int fsid_take(uid_t uid, gid_t gid, struct fsid_saved *saved)
{
	int r;

	saved->switched = false;
	if (geteuid() != 0 || uid == 0)
		return 0;
	r = save(saved);
	if (r)
		return r;
	if (syscall(SYS_setgroups, 1, &gid) < 0)
		return -errno;
	if (!set_fsid(uid, gid)) {
		set_fsid(saved->fsuid, saved->fsgid);
		syscall(SYS_setgroups, saved->nr_groups, saved->groups);
		return -EPERM;
	}
	saved->switched = true;
	return 0;
}

void fsid_restore(const struct fsid_saved *saved)
{
	if (!saved->switched)
		return;
	set_fsid(saved->fsuid, saved->fsgid);
	syscall(SYS_setgroups, saved->nr_groups, saved->groups);
}
