#include "model.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sector.h"

#define NEVER		UINT64_MAX
#define MAX_HISTORY	4096		/* versions of one sector, at most */

struct version {
	uint32_t op;			/* journal index of the write or discard */
	int32_t next;			/* the older version, or -1 */
};

struct mvol {
	char name[JOURNAL_NAME_MAX];
	enum vol_kind_m kind;
	int create;			/* journal index of its create or snapshot */
	int parent;			/* a snapshot's origin volume, or -1 */
	uint64_t origin_size;		/* thin: bytes of its external origin */
	uint64_t region_size;		/* switch: bytes */
	uint64_t nr_sectors;		/* the largest it was, in sectors */
	int32_t *head[2];		/* per sector: newest version; [1]: switch path 1 */
	struct image_vol img;
	const char *table;		/* switch: the table the image holds, or NULL */
};

struct model {
	const struct journal *j;
	uint64_t pos;
	struct mvol *v;
	int nr;
	uint64_t *ack;			/* per op: when a write or discard is acknowledged */
	int *op_of_id;			/* write id -> journal index */
	uint64_t nr_ids;
	struct version *vers;
	size_t nr_vers, cap_vers;
};

/* Writes and discards: what puts versions into sectors. */
static bool is_data(const struct op *op)
{
	return op->kind == OP_WRITE || op->kind == OP_WRITE_DSYNC || op->kind == OP_DISCARD;
}

static int find(const struct model *m, const char *name)
{
	for (int i = 0; i < m->nr; i++)
		if (!strcmp(m->v[i].name, name))
			return i;
	return -1;
}

static enum vol_kind_m kind_of(enum op_kind k)
{
	switch (k) {
	case OP_CREATE_POOL: return M_POOL;
	case OP_CREATE_LINEAR: return M_LINEAR;
	case OP_CREATE_SWITCH: return M_SWITCH;
	default: return M_THIN;
	}
}

static bool is_creation(enum op_kind k)
{
	return k == OP_CREATE_POOL || k == OP_CREATE_LINEAR || k == OP_CREATE_SWITCH ||
	       k == OP_CREATE_THIN || k == OP_SNAPSHOT;
}

static int add_vols(struct model *m)
{
	const struct journal *j = m->j;

	m->v = calloc(j->nr + 1, sizeof(*m->v));
	if (!m->v)
		return -ENOMEM;
	for (size_t i = 0; i < j->nr; i++) {
		const struct op *op = &j->v[i];
		struct mvol *v;
		int from;

		if (is_creation(op->kind) && find(m, op->name) < 0) {
			v = &m->v[m->nr++];
			snprintf(v->name, sizeof(v->name), "%s", op->name);
			v->kind = kind_of(op->kind);
			v->create = (int)i;
			v->parent = -1;
			v->origin_size = op->origin_size;
			v->region_size = op->region_size;
			if (op->kind == OP_SNAPSHOT && (from = find(m, op->from)) >= 0) {
				v->parent = from;
				v->origin_size = m->v[from].origin_size;
			}
		}
		from = find(m, op->name);
		if (from >= 0 && op->size / SECTOR > m->v[from].nr_sectors)
			m->v[from].nr_sectors = op->size / SECTOR;
	}
	for (int i = 0; i < m->nr; i++) {
		struct mvol *v = &m->v[i];

		for (int p = 0; p < (v->kind == M_SWITCH ? 2 : 1); p++) {
			v->head[p] = malloc((v->nr_sectors ? v->nr_sectors : 1) * sizeof(int32_t));
			if (!v->head[p])
				return -ENOMEM;
			memset(v->head[p], 0xff, v->nr_sectors * sizeof(int32_t));
		}
	}
	return 0;
}

/* When snapshot @op acknowledges its origin's data (model.h), or NEVER. */
static uint64_t snapshot_ack(const struct model *m, const struct op *op)
{
	int s = find(m, op->name);

	if (!op->rc && op->a <= m->pos)
		return op->a;
	return s >= 0 && m->v[s].img.present ? m->pos : NEVER;
}

/*
 * When each write or discard is acknowledged: the first later fsync of its
 * volume (only the lane that writes a volume fsyncs it, so the journal's
 * order is the right one), or a snapshot of it issued after it returned.
 */
