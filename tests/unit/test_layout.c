/*
 * The layout text (core/pool/layout.h) and the device area that keeps its
 * copies (core/io/layout_area.h): a layout with every kind of record,
 * awkward strings and a large region table reads back as it was written;
 * a torn, damaged or foreign text is refused with its line; copies go to
 * alternate slots, and a damaged slot leaves the other one readable; the
 * text of 10,000 volumes fits a slot deflated, copies from before
 * compression still read, a hostile compressed copy reads as damaged, and
 * a text too big even deflated leaves a marker that the copies are stale.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "layout.h"
#include "layout_area.h"

#define TABLE_LEN	100000

static void make(struct layout *l)
{
	struct pool_meta_image *m = &l->img;

	memset(l, 0, sizeof(*l));
	ck_assert_int_eq(uuid_generate(&m->uuid), 0);
	l->seq = 42;
	l->time = 1796236800;
	l->command = strdup("mapperctl create linear 'my \"lv\"\\x'");
	m->nr_devices = 1;
	m->devices = calloc(1, sizeof(*m->devices));
	m->devices[0] = (struct device_rec){ .id = 3, .name = "d0", .size = 1ull << 30,
					     .path = "/srv/with space/d0\t.img" };
	ck_assert_int_eq(uuid_generate(&m->devices[0].uuid), 0);
	m->nr_volumes = 4;
	m->volumes = calloc(4, sizeof(*m->volumes));
	m->volumes[0] = (struct volume_rec){ .id = 1, .name = "lv", .kind = "linear",
					     .size = 8 << 20, .created = 5, .modified = 7,
					     .allow_shrink = true };
	m->volumes[1] = (struct volume_rec){ .id = 2, .name = "sw", .kind = "switch",
					     .size = 1 << 20, .read_only = true, .inactive = true };
	m->volumes[2] = (struct volume_rec){ .id = 4, .name = "tp", .kind = "thin-pool",
					     .size = 16 << 20 };
	m->volumes[3] = (struct volume_rec){ .id = 9, .name = "tv", .kind = "thin",
					     .size = 1ull << 40 };
	m->nr_extents = 2;
	m->extents = calloc(2, sizeof(*m->extents));
	m->extents[0] = (struct extent_rec){ .volume = 1, .device = 3, .dev_offset = 1 << 20,
					     .length = 8 << 20 };
	m->extents[1] = (struct extent_rec){ .volume = 4, .device = 3, .dev_offset = 9 << 20,
					     .length = 16 << 20 };
	m->nr_stripes = 1;
	m->stripes = calloc(1, sizeof(*m->stripes));
	m->stripes[0] = (struct stripe_rec){ .volume = 1, .stripes = 2, .stripe_size = 65536 };
	m->nr_switches = 1;
	m->switches = calloc(1, sizeof(*m->switches));
	m->switches[0] = (struct switch_rec){ .volume = 2, .region_size = 4096,
					      .nr_regions = TABLE_LEN * 8, .nr_paths = 2,
					      .entry_bits = 1 };
	l->tables = calloc(1, sizeof(*l->tables));
	l->table_lens = calloc(1, sizeof(*l->table_lens));
	l->tables[0] = malloc(TABLE_LEN);
	l->table_lens[0] = TABLE_LEN;
	for (size_t i = 0; i < TABLE_LEN; i++)
		l->tables[0][i] = i % 1000 < 990 ? 0xaa : (uint8_t)i;
	m->nr_switch_paths = 2;
	m->switch_paths = calloc(2, sizeof(*m->switch_paths));
	m->switch_paths[0] = (struct switch_path_rec){ .volume = 2, .idx = 0, .device = 3,
						       .dev_offset = 30 << 20 };
	m->switch_paths[1] = (struct switch_path_rec){ .volume = 2, .idx = 1, .device = 3,
						       .dev_offset = 31 << 20 };
	m->nr_thin_pools = 1;
	m->thin_pools = calloc(1, sizeof(*m->thin_pools));
	m->thin_pools[0] = (struct thin_pool_rec){ .volume = 4, .block_size = 65536, .zero = true,
						   .wait = true, .wait_seconds = 30, .low_water = 10,
						   .autoextend_threshold = 80,
						   .autoextend_percent = 20,
						   .on_event = "logger \"pool $MAPPERFS_EVENT\"" };
	m->nr_thins = 1;
	m->thins = calloc(1, sizeof(*m->thins));
	m->thins[0] = (struct thin_rec){ .volume = 9, .pool = 4 };
	m->nr_origins = 1;
	m->origins = calloc(1, sizeof(*m->origins));
	m->origins[0] = (struct thin_origin_rec){ .volume = 9, .origin_path = "/img/base é.raw",
						  .origin_size = 123, .origin_mtime_ns = 456 };
	m->nr_tags = 2;
	m->tags = calloc(2, sizeof(*m->tags));
	m->tags[0] = (struct tag_rec){ .on = TAG_ON_VOLUME, .owner = 9, .tag = "vm" };
	m->tags[1] = (struct tag_rec){ .on = TAG_ON_DEVICE, .owner = 3, .tag = "fast.ssd" };
}

static char *text_of(const struct layout *l, size_t *len)
{
	char *text;
	FILE *f = open_memstream(&text, len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(layout_write(l, f), 0);
	fclose(f);
	return text;
}

START_TEST(every_record_reads_back_as_written)
{
	struct layout a, b;
	char why[256] = "", *t1, *t2;
	size_t n1, n2;

	make(&a);
	t1 = text_of(&a, &n1);
	ck_assert_msg(n1 < 8192, "a mostly round-robin table of 800k regions took %zu bytes", n1);
	ck_assert_msg(layout_parse(t1, n1, &b, why, sizeof(why)) == 0, "%s", why);
	t2 = text_of(&b, &n2);
	ck_assert_str_eq(t1, t2);
	ck_assert_str_eq(b.command, a.command);
	ck_assert_str_eq(b.img.devices[0].path, a.img.devices[0].path);
	ck_assert_str_eq(b.img.thin_pools[0].on_event, a.img.thin_pools[0].on_event);
	ck_assert_str_eq(b.img.origins[0].origin_path, a.img.origins[0].origin_path);
	ck_assert(b.img.volumes[1].read_only && b.img.volumes[1].inactive);
	ck_assert(b.img.volumes[0].allow_shrink && !b.img.volumes[1].allow_shrink);
	ck_assert_int_eq(b.table_lens[0], TABLE_LEN);
	ck_assert_mem_eq(b.tables[0], a.tables[0], TABLE_LEN);
	ck_assert(b.img.thin_pools[0].wait && b.img.thin_pools[0].wait_seconds == 30);
	ck_assert_uint_eq(b.img.nr_stripes, 1);
	ck_assert(b.img.stripes[0].stripes == 2 && b.img.stripes[0].stripe_size == 65536);
	ck_assert_uint_eq(b.img.nr_tags, 2);
	ck_assert(b.img.tags[1].on == TAG_ON_DEVICE && !strcmp(b.img.tags[1].tag, "fast.ssd"));
	free(t1);
	free(t2);
	layout_release(&a);
	layout_release(&b);
}
END_TEST

/* Parses @text with one change; the reason must contain @want. */
static void refused(const char *text, const char *from, const char *to, const char *want)
{
	char *s = strdup(text), *at = strstr(s, from), *edited, why[256] = "";
	struct layout l;

	ck_assert_ptr_nonnull(at);
	ck_assert_int_ge(asprintf(&edited, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from)), 0);
	ck_assert_int_eq(layout_parse(edited, strlen(edited), &l, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, want), "'%s' does not say '%s'", why, want);
	free(edited);
	free(s);
}

