#include "thin_alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bigmem.h"
#include "writelog.h"

#define FIELDS_BYTES	(THIN_ALLOC_MAX_BLOCKS / 8 * THIN_ALLOC_FIELD_BITS)
#define OVERFLOW_BYTES	(THIN_ALLOC_MAX_BLOCKS * sizeof(uint32_t))
#define MAX_CHUNKS	(THIN_ALLOC_MAX_BLOCKS / THIN_SPACE_CHUNK_BLOCKS)

static void *reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The fields of every gathered chunk whose counts are all 0. */
static const uint64_t zero_chunk[THIN_SPACE_CHUNK_WORDS];

static void free_chunk(struct thin_space_rec *rec)
{
	if (rec->fields != zero_chunk)
		free((void *)rec->fields);
	free(rec->overflow);
}

static void free_space(struct thin_alloc *a)
{
	for (size_t i = 0; i < a->nr_space; i++)
		free_chunk(&a->space[i]);
	free(a->space);
	a->space = NULL;
	a->nr_space = 0;
}

int thin_alloc_init(struct thin_alloc *a, uint64_t nr_blocks)
{
	memset(a, 0, sizeof(*a));
	if (nr_blocks > THIN_ALLOC_MAX_BLOCKS)
		return -EFBIG;
	a->fields = bigmem_map(FIELDS_BYTES);	/* dense: every block's count is read at start */
	a->overflow = reserve(OVERFLOW_BYTES);
	a->dirty_chunks = calloc(MAX_CHUNKS / 64, sizeof(uint64_t));
	if (!a->fields || !a->overflow || !a->dirty_chunks ||
	    sparse_bits_init(&a->pending_bits, THIN_ALLOC_MAX_BLOCKS) ||
	    sparse_bits_init(&a->discarded_bits, THIN_ALLOC_MAX_BLOCKS) ||
	    sparse_bits_init(&a->fresh_bits, THIN_ALLOC_MAX_BLOCKS) ||
	    thin_blocks_init(&a->unshared, THIN_ALLOC_MAX_BLOCKS) ||
	    thin_blocks_init(&a->unsharing, THIN_ALLOC_MAX_BLOCKS) ||
	    thin_blocks_init(&a->pending, THIN_ALLOC_MAX_BLOCKS) ||
	    thin_blocks_init(&a->committing, THIN_ALLOC_MAX_BLOCKS) ||
	    thin_blocks_init(&a->held, THIN_ALLOC_MAX_BLOCKS)) {
		thin_alloc_exit(a);
		return -ENOMEM;
	}
	a->nr_blocks = nr_blocks;
	a->nr_free = nr_blocks;
	return 0;
}

void thin_alloc_exit(struct thin_alloc *a)
{
	bigmem_unmap((void *)a->fields, FIELDS_BYTES);
	if (a->overflow)
		munmap(a->overflow, OVERFLOW_BYTES);
	sparse_bits_exit(&a->pending_bits);
	sparse_bits_exit(&a->discarded_bits);
	sparse_bits_exit(&a->fresh_bits);
	free(a->dirty_chunks);
	free(a->dirty);
	free_space(a);
	thin_blocks_exit(&a->unshared);
	thin_blocks_exit(&a->unsharing);
	thin_blocks_exit(&a->pending);
	thin_blocks_exit(&a->committing);
	thin_blocks_exit(&a->held);
	memset(a, 0, sizeof(*a));
}

/* The pending blocks, in order, into *@out (malloc'ed, *@nr).  0 or -ENOMEM. */
static int copy_pending(const struct thin_alloc *a, uint32_t **out, size_t *nr)
{
	uint64_t words = a->nr_blocks / 64 + 1, n = 0;
	uint32_t *v;

	for (uint64_t w = 0; w < words; w++)
		n += (uint64_t)__builtin_popcountll(sparse_bits_word(&a->pending_bits, w));
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	*nr = 0;
	for (uint64_t w = 0; w < words; w++)
		for (uint64_t bits = sparse_bits_word(&a->pending_bits, w); bits; bits &= bits - 1)
			v[(*nr)++] = (uint32_t)(w * 64 + (uint64_t)__builtin_ctzll(bits));
	*out = v;
	return 0;
}

