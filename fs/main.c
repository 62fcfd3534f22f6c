/*
 * fs/main.c: mapperfs, the daemon, and the composition root.
 *
 *   mapperfs [--pool DIR] MOUNTPOINT [-f] [-o opt[,opt...]]
 *
 * Start-up is ordered so that a problem is reported before anything is
 * mounted: take the pool lock, open the store, open and verify every raw
 * device (label, size), build every volume; only then mount, start the
 * workers and the control socket.  Without -f the process forks first and
 * the parent waits for the child to say "ready" (or to fail), so when
 * mapperfs returns 0 the mount is usable and POOL/mapperfs.pid is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "daemon.h"
#include "log.h"
#include "ops.h"
#include "pool.h"
#include "pool_port.h"
#include "rcu.h"
#include "transport.h"
#include "workers.h"

#define DEFAULT_POOL	"/var/lib/mapperfs"
#define DEFAULT_WORKERS	32

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

struct options {
	const char *pool_dir;
	const char *mountpoint;
	int foreground;
	unsigned int workers;
	char *fuse_opts;		/* passed to libfuse as -o */
};

static const char usage_text[] =
	"usage: mapperfs [--pool DIR] MOUNTPOINT [-f] [-o opt[,opt...]]\n"
	"\n"
	"Serves every volume of the pool DIR (default $MAPPERFS_POOL, else\n"
	DEFAULT_POOL ") as a regular file MOUNTPOINT/<name>.\n"
	"\n"
	"  --pool DIR     the pool directory (made by 'mapperctl init')\n"
	"  -f             stay in the foreground, log to stderr\n"
	"  -o threads=N   worker threads (default 32)\n"
	"  -o OPT         any FUSE mount option, e.g. allow_other\n"
	"  -h, --help     this text\n"
	"\n"
	"Stop it with 'fusermount3 -u MOUNTPOINT'.\n";

static int add_fuse_opt(struct options *o, const char *opt)
{
	size_t old = o->fuse_opts ? strlen(o->fuse_opts) : 0;
	char *s = realloc(o->fuse_opts, old + strlen(opt) + 2);

	if (!s)
		return -ENOMEM;
	if (old)
		s[old++] = ',';
	strcpy(s + old, opt);
	o->fuse_opts = s;
	return 0;
}

/* Splits -o lists: ours (threads=N) are kept, the rest go to libfuse. */
static int parse_o(struct options *o, char *list)
{
	for (char *save, *opt = strtok_r(list, ",", &save); opt;
	     opt = strtok_r(NULL, ",", &save)) {
		if (!strncmp(opt, "threads=", 8)) {
			char *end;
			unsigned long n = strtoul(opt + 8, &end, 10);

			if (*end || n < 1 || n > 1024) {
				log_error("invalid -o %s: use threads=1..1024", opt);
				return -EINVAL;
			}
			o->workers = (unsigned int)n;
		} else if (add_fuse_opt(o, opt)) {
			return -ENOMEM;
		}
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "foreground", no_argument, NULL, 'f' },
		{ 0 }
	};
	int c;

	o->pool_dir = getenv("MAPPERFS_POOL") ? getenv("MAPPERFS_POOL") : DEFAULT_POOL;
	o->workers = DEFAULT_WORKERS;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->pool_dir = optarg;
			break;
		case 'f':
			o->foreground = 1;
			break;
		case 'o':
			if (parse_o(o, optarg))
				return 2;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			log_error("unknown option '%s' (see mapperfs --help)", argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind != 1) {
		log_error(optind < argc ? "more than one mount point given (see mapperfs --help)"
					: "no mount point given (see mapperfs --help)");
		return 2;
	}
	o->mountpoint = argv[optind];
	return 0;
}

/* Holds the pool lock for the life of the process (and its child). */
static int lock_pool(const char *pool_dir)
{
	int fd = pool_lock(pool_dir);

	if (fd == -EBUSY)
		log_error("pool '%s' is in use by another process", pool_dir);
	else if (fd < 0)
		log_error("no pool at '%s': %s (run 'mapperctl init')", pool_dir,
			  strerror(-fd));
	return fd;
}

