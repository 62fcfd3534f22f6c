/*
 * tests/unit/test_store.c: the pool database, opened, migrated and used
 * through store.h (SQLite directly only to forge foreign files, and
 * store_int.h to make SQLite abort a statement).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "migrate.h"
#include "store.h"
#include "store_int.h"
#include "store_switch.h"
#include "thin_store.h"

#define MiB (1ull << 20)

/*
 * Each test case gets a root directory, made and removed by the parent
 * (so it goes even when a test dies), and each test a directory in it.
 */
static char root[] = "/tmp/test_store.XXXXXX";
static char dir[64];
static char db_path[PATH_MAX];
static struct store *s;

static int remove_entry(const char *path, const struct stat *sb, int type,
			struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

static void make_root(void)
{
	strcpy(root, "/tmp/test_store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void remove_root(void)
{
	nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "%s/XXXXXX", root);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/pool.db", dir);
	s = NULL;
}

static void close_store(void)
{
	store_close(s);
}

/* A fresh pool in the test's directory. */
static void make_pool(void)
{
	make_dir();
	ck_assert_int_eq(store_open(db_path, STORE_CREATE, &s), 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Runs @sql on the file at db_path with SQLite itself. */
static void forge(const char *sql)
{
	sqlite3 *db;

	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static struct device_rec device(const char *name, const char *path,
				uint64_t size)
{
	struct device_rec d = { .size = size };

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.path, sizeof(d.path), "%s", path);
	ck_assert_int_eq(uuid_generate(&d.uuid), 0);
	return d;
}

static struct volume_rec volume(const char *name, const char *kind,
				uint64_t size)
{
	struct volume_rec v = { .size = size };

	snprintf(v.name, sizeof(v.name), "%s", name);
	snprintf(v.kind, sizeof(v.kind), "%s", kind);
	return v;
}

/* The row named @name, as the store lists it; 0 or -ENOENT. */
static int find_device(const char *name, struct device_rec *out)
{
	struct device_rec *list;
	size_t nr;
	int r = -ENOENT;

	ck_assert_int_eq(store_device_list(s, &list, &nr), 0);
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(list[i].name, name)) {
			*out = list[i];
			r = 0;
		}
	free(list);
	return r;
}

static int find_volume(const char *name, struct volume_rec *out)
{
	struct volume_rec *list;
	size_t nr;
	int r = -ENOENT;

	ck_assert_int_eq(store_volume_list(s, &list, &nr), 0);
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(list[i].name, name)) {
			*out = list[i];
			r = 0;
		}
	free(list);
	return r;
}

static void reopen(void)
{
	store_close(s);
	s = NULL;
	ck_assert_int_eq(store_open(db_path, 0, &s), 0);
}

/* Opening */

START_TEST(opening_a_missing_database_fails_with_enoent)
{
	ck_assert_int_eq(store_open(db_path, 0, &s), -ENOENT);
	ck_assert_int_eq(access(db_path, F_OK), -1);
}
END_TEST

START_TEST(creating_a_pool_makes_a_file_only_its_owner_can_read)
{
	mode_t old = umask(0);
	struct stat sb;

	ck_assert_int_eq(store_open(db_path, STORE_CREATE, &s), 0);
	umask(old);
	ck_assert_int_eq(stat(db_path, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 0777, 0600);
}
END_TEST

START_TEST(creating_over_an_existing_file_fails_with_eexist_and_keeps_it)
{
	struct stat sb;

	write_file(db_path, "precious");
	ck_assert_int_eq(store_open(db_path, STORE_CREATE, &s), -EEXIST);
	ck_assert_int_eq(stat(db_path, &sb), 0);
	ck_assert_int_eq(sb.st_size, 8);
}
END_TEST

START_TEST(schema_migrates_from_an_empty_file_to_the_latest_version)
{
	int version = -1;

	ck_assert_int_eq(store_open(db_path, STORE_CREATE, &s), 0);
	ck_assert_int_eq(store_schema_version(s, &version), 0);
	ck_assert_int_eq(version, migrate_latest());
	reopen();
	ck_assert_int_eq(store_schema_version(s, &version), 0);
	ck_assert_int_eq(version, migrate_latest());
}
END_TEST

START_TEST(pool_uuid_is_kept_across_opens)
{
	struct uuid a, b;

	ck_assert_int_eq(store_open(db_path, STORE_CREATE, &s), 0);
	ck_assert_int_eq(store_pool_uuid(s, &a), 0);
	reopen();
	ck_assert_int_eq(store_pool_uuid(s, &b), 0);
	ck_assert(uuid_equal(&a, &b));
}
END_TEST

START_TEST(garbage_file_is_refused_as_corrupt)
{
	char junk[4096];

	memset(junk, 'x', sizeof(junk) - 1);
	junk[sizeof(junk) - 1] = '\0';
	write_file(db_path, junk);
	ck_assert_int_eq(store_open(db_path, 0, &s), -EUCLEAN);
}
END_TEST

START_TEST(empty_file_is_refused_as_not_a_pool)
{
	write_file(db_path, "");
	ck_assert_int_eq(store_open(db_path, 0, &s), -EUCLEAN);
}
END_TEST

START_TEST(foreign_sqlite_database_is_refused_and_left_alone)
{
	struct stat before, after;

	forge("CREATE TABLE t (x); INSERT INTO t VALUES (1);");
	ck_assert_int_eq(stat(db_path, &before), 0);
	ck_assert_int_eq(store_open(db_path, 0, &s), -EUCLEAN);
	ck_assert_int_eq(stat(db_path, &after), 0);
	ck_assert_int_eq(before.st_size, after.st_size);
	ck_assert_int_eq(before.st_mtime, after.st_mtime);
}
END_TEST

START_TEST(foreign_database_with_a_user_version_is_refused)
{
	forge("CREATE TABLE t (x); PRAGMA user_version = 1;");
	ck_assert_int_eq(store_open(db_path, 0, &s), -EUCLEAN);
}
END_TEST

START_TEST(newer_schema_is_refused_with_eprotonosupport)
{
	ck_assert_int_eq(store_open(db_path, STORE_CREATE, &s), 0);
	store_close(s);
	s = NULL;
	forge("PRAGMA user_version = 99;");
	ck_assert_int_eq(store_open(db_path, 0, &s), -EPROTONOSUPPORT);
}
END_TEST

START_TEST(pool_without_its_pool_row_is_refused)
{
	ck_assert_int_eq(store_open(db_path, STORE_CREATE, &s), 0);
	store_close(s);
	s = NULL;
	forge("DELETE FROM pool;");
	ck_assert_int_eq(store_open(db_path, 0, &s), -EUCLEAN);
}
END_TEST

/* Devices */

START_TEST(device_reads_back_as_inserted)
{
	struct device_rec d = device("d0", "/dev/sdz", 64 * MiB), got;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_gt(d.id, 0);
	ck_assert_int_eq(find_device("d0", &got), 0);
	ck_assert_int_eq(got.id, d.id);
	ck_assert_str_eq(got.path, "/dev/sdz");
	ck_assert(uuid_equal(&got.uuid, &d.uuid));
	ck_assert_uint_eq(got.size, 64 * MiB);
}
END_TEST

START_TEST(duplicate_device_name_is_refused)
{
	struct device_rec a = device("d0", "/a", MiB), b = device("d0", "/b", MiB);

	ck_assert_int_eq(store_device_insert(s, &a), 0);
	ck_assert_int_eq(store_device_insert(s, &b), -EEXIST);
}
END_TEST

START_TEST(duplicate_device_path_is_refused)
{
	struct device_rec a = device("d0", "/a", MiB), b = device("d1", "/a", MiB);

	ck_assert_int_eq(store_device_insert(s, &a), 0);
	ck_assert_int_eq(store_device_insert(s, &b), -EEXIST);
}
END_TEST

START_TEST(unknown_device_is_enoent)
{
	ck_assert_int_eq(store_device_delete(s, 42), -ENOENT);
}
END_TEST

START_TEST(devices_are_listed_by_id)
{
	struct device_rec a = device("b", "/b", MiB), b = device("a", "/a", MiB);
	struct device_rec *list;
	size_t nr;

	ck_assert_int_eq(store_device_insert(s, &a), 0);
	ck_assert_int_eq(store_device_insert(s, &b), 0);
	ck_assert_int_eq(store_device_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	ck_assert_str_eq(list[0].name, "b");
	ck_assert_str_eq(list[1].name, "a");
	free(list);
}
END_TEST

START_TEST(deleting_a_used_device_is_refused)
{
	struct device_rec d = device("d0", "/a", 64 * MiB);
	struct volume_rec v = volume("v", "linear", MiB);
	struct extent_rec e;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	e = (struct extent_rec){ v.id, 0, d.id, MiB, MiB };
	ck_assert_int_eq(store_extent_insert(s, &e), 0);
	ck_assert_int_eq(store_device_delete(s, d.id), -EBUSY);
	ck_assert_int_eq(store_volume_delete(s, v.id), 0);
	ck_assert_int_eq(store_device_delete(s, d.id), 0);
}
END_TEST

/* Volumes */

START_TEST(volume_reads_back_as_inserted)
{
	struct volume_rec v = volume("vm1", "thin", 40 * MiB), got;

	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	ck_assert_int_eq(find_volume("vm1", &got), 0);
	ck_assert_int_eq(got.id, v.id);
	ck_assert_str_eq(got.kind, "thin");
	ck_assert_uint_eq(got.size, 40 * MiB);
	ck_assert_int_eq(store_volume_set_size(s, v.id, 80 * MiB), 0);
	ck_assert_int_eq(find_volume("vm1", &got), 0);
	ck_assert_uint_eq(got.size, 80 * MiB);
}
END_TEST

START_TEST(duplicate_volume_name_is_refused)
{
	struct volume_rec a = volume("v", "linear", MiB);
	struct volume_rec b = volume("v", "thin", MiB);

	ck_assert_int_eq(store_volume_insert(s, &a), 0);
	ck_assert_int_eq(store_volume_insert(s, &b), -EEXIST);
}
END_TEST

START_TEST(volume_of_unknown_kind_is_refused)
{
	struct volume_rec v = volume("v", "mirror", MiB);

	ck_assert_int_eq(store_volume_insert(s, &v), -EINVAL);
}
END_TEST

START_TEST(changing_an_unknown_volume_is_enoent)
{
	ck_assert_int_eq(store_volume_set_size(s, 7, MiB), -ENOENT);
	ck_assert_int_eq(store_volume_delete(s, 7), -ENOENT);
}
END_TEST

START_TEST(volume_ids_are_never_reused)
{
	struct volume_rec a = volume("a", "linear", MiB);
	struct volume_rec b = volume("b", "linear", MiB);
	int64_t first;

	ck_assert_int_eq(store_volume_insert(s, &a), 0);
	first = a.id;
	ck_assert_int_eq(store_volume_delete(s, a.id), 0);
	reopen();
	ck_assert_int_eq(store_volume_insert(s, &b), 0);
	ck_assert_int_gt(b.id, first);
}
END_TEST

START_TEST(volume_may_shrink_only_once_allowed_and_keeps_it)
{
	struct volume_rec v = volume("vm1", "linear", MiB), got;

	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	ck_assert_int_eq(find_volume("vm1", &got), 0);
	ck_assert(!got.allow_shrink);
	got.allow_shrink = true;
	ck_assert_int_eq(store_volume_update(s, &got), 0);
	reopen();
	ck_assert_int_eq(find_volume("vm1", &got), 0);
	ck_assert(got.allow_shrink && !got.read_only && !got.inactive);
}
END_TEST

START_TEST(empty_pool_lists_nothing)
{
	struct device_rec *d = (void *)1;
	struct volume_rec *v = (void *)1;
	struct extent_rec *e = (void *)1;
	size_t nr = 1;

	ck_assert_int_eq(store_device_list(s, &d, &nr), 0);
	ck_assert_ptr_null(d);
	ck_assert_uint_eq(nr, 0);
	ck_assert_int_eq(store_volume_list(s, &v, &nr), 0);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(store_extent_list(s, &e, &nr), 0);
	ck_assert_ptr_null(e);
}
END_TEST

/* Extents */

START_TEST(extents_are_listed_by_volume_then_seq)
{
	struct device_rec d = device("d0", "/a", 64 * MiB);
	struct volume_rec v = volume("v", "linear", 3 * MiB);
	struct volume_rec w = volume("w", "linear", MiB);
	struct extent_rec *list, e;
	size_t nr;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	ck_assert_int_eq(store_volume_insert(s, &w), 0);
	e = (struct extent_rec){ w.id, 0, d.id, 20 * MiB, MiB };
	ck_assert_int_eq(store_extent_insert(s, &e), 0);
	/* seq 0 lies after seq 1 on the device */
	for (uint32_t seq = 3; seq-- > 0;) {
		e = (struct extent_rec){ v.id, seq, d.id, (8 - 3 * seq) * MiB, MiB };
		ck_assert_int_eq(store_extent_insert(s, &e), 0);
	}
	ck_assert_int_eq(store_extent_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 4);
	for (uint32_t i = 0; i < 3; i++) {
		ck_assert_int_eq(list[i].volume, v.id);
		ck_assert_uint_eq(list[i].seq, i);
	}
	ck_assert_uint_eq(list[0].dev_offset, 8 * MiB);
	ck_assert_uint_eq(list[0].length, MiB);
	ck_assert_int_eq(list[3].volume, w.id);
	free(list);
}
END_TEST

START_TEST(duplicate_extent_seq_is_refused)
{
	struct device_rec d = device("d0", "/a", 64 * MiB);
	struct volume_rec v = volume("v", "linear", 2 * MiB);
	struct extent_rec e;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	e = (struct extent_rec){ v.id, 0, d.id, MiB, MiB };
	ck_assert_int_eq(store_extent_insert(s, &e), 0);
	e.dev_offset = 2 * MiB;
	ck_assert_int_eq(store_extent_insert(s, &e), -EEXIST);
}
END_TEST

START_TEST(extent_naming_a_missing_volume_or_device_is_enoent)
{
	struct device_rec d = device("d0", "/a", 64 * MiB);
	struct volume_rec v = volume("v", "linear", MiB);
	struct extent_rec e;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	e = (struct extent_rec){ v.id + 1, 0, d.id, MiB, MiB };
	ck_assert_int_eq(store_extent_insert(s, &e), -ENOENT);
	e = (struct extent_rec){ v.id, 0, d.id + 1, MiB, MiB };
	ck_assert_int_eq(store_extent_insert(s, &e), -ENOENT);
}
END_TEST

START_TEST(deleting_a_volume_deletes_its_extents)
{
	struct device_rec d = device("d0", "/a", 64 * MiB);
	struct volume_rec v = volume("v", "linear", MiB);
	struct extent_rec e, *list;
	size_t nr;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	e = (struct extent_rec){ v.id, 0, d.id, MiB, MiB };
	ck_assert_int_eq(store_extent_insert(s, &e), 0);
	ck_assert_int_eq(store_volume_delete(s, v.id), 0);
	ck_assert_int_eq(store_extent_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 0);
}
END_TEST

START_TEST(extent_length_changes_and_extent_goes_alone)
{
	struct device_rec d = device("d0", "/a", 64 * MiB);
	struct volume_rec v = volume("v", "linear", 3 * MiB);
	struct extent_rec e, *list;
	size_t nr;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	for (uint32_t seq = 0; seq < 2; seq++) {
		e = (struct extent_rec){ v.id, seq, d.id, (1 + 4 * seq) * MiB, 2 * MiB };
		ck_assert_int_eq(store_extent_insert(s, &e), 0);
	}
	ck_assert_int_eq(store_extent_set_length(s, v.id, 0, MiB), 0);
	ck_assert_int_eq(store_extent_delete(s, v.id, 1, 1), 0);
	ck_assert_int_eq(store_extent_delete(s, v.id, 1, 1), 0);	/* a range: none left is fine */
	ck_assert_int_eq(store_extent_set_length(s, v.id, 7, MiB), -ENOENT);
	ck_assert_int_eq(store_extent_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	ck_assert_uint_eq(list[0].length, MiB);
	free(list);
}
END_TEST

START_TEST(stripe_row_reads_back_and_goes_with_its_volume)
{
	struct volume_rec v = volume("v", "linear", 4 * MiB);
	struct stripe_rec r, *list;
	size_t nr;

	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	r = (struct stripe_rec){ v.id, 4, 65536 };
	ck_assert_int_eq(store_stripe_insert(s, &r), 0);
	r.volume = v.id + 1;
	ck_assert_int_eq(store_stripe_insert(s, &r), -ENOENT);
	r = (struct stripe_rec){ v.id, 4, 65536 + 4096 };	/* not a power of two */
	ck_assert_int_lt(store_stripe_insert(s, &r), 0);
	ck_assert_int_eq(store_stripe_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	ck_assert(list[0].volume == v.id && list[0].stripes == 4 && list[0].stripe_size == 65536);
	free(list);
	ck_assert_int_eq(store_volume_delete(s, v.id), 0);
	ck_assert_int_eq(store_stripe_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 0);
}
END_TEST

START_TEST(switch_path_moves_to_a_new_place_and_keeps_its_index)
{
	struct device_rec d0 = device("d0", "/a", 64 * MiB), d1 = device("d1", "/b", 64 * MiB);
	struct volume_rec v = volume("sw", "switch", 4 * MiB);
	struct switch_path_rec paths[2], *list;
	struct switch_rec sw;
	uint8_t table[8] = { 0 };
	size_t nr;

	ck_assert_int_eq(store_device_insert(s, &d0), 0);
	ck_assert_int_eq(store_device_insert(s, &d1), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	sw = (struct switch_rec){ .volume = v.id, .region_size = MiB, .nr_regions = 4,
				  .nr_paths = 2, .entry_bits = 1 };
	paths[0] = (struct switch_path_rec){ v.id, 0, d0.id, MiB };
	paths[1] = (struct switch_path_rec){ v.id, 1, d0.id, 5 * MiB };
	ck_assert_int_eq(store_switch_insert(s, &sw, paths, table, sizeof(table)), 0);
	ck_assert_int_eq(store_switch_path_set(s, v.id, 1, d1.id, 9 * MiB), 0);
	ck_assert_int_eq(store_switch_path_set(s, v.id, 2, d1.id, 9 * MiB), -ENOENT);
	ck_assert_int_eq(store_switch_path_set(s, v.id + 1, 0, d1.id, 9 * MiB), -ENOENT);
	ck_assert_int_eq(store_switch_path_set(s, v.id, 0, d1.id + 1, 9 * MiB), -ENOENT);
	ck_assert_int_eq(store_switch_path_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	ck_assert(list[0].idx == 0 && list[0].device == d0.id && list[0].dev_offset == MiB);
	ck_assert(list[1].idx == 1 && list[1].device == d1.id && list[1].dev_offset == 9 * MiB);
	free(list);
	ck_assert_int_eq(store_device_delete(s, d1.id), -EBUSY);	/* the path names it now */
}
END_TEST

static struct tag_rec tag(enum tag_owner on, int64_t owner, const char *name)
{
	struct tag_rec t = { .on = on, .owner = owner };

	snprintf(t.tag, sizeof(t.tag), "%s", name);
	return t;
}

START_TEST(tags_are_listed_by_owner_and_go_with_it)
{
	struct device_rec d = device("d0", "/a", 64 * MiB);
	struct volume_rec v = volume("v", "linear", MiB), w = volume("w", "linear", MiB);
	struct tag_rec t, *list;
	size_t nr;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	ck_assert_int_eq(store_volume_insert(s, &w), 0);
	t = tag(TAG_ON_VOLUME, w.id, "vm");
	ck_assert_int_eq(store_tag_add(s, &t), 0);
	ck_assert_int_eq(store_tag_add(s, &t), 0);		/* twice: one row */
	t = tag(TAG_ON_VOLUME, v.id, "web");
	ck_assert_int_eq(store_tag_add(s, &t), 0);
	t = tag(TAG_ON_VOLUME, v.id, "db");
	ck_assert_int_eq(store_tag_add(s, &t), 0);
	t = tag(TAG_ON_DEVICE, d.id, "ssd");
	ck_assert_int_eq(store_tag_add(s, &t), 0);
	t = tag(TAG_ON_DEVICE, d.id + 1, "ssd");
	ck_assert_int_eq(store_tag_add(s, &t), -ENOENT);
	t = tag(TAG_ON_VOLUME, v.id, "never");
	ck_assert_int_eq(store_tag_delete(s, &t), 0);
	reopen();
	ck_assert_int_eq(store_tag_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 4);
	ck_assert(list[0].on == TAG_ON_VOLUME && list[0].owner == v.id);
	ck_assert_str_eq(list[0].tag, "db");
	ck_assert_str_eq(list[1].tag, "web");
	ck_assert(list[2].owner == w.id && !strcmp(list[2].tag, "vm"));
	ck_assert(list[3].on == TAG_ON_DEVICE && list[3].owner == d.id);
	free(list);
	ck_assert_int_eq(store_volume_delete(s, v.id), 0);
	ck_assert_int_eq(store_device_delete(s, d.id), 0);
	ck_assert_int_eq(store_tag_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	ck_assert_str_eq(list[0].tag, "vm");
	free(list);
}
END_TEST

static struct export_rec export_of(int64_t volume, enum export_transport t, const char *address)
{
	struct export_rec e = { .volume = volume, .transport = t };

	snprintf(e.address, sizeof(e.address), "%s", address);
	return e;
}

START_TEST(exports_read_back_one_per_volume_and_address_and_go_with_their_volume)
{
	struct volume_rec v = volume("v", "thin", MiB), w = volume("w", "thin", MiB);
	struct export_rec e, *list;
	size_t nr;

	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	ck_assert_int_eq(store_volume_insert(s, &w), 0);
	e = export_of(w.id, EXPORT_TCP, "127.0.0.1:10809");
	e.read_only = true;
	ck_assert_int_eq(store_export_insert(s, &e), 0);
	e = export_of(v.id, EXPORT_UNIX, "/run/v.sock");
	ck_assert_int_eq(store_export_insert(s, &e), 0);
	e = export_of(v.id, EXPORT_UNIX, "/run/v2.sock");
	ck_assert_int_eq(store_export_insert(s, &e), -EEXIST);		/* one per volume */
	e = export_of(w.id + 1, EXPORT_TCP, "127.0.0.1:10810");
	ck_assert_int_eq(store_export_insert(s, &e), -ENOENT);		/* no such volume */
	ck_assert_int_eq(store_volume_delete(s, w.id), 0);
	e = export_of(v.id + 2, EXPORT_TCP, "127.0.0.1:10809");	/* its address is free again */
	ck_assert_int_eq(store_export_insert(s, &e), -ENOENT);
	w = volume("w2", "thin", MiB);
	ck_assert_int_eq(store_volume_insert(s, &w), 0);
	e = export_of(w.id, EXPORT_UNIX, "/run/v.sock");
	ck_assert_int_eq(store_export_insert(s, &e), -EEXIST);		/* one per address */
	reopen();
	ck_assert_int_eq(store_export_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 1);				/* w's went with it */
	ck_assert(list[0].volume == v.id && list[0].transport == EXPORT_UNIX && !list[0].read_only);
	ck_assert_str_eq(list[0].address, "/run/v.sock");
	free(list);
	ck_assert_int_eq(store_export_delete(s, v.id), 0);
	ck_assert_int_eq(store_export_delete(s, v.id), -ENOENT);
	ck_assert_int_eq(store_export_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 0);
	free(list);
}
END_TEST

START_TEST(a_tcp_export_keeps_its_read_only_flag)
{
	struct volume_rec v = volume("v", "linear", MiB);
	struct export_rec e, *list;
	size_t nr;

	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	e = export_of(v.id, EXPORT_TCP, "[::1]:10809");
	e.read_only = true;
	ck_assert_int_eq(store_export_insert(s, &e), 0);
	ck_assert_int_eq(store_export_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	ck_assert(list[0].transport == EXPORT_TCP && list[0].read_only);
	ck_assert_str_eq(list[0].address, "[::1]:10809");
	free(list);
}
END_TEST

/* Transactions */

START_TEST(rolled_back_transaction_leaves_nothing)
{
	struct volume_rec v = volume("v", "linear", MiB), got;

	ck_assert_int_eq(store_begin(s), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	store_rollback(s);
	ck_assert_int_eq(find_volume("v", &got), -ENOENT);
	store_rollback(s);	/* outside a transaction: nothing happens */
}
END_TEST

static int interrupt_at_once(void *arg)
{
	(void)arg;
	return 1;
}

START_TEST(interrupted_statement_is_ecanceled)
{
	struct device_rec d = device("d0", "/a", MiB), *list;
	size_t nr;

	ck_assert_int_eq(store_device_insert(s, &d), 0);
	sqlite3_progress_handler(s->db, 1, interrupt_at_once, NULL);
	ck_assert_int_eq(store_device_list(s, &list, &nr), -ECANCELED);
	sqlite3_progress_handler(s->db, 0, NULL, NULL);
	ck_assert_int_eq(store_device_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	free(list);
}
END_TEST

/* A rollback that undoes a schema change aborts the reads under way. */
START_TEST(read_cut_off_by_a_rollback_is_ecanceled)
{
	struct device_rec a = device("a", "/a", MiB), b = device("b", "/b", MiB), got;
	sqlite3_stmt *st;

	ck_assert_int_eq(store_begin(s), 0);
	ck_assert_int_eq(store_device_insert(s, &a), 0);
	ck_assert_int_eq(store_device_insert(s, &b), 0);
	ck_assert_int_eq(store_exec(s, "CREATE TABLE scratch (x)"), 0);
	ck_assert_int_eq(store_stmt(s, "SELECT name FROM device", &st), 0);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	store_rollback(s);
	ck_assert_int_eq(store_error(s, sqlite3_step(st)), -ECANCELED);
	store_stmt_done(st);
	ck_assert_int_eq(find_device("a", &got), -ENOENT);
}
END_TEST

START_TEST(committed_transaction_survives_reopening)
{
	struct volume_rec v = volume("v", "linear", MiB), got;

	ck_assert_int_eq(store_begin(s), 0);
	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	ck_assert_int_eq(store_commit(s), 0);
	reopen();
	ck_assert_int_eq(find_volume("v", &got), 0);
	ck_assert_int_eq(got.id, v.id);
}
END_TEST

/* Thin pools (schema versions 2 and 4) */

/* A thin pool volume with @rec's policies; returns its id. */
static int64_t make_thin_pool(const char *name, struct thin_pool_rec *rec)
{
	struct volume_rec v = volume(name, "thin-pool", 64 * MiB);

	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	rec->volume = v.id;
	ck_assert_int_eq(store_thin_pool_insert(s, rec), 0);
	return v.id;
}

static struct thin_pool_rec thin_pool_row_of(int64_t id)
{
	struct thin_pool_rec *list, got = { 0 };
	size_t nr;

	ck_assert_int_eq(store_thin_pool_list(s, &list, &nr), 0);
	for (size_t i = 0; i < nr; i++)
		if (list[i].volume == id)
			got = list[i];
	free(list);
	ck_assert_int_eq(got.volume, id);
	return got;
}

START_TEST(thin_pool_policies_read_back_and_change)
{
	struct thin_pool_rec rec = { .block_size = 65536, .zero = true, .low_water = 10,
				     .discard_passdown = true, .autoextend_threshold = 70,
				     .autoextend_percent = 20, .metadata_limit = 1 << 20 }, got;
	int64_t id;

	snprintf(rec.on_event, sizeof(rec.on_event), "logger -t pool \"$MAPPERFS_EVENT\"");
	id = make_thin_pool("tp", &rec);
	got = thin_pool_row_of(id);
	ck_assert(got.discard_passdown);
	ck_assert_uint_eq(got.autoextend_threshold, 70);
	ck_assert_uint_eq(got.metadata_limit, 1 << 20);
	ck_assert_str_eq(got.on_event, rec.on_event);
	rec.discard_passdown = false;
	rec.autoextend_threshold = 100;
	rec.on_event[0] = '\0';
	rec.zero = false;
	rec.wait = true;
	rec.wait_seconds = 30;
	rec.low_water = 25;
	ck_assert_int_eq(store_thin_pool_update(s, &rec), 0);
	reopen();
	got = thin_pool_row_of(id);
	ck_assert(!got.discard_passdown);
	ck_assert_uint_eq(got.autoextend_threshold, 100);
	ck_assert_str_eq(got.on_event, "");
	ck_assert(!got.zero);
	ck_assert(got.wait);
	ck_assert_uint_eq(got.wait_seconds, 30);
	ck_assert_uint_eq(got.low_water, 25);
}
END_TEST

/* The bytes of the fields of space chunk @chunk of @pool as stored. */
static int fields_bytes(int64_t pool, uint64_t chunk)
{
	sqlite3_stmt *st;
	int n = -1;

	ck_assert_int_eq(sqlite3_prepare_v2(s->db, "SELECT length(fields) FROM thin_space"
					    " WHERE pool = ? AND chunk = ?", -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_int64(st, 1, pool);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)chunk);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

#define SPACE_CHUNKS	4

struct space_seen {
	uint64_t words[SPACE_CHUNKS][THIN_SPACE_CHUNK_WORDS];
	size_t nr;
};

static int see_chunk(void *ctx, const struct thin_space_rec *rec)
{
	struct space_seen *seen = ctx;

	ck_assert_uint_lt(rec->chunk, SPACE_CHUNKS);
	memcpy(seen->words[rec->chunk], rec->fields, sizeof(seen->words[0]));
	seen->nr++;
	return 0;
}

/*
 * A space map chunk is kept as runs of equal words where that is shorter
 * (one run of 9 bytes; 113 runs in 1017), else as its 1024 bytes, and
 * reads back the same either way; runs that do not make a chunk are
 * damage.
 */
START_TEST(space_chunks_are_kept_as_runs_of_equal_words_when_shorter)
{
	static const int bytes[SPACE_CHUNKS] = { 9, 18, 1024, 1017 };
	static struct space_seen want, seen;
	struct thin_pool_rec rec = { .block_size = 65536, .autoextend_threshold = 100 };
	int64_t id = make_thin_pool("tp", &rec);

	for (unsigned int i = 0; i < THIN_SPACE_CHUNK_WORDS; i++) {
		want.words[0][i] = 0x5555555555555555ull;	/* every block used once */
		want.words[1][i] = i < 100 ? 0x5555555555555555ull : 0;
		want.words[2][i] = i & 1;			/* 128 runs */
		want.words[3][i] = i < 112 ? i + 1 : 0;		/* 113 runs */
	}
	for (uint64_t c = 0; c < SPACE_CHUNKS; c++) {
		struct thin_space_rec chunk = { .chunk = c, .fields = want.words[c] };

		ck_assert_int_eq(store_thin_space_put(s, id, &chunk), 0);
		ck_assert_int_eq(fields_bytes(id, c), bytes[c]);
	}
	reopen();
	ck_assert_int_eq(store_thin_space_each(s, id, see_chunk, &seen), 0);
	ck_assert_uint_eq(seen.nr, SPACE_CHUNKS);
	ck_assert_int_eq(memcmp(seen.words, want.words, sizeof(want.words)), 0);
	ck_assert_int_eq(sqlite3_exec(s->db, "UPDATE thin_space SET fields = substr(fields, 1, 9)"
				      " WHERE chunk = 1", NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(store_thin_space_each(s, id, see_chunk, &seen), -EUCLEAN);
}
END_TEST

START_TEST(autoextend_threshold_below_50_is_refused)
{
	struct thin_pool_rec rec = { .block_size = 65536, .autoextend_threshold = 49 };
	struct volume_rec v = volume("tp", "thin-pool", 64 * MiB);

	ck_assert_int_eq(store_volume_insert(s, &v), 0);
	rec.volume = v.id;
	ck_assert_int_ne(store_thin_pool_insert(s, &rec), 0);
}
END_TEST

START_TEST(snapshot_origin_is_forgotten_with_its_volume)
{
	struct thin_pool_rec pool = { .block_size = 65536, .autoextend_threshold = 100 };
	struct volume_rec a = volume("a", "thin", MiB), b = volume("b", "thin", MiB);
	struct thin_rec *list;
	struct thin_vol_rec *vols;
	size_t nr;
	int64_t tp = make_thin_pool("tp", &pool);

	ck_assert_int_eq(store_volume_insert(s, &a), 0);
	ck_assert_int_eq(store_volume_insert(s, &b), 0);
	ck_assert_int_eq(store_thin_put(s, &(struct thin_rec){ a.id, tp, 5, 0 }), 0);
	ck_assert_int_eq(store_thin_put(s, &(struct thin_rec){ b.id, tp, 5, a.id }), 0);
	ck_assert_int_eq(store_thin_vols_of(s, tp, &vols, &nr), 0);
	ck_assert_uint_eq(nr, 2);
	ck_assert_int_eq(vols[1].dir, 5);
	free(vols);
	ck_assert_int_eq(store_volume_delete(s, a.id), 0);
	ck_assert_int_eq(store_thin_list(s, &list, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	ck_assert_int_eq(list[0].volume, b.id);
	ck_assert_int_eq(list[0].snapshot_of, 0);
	free(list);
}
END_TEST

START_TEST(deleting_a_pools_pages_leaves_other_pools_pages)
{
	struct thin_pool_rec p1 = { .block_size = 65536, .autoextend_threshold = 100 }, p2 = p1;
	struct thin_leaf_rec leaf = { .id = 1 };
	int64_t a = make_thin_pool("a", &p1), b = make_thin_pool("b", &p2);
	int64_t *ids;
	size_t nr;

	ck_assert_int_eq(store_thin_leaf_put(s, a, &leaf), 0);
	ck_assert_int_eq(store_thin_leaf_put(s, b, &leaf), 0);
	ck_assert_int_eq(store_thin_pages_delete(s, a), 0);
	ck_assert_int_eq(store_thin_leaf_ids(s, a, &ids, &nr), 0);
	ck_assert_uint_eq(nr, 0);
	free(ids);
	ck_assert_int_eq(store_thin_leaf_ids(s, b, &ids, &nr), 0);
	ck_assert_uint_eq(nr, 1);
	free(ids);
}
END_TEST

START_TEST(a_directory_written_again_reads_back_its_new_slots_and_count)
{
	struct thin_pool_rec p1 = { .block_size = 65536, .autoextend_threshold = 100 };
	int64_t a = make_thin_pool("a", &p1), slots[3] = { 7, 0, 9 };
	struct thin_dir_rec d = { .id = 4, .nr = 3, .leaves = slots }, got;

	ck_assert_int_eq(store_thin_dir_put(s, a, &d), 0);	/* new: inserted */
	slots[1] = 8;
	d.mapped_known = true;
	d.mapped = 1000;
	ck_assert_int_eq(store_thin_dir_put(s, a, &d), 0);	/* grows by the count */
	ck_assert_int_eq(store_thin_dir_get(s, a, 4, &got), 0);
	ck_assert_uint_eq(got.nr, 3);
	ck_assert_int_eq(got.leaves[1], 8);
	ck_assert(got.mapped_known);
	ck_assert_uint_eq(got.mapped, 1000);
	free(got.leaves);
	slots[2] = 0;
	d.mapped = 999;
	ck_assert_int_eq(store_thin_dir_put(s, a, &d), 0);	/* same size: in place */
	ck_assert_int_eq(store_thin_dir_get(s, a, 4, &got), 0);
	ck_assert_int_eq(got.leaves[0], 7);
	ck_assert_int_eq(got.leaves[2], 0);
	ck_assert_uint_eq(got.mapped, 999);
	free(got.leaves);
	d.mapped_known = false;
	ck_assert_int_eq(store_thin_dir_put(s, a, &d), 0);	/* the count unknown again */
	ck_assert_int_eq(store_thin_dir_get(s, a, 4, &got), 0);
	ck_assert(!got.mapped_known);
	free(got.leaves);
}
END_TEST

/* Three chunks of slots; the second and third written, the first kept. */
START_TEST(a_directory_written_by_its_changed_chunks_keeps_the_others)
{
	struct thin_pool_rec p1 = { .block_size = 65536, .autoextend_threshold = 100 };
	int64_t a = make_thin_pool("a", &p1);
	uint32_t nr = 2 * THIN_DIR_CHUNK + 5;
	int64_t *slots = calloc(nr, sizeof(*slots));
	uint64_t changed = 0x6;
	struct thin_dir_rec d = { .id = 4, .nr = nr, .leaves = slots }, got;

	for (uint32_t i = 0; i < nr; i++)
		slots[i] = i + 1;
	ck_assert_int_eq(store_thin_dir_put(s, a, &d), 0);
	for (uint32_t i = 0; i < nr; i++)
		slots[i] = i < THIN_DIR_CHUNK ? -1 : 2 * (int64_t)i;	/* -1: never written */
	d.mapped_known = true;
	d.mapped = 77;
	ck_assert_int_eq(store_thin_dir_put_changed(s, a, &d, &changed), 0);
	ck_assert_int_eq(store_thin_dir_get(s, a, 4, &got), 0);
	ck_assert_uint_eq(got.nr, nr);
	for (uint32_t i = 0; i < nr; i++)
		ck_assert_int_eq(got.leaves[i], i < THIN_DIR_CHUNK ? i + 1 : 2 * (int64_t)i);
	ck_assert(got.mapped_known);
	ck_assert_uint_eq(got.mapped, 77);
	free(got.leaves);
	d.id = 5;				/* no such row */
	ck_assert_int_eq(store_thin_dir_put_changed(s, a, &d, &changed), -EUCLEAN);
	d.id = 4;
	d.nr = nr - 1;				/* a row of another length */
	ck_assert_int_eq(store_thin_dir_put_changed(s, a, &d, &changed), -EUCLEAN);
	free(slots);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *suite = suite_create("store");
	TCase *open = tcase_create("open");
	TCase *rows = tcase_create("rows");

	tcase_add_unchecked_fixture(open, make_root, remove_root);
	tcase_add_checked_fixture(open, make_dir, close_store);
	tcase_add_test(open, opening_a_missing_database_fails_with_enoent);
	tcase_add_test(open, creating_a_pool_makes_a_file_only_its_owner_can_read);
	tcase_add_test(open, creating_over_an_existing_file_fails_with_eexist_and_keeps_it);
	tcase_add_test(open, schema_migrates_from_an_empty_file_to_the_latest_version);
	tcase_add_test(open, pool_uuid_is_kept_across_opens);
	tcase_add_test(open, garbage_file_is_refused_as_corrupt);
	tcase_add_test(open, empty_file_is_refused_as_not_a_pool);
	tcase_add_test(open, foreign_sqlite_database_is_refused_and_left_alone);
	tcase_add_test(open, foreign_database_with_a_user_version_is_refused);
	tcase_add_test(open, newer_schema_is_refused_with_eprotonosupport);
	tcase_add_test(open, pool_without_its_pool_row_is_refused);
	suite_add_tcase(suite, open);

	tcase_add_unchecked_fixture(rows, make_root, remove_root);
	tcase_add_checked_fixture(rows, make_pool, close_store);
	tcase_add_test(rows, device_reads_back_as_inserted);
	tcase_add_test(rows, duplicate_device_name_is_refused);
	tcase_add_test(rows, duplicate_device_path_is_refused);
	tcase_add_test(rows, unknown_device_is_enoent);
	tcase_add_test(rows, devices_are_listed_by_id);
	tcase_add_test(rows, deleting_a_used_device_is_refused);
	tcase_add_test(rows, volume_reads_back_as_inserted);
	tcase_add_test(rows, duplicate_volume_name_is_refused);
	tcase_add_test(rows, volume_of_unknown_kind_is_refused);
	tcase_add_test(rows, changing_an_unknown_volume_is_enoent);
	tcase_add_test(rows, volume_ids_are_never_reused);
	tcase_add_test(rows, volume_may_shrink_only_once_allowed_and_keeps_it);
	tcase_add_test(rows, empty_pool_lists_nothing);
	tcase_add_test(rows, extent_length_changes_and_extent_goes_alone);
	tcase_add_test(rows, stripe_row_reads_back_and_goes_with_its_volume);
	tcase_add_test(rows, switch_path_moves_to_a_new_place_and_keeps_its_index);
	tcase_add_test(rows, extents_are_listed_by_volume_then_seq);
	tcase_add_test(rows, duplicate_extent_seq_is_refused);
	tcase_add_test(rows, extent_naming_a_missing_volume_or_device_is_enoent);
	tcase_add_test(rows, deleting_a_volume_deletes_its_extents);
	tcase_add_test(rows, tags_are_listed_by_owner_and_go_with_it);
	tcase_add_test(rows, exports_read_back_one_per_volume_and_address_and_go_with_their_volume);
	tcase_add_test(rows, a_tcp_export_keeps_its_read_only_flag);
	tcase_add_test(rows, rolled_back_transaction_leaves_nothing);
	tcase_add_test(rows, interrupted_statement_is_ecanceled);
	tcase_add_test(rows, read_cut_off_by_a_rollback_is_ecanceled);
	tcase_add_test(rows, committed_transaction_survives_reopening);
	tcase_add_test(rows, thin_pool_policies_read_back_and_change);
	tcase_add_test(rows, space_chunks_are_kept_as_runs_of_equal_words_when_shorter);
	tcase_add_test(rows, autoextend_threshold_below_50_is_refused);
	tcase_add_test(rows, snapshot_origin_is_forgotten_with_its_volume);
	tcase_add_test(rows, deleting_a_pools_pages_leaves_other_pools_pages);
	tcase_add_test(rows, a_directory_written_again_reads_back_its_new_slots_and_count);
	tcase_add_test(rows, a_directory_written_by_its_changed_chunks_keeps_the_others);
	suite_add_tcase(suite, rows);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(store_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