int thin_alloc_copy_counts(const struct thin_alloc *a, struct thin_refs *refs,
			   uint32_t **pending, size_t *nr_pending)
{
	uint64_t words = a->nr_blocks / THIN_ALLOC_FIELDS_PER_WORD + 1;

	if (copy_pending(a, pending, nr_pending))
		return -ENOMEM;
	if (thin_refs_init(refs, a->nr_blocks)) {
		free(*pending);
		*pending = NULL;
		return -ENOMEM;
	}
	/* thin_refs keeps its fields as the allocator does: word by word. */
	for (uint64_t w = 0; w < words; w++) {
		uint64_t f = atomic_load_explicit(&a->fields[w], memory_order_relaxed);
		uint64_t many = f & (f >> 1) & 0x5555555555555555ull;

		thin_refs_set_word(refs, w, f);
		for (; many; many &= many - 1) {
			uint64_t b = w * THIN_ALLOC_FIELDS_PER_WORD +
				     (uint64_t)__builtin_ctzll(many) / THIN_ALLOC_FIELD_BITS;

			refs->overflow[b] = a->overflow[b];
		}
	}
	return 0;
}

int thin_alloc_grow(struct thin_alloc *a, uint64_t nr_blocks)
{
	if (nr_blocks < a->nr_blocks)
		return -EINVAL;
	if (nr_blocks > THIN_ALLOC_MAX_BLOCKS)
		return -EFBIG;
	a->nr_free += nr_blocks - a->nr_blocks;
	a->nr_blocks = nr_blocks;
	return 0;
}

static bool is_pending(const struct thin_alloc *a, uint32_t b)
{
	return sparse_bits_test(&a->pending_bits, b);
}

static bool is_discarded(const struct thin_alloc *a, uint32_t b)
{
	return sparse_bits_test(&a->discarded_bits, b);
}

/* Sets or clears block @b's bit in @bits. */
static void bit_set(struct sparse_bits *bits, uint32_t b)
{
	sparse_bits_set(bits, b / 64, 1ull << (b % 64));
}

static void bit_clear(struct sparse_bits *bits, uint32_t b)
{
	sparse_bits_clear(bits, b / 64, 1ull << (b % 64));
}

/*
 * The bitmaps give back the pages that blocks freed and allocated here
 * and there left empty (sparse_bits.h); once a commit, so that blocks
 * provisioned one after another do not give back and fault in a page for
 * each.
 */
static void trim_bitmaps(struct thin_alloc *a)
{
	sparse_bits_trim(&a->pending_bits);
	sparse_bits_trim(&a->discarded_bits);
	sparse_bits_trim(&a->fresh_bits);
}

/* The word holding block @b's field, and that field's one. */
static _Atomic uint64_t *word_of(struct thin_alloc *a, uint32_t b, uint64_t *one)
{
	*one = 1ull << (b % THIN_ALLOC_FIELDS_PER_WORD * THIN_ALLOC_FIELD_BITS);
	return &a->fields[b / THIN_ALLOC_FIELDS_PER_WORD];
}

/* Count 0 or 1 to the next; the release orders what the caller wrote before. */
static void field_up(struct thin_alloc *a, uint32_t b)
{
	uint64_t one;
	_Atomic uint64_t *w = word_of(a, b, &one);

	atomic_fetch_add_explicit(w, one, memory_order_release);
}

static void field_down(struct thin_alloc *a, uint32_t b)
{
	uint64_t one;
	_Atomic uint64_t *w = word_of(a, b, &one);

	atomic_fetch_sub_explicit(w, one, memory_order_release);
}

static void field_clear(struct thin_alloc *a, uint32_t b)
{
	uint64_t one;
	_Atomic uint64_t *w = word_of(a, b, &one);

	atomic_fetch_and_explicit(w, ~(one * 3), memory_order_release);
}

/* Block @b's count changed: its chunk goes into the next commit. */
static void mark_dirty(struct thin_alloc *a, uint32_t b)
{
	uint32_t c = b / THIN_SPACE_CHUNK_BLOCKS;

	if ((a->dirty_chunks[c / 64] >> (c % 64)) & 1)
		return;
	if (a->nr_dirty == a->cap_dirty) {
		size_t cap = a->cap_dirty ? 2 * a->cap_dirty : 64;
		uint32_t *p = realloc(a->dirty, cap * sizeof(*p));

		if (!p) {
			a->space_whole = true;	/* unlisted: the next gather takes all */
			return;
		}
		a->dirty = p;
		a->cap_dirty = cap;
	}
	a->dirty_chunks[c / 64] |= 1ull << (c % 64);
	a->dirty[a->nr_dirty++] = c;
}

/*
 * The low bits of @w's pairs that are set (@w has no other bit set).
 * __builtin_popcountll is a call into libgcc's table unless the target
 * has POPCNT, which x86-64's baseline has not: three steps of adding
 * neighbours instead, the first one (pairs) already done.
 */