static int compute_acks(struct model *m)
{
	const struct journal *j = m->j;
	uint64_t *acked = malloc((size_t)(m->nr + 1) * sizeof(*acked));

	m->ack = malloc((j->nr + 1) * sizeof(*m->ack));
	if (!acked || !m->ack) {
		free(acked);
		return -ENOMEM;
	}
	for (int i = 0; i < m->nr; i++)
		acked[i] = NEVER;
	for (size_t i = j->nr; i-- > 0;) {
		const struct op *op = &j->v[i];
		int v = find(m, op->name);

		m->ack[i] = NEVER;
		if (v < 0)
			continue;
		if (op->kind == OP_FSYNC && !op->rc && op->a < acked[v])
			acked[v] = op->a;
		else if (is_data(op) && !op->rc)
			m->ack[i] = acked[v];
		if (op->kind == OP_WRITE_DSYNC && !op->rc && op->a < m->ack[i])
			m->ack[i] = op->a;	/* durable at its own return */
	}
	for (size_t i = 0; i < j->nr; i++) {
		const struct op *snap = &j->v[i];
		uint64_t at;

		if (snap->kind != OP_SNAPSHOT || (at = snapshot_ack(m, snap)) == NEVER)
			continue;
		for (size_t w = 0; w < j->nr; w++) {
			const struct op *op = &j->v[w];

			if (is_data(op) && !op->rc &&
			    !strcmp(op->name, snap->from) && op->a <= snap->q && at < m->ack[w])
				m->ack[w] = at;
		}
	}
	free(acked);
	return 0;
}

static int push_version(struct model *m, int32_t *head, uint32_t op)
{
	if (m->nr_vers == m->cap_vers) {
		size_t cap = m->cap_vers ? 2 * m->cap_vers : 4096;
		struct version *n = realloc(m->vers, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		m->vers = n;
		m->cap_vers = cap;
	}
	m->vers[m->nr_vers] = (struct version){ op, *head };
	*head = (int32_t)m->nr_vers++;
	return 0;
}

/* Every write and discard issued by the cut, into its sectors' histories. */
static int add_versions(struct model *m)
{
	const struct journal *j = m->j;
	const char *table = NULL;
	int r = 0;

	for (size_t i = 0; i < j->nr && !r; i++) {
		const struct op *op = &j->v[i];
		struct mvol *v;
		int vi = find(m, op->name);

		if (op->q > m->pos)
			continue;	/* lanes interleave: q is not monotonic */
		if (op->kind == OP_CREATE_SWITCH || op->kind == OP_SWITCH_MAP)
			table = op->table;
		if (!is_data(op) || vi < 0)
			continue;
		v = &m->v[vi];
		for (uint64_t s = op->off / SECTOR; s < (op->off + op->len) / SECTOR && !r; s++) {
			int path = 0;

			if (s >= v->nr_sectors)
				break;
			if (v->kind == M_SWITCH && table)
				path = table[s * SECTOR / v->region_size] == '1';
			r = push_version(m, &v->head[path][s], (uint32_t)i);
		}
	}
	return r;
}

static int index_ids(struct model *m)
{
	const struct journal *j = m->j;

	for (size_t i = 0; i < j->nr; i++)
		if (is_data(&j->v[i]) && j->v[i].id >= m->nr_ids)
			m->nr_ids = j->v[i].id + 1;
	m->op_of_id = malloc((m->nr_ids + 1) * sizeof(int));
	if (!m->op_of_id)
		return -ENOMEM;
	memset(m->op_of_id, 0xff, (m->nr_ids + 1) * sizeof(int));
	for (size_t i = 0; i < j->nr; i++)
		if (is_data(&j->v[i]) && j->v[i].kind != OP_DISCARD)
			m->op_of_id[j->v[i].id] = (int)i;
	return 0;
}

int model_build(const struct journal *j, uint64_t pos,
		void (*image)(void *arg, const char *name, struct image_vol *out),
		void *arg, struct model **out)
{
	struct model *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	m->j = j;
	m->pos = pos;
	r = add_vols(m);
	for (int i = 0; !r && i < m->nr; i++)
		image(arg, m->v[i].name, &m->v[i].img);
	if (!r)
		r = compute_acks(m);
	if (!r)
		r = add_versions(m);
	if (!r)
		r = index_ids(m);
	if (r) {
		model_free(m);
		return r;
	}
	*out = m;
	return 0;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nr; i++) {
		free(m->v[i].head[0]);
		free(m->v[i].head[1]);
	}
	free(m->v);
	free(m->ack);
	free(m->op_of_id);
	free(m->vers);
	free(m);
}

