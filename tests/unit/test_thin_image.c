/*
 * tests/unit/test_thin_image.c: thin_dump's XML written and read back,
 * and what the reader refuses, each in one line with its line number;
 * what thin_image_check refuses of an image that reads well, each in one
 * line naming the devices and blocks.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "thin_image.h"

static int read_text(const char *text, struct thin_image *img, char *why, size_t len)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int r;

	ck_assert_ptr_nonnull(f);
	r = thin_image_read_xml(f, img, why, len);
	fclose(f);
	return r;
}

START_TEST(written_xml_reads_back_with_runs_names_and_sizes)
{
	struct thin_image sb = { .block_size = 65536, .nr_blocks = 100, .time = 1, .transaction = 1 };
	struct thin_image_dev dev = { .dev_id = 7, .name = "vm1", .size = 1 << 20,
				      .mapped_blocks = 4, .snap_time = 1 };
	struct thin_image_run runs[] = { { 0, 10, 3 }, { 9, 2, 1 } };
	struct thin_image_writer *w;
	struct thin_image img;
	char *text = NULL, why[128];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_int_eq(thin_image_writer_open(f, THIN_IMAGE_XML, &sb, &w), 0);
	thin_image_write_dev(w, &dev);
	for (size_t i = 0; i < 2; i++)
		thin_image_write_run(w, &runs[i]);
	thin_image_write_dev_end(w);
	thin_image_writer_close(w);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "data_block_size=\"128\""));
	ck_assert_ptr_nonnull(strstr(text, "<single_mapping origin_block=\"9\" data_block=\"2\""));
	ck_assert_int_eq(read_text(text, &img, why, sizeof(why)), 0);
	ck_assert_uint_eq(img.block_size, 65536);
	ck_assert_uint_eq(img.nr_blocks, 100);
	ck_assert_uint_eq(img.nr_devs, 1);
	ck_assert_uint_eq(img.devs[0].dev_id, 7);
	ck_assert_str_eq(img.devs[0].name, "vm1");
	ck_assert_uint_eq(img.devs[0].size, 1 << 20);
	ck_assert_uint_eq(img.devs[0].nr_runs, 2);
	ck_assert_uint_eq(img.devs[0].runs[1].origin, 9);
	ck_assert_uint_eq(img.devs[0].runs[1].data, 2);
	thin_image_release(&img);
	free(text);
}
END_TEST

START_TEST(neighbouring_single_mappings_merge_into_a_run)
{
	struct thin_image img;
	char why[128];

	ck_assert_int_eq(read_text("<superblock data_block_size=\"128\" nr_data_blocks=\"9\">"
				   "<device dev_id=\"1\">"
				   "<single_mapping origin_block=\"4\" data_block=\"0\" time=\"0\"/>"
				   "<single_mapping origin_block=\"5\" data_block=\"1\" time=\"0\"/>"
				   "</device></superblock>", &img, why, sizeof(why)), 0);
	ck_assert_uint_eq(img.devs[0].nr_runs, 1);
	ck_assert_uint_eq(img.devs[0].runs[0].len, 2);
	thin_image_release(&img);
}
END_TEST

START_TEST(bad_documents_are_refused_with_their_line)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "<superblock data_block_size=\"128\" nr_data_blocks=\"9\">\n<device/>",
		  "line 2: <device> has no dev_id" },
		{ "<superblock data_block_size=\"x\" nr_data_blocks=\"9\"/>",
		  "line 1: <superblock>: data_block_size is not a number" },
		{ "<device dev_id=\"1\"/>", "line 1: <device> outside <superblock>" },
		{ "<superblock data_block_size=\"128\" nr_data_blocks=\"9\"><frob/></superblock>",
		  "line 1: unknown element <frob>" },
		{ "<superblock data_block_size=\"128\" nr_data_blocks=\"9\">",
		  "line 1: no element found" },
		{ "", "line 1: no element found" },
		{ "<superblock data_block_size=\"128\" nr_data_blocks=\"9\"><device dev_id=\"1\">"
		  "<range_mapping origin_begin=\"0\" data_begin=\"0\" length=\"0\"/></device></superblock>",
		  "line 1: <range_mapping>: the range is empty or wraps" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct thin_image img;
		char why[256];

		ck_assert_int_eq(read_text(bad[i].text, &img, why, sizeof(why)), -EINVAL);
		ck_assert_str_eq(why, bad[i].why);
		ck_assert_uint_eq(img.nr_devs, 0);
	}
}
END_TEST

#define ONE_PLACE "(mapperfs shares a block only at one virtual block)"
#define SB "<superblock data_block_size=\"128\" nr_data_blocks=\"100\">"

START_TEST(check_refuses_what_an_image_says_wrongly_of_itself)
{
	static const struct {
		const char *devices, *why;
		int r;
	} bad[] = {
		{ "<device dev_id=\"4\"/><device dev_id=\"2\"/><device dev_id=\"4\"/>",
		  "dev_id 4 appears twice", -EINVAL },
		{ "<device dev_id=\"1\"><single_mapping origin_block=\"7\" data_block=\"0\"/>"
		  "<range_mapping origin_begin=\"5\" data_begin=\"10\" length=\"3\"/></device>",
		  "device 1 maps virtual block 7 twice", -EINVAL },
		{ "<device dev_id=\"1\"><single_mapping origin_block=\"536870912\" data_block=\"0\"/></device>",
		  "device 1 maps virtual block 536870912, past the largest thin volume", -EFBIG },
		{ "<device dev_id=\"1\"><range_mapping origin_begin=\"0\" data_begin=\"98\" length=\"3\"/></device>",
		  "device 1 maps data block 100, past the dump's own end (nr_data_blocks 100)", -EINVAL },
		/* A block at two virtual blocks: of one device, of two, and
		 * behind a longer run that maps it at its own place. */
		{ "<device dev_id=\"1\"><single_mapping origin_block=\"3\" data_block=\"9\"/>"
		  "<single_mapping origin_block=\"0\" data_block=\"9\"/></device>",
		  "data block 9 is mapped at virtual blocks 0 and 3 " ONE_PLACE, -EINVAL },
		{ "<device dev_id=\"1\"><range_mapping origin_begin=\"0\" data_begin=\"0\" length=\"50\"/></device>"
		  "<device dev_id=\"2\"><range_mapping origin_begin=\"5\" data_begin=\"5\" length=\"2\"/>"
		  "<single_mapping origin_block=\"30\" data_block=\"20\"/></device>",
		  "data block 20 is mapped at virtual blocks 20 and 30 " ONE_PLACE, -EINVAL },
		{ "<device dev_id=\"1\" snapshot_of=\"9\"/>",
		  "device 1 is a snapshot of device 9, which the dump does not have", -EINVAL },
		{ "<device dev_id=\"5\" snapshot_of=\"5\"/>",
		  "snapshot_of goes round in a cycle: device 5 is a snapshot of 5", -EINVAL },
		{ "<device dev_id=\"1\"/><device dev_id=\"2\" snapshot_of=\"3\"/>"
		  "<device dev_id=\"3\" snapshot_of=\"4\"/><device dev_id=\"4\" snapshot_of=\"2\"/>",
		  "snapshot_of goes round in a cycle: device 2 is a snapshot of 3, which is a snapshot of 4, which is a snapshot of 2",
		  -EINVAL },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct thin_image img;
		char text[1024], why[256];

		snprintf(text, sizeof(text), SB "%s</superblock>", bad[i].devices);
		ck_assert_int_eq(read_text(text, &img, why, sizeof(why)), 0);
		ck_assert_int_eq(thin_image_check(&img, why, sizeof(why)), bad[i].r);
		ck_assert_str_eq(why, bad[i].why);
		thin_image_release(&img);
	}
}
END_TEST

