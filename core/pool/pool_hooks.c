/*
 * core/pool/pool_hooks.c: the runner of the thin pools' event commands.
 *
 * One thread runs every thin pool's commands; each thin pool has a FIFO
 * of events and at most one command running.  The thread sleeps in
 * poll(2) on an eventfd (a new event, or stop) and on a pidfd per running
 * command (it exited), with the nearest timeout as poll's: no polling, no
 * SIGCHLD handler, and a command that hangs is killed on time.  Each
 * command runs in a process group of its own, so killing it kills what it
 * started too (a `sleep` in a shell script).
 *
 * A command runs as the owner of the pool directory, who set it: when a
 * root daemon serves another user's pool, the child takes on that user's
 * groups, group and uid before it execs, so the command can do nothing
 * its owner could not.  It inherits no descriptor but 0 to 2.  A
 * hook directory runs whatever is in it, so it runs only if the directory
 * and everything in it belong to that user or root and nobody else can
 * write them, and it holds no symbolic link: nobody else can put in or
 * change what runs.  Checked before each run, in the runner: a hook
 * directory is a few entries.
 */
#include "pool_hooks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fsid.h"
#include "log.h"

/* An event waiting for its command to run, or running it. */
struct hook_run {
	struct hook_run *next;
	char *name, *event, *cmd;
	char **envp;			/* NULL-terminated, each string malloc'ed */
};

/* One thin pool's events. */
struct hook_queue {
	int64_t key;
	struct hook_run *head, *tail;	/* waiting, oldest first */
	size_t nr;
	struct hook_run *running;	/* its command runs, or NULL */
	pid_t pid;
	int pidfd;			/* -1 if the kernel has none: waited for by waitpid */
	uint64_t deadline_ms;		/* CLOCK_MONOTONIC: killed after */
	bool killed;
};

/* Whom the commands run as: the pool's owner. */
struct hook_user {
	const struct fsid_user *id;	/* the pool's, which outlives us */
	bool become;			/* not this process's uid: switch to it */
};

