/*
 * fs/nbdkit.c: see nbdkit.h.
 *
 * Between fork and exec the child only makes async-signal-safe calls: the
 * daemon has many threads, any of which may hold malloc's lock.  So every
 * string of the new program (its path, argv, environment) is built before
 * the fork, and the child writes nothing but its own pid, digit by digit,
 * into the slot left for LISTEN_PID, which nbdkit compares with getpid().
 */
#include "nbdkit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define LISTEN_PID_VAR	"LISTEN_PID="
#define PSK_CHILD_FD	4		/* the key file, in nbdkit */
#define PID_DIGITS_MAX	12

/* What the child needs, all made before the fork. */
struct plan {
	const char *exe;
	char *argv[10];
	char **envp;
	char *pid_slot;			/* the digits of "LISTEN_PID=" */
	int null_fd, err_w, listen_fd, psk_fd;
	char file_arg[PATH_MAX + 8];
	char listen_pid[sizeof(LISTEN_PID_VAR) + PID_DIGITS_MAX];
};

uint64_t nbdkit_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

char *nbdkit_find(void)
{
	const char *path = getenv("PATH");
	char *dirs, *dir, *save = NULL, exe[PATH_MAX], *found = NULL;

	dirs = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (dir = dirs ? strtok_r(dirs, ":", &save) : NULL; dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		if (dir[0] != '/')
			continue;	/* the daemon works from '/': relative entries mean nothing */
		snprintf(exe, sizeof(exe), "%s/nbdkit", dir);
		if (!access(exe, X_OK))
			found = strdup(exe);
	}
	free(dirs);
	return found;
}

/* The environment, less any socket activation of our own, plus nbdkit's. */
static char **make_envp(struct plan *p)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	envp = calloc(n + 3, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LISTEN_", 7))
			envp[k++] = environ[i];
	envp[k++] = "LISTEN_FDS=1";
	snprintf(p->listen_pid, sizeof(p->listen_pid), "%s", LISTEN_PID_VAR);
	p->pid_slot = p->listen_pid + strlen(LISTEN_PID_VAR);
	envp[k++] = p->listen_pid;
	return envp;
}

/* Writes @pid in decimal at @out, NUL-terminated.  Async-signal-safe. */
static void format_pid(pid_t pid, char *out)
{
	char digits[PID_DIGITS_MAX];
	int n = 0;

	do {
		digits[n++] = (char)('0' + pid % 10);
		pid /= 10;
	} while (pid && n < PID_DIGITS_MAX - 1);
	while (n)
		*out++ = digits[--n];
	*out = '\0';
}

