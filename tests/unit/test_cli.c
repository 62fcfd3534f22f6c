/*
 * tests/unit/test_cli.c: the commands as both hosts run them, through
 * cmd_dispatch() on a real pool (the service over a real database, raw
 * devices in files), with the output caught in memory; what they made
 * durable is read back from the database on a connection of its own.
 * And the control channel's framing over a socketpair.
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "device.h"
#include "json.h"
#include "log.h"
#include "pool_int.h"
#include "pool_port.h"
#include "rcu.h"
#include "store.h"
#include "volset.h"
#include "volume.h"
#include "wire.h"

#define MiB (1ull << 20)

static char root[] = "/tmp/test_cli.XXXXXX";
static char dir[64];
static struct pool *pool;
static char *out, *err;

static int remove_entry(const char *path, const struct stat *sb, int type,
			struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

static void make_root(void)
{
	strcpy(root, "/tmp/test_cli.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void remove_root(void)
{
	nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Runs a command as mapperctl does, which opens the files it names. */
static int run_words(const char **words)
{
	struct cmd_ctx ctx = {
		.pool = pool,
		.pool_dir = dir,
		.open_meta = pool_port_open,
		.input = -1,
		.output = -1,
	};
	struct cmd_output output = CMD_OUTPUT_INIT;
	const struct cmd *c;
	struct pool_error e;
	size_t out_len, err_len;
	char *argv[64];
	int argc = 0, status, words_used;

	while (words[argc]) {
		argv[argc] = (char *)words[argc];
		argc++;
	}
	free(out);
	free(err);
	ctx.out = open_memstream(&out, &out_len);
	ctx.err = open_memstream(&err, &err_len);
	c = cmd_find(argc, argv, &words_used);
	if (c && !cmd_help_requested(argc - words_used, argv + words_used)) {
		ck_assert_int_eq(cmd_open_input(c, argc - words_used + 1, argv + words_used - 1,
						&ctx.input, &e), 0);
		ck_assert_int_eq(cmd_open_output(c, dir, argc - words_used + 1,
						 argv + words_used - 1, &output, &e), 0);
		ctx.output = output.fd;
	}
	status = cmd_dispatch(&ctx, argc, argv);
	ck_assert_int_eq(cmd_close_output(&output, status, &e), 0);
	if (ctx.input >= 0)
		close(ctx.input);
	fclose(ctx.out);
	fclose(ctx.err);
	return status;
}

#define RUN(...) run_words((const char *[]){ __VA_ARGS__, NULL })

/* The last command failed with @status and said so in one line. */
#define ck_failed(status, want)						\
	do {								\
		ck_assert_int_eq((status), (want));			\
		ck_assert_msg(!strncmp(err, "mapperctl: ", 11), "err: %s", err); \
		ck_assert_ptr_eq(strchr(err, '\n'), err + strlen(err) - 1); \
	} while (0)

#define ck_err_has(text) \
	ck_assert_msg(strstr(err, (text)) != NULL, "err '%s' lacks '%s'", err, (text))

