/*
 * fs/main.c: mapperfs, the daemon, and the composition root.
 *
 *   mapperfs [--pool DIR] MOUNTPOINT [-f] [-o opt[,opt...]]
 *   mount.fuse.mapperfs POOL MOUNTPOINT [-sfnv] [-o opts] [-t fuse.mapperfs]
 *
 * Run by a name starting "mount." it is mount(8)'s helper, and takes its
 * flags as mount(8) means them: -f is "fake" (check the arguments, mount
 * nothing, exit 0), not "foreground"; -s, -n, -v change nothing here.
 *
 * Start-up is ordered so that a problem is reported before anything is
 * mounted: take the pool lock, open the store, open and verify every raw
 * device (label, size), build every volume; only then mount, start the
 * workers and the control socket.  Without -f the process forks first and
 * the parent waits for the child to say "ready" (or to fail), so when
 * mapperfs returns 0 the mount is usable and POOL/mapperfs.pid is written.
 *
 * The transport is settled before "ready": the io_uring threads are made
 * before the kernel's INIT is answered (so the answer can ask for the
 * rings), one /dev/fuse worker answers INIT, and then either the rings
 * are handed to the kernel or the other /dev/fuse workers start.  The
 * kernel holds every request until one or the other is in place.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "control.h"
#include "daemon.h"
#include "exporter.h"
#include "fuse_abi.h"
#include "lock_wait.h"
#include "log.h"
#include "nbd_link.h"
#include "ops.h"
#include "pool.h"
#include "pool_port.h"
#include "rcu.h"
#include "regfile.h"
#include "size.h"
#include "stop.h"
#include "thin_pool.h"
#include "transport.h"
#include "uring_transport.h"
#include "volset.h"
#include "volume.h"
#include "workers.h"

#define DEFAULT_POOL	"/var/lib/mapperfs"
#define DEFAULT_WORKERS	32
#define DEFAULT_SPIN_US	50
#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

enum transport_choice {
	CHOOSE_AUTO,		/* io_uring where the kernel offers it */
	CHOOSE_IO_URING,	/* io_uring or refuse to start */
	CHOOSE_DEV_FUSE,	/* /dev/fuse read/writev */
};

struct options {
	const char *pool_dir;
	const char *mountpoint;
	int foreground;
	int fake;			/* helper -f: check the arguments, mount nothing */
	int syslog;			/* -o syslog: lines to syslog too */
	int nonempty;			/* -o nonempty: mount over files */
	unsigned int workers;		/* requests served at once */
	unsigned int event_timeout_s;	/* a thin pool's event command is killed after */
	unsigned int spin_us;		/* a ring thread polls through quiet spells this long */
	unsigned int batch;		/* ring entries per thread; 0: by the devices */
	unsigned int sync_mib;		/* mirror resync and move copy, MiB/s; 0: no limit */
	unsigned int nbd_timeout_s;	/* an NBD device's requests fail after */
	uint64_t cache_bytes;		/* each thin pool's loaded leaves, at most */
	enum transport_choice transport;
	char *fuse_opts;		/* passed to libfuse as -o */
};

