/*
 * Raw devices are claimed by the process that opens them: a second
 * process is refused and told who holds the device; the opener itself may
 * open it again; the claim goes with the last close.  Block devices need
 * a loop device and are covered by t505.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device.h"

struct fixture {
	char path[64];
};

static void make_file(struct fixture *f)
{
	int fd;

	snprintf(f->path, sizeof(f->path), "/tmp/mapperfs-test-device.XXXXXX");
	fd = mkstemp(f->path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
}

/*
 * device_open(@path), or device_open_shared() with @how "--open-shared",
 * in another process: its result, as -errno.  That process is this
 * program run again (main: --open PATH), since a child that was only
 * forked shares our claims, as it shares our flocks.
 */
static int open_elsewhere_as(const char *how, const char *path)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/proc/self/exe", "test_device", how, path, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return -WEXITSTATUS(status);
}

static int open_elsewhere(const char *path)
{
	return open_elsewhere_as("--open", path);
}

START_TEST(another_process_cannot_open_a_file_we_hold)
{
	struct fixture f;
	struct device *dev;

	make_file(&f);
	ck_assert_int_eq(device_open(f.path, 1, &dev), 0);
	ck_assert_int_eq(open_elsewhere(f.path), -EBUSY);
	device_close(dev);
	ck_assert_int_eq(open_elsewhere(f.path), 0);
	unlink(f.path);
}
END_TEST

START_TEST(one_process_may_open_a_device_twice_and_holds_it_until_the_last_close)
{
	struct fixture f;
	struct device *a, *b;

	make_file(&f);
	ck_assert_int_eq(device_open(f.path, 1, &a), 0);
	ck_assert_int_eq(device_open(f.path, 0, &b), 0);
	device_close(a);
	ck_assert_int_eq(open_elsewhere(f.path), -EBUSY);
	device_close(b);
	ck_assert_int_eq(open_elsewhere(f.path), 0);
	unlink(f.path);
}
END_TEST

