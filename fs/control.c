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
#include "json.h"
#include "log.h"
#include "rcu.h"
#include "switch.h"
#include "thin_pool.h"
#include "volume.h"
#include "wire.h"

struct control {
	struct daemon *d;
	int listen_fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
};

static int live_volume_removing(void *arg, int64_t id)
{
	return daemon_volume_removing(arg, id);
}

static int live_thin_created(void *arg, int64_t id, int64_t pool, int64_t origin)
{
	return daemon_thin_created(arg, id, pool, origin);
}

static int live_thin_rollback(void *arg, int64_t id, int64_t snap)
{
	return daemon_thin_rollback(arg, id, snap);
}

static int live_pool_sync(void *arg, int64_t pool)
{
	struct thin_pool *p = daemon_pool(arg, pool);

	return p ? thin_pool_commit(p) : 0;
}

static int live_pool_counts(void *arg, int64_t pool, struct thin_pool_counts *out)
{
	struct thin_pool *p = daemon_pool(arg, pool);

	return p ? thin_pool_commit_counts(p, out) : -ENOENT;
}

static int live_volume_changed(void *arg, int64_t id)
{
	return daemon_volume_changed(arg, id);
}

static int live_device_changed(void *arg, int64_t id)
{
	return daemon_device_changed(arg, id);
}

static void live_volume_status(void *arg, int64_t id, struct json *j)
{
	struct daemon *d = arg;
	struct volume *v;

	rcu_read_begin();
	v = volset_find_id(volset_read(&d->vols), id);
	if (v) {
		json_u64(j, "open", (uint64_t)atomic_load(&v->holders));
		json_u64(j, "reads", atomic_load(&v->stats.reads));
		json_u64(j, "writes", atomic_load(&v->stats.writes));
		json_u64(j, "read_bytes", atomic_load(&v->stats.read_bytes));
		json_u64(j, "write_bytes", atomic_load(&v->stats.write_bytes));
		json_u64(j, "io_errors", atomic_load(&v->stats.errors));
	}
	rcu_read_end();
}

static void live_switch_path_status(void *arg, int64_t id, unsigned int path,
				    struct json *j)
{
	const struct switch_path_stats *st;
	struct daemon *d = arg;
	struct volume *v;

	rcu_read_begin();
	v = volset_find_id(volset_read(&d->vols), id);
	if (v && !strcmp(v->target->ops->name, "switch")) {
		st = switch_path_stats(v->target, path);
		json_u64(j, "reads", atomic_load_explicit(&st->reads, memory_order_relaxed));
		json_u64(j, "writes", atomic_load_explicit(&st->writes, memory_order_relaxed));
		json_u64(j, "read_bytes",
			 atomic_load_explicit(&st->read_bytes, memory_order_relaxed));
		json_u64(j, "write_bytes",
			 atomic_load_explicit(&st->write_bytes, memory_order_relaxed));
	}
	rcu_read_end();
}

static const struct live_ops live_ops = {
	.volume_removing = live_volume_removing,
	.thin_created = live_thin_created,
	.thin_rollback = live_thin_rollback,
	.pool_sync = live_pool_sync,
	.pool_counts = live_pool_counts,
	.volume_changed = live_volume_changed,
	.device_changed = live_device_changed,
	.volume_status = live_volume_status,
	.switch_path_status = live_switch_path_status,
};

static void serve(struct control *c, int fd)
{
	struct cmd_ctx ctx = {
		.store = c->d->store,
		.pool_dir = c->d->pool_dir,
		.live = &live_ops,
		.live_arg = c->d,
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
	if ((size_t)snprintf(c->path, sizeof(c->path), "%s/%s", d->pool_dir,
			     CONTROL_SOCKET) >= sizeof(c->path)) {
		log_error("pool path '%s' is too long for a Unix socket", d->pool_dir);
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
