#include "control.h"

#include <errno.h>
#include <pthread.h>
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
#include "wire.h"

struct control {
	struct daemon *d;
	int listen_fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
};

static void serve(struct control *c, int fd)
{
	struct cmd_ctx ctx = {
		.pool = daemon_pool(c->d),
		.pool_dir = pool_dir(daemon_pool(c->d)),
	};
	char *out = NULL, *err = NULL, **argv = NULL;
	size_t out_len = 0, err_len = 0;
	int argc, status, r;

	r = wire_recv_request(fd, &argc, &argv);
	if (r) {
		log_warn("control: bad request: %s", strerror(-r));
		return;
	}
	ctx.out = open_memstream(&out, &out_len);
	ctx.err = open_memstream(&err, &err_len);
	if (!ctx.out || !ctx.err) {
		status = CMD_FAIL;
	} else {
		status = cmd_dispatch(&ctx, argc, argv);
		daemon_forget_attrs(c->d);
	}
	if (ctx.out)
		fclose(ctx.out);
	if (ctx.err)
		fclose(ctx.err);
	wire_send_response(fd, status, out, out_len, err, err_len);
	free(out);
	free(err);
	free(argv);
}

static void *control_main(void *arg)
{
	struct control *c = arg;

	urcu_memb_register_thread();
	for (;;) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;		/* shut down by control_stop() */
		}
		serve(c, fd);
		close(fd);
	}
	urcu_memb_unregister_thread();
	return NULL;
}

int control_start(struct daemon *d, struct control **out)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct control *c = calloc(1, sizeof(*c));
	mode_t old_umask;
	int r;

	if (!c)
		return -ENOMEM;
	c->d = d;
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

void control_stop(struct control *c)
{
	shutdown(c->listen_fd, SHUT_RDWR);
	pthread_join(c->thread, NULL);
	close(c->listen_fd);
	unlink(c->path);
	free(c);
}
