/*
 * tests/unit/test_store_vfs.c: with the write log on, the pool database
 * is opened through the recording VFS, and its log is complete: the
 * database rebuilt from the log alone holds what was committed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cut.h"
#include "store.h"
#include "wlog.h"
#include "writelog.h"

static char dir[] = "/tmp/test_store_vfs.XXXXXX";
static char pool[256], log_dir[256], base[256], out[256];
static char db_path[PATH_MAX];

static void make_dirs(void)
{
	strcpy(dir, "/tmp/test_store_vfs.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(pool, sizeof(pool), "%s/pool", dir);
	snprintf(log_dir, sizeof(log_dir), "%s/log", dir);
	snprintf(base, sizeof(base), "%s/base", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(db_path, sizeof(db_path), "%s/pool.db", pool);
	ck_assert_int_eq(mkdir(pool, 0700), 0);
	ck_assert_int_eq(mkdir(base, 0700), 0);
	ck_assert_int_eq(mkdir(out, 0700), 0);
}

static void remove_dirs(void)
{
	char cmd[PATH_MAX + 16];

	writelog_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A new pool with one device row, all of it recorded. */
static void make_recorded_pool(void)
{
	struct device_rec d = { .name = "d0", .path = "/dev/null", .size = 1 << 20 };
	struct store *s;

	ck_assert_int_eq(writelog_start(log_dir, 0), 0);
	ck_assert_int_eq(store_open(db_path, STORE_CREATE, &s), 0);
	ck_assert_int_eq(store_begin(s), 0);
	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_eq(store_commit(s), 0);
	store_close(s);
	writelog_stop();
}

/* Is there a record of @type on the file named @suffix (after the pool dir)? */
static int count(const struct wlog *w, uint32_t type, const char *suffix)
{
	char want[PATH_MAX];
	int n = 0;

	snprintf(want, sizeof(want), "%s%s", pool, suffix);
	for (uint64_t p = 1; p < w->nr; p++) {
		const struct writelog_rec *r = &w->rec[p];
		char *name = type == WRITELOG_DELETE ? wlog_name(w, r) : wlog_file_name(w, r->file);

		if (r->type == type && name && !strcmp(name, want))
			n++;
		free(name);
	}
	return n;
}

START_TEST(database_and_wal_writes_and_syncs_are_recorded)
{
	struct wlog w;

	make_recorded_pool();
	ck_assert_int_eq(wlog_open(log_dir, &w), 0);
	ck_assert_int_ge(count(&w, WRITELOG_WRITE, "/pool.db-wal"), 1);
	ck_assert_int_ge(count(&w, WRITELOG_FLUSH, "/pool.db-wal"), 1);
	ck_assert_int_ge(count(&w, WRITELOG_WRITE, "/pool.db"), 1);	/* the checkpoint */
	ck_assert_int_ge(count(&w, WRITELOG_FLUSH, "/pool.db"), 1);
	ck_assert_int_eq(count(&w, WRITELOG_DELETE, "/pool.db-wal"), 1);
	ck_assert_int_eq(count(&w, WRITELOG_WRITE, "/pool.db-shm"), 0);
	wlog_close(&w);
}
END_TEST

START_TEST(database_rebuilt_from_the_log_holds_what_was_committed)
{
	struct cut_files files;
	struct cut_stats st;
	struct device_rec *d;
	struct store *s;
	struct wlog w;
	char path[PATH_MAX];
	size_t nr;

	make_recorded_pool();
	ck_assert_int_eq(wlog_open(log_dir, &w), 0);
	ck_assert_int_eq(cut_files_load(&w, pool, &files), 0);
	ck_assert_int_eq(cut_build(&files, base, out, w.nr, 1, CUT_NOTHING_LANDS, &st), 0);
	cut_files_release(&files);
	wlog_close(&w);
	snprintf(path, sizeof(path), "%s/pool.db", out);
	ck_assert_int_eq(store_open(path, 0, &s), 0);
	ck_assert_int_eq(store_device_list(s, &d, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	ck_assert_str_eq(d[0].name, "d0");
	ck_assert_str_eq(d[0].path, "/dev/null");
	free(d);
	store_close(s);
}
END_TEST

static Suite *store_vfs_suite(void)
{
	Suite *s = suite_create("store_vfs");
	TCase *tc = tcase_create("recording");

	tcase_add_checked_fixture(tc, make_dirs, remove_dirs);
	tcase_add_test(tc, database_and_wal_writes_and_syncs_are_recorded);
	tcase_add_test(tc, database_rebuilt_from_the_log_holds_what_was_committed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(store_vfs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
