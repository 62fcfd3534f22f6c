/*
 * core/util/send_stream.h: the stream `mapperctl send` writes and
 * `mapperctl receive` reads: a thin volume's content, whole or what
 * changed since a snapshot, as bytes a pipe (or ssh) can carry.
 *
 * Why a format of our own.  zfs send, btrfs send and LINBIT's
 * thin-send-recv each have one, and none fits a thin map: the first two
 * carry file system objects, the last a dm-thin delta fed to dd.  What a
 * thin volume needs is small: ranges of data and ranges that must read
 * as holes, in one pass, at the sender's pace, so it is this, versioned
 * so that a later one can add record types.
 *
 * Layout (integers little-endian):
 *
 *   header   "MPFSSEND" u32 version u32 header_len u32 flags u32 block_size
 *            u64 volume_size u8[16] source u8[16] base
 *            u8 source_name_len u8 base_name_len u16 0, the two names,
 *            (u64 resume_at, if SEND_RESUMED), u32 crc32 of the header's
 *            bytes before it
 *   record*  u32 type u32 payload_len u64 offset u64 length, the payload,
 *            u32 crc32 of the record's bytes before it
 *   end      a record of type END whose payload is u64 records u64
 *            data_bytes u32 stream_crc u32 0: how many records came
 *            before it, how many bytes of data they carried, and the crc32
 *            of every byte of the stream before the end record but the
 *            header's and the records' own crc32 fields (a message
 *            followed by its crc32 always has the same crc32, so a sum
 *            over them would see the lengths only)
 *
 * DATA records carry @length bytes of the volume at @offset (at most
 * SEND_DATA_MAX); HOLE records say that [@offset, @offset + @length)
 * reads zeros and maps nothing.  Ranges are multiples of 4 KiB, inside
 * the volume, in increasing order and never overlap, so a receiver
 * applies them in one pass and "how far it got" is one byte position.
 * A full stream (no SEND_INCREMENTAL) carries data only: the volume it
 * makes starts as holes.  A resumed stream (SEND_RESUMED) is the header
 * and the bytes of the whole stream from resume_at on: a receive that was
 * cut short at a record boundary goes on with it without the bytes it
 * has travelling again; its checksums are the whole stream's, the
 * receiver holding the crc32 of the bytes before resume_at.  An incremental one carries what changed since
 * the base, holes included where the base mapped a block and the source
 * does not.
 *
 * Identity: @source is the sender's identity of the volume sent, @base
 * that of the snapshot the changes are against (zeros for a full
 * stream); the names are the sender's, for messages.  Every byte is under
 * a checksum: the header's, each record's, and the whole stream's in the
 * end record, so a flipped byte, a record cut short or a stream that
 * stops before its end is told apart from a good one, never applied as
 * data.  crc32 (zlib's, 2-5 GB/s here) finds every burst of up to 32
 * bits and any odd number of flipped bits; a stream is not signed: the
 * channel (ssh) is what keeps it authentic.
 *
 * The parser reads a descriptor (a pipe, a file) and holds at most one
 * record; every malformed input is -EBADMSG with one line in @why, a
 * stream that stops early -ENODATA.
 */
#ifndef MAPPERFS_SEND_STREAM_H
#define MAPPERFS_SEND_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uuid.h"

#define SEND_MAGIC		"MPFSSEND"
#define SEND_VERSION		1u
#define SEND_DATA_MAX		(1u << 20)	/* bytes of data per record */
#define SEND_NAME_MAX		64		/* bytes of a name in the header */
#define SEND_ALIGN		4096u		/* ranges are multiples of it */
#define SEND_RECORD_HEADER	24u		/* bytes before a payload */
#define SEND_END_PAYLOAD	24u
#define SEND_WHY_LEN		200

enum send_flags {
	SEND_INCREMENTAL	= (1 << 0),	/* against @base */
	/*
	 * The rest of a stream: what follows the header is the whole
	 * stream's bytes from @resume_at on (a u64 after the names says
	 * where), for a receiver that has the bytes before it.
	 */
	SEND_RESUMED		= (1 << 1),
};

enum send_record_type {
	SEND_DATA	= 1,
	SEND_HOLE	= 2,
	SEND_END	= 3,
};

struct send_header {
	uint32_t version;
	uint32_t flags;			/* enum send_flags */
	uint32_t block_size;		/* bytes: the sender's thin block */
	uint64_t volume_size;		/* bytes, a multiple of 4 KiB */
	struct uuid source;		/* the volume sent */
	struct uuid base;		/* zeros unless SEND_INCREMENTAL */
	char source_name[SEND_NAME_MAX + 1];
	char base_name[SEND_NAME_MAX + 1];	/* "" unless SEND_INCREMENTAL */
	uint64_t resume_at;		/* SEND_RESUMED: a byte of the whole stream */
};

/* A record as read: for SEND_DATA its bytes are in the caller's buffer. */
struct send_record {
	enum send_record_type type;
	uint64_t offset, length;	/* bytes; 0 for SEND_END */
	uint64_t end_records;		/* SEND_END: records before it */
	uint64_t end_data_bytes;	/* SEND_END: bytes of data they carried */
};

/*
 * Asked before every read and write of the stream, and every
 * SEND_POLL_MS while the other end of a pipe is silent (a reader that
 * does not read, a writer that does not write): true ends the stream
 * there with -ECANCELED, so that a daemon that stops is held neither by
 * a stalled ssh nor by a slow one that flows for hours.  Must be cheap
 * (an atomic load).  NULL: go on as long as it takes.
 */
struct send_cancel {
	bool (*cancelled)(void *arg);
	void *arg;
};
#define SEND_POLL_MS		250

/* ---- writing --------------------------------------------------------- */