static const char *file_in_pool(const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void add_device(const char *name, const char *size)
{
	char file[64];

	snprintf(file, sizeof(file), "%s.img", name);
	ck_assert_int_eq(RUN("device", "add", file_in_pool(file), "--create", size,
			     "--name", name), 0);
}

static void make_pool(void)
{
	struct pool_error e;

	snprintf(dir, sizeof(dir), "%s/XXXXXX", root);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(pool_create(dir, pool_port_open, &e), 0);
	ck_assert_int_eq(pool_open(dir, pool_port_open, &pool, &e), 0);
	add_device("d0", "32M");
	add_device("d1", "32M");
}

static void close_pool(void)
{
	pool_close(pool);
	pool = NULL;
	free(out);
	free(err);
	out = err = NULL;
}

static size_t nr_volumes(void)
{
	struct pool_volume_info *v;
	size_t nr;

	ck_assert_int_eq(pool_volume_infos(pool, &v, &nr), 0);
	pool_volume_infos_release(v, nr);
	return nr;
}

/*
 * Volume @name and its extents as committed: read from the database on a
 * connection of its own.  *e malloc'ed.
 */
static void committed(const char *name, struct volume_rec *v, struct extent_rec **e,
		      size_t *nr)
{
	struct volume_rec *vols;
	struct extent_rec *all;
	char db[PATH_MAX];
	struct store *s;
	size_t nr_vols, nr_all;

	snprintf(db, sizeof(db), "%s/pool.db", dir);
	ck_assert_int_eq(store_open(db, 0, &s), 0);
	ck_assert_int_eq(store_volume_list(s, &vols, &nr_vols), 0);
	ck_assert_int_eq(store_extent_list(s, &all, &nr_all), 0);
	store_close(s);
	v->id = 0;
	for (size_t i = 0; i < nr_vols; i++)
		if (!strcmp(vols[i].name, name))
			*v = vols[i];
	ck_assert_int_ne(v->id, 0);
	*e = calloc(nr_all + 1, sizeof(**e));
	*nr = 0;
	for (size_t i = 0; i < nr_all; i++)
		if (all[i].volume == v->id)
			(*e)[(*nr)++] = all[i];
	free(vols);
	free(all);
}

/* ---- usage ------------------------------------------------------------- */

START_TEST(unknown_command_is_a_usage_error)
{
	ck_failed(RUN("frobnicate"), CMD_USAGE);
	ck_err_has("'frobnicate'");
	ck_failed(RUN("create", "wobbly", "x"), CMD_USAGE);
	ck_failed(RUN("device"), CMD_USAGE);
}
END_TEST

START_TEST(unknown_option_is_a_usage_error)
{
	ck_failed(RUN("list", "--frobnicate"), CMD_USAGE);
	ck_err_has("unknown option '--frobnicate'");
	ck_failed(RUN("create", "linear", "x", "--size", "8M", "-q"), CMD_USAGE);
	ck_failed(RUN("create", "linear", "x", "--size"), CMD_USAGE);
	ck_err_has("needs a value");
	ck_assert_uint_eq(nr_volumes(), 0);
}
END_TEST

START_TEST(missing_or_extra_arguments_are_usage_errors)
{
	ck_failed(RUN("create", "linear", "x"), CMD_USAGE);
	ck_failed(RUN("create", "linear", "--size", "1M"), CMD_USAGE);
	ck_failed(RUN("remove"), CMD_USAGE);
	ck_failed(RUN("remove", "a", "b"), CMD_USAGE);
	ck_failed(RUN("create", "linear", "x", "--size", "1M", "--segment", "d0:0:1M"),
		  CMD_USAGE);
}
END_TEST

START_TEST(help_on_every_command_exits_0_and_prints_usage)
{
	static const char *cmds[][2] = {
		{ "init", NULL }, { "device", "add" }, { "device", "list" },
		{ "device", "remove" }, { "create", "linear" }, { "extend", NULL },
		{ "remove", NULL }, { "list", NULL }, { "status", NULL },
		{ "dump", NULL }, { "restore", NULL }, { "repair", NULL },
		{ "trim", NULL }, { "thin-metadata-size", NULL }, { "change", NULL },
	};

	pool_close(pool);
	pool = NULL;			/* help needs no pool */
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		int st = cmds[i][1] ? RUN(cmds[i][0], cmds[i][1], "--help")
				    : RUN(cmds[i][0], "x", "-h");

		ck_assert_int_eq(st, 0);
		ck_assert_msg(!strncmp(out, "usage: mapperctl ", 17), "out: %s", out);
		ck_assert_str_eq(err, "");
	}
	ck_assert_int_eq(RUN("device", "--help"), 0);
	ck_assert_ptr_nonnull(strstr(out, "device add PATH"));
}
END_TEST

/* ---- names and sizes --------------------------------------------------- */

START_TEST(bad_names_are_refused_and_nothing_is_created)
{
	static const char *names[] = { "a/b", "..", ".", "", ".hidden", "a b", "a\nb",
		"a:b", "x1234567890123456789012345678901234567890123456789012345678901234" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_failed(RUN("create", "linear", names[i], "--size", "1M"), CMD_FAIL);
		ck_err_has("invalid name");
	}
	ck_failed(RUN("device", "add", file_in_pool("d9.img"), "--create", "4M",
		      "--name", "a/b"), CMD_FAIL);
	ck_assert_int_eq(access(file_in_pool("d9.img"), F_OK), -1);
	ck_assert_uint_eq(nr_volumes(), 0);
}
END_TEST

START_TEST(longest_name_is_accepted)
{
	const char *name = "x123456789012345678901234567890123456789012345678901234567890123";

	ck_assert_int_eq(RUN("create", "linear", name, "--size", "1M"), 0);
}
END_TEST

