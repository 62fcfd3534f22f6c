/*
 * fs/uring_transport.h: FUSE over io_uring (kernel 6.14+), requests served
 * on the CPU that issued them.
 *
 * The kernel keeps one request queue per possible CPU and puts a request
 * on the queue of the CPU its issuer runs on.  For each queue we run a few
 * threads pinned to that CPU; each thread owns an io_uring and a few ring
 * entries (an entry: a header buffer and a 1 MiB page-aligned payload
 * buffer handed to the kernel).  A thread waits in io_uring_enter until
 * the kernel copies requests into its entries, serves them one after the
 * other, and answers them all with one submission in which each entry's command
 * commits its reply and fetches the next request: one system call per
 * batch, and no thread of another CPU to wake on the way in or out.  A
 * request's backing I/O goes through the serving thread's own io engine,
 * so when the backing device answers at once (tmpfs, RWF_NOWAIT devices)
 * the request never leaves the thread.
 *
 * Why several entries per thread, and several threads per queue: a thread
 * woken once for a batch of requests saves the context switches that
 * dominate on a VM (measured: 64 KiB reads cost the daemon 12 us of CPU
 * each with one entry per thread, 7 us with eight).  But a thread serves
 * its batch one request after the other, and the kernel hands a new
 * request to the entry made available last, often one of the thread that
 * just committed: a request that waits (on a disk, an fsync committing a
 * thin pool, a thin write waiting for the pool to grow) holds up the
 * requests already in its thread's other entries.  So the batch is set by
 * what the pool's devices are (the daemon's -o batch): eight entries per
 * thread when every device is memory, where no request waits; one where
 * some device is a disk or a block device, so that every request waiting
 * on the device has a thread of its own, as with /dev/fuse's workers
 * (measured, raw file on ext4, fresh daemon, 8 x 512 B randrw: 13.4
 * kIOPS with eight, 23.6k with one, 20.2k over /dev/fuse; on /dev/shm
 * eight won, 64 KiB QD32 reads 0.47 of raw against 0.28).
 *
 * Parked requests.  A request on an NBD device waits a network round
 * trip, which a thread could spend serving others.  So a READ or WRITE
 * the io engine can carry alone (every piece on an NBD device: engine.h,
 * engine_start) is parked: the thread starts it and goes on to its next
 * entry; the engine's ring is polled on the thread's ring, and what
 * completed is answered with the next batch of commits.  Anything else
 * first waits for the thread's parked requests (drain), so a thread
 * never blocks holding what they need.  With every waiting device on
 * NBD, a CPU's entries are all on one thread (fs/main.c), -o threads of
 * them: a thread woken once for many replies, pipelined on one
 * connection per link (bench/nbd.sh: 64 KiB QD32 reads 1.33-1.39x
 * nbdfuse's with 16 entries per CPU, 1.6x with 32, against 1.10-1.15x
 * with 16 threads of one entry each).
 *
 * Coalesced answers.  The thread shares its CPU with the requests'
 * issuer, and every commit that completes a request wakes the issuer,
 * which then takes the CPU from the thread (wake-up preemption), reaps,
 * issues its next request and sleeps: two context switches per request
 * when the replies come in one at a time, as a network's do (measured,
 * 64 KiB QD32 reads on NBD: 46,000 switches each way in 2 s for 48,000
 * reads, the issuer's CPU never idle, the server's CPU 20% idle).  So,
 * as an NVMe controller coalesces interrupts, a parked request's answer
 * is held while at least COALESCE_DEPTH requests of the thread are still
 * in flight, until COALESCE_MAX answers are held or the first has waited
 * COALESCE_NS, and then they are committed together: the issuer wakes
 * once for several and issues several (bench/nbd.sh, read64K: fresh
 * daemons alternated 1546-1567 MiB/s before, 1983-2008 after).  At a
 * shallow depth (QD1 latency, QD4 streams) nothing is held: nothing would
 * come to share the wake-up.
 *
 * Reads that miss.  A thin read whose leaf the pool's memory budget
 * unloaded needs the store before it can be mapped (10 to 40 us of
 * SQLite).  Faulted in on the ring thread, it holds the requests in the
 * thread's other entries all that time: with hits (QD1 4 KiB reads of
 * loaded leaves) and misses (QD1 reads all over a map ten times the
 * budget) issued on one CPU, so on one queue, eight entries per thread,
 * the hits' p50 went from 12 us alone to 46 beside the misses, their p99
 * from 20 to 176 (bench/hitmiss.sh, docs/scale.md).  So a thread with
 * several entries lets such a read wait for the pool's loader
 * (volume_read_or_wait; core/thin/thin_loader.c) and goes on with its
 * other entries: the hits' p50 19 us, p99 84 in the same runs.  The
 * loader's call puts the entry on the thread's list and counts it on the
 * thread's eventfd, polled on the ring beside the engine's; the thread
 * then serves the read with the blocking call, which maps again.  A
 * waiting read holds nothing a blocking request needs (no read section,
 * no lock), so drain() does not wait for it; a thread that ends does
 * (wait_loads), since a loader still writes to its eventfd.  A thread of
 * one entry faults in place, as /dev/fuse's workers do: nothing waits
 * behind its miss, and the hand-over costs two wake-ups across threads
 * (the daemon's CPU per miss 36-42 us in place, 49-57 handed over; the
 * misses' p50 +5 to +20 us), which bought it nothing measurable.
 *
 * The data path, READ, WRITE and FSYNC, is served here without libfuse:
 * the thread reads the op struct the kernel wrote into the entry's header
 * buffer and calls the volume through ops_io (ops.h); a read lands in the
 * payload buffer, which is the reply, and a write's data is taken from
 * where the kernel put it, page aligned for O_DIRECT backings.  libfuse's
 * generic handling (a request allocated and listed under the session's
 * lock, the reply assembled and copied) is left out of the hot path.
 *
 * Every other request is handed to libfuse, which parses a request from
 * one contiguous buffer (in-header, op struct, payload), while the kernel
 * writes the in-header and op struct into the header buffer and the rest
 * into the payload buffer.  The payload buffer is preceded by one page of
 * our own, so we copy the 40-byte in-header and the op struct (at most 128
 * bytes) just in front of the payload and hand libfuse that.  Replies come
 * back through the session's writev (transport.c), which offers each to
 * the serving thread's reply hook (worker.h); ours copies the reply to the
 * request being served into its entry, and the thread commits.
 *
 * Polling through quiet spells (-o spin=US).  A thread that served a batch
 * goes on polling its ring (io_uring_get_events, which runs the kernel's
 * deferred work that delivers a request, then a look at the completion
 * queue) instead of sleeping, for as long as some queue served a request
 * within the last US microseconds; one thread per queue does, and it
 * yields the CPU on every turn and stops (for 10 ms) as soon as a yield
 * let another task run.  What it buys is placement, on a VM above all:
 * a synchronous issuer woken by our commit goes to an idle CPU if there
 * is one, and waking a halted vCPU costs more than the whole request
 * (measured, 2 vCPUs, idle: 4 KiB QD1 p50 31 us without, 18.6 us with).
 * A CPU with a spinning ring thread is not idle, so the issuer stays on
 * its own CPU and takes turns with the thread serving it.  When the
 * machine is busy the spin ends at once, and it is off whenever requests
 * stop coming: no CPU is burnt while nothing is served.
 *
 * Notifications (daemon to kernel), FORGET and INTERRUPT still travel over
 * /dev/fuse: at least one /dev/fuse worker keeps running.
 */
