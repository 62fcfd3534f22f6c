#include "mirror_log.h"

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "label.h"
#include "rcu.h"

#define LOG_MAGIC	"MFSMLOG1"
#define LOG_VERSION	1
#define PAGE_BYTES	4096u
#define PAGE_REGIONS	(PAGE_BYTES * 8u)

struct log_header {
	char magic[8];
	uint32_t version_le;
	uint32_t region_size_le;
	uint32_t nr_legs_le;
	uint32_t pad;
	uint64_t nr_bits_le;
	uint8_t leg_state[MIRROR_LEGS_MAX];
	uint32_t pad2;
	uint64_t cursor_le[MIRROR_LEGS_MAX];
	uint32_t crc_le;			/* of the bytes before it */
};

static pthread_cond_t synced = PTHREAD_COND_INITIALIZER;	/* SYNCING dropped */

static int write_all(int fd, const void *buf, size_t n, off_t at)
{
	while (n) {
		ssize_t w = pwrite(fd, buf, n, at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		buf = (const char *)buf + w;
		n -= (size_t)w;
		at += w;
	}
	return 0;
}

/* Header from memory to disk; not synced. */
static int header_write(struct mirror_log *l)
{
	struct log_header h;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, LOG_MAGIC, sizeof(h.magic));
	h.version_le = htole32(LOG_VERSION);
	h.region_size_le = htole32(l->region_size);
	h.nr_legs_le = htole32(l->nr_legs);
	h.nr_bits_le = htole64(l->nr_bits);
	for (unsigned int i = 0; i < MIRROR_LEGS_MAX; i++) {
		h.leg_state[i] = atomic_load(&l->leg_state[i]);
		h.cursor_le[i] = htole64(atomic_load(&l->cursor[i]));
	}
	h.crc_le = htole32(label_crc32(&h, offsetof(struct log_header, crc_le)));
	return write_all(l->fd, &h, sizeof(h), 0);
}

/*
 * The page of bits holding region @region, from the regions' DIRTY
 * states, with [first, last] counted as set: written, not synced.
 */
static int page_write(struct mirror_log *l, uint64_t region, uint64_t first, uint64_t last)
{
	_Atomic uint8_t *st = atomic_load(&l->state);
	uint64_t start = region / PAGE_REGIONS * PAGE_REGIONS;
	uint64_t end = start + PAGE_REGIONS < l->nr_bits ? start + PAGE_REGIONS : l->nr_bits;
	uint8_t page[PAGE_BYTES];

	memset(page, 0, sizeof(page));
	for (uint64_t r = start; r < end; r++)
		if ((atomic_load(&st[r]) & MIRROR_DIRTY) || (r >= first && r <= last))
			page[(r - start) / 8] |= (uint8_t)(1u << ((r - start) % 8));
	return write_all(l->fd, page, (size_t)((end - start + 7) / 8),
			 (off_t)(MIRROR_LOG_HEADER + start / 8));
}

static int log_sync(struct mirror_log *l)
{
	return fdatasync(l->fd) ? -errno : 0;
}

static struct mirror_log *log_new(int fd, unsigned int nr_legs, uint64_t nr_regions)
{
	struct mirror_log *l = calloc(1, sizeof(*l));
	_Atomic uint8_t *st = calloc(nr_regions ? nr_regions : 1, 1);

	if (!l || !st) {
		free(l);
		free(st);
		return NULL;
	}
	l->fd = fd;
	l->nr_legs = nr_legs;
	l->nr_bits = nr_regions;
	pthread_mutex_init(&l->lock, NULL);
	atomic_init(&l->state, st);
	atomic_init(&l->nr_regions, nr_regions);
	return l;
}

