#include "thin_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "slab.h"

/* Every pool's leaf entries, on every thread: slab.h says why not malloc. */
static struct slab leaf_entries = SLAB_INIT(THIN_LEAF_ENTRIES * sizeof(uint32_t));
/*
 * And their headers, one per leaf of every map from start (195,313 at 1e8
 * blocks): on huge pages, without malloc's word per object.
 */
static struct slab leaf_headers = SLAB_INIT_HUGE((sizeof(struct thin_leaf) + 15) / 16 * 16);
_Static_assert(sizeof(struct thin_leaf) <= 48, "a leaf header grew past 48 bytes");

struct thin_leaf *thin_leaf_stub(int64_t id)
{
	struct thin_leaf *l = slab_alloc(&leaf_headers);

	if (!l)
		return NULL;
	memset(l, 0, sizeof(*l));
	atomic_init(&l->refs, 1);
	l->id = id;
	return l;
}

struct thin_leaf *thin_leaf_new(int64_t id)
{
	struct thin_leaf *l = thin_leaf_stub(id);
	_Atomic uint32_t *e = slab_alloc(&leaf_entries);

	if (!l || !e) {
		slab_free(&leaf_headers, l);
		slab_free(&leaf_entries, (void *)e);
		return NULL;
	}
	memset((void *)e, 0, THIN_LEAF_ENTRIES * sizeof(*e));
	atomic_init(&l->e, e);
	atomic_init(&l->referenced, true);
	return l;
}

int thin_leaf_fill(struct thin_leaf *l, const struct thin_leaf_rec *rec)
{
	_Atomic uint32_t *e = slab_alloc(&leaf_entries);

	if (!e)
		return -ENOMEM;
	for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
		atomic_init(&e[i], rec->map[i] & ~THIN_PROVISIONING);
	atomic_store_explicit(&l->referenced, true, memory_order_relaxed);	/* a round first */
	atomic_store_explicit(&l->e, e, memory_order_release);
	return 0;
}

_Atomic uint32_t *thin_leaf_unload(struct thin_leaf *l)
{
	return atomic_exchange_explicit(&l->e, NULL, memory_order_release);
}

void thin_leaf_entries_free(_Atomic uint32_t *e)
{
	slab_free(&leaf_entries, (void *)e);
}

void *thin_leaf_slab_get(void)
{
	return slab_alloc(&leaf_entries);
}

void thin_leaf_slab_put(void *buf)
{
	slab_free(&leaf_entries, buf);
}

size_t thin_leaf_slab_trim(void)
{
	return slab_trim(&leaf_entries);
}

void thin_leaf_free(struct thin_leaf *l)
{
	if (!l)
		return;
	thin_leaf_entries_free(atomic_load_explicit(&l->e, memory_order_relaxed));
	slab_free(&leaf_headers, l);
}

/*
 * An entry in flight keeps its old value under the flag: the copy holds
 * that old value, and the provisioning writer, which made the copy
 * impossible by holding the volume quiesced, never sees this copy.
 */
struct thin_leaf *thin_leaf_copy(const struct thin_leaf *l, int64_t id)
{
	struct thin_leaf *c = thin_leaf_new(id);

	if (!c)
		return NULL;
	for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
		atomic_init(&c->e[i], atomic_load_explicit(&l->e[i], memory_order_relaxed) &
			    ~THIN_PROVISIONING);
	return c;
}

struct thin_dir *thin_dir_new(int64_t id, uint32_t nr)
{
	size_t words = thin_dir_changed_words(nr);
	struct thin_dir *d = calloc(1, sizeof(*d) + (size_t)nr * sizeof(d->leaf[0]) +
				    words * sizeof(uint64_t));

	if (!d)
		return NULL;
	atomic_init(&d->refs, 1);
	d->nr = nr;
	d->id = id;
	d->write_whole = true;
	d->changed = (uint64_t *)&d->leaf[nr];
	return d;
}

struct thin_dir *thin_dir_copy(struct thin_dir *d, int64_t id, uint32_t nr)
{
	struct thin_dir *c = thin_dir_new(id, nr < d->nr ? d->nr : nr);

	if (!c)
		return NULL;
	for (uint32_t i = 0; i < d->nr; i++) {
		struct thin_leaf *l = atomic_load_explicit(&d->leaf[i], memory_order_relaxed);

		if (l)
			atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
		atomic_init(&c->leaf[i], l);
	}
	return c;
}

void thin_leaf_record(const struct thin_leaf *l, struct thin_leaf_rec *out)
{
	out->id = l->id;
	for (unsigned int i = 0; i < THIN_LEAF_ENTRIES; i++)
		out->map[i] = atomic_load_explicit(&l->e[i], memory_order_relaxed) &
			      ~THIN_PROVISIONING;
}