static unsigned int pairs_set(uint64_t w)
{
	w = (w & 0x3333333333333333ull) + (w >> 2 & 0x3333333333333333ull);
	w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned int)((w * 0x0101010101010101ull) >> 56);
}

/* Adds the fields of word @w in use (any count) to *@used, shared (2 or more) to *@shared. */
static void count_word(uint64_t w, uint64_t *used, uint64_t *shared)
{
	const uint64_t low = 0x5555555555555555ull;

	*used += pairs_set((w | w >> 1) & low);
	*shared += pairs_set(w >> 1 & low);
}

/*
 * Counted a word at a time (1e8 blocks: 3.1M words, where a loop over
 * fields was an eighth of a 1e8-block mount): a field's low bit of each
 * pair marks it in use if either bit is set, shared if the high one is.
 * Fields of the last word past nr_blocks are masked off.
 */
void thin_alloc_loaded(struct thin_alloc *a)
{
	uint64_t used = 0;

	a->nr_shared = 0;
	for (uint64_t b = 0; b < a->nr_blocks; b += THIN_ALLOC_FIELDS_PER_WORD) {
		uint64_t w = atomic_load_explicit(&a->fields[b / THIN_ALLOC_FIELDS_PER_WORD],
						  memory_order_relaxed);

		if (a->nr_blocks - b < THIN_ALLOC_FIELDS_PER_WORD)
			w &= (1ull << (a->nr_blocks - b) * THIN_ALLOC_FIELD_BITS) - 1;
		count_word(w, &used, &a->nr_shared);
	}
	a->nr_free = a->nr_blocks - used;
}

int thin_alloc_new(struct thin_alloc *a, uint32_t *b)
{
	if (!a->nr_free)
		return -ENOSPC;
	for (;;) {
		uint32_t c;

		if (a->cursor >= a->nr_blocks)
			a->cursor = 0;
		c = (uint32_t)a->cursor++;
		if (thin_alloc_field(a, c) || is_pending(a, c))
			continue;
		field_up(a, c);
		bit_set(&a->fresh_bits, c);
		mark_dirty(a, c);
		bit_clear(&a->discarded_bits, c);
		a->nr_free--;
		*b = c;
		return 0;
	}
}

void thin_alloc_get(struct thin_alloc *a, uint32_t b)
{
	mark_dirty(a, b);
	switch (thin_alloc_field(a, b)) {
	case THIN_ALLOC_FIELD_MANY:
		a->overflow[b]++;
		break;
	case 2:
		a->overflow[b] = 3;	/* before the field says where to look */
		field_up(a, b);
		break;
	case 1:
		a->nr_shared++;
		field_up(a, b);
		break;
	default:
		field_up(a, b);
	}
}

void thin_alloc_put(struct thin_alloc *a, uint32_t b)
{
	/* Counts change under the pool lock only: this one is stable. */
	uint32_t f = thin_alloc_field(a, b);

	mark_dirty(a, b);
	if (f > 1) {
		thin_blocks_add(&a->unshared, b);	/* before the drop: see exclusive() */
		a->nr_shared -= f == 2;
		if (f < THIN_ALLOC_FIELD_MANY || a->overflow[b] == 3)
			field_down(a, b);
		else
			a->overflow[b]--;
		return;
	}
	field_clear(a, b);
	if (writelog_broken(WRITELOG_BREAK_REUSE_BEFORE_COMMIT)) {
		a->nr_free++;		/* a power-cut test's deliberate bug: */
		a->cursor = b;		/* free at once, and next to go */
		return;
	}
	bit_set(&a->pending_bits, b);
	thin_blocks_add(&a->pending, b);
}

void thin_alloc_unnew(struct thin_alloc *a, uint32_t b)
{
	field_clear(a, b);
	bit_clear(&a->fresh_bits, b);
	a->nr_free++;
}

void thin_alloc_published(struct thin_alloc *a, uint32_t b)
{
	bit_clear(&a->fresh_bits, b);
	mark_dirty(a, b);
}

/* ---- the space map --------------------------------------------------------- */

/* How many fields of word @w are THIN_ALLOC_FIELD_MANY (both bits set). */
static unsigned int many_in(uint64_t w)
{
	return pairs_set(w & (w >> 1) & 0x5555555555555555ull);
}