static const char usage_text[] =
	"usage: mapperfs [--pool DIR] MOUNTPOINT [-f] [-o opt[,opt...]]\n"
	"       mapperfs POOL MOUNTPOINT [-f] [-o opt[,opt...]]\n"
	"       mount -t fuse.mapperfs POOL MOUNTPOINT [-o opt[,opt...]]\n"
	"\n"
	"Serves every active volume of the pool DIR (default $MAPPERFS_POOL, else\n"
	DEFAULT_POOL ") as a regular file MOUNTPOINT/<name>.\n"
	"\n"
	"  --pool DIR     the pool directory (made by 'mapperctl init'); or give it\n"
	"                 before MOUNTPOINT, as mount(8) and fstab do\n"
	"  -f             stay in the foreground (a systemd service), log to stderr;\n"
	"                 where stderr is the journal, to it and to DIR/mapperfs.log\n"
	"  -o threads=N   requests served at once (default 32): /dev/fuse worker\n"
	"                 threads, or io_uring entries (N / CPUs per CPU)\n"
	"  -o transport=T how requests reach the daemon: auto (default: io_uring\n"
	"                 where the kernel offers it), io_uring, or dev-fuse\n"
	"  -o spin=US     io_uring: while requests keep coming, a ring thread\n"
	"                 whose CPU has nothing else to run polls for the next one\n"
	"                 until US microseconds pass without any (0..1000,\n"
	"                 default 50; 0: never)\n"
	"  -o batch=N     io_uring: ring entries per thread, requests one thread\n"
	"                 serves per wake-up (1..8; default 8 when every raw\n"
	"                 device is memory, as tmpfs, else 1)\n"
	"  -o sync_rate=M mirrors' resync and rebuild and moves copy at most M MiB/s\n"
	"                 each (0..1000000, default 256; 0: no limit)\n"
	"  -o log=LEVEL   error, warning, info (default) or debug\n"
	"  -o syslog      log to syslog (facility daemon) as well\n"
	"  -o nonempty    mount over a directory that has files in it\n"
	"  -o event_timeout=S  kill a thin pool's event command (--on-event) after\n"
	"                 S seconds (1..86400, default 60)\n"
	"  -o cache_size=SIZE  each thin pool keeps at most SIZE of its map's leaves\n"
	"                 loaded (K, M, G, T; default 256M, 2 KiB per 512 blocks,\n"
	"                 in whole leaves; at least 2K; 0: no limit)\n"
	"  -o nbd_timeout=S  an NBD raw device's requests wait up to S seconds for\n"
	"                 its server to come back, then fail (1..3600, default 30)\n"
	"  -o OPT         any FUSE mount option, e.g. allow_other; fstab's own\n"
	"                 (defaults, auto, noauto, nofail, _netdev, user, x-*,\n"
	"                 comment=) are ignored; a value with commas is quoted as\n"
	"                 mount(8) quotes it: comment=\"a,b\"\n"
	"  -V, --version  the version\n"
	"  -h, --help     this text\n"
	"\n"
	"It returns once the mount is ready (with -f, it tells systemd so).\n"
	"Run as mount.fuse.mapperfs (mount(8)'s helper: POOL MOUNTPOINT [-sfnv]\n"
	"[-o opts] [-t fuse.mapperfs]), -f means fake: check the pool and the mount\n"
	"point, mount nothing; -s, -n, -v change nothing.\n"
	"Stop it with 'fusermount3 -u MOUNTPOINT' (or 'umount').\n";

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

static int parse_transport(struct options *o, const char *opt)
{
	static const char *const names[] = {
		[CHOOSE_AUTO] = "auto",
		[CHOOSE_IO_URING] = "io_uring",
		[CHOOSE_DEV_FUSE] = "dev-fuse",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(opt + strlen("transport="), names[i])) {
			o->transport = (enum transport_choice)i;
			return 0;
		}
	}
	log_error("invalid -o %s: use transport=auto, io_uring or dev-fuse", opt);
	return -EINVAL;
}

/* fstab's options, which mount(8) hands its helpers and no file system takes. */
static bool fstab_only(const char *opt)
{
	static const char *const names[] = { "defaults", "auto", "noauto", "nofail", "_netdev",
					     "user", "nouser", "users", "owner", "group" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(opt, names[i]))
			return true;
	return !strncmp(opt, "x-", 2) || !strncmp(opt, "comment=", 8);
}

/*
 * The next option of an -o list at *@cursor, cut at the first comma that
 * is not inside double quotes, as mount(8) splits them (comment="a,b" is
 * one option); NULL at the end.  *@unbalanced is set for a quote that is
 * never closed.
 */
static char *next_option(char **cursor, bool *unbalanced)
{
	char *opt = *cursor, *p;
	bool quoted = false;

	if (!opt)
		return NULL;
	for (p = opt; *p && (quoted || *p != ','); p++)
		quoted ^= *p == '"';
	*unbalanced = quoted;
	*cursor = *p ? p + 1 : NULL;
	*p = '\0';
	return opt;
}

/* A decimal number in [@min, @max] and nothing else: 0 or -EINVAL. */
static int parse_count(const char *s, unsigned long min, unsigned long max,
		       unsigned int *out)
{
	char *end;
	unsigned long n;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (*end || errno || n < min || n > max)
		return -EINVAL;
	*out = (unsigned int)n;
	return 0;
}

/*
 * Splits -o lists: ours (threads=N, transport=T, spin=US, batch=N, log=L,
 * syslog, nonempty, event_timeout=S) are kept, fstab's dropped, the rest go to libfuse,
 * which splits at every comma: only fstab's own options may hold one.
 */