#ifndef MAPPERFS_URING_TRANSPORT_H
#define MAPPERFS_URING_TRANSPORT_H

#include <fuse_lowlevel.h>

struct ops_io;
struct uring_transport;

/* The ring queues the kernel expects: one per possible CPU. */
unsigned int uring_transport_nr_queues(void);

/*
 * Whether this kernel lets us ask for FUSE over io_uring now: 0, or
 * -EOPNOTSUPP with a phrase in *why (not built in; enable_uring is N).
 * Reads sysfs.
 */
int uring_transport_check_kernel(const char **why);

/* Ring entries per thread, at most: requests a thread serves per wake-up. */
#define URING_ENTRIES_PER_THREAD	8

/*
 * Starts threads for at least @entries ring entries per queue (so that
 * many requests per CPU at once), @batch (1..URING_ENTRIES_PER_THREAD)
 * per thread, on a mounted @se; each thread pins itself to its CPU,
 * makes its io_uring and buffers (1 MiB per entry), and waits.  READ, WRITE and FSYNC go to @io, everything else to the
 * session's handlers.  A thread polls through quiet spells of up to
 * @spin_us (0: never; see the top of this file).  Returns once all are ready: 0, or -errno (then
 * nothing is left running).
 */
int uring_transport_prepare(struct fuse_session *se, const struct ops_io *io,
			    unsigned int entries, unsigned int batch, unsigned int spin_us,
			    struct uring_transport **out);

/*
 * After the kernel granted FUSE_OVER_IO_URING at INIT: every thread hands
 * its entry to the kernel, which starts using the rings once every queue
 * has one.  Returns 0, or -errno if the kernel refused an entry (it then
 * falls back to /dev/fuse by itself).
 */
int uring_transport_start(struct uring_transport *t);

/* The threads per queue, and the ring entries per thread. */
unsigned int uring_transport_threads_per_queue(const struct uring_transport *t);
unsigned int uring_transport_entries_per_thread(const struct uring_transport *t);

/*
 * Ends every started thread while the session is still up, each once the
 * requests it took are answered (SIGTERM with nothing open, stop.h).  The
 * caller then joins them; requests that reach an entry later fail
 * (ENOTCONN) when /dev/fuse closes.  Never blocks.
 */
void uring_transport_cancel(struct uring_transport *t);

/*
 * Ends threads that were never started (INIT did not grant the ring), or
 * waits for the threads of a started transport to see the session end;
 * then frees everything.  Blocks.
 */
void uring_transport_join(struct uring_transport *t);

#endif
