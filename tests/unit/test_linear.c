/*
 * Segment maths of the linear target, and the volume entry points on top
 * of it: where a request lands, how it is split and clipped.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "engine.h"
#include "linear.h"
#include "rcu.h"
#include "volume.h"

#define MiB (1024u * 1024u)

static struct device dev_a = { .id = 1, .path = "a" };
static struct device dev_b = { .id = 2, .path = "b" };

/* Volume: a[0, 1M) b[4M, 5M) a[8M, 9M) */
static const struct linear_seg three[] = {
	{ &dev_a, 0, MiB },
	{ &dev_b, 4 * MiB, MiB },
	{ &dev_a, 8 * MiB, MiB },
};

static struct target *make(const struct linear_seg *v, unsigned int nr)
{
	struct target *t;

	ck_assert_int_eq(linear_create(v, nr, &t), 0);
	return t;
}

static int map(struct target *t, uint64_t off, uint32_t len, struct segs *out)
{
	int r;

	rcu_read_begin();
	r = t->ops->map(t, IO_READ, off, len, out);
	rcu_read_end();
	return r;
}

static void setup(void)
{
	urcu_memb_register_thread();
}

static void teardown(void)
{
	urcu_memb_unregister_thread();
}

START_TEST(request_inside_one_segment_is_one_piece)
{
	struct target *t = make(three, 3);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, MiB + 4096, 8192, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_ptr_eq(s.v[0].dev, &dev_b);
	ck_assert_uint_eq(s.v[0].dev_off, 4 * MiB + 4096);
	ck_assert_uint_eq(s.v[0].len, 8192);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(request_across_three_segments_is_split_at_each_boundary)
{
	struct target *t = make(three, 3);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, MiB - 4096, MiB + 8192, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 3);
	ck_assert_ptr_eq(s.v[0].dev, &dev_a);
	ck_assert_uint_eq(s.v[0].dev_off, MiB - 4096);
	ck_assert_uint_eq(s.v[0].len, 4096);
	ck_assert_uint_eq(s.v[0].buf_off, 0);
	ck_assert_ptr_eq(s.v[1].dev, &dev_b);
	ck_assert_uint_eq(s.v[1].dev_off, 4 * MiB);
	ck_assert_uint_eq(s.v[1].len, MiB);
	ck_assert_uint_eq(s.v[1].buf_off, 4096);
	ck_assert_ptr_eq(s.v[2].dev, &dev_a);
	ck_assert_uint_eq(s.v[2].dev_off, 8 * MiB);
	ck_assert_uint_eq(s.v[2].len, 4096);
	ck_assert_uint_eq(s.v[2].buf_off, MiB + 4096);
	ck_assert_uint_eq(segs_len(&s), MiB + 8192);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(request_ending_at_a_segment_boundary_stays_in_its_segment)
{
	struct target *t = make(three, 3);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, MiB - 512, 512, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_ptr_eq(s.v[0].dev, &dev_a);
	segs_reset(&s);
	ck_assert_int_eq(map(t, MiB, 512, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_ptr_eq(s.v[0].dev, &dev_b);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(segments_contiguous_on_one_device_become_one_piece)
{
	const struct linear_seg v[] = {
		{ &dev_a, 0, MiB }, { &dev_a, MiB, MiB },
	};
	struct target *t = make(v, 2);
	struct segs s;

	segs_init(&s);
	ck_assert_int_eq(map(t, 0, 2 * MiB, &s), MAP_REMAPPED);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_uint_eq(s.v[0].len, 2 * MiB);
	segs_release(&s);
	t->ops->destroy(t);
}
END_TEST

START_TEST(empty_table_is_refused)
{
	struct target *t;

	ck_assert_int_eq(linear_create(three, 0, &t), -EINVAL);
}
END_TEST

/* Two temporary files as devices, for the tests that do real I/O. */
struct files {
	char path[2][64];
	struct device *dev[2];
	struct engine engine;
};

static void files_open_in(struct files *f, const char *dir)
{
	for (int i = 0; i < 2; i++) {
		int fd;

		snprintf(f->path[i], sizeof(f->path[i]), "%s/test_linear.XXXXXX", dir);
		fd = mkstemp(f->path[i]);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, 4 * MiB), 0);
		close(fd);
		ck_assert_int_eq(device_open(f->path[i], i + 1, &f->dev[i]), 0);
	}
	ck_assert_int_eq(engine_init(&f->engine, 8), 0);
}

static void files_open(struct files *f)
{
	files_open_in(f, "/tmp");
}

static void files_close(struct files *f)
{
	engine_exit(&f->engine);
	for (int i = 0; i < 2; i++) {
		device_close(f->dev[i]);
		unlink(f->path[i]);
	}
}

static struct volume *two_file_volume(struct files *f)
{
	const struct linear_seg v[] = {
		{ f->dev[0], MiB, MiB }, { f->dev[1], 2 * MiB, MiB },
	};
	struct volume *vol;

	ck_assert_int_eq(volume_create(1, "v", 2 * MiB, make(v, 2), &vol), 0);
	return vol;
}

START_TEST(write_across_segments_lands_at_the_device_offsets)
{
	struct files f;
	struct volume *v;
	char *buf = malloc(8192), back[4096];

	files_open(&f);
	v = two_file_volume(&f);
	memset(buf, 'x', 4096);
	memset(buf + 4096, 'y', 4096);
	ck_assert_int_eq(volume_write(v, &f.engine, buf, MiB - 4096, 8192), 8192);
	ck_assert_int_eq(pread(f.dev[0]->fd, back, 4096, 2 * MiB - 4096), 4096);
	ck_assert_int_eq(memcmp(back, buf, 4096), 0);
	ck_assert_int_eq(pread(f.dev[1]->fd, back, 4096, 2 * MiB), 4096);
	ck_assert_int_eq(memcmp(back, buf + 4096, 4096), 0);
	memset(buf, 0, 8192);
	ck_assert_int_eq(volume_read(v, &f.engine, buf, MiB - 4096, 8192), 8192);
	ck_assert_int_eq(buf[0], 'x');
	ck_assert_int_eq(buf[8191], 'y');
	volume_destroy(v);
	files_close(&f);
	free(buf);
}
END_TEST

START_TEST(read_past_the_end_is_short_and_write_there_fails)
{
	struct files f;
	struct volume *v;
	char buf[8192];

	files_open(&f);
	v = two_file_volume(&f);
	ck_assert_int_eq(volume_read(v, &f.engine, buf, 2 * MiB - 4096, 8192), 4096);
	ck_assert_int_eq(volume_read(v, &f.engine, buf, 2 * MiB, 4096), 0);
	ck_assert_int_eq(volume_write(v, &f.engine, buf, 2 * MiB - 4096, 8192), 4096);
	ck_assert_int_eq(volume_write(v, &f.engine, buf, 2 * MiB, 4096), -ENOSPC);
	volume_destroy(v);
	files_close(&f);
}
END_TEST

/* Volume [0, 1M) on file a at 1M, [1M, 2M) on file b at 2M: sparse files. */
START_TEST(seek_shows_the_holes_of_file_devices_inside_the_segments)
{
	char page[4096];
	struct files f;
	struct volume *v;
	uint64_t at;

	files_open(&f);
	v = two_file_volume(&f);
	memset(page, 'd', sizeof(page));
	ck_assert_int_eq(volume_write(v, &f.engine, page, 256 * 1024, 4096), 4096);
	ck_assert_int_eq(volume_write(v, &f.engine, page, MiB + 8192, 4096), 4096);
	/* Data of file a outside the segment belongs to no volume here. */
	ck_assert_int_eq(pwrite(f.dev[0]->fd, page, 4096, 2 * MiB + 4096), 4096);
	ck_assert_int_eq(volume_seek(v, 0, SEEK_DATA, &at), 0);
	ck_assert_uint_eq(at, 256 * 1024);
	ck_assert_int_eq(volume_seek(v, 256 * 1024, SEEK_HOLE, &at), 0);
	ck_assert_uint_eq(at, 260 * 1024);
	ck_assert_int_eq(volume_seek(v, 260 * 1024, SEEK_DATA, &at), 0);
	ck_assert_uint_eq(at, MiB + 8192);
	ck_assert_int_eq(volume_seek(v, MiB + 8192, SEEK_HOLE, &at), 0);
	ck_assert_uint_eq(at, MiB + 12288);
	ck_assert_int_eq(volume_seek(v, MiB + 12288, SEEK_DATA, &at), -ENXIO);
	ck_assert_int_eq(volume_seek(v, MiB + 12288, SEEK_HOLE, &at), 0);
	ck_assert_uint_eq(at, MiB + 12288);
	ck_assert_int_eq(volume_seek_within(v, 0, 128 * 1024, SEEK_DATA, &at), -ENXIO);
	ck_assert_int_eq(volume_seek_within(v, 0, 128 * 1024, SEEK_HOLE, &at), 0);
	ck_assert_uint_eq(at, 0);
	volume_destroy(v);
	files_close(&f);
}
END_TEST

START_TEST(read_from_memory_devices_points_into_their_mappings)
{
	struct iovec iov[VOLUME_READ_IOV];
	unsigned int nr;
	struct files f;
	struct volume *v;
	char buf[8192];

	files_open_in(&f, "/dev/shm");
	ck_assert_ptr_nonnull(f.dev[0]->mem);
	v = two_file_volume(&f);
	memset(buf, 'm', sizeof(buf));
	ck_assert_int_eq(volume_write(v, &f.engine, buf, MiB - 4096, 8192), 8192);
	ck_assert_int_eq(volume_read_iov(v, &f.engine, buf, MiB - 4096, 8192, iov, &nr), 8192);
	ck_assert_uint_eq(nr, 2);
	ck_assert_ptr_eq(iov[0].iov_base, f.dev[0]->mem + 2 * MiB - 4096);
	ck_assert_ptr_eq(iov[1].iov_base, f.dev[1]->mem + 2 * MiB);
	ck_assert_int_eq(((char *)iov[1].iov_base)[4095], 'm');
	volume_read_done();
	volume_destroy(v);
	files_close(&f);
}
END_TEST

START_TEST(read_from_file_devices_is_copied_into_the_buffer)
{
	struct iovec iov[VOLUME_READ_IOV];
	unsigned int nr;
	struct files f;
	struct volume *v;
	char buf[8192];

	files_open(&f);
	v = two_file_volume(&f);
	ck_assert_int_eq(volume_read_iov(v, &f.engine, buf, MiB - 4096, 8192, iov, &nr), 8192);
	ck_assert_uint_eq(nr, 1);
	ck_assert_ptr_eq(iov[0].iov_base, buf);
	ck_assert_uint_eq(iov[0].iov_len, 8192);
	volume_read_done();
	volume_destroy(v);
	files_close(&f);
}
END_TEST

START_TEST(held_volume_cannot_be_retired)
{
	struct files f;
	struct volume *v;

	files_open(&f);
	v = two_file_volume(&f);
	ck_assert_int_eq(volume_hold(v), 0);
	ck_assert_int_eq(volume_retire(v), -EBUSY);
	volume_unhold(v);
	ck_assert_int_eq(volume_retire(v), 0);
	ck_assert_int_eq(volume_hold(v), -ENOENT);
	volume_destroy(v);
	files_close(&f);
}
END_TEST

START_TEST(volume_held_alone_admits_no_other_holder)
{
	struct files f;
	struct volume *v;

	files_open(&f);
	v = two_file_volume(&f);
	ck_assert_int_eq(volume_hold(v), 0);			/* an open file */
	ck_assert_int_eq(volume_hold_alone(v), -EBUSY);
	ck_assert_int_eq(volume_hold(v), 0);			/* refusing changed nothing */
	volume_unhold(v);
	volume_unhold(v);
	ck_assert_int_eq(volume_hold_alone(v), 0);
	ck_assert_int_eq(volume_hold(v), -EBUSY);		/* no file opens meanwhile */
	ck_assert_int_eq(volume_hold_alone(v), -EBUSY);
	ck_assert_int_eq(volume_retire(v), -EBUSY);		/* nor is it removed */
	volume_unhold_alone(v);
	ck_assert_int_eq(volume_hold(v), 0);
	volume_unhold(v);
	ck_assert_int_eq(volume_retire(v), 0);
	ck_assert_int_eq(volume_hold_alone(v), -ENOENT);
	volume_destroy(v);
	files_close(&f);
}
END_TEST

/* Readers map while the table is replaced under them (run under TSan). */
struct race {
	struct target *t;
	_Atomic int stop;
	_Atomic long mapped;
};

static void *race_reader(void *arg)
{
	struct race *r = arg;
	struct segs s;

	urcu_memb_register_thread();
	segs_init(&s);
	while (!atomic_load(&r->stop)) {
		segs_reset(&s);
		ck_assert_int_eq(map(r->t, MiB - 4096, 8192, &s), MAP_REMAPPED);
		ck_assert_uint_eq(segs_len(&s), 8192);
		atomic_fetch_add(&r->mapped, 1);
	}
	segs_release(&s);
	urcu_memb_unregister_thread();
	return NULL;
}

START_TEST(table_replaced_while_readers_map_is_never_torn)
{
	struct race r = { .t = make(three, 3) };
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, race_reader, &r);
	for (int round = 0; round < 200; round++) {
		struct linear_table *tb;

		ck_assert_int_eq(linear_table_new(three, 2 + round % 2, &tb), 0);
		linear_publish(r.t, tb);
	}
	atomic_store(&r.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	r.t->ops->destroy(r.t);
}
END_TEST

static Suite *linear_suite(void)
{
	Suite *s = suite_create("linear");
	TCase *tc = tcase_create("map");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, request_inside_one_segment_is_one_piece);
	tcase_add_test(tc, request_across_three_segments_is_split_at_each_boundary);
	tcase_add_test(tc, request_ending_at_a_segment_boundary_stays_in_its_segment);
	tcase_add_test(tc, segments_contiguous_on_one_device_become_one_piece);
	tcase_add_test(tc, empty_table_is_refused);
	tcase_add_test(tc, write_across_segments_lands_at_the_device_offsets);
	tcase_add_test(tc, read_past_the_end_is_short_and_write_there_fails);
	tcase_add_test(tc, seek_shows_the_holes_of_file_devices_inside_the_segments);
	tcase_add_test(tc, read_from_memory_devices_points_into_their_mappings);
	tcase_add_test(tc, read_from_file_devices_is_copied_into_the_buffer);
	tcase_add_test(tc, held_volume_cannot_be_retired);
	tcase_add_test(tc, volume_held_alone_admits_no_other_holder);
	tcase_add_test(tc, table_replaced_while_readers_map_is_never_torn);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(linear_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