int mirror_log_create(int fd, unsigned int nr_legs, uint32_t region_size,
		      uint64_t nr_regions, bool all_dirty, struct mirror_log **out)
{
	struct mirror_log *l;
	int r;

	if (!nr_legs || nr_legs > MIRROR_LEGS_MAX || !region_size ||
	    (region_size & (region_size - 1))) {
		close(fd);
		return -EINVAL;
	}
	l = log_new(fd, nr_legs, nr_regions);
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	l->region_size = region_size;
	r = ftruncate(fd, (off_t)(MIRROR_LOG_HEADER + (nr_regions + 7) / 8)) ? -errno : 0;
	for (uint64_t i = 0; all_dirty && i < nr_regions; i++)
		atomic_init(&atomic_load(&l->state)[i], MIRROR_DIRTY | MIRROR_NOSYNC);
	for (uint64_t page = 0; all_dirty && !r && page * PAGE_REGIONS < nr_regions; page++)
		r = page_write(l, page * PAGE_REGIONS, 1, 0);
	if (!r)
		r = header_write(l);
	if (!r)
		r = log_sync(l);
	if (r) {
		mirror_log_close(l);
		return r;
	}
	*out = l;
	return 0;
}

static int read_all(int fd, void *buf, size_t n, off_t at)
{
	while (n) {
		ssize_t got = pread(fd, buf, n, at);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (!got)
			return -EUCLEAN;	/* shorter than its header says */
		buf = (char *)buf + got;
		n -= (size_t)got;
		at += got;
	}
	return 0;
}

/*
 * The header of the log in @fd into @h, checked: magic, version,
 * checksum, @nr_legs legs, a power-of-two region size.  0, -EUCLEAN, or
 * -errno on I/O.
 */
static int header_read(int fd, unsigned int nr_legs, struct log_header *h)
{
	int r = read_all(fd, h, sizeof(*h), 0);
	uint32_t region_size;

	if (r)
		return r;
	region_size = le32toh(h->region_size_le);
	if (memcmp(h->magic, LOG_MAGIC, sizeof(h->magic)) || le32toh(h->version_le) != LOG_VERSION ||
	    le32toh(h->crc_le) != label_crc32(h, offsetof(struct log_header, crc_le)) ||
	    le32toh(h->nr_legs_le) != nr_legs || !region_size || (region_size & (region_size - 1)))
		return -EUCLEAN;
	return 0;
}

/* Calls @set with each of the first @bits regions whose bit is set in @fd. */
static int bits_read(int fd, uint64_t bits, void (*set)(void *arg, uint64_t region), void *arg)
{
	uint8_t page[PAGE_BYTES];
	int r = 0;

	for (uint64_t start = 0; start < bits && !r; start += PAGE_REGIONS) {
		uint64_t n = bits - start < PAGE_REGIONS ? bits - start : PAGE_REGIONS;

		r = read_all(fd, page, (size_t)((n + 7) / 8), (off_t)(MIRROR_LOG_HEADER + start / 8));
		for (uint64_t i = 0; !r && i < n; i++)
			if (page[i / 8] & (1u << (i % 8)))
				set(arg, start + i);
	}
	return r;
}

/* A region set in the log comes back to be resynced. */
static void set_nosync(void *arg, uint64_t region)
{
	struct mirror_log *l = arg;

	atomic_init(&atomic_load(&l->state)[region], MIRROR_DIRTY | MIRROR_NOSYNC);
}

static void count_set(void *arg, uint64_t region)
{
	(void)region;
	++*(uint64_t *)arg;
}

int mirror_log_open(int fd, unsigned int nr_legs, uint64_t nr_regions,
		    struct mirror_log **out)
{
	struct log_header h;
	struct mirror_log *l;
	uint64_t bits;
	int r = header_read(fd, nr_legs, &h);

