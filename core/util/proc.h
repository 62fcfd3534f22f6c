/*
 * core/util/proc.h: who holds what, read from /proc, for messages that name
 * a process ("in use by mapperfs (pid 1234)").  What cannot be read is
 * not known: these never fail, they answer 0 or "".
 */
#ifndef MAPPERFS_PROC_H
#define MAPPERFS_PROC_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The process holding an exclusive flock on the file @st, or 0 (/proc/locks). */
pid_t proc_flock_holder(const struct stat *st);

/* The command name of process @pid in @buf ("" if gone); returns @buf. */
const char *proc_comm(pid_t pid, char *buf, size_t len);

#endif
