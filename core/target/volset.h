/*
 * fs/volset.h: the volumes the daemon serves, published with RCU.
 *
 * FUSE handlers find a volume by inode or name inside an RCU read-side
 * section; the control thread, the only writer, publishes a new array on
 * every change and waits for a grace period before it frees the old one,
 * so a lookup never waits for an admin command.
 */
#ifndef MAPPERFS_VOLSET_H
#define MAPPERFS_VOLSET_H

#include <stddef.h>
#include <stdint.h>

struct volume;

struct volset_array {
	size_t nr;
	struct volume *v[];		/* sorted by id */
};

struct volset {
	struct volset_array *_Atomic cur;
};

int volset_init(struct volset *s);			/* 0 or -ENOMEM */
/* Destroys every volume too.  Only when no reader remains. */
void volset_release(struct volset *s);

/* Readers: call inside urcu_memb_read_lock(); result valid until unlock. */
struct volset_array *volset_read(struct volset *s);
struct volume *volset_find_id(struct volset_array *a, int64_t id);
struct volume *volset_find_name(struct volset_array *a, const char *name);

/*
 * Writer (control thread).  Blocks for a grace period.  0 or -ENOMEM.
 * Unpublishes @v; once this returns no reader can find it.
 */
int volset_remove(struct volset *s, struct volume *v);
/*
 * Publishes, or unpublishes, @n volumes at once (@v in any order, none
 * published already / each published): one new array, one grace period,
 * so that a thin pool of many volumes starts and stops in O((N + n) log
 * n), not in n copies of the set and n grace periods.  0 or -ENOMEM
 * (nothing changed).
 */
int volset_add_many(struct volset *s, struct volume *const *v, size_t n);
int volset_remove_many(struct volset *s, struct volume *const *v, size_t n);

#endif