START_TEST(duplicate_volume_name_is_refused)
{
	ck_assert_int_eq(RUN("create", "linear", "v1", "--size", "1M"), 0);
	ck_failed(RUN("create", "linear", "v1", "--size", "1M"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: create linear: volume 'v1' exists\n");
	ck_assert_uint_eq(nr_volumes(), 1);
}
END_TEST

START_TEST(zero_junk_unaligned_and_too_large_sizes_are_refused)
{
	static const char *sizes[] = { "0", "-1", "abc", "1Q", "1.3K", "", "1000",
		"99999999T" };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ck_failed(RUN("create", "linear", "x", "--size", sizes[i]), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: create linear: size '99999999T' is too large\n");
	ck_assert_uint_eq(nr_volumes(), 0);
}
END_TEST

/* ---- linear volumes ------------------------------------------------------ */

START_TEST(segments_are_stored_after_the_label_in_order)
{
	struct extent_rec *e;
	struct volume_rec v;
	size_t nr;

	ck_assert_int_eq(RUN("create", "linear", "v", "--segment", "d1:4M:6M",
			     "--segment", "d0:0:8M"), 0);
	committed("v", &v, &e, &nr);
	ck_assert_uint_eq(v.size, 14 * MiB);
	ck_assert_str_eq(v.kind, "linear");
	ck_assert_uint_eq(nr, 2);
	ck_assert_uint_eq(e[0].dev_offset, DEVICE_DATA_OFFSET + 4 * MiB);
	ck_assert_uint_eq(e[0].length, 6 * MiB);
	ck_assert_uint_eq(e[1].dev_offset, DEVICE_DATA_OFFSET);
	free(e);
}
END_TEST

START_TEST(segment_past_the_end_of_a_device_is_refused)
{
	ck_failed(RUN("create", "linear", "x", "--segment", "d0:28M:8M"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: create linear: segment 'd0:28M:8M' runs past the end of device 'd0'\n");
	ck_failed(RUN("create", "linear", "x", "--segment", "d0:31M:4K"), CMD_FAIL);
	ck_failed(RUN("create", "linear", "x", "--segment", "d9:0:4K"), CMD_FAIL);
	ck_err_has("no device 'd9'");
	ck_assert_uint_eq(nr_volumes(), 0);
}
END_TEST

START_TEST(segment_overlapping_another_volume_is_refused)
{
	ck_assert_int_eq(RUN("create", "linear", "v1", "--segment", "d0:0:8M"), 0);
	ck_failed(RUN("create", "linear", "x", "--segment", "d0:4M:8M"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: create linear: segment 'd0:4M:8M' overlaps volume 'v1'\n");
	ck_assert_uint_eq(nr_volumes(), 1);
}
END_TEST

START_TEST(segments_of_one_command_must_not_overlap)
{
	ck_failed(RUN("create", "linear", "x", "--segment", "d0:10M:2M", "--segment",
		      "d0:11M:2M"), CMD_FAIL);
	ck_err_has("overlaps segment 'd0:10M:2M'");
	ck_assert_uint_eq(nr_volumes(), 0);
}
END_TEST

START_TEST(not_enough_free_space_is_refused_saying_what_is_free)
{
	ck_failed(RUN("create", "linear", "x", "--size", "70M"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: create linear: not enough free space for 70.00 MiB on device(s) d0, d1 (62.00 MiB free)\n");
	ck_failed(RUN("create", "linear", "x", "--size", "40M", "--on", "d1"), CMD_FAIL);
	ck_err_has("on device(s) d1 (31.00 MiB free)");
	ck_assert_uint_eq(nr_volumes(), 0);
}
END_TEST

START_TEST(change_that_sqlite_aborted_says_nothing_changed_and_to_try_again)
{
	struct pool_error e;

	ck_assert_int_eq(pool_store_fail(&e, -ECANCELED, "create 'x'"), -ECANCELED);
	ck_assert_str_eq(e.msg, "cannot create 'x': SQLite aborted the change to the pool "
			 "database; nothing changed, try again");
}
END_TEST

START_TEST(allocation_spans_the_devices_named_with_on)
{
	struct extent_rec *e;
	struct volume_rec v;
	size_t nr;

	ck_assert_int_eq(RUN("create", "linear", "v", "--size", "40M", "--on", "d1,d0"), 0);
	committed("v", &v, &e, &nr);
	ck_assert_uint_eq(nr, 2);
	ck_assert_uint_eq(e[0].length + e[1].length, 40 * MiB);
	free(e);
}
END_TEST

START_TEST(extend_appends_extents_and_grows_the_volume)
{
	struct extent_rec *e;
	struct volume_rec v;
	size_t nr;

	ck_assert_int_eq(RUN("create", "linear", "v", "--size", "8M", "--on", "d0"), 0);
	ck_assert_int_eq(RUN("extend", "v", "--size", "12M", "--on", "d1"), 0);
	ck_assert_int_eq(RUN("extend", "v", "--size", "+4M"), 0);
	committed("v", &v, &e, &nr);
	ck_assert_uint_eq(v.size, 16 * MiB);
	ck_assert_uint_ge(nr, 3);
	ck_assert_uint_eq(e[1].seq, 1);
	free(e);
}
END_TEST

START_TEST(extend_to_a_smaller_or_equal_size_is_refused)
{
	ck_assert_int_eq(RUN("create", "linear", "v", "--size", "8M"), 0);
	ck_failed(RUN("extend", "v", "--size", "4M"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: extend: new size must be larger than 8.00 MiB\n");
	ck_failed(RUN("extend", "v", "--size", "8M"), CMD_FAIL);
	ck_failed(RUN("extend", "v", "--size", "100M"), CMD_FAIL);
	ck_err_has("not enough free space");
	ck_failed(RUN("extend", "nosuch", "--size", "100M"), CMD_FAIL);
	ck_err_has("no volume 'nosuch'");
}
END_TEST

START_TEST(remove_frees_the_space)
{
	ck_assert_int_eq(RUN("create", "linear", "v", "--size", "30M", "--on", "d0"), 0);
	ck_failed(RUN("create", "linear", "w", "--size", "30M", "--on", "d0"), CMD_FAIL);
	ck_assert_int_eq(RUN("remove", "v"), 0);
	ck_assert_int_eq(RUN("create", "linear", "w", "--size", "30M", "--on", "d0"), 0);
	ck_failed(RUN("remove", "v"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: remove: no volume 'v'\n");
}
END_TEST

/* ---- devices ---------------------------------------------------------------- */

START_TEST(device_in_use_cannot_be_removed)
{
	ck_assert_int_eq(RUN("create", "linear", "v", "--segment", "d1:0:4M"), 0);
	ck_failed(RUN("device", "remove", "d1"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: device remove: device 'd1' is in use by volume 'v'\n");
	ck_assert_int_eq(RUN("remove", "v"), 0);
	ck_assert_int_eq(RUN("device", "remove", "d1"), 0);
}
END_TEST

START_TEST(labelled_device_is_refused_until_removed_or_forced)
{
	const char *d0 = strdup(file_in_pool("d0.img"));

	ck_failed(RUN("device", "add", d0, "--name", "again"), CMD_FAIL);
	ck_err_has("registered already as device 'd0'");
	ck_assert_int_eq(RUN("device", "remove", "d0"), 0);
	/* removing wiped the label: it may come back without --force */
	ck_assert_int_eq(RUN("device", "add", d0, "--name", "d0"), 0);
	free((void *)d0);
}
END_TEST

START_TEST(device_carrying_another_pools_label_needs_force)
{
	const char *path = strdup(file_in_pool("foreign.img"));
	struct device_label l = { .size = 8 * MiB };
	struct device *dev;
	FILE *f = fopen(path, "w");

	ck_assert_int_eq(ftruncate(fileno(f), 8 * MiB), 0);
	fclose(f);
	ck_assert_int_eq(device_open(path, 0, &dev), 0);
	ck_assert_int_eq(device_label_write(dev, &l), 0);
	device_close(dev);
	ck_failed(RUN("device", "add", path), CMD_FAIL);
	ck_err_has("already belongs to pool ");
	ck_assert_int_eq(RUN("device", "add", path, "--force"), 0);
	ck_assert_ptr_nonnull(strstr(out, "added device 'foreign.img'"));
	free((void *)path);
}
END_TEST

START_TEST(device_add_refuses_small_devices_and_existing_files_to_create)
{
	ck_failed(RUN("device", "add", file_in_pool("small.img"), "--create", "512K"),
		  CMD_FAIL);
	ck_err_has("too small");
	ck_assert_int_eq(access(file_in_pool("small.img"), F_OK), -1);
	ck_failed(RUN("device", "add", file_in_pool("d0.img"), "--create", "32M",
		      "--name", "x"), CMD_FAIL);
	ck_err_has("exists");
	ck_assert_int_eq(access(file_in_pool("d0.img"), F_OK), 0);
	ck_failed(RUN("device", "add", file_in_pool("nosuch.img")), CMD_FAIL);
}
END_TEST

/* ---- listings -------------------------------------------------------------- */

/* @out without its "created" and "modified" lines: times differ per run. */
static const char *timeless(void)
{
	char *w = out;

	for (const char *r = out; *r;) {
		const char *eol = strchr(r, '\n');
		size_t n = eol ? (size_t)(eol - r + 1) : strlen(r);

		if (!strstr(r, "\"created\": ") || strstr(r, "\"created\": ") >= r + n)
			if (!strstr(r, "\"modified\": ") || strstr(r, "\"modified\": ") >= r + n) {
				memmove(w, r, n);
				w += n;
			}
		r += n;
	}
	*w = '\0';
	return out;
}

START_TEST(list_json_is_an_array_of_name_kind_size)
{
	ck_assert_int_eq(RUN("list", "--json"), 0);
	ck_assert_str_eq(out, "[]\n");
	ck_assert_int_eq(RUN("create", "linear", "v", "--size", "1M"), 0);
	ck_assert_int_eq(RUN("list", "--json"), 0);
	ck_assert_str_eq(timeless(), "[\n  {\n    \"name\": \"v\",\n    \"kind\": \"linear\",\n"
			      "    \"size\": 1048576,\n    \"state\": \"ok\",\n"
			      "    \"active\": true,\n    \"read_only\": false,\n"
			      "    \"allow_shrink\": false,\n"
			      "    \"segments\": [\n      {\n        \"device\": \"d0\",\n"
			      "        \"offset\": 0,\n        \"length\": 1048576\n      }\n"
			      "    ]\n  }\n]\n");
	ck_assert_int_eq(RUN("list"), 0);
	ck_assert_ptr_nonnull(strstr(out, "1.00 MiB"));
}
END_TEST

#define ck_out_starts(prefix) \
	ck_assert_msg(!strncmp(out, (prefix), strlen(prefix)), "out: %s", out)

/* Every command that prints takes --json, as list and status do. */
START_TEST(every_command_that_prints_takes_json)
{
	ck_assert_int_eq(RUN("thin-metadata-size", "--block-size", "64K", "--pool-size", "1G",
			     "--max-thins", "10", "--json"), 0);
	ck_out_starts("{\n  \"block_size\": 65536,\n  \"pool_size\": 1073741824,\n"
			       "  \"max_thins\": 10,\n  \"metadata_bytes\": ");
	ck_failed(RUN("thin-metadata-size", "--block-size", "64K", "--pool-size", "1G",
		      "--max-thins", "10", "--json", "--numeric-only"), CMD_USAGE);

	ck_assert_int_eq(RUN("create", "thin-pool", "tp", "--size", "8M"), 0);
	ck_assert_int_eq(RUN("create", "thin", "v", "--pool", "tp", "--size", "4M"), 0);
	ck_assert_int_eq(RUN("trim", "tp", "--json"), 0);
	ck_out_starts("{\n  \"pool\": \"tp\",\n  \"discarded_bytes\": ");
	ck_assert_int_eq(RUN("reload", "--json"), 0);
	ck_assert_str_eq(out, "{\n  \"recovered\": 0,\n  \"failed\": 0\n}\n");

	ck_assert_int_eq(RUN("dump", "tp", "--output", file_in_pool("tp.xml")), 0);
	ck_assert_int_eq(RUN("remove", "v"), 0);
	ck_assert_msg(RUN("restore", "tp", "--from", file_in_pool("tp.xml"), "--dry-run",
			  "--json") == 0, "err: %s", err);
	ck_out_starts("{\n  \"pool\": \"tp\",\n  \"dry_run\": true,\n"
			       "  \"report\": [\n    \"");
	ck_assert_ptr_nonnull(strstr(out, "\"\n  ]\n}\n"));
}
END_TEST

/* The store's port with thin_open failing while thin_opens_to_fail > 0. */
static const struct pool_meta_ops *real_ops;
static struct pool_meta_ops failing_ops;
static int thin_opens_to_fail;

static int thin_open_failing(struct pool_meta *m, int64_t id, const struct thin_meta_ops **ops,
			     void **arg)
{
	if (thin_opens_to_fail > 0) {
		thin_opens_to_fail--;
		return -ENOMEM;
	}
	return real_ops->thin_open(m, id, ops, arg);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * Every check passed, the rows are recorded, and the pool does not start
 * from them (here: its pages cannot be opened, once): the rows are taken
 * back and the pool started as it was, and the error says so.
 */
START_TEST(restore_whose_pool_does_not_start_is_undone)
{
	const char *xml = file_in_pool("r.xml");

	write_file(xml, "<superblock data_block_size=\"128\" nr_data_blocks=\"64\">"
			"<device dev_id=\"1\" name=\"r1\" size=\"1048576\"/>"
			"<device dev_id=\"2\" name=\"r2\" size=\"1048576\" snapshot_of=\"1\"/>"
			"</superblock>\n");
	ck_assert_int_eq(RUN("create", "thin-pool", "tp", "--size", "4M"), 0);
	real_ops = pool->meta->ops;
	failing_ops = *real_ops;
	failing_ops.thin_open = thin_open_failing;
	pool->meta->ops = &failing_ops;
	thin_opens_to_fail = 1;
	ck_failed(RUN("restore", "tp", "--from", xml), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: restore: thin pool 'tp' did not start with the restored maps "
			 "(cannot open its map pages: Cannot allocate memory); the restore was "
			 "undone: the pool is as it was\n");
	ck_assert_uint_eq(nr_volumes(), 1);
	ck_assert_int_eq(RUN("status", "tp", "--json"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"state\": \"ok\""));
	ck_assert_int_eq(RUN("check"), 0);
	ck_assert_int_eq(RUN("restore", "tp", "--from", xml), 0);
	ck_assert_uint_eq(nr_volumes(), 3);
	pool->meta->ops = real_ops;
}
END_TEST

START_TEST(set_allow_shrink_is_on_or_off_and_shows_in_status)
{
	ck_assert_int_eq(RUN("create", "linear", "v", "--size", "1M"), 0);
	ck_assert_int_eq(RUN("set", "v", "--allow-shrink", "on"), 0);
	ck_assert_str_eq(out, "a truncate of volume 'v' may shrink it\n");
	ck_assert_int_eq(RUN("status", "v", "--json"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"allow_shrink\": true"));
	ck_assert_int_eq(RUN("list", "-o", "name,allow_shrink", "--noheadings"), 0);
	ck_assert_ptr_nonnull(strstr(out, "yes"));
	ck_failed(RUN("set", "v", "--allow-shrink", "yes"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: set: --allow-shrink takes on or off, not 'yes'\n");
	ck_assert_int_eq(RUN("set", "v", "--allow-shrink", "off"), 0);
	ck_assert_int_eq(RUN("status", "v", "--json"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"allow_shrink\": false"));
	ck_failed(RUN("set", "nosuch", "--allow-shrink", "on"), CMD_FAIL);
}
END_TEST

START_TEST(status_json_shows_segments_relative_to_the_data_area)
{
	ck_assert_int_eq(RUN("create", "linear", "v", "--segment", "d1:4M:4K"), 0);
	ck_assert_int_eq(RUN("status", "v", "--json"), 0);
	ck_assert_str_eq(timeless(),
		"{\n  \"name\": \"v\",\n  \"kind\": \"linear\",\n  \"size\": 4096,\n"
		"  \"state\": \"ok\",\n"
		"  \"active\": true,\n  \"read_only\": false,\n  \"allow_shrink\": false,\n"
		"  \"segments\": [\n    {\n      \"device\": \"d1\",\n"
		"      \"offset\": 4194304,\n      \"length\": 4096\n    }\n  ],\n"
		"  \"open\": 0,\n  \"reads\": 0,\n  \"writes\": 0,\n  \"read_bytes\": 0,\n"
		"  \"write_bytes\": 0,\n  \"io_errors\": 0,\n  \"no_space\": 0\n}\n");
	ck_assert_int_eq(RUN("status"), 0);
	ck_assert_ptr_nonnull(strstr(out, "volumes:\n  - name: v\n"));
	ck_failed(RUN("status", "nosuch"), CMD_FAIL);
}
END_TEST

/* ---- a served volume -------------------------------------------------------- */

/* Holds volume @name open, as a file on the mount would. */
static struct volume *hold(const char *name)
{
	struct volume *v;

	rcu_read_begin();
	v = volset_find_name(pool_served(pool), name);
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(volume_hold(v), 0);
	rcu_read_end();
	return v;
}

START_TEST(open_volume_is_not_removed_and_stays_served)
{
	struct volume *v;

	ck_assert_int_eq(RUN("create", "linear", "v", "--size", "1M"), 0);
	v = hold("v");
	ck_failed(RUN("remove", "v"), CMD_FAIL);
	ck_assert_str_eq(err, "mapperctl: remove: volume 'v' is busy (open)\n");
	ck_assert_uint_eq(nr_volumes(), 1);
	ck_assert_int_eq(volume_hold(v), 0);		/* not retired */
	volume_unhold(v);
	volume_unhold(v);
	ck_assert_int_eq(RUN("remove", "v"), 0);
	ck_assert_uint_eq(nr_volumes(), 0);
}
END_TEST

START_TEST(status_of_a_served_volume_counts_its_openers)
{
	struct volume *v;

	ck_assert_int_eq(RUN("create", "linear", "v", "--size", "1M"), 0);
	v = hold("v");
	ck_assert_int_eq(RUN("status", "v", "--json"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"open\": 1,"));
	volume_unhold(v);
}
END_TEST

/* ---- the wire ------------------------------------------------------------------ */

START_TEST(request_crosses_the_wire_intact)
{
	char *argv[] = { "create", "linear", "", "v\n1", NULL }, **got;
	int sv[2], argc;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(wire_send_request(sv[0], 4, argv, -1), 0);
	ck_assert_int_eq(wire_recv_request(sv[1], &argc, &got, NULL, -1), 0);
	ck_assert_int_eq(argc, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_str_eq(got[i], argv[i]);
	ck_assert_ptr_null(got[4]);
	free(got);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(request_carries_the_file_it_reads_across_the_wire)
{
	char *argv[] = { "switch-map", "s", "--file", "-", NULL }, **got, buf[8] = "";
	int sv[2], pipe_fds[2], argc, file;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(pipe(pipe_fds), 0);
	ck_assert_int_eq(wire_send_request(sv[0], 4, argv, pipe_fds[0]), 0);
	close(pipe_fds[0]);
	ck_assert_int_eq(wire_recv_request(sv[1], &argc, &got, &file, -1), 0);
	ck_assert_int_eq(argc, 4);
	ck_assert_str_eq(got[3], "-");
	ck_assert_int_ge(file, 0);
	ck_assert_int_eq(write(pipe_fds[1], "0:1", 3), 3);
	close(pipe_fds[1]);
	ck_assert_int_eq(read(file, buf, sizeof(buf) - 1), 3);
	ck_assert_str_eq(buf, "0:1");
	close(file);
	free(got);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(request_without_a_file_gives_none)
{
	char *argv[] = { "list", NULL }, **got;
	int sv[2], argc, file = 7;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(wire_send_request(sv[0], 1, argv, -1), 0);
	ck_assert_int_eq(wire_recv_request(sv[1], &argc, &got, &file, -1), 0);
	ck_assert_int_eq(file, -1);
	free(got);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(response_crosses_the_wire_intact)
{
	char *o, *e;
	int sv[2], st;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(wire_send_response(sv[0], 2, "out\n", 4, "", 0), 0);
	ck_assert_int_eq(wire_recv_response(sv[1], &st, &o, &e, NULL), 0);
	ck_assert_int_eq(st, 2);
	ck_assert_str_eq(o, "out\n");
	ck_assert_str_eq(e, "");
	free(o);
	free(e);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(notes_arrive_on_their_stream_before_the_response)
{
	char *o, *e, *notes = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&notes, &len);
	int sv[2], st;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(wire_send_note(sv[0], "waiting for 'x' (pid 1) ...\n"), 0);
	ck_assert_int_eq(wire_send_note(sv[0], "again\n"), 0);
	ck_assert_int_eq(wire_send_response(sv[0], 0, "out\n", 4, "", 0), 0);
	ck_assert_int_eq(wire_recv_response(sv[1], &st, &o, &e, f), 0);
	fclose(f);
	ck_assert_int_eq(st, 0);
	ck_assert_str_eq(o, "out\n");
	ck_assert_str_eq(notes, "waiting for 'x' (pid 1) ...\nagain\n");
	free(o);
	free(e);
	free(notes);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A child that sends a request a byte at a time, every 20 ms, for 2 s. */
static pid_t trickle(int fd)
{
	static const char req[] = "MPFS\1\0\0\0a-long-command-that-never-ends-in-time";
	pid_t pid = fork();

	if (pid)
		return pid;
	for (size_t i = 0; i < 100; i++) {
		if (write(fd, &req[i % (sizeof(req) - 1)], 1) != 1)
			_exit(0);
		usleep(20000);
	}
	_exit(0);
}

START_TEST(request_that_trickles_in_is_cut_at_its_deadline)
{
	struct timespec t0, t1;
	char **got;
	int sv[2], argc;
	pid_t child;
	long ms;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	child = trickle(sv[0]);
	ck_assert_int_gt(child, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(wire_recv_request(sv[1], &argc, &got, NULL, 200), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	ck_assert_int_ge(ms, 150);	/* it waited, give or take a tick */
	ck_assert_int_lt(ms, 1000);	/* not 200 ms per byte */
	close(sv[1]);
	close(sv[0]);
	waitpid(child, NULL, 0);
}
END_TEST

START_TEST(truncated_or_foreign_request_is_a_protocol_error)
{
	char **got;
	int sv[2], argc;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(write(sv[0], "MPFS\2\0\0\0list\0li", 15), 15);
	close(sv[0]);
	ck_assert_int_eq(wire_recv_request(sv[1], &argc, &got, NULL, -1), -EPROTO);
	close(sv[1]);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(write(sv[0], "HTTP/1.1", 8), 8);
	ck_assert_int_eq(wire_recv_request(sv[1], &argc, &got, NULL, -1), -EPROTO);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(oversize_request_is_refused_before_sending)
{
	char *big = malloc(WIRE_MAX);
	char *argv[] = { big };

	memset(big, 'x', WIRE_MAX - 1);
	big[WIRE_MAX - 1] = '\0';
	ck_assert_int_eq(wire_send_request(-1, 1, argv, -1), -EMSGSIZE);
	free(big);
}
END_TEST

START_TEST(connect_without_a_daemon_is_enoent)
{
	ck_assert_int_eq(wire_connect("/nonexistent", NULL, 0), -ENOENT);
}
END_TEST

/* A listening socket of ours at @path. */
static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	return fd;
}

START_TEST(connect_reaches_a_listener_of_ours_and_sends_nothing)
{
	char sock[PATH_MAX], byte;
	int l, fd, peer;

	make_root();
	snprintf(sock, sizeof(sock), "%s/%s", root, CONTROL_SOCKET);
	l = listen_at(sock);
	fd = wire_connect(root, NULL, 0);
	ck_assert_int_ge(fd, 0);
	peer = accept(l, NULL, NULL);
	close(fd);
	ck_assert_int_eq(read(peer, &byte, 1), 0);
	close(peer);
	close(l);
	remove_root();
}
END_TEST

START_TEST(connect_refuses_a_link_a_hard_link_or_a_file_in_place_of_the_socket)
{
	char sock[PATH_MAX], elsewhere[PATH_MAX], why[PATH_MAX + 128];
	int l, fd;

	make_root();
	snprintf(sock, sizeof(sock), "%s/%s", root, CONTROL_SOCKET);
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere.sock", root);
	l = listen_at(elsewhere);
	ck_assert_int_eq(symlink(elsewhere, sock), 0);
	ck_assert_int_eq(wire_connect(root, why, sizeof(why)), -EPERM);
	ck_assert_msg(strstr(why, "is a symbolic link"), "why: %s", why);
	unlink(sock);
	ck_assert_int_eq(link(elsewhere, sock), 0);
	ck_assert_int_eq(wire_connect(root, why, sizeof(why)), -EPERM);
	ck_assert_msg(strstr(why, "has other names"), "why: %s", why);
	unlink(sock);
	fd = creat(sock, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(wire_connect(root, why, sizeof(why)), -EPERM);
	ck_assert_msg(strstr(why, "is not a socket"), "why: %s", why);
	close(l);
	remove_root();
}
END_TEST

/* ---- json -------------------------------------------------------------------- */

START_TEST(json_escapes_quotes_backslashes_and_control_characters)
{
	char *buf = NULL;
	size_t len;
	struct json j;
	FILE *f = open_memstream(&buf, &len);

	json_init(&j, f, JSON_COMPACT);
	json_object_begin(&j, NULL);
	json_string(&j, "a\"b", "x\\y\n\x01");
	json_array_begin(&j, "e");
	json_array_end(&j);
	json_bool(&j, "t", 1);
	json_object_end(&j);
	fclose(f);
	ck_assert_str_eq(buf, "{\"a\\\"b\":\"x\\\\y\\n\\u0001\",\"e\":[],\"t\":true}\n");
	free(buf);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *suite = suite_create("cli");
	TCase *tc = tcase_create("commands");
	TCase *wire = tcase_create("wire and json");

	tcase_add_unchecked_fixture(tc, make_root, remove_root);
	tcase_add_checked_fixture(tc, make_pool, close_pool);
	tcase_add_test(tc, unknown_command_is_a_usage_error);
	tcase_add_test(tc, unknown_option_is_a_usage_error);
	tcase_add_test(tc, missing_or_extra_arguments_are_usage_errors);
	tcase_add_test(tc, help_on_every_command_exits_0_and_prints_usage);
	tcase_add_test(tc, bad_names_are_refused_and_nothing_is_created);
	tcase_add_test(tc, longest_name_is_accepted);
	tcase_add_test(tc, duplicate_volume_name_is_refused);
	tcase_add_test(tc, zero_junk_unaligned_and_too_large_sizes_are_refused);
	tcase_add_test(tc, segments_are_stored_after_the_label_in_order);
	tcase_add_test(tc, segment_past_the_end_of_a_device_is_refused);
	tcase_add_test(tc, segment_overlapping_another_volume_is_refused);
	tcase_add_test(tc, segments_of_one_command_must_not_overlap);
	tcase_add_test(tc, not_enough_free_space_is_refused_saying_what_is_free);
	tcase_add_test(tc, change_that_sqlite_aborted_says_nothing_changed_and_to_try_again);
	tcase_add_test(tc, allocation_spans_the_devices_named_with_on);
	tcase_add_test(tc, extend_appends_extents_and_grows_the_volume);
	tcase_add_test(tc, extend_to_a_smaller_or_equal_size_is_refused);
	tcase_add_test(tc, remove_frees_the_space);
	tcase_add_test(tc, device_in_use_cannot_be_removed);
	tcase_add_test(tc, labelled_device_is_refused_until_removed_or_forced);
	tcase_add_test(tc, device_carrying_another_pools_label_needs_force);
	tcase_add_test(tc, device_add_refuses_small_devices_and_existing_files_to_create);
	tcase_add_test(tc, list_json_is_an_array_of_name_kind_size);
	tcase_add_test(tc, every_command_that_prints_takes_json);
	tcase_add_test(tc, status_json_shows_segments_relative_to_the_data_area);
	tcase_add_test(tc, set_allow_shrink_is_on_or_off_and_shows_in_status);
	tcase_add_test(tc, open_volume_is_not_removed_and_stays_served);
	tcase_add_test(tc, status_of_a_served_volume_counts_its_openers);
	tcase_add_test(tc, restore_whose_pool_does_not_start_is_undone);
	suite_add_tcase(suite, tc);

	tcase_add_test(wire, request_crosses_the_wire_intact);
	tcase_add_test(wire, request_carries_the_file_it_reads_across_the_wire);
	tcase_add_test(wire, request_without_a_file_gives_none);
	tcase_add_test(wire, response_crosses_the_wire_intact);
	tcase_add_test(wire, notes_arrive_on_their_stream_before_the_response);
	tcase_add_test(wire, truncated_or_foreign_request_is_a_protocol_error);
	tcase_add_test(wire, request_that_trickles_in_is_cut_at_its_deadline);
	/* Measuring a 64 MiB request takes seconds under ThreadSanitizer on a busy machine. */
	tcase_set_timeout(wire, 60);
	tcase_add_test(wire, oversize_request_is_refused_before_sending);
	tcase_add_test(wire, connect_without_a_daemon_is_enoent);
	tcase_add_test(wire, connect_reaches_a_listener_of_ours_and_sends_nothing);
	tcase_add_test(wire, connect_refuses_a_link_a_hard_link_or_a_file_in_place_of_the_socket);
	tcase_add_test(wire, json_escapes_quotes_backslashes_and_control_characters);
	suite_add_tcase(suite, wire);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(cli_suite());
	int failed;

	log_set_level(LOG_LEVEL_WARN);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
