/*
 * fs/fuse_abi.h: the parts of the kernel's FUSE and io_uring ABI that
 * Debian 12's headers (linux-libc-dev 6.1: FUSE 7.38, liburing 2.3) are
 * too old to have.  Values and layouts are the kernel's
 * (include/uapi/linux/fuse.h 7.42, include/uapi/linux/io_uring.h); the
 * asserts below pin the layouts so a typo cannot reach the kernel.
 *
 * Everything here is negotiated at run time: a kernel that does not offer
 * a flag in its INIT request never sees it in our reply, so an older
 * kernel is served exactly as before.
 */
#ifndef MAPPERFS_FUSE_ABI_H
#define MAPPERFS_FUSE_ABI_H

#include <linux/fuse.h>
#include <stdint.h>

/* ---- INIT flags beyond 7.38 (64-bit: bits 32..63 travel in flags2) ---- */

#ifndef FUSE_DIRECT_IO_ALLOW_MMAP	/* 7.39: shared mmap of direct_io files */
#define FUSE_DIRECT_IO_ALLOW_MMAP	(1ULL << 36)
#endif
#ifndef FUSE_OVER_IO_URING		/* 7.42: requests through io_uring */
#define FUSE_OVER_IO_URING		(1ULL << 41)
#endif

/* ---- open reply flags ---- */

#ifndef FOPEN_PARALLEL_DIRECT_WRITES	/* 7.36 */
#define FOPEN_PARALLEL_DIRECT_WRITES	(1u << 6)
#endif

/* ---- FUSE over io_uring (7.42) ---- */

/*
 * The header buffer of a ring entry (iov[0] of REGISTER).  On a fetch the
 * kernel writes the fuse_in_header into in_out, the request's first
 * argument (its fixed-size op struct, e.g. fuse_write_in) into op_in, and
 * ring_ent_in_out; everything after the first argument (write data,
 * names) goes to the payload buffer (iov[1]).  On a commit we write the
 * fuse_out_header into in_out, the reply's arguments into the payload, and
 * their length into ring_ent_in_out.payload_sz.
 */
#define FUSE_URING_IN_OUT_HEADER_SZ	128
#define FUSE_URING_OP_IN_OUT_SZ		128

struct fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;		/* the request's unique: echo it on commit */
	uint32_t payload_sz;		/* bytes used in the payload buffer */
	uint32_t padding;
	uint64_t reserved;
};

struct fuse_uring_req_header {
	char in_out[FUSE_URING_IN_OUT_HEADER_SZ];
	char op_in[FUSE_URING_OP_IN_OUT_SZ];
	struct fuse_uring_ent_in_out ring_ent_in_out;
};

/* sqe->cmd_op of an IORING_OP_URING_CMD on /dev/fuse */
enum fuse_uring_cmd {
	FUSE_IO_URING_CMD_INVALID = 0,
	FUSE_IO_URING_CMD_REGISTER = 1,		/* hand over an entry; fetch */
	FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,	/* answer; fetch the next */
};

/* In the 80-byte command area of a 128-byte SQE (IORING_SETUP_SQE128). */
struct fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;			/* the queue: one per possible CPU */
	uint8_t padding[6];
};

_Static_assert(sizeof(struct fuse_uring_ent_in_out) == 32, "fuse_uring_ent_in_out");
_Static_assert(sizeof(struct fuse_uring_req_header) == 288, "fuse_uring_req_header");
_Static_assert(sizeof(struct fuse_uring_cmd_req) == 24, "fuse_uring_cmd_req");
_Static_assert(sizeof(struct fuse_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct fuse_out_header) == 16, "fuse_out_header");
_Static_assert(sizeof(struct fuse_init_out) == 64, "fuse_init_out");

/* ---- io_uring (kernel 6.1) ---- */

#ifndef IORING_SETUP_DEFER_TASKRUN	/* task work runs only when we wait */
#define IORING_SETUP_DEFER_TASKRUN	(1U << 13)
#endif

#endif
