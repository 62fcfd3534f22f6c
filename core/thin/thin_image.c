/*
 * core/thin/thin_image.c: thin_dump's XML (and the same tree as JSON) written
 * and read.  Reading uses expat, a streaming parser: a dump of millions of
 * mappings is never held as a document, only as runs.
 */
#include "thin_image.h"

#include <errno.h>
#include <expat.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "thin_meta.h"

#define MAX_VIRTUAL_BLOCKS	((uint64_t)THIN_DIR_SLOTS_MAX * THIN_LEAF_ENTRIES)

void thin_image_release(struct thin_image *img)
{
	for (size_t i = 0; i < img->nr_devs; i++)
		free(img->devs[i].runs);
	free(img->devs);
	free(img->by_id);
	free(img->by_data);
	memset(img, 0, sizeof(*img));
}

struct thin_image_dev *thin_image_add_dev(struct thin_image *img, uint64_t dev_id)
{
	struct thin_image_dev *d;

	if (img->nr_devs == img->cap_devs) {
		size_t cap = img->cap_devs ? 2 * img->cap_devs : 16;

		d = realloc(img->devs, cap * sizeof(*d));
		if (!d)
			return NULL;
		img->devs = d;
		img->cap_devs = cap;
	}
	d = &img->devs[img->nr_devs++];
	memset(d, 0, sizeof(*d));
	d->dev_id = dev_id;
	return d;
}

