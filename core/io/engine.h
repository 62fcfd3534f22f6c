/*
 * core/io/engine.h: the io engine, one io_uring per thread that does I/O.
 *
 * A request that the target mapped to N segments becomes N SQEs submitted
 * together and waited for together: the cost of a spanning request is one
 * io_uring_enter, not N syscalls.  Short transfers and EAGAIN are queued
 * again for the remainder; any other failure of a segment fails the whole
 * request with -EIO (logged once, naming the device), and only that
 * request.
 *
 * Each segment goes to the one descriptor that has its device's data
 * (device.h).  A segment O_DIRECT cannot take as it is (offset, length or
 * buffer off the device's alignment) is done first, by syscalls in this
 * thread (direct.h); the direct writes the ring takes share their
 * devices' range locks while they run, all or none, and if one is
 * refused (a read-modify-write is under way) they are done one by one
 * by syscalls too.
 *
 * Each completed write and flush of a recorded device is recorded in the
 * write log (writelog.h) before the call returns; a device that is not
 * recorded costs one test of its log_file.
 *
 * Segments on NBD devices go out on the network before the ring's are
 * queued, and are waited for on the same ring after (nbd_batch.h).
 *
 * An engine belongs to one thread; it takes no lock.
 */
#ifndef MAPPERFS_ENGINE_H
#define MAPPERFS_ENGINE_H

#include <liburing.h>
#include <stdbool.h>

#include "segs.h"

struct device;
struct nbd_batch;

/*
 * A read or write the engine carries: parked (engine_start), completed
 * later while the thread does other work; or one engine_read/write waits
 * for.
 */
struct engine_job {
	struct segs *segs;
	char *buf;
	bool write;
	bool parked;			/* engine_start's: finished jobs are listed */
	bool shared;			/* holds its devices' range locks shared */
	unsigned int nbd_left;		/* NBD pieces not yet retired (nbd_batch.h) */
	int result;			/* 0, or -EIO once a piece failed */
	struct engine_job *next;	/* on a list of finished jobs */
};

struct engine {
	struct io_uring ring;
	unsigned int depth;		/* SQEs in flight at most */
	bool broken;			/* a ring failure: every call is -EIO */
	void *scratch;			/* engine_scratch's, or NULL */
	size_t scratch_size;
	struct nbd_batch *nbd;		/* made on the first NBD request, or NULL */
};

int engine_init(struct engine *e, unsigned int depth);	/* 0 or -errno */
/*
 * The same for an engine that several threads use one at a time, the
 * caller's lock serialising them (a thin pool's commits): its ring is not
 * tied to the thread that made it.  0 or -errno.
 */
int engine_init_shared(struct engine *e, unsigned int depth);
void engine_exit(struct engine *e);

/*
 * A page-aligned buffer of at least @size bytes for the calling thread's
 * copies (a thin block copied on write), kept with the engine until the
 * next call asks for more, or engine_exit: a copy does not pay for
 * fresh pages each time.  NULL if out of memory.  Never blocks on I/O.
 */
void *engine_scratch(struct engine *e, size_t size);

/*
 * Reads every segment of @s into @buf + seg.buf_off; holes are zeroed.
 * Blocks until all complete.  Returns 0 or -EIO.
 */
int engine_read(struct engine *e, struct segs *s, void *buf);

/* Writes @buf + seg.buf_off to every segment of @s (no holes allowed). */
int engine_write(struct engine *e, struct segs *s, const void *buf);

/*
 * Parked requests.  engine_read and engine_write block the thread until
 * the devices answered, which on a network device (NBD) is a round trip
 * the thread could spend serving other requests.  So a request whose
 * segments all lie on NBD devices (holes too, for a read) can be
 * started instead: engine_start sends it and returns; the caller's event
 * loop polls engine_fd(), and engine_reap hands back the jobs that
 * completed.  Many jobs pipeline on one connection per link.  A write
 * holds its devices' range locks shared until it completes, as
 * engine_write does.
 *
 * The blocking calls first wait for every parked job (engine_drain):
 * a job and a blocking request never share the ring, and a thread that
 * blocks holds nothing a parked job needs.
 *
 * engine_start: 0, the job is in flight (or already finished; engine_reap
 * returns it either way, j->result 0 or -EIO); -EAGAIN, it cannot be
 * parked (a segment on another device, a range lock or a connection
 * that would be waited for): do it with engine_read/write.  May block to
 * connect to a server.
 */
int engine_start(struct engine *e, struct engine_job *j);
/* A descriptor readable when engine_reap has work to do (the ring's). */
int engine_fd(const struct engine *e);
/*
 * Takes what completed without waiting and returns the parked jobs that
 * finished, as a list through their next, or NULL.  Blocks only to
 * reconnect a dropped connection (nbd_batch.h).
 */
struct engine_job *engine_reap(struct engine *e);
/* Whether parked jobs are in flight. */
bool engine_busy(const struct engine *e);
/* Waits for every parked job to finish (engine_reap returns them).  Blocks. */
void engine_drain(struct engine *e);

/* fdatasync (NBD: flush) of @nr devices at once.  Blocks.  0 or -EIO. */
int engine_sync(struct engine *e, struct device *const *devs, unsigned int nr);

#endif