static int parse_o(struct options *o, char *list)
{
	bool unbalanced = false;

	for (char *cursor = list, *opt; (opt = next_option(&cursor, &unbalanced));) {
		enum log_level level;

		if (unbalanced) {
			log_error("invalid -o %s: a double quote is not closed", opt);
			return -EINVAL;
		}
		if (!*opt) {
			continue;
		} else if (fstab_only(opt)) {
			continue;
		} else if (!strncmp(opt, "log=", 4)) {
			if (log_parse_level(opt + 4, &level)) {
				log_error("invalid -o %s: use log=error, warning, info or debug", opt);
				return -EINVAL;
			}
			log_set_level(level);
		} else if (!strcmp(opt, "syslog")) {
			o->syslog = 1;
		} else if (!strncmp(opt, "transport=", 10)) {
			if (parse_transport(o, opt))
				return -EINVAL;
		} else if (!strcmp(opt, "nonempty")) {
			o->nonempty = 1;
		} else if (!strncmp(opt, "threads=", 8)) {
			if (parse_count(opt + 8, 1, 1024, &o->workers)) {
				log_error("invalid -o %s: use threads=1..1024", opt);
				return -EINVAL;
			}
		} else if (!strncmp(opt, "event_timeout=", 14)) {
			if (parse_count(opt + 14, 1, 86400, &o->event_timeout_s)) {
				log_error("invalid -o %s: use event_timeout=1..86400 (seconds)", opt);
				return -EINVAL;
			}
		} else if (!strncmp(opt, "nbd_timeout=", 12)) {
			if (parse_count(opt + 12, 1, 3600, &o->nbd_timeout_s)) {
				log_error("invalid -o %s: use nbd_timeout=1..3600 (seconds)", opt);
				return -EINVAL;
			}
		} else if (!strncmp(opt, "cache_size=", 11)) {
			if (parse_size(opt + 11, &o->cache_bytes) ||
			    (o->cache_bytes && o->cache_bytes < THIN_CACHE_MIN)) {
				log_error("invalid -o %s: use cache_size=0 (no budget) or 2K and up "
					  "(K, M, G, T; a thin pool's loaded map)", opt);
				return -EINVAL;
			}
		} else if (!strncmp(opt, "spin=", 5)) {
			if (parse_count(opt + 5, 0, 1000, &o->spin_us)) {
				log_error("invalid -o %s: use spin=0..1000 (microseconds)", opt);
				return -EINVAL;
			}
		} else if (!strncmp(opt, "sync_rate=", 10)) {
			if (parse_count(opt + 10, 0, 1000000, &o->sync_mib)) {
				log_error("invalid -o %s: use sync_rate=0..1000000 (MiB/s; 0: no limit)",
					  opt);
				return -EINVAL;
			}
		} else if (!strncmp(opt, "batch=", 6)) {
			if (parse_count(opt + 6, 1, URING_ENTRIES_PER_THREAD, &o->batch)) {
				log_error("invalid -o %s: use batch=1..%u (ring entries per thread)",
					  opt, URING_ENTRIES_PER_THREAD);
				return -EINVAL;
			}
		} else if (strchr(opt, ',')) {
			log_error("invalid -o %s: only fstab's own options (comment=, x-*) may "
				  "hold a comma", opt);
			return -EINVAL;
		} else if (add_fuse_opt(o, opt)) {
			return -ENOMEM;
		}
	}
	return 0;
}

/* Run as mount(8)'s helper: by a name starting "mount." (mount.fuse.mapperfs). */
static bool mount_helper(const char *argv0)
{
	const char *base = strrchr(argv0, '/');

	return !strncmp(base ? base + 1 : argv0, "mount.", 6);
}