int model_nr_vols(const struct model *m)
{
	return m->nr;
}

const char *model_vol_name(const struct model *m, int v)
{
	return m->v[v].name;
}

enum vol_kind_m model_vol_kind(const struct model *m, int v)
{
	return m->v[v].kind;
}

static const char *kind_name(enum vol_kind_m k)
{
	static const char *const names[] = { "thin-pool", "linear", "switch", "thin" };

	return names[k];
}

static bool acked_by(const struct op *op, uint64_t pos)
{
	return !op->rc && op->a <= pos;
}

static void say(void (*report)(void *, const char *), void *arg, int *n,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void say(void (*report)(void *, const char *), void *arg, int *n,
		const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report(arg, msg);
	(*n)++;
}

/*
 * The states volume @v may be in: the ops that set its size (or its
 * table) are its creation and successful extends (switch-maps); the last
 * acknowledged one and any later one issued by the cut are allowed.
 * Calls @fn for each allowed op until it returns true; returns that.
 */
static bool any_allowed(const struct model *m, const struct mvol *v, enum op_kind change,
			bool (*fn)(const struct op *op, const struct image_vol *img),
			const struct image_vol *img)
{
	const struct journal *j = m->j;
	size_t first = (size_t)v->create;

	for (size_t i = (size_t)v->create + 1; i < j->nr; i++) {
		const struct op *op = &j->v[i];

		if (op->kind == change && !op->rc && !strcmp(op->name, v->name) &&
		    acked_by(op, m->pos))
			first = i;
	}
	for (size_t i = first; i < j->nr; i++) {
		const struct op *op = &j->v[i];

		if (op->q > m->pos)
			continue;
		if ((i == (size_t)v->create ||
		     (op->kind == change && !op->rc && !strcmp(op->name, v->name))) &&
		    fn(op, img))
			return true;
	}
	return false;
}

static bool size_matches(const struct op *op, const struct image_vol *img)
{
	return op->size == img->size;
}

static bool table_matches(const struct op *op, const struct image_vol *img)
{
	return op->dump && img->dump && !strcmp(op->dump, img->dump);
}

static const char *matching_table(const struct model *m, const struct mvol *v)
{
	const struct journal *j = m->j;

	for (size_t i = j->nr; i-- > (size_t)v->create;) {
		const struct op *op = &j->v[i];

		if ((i == (size_t)v->create || (op->kind == OP_SWITCH_MAP && !op->rc)) &&
		    op->q <= m->pos && table_matches(op, &v->img))
			return op->table;
	}
	return NULL;
}

int model_check_admin(struct model *m, int vi,
		      void (*report)(void *arg, const char *msg), void *arg,
		      bool *check_data)
{
	struct mvol *v = &m->v[vi];
	const struct op *c = &m->j->v[v->create];
	bool must = false, must_not = c->q > m->pos || (c->rc && c->a <= m->pos);
	int n = 0;

	*check_data = false;
	if (acked_by(c, m->pos))
		must = true;
	for (size_t i = (size_t)v->create + 1; i < m->j->nr; i++) {
		const struct op *op = &m->j->v[i];

		if (op->kind != OP_REMOVE || op->rc || strcmp(op->name, v->name) || op->q > m->pos)
			continue;
		must = false;
		must_not |= op->a <= m->pos;
	}
	if (!v->img.present) {
		if (must)
			say(report, arg, &n, "%s: acknowledged (%s at %" PRIu64 ") but missing",
			    v->name, op_kind_name(c->kind), c->a);
		return n;
	}
	if (must_not) {
		say(report, arg, &n, "%s: present, but %s", v->name,
		    c->q > m->pos ? "its creation was issued after the cut" :
		    c->rc ? "its creation failed" : "its removal was acknowledged");
		return n;
	}
	if (strcmp(v->img.kind, kind_name(v->kind))) {
		say(report, arg, &n, "%s: kind %s, expected %s", v->name, v->img.kind,
		    kind_name(v->kind));
		return n;
	}
	if (!any_allowed(m, v, OP_EXTEND, size_matches, &v->img))
		say(report, arg, &n, "%s: size %" PRIu64 " is none it may have", v->name,
		    v->img.size);
	if (v->kind == M_SWITCH) {
		v->table = matching_table(m, v);
		if (!v->table || !any_allowed(m, v, OP_SWITCH_MAP, table_matches, &v->img)) {
			say(report, arg, &n, "%s: region table '%s' is none it may have", v->name,
			    v->img.dump ? v->img.dump : "?");
			return n;
		}
	}
	*check_data = !n && v->kind != M_POOL;
	return n;
}

/* A version in a sector's history, as one volume sees it. */
struct entry {
	uint32_t op;			/* the write or discard */
	bool optional;			/* made while a snapshot on the way was: may be missing */
};

/*
 * The versions of sector @s of @v, oldest first, after its initial
 * content.  A snapshot's history starts with its origin's versions issued
 * before the snapshot returned; those that had not returned when it was
 * issued (the side lane writes on during a snapshot) may or may not be in
 * it.  @fork: the snapshot through which the caller sees @v, or NULL.
 */
static size_t history(const struct model *m, const struct mvol *v, uint64_t s, int path,
		      const struct op *fork, struct entry *out, size_t at)
{
	uint32_t rev[MAX_HISTORY];
	size_t n = 0;

	if (v->parent >= 0)
		at = history(m, &m->v[v->parent], s, 0, &m->j->v[v->create], out, at);
	if (s >= v->nr_sectors)
		return at;
	for (int32_t h = v->head[path][s]; h >= 0 && n < MAX_HISTORY; h = m->vers[h].next)
		if (!fork || m->j->v[m->vers[h].op].q < fork->a)
			rev[n++] = m->vers[h].op;
	while (n && at < MAX_HISTORY) {
		uint32_t op = rev[--n];

		out[at++] = (struct entry){ op, fork && m->j->v[op].a > fork->q };
	}
	return at;
}

static bool matches(const struct model *m, int op, bool origin, uint64_t s,
		    enum sector_kind kind, uint64_t id, uint64_t off)
{
	const struct op *o;

	if (op < 0)
		return origin ? kind == SECTOR_TAGGED && id == SECTOR_ORIGIN_ID &&
					off == s * SECTOR
			      : kind == SECTOR_ZEROS;
	o = &m->j->v[op];
	if (o->kind == OP_DISCARD)
		return kind == SECTOR_ZEROS;
	return kind == SECTOR_TAGGED && id == o->id && off == s * SECTOR;
}

static void describe(const struct model *m, enum sector_kind kind, uint64_t id,
		     uint64_t off, char *why, size_t len)
{
	int op = id < m->nr_ids ? m->op_of_id[id] : -1;

	if (kind == SECTOR_ZEROS)
		snprintf(why, len, "zeros");
	else if (kind == SECTOR_GARBAGE)
		snprintf(why, len, "garbage");
	else if (id == SECTOR_ORIGIN_ID)
		snprintf(why, len, "the origin's sector for offset %" PRIu64, off);
	else if (op >= 0)
		snprintf(why, len, "write %" PRIu64 " (journal line %d, to %s at %" PRIu64
			 ", issued at %" PRIu64 ") for offset %" PRIu64, id, op + 1,
			 m->j->v[op].name, m->j->v[op].off, m->j->v[op].q, off);
	else
		snprintf(why, len, "an unknown write %" PRIu64, id);
}

enum verdict model_check_sector(const struct model *m, int vi, uint64_t s,
				const void *data, int *lost_op, char *why, size_t why_len)
{
	const struct mvol *v = &m->v[vi];
	struct entry versions[MAX_HISTORY];
	uint64_t id = 0, off = 0;
	enum sector_kind kind = sector_parse(data, &id, &off);
	bool origin = v->origin_size > s * SECTOR;
	int path = 0;
	size_t n, k = 0;

	if (v->kind == M_SWITCH)
		path = v->table[s * SECTOR / v->region_size] == '1';
	n = history(m, v, s, path, NULL, versions, 0);
	/* versions[i] is version i + 1; version 0 is the initial content. */
	for (size_t i = 0; i < n; i++)
		if (!versions[i].optional && m->ack[versions[i].op] <= m->pos)
			k = i + 1;
	for (size_t i = k; i <= n; i++)
		if (matches(m, i ? (int)versions[i - 1].op : -1, origin, s, kind, id, off))
			return SECTOR_OK;
	describe(m, kind, id, off, why, why_len);
	for (size_t i = 0; i < k; i++) {
		if (matches(m, i ? (int)versions[i - 1].op : -1, origin, s, kind, id, off)) {
			*lost_op = (int)versions[k - 1].op;
			return SECTOR_LOST;
		}
	}
	return SECTOR_WRONG;
}
