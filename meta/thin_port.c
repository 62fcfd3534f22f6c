#include "thin_port.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "thin_store.h"

struct thin_port {
	struct store *store;
	int64_t pool;
	char *db_path;
	pthread_mutex_t fault_lock;	/* guards fault_store */
	struct store *fault_store;	/* fault_leaf's, opened at its first call */
};

int thin_port_open(const char *db_path, int64_t pool, struct thin_port **out)
{
	struct thin_port *tp = calloc(1, sizeof(*tp));
	int r;

	if (!tp)
		return -ENOMEM;
	tp->db_path = strdup(db_path);
	r = tp->db_path ? store_open(db_path, 0, &tp->store) : -ENOMEM;
	if (r) {
		free(tp->db_path);
		free(tp);
		return r;
	}
	tp->pool = pool;
	pthread_mutex_init(&tp->fault_lock, NULL);
	*out = tp;
	return 0;
}

void thin_port_close(struct thin_port *tp)
{
	if (!tp)
		return;
	store_close(tp->store);
	if (tp->fault_store)
		store_close(tp->fault_store);
	pthread_mutex_destroy(&tp->fault_lock);
	free(tp->db_path);
	free(tp);
}

static int port_load_dir(void *arg, int64_t id, struct thin_dir_rec *out)
{
	struct thin_port *tp = arg;

	return store_thin_dir_get(tp->store, tp->pool, id, out);
}

static int port_load_leaf(void *arg, int64_t id, struct thin_leaf_rec *out)
{
	struct thin_port *tp = arg;

	return store_thin_leaf_get(tp->store, tp->pool, id, out);
}

static int port_fault_leaf(void *arg, int64_t id, struct thin_leaf_rec *out)
{
	struct thin_port *tp = arg;
	int r = 0;

	pthread_mutex_lock(&tp->fault_lock);
	if (!tp->fault_store)
		r = store_open(tp->db_path, 0, &tp->fault_store);
	if (!r)
		r = store_thin_leaf_get(tp->fault_store, tp->pool, id, out);
	pthread_mutex_unlock(&tp->fault_lock);
	return r;
}

static int port_max_page_id(void *arg, int64_t *out)
{
	struct thin_port *tp = arg;

	return store_thin_max_page(tp->store, tp->pool, out);
}

static int port_page_ids(void *arg, int64_t **dirs, size_t *nr_dirs,
			 int64_t **leaves, size_t *nr_leaves)
{
	struct thin_port *tp = arg;
	int r;

	r = store_thin_dir_ids(tp->store, tp->pool, dirs, nr_dirs);
	if (r)
		return r;
	r = store_thin_leaf_ids(tp->store, tp->pool, leaves, nr_leaves);
	if (r) {
		free(*dirs);
		*dirs = NULL;
	}
	return r;
}

static int port_count_pages(void *arg, uint64_t *dirs, uint64_t *leaves)
{
	struct thin_port *tp = arg;

	return store_thin_page_count(tp->store, tp->pool, dirs, leaves);
}

static int port_load_vols(void *arg, struct thin_vol_rec **out, size_t *nr)
{
	struct thin_port *tp = arg;

	return store_thin_vols_of(tp->store, tp->pool, out, nr);
}

/* Writes before deletes: an id both written and deleted is not live. */
static int apply(struct thin_port *tp, const struct thin_commit *c)
{
	struct store *s = tp->store;
	int r = 0;

	for (size_t i = 0; !r && i < c->nr_leaves; i++)
		r = store_thin_leaf_put(s, tp->pool, &c->leaves[i]);
	for (size_t i = 0; !r && i < c->nr_dirs; i++)
		r = c->dirs_changed && c->dirs_changed[i] ?
		    store_thin_dir_put_changed(s, tp->pool, &c->dirs[i], c->dirs_changed[i]) :
		    store_thin_dir_put(s, tp->pool, &c->dirs[i]);
	for (size_t i = 0; !r && i < c->nr_vols; i++)
		r = store_thin_set_dir(s, c->vols[i].volume, c->vols[i].dir);
	for (size_t i = 0; !r && i < c->nr_dir_mapped; i++)
		r = store_thin_dir_set_mapped(s, tp->pool, c->dir_mapped[i].id,
					      c->dir_mapped[i].mapped);
	for (size_t i = 0; !r && i < c->nr_dead_leaves; i++)
		r = store_thin_leaf_delete(s, tp->pool, c->dead_leaves[i]);
	for (size_t i = 0; !r && i < c->nr_dead_dirs; i++)
		r = store_thin_dir_delete(s, tp->pool, c->dead_dirs[i]);
	return r;
}

/*
 * The space map's chunks after the leaves (whose triggers marked it
 * stale): valid again if it was before, or if the commit holds all of it.
 */
static int apply_space(struct thin_port *tp, const struct thin_commit *c, bool was_valid)
{
	struct store *s = tp->store;
	bool valid = was_valid || c->space_whole;
	int r = 0;

	if (c->space_whole)
		r = store_thin_space_clear(s, tp->pool);
	for (size_t i = 0; !r && i < c->nr_space; i++)
		r = store_thin_space_put(s, tp->pool, &c->space[i]);
	if (!r)
		r = store_thin_space_set_valid(s, tp->pool, valid);
	if (!r)
		*c->space_stale = !valid;
	return r;
}

static int port_commit(void *arg, const struct thin_commit *c)
{
	struct thin_port *tp = arg;
	bool was_valid = false;
	int r;

	r = store_begin(tp->store);
	if (r)
		return r;
	if (c->space_stale)
		r = store_thin_space_valid(tp->store, tp->pool, &was_valid);
	if (!r)
		r = apply(tp, c);
	if (!r && c->space_stale)
		r = apply_space(tp, c, was_valid);
	if (!r)
		r = store_commit(tp->store);
	if (r)
		store_rollback(tp->store);
	return r;
}

static int port_load_space(void *arg, int (*each)(void *ctx, const struct thin_space_rec *rec),
			   void *ctx)
{
	struct thin_port *tp = arg;
	bool valid;
	int r = store_thin_space_valid(tp->store, tp->pool, &valid);

	if (r || !valid)
		return r;
	r = store_thin_space_each(tp->store, tp->pool, each, ctx);
	return r ? r : 1;
}

static int port_read_begin(void *arg)
{
	struct thin_port *tp = arg;

	return store_read_begin(tp->store);
}

static void port_read_end(void *arg)
{
	struct thin_port *tp = arg;

	store_read_end(tp->store);
}

const struct thin_meta_ops thin_port_ops = {
	.load_dir = port_load_dir,
	.load_leaf = port_load_leaf,
	.fault_leaf = port_fault_leaf,
	.max_page_id = port_max_page_id,
	.page_ids = port_page_ids,
	.count_pages = port_count_pages,
	.load_vols = port_load_vols,
	.load_space = port_load_space,
	.commit = port_commit,
	.read_begin = port_read_begin,
	.read_end = port_read_end,
};