	bits = r ? 0 : le64toh(h.nr_bits_le);
	if (bits > nr_regions)
		r = -EUCLEAN;
	if (r) {
		close(fd);
		return r;
	}
	l = log_new(fd, nr_legs, nr_regions);
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	l->region_size = le32toh(h.region_size_le);
	l->nr_bits = bits;
	for (unsigned int i = 0; i < MIRROR_LEGS_MAX; i++) {
		atomic_init(&l->leg_state[i], h.leg_state[i]);
		atomic_init(&l->cursor[i], le64toh(h.cursor_le[i]));
	}
	r = bits_read(fd, bits, set_nosync, l);
	if (!r && bits < nr_regions)		/* grown while it was closed */
		r = mirror_log_grow(l, nr_regions, bits ? bits - 1 : 0);
	if (r) {
		mirror_log_close(l);
		return r;
	}
	*out = l;
	return 0;
}

int mirror_log_inspect(int fd, unsigned int nr_legs, uint64_t *dirty)
{
	struct log_header h;
	int r = header_read(fd, nr_legs, &h);

	*dirty = 0;
	return r ? r : bits_read(fd, le64toh(h.nr_bits_le), count_set, dirty);
}

void mirror_log_close(struct mirror_log *l)
{
	if (!l)
		return;
	close(l->fd);
	pthread_mutex_destroy(&l->lock);
	free((void *)atomic_load(&l->state));
	free(l);
}

int mirror_log_mark(struct mirror_log *l, uint64_t first, uint64_t last)
{
	_Atomic uint8_t *st;
	bool clear = false;
	int r = 0;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		bool syncing = false;

		st = atomic_load(&l->state);
		clear = false;
		for (uint64_t i = first; i <= last; i++) {
			uint8_t s = atomic_load(&st[i]);

			syncing |= s & MIRROR_SYNCING;
			clear |= !(s & MIRROR_DIRTY);
		}
		if (!syncing)
			break;
		pthread_cond_wait(&synced, &l->lock);
	}
	for (uint64_t page = first / PAGE_REGIONS; clear && !r && page <= last / PAGE_REGIONS; page++)
		r = page_write(l, page * PAGE_REGIONS, first, last);
	if (clear && !r)
		r = log_sync(l);
	for (uint64_t i = first; !r && i <= last; i++)
		atomic_fetch_or(&st[i], MIRROR_DIRTY | MIRROR_SEEN);
	pthread_mutex_unlock(&l->lock);
	return r;
}

int mirror_log_sweep(struct mirror_log *l, uint64_t **cleared, size_t *nr)
{
	uint64_t n = atomic_load(&l->nr_regions);
	_Atomic uint8_t *st;
	bool degraded = false;
	size_t cap = 0;

	*cleared = NULL;
	*nr = 0;
	for (unsigned int i = 0; i < l->nr_legs; i++)
		degraded |= atomic_load(&l->leg_state[i]) == MIRROR_LEG_FAILED ||
			    atomic_load(&l->leg_state[i]) == MIRROR_LEG_CATCHING_UP;
	pthread_mutex_lock(&l->lock);
	st = atomic_load(&l->state);
	for (uint64_t i = 0; i < n; i++) {
		uint8_t s = atomic_load(&st[i]);

		if (!(s & MIRROR_DIRTY) || (s & (MIRROR_NOSYNC | MIRROR_SYNCING)))
			continue;
		if (s & MIRROR_SEEN || degraded) {
			atomic_fetch_and(&st[i], (uint8_t)~MIRROR_SEEN);
			continue;
		}
		if (*nr == cap) {
			uint64_t *v = realloc(*cleared, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!v) {
				pthread_mutex_unlock(&l->lock);
				return -ENOMEM;
			}
			*cleared = v;
		}
		atomic_fetch_and(&st[i], (uint8_t)~MIRROR_DIRTY);
		(*cleared)[(*nr)++] = i;
	}
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int mirror_log_commit_clean(struct mirror_log *l, const uint64_t *cleared, size_t nr)
{
	uint64_t last_page = UINT64_MAX;
	int r = 0;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < nr && !r; i++) {
		uint64_t page = cleared[i] / PAGE_REGIONS;

		if (page != last_page)
			r = page_write(l, cleared[i], 1, 0);
		last_page = page;
	}
	if (nr && !r)
		r = log_sync(l);
	pthread_mutex_unlock(&l->lock);
	return r;
}