START_TEST(bad_text_is_refused_with_its_line)
{
	struct layout a;
	char *t;
	size_t n;

	make(&a);
	t = text_of(&a, &n);
	refused(t, "end\n", "", "cut short");
	refused(t, "layout version=1", "layout version=2", "layout version 2");
	refused(t, " size=8388608", " sizee=8388608", "missing size=");
	refused(t, " kind=linear", " kind=linear colour=red", "unknown key 'colour'");
	refused(t, " device=3 offset=1048576", " device=8 offset=1048576", "device 8");
	refused(t, "offset=1048576", "offset=4096", "outside device");
	refused(t, "thin volume=9 pool=4", "thin volume=9 pool=1", "not a thin-pool");
	refused(t, "table=aa", "table=zz", "bad or oversized table");
	refused(t, "stripe volume=1 stripes=2", "stripe volume=2 stripes=2", "not a linear");
	refused(t, "stripe_size=65536", "stripe_size=65537", "bad stripes=2 stripe_size=65537");
	refused(t, "tag on=volume owner=9", "tag on=volume owner=77", "volume 77");
	refused(t, "tag=vm", "tag=\"v m\"", "bad tag='v m'");
	refused(t, "allow_shrink=1", "allow_shrink=yes", "bad allow_shrink='yes'");
	refused(t, "end\n", "volume id=99 name=\"open\nend\n", "unterminated");
	refused(t, "# mapperfs", "junk\n# mapperfs", "line 1: not a mapperfs layout");
	free(t);
	layout_release(&a);
}
END_TEST

