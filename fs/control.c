/*
 * fs/control.c: the server of POOL/control.sock.
 *
 * A client that connects and says nothing (a hung mapperctl, a forgotten
 * socat, a script that leaks connections) must delay nobody, however many
 * there are.  So a connection costs a thread only once its request has
 * begun: one thread (control_main) accepts and keeps every connection
 * that has not sent a byte yet in one poll() set, closes each
 * CONTROL_IDLE_TIMEOUT_S after it came, and, when CONTROL_CONNS_MAX are
 * held, closes the oldest idle one to take a new one, so a client that
 * sends its request at once (mapperctl does) always gets in, and the
 * descriptors stay bounded.  A connection whose first byte arrived goes
 * to a queue that CONTROL_WORKERS threads serve in order: each reads the
 * request, serves only root and the pool's owner (SO_PEERCRED), runs the
 * command and answers.  The whole request must arrive within
 * CONTROL_REQUEST_TIMEOUT_S of the worker taking it, not each read: a
 * client that sends a byte every few seconds would otherwise hold a
 * worker for as long as it likes, and CONTROL_WORKERS of them every
 * worker.  mapperctl sends its request at once, so only such a client is
 * cut off (each write of the answer has CONTROL_IO_TIMEOUT_S).
 *
 * Commands run at once (they take turns only to parse, cmd.h): the pool
 * service orders the changes, so a report never queues behind a change
 * that waits on a device.  A command that still runs after a second and
 * waits for another (the one whose thread holds the pool's admin lock,
 * or its device lock: pool_busy_thread) has its client told for whom, in
 * a note before the answer: "mapperctl: waiting for 'device add' (pid N)
 * ...".  control_main sends it, while the worker still runs the command.
 *
 * When the daemon stops on a signal it serves open volumes until they are
 * closed, which may take long; control_drain() keeps the socket answering
 * meanwhile, so `mapperctl status` still works and says what the daemon
 * waits for, but commands that change the pool are refused, naming it.
 */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "daemon.h"
#include "fsid.h"
#include "log.h"
#include "pool.h"
#include "rcu.h"
#include "transport.h"
#include "wire.h"

#define CONTROL_WORKERS		16	/* commands served at once */
#define CONTROL_CONNS_MAX	256	/* connections held before they run */
#define CONTROL_IDLE_TIMEOUT_S	5	/* for a request's first byte */
#define CONTROL_REQUEST_TIMEOUT_S 5	/* for the whole request, once it began */
#define CONTROL_IO_TIMEOUT_S	5	/* per write of the answer */
#define CONTROL_BACKLOG		SOMAXCONN
#define CONTROL_NOTE_AFTER_MS	1000	/* a command waits: tell its client */
#define CONTROL_NOTE_TICK_MS	250	/* how often to look again */

/* A connection that sent nothing yet (control_main's own). */
struct idle {
	int fd;
	pid_t pid;			/* the peer's, for the log */
	uint64_t since_ms;		/* accepted */
};

/* A worker and the command it runs (guarded by control.lock). */
struct worker_slot {
	struct control *c;
	pthread_t thread;
	pid_t tid;
	bool running;			/* a command, until its answer is sent */
	bool changes;			/* it is not reads_only */
	bool noted;			/* its client was told whom it waits for */
	int fd;
	pid_t peer;			/* the client's pid */
	char what[64];			/* the command's name */
	uint64_t started_ms;
};

struct control {
	struct daemon *d;
	int listen_fd;
	int wake_fd;			/* eventfd: stopping, or room in the queue */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uid_t owner;			/* of the pool directory */
	gid_t group;			/* the owner's primary group: the socket's */
	pthread_t thread;		/* control_main */
	struct worker_slot workers[CONTROL_WORKERS];
	unsigned int nr_workers;

	struct idle idle[CONTROL_CONNS_MAX];	/* oldest first */
	unsigned int nr_idle;