START_TEST(check_takes_shared_blocks_at_one_place_and_links_each_origin)
{
	struct thin_image img;
	char why[256];

	/* 3 is a snapshot of 2, 2 of 1: chains, listed in any order; 3 shares blocks of 1. */
	ck_assert_int_eq(read_text(SB "<device dev_id=\"3\" snapshot_of=\"2\">"
				   "<range_mapping origin_begin=\"10\" data_begin=\"20\" length=\"5\"/></device>"
				   "<device dev_id=\"1\"><range_mapping origin_begin=\"0\" data_begin=\"10\" length=\"40\"/></device>"
				   "<device dev_id=\"2\" snapshot_of=\"1\"><single_mapping origin_block=\"3\" data_block=\"60\"/></device>"
				   "</superblock>", &img, why, sizeof(why)), 0);
	ck_assert_int_eq(thin_image_check(&img, why, sizeof(why)), 0);
	ck_assert_ptr_eq(thin_image_find(&img, 2), &img.devs[2]);
	ck_assert_ptr_null(thin_image_find(&img, 4));
	ck_assert_uint_eq(img.devs[0].origin, 2);
	ck_assert_uint_eq(img.devs[2].origin, 1);
	ck_assert_uint_eq(img.nr_refs, 3);
	ck_assert_uint_eq(img.by_data[0].dev, 1);	/* data 10 */
	ck_assert_uint_eq(img.by_data[1].dev, 0);	/* data 20 */
	ck_assert_uint_eq(img.by_data[2].dev, 2);	/* data 60 */
	thin_image_release(&img);
}
END_TEST

static Suite *thin_image_suite(void)
{
	Suite *suite = suite_create("thin_image");
	TCase *tc = tcase_create("xml");

	tcase_add_test(tc, written_xml_reads_back_with_runs_names_and_sizes);
	tcase_add_test(tc, neighbouring_single_mappings_merge_into_a_run);
	tcase_add_test(tc, bad_documents_are_refused_with_their_line);
	tcase_add_test(tc, check_refuses_what_an_image_says_wrongly_of_itself);
	tcase_add_test(tc, check_takes_shared_blocks_at_one_place_and_links_each_origin);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(thin_image_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
