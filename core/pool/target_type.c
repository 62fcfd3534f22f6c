/*
 * core/pool/target_type.c: the registry of target types.
 *
 * Each kind defines its table in its own file (pool_linear.c,
 * pool_stripe.c, pool_switch.c, pool_thin.c) with only the hooks it has;
 * a kind that refines another of the same stored name (striped, of
 * linear) claims its volumes when they load.  Registering
 * fills the missing hooks with defaults, once, before the first pool
 * opens, so the service calls every hook without looking first.
 */
#include "target_type.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "pool_int.h"
#include "volume.h"

static int no_attach(struct pool_volume *v, const struct pool_meta_image *img)
{
	(void)v, (void)img;
	return 0;
}

static int no_build_over(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			 size_t n, struct target **out, struct pool_error *err)
{
	(void)p, (void)e, (void)n, (void)out;
	return pool_fail(err, -EOPNOTSUPP, "%s '%s' cannot be built over other extents",
			 v->type->noun, v->rec.name);
}

static int nothing_to_record(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			     size_t n)
{
	(void)p, (void)v, (void)e, (void)n;
	return 0;
}

static void nothing_to_publish(struct pool *p, struct pool_volume *v, const struct extent_rec *e,
			       size_t n)
{
	(void)p, (void)v, (void)e, (void)n;
}

static int no_extend(struct pool *p, struct pool_volume *v, uint64_t size,
		     char *const *on, size_t nr_on, struct pool_error *err)
{
	(void)p, (void)size, (void)on, (void)nr_on;
	return pool_fail(err, -EOPNOTSUPP, "cannot extend %s volume '%s'", v->type->words,
			 v->rec.name);
}

static int no_reduce(struct pool *p, struct pool_volume *v, uint64_t size,
		     struct pool_error *err)
{
	(void)p, (void)size;
	return pool_fail(err, -EOPNOTSUPP, "cannot shrink %s '%s': not supported for a %s",
			 v->type->noun, v->rec.name, v->type->words);
}

static int no_check(struct pool *p, struct pool_volume *v, struct pool_check *c,
		    struct pool_error *err)
{
	(void)p, (void)v, (void)c, (void)err;
	return 0;
}

static bool never_failing(struct pool_volume *v, char *why, size_t len)
{
	(void)v, (void)why, (void)len;
	return false;
}

static int no_recover(struct pool *p, struct pool_volume *v)
{
	(void)p, (void)v;
	return -EAGAIN;
}

static void no_placed(struct pool *p, struct pool_volume *v,
		      void (*fn)(void *arg, const struct extent_rec *range), void *arg)
{
	(void)p, (void)v, (void)fn, (void)arg;
}

static struct pool_volume *no_needs(struct pool *p, struct pool_volume *v)
{
	(void)p, (void)v;
	return NULL;
}

static const char *no_image(struct pool_volume *v)
{
	(void)v;
	return NULL;
}

static void no_status(struct pool *p, struct pool_volume *v, struct json *j)
{
	(void)p, (void)v, (void)j;
}

static void no_info(struct pool *p, struct pool_volume *v, struct pool_volume_info *out)
{
	(void)p;
	(void)v;
	(void)out;
}

static void no_release(struct pool *p, struct pool_volume *v)
{
	(void)p, (void)v;
}

static void no_watch(struct pool *p, struct pool_volume *v)
{
	(void)p, (void)v;
}

static struct target *served_target(const struct pool_volume *v)
{
	return v->served ? v->served->target : NULL;
}

static struct target *reload_served(struct pool_volume *v, struct target *t)
{
	return volume_reload(v->served, t);
}

static uint64_t any_grain(const struct pool_volume *v)
{
	(void)v;
	return 1;
}

static struct target_type *const registry[] = {
	&thin_pool_type, &striped_type, &linear_type, &switch_type, &thin_type,
};

#define NR_TYPES	(sizeof(registry) / sizeof(registry[0]))

static pthread_once_t registered = PTHREAD_ONCE_INIT;

static void register_types(void)
{
	for (size_t i = 0; i < NR_TYPES; i++) {
		struct target_type *t = registry[i];

		if (!t->noun) {
			t->noun = "volume";
			t->nouns = "volumes";
		}
		if (!t->words)
			t->words = t->name;
		if (!t->attach)
			t->attach = no_attach;
		t->movable = t->build_over != NULL;
		if (!t->build_over)
			t->build_over = no_build_over;
		if (!t->record_moved)
			t->record_moved = nothing_to_record;
		if (!t->publish_moved)
			t->publish_moved = nothing_to_publish;
		if (!t->extend)
			t->extend = no_extend;
		if (!t->reduce)
			t->reduce = no_reduce;
		if (!t->remove)
			t->remove = pool_remove_records;
		if (!t->check)
			t->check = no_check;
		if (!t->failing)
			t->failing = never_failing;
		if (!t->recover)
			t->recover = no_recover;
		if (!t->placed)
			t->placed = no_placed;
		if (!t->needs)
			t->needs = no_needs;
		if (!t->image)
			t->image = no_image;
		if (!t->status)
			t->status = no_status;
		if (!t->info)
			t->info = no_info;
		if (!t->watch)
			t->watch = no_watch;
		if (!t->release)
			t->release = no_release;
		if (!t->runs_on)
			t->runs_on = served_target;
		if (!t->reload)
			t->reload = reload_served;
		if (!t->grain)
			t->grain = any_grain;
	}
}

void target_types_register(void)
{
	pthread_once(&registered, register_types);
}

const struct target_type *target_type_find(const char *name)
{
	target_types_register();
	for (size_t i = 0; i < NR_TYPES; i++)
		if (!registry[i]->claims && !strcmp(registry[i]->name, name))
			return registry[i];
	return NULL;
}

const struct target_type *target_type_load(const struct volume_rec *rec,
					   const struct pool_meta_image *img)
{
	target_types_register();
	for (size_t i = 0; i < NR_TYPES; i++)
		if (registry[i]->claims && !strcmp(registry[i]->name, rec->kind) &&
		    registry[i]->claims(rec, img))
			return registry[i];
	return target_type_find(rec->kind);
}
