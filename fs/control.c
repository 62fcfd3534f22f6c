#include "control.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmd.h"
#include "daemon.h"
#include "log.h"
#include "pool.h"
#include "rcu.h"
#include "transport.h"
#include "wire.h"

/*
 * Connections are served by a thread each, so a client that connects and
 * says nothing (a hung mapperctl, a forgotten socat) delays nobody: its
 * thread reads the whole request (each read at most CONTROL_IO_TIMEOUT_S)
 * outside any lock, and only root and the pool's owner get that far
 * (SO_PEERCRED).  Commands then run one at a time under @run, as they
 * share getopt's globals; the pool service orders its own changes.
 */
#define CONTROL_CLIENTS_MAX	16	/* connections served at once */
#define CONTROL_IO_TIMEOUT_S	5	/* per read or write of a client */

struct control;

struct client {
	struct control *c;
	int fd;				/* -1: slot free */
	bool waiting;			/* for its first byte: control_stop cuts it */
};

struct control {
	struct daemon *d;
	int listen_fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uid_t owner;			/* of the pool directory */
	pthread_t thread;		/* accepts */
	pthread_mutex_t run;		/* one command at a time */
	pthread_mutex_t lock;		/* guards what follows */
	pthread_cond_t changed;		/* a slot came free, or stopping */
	bool stopping;
	unsigned int nr_clients;
	struct client clients[CONTROL_CLIENTS_MAX];
};

/*
 * Runs a command line received whole (with the file it reads, @input, or
 * -1), one command at a time, and answers.
 */