static struct device *scratch_device(char *path)
{
	struct device *dev;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	ck_assert_int_eq(device_open(path, 1, &dev), 0);
	return dev;
}

static void write_copy(struct device *dev, unsigned int slot, const struct uuid *pool,
		       uint64_t seq, const char *text, size_t len, int expect)
{
	struct layout_copy c;

	ck_assert_int_eq(layout_copy_make(pool, seq, text, len, &c), expect);
	ck_assert_int_eq(layout_area_write(dev, slot, &c), 0);
	layout_copy_release(&c);
}

START_TEST(copies_alternate_slots_and_survive_one_damaged)
{
	char path[] = "/tmp/test_layout.XXXXXX";
	struct device *dev = scratch_device(path);
	struct layout_area area;
	struct uuid pool;

	ck_assert_int_eq(uuid_generate(&pool), 0);
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_ptr_null(layout_area_newest(&area));
	layout_area_release(&area);

	write_copy(dev, 1, &pool, 7, "seven", 5, 0);
	write_copy(dev, 0, &pool, 8, "eight!", 6, 0);
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_uint_eq(layout_area_newest(&area)->seq, 8);
	ck_assert_str_eq(layout_area_newest(&area)->text, "eight!");
	ck_assert_uint_eq(layout_area_newest_slot(&area), 0);
	layout_area_release(&area);

	/* a torn write of 9 lands where 7 was: 8 stays */
	ck_assert_int_eq(pwrite(dev->fd, "XX", 2, LABEL_SIZE + LAYOUT_SLOT_SIZE * 1 + LAYOUT_SLOT_HEADER), 2);
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_int_eq(area.slot[1].state, LAYOUT_SLOT_DAMAGED);
	ck_assert_uint_eq(layout_area_newest(&area)->seq, 8);
	layout_area_release(&area);
	device_close(dev);
	unlink(path);
}
END_TEST

/* @nr thin volume records, as a pool of @nr snapshots of one volume has them. */
static char *many_volumes(size_t nr, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < nr; i++)
		fprintf(f, "volume id=%zu name=\"vol-snap-%zu\" kind=thin size=68719476736 "
			"created=%zu read_only=0 inactive=1 allow_shrink=0\n"
			"thin volume=%zu pool=2 dev_id=%zu origin=3\n", i + 4, i, 1796236800 + i,
			i + 4, i + 2);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