int thin_alloc_space_load(struct thin_alloc *a, const struct thin_space_rec *rec)
{
	uint64_t first = rec->chunk * THIN_SPACE_CHUNK_BLOCKS, used = 0, shared = 0;
	size_t many = 0;

	if (rec->chunk >= MAX_CHUNKS)
		return -EUCLEAN;
	for (unsigned int i = 0; i < THIN_SPACE_CHUNK_WORDS; i++) {
		uint64_t w = rec->fields[i], base = first + i * THIN_ALLOC_FIELDS_PER_WORD;

		if (w && base + THIN_ALLOC_FIELDS_PER_WORD > a->nr_blocks)	/* reaches the end */
			for (unsigned int j = 0; j < THIN_ALLOC_FIELDS_PER_WORD; j++)
				if (((w >> (2 * j)) & 3) && base + j >= a->nr_blocks)
					return -EUCLEAN;	/* a count past the data area */
		many += many_in(w);
		count_word(w, &used, &shared);
		atomic_store_explicit(&a->fields[first / THIN_ALLOC_FIELDS_PER_WORD + i], w,
				      memory_order_relaxed);
	}
	if (many != rec->nr_overflow)
		return -EUCLEAN;
	a->nr_free -= used;	/* counted as it loads: no pass over the map at start */
	a->nr_shared += shared;
	for (size_t i = 0; i < rec->nr_overflow; i++) {
		uint32_t off = rec->overflow[2 * i], n = rec->overflow[2 * i + 1];

		if (off >= THIN_SPACE_CHUNK_BLOCKS || n < 3 ||
		    thin_alloc_field(a, (uint32_t)(first + off)) != THIN_ALLOC_FIELD_MANY)
			return -EUCLEAN;
		a->overflow[first + off] = n;
	}
	return 0;
}

void thin_alloc_space_stale(struct thin_alloc *a)
{
	a->space_whole = true;
}

/*
 * Chunk @c as the committed leaves will count it, into @rec: its fields
 * copied, or zero_chunk if all are 0.  0 or -ENOMEM, and then nothing
 * is allocated.
 */
static int gather_chunk(struct thin_alloc *a, uint32_t c, struct thin_space_rec *rec)
{
	uint64_t first = (uint64_t)c * THIN_SPACE_CHUNK_BLOCKS;
	uint64_t fields[THIN_SPACE_CHUNK_WORDS], any = 0, *copy;
	size_t n = 0;

	rec->chunk = c;
	rec->fields = zero_chunk;
	rec->overflow = NULL;
	rec->nr_overflow = 0;
	for (unsigned int i = 0; i < THIN_SPACE_CHUNK_WORDS; i++) {
		uint64_t w = atomic_load_explicit(&a->fields[first / THIN_ALLOC_FIELDS_PER_WORD + i],
						  memory_order_relaxed);
		uint32_t fresh = (uint32_t)(sparse_bits_word(&a->fresh_bits, (first + 32 * i) / 64) >>
					    ((first + 32 * i) % 64));

		for (unsigned int j = 0; fresh && j < THIN_ALLOC_FIELDS_PER_WORD; j++)
			if ((fresh >> j) & 1)
				w &= ~(3ull << (2 * j));	/* not in a leaf yet */
		n += many_in(w);
		fields[i] = w;
		any |= w;
	}
	if (!any)
		return 0;
	copy = malloc(sizeof(fields));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, fields, sizeof(fields));
	rec->fields = copy;
	if (!n)
		return 0;
	rec->overflow = malloc(n * 2 * sizeof(uint32_t));
	if (!rec->overflow) {
		free_chunk(rec);
		return -ENOMEM;
	}
	for (uint32_t off = 0; off < THIN_SPACE_CHUNK_BLOCKS; off++) {
		uint64_t w = fields[off / THIN_ALLOC_FIELDS_PER_WORD];

		if (((w >> (2 * (off % THIN_ALLOC_FIELDS_PER_WORD))) & 3) != THIN_ALLOC_FIELD_MANY)
			continue;
		rec->overflow[2 * rec->nr_overflow] = off;
		rec->overflow[2 * rec->nr_overflow + 1] = a->overflow[first + off];
		rec->nr_overflow++;
	}
	return 0;
}