static void serve(struct control *c, int fd, int argc, char **argv, int input)
{
	struct cmd_ctx ctx = {
		.pool = daemon_pool(c->d),
		.pool_dir = pool_dir(daemon_pool(c->d)),
		.transport = transport_name(),
		.input = input,
	};
	char *out = NULL, *err = NULL;
	size_t out_len = 0, err_len = 0;
	int status;

	ctx.out = open_memstream(&out, &out_len);
	ctx.err = open_memstream(&err, &err_len);
	if (!ctx.out || !ctx.err) {
		status = CMD_FAIL;
	} else {
		pthread_mutex_lock(&c->run);
		status = cmd_dispatch(&ctx, argc, argv);
		pthread_mutex_unlock(&c->run);
		daemon_forget_attrs(c->d);
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
	if (wire_recv_request(fd, &argc, &argv, NULL))
		return;
	free(argv);
	n = snprintf(msg, sizeof(msg), "mapperctl: permission denied: only root and the "
		     "owner of pool '%s' (uid %u) may use its daemon; you are uid %u\n",
		     pool_dir(daemon_pool(c->d)), (unsigned int)c->owner, (unsigned int)cred->uid);
	wire_send_response(fd, CMD_FAIL, "", 0, msg,
			   (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/*
 * Waits for the first byte of a request.  false: the client went away
 * without a word (mapperfs probes the socket so) or said nothing in time.
 */
static bool wait_request(int fd, const struct ucred *cred)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char byte;
	int n;

	do
		n = poll(&p, 1, CONTROL_IO_TIMEOUT_S * 1000);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		log_warn("control: a client (pid %d) sent no request within %d s; "
			 "closing it", (int)cred->pid, CONTROL_IO_TIMEOUT_S);
	return n > 0 && recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

static void set_io_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = CONTROL_IO_TIMEOUT_S };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void client_done(struct client *cl)
{
	struct control *c = cl->c;

	pthread_mutex_lock(&c->lock);
	close(cl->fd);
	cl->fd = -1;
	c->nr_clients--;
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	struct control *c = cl->c;
	struct ucred cred = { .pid = 0 };
	bool allowed = peer_allowed(c, cl->fd, &cred);
	bool asked = wait_request(cl->fd, &cred);

	pthread_mutex_lock(&c->lock);
	cl->waiting = false;
	pthread_mutex_unlock(&c->lock);
	set_io_timeouts(cl->fd);
	if (asked && !allowed) {
		refuse(c, cl->fd, &cred);
	} else if (asked) {
		char **argv = NULL;
		int argc, input, r;

		r = wire_recv_request(cl->fd, &argc, &argv, &input);
		if (r) {
			log_warn("control: bad request: %s", strerror(-r));
		} else {
			urcu_memb_register_thread();
			serve(c, cl->fd, argc, argv, input);
			urcu_memb_unregister_thread();
			if (input >= 0)
				close(input);
		}
		free(argv);
	}
	client_done(cl);
	return NULL;
}

/* A free slot, waiting for one while CONTROL_CLIENTS_MAX are served. */
static struct client *take_slot(struct control *c)
{
	struct client *cl = NULL;

	pthread_mutex_lock(&c->lock);
	while (c->nr_clients == CONTROL_CLIENTS_MAX && !c->stopping)
		pthread_cond_wait(&c->changed, &c->lock);
	for (unsigned int i = 0; i < CONTROL_CLIENTS_MAX && !c->stopping && !cl; i++)
		if (c->clients[i].fd < 0)
			cl = &c->clients[i];
	pthread_mutex_unlock(&c->lock);
	return cl;
}

static void start_client(struct control *c, struct client *cl, int fd)
{
	pthread_attr_t attr;
	pthread_t thread;
	int r;

	pthread_mutex_lock(&c->lock);
	cl->fd = fd;
	cl->waiting = true;
	c->nr_clients++;
	pthread_mutex_unlock(&c->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&thread, &attr, client_main, cl);
	pthread_attr_destroy(&attr);
	if (r) {
		log_warn("control: cannot start a thread for a client: %s", strerror(r));
		client_done(cl);
	}
}

static void *control_main(void *arg)
{
	struct control *c = arg;
	struct client *cl;

	while ((cl = take_slot(c))) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0)
			start_client(c, cl, fd);
		else if (errno != EINTR && errno != ECONNABORTED)
			break;		/* shut down by control_stop() */
	}
	return NULL;
}

int control_start(struct daemon *d, struct control **out)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct control *c = calloc(1, sizeof(*c));
	mode_t old_umask;
	struct stat st;
	int r;

	if (!c)
		return -ENOMEM;
	c->d = d;
	c->owner = stat(pool_dir(daemon_pool(d)), &st) ? 0 : st.st_uid;
	pthread_mutex_init(&c->run, NULL);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->changed, NULL);
	for (unsigned int i = 0; i < CONTROL_CLIENTS_MAX; i++)
		c->clients[i] = (struct client){ .c = c, .fd = -1 };
	if ((size_t)snprintf(c->path, sizeof(c->path), "%s/%s", pool_dir(daemon_pool(d)),
			     CONTROL_SOCKET) >= sizeof(c->path)) {
		log_error("pool path '%s' is too long for a Unix socket",
			  pool_dir(daemon_pool(d)));
		free(c);
		return -ENAMETOOLONG;
	}
	memcpy(addr.sun_path, c->path, sizeof(c->path));
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->listen_fd < 0) {
		r = -errno;
		goto err_free;
	}
	/* We hold the pool lock, so a socket file left here is stale. */
	unlink(c->path);
	old_umask = umask(0177);
	r = bind(c->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	umask(old_umask);
	if (r || listen(c->listen_fd, 16)) {
		r = r ? r : -errno;
		log_error("cannot listen on '%s': %s", c->path, strerror(-r));
		goto err_close;
	}
	r = -pthread_create(&c->thread, NULL, control_main, c);
	if (r)
		goto err_unlink;
	*out = c;
	return 0;

err_unlink:
	unlink(c->path);
err_close:
	close(c->listen_fd);
err_free:
	free(c);
	return r;
}

/*
 * Clients still waiting for their first byte are cut off (they see the
 * connection close); a command in progress runs to its end and answers.
 */
void control_stop(struct control *c)
{
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
	shutdown(c->listen_fd, SHUT_RDWR);
	pthread_join(c->thread, NULL);
	pthread_mutex_lock(&c->lock);
	for (unsigned int i = 0; i < CONTROL_CLIENTS_MAX; i++)
		if (c->clients[i].fd >= 0 && c->clients[i].waiting)
			shutdown(c->clients[i].fd, SHUT_RDWR);
	while (c->nr_clients)
		pthread_cond_wait(&c->changed, &c->lock);
	pthread_mutex_unlock(&c->lock);
	close(c->listen_fd);
	unlink(c->path);
	pthread_cond_destroy(&c->changed);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->run);
	free(c);
}
