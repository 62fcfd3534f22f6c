/*
 * fs/nbdkit.h: one nbdkit process serving one volume file, as the
 * exporter (exporter.h) runs it.
 *
 * The daemon makes the listening socket and hands it over by socket
 * activation (LISTEN_FDS=1 on fd 3, nbdkit-service(1)), so the address is
 * taken, and its errors known, before nbdkit runs; connections that come
 * while nbdkit starts, or restarts, wait in the socket's backlog.
 * nbdkit runs in the foreground (socket activation implies -f) with
 * --exit-with-parent: if the daemon dies, so does it.  Its standard error
 * comes back through a pipe, so its messages reach the daemon's log.
 */
#ifndef MAPPERFS_NBDKIT_H
#define MAPPERFS_NBDKIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NBDKIT_LINE_MAX	256

struct nbdkit {
	pid_t pid;			/* 0: not running */
	int pidfd;			/* readable once it exited; -1: none */
	int err_fd;			/* its standard error, read end, non-blocking; -1 */
	char partial[NBDKIT_LINE_MAX];	/* a line of it not ended yet */
	size_t partial_len;
	char last[NBDKIT_LINE_MAX];	/* the last whole line it wrote, or "" */
	uint64_t last_ms;		/* CLOCK_MONOTONIC, when it wrote it */
	uint64_t started_ms;		/* CLOCK_MONOTONIC, when spawned */
};
#define NBDKIT_INIT { .pidfd = -1, .err_fd = -1 }

/*
 * Finds nbdkit on $PATH: a malloc'ed absolute path, or NULL if it is not
 * there.  Reads the file system: call once, at start.
 */
char *nbdkit_find(void);

/*
 * Runs @exe (nbdkit_find) with the file plugin on @file, read-only if
 * @read_only, listening on @listen_fd (bound and listening), and, if
 * @psk_fd >= 0, requiring TLS with the keys it reads there (a key file
 * psk_file_open checked; it reads it as /dev/fd/4).  The child has the
 * daemon's identity, no blocked signal, and no descriptor of the
 * daemon's but the socket and the key file.  @k must be NBDKIT_INIT or stopped.  Forks:
 * call from a thread that lives as long as the child (--exit-with-parent
 * follows the thread).  0, or -errno.
 */
int nbdkit_spawn(struct nbdkit *k, const char *exe, int listen_fd, const char *file,
		 bool read_only, int psk_fd);

/*
 * Reads what nbdkit wrote on its standard error so far, calling @line
 * with each whole line (without its newline; a line longer than
 * NBDKIT_LINE_MAX comes in pieces, and the last one at its end).  At the
 * end of it (nbdkit exited) closes k->err_fd.  Never blocks.
 */
void nbdkit_drain(struct nbdkit *k, void (*line)(void *arg, const char *text), void *arg);

/*
 * Once k->pidfd is readable: reaps the process, puts its wait status in
 * *status, closes what was open; @k is stopped (pid 0).  Returns what it
 * ran, in ms.  Never blocks.
 */
uint64_t nbdkit_reap(struct nbdkit *k, int *status);

/*
 * Stops a running nbdkit: SIGTERM, then SIGKILL if it has not exited
 * after @grace_ms; reaps it.  Blocks up to @grace_ms and the kill.
 * Nothing if it is not running.
 */
void nbdkit_stop(struct nbdkit *k, int grace_ms);

/* "exited with status 1", "was killed by signal 9 (Killed)" in @buf. */
void nbdkit_describe_exit(int status, char *buf, size_t len);

/* CLOCK_MONOTONIC in ms. */
uint64_t nbdkit_now_ms(void);

#endif
