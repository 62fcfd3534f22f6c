#include "journal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[OP_KINDS] = {
	[OP_CREATE_POOL] = "create-thin-pool",
	[OP_CREATE_LINEAR] = "create-linear",
	[OP_CREATE_SWITCH] = "create-switch",
	[OP_CREATE_THIN] = "create-thin",
	[OP_WRITE] = "write",
	[OP_WRITE_DSYNC] = "write-dsync",
	[OP_FSYNC] = "fsync",
	[OP_DISCARD] = "discard",
	[OP_SNAPSHOT] = "snapshot",
	[OP_REMOVE] = "remove",
	[OP_EXTEND] = "extend",
	[OP_SWITCH_MAP] = "switch-map",
	[OP_RESTART] = "restart",
	[OP_MOVE] = "move",
};

const char *op_kind_name(enum op_kind k)
{
	return k < OP_KINDS ? kind_names[k] : "?";
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

int journal_append(FILE *f, const struct op *op)
{
	fprintf(f, "%s %" PRIu64 " %" PRIu64 " %d %s %s %" PRIu64 " %" PRIu64 " %" PRIu64
		" %" PRIu64 " %" PRIu64 " %" PRIu64 " %s %s\n",
		kind_names[op->kind], op->q, op->a, op->rc, or_dash(op->name),
		or_dash(op->from), op->off, op->len, op->id, op->size, op->origin_size,
		op->region_size, or_dash(op->table), or_dash(op->dump));
	return fflush(f) ? -errno : 0;
}

static char *dup_or_null(const char *s)
{
	return strcmp(s, "-") ? strdup(s) : NULL;
}

static int parse(char *line, struct op *op)
{
	char kind[32], name[JOURNAL_NAME_MAX], from[JOURNAL_NAME_MAX];
	char *table = NULL, *dump = NULL;
	int n;

	memset(op, 0, sizeof(*op));
	n = sscanf(line, "%31s %" SCNu64 " %" SCNu64 " %d %31s %31s %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %ms %ms",
		   kind, &op->q, &op->a, &op->rc, name, from, &op->off, &op->len, &op->id,
		   &op->size, &op->origin_size, &op->region_size, &table, &dump);
	if (n != 14) {
		free(table);
		free(dump);
		return -EBADMSG;
	}
	for (op->kind = 0; op->kind < OP_KINDS; op->kind++)
		if (!strcmp(kind, kind_names[op->kind]))
			break;
	snprintf(op->name, sizeof(op->name), "%s", strcmp(name, "-") ? name : "");
	snprintf(op->from, sizeof(op->from), "%s", strcmp(from, "-") ? from : "");
	op->table = dup_or_null(table);
	op->dump = dup_or_null(dump);
	free(table);
	free(dump);
	return op->kind < OP_KINDS ? 0 : -EBADMSG;
}

int journal_load(const char *path, struct journal *out)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!f)
		return -errno;
	while (!r && getline(&line, &cap, f) > 0) {
		if (out->nr == out->cap) {
			size_t c = out->cap ? 2 * out->cap : 256;
			struct op *v = realloc(out->v, c * sizeof(*v));

			if (!v) {
				r = -ENOMEM;
				break;
			}
			out->v = v;
			out->cap = c;
		}
		r = parse(line, &out->v[out->nr]);
		if (!r)
			out->nr++;
	}
	free(line);
	fclose(f);
	if (r)
		journal_release(out);
	return r;
}

void journal_release(struct journal *j)
{
	for (size_t i = 0; i < j->nr; i++) {
		free(j->v[i].table);
		free(j->v[i].dump);
	}
	free(j->v);
	memset(j, 0, sizeof(*j));
}