int mirror_log_set_leg(struct mirror_log *l, unsigned int leg,
		       enum mirror_leg_state state, uint64_t cursor)
{
	int r;

	pthread_mutex_lock(&l->lock);
	atomic_store(&l->leg_state[leg], (uint8_t)state);
	atomic_store(&l->cursor[leg], cursor);
	r = header_write(l);
	if (!r)
		r = log_sync(l);
	pthread_mutex_unlock(&l->lock);
	return r;
}

int mirror_log_advance(struct mirror_log *l, unsigned int leg, enum mirror_leg_state from,
		       enum mirror_leg_state to, uint64_t cursor)
{
	int r = -ESTALE;

	pthread_mutex_lock(&l->lock);
	if (atomic_load(&l->leg_state[leg]) == from) {
		atomic_store(&l->leg_state[leg], (uint8_t)to);
		atomic_store(&l->cursor[leg], cursor);
		r = header_write(l);
		if (!r)
			r = log_sync(l);
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

int mirror_log_grow(struct mirror_log *l, uint64_t nr_regions, uint64_t resync_from)
{
	_Atomic uint8_t *old, *st;
	uint64_t n;
	int r = 0;

	pthread_mutex_lock(&l->lock);
	old = atomic_load(&l->state);
	n = atomic_load(&l->nr_regions);
	st = old;
	if (nr_regions > n || nr_regions > l->nr_bits) {
		st = calloc(nr_regions, 1);
		if (!st) {
			pthread_mutex_unlock(&l->lock);
			return -ENOMEM;
		}
		for (uint64_t i = 0; i < n && i < nr_regions; i++)
			atomic_init(&st[i], atomic_load(&old[i]));
		r = ftruncate(l->fd, (off_t)(MIRROR_LOG_HEADER + (nr_regions + 7) / 8)) ? -errno : 0;
	}
	/* What the legs hold past the old end was never written through us. */
	for (uint64_t i = resync_from; !r && i < nr_regions; i++)
		atomic_fetch_or(&st[i], MIRROR_DIRTY | MIRROR_NOSYNC);
	if (!r && st != old) {
		rcu_publish(l->state, st);
		atomic_store(&l->nr_regions, nr_regions);
		l->nr_bits = nr_regions;
		r = header_write(l);
	}
	for (uint64_t page = resync_from / PAGE_REGIONS; !r && page * PAGE_REGIONS < nr_regions;
	     page++)
		r = page_write(l, page * PAGE_REGIONS, 1, 0);
	if (!r)
		r = log_sync(l);
	if (r && st != old && atomic_load(&l->state) != st)
		free((void *)st);	/* never published */
	pthread_mutex_unlock(&l->lock);
	if (st != old && atomic_load(&l->state) == st) {
		rcu_wait_readers();
		free((void *)old);
	}
	return r;
}

uint64_t mirror_log_dirty(const struct mirror_log *l)
{
	uint64_t n = atomic_load(&l->nr_regions), dirty = 0;
	_Atomic uint8_t *st;

	rcu_read_begin();
	st = rcu_load(((struct mirror_log *)l)->state);
	for (uint64_t i = 0; i < n; i++)
		dirty += !!(atomic_load(&st[i]) & MIRROR_DIRTY);
	rcu_read_end();
	return dirty;
}

void mirror_log_set_bits(struct mirror_log *l, uint64_t region, uint8_t bits)
{
	pthread_mutex_lock(&l->lock);
	atomic_fetch_or(&atomic_load(&l->state)[region], bits);
	pthread_mutex_unlock(&l->lock);
}

void mirror_log_clear_bits(struct mirror_log *l, uint64_t region, uint8_t bits)
{
	pthread_mutex_lock(&l->lock);
	atomic_fetch_and(&atomic_load(&l->state)[region], (uint8_t)~bits);
	pthread_cond_broadcast(&synced);
	pthread_mutex_unlock(&l->lock);
}
