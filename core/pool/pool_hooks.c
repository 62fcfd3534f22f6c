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
 */
#include "pool_hooks.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

struct pool_hooks {
	pthread_t thread;
	pthread_mutex_t lock;
	int wake;			/* eventfd */
	bool stopping;
	uint64_t stop_deadline_ms;
	uint32_t timeout_s;
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

/* Starts the command of @q's oldest event.  Lock held. */
static void start_next(struct pool_hooks *h, struct hook_queue *q)
{
	struct hook_run *r = q->head;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int e;

	q->head = r->next;
	if (!q->head)
		q->tail = NULL;
	q->nr--;
	/* The daemon's threads block the signals it handles: not the command's. */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					POSIX_SPAWN_SETPGROUP);
	if (hook_dir(r->cmd))
		e = posix_spawnp(&q->pid, "run-parts", NULL, &attr,
				 (char *[]){ "run-parts", r->cmd, NULL }, r->envp);
	else
		e = posix_spawn(&q->pid, "/bin/sh", NULL, &attr,
				(char *[]){ "sh", "-c", r->cmd, NULL }, r->envp);
	posix_spawnattr_destroy(&attr);
	if (e) {
		log_warn("thin pool '%s': cannot run its event command for %s: %s", r->name,
			 r->event, strerror(e));
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

int pool_hooks_start(uint32_t timeout_s, struct pool_hooks **out)
{
	struct pool_hooks *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	h->timeout_s = timeout_s;
	h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->wake < 0) {
		r = -errno;
		free(h);
		return r;
	}
	pthread_mutex_init(&h->lock, NULL);
	r = -pthread_create(&h->thread, NULL, runner_main, h);
	if (r) {
		pthread_mutex_destroy(&h->lock);
		close(h->wake);
		free(h);
		return r;
	}
	*out = h;
	return 0;
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