START_TEST(ten_thousand_volumes_fit_a_slot_deflated)
{
	char path[] = "/tmp/test_layout.XXXXXX";
	struct device *dev = scratch_device(path);
	struct layout_area area;
	struct layout_copy c;
	struct uuid pool;
	size_t len;
	char *text = many_volumes(10000, &len);

	ck_assert_uint_gt(len, 3 * LAYOUT_STORED_MAX);
	ck_assert_int_eq(uuid_generate(&pool), 0);
	ck_assert_int_eq(layout_copy_make(&pool, 3, text, len, &c), 0);
	ck_assert(!c.overflow);
	ck_assert_uint_lt(c.stored * 10, len);
	ck_assert_int_eq(layout_area_write(dev, 1, &c), 0);
	layout_copy_release(&c);
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_uint_eq(layout_area_newest(&area)->seq, 3);
	ck_assert_uint_eq(layout_area_newest(&area)->len, len);
	ck_assert(!memcmp(layout_area_newest(&area)->text, text, len + 1));
	layout_area_release(&area);
	free(text);
	device_close(dev);
	unlink(path);
}
END_TEST

/* The header of every copy written before compression. */
struct old_header {
	char magic[16];
	uint8_t pool[16];
	uint64_t seq_le;
	uint64_t len_le;
	uint32_t text_crc_le;
	uint32_t header_crc_le;
} __attribute__((packed));

START_TEST(copies_written_before_compression_still_read)
{
	uint8_t *slot = calloc(1, LAYOUT_SLOT_SIZE);
	struct old_header *h = (void *)slot;
	struct layout_slot s;

	memcpy(h->magic, "MAPPERFS-LAYOUT", 16);
	memset(h->pool, 0xab, 16);
	h->seq_le = htole64(5);
	h->len_le = htole64(4);
	memcpy(slot + LAYOUT_SLOT_HEADER, "five", 4);
	h->text_crc_le = htole32(label_crc32(slot + LAYOUT_SLOT_HEADER, 4));
	h->header_crc_le = htole32(label_crc32(h, offsetof(struct old_header, header_crc_le)));
	ck_assert_int_eq(layout_slot_decode(slot, LAYOUT_SLOT_SIZE, &s), 0);
	ck_assert_int_eq(s.state, LAYOUT_SLOT_GOOD);
	ck_assert_uint_eq(s.seq, 5);
	ck_assert_str_eq(s.text, "five");
	free(s.text);

	h->len_le = htole64(LAYOUT_STORED_MAX + 1);	/* a length past the slot */
	h->header_crc_le = htole32(label_crc32(h, offsetof(struct old_header, header_crc_le)));
	ck_assert_int_eq(layout_slot_decode(slot, LAYOUT_SLOT_SIZE, &s), 0);
	ck_assert_int_eq(s.state, LAYOUT_SLOT_DAMAGED);
	free(slot);
}
END_TEST

/* Offsets in a compressed copy's header (layout_area.c's struct slot_header_v2). */
#define V2_STORED	40
#define V2_TEXT_LEN	44
#define V2_STORED_CRC	52
#define V2_HEADER_CRC	56

static void put32(uint8_t *buf, size_t off, uint32_t v)
{
	v = htole32(v);
	memcpy(buf + off, &v, 4);
}

/* @c with its checksums made right again, decoded. */
static enum layout_slot_state decode_resealed(struct layout_copy *c)
{
	uint32_t stored;
	struct layout_slot s;

	memcpy(&stored, c->buf + V2_STORED, 4);
	put32(c->buf, V2_STORED_CRC, label_crc32(c->buf + LAYOUT_SLOT_HEADER, le32toh(stored)));
	put32(c->buf, V2_HEADER_CRC, label_crc32(c->buf, V2_HEADER_CRC));
	ck_assert_int_eq(layout_slot_decode(c->buf, c->len, &s), 0);
	free(s.text);
	return s.state;
}