/*
 * A loop device over one of our files sends its writeback through us;
 * without PF_IO_FLUSHER our own allocations under memory pressure could
 * wait on that writeback: a deadlock.  Asked for before any thread starts
 * (threads inherit it); the answer is logged once serving, in the log.
 * Returns 0 or the errno of the refusal.
 */
static int ask_for_io_flusher(void)
{
	return prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) < 0 ? errno : 0;
}

static void log_io_flusher(int refused)
{
	if (refused)
		log_warn("PR_SET_IO_FLUSHER refused (%s): a loop device on this mount "
			 "may deadlock under memory pressure", strerror(refused));
	else
		log_info("running as an I/O flusher (PR_SET_IO_FLUSHER)");
}

static int mount_session(struct daemon *d, const struct options *o,
			 struct fuse_session **out)
{
	char *args[4] = { "mapperfs", NULL, NULL, NULL };
	struct fuse_args fargs;
	char base[] = "fsname=mapperfs,subtype=mapperfs,default_permissions";
	struct fuse_session *se;
	char *opts;
	int r;

	if (asprintf(&opts, "%s%s%s", base, o->fuse_opts ? "," : "",
		     o->fuse_opts ? o->fuse_opts : "") < 0)
		return -ENOMEM;
	args[1] = "-o";
	args[2] = opts;
	fargs = (struct fuse_args)FUSE_ARGS_INIT(3, args);
	se = fuse_session_new(&fargs, &mapperfs_ops, sizeof(mapperfs_ops), d);
	fuse_opt_free_args(&fargs);
	free(opts);
	if (!se) {
		log_error("cannot start a FUSE session (bad -o option?)");
		return -EINVAL;
	}
	r = fuse_session_mount(se, o->mountpoint);
	if (!r && transport_install(se)) {
		fuse_session_unmount(se);
		r = -1;
	}
	if (r) {
		log_error("cannot mount on '%s'", o->mountpoint);
		fuse_session_destroy(se);
		return -EIO;
	}
	*out = se;
	return 0;
}

/* The signals signal_main() takes; every other thread blocks them. */
static void handled_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
}

struct signal_ctx {
	struct fuse_session *se;
	const char *mountpoint;
};

/* Ends the session on SIGTERM/SIGINT/SIGHUP, as fusermount3 -u would. */
static void *signal_main(void *arg)
{
	struct signal_ctx *s = arg;
	sigset_t set;
	int sig;

	handled_signals(&set);
	sigwait(&set, &sig);
	if (sig != SIGUSR1) {	/* USR1: main() asks us to return */
		log_info("signal %d: unmounting '%s'", sig, s->mountpoint);
		fuse_session_exit(s->se);
		fuse_session_unmount(s->se);
	}
	return NULL;
}

static int write_pidfile(const char *pool_dir)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/mapperfs.pid", pool_dir);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", (int)getpid());
	return fclose(f) ? -errno : 0;
}

/*
 * Forks; the parent waits on a pipe for the child's "ready" byte and exits
 * 0, or exits with the child's status if the pipe closes first.  Returns
 * the write end in the child.
 */
static int detach(void)
{
	int fds[2], status;
	pid_t pid;
	char c;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(fds[0]);
		setsid();
		return fds[1];
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) == 1)
		_exit(0);
	waitpid(pid, &status, 0);
	_exit(WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : 1);
}

/*
 * A detached daemon logs to POOL/mapperfs.log from the start, so what
 * opening the pool found failed is there; until it is ready, warnings and
 * errors also reach the terminal that started it.
 */
static void log_to_pool(const char *pool_dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/mapperfs.log", pool_dir);
	if (log_to_file(path))
		log_warn("cannot log to '%s'", path);
	else
		log_also_stderr(true);
}