/* In the child: async-signal-safe calls only, then nbdkit or _exit. */
static void __attribute__((noreturn)) become_nbdkit(struct plan *p)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	sigemptyset(&none);
	sigaction(SIGPIPE, &dfl, NULL);		/* the daemon ignores it */
	sigprocmask(SIG_SETMASK, &none, NULL);	/* the daemon blocks SIGTERM */
	format_pid(getpid(), p->pid_slot);
	/* 0..2 are open in the daemon, so none of these is one of them */
	if (dup2(p->null_fd, 0) < 0 || dup2(p->null_fd, 1) < 0 || dup2(p->err_w, 2) < 0 ||
	    dup2(p->listen_fd, 3) < 0 || fcntl(3, F_SETFD, 0) < 0 ||
	    (p->psk_fd >= 0 && (dup2(p->psk_fd, PSK_CHILD_FD) < 0 ||
				fcntl(PSK_CHILD_FD, F_SETFD, 0) < 0)))
		_exit(126);
	syscall(SYS_close_range, p->psk_fd >= 0 ? PSK_CHILD_FD + 1u : 4u, ~0u, 0u);
	execve(p->exe, p->argv, p->envp);
	_exit(127);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int nbdkit_spawn(struct nbdkit *k, const char *exe, int listen_fd, const char *file,
		 bool read_only, int psk_fd)
{
	struct plan *p = calloc(1, sizeof(*p));
	int pipe_fds[2] = { -1, -1 }, a = 0, r = 0;
	pid_t pid;

	if (!p)
		return -ENOMEM;
	p->exe = exe;
	p->listen_fd = listen_fd;
	/* above every descriptor the child moves first, so none lands on it */
	p->psk_fd = psk_fd >= 0 ? fcntl(psk_fd, F_DUPFD_CLOEXEC, PSK_CHILD_FD + 1) : -1;
	p->null_fd = -1;
	if (psk_fd >= 0 && p->psk_fd < 0) {
		r = -errno;
		goto out;
	}
	p->argv[a++] = "nbdkit";
	p->argv[a++] = "--exit-with-parent";
	if (read_only)
		p->argv[a++] = "--readonly";
	if (psk_fd >= 0) {
		p->argv[a++] = "--tls=require";
		p->argv[a++] = "--tls-psk=/dev/fd/4";	/* PSK_CHILD_FD */
	}
	p->argv[a++] = "file";
	snprintf(p->file_arg, sizeof(p->file_arg), "file=%s", file);
	p->argv[a++] = p->file_arg;
	p->envp = make_envp(p);
	p->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (!p->envp || p->null_fd < 0 || pipe2(pipe_fds, O_CLOEXEC) < 0) {
		r = p->envp ? -errno : -ENOMEM;
		goto out;
	}
	p->err_w = pipe_fds[1];
	fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0)
		become_nbdkit(p);
	k->pid = pid;
	k->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	k->err_fd = pipe_fds[0];
	pipe_fds[0] = -1;
	k->partial_len = 0;
	k->last[0] = '\0';
	k->started_ms = nbdkit_now_ms();
	if (k->pidfd < 0) {		/* cannot watch it: do not keep it */
		r = -errno;
		nbdkit_stop(k, 0);
	}
out:
	close_fd(&pipe_fds[0]);
	close_fd(&pipe_fds[1]);
	if (p->null_fd >= 0)
		close(p->null_fd);
	close_fd(&p->psk_fd);
	free(p->envp);
	free(p);
	return r;
}

static void emit(struct nbdkit *k, void (*line)(void *arg, const char *text), void *arg)
{
	k->partial[k->partial_len] = '\0';
	if (k->partial_len) {
		snprintf(k->last, sizeof(k->last), "%s", k->partial);
		k->last_ms = nbdkit_now_ms();
		line(arg, k->partial);
	}
	k->partial_len = 0;
}

void nbdkit_drain(struct nbdkit *k, void (*line)(void *arg, const char *text), void *arg)
{
	char buf[1024];
	ssize_t n = 0;

	while (k->err_fd >= 0 && (n = read(k->err_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				emit(k, line, arg);
				continue;
			}
			k->partial[k->partial_len++] = buf[i];
			if (k->partial_len == sizeof(k->partial) - 1)
				emit(k, line, arg);
		}
	}
	if (!n) {			/* its end: nothing more will come, nor wake a poll */
		emit(k, line, arg);
		close_fd(&k->err_fd);
	}
}

uint64_t nbdkit_reap(struct nbdkit *k, int *status)
{
	uint64_t ran = nbdkit_now_ms() - k->started_ms;

	*status = 0;
	if (k->pid > 0 && waitpid(k->pid, status, 0) < 0)
		*status = 0;
	k->pid = 0;
	close_fd(&k->pidfd);
	close_fd(&k->err_fd);
	return ran;
}

/* Waits up to @ms (-1: for good) for it to exit; true if it did. */
static bool wait_exit(struct nbdkit *k, int ms)
{
	struct pollfd pfd = { .fd = k->pidfd, .events = POLLIN };
	int r;

	if (k->pidfd < 0)
		return ms != 0;		/* no pidfd: waitpid will block */
	do
		r = poll(&pfd, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0;
}

void nbdkit_stop(struct nbdkit *k, int grace_ms)
{
	int status;

	if (k->pid <= 0)
		return;
	kill(k->pid, SIGTERM);
	if (!wait_exit(k, grace_ms)) {
		kill(k->pid, SIGKILL);
		wait_exit(k, -1);
	}
	nbdkit_reap(k, &status);
}

void nbdkit_describe_exit(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}