struct send_writer {
	int fd;				/* the caller's; blocking */
	const struct send_cancel *cancel;	/* or NULL */
	/*
	 * With @cancel, to what is not a regular file: writes that never
	 * block, so that a full pipe is waited for in poll(), where @cancel
	 * is asked (a blocking write of a whole record would wait for a
	 * reader that may never read): through @own_fd, the file opened
	 * again non-blocking, or with RWF_NOWAIT (@nowait).
	 */
	bool polls, nowait;
	int own_fd;			/* or -1 */
	uint32_t crc;			/* of every byte of the stream so far */
	uint64_t bytes;			/* of the whole stream so far */
	uint64_t resume_at;		/* SEND_RESUMED: bytes before it are not written */
	/*
	 * SEND_RESUMED: the resumed stream's own header, written just before
	 * the first byte from @resume_at on (@header_owed until then), so
	 * that a stream with none writes nothing at all.
	 */
	struct send_header resumed;
	bool header_owed;
	uint64_t records;		/* DATA and HOLE records written */
	uint64_t data_bytes;		/* bytes of data they carried */
	uint64_t hole_bytes;		/* bytes the HOLE records cover */
	uint64_t next;			/* the least offset the next record may have */
	uint64_t volume_size;
};

/*
 * Starts a stream on @fd with @h (names cut to SEND_NAME_MAX).  Each call
 * below writes whole records with write(2), waiting for the reader: it
 * blocks as long as a pipe is full, unless @cancel says stop.  With
 * SEND_RESUMED in h->flags, the writer makes the whole stream, and its
 * checksums, but writes only @h and the bytes from h->resume_at on, @h
 * just before the first of them (send_writer_end says if there were
 * none, and then nothing was written).  0, -EINVAL for
 * a range the format cannot hold (unaligned, out of order, past the
 * volume) or a resume_at inside the header, -ECANCELED, or the write's
 * -errno (-EPIPE: the reader went away).
 */
int send_writer_begin(struct send_writer *w, int fd, const struct send_header *h,
		      const struct send_cancel *cancel);
/* Closes what send_writer_begin opened (with @cancel); call once done. */
void send_writer_release(struct send_writer *w);
/* @len bytes of the volume at @off from @buf: records of SEND_DATA_MAX at most. */
int send_writer_data(struct send_writer *w, uint64_t off, const void *buf, uint64_t len);
/* [@off, @off + @len) reads zeros and maps nothing. */
int send_writer_hole(struct send_writer *w, uint64_t off, uint64_t len);
/*
 * The end record.  Nothing may follow.  0; -ERANGE for a resumed stream
 * whose resume_at is at or past the whole stream's end (nothing was
 * written: there is no place a receive stopped at); or as above.
 */
int send_writer_end(struct send_writer *w);

/* ---- reading --------------------------------------------------------- */

struct send_reader {
	int fd;				/* the caller's; blocking */
	const struct send_cancel *cancel;	/* or NULL */
	uint32_t crc;			/* of every byte read so far */
	uint64_t pos;			/* bytes read so far: a record boundary between calls */
	uint64_t records;		/* DATA and HOLE records read */
	uint64_t data_bytes;
	uint64_t next;			/* the least offset the next record may have */
	uint64_t volume_size;
	bool ended;			/* the end record was read and checked */
	uint64_t resume_at;		/* SEND_RESUMED: until send_reader_resume */
	size_t partial;			/* bytes of a piece cut short, after -ENODATA */
};

/*
 * Reads and checks the header from @fd, waiting for the writer unless
 * @cancel says stop (then, and in every call below, -ECANCELED).  0;
 * -EBADMSG (not a stream, a version this build does not know, a field
 * out of range, a bad checksum) or -ENODATA (it stops inside the
 * header), with one line in @why (SEND_WHY_LEN bytes); or the read's
 * -errno.
 */
int send_reader_begin(struct send_reader *r, int fd, struct send_header *h,
		      const struct send_cancel *cancel, char *why);
/*
 * Reads the next record, its data into @buf (SEND_DATA_MAX bytes), and
 * checks it: its checksum, its range (aligned, in order, inside the
 * volume), and for the end record the counts and the stream's checksum.
 * 0; -EBADMSG with @why; -ENODATA if the stream stops before the end
 * record (r->pos is then the last record boundary); -EBADMSG too for a
 * byte after the end record (the caller asks: send_reader_finish).
 */
int send_reader_next(struct send_reader *r, struct send_record *rec, void *buf, char *why);
/*
 * After the end record: 0 if the descriptor holds nothing more, else
 * -EBADMSG ("bytes follow the end record").
 */
int send_reader_finish(struct send_reader *r, char *why);

/*
 * Where a reader stands between records: what a receive records so that
 * one cut short can go on from there (its checksum so far included, so
 * the stream's own can still be checked at its end).
 */
struct send_place {
	uint64_t pos;			/* bytes of the stream: a record boundary */
	uint32_t crc;			/* of those bytes */
	uint64_t records, data_bytes, next;
};

void send_reader_place(const struct send_reader *r, struct send_place *out);
/*
 * Goes on from @at, a place an earlier reader of the same stream passed,
 * after send_reader_begin: a stream that is the rest from there
 * (SEND_RESUMED) goes on at once if it starts at @at; a file is seeked
 * there; a pipe is read up to there, checking every record as
 * send_reader_next does, and then that its checksum so far is @at's: the
 * same stream as then.  0, -ESTALE if it is another stream or the rest
 * from another place (@why says so), or send_reader_next's errors.  A
 * SEND_RESUMED stream is read only after this.
 */
int send_reader_resume(struct send_reader *r, const struct send_place *at, void *buf,
		       char *why);

#endif