static void tell_ready(int ready_fd)
{
	int null_fd;

	if (ready_fd < 0)
		return;
	log_also_stderr(false);
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd >= 0) {
		dup2(null_fd, STDIN_FILENO);
		dup2(null_fd, STDOUT_FILENO);
		dup2(null_fd, STDERR_FILENO);
		close(null_fd);
	}
	if (write(ready_fd, "r", 1) != 1)
		log_warn("the starting process went away");
	close(ready_fd);
}

static int serve(struct daemon *d, const struct options *o, int ready_fd,
		 int io_flusher_refused)
{
	struct signal_ctx sig = { .mountpoint = o->mountpoint };
	struct control *control;
	struct workers *workers;
	pthread_t signal_thread;
	int r;

	r = mount_session(d, o, &sig.se);
	if (r)
		return r;
	daemon_set_session(d, sig.se);
	r = workers_start(sig.se, o->workers, &workers);
	if (!r)
		r = control_start(d, &control);
	if (r) {
		fuse_session_exit(sig.se);
		fuse_session_unmount(sig.se);
		workers_join(workers);
		daemon_set_session(d, NULL);
		fuse_session_destroy(sig.se);
		return r;
	}
	pthread_create(&signal_thread, NULL, signal_main, &sig);
	r = write_pidfile(o->pool_dir);
	if (r)
		log_warn("cannot write the pid file: %s", strerror(-r));
	log_info("serving pool '%s' on '%s' with %u workers", o->pool_dir,
		 o->mountpoint, o->workers);
	tell_ready(ready_fd);
	log_io_flusher(io_flusher_refused);

	workers_join(workers);		/* returns once the mount is gone */
	pthread_kill(signal_thread, SIGUSR1);
	pthread_join(signal_thread, NULL);
	control_stop(control);
	daemon_set_session(d, NULL);
	fuse_session_unmount(sig.se);
	fuse_session_destroy(sig.se);
	log_info("unmounted '%s'", o->mountpoint);
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	int ready_fd = -1, lock_fd, io_flusher_refused, r;
	char pool_path[PATH_MAX], mountpoint_path[PATH_MAX];
	const char *pool_arg, *mountpoint_arg;
	struct pool_error err;
	struct daemon *d;
	struct pool *pool;
	sigset_t set;

	log_init("mapperfs");
	r = parse_args(argc, argv, &o);
	if (r)
		return r;
	pool_arg = o.pool_dir;
	mountpoint_arg = o.mountpoint;
	o.pool_dir = realpath(pool_arg, pool_path);
	if (!o.pool_dir) {
		log_error("no pool at '%s': %s", pool_arg, strerror(errno));
		return 1;
	}
	o.mountpoint = realpath(mountpoint_arg, mountpoint_path);
	if (!o.mountpoint) {
		log_error("mount point '%s': %s", mountpoint_arg, strerror(errno));
		return 1;
	}
	if (!o.foreground) {
		ready_fd = detach();
		if (ready_fd < 0) {
			log_error("cannot detach: %s", strerror(-ready_fd));
			return 1;
		}
	}
	/* Every thread inherits this mask; signal_main() takes them. */
	handled_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	lock_fd = lock_pool(o.pool_dir);
	if (lock_fd < 0)
		return 1;
	if (!o.foreground)
		log_to_pool(o.pool_dir);
	io_flusher_refused = ask_for_io_flusher();
	urcu_memb_register_thread();
	r = pool_open(o.pool_dir, pool_port_open, &pool, &err);
	if (r) {
		log_error("%s", err.msg);
	} else {
		d = daemon_new(pool);
		if (!d) {
			log_error("out of memory");
			pool_close(pool);
			r = -ENOMEM;
		} else {
			r = serve(d, &o, ready_fd, io_flusher_refused);
			daemon_free(d);
		}
	}
	urcu_memb_unregister_thread();
	close(lock_fd);
	return r ? 1 : 0;
}