int thin_alloc_space_gather(struct thin_alloc *a)
{
	bool whole = a->space_whole;
	uint64_t nr = whole ? (a->nr_blocks + THIN_SPACE_CHUNK_BLOCKS - 1) / THIN_SPACE_CHUNK_BLOCKS :
			      a->nr_dirty;

	a->space = calloc(nr ? nr : 1, sizeof(*a->space));
	if (!a->space)
		return -ENOMEM;
	for (a->nr_space = 0; a->nr_space < nr; a->nr_space++) {
		uint32_t c = whole ? (uint32_t)a->nr_space : a->dirty[a->nr_space];

		if (gather_chunk(a, c, &a->space[a->nr_space])) {
			free_space(a);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < a->nr_dirty; i++)
		a->dirty_chunks[a->dirty[i] / 64] &= ~(1ull << (a->dirty[i] % 64));
	a->nr_dirty = 0;
	a->space_whole = false;
	a->space_gathered_whole = whole;
	return 0;
}

void thin_alloc_space_done(struct thin_alloc *a, bool committed, bool stale)
{
	if (committed && stale)
		a->space_whole = true;
	if (!committed && a->space_gathered_whole)
		a->space_whole = true;
	for (size_t i = 0; !committed && !a->space_gathered_whole && i < a->nr_space; i++)
		mark_dirty(a, (uint32_t)(a->space[i].chunk * THIN_SPACE_CHUNK_BLOCKS));
	free_space(a);
	a->space_gathered_whole = false;
}

/* Copies set @from into set @to, then empties @from: readers of the bits see each block in one or both. */
static void move_blocks(struct thin_blocks *to, struct thin_blocks *from)
{
	struct thin_blocks_walk w = THIN_BLOCKS_WALK_INIT;
	uint64_t word, mask;

	while (thin_blocks_next(from, &w, &word, &mask))
		thin_blocks_add_word(to, word, mask);
	thin_blocks_clear(from);
}

void thin_alloc_gather(struct thin_alloc *a)
{
	/*
	 * A commit gathers only after the previous one settled; should one
	 * not have, its blocks stay pending for good: a leak, not a double
	 * owner.
	 */
	thin_blocks_clear(&a->committing);
	thin_blocks_swap(&a->committing, &a->pending);
	/*
	 * Set in the committing bitmap before clearing in the open one: a
	 * reader that finds the open bit clear then finds this one set.
	 */
	move_blocks(&a->unsharing, &a->unshared);
}

/* Block @word * 64 + i is pending for each bit i of @mask no more: free. */
static void unpend(struct thin_alloc *a, uint64_t word, uint64_t mask)
{
	sparse_bits_clear(&a->pending_bits, word, mask);
	a->nr_free += (uint64_t)__builtin_popcountll(mask);
}

void thin_alloc_committed(struct thin_alloc *a)
{
	struct thin_blocks_walk w = THIN_BLOCKS_WALK_INIT;
	uint64_t word, mask;

	while (thin_blocks_next(&a->committing, &w, &word, &mask))
		unpend(a, word, mask);
	thin_blocks_clear(&a->committing);
	/* The drops of the committed transaction are durable: exclusive again. */
	thin_blocks_clear(&a->unsharing);
	trim_bitmaps(a);
}

void thin_alloc_abandoned(struct thin_alloc *a)
{
	move_blocks(&a->pending, &a->committing);
	/* Unsharing blocks stay so until a commit that succeeds. */
	move_blocks(&a->unshared, &a->unsharing);
}

uint64_t thin_alloc_hold_committed(struct thin_alloc *a)
{
	thin_blocks_clear(&a->held);
	thin_blocks_swap(&a->held, &a->committing);
	a->held_by_trim = false;
	thin_blocks_sort(&a->held);
	thin_blocks_clear(&a->unsharing);
	return a->held.nr;
}

uint64_t thin_alloc_hold_free(struct thin_alloc *a, uint64_t *next, uint64_t max)
{
	uint64_t b;

	thin_blocks_clear(&a->held);
	a->held_by_trim = true;
	for (b = *next; b < a->nr_blocks && a->held.nr < max; b++) {
		if (thin_alloc_field(a, (uint32_t)b) || is_pending(a, (uint32_t)b) || is_discarded(a, (uint32_t)b))
			continue;
		bit_set(&a->pending_bits, (uint32_t)b);
		a->nr_free--;
		thin_blocks_add(&a->held, (uint32_t)b);
	}
	*next = b;
	return a->held.nr;
}

void thin_alloc_release(struct thin_alloc *a, bool discarded)
{
	struct thin_blocks_walk w = THIN_BLOCKS_WALK_INIT;
	uint64_t word, mask;

	while (thin_blocks_next(&a->held, &w, &word, &mask)) {
		unpend(a, word, mask);
		if (discarded && (a->held_by_trim ||
				  a->discarded_bits.nr_pages_set < THIN_ALLOC_PASSDOWN_MARK_PAGES))
			sparse_bits_set(&a->discarded_bits, word, mask);
	}
	thin_blocks_clear(&a->held);
	trim_bitmaps(a);
}
