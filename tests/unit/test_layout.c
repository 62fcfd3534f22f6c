/*
 * The layout text (core/pool/layout.h) and the device area that keeps its
 * copies (core/io/layout_area.h): a layout with every kind of record,
 * awkward strings and a large region table reads back as it was written;
 * a torn, damaged or foreign text is refused with its line; copies go to
 * alternate slots, and a damaged slot leaves the other one readable.
 */
#include <check.h>
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

START_TEST(copies_alternate_slots_and_survive_one_damaged)
{
	char path[] = "/tmp/test_layout.XXXXXX";
	int fd = mkstemp(path);
	struct layout_area area;
	struct device *dev;
	struct uuid pool;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	ck_assert_int_eq(device_open(path, 1, &dev), 0);
	ck_assert_int_eq(uuid_generate(&pool), 0);
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_ptr_null(layout_area_newest(&area));
	layout_area_release(&area);

	ck_assert_int_eq(layout_area_write(dev, &pool, 7, "seven", 5), 0);
	ck_assert_int_eq(layout_area_write(dev, &pool, 8, "eight!", 6), 0);
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_uint_eq(layout_area_newest(&area)->seq, 8);
	ck_assert_str_eq(layout_area_newest(&area)->text, "eight!");
	layout_area_release(&area);

	/* a torn write of 9 lands where 7 was: 8 stays */
	ck_assert_int_eq(pwrite(dev->fd, "XX", 2, LABEL_SIZE + LAYOUT_SLOT_SIZE * 1 + LAYOUT_SLOT_HEADER), 2);
	ck_assert_int_eq(layout_area_read(dev, &area), 0);
	ck_assert_int_eq(area.slot[1].state, LAYOUT_SLOT_DAMAGED);
	ck_assert_uint_eq(layout_area_newest(&area)->seq, 8);
	layout_area_release(&area);

	ck_assert_int_eq(layout_area_write(dev, &pool, 9, "x", LAYOUT_TEXT_MAX + 1), -EFBIG);
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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
