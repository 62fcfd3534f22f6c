/*
 * powercut-waitpid PID: waits until process PID, which need not be our
 * child (a daemon that detached), has exited.  Sleeps on a pidfd: no
 * polling.  Exits 0 once it is gone (or was never there).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct pollfd p = { .events = POLLIN };

	if (argc != 2) {
		fprintf(stderr, "usage: powercut-waitpid PID\n");
		return 2;
	}
	p.fd = (int)syscall(SYS_pidfd_open, (pid_t)atoi(argv[1]), 0);
	if (p.fd < 0) {
		if (errno == ESRCH)
			return 0;
		fprintf(stderr, "powercut-waitpid: pidfd_open(%s): %s\n", argv[1], strerror(errno));
		return 1;
	}
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	return 0;
}