START_TEST(the_refusal_names_the_holding_program_and_pid)
{
	char why[160], want[64];
	struct device *dev;
	struct fixture f;
	int ready[2], go[2], status;
	char c = 0;
	pid_t pid;

	make_file(&f);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {		/* holds the device until told to let go */
		int r = device_open(f.path, 1, &dev);

		if (write(ready[1], &c, 1) != 1 || r || read(go[0], &c, 1) != 1)
			_exit(1);
		device_close(dev);
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(device_open(f.path, 0, &dev), -EBUSY);
	device_strerror(f.path, -EBUSY, why, sizeof(why));
	snprintf(want, sizeof(want), "(pid %d)", (int)pid);
	ck_assert_msg(strstr(why, want) && strstr(why, "in use by test_device"),
		      "'%s' does not name the holder, %s", why, want);
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unlink(f.path);
}
END_TEST

START_TEST(pools_may_share_an_origin_image_but_not_use_it_as_a_device)
{
	struct fixture f;
	struct device *a, *b;

	make_file(&f);
	ck_assert_int_eq(device_open_shared(f.path, &a), 0);
	ck_assert_int_eq(open_elsewhere_as("--open-shared", f.path), 0);
	ck_assert_int_eq(open_elsewhere(f.path), -EBUSY);
	device_close(a);
	ck_assert_int_eq(device_open(f.path, 1, &a), 0);
	ck_assert_int_eq(open_elsewhere_as("--open-shared", f.path), -EBUSY);
	ck_assert_int_eq(device_open_shared(f.path, &b), 0);	/* ours already */
	device_close(b);
	device_close(a);
	unlink(f.path);
}
END_TEST

START_TEST(a_shared_claim_becomes_exclusive_when_we_use_the_image_as_a_device)
{
	struct fixture f;
	struct device *a, *b;

	make_file(&f);
	ck_assert_int_eq(device_open_shared(f.path, &a), 0);
	ck_assert_int_eq(device_open(f.path, 1, &b), 0);
	ck_assert_int_eq(open_elsewhere_as("--open-shared", f.path), -EBUSY);
	device_close(b);
	device_close(a);
	ck_assert_int_eq(open_elsewhere(f.path), 0);
	unlink(f.path);
}
END_TEST

START_TEST(other_errors_read_as_strerror)
{
	char why[160];

	device_strerror("/nonexistent/device", -ENOENT, why, sizeof(why));
	ck_assert_str_eq(why, strerror(ENOENT));
}
END_TEST

/*
 * A flush is skipped only when no write, zeroing or discard returned since
 * the last flush that succeeded: the first one after open never is.
 */
START_TEST(a_flush_is_skipped_only_when_nothing_was_written_since_the_last)
{
	struct fixture f;
	struct device *dev;
	char buf[512] = "x";

	make_file(&f);
	ck_assert_int_eq(device_open(f.path, 1, &dev), 0);
	ck_assert(!device_clean(dev));
	ck_assert_int_eq(device_sync(dev), 0);
	ck_assert(device_clean(dev));
	ck_assert_int_eq(device_write_at(dev, buf, sizeof(buf), 0), 0);
	ck_assert(!device_clean(dev));
	ck_assert_int_eq(device_sync(dev), 0);
	ck_assert(device_clean(dev));
	ck_assert_int_eq(device_zero(dev, 65536, 65536, 0), 0);
	ck_assert(!device_clean(dev));
	ck_assert_int_eq(device_sync(dev), 0);
	ck_assert_int_eq(device_discard(dev, 65536, 65536), 0);
	ck_assert(!device_clean(dev));
	device_note_flushed(dev, 0);		/* an older flush ending late moves nothing back */
	ck_assert_int_eq(device_sync(dev), 0);
	ck_assert(device_clean(dev));
	device_note_flushed(dev, 0);
	ck_assert(device_clean(dev));
	device_close(dev);
	unlink(f.path);
}
END_TEST

START_TEST(a_write_through_one_open_of_a_file_is_flushed_through_another)
{
	struct fixture f;
	struct device *a, *b;
	char buf[512] = "x";

	make_file(&f);
	ck_assert_int_eq(device_open(f.path, 1, &a), 0);
	ck_assert_int_eq(device_open(f.path, 0, &b), 0);
	ck_assert_int_eq(device_sync(a), 0);
	ck_assert(device_clean(b));
	ck_assert_int_eq(device_write_at(b, buf, sizeof(buf), 0), 0);
	ck_assert(!device_clean(a));
	ck_assert_int_eq(device_sync(a), 0);
	ck_assert(device_clean(b));
	device_close(b);
	device_close(a);
	unlink(f.path);
}
END_TEST

static Suite *device_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("claim");
	TCase *flush = tcase_create("flush");

	tcase_add_test(tc, another_process_cannot_open_a_file_we_hold);
	tcase_add_test(tc, one_process_may_open_a_device_twice_and_holds_it_until_the_last_close);
	tcase_add_test(tc, the_refusal_names_the_holding_program_and_pid);
	tcase_add_test(tc, pools_may_share_an_origin_image_but_not_use_it_as_a_device);
	tcase_add_test(tc, a_shared_claim_becomes_exclusive_when_we_use_the_image_as_a_device);
	tcase_add_test(tc, other_errors_read_as_strerror);
	suite_add_tcase(s, tc);
	tcase_add_test(flush, a_flush_is_skipped_only_when_nothing_was_written_since_the_last);
	tcase_add_test(flush, a_write_through_one_open_of_a_file_is_flushed_through_another);
	suite_add_tcase(s, flush);
	return s;
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc == 3 && !strncmp(argv[1], "--open", 6)) {
		struct device *dev;
		int r = strcmp(argv[1], "--open-shared") ? device_open(argv[2], 0, &dev)
							 : device_open_shared(argv[2], &dev);

		if (!r)
			device_close(dev);
		return -r;
	}
	sr = srunner_create(device_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