	pthread_mutex_t lock;		/* guards what follows */
	pthread_cond_t work;		/* the queue has a connection, or stopping */
	pthread_cond_t changed;		/* a command that changes the pool ended */
	bool stopping;
	bool draining;			/* only reads_only commands run */
	int queue[CONTROL_CONNS_MAX];	/* requests begun, in order */
	unsigned int queue_head, nr_queued;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void wake(struct control *c)
{
	uint64_t one = 1;

	if (write(c->wake_fd, &one, sizeof(one)) < 0)
		log_debug("control: cannot wake the accepting thread: %s", strerror(errno));
}

/* ---- workers ------------------------------------------------------------ */

/*
 * @w now runs @cmd for client @peer on @fd, for the notes; false if the
 * daemon is draining and a command that changes the pool must not run.
 */
static bool slot_begin(struct worker_slot *w, int fd, pid_t peer, const struct cmd *cmd,
		       const char *what, bool reads)
{
	bool ok;

	pthread_mutex_lock(&w->c->lock);
	ok = reads || !w->c->draining;
	if (ok) {
		w->running = true;
		w->changes = !reads;
		w->noted = false;
		w->fd = fd;
		w->peer = peer;
		snprintf(w->what, sizeof(w->what), "%s", cmd ? cmd->name : what);
		w->started_ms = now_ms();
	}
	pthread_mutex_unlock(&w->c->lock);
	return ok;
}

/* Before the answer: no note may come after it. */
static void slot_end(struct worker_slot *w)
{
	pthread_mutex_lock(&w->c->lock);
	w->running = false;
	if (w->changes)
		pthread_cond_broadcast(&w->c->changed);
	pthread_mutex_unlock(&w->c->lock);
}

static bool draining(struct control *c)
{
	bool d;

	pthread_mutex_lock(&c->lock);
	d = c->draining;
	pthread_mutex_unlock(&c->lock);
	return d;
}

/* A change, while the daemon stops: refused, saying why. */
static int refuse_change(struct control *c, struct cmd_ctx *ctx, const char *what)
{
	char vols[256];

	if (!daemon_open_volumes(c->d, vols, sizeof(vols)))
		return cmd_error(ctx, what, "pool '%s' is served by mapperfs (pid %d), which "
				 "is stopping; it takes no changes", ctx->pool_dir, (int)getpid());
	return cmd_error(ctx, what, "pool '%s' is served by mapperfs (pid %d), which is "
			 "stopping: it still serves the open volumes %s; it takes no changes",
			 ctx->pool_dir, (int)getpid(), vols);
}

/*
 * Whether the client on connection *@arg has gone: it closed the socket
 * (killed, or exited), which a client waiting for its answer never does.
 * A shutdown of its writing side only (POLLRDHUP) is not going.
 */
static bool client_gone(void *arg)
{
	struct pollfd p = { .fd = *(const int *)arg, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

/*
 * Runs a command line received whole from client @cred (with the file
 * that mapperctl opened for it, @file, or -1: what it reads or writes, as
 * the command says), and answers.  A root daemon runs the pool owner's
 * command (a client that is not root is the owner: peer_allowed) with the
 * owner's file-system identity and groups (fsid.h): the paths it
 * names (`device add PATH [--create]`) are opened and created as the
 * owner could, never with root's rights.
 */
static void serve(struct worker_slot *w, int fd, const struct ucred *cred, int argc,
		  char **argv, int file)
{
	pid_t peer = cred->pid;
	struct fsid_saved self = { .switched = false };
	struct control *c = w->c;
	struct pool_host host = { .pid = getpid(), .transport = transport_name() };
	int words;
	const struct cmd *cmd = cmd_find(argc, argv, &words);
	bool writes = cmd && cmd->output_option;
	struct pool_stream_caller caller = { .gone = client_gone, .arg = &fd };
	struct cmd_ctx ctx = {
		.pool = daemon_pool(c->d),
		.pool_dir = pool_dir(daemon_pool(c->d)),
		.host = &host,
		.input = writes ? -1 : file,
		.output = writes ? file : -1,
		.caller = &caller,
	};
	char *out = NULL, *err = NULL, vols[256], stopping[300];
	size_t out_len = 0, err_len = 0;
	int status, r;
	bool reads;

	reads = !cmd || cmd->reads_only || cmd_help_requested(argc - words, argv + words);
	if (draining(c)) {
		if (daemon_open_volumes(c->d, vols, sizeof(vols)))
			snprintf(stopping, sizeof(stopping), "still serving the open volumes %s",
				 vols);
		else
			snprintf(stopping, sizeof(stopping), "no volume is open");
		host.stopping = stopping;
	}
	ctx.out = open_memstream(&out, &out_len);
	ctx.err = open_memstream(&err, &err_len);
	if (!ctx.out || !ctx.err) {
		status = CMD_FAIL;
	} else if (!slot_begin(w, fd, peer, cmd, argc ? argv[0] : "", reads)) {
		status = refuse_change(c, &ctx, cmd->name);
	} else if ((r = cred->uid ? fsid_take(pool_owner(ctx.pool), &self) : 0)) {
		fprintf(ctx.err, "mapperctl: the daemon cannot act as uid %u: %s\n",
			(unsigned int)cred->uid, strerror(-r));
		status = CMD_FAIL;
		slot_end(w);
	} else {
		status = cmd_dispatch(&ctx, argc, argv);
		fsid_restore(&self);
		slot_end(w);
		daemon_forget_stale(c->d);
		if (!reads)
			daemon_sync_exports(c->d);
	}
	if (ctx.out)
		fclose(ctx.out);
	if (ctx.err)
		fclose(ctx.err);
	wire_send_response(fd, status, out, out_len, err, err_len);
	free(out);
	free(err);
}

/* Root and the owner of the pool directory may send commands. */
static bool peer_allowed(struct control *c, int fd, struct ucred *cred)
{
	socklen_t len = sizeof(*cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) < 0)
		return false;
	return cred->uid == 0 || cred->uid == c->owner;
}

/* Reads the request, so that the client sees the answer, and refuses it. */
static void refuse(struct control *c, int fd, const struct ucred *cred)
{
	char **argv = NULL, msg[PATH_MAX + 160];
	int argc, n;

	log_warn("control: refused a command from uid %u (pid %d): neither root nor "
		 "the pool's owner", (unsigned int)cred->uid, (int)cred->pid);
	if (wire_recv_request(fd, &argc, &argv, NULL, CONTROL_REQUEST_TIMEOUT_S * 1000))
		return;
	free(argv);
	n = snprintf(msg, sizeof(msg), "mapperctl: permission denied: only root and the "
		     "owner of pool '%s' (uid %u) may use its daemon; you are uid %u\n",
		     pool_dir(daemon_pool(c->d)), (unsigned int)c->owner, (unsigned int)cred->uid);
	wire_send_response(fd, CMD_FAIL, "", 0, msg,
			   (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

static void set_send_timeout(int fd)
{
	struct timeval tv = { .tv_sec = CONTROL_IO_TIMEOUT_S };

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A connection whose request began: read it, run it, answer. */
static void serve_connection(struct worker_slot *w, int fd)
{
	struct control *c = w->c;
	struct ucred cred = { .pid = 0 };
	char **argv = NULL, byte;
	int argc, file, r;

	if (recv(fd, &byte, 1, MSG_PEEK) <= 0)
		return;		/* it went away without a word (mapperfs probes so) */
	set_send_timeout(fd);
	if (!peer_allowed(c, fd, &cred)) {
		refuse(c, fd, &cred);
		return;
	}
	r = wire_recv_request(fd, &argc, &argv, &file, CONTROL_REQUEST_TIMEOUT_S * 1000);
	if (r == -ETIMEDOUT) {
		log_warn("control: a client (pid %d) did not send its whole request within %d s; "
			 "closing it", (int)cred.pid, CONTROL_REQUEST_TIMEOUT_S);
	} else if (r) {
		log_warn("control: bad request from pid %d: %s", (int)cred.pid, strerror(-r));
	} else {
		serve(w, fd, &cred, argc, argv, file);
		if (file >= 0)
			close(file);
	}
	free(argv);
}

/* The next connection to serve; -1 once stopping with none left. */
static int next_connection(struct control *c)
{
	int fd = -1;

	pthread_mutex_lock(&c->lock);
	while (!c->nr_queued && !c->stopping)
		pthread_cond_wait(&c->work, &c->lock);
	if (c->nr_queued) {
		fd = c->queue[c->queue_head];
		c->queue_head = (c->queue_head + 1) % CONTROL_CONNS_MAX;
		c->nr_queued--;
	}
	pthread_mutex_unlock(&c->lock);
	if (fd >= 0)
		wake(c);	/* room in the queue: control_main may accept again */
	return fd;
}

static void *worker_main(void *arg)
{
	struct worker_slot *w = arg;
	int fd;

	pthread_mutex_lock(&w->c->lock);
	w->tid = gettid();
	pthread_mutex_unlock(&w->c->lock);
	urcu_memb_register_thread();
	while ((fd = next_connection(w->c)) >= 0) {
		serve_connection(w, fd);
		close(fd);
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/* ---- control_main: accepting, and the connections that wait ----------- */

static void queue_connection(struct control *c, int fd)
{
	pthread_mutex_lock(&c->lock);
	c->queue[(c->queue_head + c->nr_queued) % CONTROL_CONNS_MAX] = fd;
	c->nr_queued++;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
}

static unsigned int nr_queued(struct control *c)
{
	unsigned int n;

	pthread_mutex_lock(&c->lock);
	n = c->nr_queued;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* Closes idle connection @i (the array stays in arrival order). */
static void drop_idle(struct control *c, unsigned int i)
{
	close(c->idle[i].fd);
	memmove(&c->idle[i], &c->idle[i + 1], (c->nr_idle - i - 1) * sizeof(c->idle[0]));
	c->nr_idle--;
}

/* One line for the clients closed at once, @why (a format taking an int). */
static void log_closed(unsigned int n, pid_t first, const char *why, int arg)
{
	char because[128];

	snprintf(because, sizeof(because), why, arg);
	if (n == 1)
		log_warn("control: a client (pid %d) %s; closing it", (int)first, because);
	else if (n)
		log_warn("control: %u clients (the first pid %d) %s; closing them", n,
			 (int)first, because);
}

/* Room for one more connection, or an idle one that can make room. */
static bool can_accept(struct control *c)
{
	return c->nr_idle || nr_queued(c) < CONTROL_CONNS_MAX;
}

/*
 * Accepts every connection that is waiting.  When CONTROL_CONNS_MAX are
 * held, the one that has waited longest without a word goes.
 */
static void accept_all(struct control *c)
{
	unsigned int evicted = 0;
	pid_t evicted_pid = 0;

	while (can_accept(c)) {
		struct ucred cred = { .pid = 0 };
		socklen_t len = sizeof(cred);
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("control: cannot accept a client: %s", strerror(errno));
			break;
		}
		if (c->nr_idle + nr_queued(c) >= CONTROL_CONNS_MAX) {
			if (!evicted++)
				evicted_pid = c->idle[0].pid;
			drop_idle(c, 0);
		}
		getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
		c->idle[c->nr_idle++] = (struct idle){ .fd = fd, .pid = cred.pid,
						       .since_ms = now_ms() };
	}
	log_closed(evicted, evicted_pid, "sent no request while %d other connections waited",
		   CONTROL_CONNS_MAX - 1);
}

/* Blocking again, for the worker's reads and writes with timeouts. */
static int blocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 ? -errno : fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ? -errno : 0;
}

/*
 * Hands the idle connections that spoke (or hung up) to the workers,
 * closes those that said nothing in time.  @ev: poll's view of them, in
 * the same order.
 */
static void sort_idle(struct control *c, const struct pollfd *ev, uint64_t now)
{
	unsigned int expired = 0, i = 0, n = c->nr_idle;
	pid_t expired_pid = 0;

	for (unsigned int k = 0; k < n; k++) {
		struct idle *e = &c->idle[i];

		if (ev[k].revents && !blocking(e->fd)) {
			queue_connection(c, e->fd);
			memmove(e, e + 1, (c->nr_idle - i - 1) * sizeof(*e));
			c->nr_idle--;
		} else if (ev[k].revents ||
			   now >= e->since_ms + CONTROL_IDLE_TIMEOUT_S * 1000) {
			if (!ev[k].revents && !expired++)
				expired_pid = e->pid;
			drop_idle(c, i);
		} else {
			i++;
		}
	}
	log_closed(expired, expired_pid, "sent no request within %d s", CONTROL_IDLE_TIMEOUT_S);
}

/* ---- notes: whom a command waits for ----------------------------------- */

/* The line for a client that waits for thread @tid (c->lock held). */
static void note_for(struct control *c, pid_t tid, char *buf, size_t len)
{
	for (unsigned int i = 0; i < c->nr_workers; i++) {
		struct worker_slot *w = &c->workers[i];

		if (w->running && w->tid == tid) {
			snprintf(buf, len, "mapperctl: waiting for '%s' (pid %d) ...\n", w->what,
				 (int)w->peer);
			return;
		}
	}
	snprintf(buf, len, "mapperctl: waiting for the daemon (pid %d), which is changing "
		 "the pool itself (a thin pool's autoextend, a volume file's truncate or "
		 "copy) ...\n", (int)getpid());
}

/*
 * Tells each client whose command has run CONTROL_NOTE_AFTER_MS and waits
 * for another whom it waits for, once.  Returns when to look again (ms,
 * -1: no command may need it).
 */
static int send_notes(struct control *c, uint64_t now)
{
	pid_t busy = pool_busy_thread(daemon_pool(c->d));
	char line[256];
	int next = -1;

	pthread_mutex_lock(&c->lock);
	for (unsigned int i = 0; i < c->nr_workers; i++) {
		struct worker_slot *w = &c->workers[i];
		uint64_t due = w->started_ms + CONTROL_NOTE_AFTER_MS;
		int wait;

		if (!w->running || w->noted)
			continue;
		if (now >= due && busy && busy != w->tid) {
			note_for(c, busy, line, sizeof(line));
			wire_send_note(w->fd, line);
			w->noted = true;
			continue;
		}
		wait = now >= due ? CONTROL_NOTE_TICK_MS : (int)(due - now);
		if (next < 0 || wait < next)
			next = wait;
	}
	pthread_mutex_unlock(&c->lock);
	return next;
}

/* Until the first idle connection's time is up, or @notes; -1: never. */
static int poll_timeout(struct control *c, uint64_t now, int notes)
{
	uint64_t due;
	int idle;

	if (!c->nr_idle)
		return notes;
	due = c->idle[0].since_ms + CONTROL_IDLE_TIMEOUT_S * 1000;
	idle = due > now ? (int)(due - now) : 0;
	return notes >= 0 && notes < idle ? notes : idle;
}

static bool stopping(struct control *c)
{
	bool s;

	pthread_mutex_lock(&c->lock);
	s = c->stopping;
	pthread_mutex_unlock(&c->lock);
	return s;
}

static void *control_main(void *arg)
{
	struct control *c = arg;
	struct pollfd ev[2 + CONTROL_CONNS_MAX];

	while (!stopping(c)) {
		int notes = send_notes(c, now_ms());
		unsigned int n = 0;
		uint64_t drained;
		bool listening = can_accept(c);

		ev[n++] = (struct pollfd){ .fd = c->wake_fd, .events = POLLIN };
		ev[n++] = (struct pollfd){ .fd = listening ? c->listen_fd : -1, .events = POLLIN };
		for (unsigned int i = 0; i < c->nr_idle; i++)
			ev[n++] = (struct pollfd){ .fd = c->idle[i].fd, .events = POLLIN };
		if (poll(ev, n, poll_timeout(c, now_ms(), notes)) < 0 && errno != EINTR) {
			log_error("control: poll failed: %s", strerror(errno));
			break;
		}
		if (ev[0].revents && read(c->wake_fd, &drained, sizeof(drained)) < 0)
			log_debug("control: wake-up: %s", strerror(errno));
		sort_idle(c, &ev[2], now_ms());
		if (ev[1].revents)
			accept_all(c);
	}
	while (c->nr_idle)
		drop_idle(c, 0);
	return NULL;
}

/* ---- starting and stopping --------------------------------------------- */

/*
 * The socket is root's or ours, as mapperctl demands (wire.c), and only
 * who may use the daemon may connect: mode 0600.  But a root daemon
 * serving another user's pool must let that user in too, without giving
 * them the socket: it makes it root's, in the owner's primary group, mode
 * 0660.  It is created so, in one step (the group from this thread's
 * fsgid, the mode from the umask), never changed by its path afterwards,
 * which the owner could by then have swapped for a link.  Others in that
 * group (or in the directory's, if the owner made it set-group-ID) can
 * connect, and peer_allowed refuses them.
 */
static int bind_socket(struct control *c)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	bool shared = geteuid() == 0 && c->owner != 0;
	struct fsid_saved self;
	mode_t old_umask;
	int r;

	memcpy(addr.sun_path, c->path, sizeof(c->path));
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->listen_fd < 0)
		return -errno;
	/* We hold the pool lock, so a socket file left here is stale. */
	unlink(c->path);
	/* The group from this thread's fsgid (fsid.h: this thread only). */
	if (shared && fsid_take_group(c->group, &self)) {
		log_warn("control: cannot make '%s' in group %u of the pool's owner (uid %u): "
			 "only root can use the daemon", c->path, (unsigned int)c->group,
			 (unsigned int)c->owner);
		shared = false;
	}
	old_umask = umask(shared ? 0117 : 0177);
	r = bind(c->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	umask(old_umask);
	if (shared)
		fsid_restore(&self);
	if (!r && listen(c->listen_fd, CONTROL_BACKLOG))
		r = -errno;
	if (r) {
		log_error("cannot listen on '%s': %s", c->path, strerror(-r));
		close(c->listen_fd);
		unlink(c->path);
	}
	return r;
}

/* Ends the threads: the workers once the queue is empty. */
static void join_threads(struct control *c)
{
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_cond_broadcast(&c->work);
	pthread_mutex_unlock(&c->lock);
	wake(c);
	pthread_join(c->thread, NULL);
	for (unsigned int i = 0; i < c->nr_workers; i++)
		pthread_join(c->workers[i].thread, NULL);
}

static void control_free(struct control *c)
{
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->changed);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int control_start(struct daemon *d, struct control **out)
{
	struct control *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->d = d;
	c->owner = pool_owner(daemon_pool(d))->uid;
	c->group = pool_owner(daemon_pool(d))->gid;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->changed, NULL);
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wake_fd < 0) {
		r = -errno;
		control_free(c);
		return r;
	}
	if ((size_t)snprintf(c->path, sizeof(c->path), "%s/%s", pool_dir(daemon_pool(d)),
			     CONTROL_SOCKET) >= sizeof(c->path)) {
		log_error("pool path '%s' is too long for a Unix socket",
			  pool_dir(daemon_pool(d)));
		control_free(c);
		return -ENAMETOOLONG;
	}
	r = bind_socket(c);
	if (r) {
		control_free(c);
		return r;
	}
	for (; !r && c->nr_workers < CONTROL_WORKERS; c->nr_workers++) {
		struct worker_slot *w = &c->workers[c->nr_workers];

		w->c = c;
		r = -pthread_create(&w->thread, NULL, worker_main, w);
	}
	if (r)
		c->nr_workers--;
	if (!r)
		r = -pthread_create(&c->thread, NULL, control_main, c);
	if (r) {
		log_error("control: cannot start its threads: %s", strerror(-r));
		pthread_mutex_lock(&c->lock);
		c->stopping = true;
		pthread_cond_broadcast(&c->work);
		pthread_mutex_unlock(&c->lock);
		for (unsigned int i = 0; i < c->nr_workers; i++)
			pthread_join(c->workers[i].thread, NULL);
		close(c->listen_fd);
		unlink(c->path);
		control_free(c);
		return r;
	}
	*out = c;
	return 0;
}

void control_drain(struct control *c)
{
	pthread_mutex_lock(&c->lock);
	c->draining = true;
	for (unsigned int i = 0; i < c->nr_workers; i++)
		while (c->workers[i].running && c->workers[i].changes)
			pthread_cond_wait(&c->changed, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

/*
 * Connections that sent nothing are cut off (they see the connection
 * close); requests that began are served, and commands in progress run to
 * their end and answer.
 */
void control_stop(struct control *c)
{
	unlink(c->path);	/* who comes now finds no daemon, and waits for the lock */
	join_threads(c);
	close(c->listen_fd);
	control_free(c);
}