struct pool_hooks {
	pthread_t thread;
	pthread_mutex_t lock;
	int wake;			/* eventfd */
	bool stopping;
	uint64_t stop_deadline_ms;
	uint32_t timeout_s;
	struct hook_user as;
	struct hook_queue *q;
	size_t nr_q, cap_q;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void run_free(struct hook_run *r)
{
	if (!r)
		return;
	for (char **e = r->envp; e && *e; e++)
		free(*e);
	free(r->envp);
	free(r->name);
	free(r->event);
	free(r->cmd);
	free(r);
}

static struct hook_run *run_new(const char *name, const char *event, const char *cmd,
				char *const *envp)
{
	struct hook_run *r = calloc(1, sizeof(*r));
	size_t n = 0;

	if (!r)
		return NULL;
	while (envp[n])
		n++;
	r->name = strdup(name);
	r->event = strdup(event);
	r->cmd = strdup(cmd);
	r->envp = calloc(n + 1, sizeof(*r->envp));
	if (!r->name || !r->event || !r->cmd || !r->envp)
		goto err;
	for (size_t i = 0; i < n; i++)
		if (!(r->envp[i] = strdup(envp[i])))
			goto err;
	return r;
err:
	run_free(r);
	return NULL;
}

/* The queue of thin pool @key, made if new; NULL on ENOMEM.  Lock held. */
static struct hook_queue *queue_of(struct pool_hooks *h, int64_t key)
{
	for (size_t i = 0; i < h->nr_q; i++)
		if (h->q[i].key == key)
			return &h->q[i];
	if (h->nr_q == h->cap_q) {
		size_t cap = h->cap_q ? 2 * h->cap_q : 8;
		struct hook_queue *q = realloc(h->q, cap * sizeof(*q));

		if (!q)
			return NULL;
		h->q = q;
		h->cap_q = cap;
	}
	h->q[h->nr_q] = (struct hook_queue){ .key = key, .pidfd = -1 };
	return &h->q[h->nr_q++];
}

static void wake(struct pool_hooks *h)
{
	uint64_t one = 1;

	if (write(h->wake, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("cannot wake the event command runner: %s", strerror(errno));
}

void pool_hooks_queue(struct pool_hooks *h, int64_t key, const char *name,
		      const char *event, const char *cmd, char *const *envp)
{
	struct hook_run *r = run_new(name, event, cmd, envp);
	struct hook_queue *q;

	pthread_mutex_lock(&h->lock);
	q = r && !h->stopping ? queue_of(h, key) : NULL;
	if (q && q->nr < HOOK_QUEUE_MAX) {
		if (q->tail)
			q->tail->next = r;
		else
			q->head = r;
		q->tail = r;
		q->nr++;
		r = NULL;
		wake(h);
	} else if (q) {
		log_warn("thin pool '%s': %zu events wait for its event command already; not running it for %s",
			 name, q->nr, event);
	} else if (!h->stopping) {
		log_warn("thin pool '%s': out of memory: not running its event command for %s",
			 name, event);
	}
	pthread_mutex_unlock(&h->lock);
	run_free(r);
}

/* An absolute path to a directory: a hook directory for run-parts. */
static bool hook_dir(const char *cmd)
{
	struct stat st;

	return cmd[0] == '/' && !stat(cmd, &st) && S_ISDIR(st.st_mode);
}

/* Only @u or root could have put @st there or changed it. */
static bool trusted(const struct stat *st, const struct hook_user *u)
{
	return (st->st_uid == u->id->uid || st->st_uid == 0) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * Hook directory @dir and every entry of it are trusted() and no entry is
 * a link (run-parts would run what it points to).  0, or -EPERM with
 * @why saying what is not, or the -errno of reading it.
 */
static int check_hook_dir(const char *dir, const struct hook_user *u, char *why, size_t len)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int r = 0;

	d = opendir(dir);
	if (!d || fstat(dirfd(d), &st) < 0) {
		r = -errno;
		if (d)
			closedir(d);
		return r;
	}
	if (!trusted(&st, u)) {
		snprintf(why, len, "'%s' belongs to uid %u, mode %04o", dir, (unsigned int)st.st_uid,
			 (unsigned int)(st.st_mode & 07777));
		r = -EPERM;
	}
	while (!r && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
		} else if (S_ISLNK(st.st_mode)) {
			snprintf(why, len, "'%s/%s' is a symbolic link", dir, e->d_name);
			r = -EPERM;
		} else if (!trusted(&st, u)) {
			snprintf(why, len, "'%s/%s' belongs to uid %u, mode %04o", dir, e->d_name,
				 (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
			r = -EPERM;
		}
	}
	closedir(d);
	return r;
}

#define CHILD_STACK	(256u << 10)	/* bytes: the child runs on it until it execs */

/* What the child runs, and what it says back if it cannot. */
struct child {
	const struct hook_user *u;
	const struct hook_run *r;
	bool dir;
	int err;			/* the errno of what failed; 0 if it execed */
};

/*
 * The child shares the runner's memory until it execs (CLONE_VM |
 * CLONE_VFORK, as posix_spawn does: a daemon with I/O in flight is not
 * copied).  It takes its own process group, default signals, no
 * descriptor but 0 to 2, then the hooks' user, by system calls: libc's
 * setuid() would make every thread of the daemon change ids.
 */
static int child_main(void *arg)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	struct child *c = arg;
	const struct hook_user *u = c->u;
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setpgid(0, 0) < 0 || close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) < 0)
		goto fail;
	if (u->become && (syscall(SYS_setgroups, (size_t)u->id->nr_groups, u->id->groups) < 0 ||
			  syscall(SYS_setresgid, u->id->gid, u->id->gid, u->id->gid) < 0 ||
			  syscall(SYS_setresuid, u->id->uid, u->id->uid, u->id->uid) < 0))
		goto fail;
	if (c->dir)
		execvpe("run-parts", (char *[]){ "run-parts", c->r->cmd, NULL }, c->r->envp);
	else
		execve("/bin/sh", (char *[]){ "sh", "-c", c->r->cmd, NULL }, c->r->envp);
fail:
	c->err = errno;
	_exit(127);
}

/* Starts the command of @r into *pid.  0, or the -errno of the clone, the switch or the exec. */
static int spawn(const struct hook_user *u, const struct hook_run *r, bool dir, pid_t *pid)
{
	struct child c = { .u = u, .r = r, .dir = dir };
	char *stack;
	int status;

	stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -errno;
	*pid = clone(child_main, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
	if (*pid < 0)
		c.err = errno;
	munmap(stack, CHILD_STACK);
	if (*pid > 0 && c.err)
		waitpid(*pid, &status, 0);
	return -c.err;
}

/* Starts the command of @q's oldest event.  Lock held. */
static void start_next(struct pool_hooks *h, struct hook_queue *q)
{
	struct hook_run *r = q->head;
	bool dir = hook_dir(r->cmd);
	char why[PATH_MAX + 64];
	int e;

	q->head = r->next;
	if (!q->head)
		q->tail = NULL;
	q->nr--;
	e = dir ? check_hook_dir(r->cmd, &h->as, why, sizeof(why)) : 0;
	if (e == -EPERM) {
		log_warn("thin pool '%s': not running its hook directory for %s: %s (its hooks run as uid %u: they and their directory must be that user's or root's, writable by their owner only, and no links)",
			 r->name, r->event, why, (unsigned int)h->as.id->uid);
		run_free(r);
		return;
	}
	if (!e)
		e = spawn(&h->as, r, dir, &q->pid);
	if (e) {
		log_warn("thin pool '%s': cannot run its event command for %s as uid %u: %s", r->name,
			 r->event, (unsigned int)h->as.id->uid, strerror(-e));
		run_free(r);
		return;
	}
	q->running = r;
	q->pidfd = pidfd_open(q->pid, 0);
	q->deadline_ms = now_ms() + (uint64_t)h->timeout_s * 1000;
	q->killed = false;
}

/* Reaps @q's command if it has exited.  Lock held. */
static void reap(struct hook_queue *q)
{
	struct hook_run *r = q->running;
	int status;

	if (waitpid(q->pid, &status, WNOHANG) <= 0)
		return;
	/* One killed on time was said when it was killed. */
	if (!q->killed && WIFSIGNALED(status))
		log_warn("thin pool '%s': its event command for %s was killed by signal %d",
			 r->name, r->event, WTERMSIG(status));
	else if (!q->killed && WEXITSTATUS(status))
		log_warn("thin pool '%s': its event command for %s exited with status %d",
			 r->name, r->event, WEXITSTATUS(status));
	if (q->pidfd >= 0)
		close(q->pidfd);
	q->pidfd = -1;
	q->pid = 0;
	q->running = NULL;
	run_free(r);
}

/* Kills @q's command and what it started.  Lock held. */
static void kill_running(struct hook_queue *q, const char *why)
{
	if (q->killed)
		return;
	kill(-q->pid, SIGKILL);
	q->killed = true;
	log_warn("thin pool '%s': its event command for %s %s: killed", q->running->name,
		 q->running->event, why);
}

/* Drops what waits in @q, saying how much.  Lock held. */
static void drop_waiting(struct hook_queue *q)
{
	if (q->nr && q->head)
		log_warn("thin pool '%s': the daemon stops: %zu events do not run its event command",
			 q->head->name, q->nr);
	while (q->head) {
		struct hook_run *r = q->head;

		q->head = r->next;
		run_free(r);
	}
	q->tail = NULL;
	q->nr = 0;
}

/*
 * One turn: starts, kills, and fills @fds (the eventfd first) with what
 * to wait for; returns poll's timeout in ms (-1: none), or -2 when the
 * runner is done.  Lock held.
 */
static int turn(struct pool_hooks *h, struct pollfd *fds, nfds_t *nr)
{
	uint64_t now = now_ms(), next = UINT64_MAX;
	bool running = false;

	*nr = 0;
	fds[(*nr)++] = (struct pollfd){ .fd = h->wake, .events = POLLIN };
	for (size_t i = 0; i < h->nr_q; i++) {
		struct hook_queue *q = &h->q[i];
		uint64_t deadline;

		if (h->stopping)
			drop_waiting(q);
		else if (!q->pid && q->head)
			start_next(h, q);
		if (!q->pid)
			continue;
		running = true;
		deadline = h->stopping && h->stop_deadline_ms < q->deadline_ms ?
			   h->stop_deadline_ms : q->deadline_ms;
		if (now >= deadline)
			kill_running(q, h->stopping ? "still ran when the daemon stopped" :
				     "ran past its time");
		else if (deadline < next)
			next = deadline;
		if (q->pidfd >= 0)
			fds[(*nr)++] = (struct pollfd){ .fd = q->pidfd, .events = POLLIN };
		else if (now + 100 < next)
			next = now + 100;	/* no pidfd: look again soon */
	}
	if (h->stopping && !running)
		return -2;
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

/* Room in *fds for @n entries.  False on ENOMEM. */
static bool fds_room(struct pollfd **fds, size_t *cap, size_t n)
{
	struct pollfd *f;

	if (*cap >= n)
		return true;
	f = realloc(*fds, n * sizeof(*f));
	if (!f)
		return false;
	*fds = f;
	*cap = n;
	return true;
}

static void *runner_main(void *arg)
{
	struct pool_hooks *h = arg;
	struct pollfd *fds = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		nfds_t nr = 0;
		int timeout = 100;	/* out of memory: try again soon */
		uint64_t n;

		if (fds_room(&fds, &cap, h->nr_q + 1)) {
			timeout = turn(h, fds, &nr);
			if (timeout == -2)
				break;
		}
		pthread_mutex_unlock(&h->lock);
		if (poll(fds, nr, timeout) > 0 && fds[0].revents & POLLIN &&
		    read(h->wake, &n, sizeof(n)) < 0 && errno != EAGAIN)
			log_warn("the event command runner: %s", strerror(errno));
		pthread_mutex_lock(&h->lock);
		for (size_t i = 0; i < h->nr_q; i++)
			if (h->q[i].pid)
				reap(&h->q[i]);
	}
	pthread_mutex_unlock(&h->lock);
	free(fds);
	return NULL;
}

int pool_hooks_start(uint32_t timeout_s, const struct fsid_user *owner,
		     struct pool_hooks **out)
{
	struct pool_hooks *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	h->timeout_s = timeout_s;
	h->as = (struct hook_user){ .id = owner, .become = owner->uid != geteuid() };
	h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->wake < 0) {
		r = -errno;
		goto err_free;
	}
	pthread_mutex_init(&h->lock, NULL);
	r = -pthread_create(&h->thread, NULL, runner_main, h);
	if (r) {
		pthread_mutex_destroy(&h->lock);
		close(h->wake);
		goto err_free;
	}
	*out = h;
	return 0;

err_free:
	free(h);
	return r;
}

void pool_hooks_stop(struct pool_hooks *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	h->stop_deadline_ms = now_ms() + HOOK_STOP_GRACE_MS;
	wake(h);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	free(h->q);
	pthread_mutex_destroy(&h->lock);
	close(h->wake);
	free(h);
}