START_TEST(a_hostile_compressed_copy_is_damaged_not_inflated)
{
	struct layout_copy c;
	struct uuid pool;
	size_t len;
	char *text = many_volumes(100, &len);

	ck_assert_int_eq(uuid_generate(&pool), 0);
	ck_assert_int_eq(layout_copy_make(&pool, 9, text, len, &c), 0);
	ck_assert_int_eq(decode_resealed(&c), LAYOUT_SLOT_GOOD);

	c.buf[LAYOUT_SLOT_HEADER + c.stored / 2] ^= 0x55;	/* garbage in the stream */
	ck_assert_int_eq(decode_resealed(&c), LAYOUT_SLOT_DAMAGED);
	c.buf[LAYOUT_SLOT_HEADER + c.stored / 2] ^= 0x55;
	put32(c.buf, V2_TEXT_LEN, (uint32_t)len + 1);		/* a text longer than it inflates to */
	ck_assert_int_eq(decode_resealed(&c), LAYOUT_SLOT_DAMAGED);
	put32(c.buf, V2_TEXT_LEN, (uint32_t)len - 1);		/* shorter */
	ck_assert_int_eq(decode_resealed(&c), LAYOUT_SLOT_DAMAGED);
	put32(c.buf, V2_TEXT_LEN, UINT32_MAX);			/* past the cap: not even tried */
	ck_assert_int_eq(decode_resealed(&c), LAYOUT_SLOT_DAMAGED);
	put32(c.buf, V2_TEXT_LEN, (uint32_t)len);
	put32(c.buf, V2_STORED, (uint32_t)c.stored - 1);	/* a stream cut short */
	ck_assert_int_eq(decode_resealed(&c), LAYOUT_SLOT_DAMAGED);
	layout_copy_release(&c);
	free(text);
}
END_TEST

START_TEST(a_text_too_big_even_deflated_leaves_a_stale_marker)
{
	char path[] = "/tmp/test_layout.XXXXXX";
	struct device *dev = scratch_device(path);
	size_t len = LAYOUT_STORED_MAX + 4096;
	char *noise = malloc(len);
	const struct layout_slot *over;
	struct layout_area area;
	struct layout_copy c;
	struct uuid pool;

	srandom(7);
	for (size_t i = 0; i < len; i++)
		noise[i] = (char)random();
	ck_assert_int_eq(uuid_generate(&pool), 0);
	write_copy(dev, 0, &pool, 10, "ten", 3, 0);
	write_copy(dev, 1, &pool, 11, noise, len, -EFBIG);
	write_copy(dev, 1, &pool, 12, noise, len, -EFBIG);	/* the same slot: 10 stays */
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_uint_eq(layout_area_newest(&area)->seq, 10);
	over = layout_area_overflow(&area);
	ck_assert_ptr_nonnull(over);
	ck_assert_uint_eq(over->seq, 12);
	ck_assert_uint_eq(over->len, len);
	ck_assert_ptr_null(over->text);
	layout_area_release(&area);

	write_copy(dev, 1, &pool, 13, "thirteen", 8, 0);	/* fits again */
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_uint_eq(layout_area_newest(&area)->seq, 13);
	ck_assert_ptr_null(layout_area_overflow(&area));
	layout_area_release(&area);

	/* past what a reader would inflate: not even deflated */
	ck_assert_int_eq(layout_copy_make(&pool, 14, noise, LAYOUT_TEXT_MAX + 1, &c), -EFBIG);
	ck_assert(c.overflow);
	layout_copy_release(&c);
	free(noise);
	device_close(dev);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("layout");
	TCase *tc = tcase_create("layout");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_record_reads_back_as_written);
	tcase_add_test(tc, bad_text_is_refused_with_its_line);
	tcase_add_test(tc, copies_alternate_slots_and_survive_one_damaged);
	tcase_add_test(tc, ten_thousand_volumes_fit_a_slot_deflated);
	tcase_add_test(tc, copies_written_before_compression_still_read);
	tcase_add_test(tc, a_hostile_compressed_copy_is_damaged_not_inflated);
	tcase_add_test(tc, a_text_too_big_even_deflated_leaves_a_stale_marker);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