int thin_image_add_run(struct thin_image_dev *d, uint64_t origin, uint64_t data,
		       uint64_t len)
{
	struct thin_image_run *last = d->nr_runs ? &d->runs[d->nr_runs - 1] : NULL;

	if (last && last->origin + last->len == origin && last->data + last->len == data) {
		last->len += len;
		return 0;
	}
	if (d->nr_runs == d->cap_runs) {
		size_t cap = d->cap_runs ? 2 * d->cap_runs : 4;	/* most devices of a big dump map little */
		struct thin_image_run *v = realloc(d->runs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->runs = v;
		d->cap_runs = cap;
	}
	d->runs[d->nr_runs++] = (struct thin_image_run){ origin, data, len };
	return 0;
}

/* ---- writing ------------------------------------------------------------------ */

struct thin_image_writer {
	FILE *f;
	enum thin_image_format format;
	struct json j;
};

/* Names are checked names (names.h): nothing in them needs escaping. */
int thin_image_writer_open(FILE *f, enum thin_image_format format,
			   const struct thin_image *sb, struct thin_image_writer **out)
{
	struct thin_image_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->f = f;
	w->format = format;
	if (format == THIN_IMAGE_XML) {
		fprintf(f, "<superblock uuid=\"\" time=\"%" PRIu64 "\" transaction=\"%" PRIu64
			"\" flags=\"0\" version=\"2\" data_block_size=\"%u\" nr_data_blocks=\"%"
			PRIu64 "\">\n", sb->time, sb->transaction, sb->block_size / 512,
			sb->nr_blocks);
	} else {
		json_init(&w->j, f, JSON_COMPACT);
		json_object_begin(&w->j, NULL);
		json_object_begin(&w->j, "superblock");
		json_u64(&w->j, "time", sb->time);
		json_u64(&w->j, "transaction", sb->transaction);
		json_u64(&w->j, "data_block_size", sb->block_size / 512);
		json_u64(&w->j, "nr_data_blocks", sb->nr_blocks);
		json_object_end(&w->j);
		json_array_begin(&w->j, "devices");
	}
	*out = w;
	return 0;
}

void thin_image_write_dev(struct thin_image_writer *w, const struct thin_image_dev *d)
{
	if (w->format == THIN_IMAGE_XML) {
		fprintf(w->f, "  <device dev_id=\"%" PRIu64 "\" mapped_blocks=\"%" PRIu64
			"\" transaction=\"%" PRIu64 "\" creation_time=\"%u\" snap_time=\"%u\"",
			d->dev_id, d->mapped_blocks, d->transaction, d->creation_time,
			d->snap_time);
		if (d->name[0])
			fprintf(w->f, " name=\"%s\" size=\"%" PRIu64 "\"", d->name, d->size);
		if (d->is_snapshot)
			fprintf(w->f, " snapshot_of=\"%" PRIu64 "\"", d->snapshot_of);
		fputs(">\n", w->f);
		return;
	}
	json_object_begin(&w->j, NULL);
	json_u64(&w->j, "dev_id", d->dev_id);
	if (d->name[0]) {
		json_string(&w->j, "name", d->name);
		json_u64(&w->j, "size", d->size);
	}
	if (d->is_snapshot)
		json_u64(&w->j, "snapshot_of", d->snapshot_of);
	json_u64(&w->j, "mapped_blocks", d->mapped_blocks);
	json_u64(&w->j, "transaction", d->transaction);
	json_u64(&w->j, "creation_time", d->creation_time);
	json_u64(&w->j, "snap_time", d->snap_time);
	json_array_begin(&w->j, "mappings");	/* [origin_begin, data_begin, length] */
}

void thin_image_write_run(struct thin_image_writer *w, const struct thin_image_run *r)
{
	if (w->format == THIN_IMAGE_JSON) {
		json_array_begin(&w->j, NULL);
		json_u64(&w->j, NULL, r->origin);
		json_u64(&w->j, NULL, r->data);
		json_u64(&w->j, NULL, r->len);
		json_array_end(&w->j);
	} else if (r->len == 1) {
		fprintf(w->f, "    <single_mapping origin_block=\"%" PRIu64 "\" data_block=\"%"
			PRIu64 "\" time=\"0\"/>\n", r->origin, r->data);
	} else {
		fprintf(w->f, "    <range_mapping origin_begin=\"%" PRIu64 "\" data_begin=\"%"
			PRIu64 "\" length=\"%" PRIu64 "\" time=\"0\"/>\n", r->origin, r->data,
			r->len);
	}
}

void thin_image_write_dev_end(struct thin_image_writer *w)
{
	if (w->format == THIN_IMAGE_XML) {
		fputs("  </device>\n", w->f);
		return;
	}
	json_array_end(&w->j);
	json_object_end(&w->j);
}

void thin_image_writer_close(struct thin_image_writer *w)
{
	if (w->format == THIN_IMAGE_XML) {
		fputs("</superblock>\n", w->f);
	} else {
		json_array_end(&w->j);
		json_object_end(&w->j);
		fputc('\n', w->f);
	}
	free(w);
}

/* ---- reading ------------------------------------------------------------------ */

struct reader {
	XML_Parser x;
	struct thin_image *img;
	struct thin_image_dev *dev;	/* the <device> open, or NULL */
	bool superblock;		/* seen */
	int r;				/* first error */
	char *why;
	size_t why_len;
};

static void reader_fail(struct reader *rd, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Keeps the first error, with its line, and stops the parser. */
static void reader_fail(struct reader *rd, int r, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (rd->r)
		return;
	rd->r = r;
	snprintf(rd->why, rd->why_len, "line %lu: ", (unsigned long)XML_GetCurrentLineNumber(rd->x));
	n = strlen(rd->why);
	va_start(ap, fmt);
	vsnprintf(rd->why + n, rd->why_len - n, fmt, ap);
	va_end(ap);
	XML_StopParser(rd->x, XML_FALSE);
}

static const char *attr(const char **atts, const char *name)
{
	for (size_t i = 0; atts[i]; i += 2)
		if (!strcmp(atts[i], name))
			return atts[i + 1];
	return NULL;
}

/* Attribute @name of element @el as a number; false after failing @rd. */
static bool number(struct reader *rd, const char *el, const char **atts,
		   const char *name, bool required, uint64_t *out)
{
	const char *v = attr(atts, name);
	char *end;

	*out = 0;
	if (!v) {
		if (required)
			reader_fail(rd, -EINVAL, "<%s> has no %s", el, name);
		return !required;
	}
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end || errno) {
		reader_fail(rd, -EINVAL, "<%s>: %s is not a number", el, name);
		return false;
	}
	return true;
}

static void on_superblock(struct reader *rd, const char **atts)
{
	uint64_t sectors;

	if (rd->superblock) {
		reader_fail(rd, -EINVAL, "a second <superblock>");
		return;
	}
	rd->superblock = true;
	if (!number(rd, "superblock", atts, "data_block_size", true, &sectors) ||
	    !number(rd, "superblock", atts, "nr_data_blocks", true, &rd->img->nr_blocks) ||
	    !number(rd, "superblock", atts, "time", false, &rd->img->time) ||
	    !number(rd, "superblock", atts, "transaction", false, &rd->img->transaction))
		return;
	if (!sectors || sectors > UINT32_MAX / 512) {
		reader_fail(rd, -EINVAL, "<superblock>: data_block_size is out of range");
		return;
	}
	rd->img->block_size = (uint32_t)sectors * 512;
}

static void on_device(struct reader *rd, const char **atts)
{
	uint64_t id, t;
	const char *name = attr(atts, "name");

	if (!rd->superblock || rd->dev) {
		reader_fail(rd, -EINVAL, "<device> outside <superblock>");
		return;
	}
	if (!number(rd, "device", atts, "dev_id", true, &id))
		return;
	rd->dev = thin_image_add_dev(rd->img, id);
	if (!rd->dev) {
		reader_fail(rd, -ENOMEM, "out of memory");
		return;
	}
	if (name && strlen(name) >= sizeof(rd->dev->name)) {
		reader_fail(rd, -EINVAL, "<device>: name '%s' is too long", name);
		return;
	}
	if (name)
		snprintf(rd->dev->name, sizeof(rd->dev->name), "%s", name);
	rd->dev->is_snapshot = attr(atts, "snapshot_of") != NULL;
	if (!number(rd, "device", atts, "snapshot_of", false, &rd->dev->snapshot_of) ||
	    !number(rd, "device", atts, "size", false, &rd->dev->size) ||
	    !number(rd, "device", atts, "mapped_blocks", false, &rd->dev->mapped_blocks) ||
	    !number(rd, "device", atts, "transaction", false, &rd->dev->transaction))
		return;
	if (number(rd, "device", atts, "creation_time", false, &t))
		rd->dev->creation_time = (uint32_t)t;
	if (number(rd, "device", atts, "snap_time", false, &t))
		rd->dev->snap_time = (uint32_t)t;
}

static void on_mapping(struct reader *rd, const char *el, const char **atts, bool range)
{
	uint64_t origin, data, len = 1;
	bool ok;

	if (!rd->dev) {
		reader_fail(rd, -EINVAL, "<%s> outside <device>", el);
		return;
	}
	if (range)
		ok = number(rd, el, atts, "origin_begin", true, &origin) &&
		     number(rd, el, atts, "data_begin", true, &data) &&
		     number(rd, el, atts, "length", true, &len);
	else
		ok = number(rd, el, atts, "origin_block", true, &origin) &&
		     number(rd, el, atts, "data_block", true, &data);
	if (!ok)
		return;
	if (!len || origin + len < origin || data + len < data) {
		reader_fail(rd, -EINVAL, "<%s>: the range is empty or wraps", el);
		return;
	}
	if (thin_image_add_run(rd->dev, origin, data, len))
		reader_fail(rd, -ENOMEM, "out of memory");
}

static void XMLCALL on_start(void *arg, const char *el, const char **atts)
{
	struct reader *rd = arg;

	if (!strcmp(el, "superblock"))
		on_superblock(rd, atts);
	else if (!strcmp(el, "device"))
		on_device(rd, atts);
	else if (!strcmp(el, "range_mapping"))
		on_mapping(rd, el, atts, true);
	else if (!strcmp(el, "single_mapping"))
		on_mapping(rd, el, atts, false);
	else if (strcmp(el, "def") && strcmp(el, "ref"))
		reader_fail(rd, -EINVAL, "unknown element <%s>", el);
	else
		reader_fail(rd, -EINVAL, "<%s>: shared subtrees (def/ref) are not supported",
			    el);
}

static void XMLCALL on_end(void *arg, const char *el)
{
	struct reader *rd = arg;

	if (!strcmp(el, "device"))
		rd->dev = NULL;
}

/* The first character that is not white space is "{": a JSON dump. */
static bool json_first(const char *buf, size_t n)
{
	size_t i = 0;

	while (i < n && buf[i] && strchr(" \t\r\n", buf[i]))
		i++;
	return i < n && buf[i] == '{';
}

int thin_image_read_xml(FILE *f, struct thin_image *out, char *why, size_t why_len)
{
	struct reader rd = { .img = out, .why = why, .why_len = why_len };
	char buf[65536];
	bool done = false, first = true;

	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	rd.x = XML_ParserCreate(NULL);
	if (!rd.x)
		return -ENOMEM;
	XML_SetUserData(rd.x, &rd);
	XML_SetElementHandler(rd.x, on_start, on_end);
	while (!done && !rd.r) {
		size_t n = fread(buf, 1, sizeof(buf), f);

		if (ferror(f)) {
			rd.r = -EIO;
			snprintf(why, why_len, "cannot read it");
			break;
		}
		done = n < sizeof(buf);
		if (first && json_first(buf, n)) {
			rd.r = -EINVAL;
			snprintf(why, why_len, "it is JSON: restore reads the XML of 'mapperctl dump --format xml' or thin_dump");
			break;
		}
		first = false;
		if (XML_Parse(rd.x, buf, (int)n, done) == XML_STATUS_ERROR && !rd.r) {
			rd.r = -EINVAL;
			snprintf(why, why_len, "line %lu: %s",
				 (unsigned long)XML_GetCurrentLineNumber(rd.x),
				 XML_ErrorString(XML_GetErrorCode(rd.x)));
		}
	}
	if (!rd.r && !rd.superblock) {
		rd.r = -EINVAL;
		snprintf(why, why_len, "no <superblock>: not thin_dump XML");
	}
	XML_ParserFree(rd.x);
	if (rd.r)
		thin_image_release(out);
	return rd.r;
}

/* ---- checking ----------------------------------------------------------------- */

static int refuse(char *why, size_t why_len, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int refuse(char *why, size_t why_len, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	return r;
}

static int cmp_id(const void *a, const void *b)
{
	const struct thin_image_id *x = a, *y = b;

	if (x->dev_id != y->dev_id)
		return (x->dev_id > y->dev_id) - (x->dev_id < y->dev_id);
	return (x->dev > y->dev) - (x->dev < y->dev);
}

/* by_id, and each dev_id once. */
static int index_ids(struct thin_image *img, char *why, size_t why_len)
{
	img->by_id = malloc((img->nr_devs + 1) * sizeof(*img->by_id));
	if (!img->by_id)
		return refuse(why, why_len, -ENOMEM, "out of memory");
	for (size_t i = 0; i < img->nr_devs; i++)
		img->by_id[i] = (struct thin_image_id){ img->devs[i].dev_id, i };
	qsort(img->by_id, img->nr_devs, sizeof(*img->by_id), cmp_id);
	for (size_t i = 1; i < img->nr_devs; i++)
		if (img->by_id[i].dev_id == img->by_id[i - 1].dev_id)
			return refuse(why, why_len, -EINVAL, "dev_id %llu appears twice",
				      (unsigned long long)img->by_id[i].dev_id);
	return 0;
}

struct thin_image_dev *thin_image_find(const struct thin_image *img, uint64_t dev_id)
{
	size_t lo = 0, hi = img->by_id ? img->nr_devs : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct thin_image_id *k = &img->by_id[mid];

		if (k->dev_id == dev_id)
			return &img->devs[k->dev];
		if (k->dev_id < dev_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cmp_run(const void *a, const void *b)
{
	const struct thin_image_run *x = a, *y = b;

	return (x->origin > y->origin) - (x->origin < y->origin);
}

/* Sorts @d's runs: no virtual block twice, none past the largest map or the image's end. */
static int check_runs(const struct thin_image *img, struct thin_image_dev *d, char *why,
		      size_t why_len)
{
	if (d->nr_runs)
		qsort(d->runs, d->nr_runs, sizeof(*d->runs), cmp_run);
	for (size_t j = 0; j < d->nr_runs; j++) {
		const struct thin_image_run *run = &d->runs[j];

		/* The reader refused runs that wrap: origin + len and data + len fit. */
		if (run->origin + run->len > MAX_VIRTUAL_BLOCKS)
			return refuse(why, why_len, -EFBIG, "device %llu maps virtual block %llu, past the largest thin volume",
				      (unsigned long long)d->dev_id,
				      (unsigned long long)(run->origin + run->len - 1));
		if (j && d->runs[j - 1].origin + d->runs[j - 1].len > run->origin)
			return refuse(why, why_len, -EINVAL, "device %llu maps virtual block %llu twice",
				      (unsigned long long)d->dev_id, (unsigned long long)run->origin);
		if (run->data + run->len > img->nr_blocks)
			return refuse(why, why_len, -EINVAL, "device %llu maps data block %llu, past the dump's own end (nr_data_blocks %llu)",
				      (unsigned long long)d->dev_id,
				      (unsigned long long)(run->data + run->len - 1),
				      (unsigned long long)img->nr_blocks);
	}
	return 0;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct thin_image_ref *x = a, *y = b;

	if (x->data != y->data)
		return (x->data > y->data) - (x->data < y->data);
	if (x->dev != y->dev)
		return (x->dev > y->dev) - (x->dev < y->dev);
	return (x->run > y->run) - (x->run < y->run);
}

/*
 * by_data, and every data block at one virtual block.  Runs that share a
 * data block must be the same line "virtual = data - k": comparing each
 * run with the one before it that reaches furthest is enough, since any
 * earlier run it meets contains its first block, and so does that one.
 */
static int index_data(struct thin_image *img, char *why, size_t why_len)
{
	const struct thin_image_run *reach = NULL;
	size_t n = 0;

	for (size_t i = 0; i < img->nr_devs; i++)
		n += img->devs[i].nr_runs;
	img->by_data = malloc((n + 1) * sizeof(*img->by_data));
	if (!img->by_data)
		return refuse(why, why_len, -ENOMEM, "out of memory");
	for (size_t i = 0; i < img->nr_devs; i++)
		for (size_t j = 0; j < img->devs[i].nr_runs; j++)
			img->by_data[img->nr_refs++] = (struct thin_image_ref){
				img->devs[i].runs[j].data, i, j };
	qsort(img->by_data, img->nr_refs, sizeof(*img->by_data), cmp_ref);
	for (size_t i = 0; i < img->nr_refs; i++) {
		const struct thin_image_ref *ref = &img->by_data[i];
		const struct thin_image_run *run = &img->devs[ref->dev].runs[ref->run];

		if (reach && reach->data + reach->len > run->data &&
		    reach->origin + (run->data - reach->data) != run->origin)
			return refuse(why, why_len, -EINVAL, "data block %llu is mapped at virtual blocks %llu and %llu (mapperfs shares a block only at one virtual block)",
				      (unsigned long long)run->data,
				      (unsigned long long)(reach->origin + (run->data - reach->data)),
				      (unsigned long long)run->origin);
		if (!reach || run->data + run->len > reach->data + reach->len)
			reach = run;
	}
	return 0;
}

/* Names the cycle of snapshot_of that device @i is on, in @why. */
static int refuse_cycle(const struct thin_image *img, size_t i, char *why, size_t why_len)
{
	size_t n, j;

	n = (size_t)snprintf(why, why_len, "snapshot_of goes round in a cycle: device %llu is a snapshot of %llu",
			     (unsigned long long)img->devs[i].dev_id,
			     (unsigned long long)img->devs[i].snapshot_of);
	for (j = img->devs[i].origin; j != i && n < why_len; j = img->devs[j].origin)
		n += (size_t)snprintf(why + n, why_len - n, ", which is a snapshot of %llu",
				      (unsigned long long)img->devs[j].snapshot_of);
	return -EINVAL;
}

/*
 * Each device's origin; none missing, and no cycle: a walk up the chain
 * from each device stops at a device already known to end (2), or meets
 * one of its own walk (1): a cycle.  O(D).
 */
static int link_origins(struct thin_image *img, char *why, size_t why_len)
{
	unsigned char *state = calloc(img->nr_devs + 1, 1);
	int r = 0;

	if (!state)
		return refuse(why, why_len, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < img->nr_devs; i++) {
		struct thin_image_dev *d = &img->devs[i], *o;

		if (!d->is_snapshot)
			continue;
		o = thin_image_find(img, d->snapshot_of);
		if (!o)
			r = refuse(why, why_len, -EINVAL, "device %llu is a snapshot of device %llu, which the dump does not have",
				   (unsigned long long)d->dev_id, (unsigned long long)d->snapshot_of);
		else
			d->origin = (size_t)(o - img->devs);
	}
	for (size_t i = 0; !r && i < img->nr_devs; i++) {
		size_t j = i;

		while (!state[j] && img->devs[j].is_snapshot) {
			state[j] = 1;
			j = img->devs[j].origin;
		}
		if (state[j] == 1)
			r = refuse_cycle(img, j, why, why_len);
		for (j = i; state[j] != 2; j = img->devs[j].origin) {
			state[j] = 2;
			if (!img->devs[j].is_snapshot)
				break;
		}
	}
	free(state);
	return r;
}

int thin_image_check(struct thin_image *img, char *why, size_t why_len)
{
	int r;

	why[0] = '\0';
	r = index_ids(img, why, why_len);
	for (size_t i = 0; !r && i < img->nr_devs; i++)
		r = check_runs(img, &img->devs[i], why, why_len);
	if (!r)
		r = index_data(img, why, why_len);
	if (!r)
		r = link_origins(img, why, why_len);
	return r;
}
