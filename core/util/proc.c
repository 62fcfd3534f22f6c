#include "proc.h"

#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

/*
 * /proc/locks lines read "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
 * (the device in hex); the pid is the process that took the lock.
 */
pid_t proc_flock_holder(const struct stat *st)
{
	char line[256], type[16], mode[16], id[64];
	unsigned int maj, min;
	unsigned long ino;
	pid_t pid = 0;
	FILE *f = fopen("/proc/locks", "re");
	int pid_read;

	if (!f)
		return 0;
	while (!pid && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*[^:]: %15s %*s %15s %d %63s", type, mode, &pid_read, id) != 4 ||
		    strcmp(type, "FLOCK") || strcmp(mode, "WRITE") ||
		    sscanf(id, "%x:%x:%lu", &maj, &min, &ino) != 3)
			continue;
		if (makedev(maj, min) == st->st_dev && ino == st->st_ino)
			pid = pid_read;
	}
	fclose(f);
	return pid;
}

const char *proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (f && fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
	return buf;
}
