/*
 * core/util/fsid.c: a thread's file-system identity, taken and put back
 * (fsid.h says why the raw system calls).
 */
#include "fsid.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int fsid_user_init(struct fsid_user *u, uid_t uid, gid_t gid)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	int n = 16;

	*u = (struct fsid_user){ .uid = uid, .gid = gid };
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) || !found) {
		u->groups = malloc(sizeof(*u->groups));
		if (!u->groups)
			return -ENOMEM;
		u->groups[0] = gid;
		u->nr_groups = 1;
		return 0;
	}
	u->gid = pw.pw_gid;
	for (;;) {
		gid_t *g = realloc(u->groups, (size_t)n * sizeof(*g));
		int want = n;

		if (!g) {
			fsid_user_release(u);
			return -ENOMEM;
		}
		u->groups = g;
		if (getgrouplist(pw.pw_name, pw.pw_gid, g, &want) >= 0) {
			u->nr_groups = want;
			return 0;
		}
		n = want > n ? want : 2 * n;
	}
}

void fsid_user_release(struct fsid_user *u)
{
	free(u->groups);
	u->groups = NULL;
	u->nr_groups = 0;
}

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

int fsid_take(const struct fsid_user *u, struct fsid_saved *saved)
{
	int r;

	saved->switched = false;
	if (geteuid() != 0 || u->uid == 0)
		return 0;
	r = save(saved);
	if (r)
		return r;
	if (syscall(SYS_setgroups, (size_t)u->nr_groups, u->groups) < 0)
		return -errno;
	if (!set_fsid(u->uid, u->gid)) {
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
