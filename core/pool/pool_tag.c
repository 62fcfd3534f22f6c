/*
 * core/pool/pool_tag.c: the tags of volumes, thin pools and devices
 * (LVM's --addtag and --deltag), in the pool service.
 *
 * Tags are records like any other: loaded with the pool, held in memory
 * on their owner (struct tags), changed in the service's usual shape.  The
 * new set is built first, the change recorded in one transaction, and
 * only then does the owner take the new set, so that nothing can fail
 * once the store has it.  A tag changes no byte and no file: no I/O stops,
 * nothing is stale.
 */
#include "pool_int.h"

#include <errno.h>
#include <string.h>

#include "log.h"

/* What one change records: tags @add and @del on owner @on / @owner. */
struct tag_change {
	enum tag_owner on;
	int64_t owner;
	char *const *add, *const *del;
	size_t nr_add, nr_del;
};

static int record_one(struct pool *p, const struct tag_change *c, const char *tag,
		      int (*op)(struct pool_meta *m, const struct tag_rec *t))
{
	struct tag_rec t = { .on = c->on, .owner = c->owner };

	snprintf(t.tag, sizeof(t.tag), "%s", tag);
	return op(p->meta, &t);
}

static int record_tags(struct pool *p, void *arg)
{
	const struct tag_change *c = arg;
	int r = 0;

	for (size_t i = 0; !r && i < c->nr_del; i++)
		r = record_one(p, c, c->del[i], p->meta->ops->tag_delete);
	for (size_t i = 0; !r && i < c->nr_add; i++)
		r = record_one(p, c, c->add[i], p->meta->ops->tag_add);
	return r;
}

static int check_tags(char *const *tags, size_t nr, struct pool_error *err)
{
	for (size_t i = 0; i < nr; i++)
		if (!tag_valid(tags[i]))
			return pool_fail(err, -EINVAL, "invalid tag '%s': %s", tags[i], TAG_RULES);
	return 0;
}

/* The owner's tags as they will be: @cur, less @c->del, plus @c->add. */
static int tags_changed(const struct tags *cur, const struct tag_change *c, struct tags *out)
{
	if (tags_copy(out, cur))
		return -ENOMEM;
	for (size_t i = 0; i < c->nr_del; i++)
		tags_remove(out, c->del[i]);
	for (size_t i = 0; i < c->nr_add; i++) {
		if (tags_add(out, c->add[i])) {
			tags_release(out);
			return -ENOMEM;
		}
	}
	return 0;
}

int pool_tag(struct pool *p, enum tag_owner on, const char *name,
	     char *const *add, size_t nr_add, char *const *del, size_t nr_del,
	     struct pool_error *err)
{
	struct tag_change c = { .on = on, .add = add, .nr_add = nr_add, .del = del,
				.nr_del = nr_del };
	struct tags next = TAGS_INIT, *cur;
	struct pool_device *d = NULL;
	struct pool_volume *v = NULL;
	int r;

	r = check_tags(add, nr_add, err);
	if (!r)
		r = check_tags(del, nr_del, err);
	if (r)
		return r;
	pool_admin_lock(p);
	if (on == TAG_ON_DEVICE) {
		d = pool_device_by_name(p, name);
		if (!d)
			r = pool_fail(err, -ENOENT, "no device '%s'", name);
	} else {
		r = pool_volume_get(p, name, NULL, true, &v, err);
	}
	if (r)
		goto out;
	cur = d ? &d->tags : &v->tags;
	c.owner = d ? d->rec.id : v->rec.id;
	if (tags_changed(cur, &c, &next)) {
		r = pool_fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	r = pool_record(p, "record the tags", record_tags, &c, err);
	if (r) {
		tags_release(&next);
		goto out;
	}
	tags_release(cur);
	*cur = next;
	log_info("%s '%s': tags changed (%zu added, %zu removed)",
		 d ? "device" : v->type->words, name, nr_add, nr_del);
out:
	pool_admin_unlock(p);
	return r;
}

int pool_tags_attach(struct pool *p, const struct pool_meta_image *img,
		     struct pool_error *err)
{
	for (size_t i = 0; i < img->nr_tags; i++) {
		const struct tag_rec *t = &img->tags[i];
		struct pool_device *d = NULL;
		struct pool_volume *v = NULL;

		if (t->on == TAG_ON_DEVICE)
			d = pool_device_by_id(p, t->owner);
		else
			v = pool_volume_by_id(p, t->owner);
		if (!d && !v)
			continue;	/* the foreign key makes this one impossible */
		if (tags_add(d ? &d->tags : &v->tags, t->tag))
			return pool_fail(err, -ENOMEM, "out of memory");
	}
	return 0;
}