/*
 * Returns 0, or the exit status after a message: 2 for a command line of
 * the wrong shape, 1 for a wrong value (docs/cli.md).
 */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "pool", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "foreground", no_argument, NULL, 'f' },
		{ 0 }
	};
	bool pool_given = false, helper = mount_helper(argv[0]);
	int c;

	o->pool_dir = getenv("MAPPERFS_POOL") ? getenv("MAPPERFS_POOL") : DEFAULT_POOL;
	o->workers = DEFAULT_WORKERS;
	o->event_timeout_s = POOL_EVENT_TIMEOUT_S;
	o->sync_mib = POOL_SYNC_RATE >> 20;
	o->nbd_timeout_s = NBD_LINK_TIMEOUT_MS / 1000;
	o->cache_bytes = THIN_CACHE_DEFAULT;
	o->spin_us = DEFAULT_SPIN_US;
	opterr = 0;
	/* mount(8)'s helper flags: -n (no mtab), -s (sloppy), -v: nothing to do */
	while ((c = getopt_long(argc, argv, helper ? "fhVnsvo:t:" : "fhVnsvo:", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			o->pool_dir = optarg;
			pool_given = true;
			break;
		case 'n':
		case 's':
		case 'v':
			break;
		case 'V':
			printf("mapperfs %s\n", MAPPERFS_VERSION);
			exit(0);
		case 'f':
			if (helper)
				o->fake = 1;
			else
				o->foreground = 1;
			break;
		case 't':
			if (strcmp(optarg, "fuse.mapperfs")) {
				log_error("mount type '%s' is not fuse.mapperfs", optarg);
				return 1;	/* a wrong value: see docs/cli.md */
			}
			break;
		case 'o':
			if (parse_o(o, optarg))
				return 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			log_error("unknown option '%s' (see mapperfs --help)", argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind == 2 && !pool_given)		/* POOL MOUNTPOINT: mount(8), fstab */
		o->pool_dir = argv[optind++];
	if (argc - optind != 1) {
		log_error(optind < argc ? "more than one mount point given (see mapperfs --help)"
					: "no mount point given (see mapperfs --help)");
		return 2;
	}
	o->mountpoint = argv[optind];
	return 0;
}

static void log_waiting(void *arg, const char *holder)
{
	log_info("waiting for %s, which holds pool '%s' ...", holder, (const char *)arg);
}

/*
 * Says in one line why the daemon's own file @path cannot be opened:
 * files in the pool directory are opened as regfile.h says, and a link or
 * a FIFO found there deserves its name, not "Too many levels of symbolic
 * links" or "No such device or address".  Returns @r.
 */
static int pool_file_error(const char *doing, const char *path, int r)
{
	if (r == -ELOOP)
		log_error("'%s' is a symbolic link: refusing to follow it", path);
	else if (r == -EINVAL || r == -EMLINK)
		log_error("'%s' is %s: refusing it", path, regfile_strerror(r));
	else
		log_error("cannot %s '%s': %s", doing, path, strerror(-r));
	return r;
}

/*
 * Holds the pool lock for the life of the process (and its child),
 * waiting for a daemon that was just unmounted to let go of it, but not
 * for one that serves the pool: one that has answered on the control
 * socket for a second (lock_wait.h).
 */
static int lock_pool(const char *pool_dir)
{
	struct lock_wait w = { .who = "mapperfs", .live_ms = 1000, .waiting = log_waiting,
			       .arg = (void *)pool_dir };
	int fd = lock_wait(pool_dir, &w);
	char lock_path[PATH_MAX];

	snprintf(lock_path, sizeof(lock_path), "%s/lock", pool_dir);

	if (fd == -EISCONN)
		log_error("pool '%s' is served by %s already", pool_dir, w.holder);
	else if (fd == -EBUSY)
		log_error("pool '%s' is in use by %s", pool_dir, w.holder);
	else if (fd == -ELOOP || fd == -EINVAL || fd == -EMLINK)
		pool_file_error("lock", lock_path, fd);
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

/*
 * EPERM is the usual answer in a container without CAP_SYS_RESOURCE: not
 * a fault of this host, so info; any other refusal is a warning.
 */
static void log_io_flusher(int refused)
{
	if (refused == EPERM)
		log_info("not an I/O flusher (PR_SET_IO_FLUSHER needs CAP_SYS_RESOURCE): "
			 "a loop device on this mount may stall under memory pressure");
	else if (refused)
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

/*
 * POOL/mapperfs.pid, a regular file (regfile.h), written once the pool is
 * locked and before anything is opened, so that a daemon that cannot
 * write it refuses to start (mapperfs returns only once it exists);
 * removed when the daemon ends.  Truncated only once it is known to be
 * the pool's own file.
 */
static int write_pidfile(const char *pool_dir)
{
	char path[PATH_MAX];
	FILE *f = NULL;
	int fd = -1, r;

	snprintf(path, sizeof(path), "%s/mapperfs.pid", pool_dir);
	r = regfile_open(path, O_WRONLY | O_CREAT, 0644, &fd);
	if (!r && (ftruncate(fd, 0) < 0 || !(f = fdopen(fd, "w"))))
		r = -errno;
	if (r) {
		if (fd >= 0)
			close(fd);
		return pool_file_error("write the pid file", path, r);
	}
	fprintf(f, "%d\n", (int)getpid());
	if (fclose(f)) {
		r = pool_file_error("write the pid file", path, -errno);
		unlink(path);
		return r;
	}
	return 0;
}

static void remove_pidfile(const char *pool_dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/mapperfs.pid", pool_dir);
	unlink(path);
}

/*
 * A mount point that cannot be reached.  A FUSE mount whose daemon died
 * (kill -9) answers ENOTCONN until it is unmounted: say how.
 */
static void log_mountpoint_errno(const char *mnt, int err)
{
	if (err == ENOTCONN || err == ECONNABORTED)
		log_error("mount point '%s' is a FUSE mount whose daemon is gone (%s): unmount "
			  "it with 'fusermount3 -u %s'", mnt, strerror(err), mnt);
	else
		log_error("mount point '%s': %s", mnt, strerror(err));
}

/*
 * The mount point must be an empty directory that nothing is mounted on,
 * outside the pool directory (the daemon's own files live there).  One
 * line says which it is not.  0, or -errno.
 */
static int check_mountpoint(const struct options *o)
{
	size_t pool_len = strlen(o->pool_dir);
	struct stat st, parent;
	char up[PATH_MAX];
	struct dirent *e;
	int err;
	DIR *d;

	if (stat(o->mountpoint, &st) < 0) {
		err = errno;
		log_mountpoint_errno(o->mountpoint, err);
		return -err;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_error("mount point '%s' is not a directory", o->mountpoint);
		return -ENOTDIR;
	}
	if (!strncmp(o->mountpoint, o->pool_dir, pool_len) &&
	    (o->mountpoint[pool_len] == '/' || !o->mountpoint[pool_len])) {
		log_error("mount point '%s' is inside the pool directory '%s'", o->mountpoint,
			  o->pool_dir);
		return -EINVAL;
	}
	snprintf(up, sizeof(up), "%s/..", o->mountpoint);
	if (stat(up, &parent) == 0 && (parent.st_dev != st.st_dev || parent.st_ino == st.st_ino)) {
		log_error("mount point '%s' has a file system mounted on it already",
			  o->mountpoint);
		return -EBUSY;
	}
	d = opendir(o->mountpoint);
	if (!d) {
		err = errno;
		log_mountpoint_errno(o->mountpoint, err);
		return -err;
	}
	while ((e = readdir(d)) && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")))
		;
	closedir(d);
	if (e && !o->nonempty) {
		log_error("mount point '%s' is not empty (files there would be hidden; -o nonempty to mount anyway)",
			  o->mountpoint);
		return -ENOTEMPTY;
	}
	return 0;
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
 * errors also reach the terminal that started it.  A daemon that cannot
 * log there refuses to start (it would run with no record of what it
 * does): 0 or -errno, said in one line.
 */
static int log_to_pool(const char *pool_dir)
{
	char path[PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/mapperfs.log", pool_dir);
	r = log_to_file(path);
	if (r)
		return pool_file_error("log to", path, r);
	log_also_stderr(true);
	return 0;
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

/*
 * Takes the mount out of the directory tree (umount -l): nothing new can
 * be opened, what is open stays served, and the kernel ends the session
 * when the last of it is closed.  Only if @mnt is still our mount
 * (@mnt_dev): something may have been mounted over it since.
 */
static int detach_mount(const char *mnt, dev_t mnt_dev)
{
	char *argv[] = { "fusermount3", "-u", "-z", "-q", "--", (char *)mnt, NULL };
	struct stat st;
	int status;
	pid_t pid;

	if (stat(mnt, &st) < 0 || st.st_dev != mnt_dev)
		return -ESTALE;
	if (geteuid() == 0)
		return umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) ? -errno : 0;
	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ))
		return -errno;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

/* pool_failures(): each fault that keeps something out of service, once. */
static void warn_fault(void *arg, const char *line)
{
	(void)arg;
	log_warn("%s", line);
}

static const char *sigdesc(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal";
}

/* Names the open volumes, in one line, for the log of a stop that waits. */
static void log_open_volumes(struct daemon *d, const char *mnt, int sig, int detached)
{
	char list[512];

	if (!daemon_open_volumes(d, list, sizeof(list))) {
		log_info("%s: stopping", sigdesc(sig));
		return;
	}
	log_info("%s: '%s' %s; still serving the open volumes %s; the daemon stops "
		 "once they are closed (unmount what is mounted on a loop device over "
		 "one, then 'losetup -d' the device)", sigdesc(sig), mnt,
		 detached ? "is detached (no new opens)" : "could not be detached", list);
}

/*
 * Asked to stop again while volumes are open: one line naming them and
 * saying how to stop at once, at the cost of failing their I/O.
 */
static void log_force_stop(struct daemon *d, const char *mnt, int sig, int detached)
{
	char list[512];

	if (!daemon_open_volumes(d, list, sizeof(list)))
		snprintf(list, sizeof(list), "(closing)");
	log_warn("%s again: still serving the open volumes %s; to stop now, failing "
		 "their I/O: kill -9 %d%s%s%s", sigdesc(sig), list, (int)getpid(),
		 detached ? "" : ", then fusermount3 -u '", detached ? "" : mnt,
		 detached ? "" : "'");
}

/* How the mount is served, and why not over io_uring when it is not. */
struct serving {
	unsigned int batch;		/* ring entries per thread */
	bool parks;			/* requests park (POOL_IO_NETWORK) */
	struct ops_io io;		/* the rings' data path: mapperfs_io, parking or not */
	struct workers *workers;	/* /dev/fuse */
	struct uring_transport *ring;	/* NULL: none was made */
	bool ring_serves;
	char why[160];			/* why /dev/fuse serves */
};

/*
 * Before the mount: refuses to start (one line) when io_uring is demanded
 * and the kernel cannot give it.  0, or -EOPNOTSUPP.
 */
static int check_transport(const struct options *o, struct serving *s)
{
	const char *why;
	int r;

	if (o->transport == CHOOSE_DEV_FUSE) {
		snprintf(s->why, sizeof(s->why), "-o transport=dev-fuse");
		return 0;
	}
	r = uring_transport_check_kernel(&why);
	if (r && o->transport == CHOOSE_IO_URING) {
		log_error("-o transport=io_uring: %s", why);
		return r;
	}
	if (r)
		snprintf(s->why, sizeof(s->why), "%s", why);
	return 0;
}

/*
 * After the mount, before INIT is answered: makes the rings when the
 * kernel can use them, and asks for them in the INIT reply.
 */
static int prepare_ring(struct fuse_session *se, const struct options *o, struct serving *s)
{
	unsigned int nr_queues = uring_transport_nr_queues();
	unsigned int per_queue = (o->workers + nr_queues - 1) / nr_queues;
	int r;

	if (s->why[0])
		return 0;
	/*
	 * As many requests in flight per CPU as threads would serve; where
	 * requests park, as many on each CPU, which takes an issuer's whole
	 * queue depth (the kernel queues a request on its issuer's CPU).
	 */
	if (s->parks)
		per_queue = o->workers;
	/* Elsewhere nothing parks: no request is mapped twice to learn so. */
	s->io = mapperfs_io;
	if (!s->parks)
		s->io.start = NULL;
	r = uring_transport_prepare(se, &s->io, per_queue, s->batch, o->spin_us,
				    &s->ring);
	if (r) {
		snprintf(s->why, sizeof(s->why), "cannot set up its rings: %s", strerror(-r));
		if (o->transport == CHOOSE_IO_URING) {
			log_error("-o transport=io_uring: %s", s->why);
			return r;
		}
		return 0;
	}
	transport_want_init_flags(FUSE_OVER_IO_URING);
	return 0;
}

/*
 * Once INIT is answered: hands the rings to the kernel if it granted them,
 * else lets the /dev/fuse workers serve everything.
 */
static int settle_transport(const struct options *o, struct serving *s)
{
	uint64_t granted;
	int r;

	r = transport_wait_init(&granted);
	if (r) {
		log_error("the mount went away before the kernel's INIT was answered");
		return r;
	}
	if (s->ring && !(granted & FUSE_OVER_IO_URING)) {
		snprintf(s->why, sizeof(s->why), "the kernel did not offer it at INIT");
		uring_transport_join(s->ring);
		s->ring = NULL;
	} else if (s->ring) {
		r = uring_transport_start(s->ring);
		if (!r) {
			s->ring_serves = true;
			transport_set_kind(TRANSPORT_IO_URING);
			return 0;
		}
		/* Threads that were accepted stay until the session ends. */
		snprintf(s->why, sizeof(s->why), "the kernel refused its ring entries: %s",
			 strerror(-r));
	}
	if (o->transport == CHOOSE_IO_URING) {
		log_error("-o transport=io_uring: %s", s->why);
		return -EOPNOTSUPP;
	}
	transport_set_kind(TRANSPORT_DEV_FUSE);
	return workers_add(s->workers, o->workers);
}

/* "s" unless @n is 1: "1 thread", "2 threads". */
static const char *plural(unsigned int n)
{
	return n == 1 ? "" : "s";
}

static void log_serving(const struct options *o, const struct serving *s)
{
	unsigned int queues, threads, entries;

	if (!s->ring_serves) {
		log_info("serving pool '%s' on '%s' over /dev/fuse with %u worker%s "
			 "(not io_uring: %s)", o->pool_dir, o->mountpoint, o->workers,
			 plural(o->workers), s->why);
		return;
	}
	queues = uring_transport_nr_queues();
	threads = uring_transport_threads_per_queue(s->ring);
	entries = uring_transport_entries_per_thread(s->ring);
	log_info("serving pool '%s' on '%s' over io_uring: %u queue%s (one per CPU) "
		 "x %u thread%s x %u entr%s, spin %u us", o->pool_dir, o->mountpoint, queues,
		 plural(queues), threads, plural(threads), entries, entries == 1 ? "y" : "ies",
		 o->spin_us);
}

/*
 * Ring entries per thread: -o batch, else by the devices as the pool
 * opened them (uring_transport.h tells why); and whether requests park,
 * which also sets the entries per CPU (prepare_ring).  A device added
 * later does not change them.
 */
static void choose_batch(const struct options *o, struct pool *pool, struct serving *s)
{
	enum pool_io kind = pool_io_kind(pool);

	s->parks = kind == POOL_IO_NETWORK;
	if (o->batch)
		s->batch = o->batch;
	else if (kind == POOL_IO_MEMORY)
		s->batch = URING_ENTRIES_PER_THREAD;
	else if (kind == POOL_IO_NETWORK)
		s->batch = o->workers;	/* all on one thread per CPU: requests park */
	else
		s->batch = 1;
}

/* Starts serving a mounted @se: the transport, then its threads. */
static int start_serving(struct fuse_session *se, const struct options *o,
			 struct serving *s)
{
	int r = prepare_ring(se, o, s);

	if (!r)
		r = workers_start(se, s->ring ? 1 : o->workers, o->workers, &s->workers);
	if (!r)
		r = settle_transport(o, s);
	return r;
}

/* Waits for every serving thread to see the session end, and frees them. */
static void join_serving(struct serving *s)
{
	workers_join(s->workers);
	uring_transport_join(s->ring);
}

/*
 * SIGTERM/SIGINT (stop.h): no more admin changes (reports still answer,
 * saying the daemon stops), a commit, the mount detached; then serve
 * until nothing is open, saying how to force it if asked again.  Returns 1 if the mount was detached here (it
 * must then not be unmounted by path again).
 */
static int drain(struct daemon *d, const char *mnt, struct control *control,
		 struct serving *s, int sig, dev_t mnt_dev)
{
	enum stop_drain why;
	int r;

	pool_stop_streams(daemon_pool(d));	/* a stalled ssh holds no drain */
	control_drain(control);
	pool_commit_all(daemon_pool(d));
	r = detach_mount(mnt, mnt_dev);
	if (r)
		log_warn("cannot detach '%s': %s", mnt, strerror(-r));
	log_open_volumes(d, mnt, sig, !r);
	while ((why = stop_wait_closed(&sig)) == STOP_ASKED_AGAIN)
		log_force_stop(d, mnt, sig, !r);
	if (why == STOP_NOTHING_OPEN) {
		workers_cancel(s->workers);
		uring_transport_cancel(s->ring);
	}
	return !r;
}

static int serve(struct daemon *d, const struct options *o, int ready_fd,
		 int io_flusher_refused)
{
	struct control *control = NULL;
	struct exporter *exporter = NULL;
	struct serving s = { 0 };
	struct fuse_session *se;
	int detached = 0, sig, r;
	struct stat st;

	r = check_transport(o, &s);
	if (!r)
		r = mount_session(d, o, &se);
	if (r)
		return r;
	daemon_set_session(d, se);
	choose_batch(o, daemon_pool(d), &s);
	r = start_serving(se, o, &s);
	if (!r)				/* served by the workers: they run */
		r = stat(o->mountpoint, &st) ? -errno : 0;
	if (!r)
		pool_set_mount(daemon_pool(d), st.st_dev);	/* before any request */
	if (!r)
		r = control_start(d, &control);
	if (!r)		/* the mount is up: nbdkit can reach the volumes' files */
		r = exporter_start(daemon_pool(d), o->mountpoint, &exporter);
	if (!r)
		daemon_set_exporter(d, exporter);
	if (!r)
		r = stop_watch_signals();
	if (r) {
		if (exporter)
			exporter_stop(exporter);
		if (control)
			control_stop(control);
		daemon_set_exporter(d, NULL);
		exporter_free(exporter);
		fuse_session_exit(se);
		fuse_session_unmount(se);
		join_serving(&s);
		daemon_set_session(d, NULL);
		fuse_session_destroy(se);
		return r;
	}
	log_serving(o, &s);		/* in the log before mapperfs returns */
	tell_ready(ready_fd);
	sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=serving pool '%s' on '%s'", (int)getpid(),
		   o->pool_dir, o->mountpoint);
	log_io_flusher(io_flusher_refused);

	sig = stop_wait_request();
	sd_notify(0, "STOPPING=1");
	/* before the mount goes: what nbdkit has open would keep it */
	exporter_stop(exporter);
	if (sig)
		detached = drain(d, o->mountpoint, control, &s, sig, st.st_dev);
	join_serving(&s);		/* returns once the session is over */
	stop_unwatch_signals();
	pool_stop_streams(daemon_pool(d));	/* commands run to their end: these end now */
	if (control)
		control_stop(control);
	daemon_set_exporter(d, NULL);
	exporter_free(exporter);
	daemon_set_session(d, NULL);
	if (!detached)
		fuse_session_unmount(se);
	fuse_session_destroy(se);	/* closing /dev/fuse fails what is left */
	log_info("unmounted '%s'", o->mountpoint);
	return 0;
}

/*
 * glibc's malloc, tuned for a daemon whose I/O path does not allocate
 * (its buffers are made at start, leaf entries come from a slab) and
 * whose admin path makes large, short-lived ones on any of its control
 * workers.
 *
 * glibc serves an allocation of 128 KiB or more by mmap and unmaps it at
 * free, but the first such free raises that threshold to the freed size
 * (up to 32 MiB), and later ones come from the heaps.  Every admin change
 * reads the pool's layout back and writes it as text: buffers that grow
 * with the volumes (1.5 MiB at 1e4) and live for the change only.  In the
 * heaps their pages stay resident once freed, pinned by what later changes
 * allocate among them: after three rounds of 2000 snapshots made and
 * removed the heaps held 34 MiB, 31 of it free.  A fixed threshold keeps
 * such buffers out of them (13 MiB, 10 free).
 *
 * And glibc gives each thread that allocates its own arena, up to eight
 * per CPU; each keeps what its thread last used resident.  A check at 1e8
 * blocks left about 2.5 MiB in the arena of the worker that ran it, so
 * repeated checks grew a daemon whose cache was at its budget by 0.5 MiB
 * each, to budget + 84 MiB after 43; with two arenas it held at budget +
 * 54.  The I/O path's threads barely allocate, so they do not contend for
 * the two.
 */
#define MMAP_THRESHOLD	(128 << 10)	/* bytes: glibc's own, before it adapts */
#define ARENAS_MAX	2

static void tune_malloc(void)
{
	/* An allocator that takes no such advice (a sanitizer's) is left as it is. */
	(void)mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	(void)mallopt(M_ARENA_MAX, ARENAS_MAX);
}

/* A budget past the machine's memory bounds nothing: said, not refused. */
static void warn_cache_beyond_memory(uint64_t budget)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	char want[SIZE_STR_LEN], have[SIZE_STR_LEN];

	if (!memory || budget <= memory)
		return;
	log_warn("-o cache_size=%s is more than this machine's memory (%s): a thin pool "
		 "may keep leaves until memory runs out",
		 format_size(budget, want), format_size(memory, have));
}

/* Everything after the arguments; the exit status. */
static int run(struct options *opts)
{
	struct options o = *opts;
	int ready_fd = -1, lock_fd, io_flusher_refused, r;
	char pool_path[PATH_MAX], mountpoint_path[PATH_MAX];
	const char *pool_arg, *mountpoint_arg;
	struct pool_error err;
	struct daemon *d;
	struct pool *pool;

	pool_arg = o.pool_dir;
	mountpoint_arg = o.mountpoint;
	o.pool_dir = realpath(pool_arg, pool_path);
	if (!o.pool_dir) {
		log_error("no pool at '%s': %s%s", pool_arg, strerror(errno),
			  errno == ENOENT ? " (run 'mapperctl init')" : "");
		return 1;
	}
	o.mountpoint = realpath(mountpoint_arg, mountpoint_path);
	if (!o.mountpoint) {
		log_mountpoint_errno(mountpoint_arg, errno);
		return 1;
	}
	if (o.fake)		/* mount -f: the pool and the mount point are there */
		return 0;
	if (check_mountpoint(&o))
		return 1;
	if (chdir("/") < 0) {	/* every path is absolute from here on */
		log_error("cannot change to '/': %s", strerror(errno));
		return 1;
	}
	if (!o.foreground) {
		ready_fd = detach();
		if (ready_fd < 0) {
			log_error("cannot detach: %s", strerror(-ready_fd));
			return 1;
		}
	}
	/* Every thread inherits this mask; stop.c's thread takes them. */
	stop_block_signals();
	signal(SIGPIPE, SIG_IGN);

	lock_fd = lock_pool(o.pool_dir);
	if (lock_fd < 0)
		return 1;
	if (o.syslog)
		log_to_syslog("mapperfs");
	r = 0;
	if (!o.foreground) {
		r = log_to_pool(o.pool_dir);
	} else if (getenv("JOURNAL_STREAM")) {	/* a service: the journal and the pool log */
		r = log_to_pool(o.pool_dir);
		log_also_stderr(false);
		log_to_journal();
	}
	if (r || write_pidfile(o.pool_dir)) {
		close(lock_fd);
		return 1;
	}
	io_flusher_refused = ask_for_io_flusher();
	urcu_memb_register_thread();
	nbd_link_set_timeout(o.nbd_timeout_s * 1000);
	warn_cache_beyond_memory(o.cache_bytes);
	thin_pool_set_cache_budget(o.cache_bytes);
	r = pool_open(o.pool_dir, pool_port_open, &pool, &err);
	if (!r)		/* what opening found failed: each fault once */
		pool_failures(pool, warn_fault, NULL);
	if (!r)
		pool_set_sync_rate(pool, (uint64_t)o.sync_mib << 20);
	if (r) {
		log_error("%s", err.msg);
	} else if ((r = pool_watch(pool, o.event_timeout_s))) {
		log_error("cannot start watching the thin pools: %s", strerror(-r));
		pool_close(pool);
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
	remove_pidfile(o.pool_dir);
	close(lock_fd);
	return r ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	int r;

	log_init("mapperfs");
	tune_malloc();
	r = parse_args(argc, argv, &o);
	if (!r)
		r = run(&o);
	free(o.fuse_opts);
	return r;
}
