/*
 * tests/unit/test_thin_image.c: thin_dump's XML written and read back,
 * and what the reader refuses, each in one line with its line number.
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

static Suite *thin_image_suite(void)
{
	Suite *suite = suite_create("thin_image");
	TCase *tc = tcase_create("xml");

	tcase_add_test(tc, written_xml_reads_back_with_runs_names_and_sizes);
	tcase_add_test(tc, neighbouring_single_mappings_merge_into_a_run);
	tcase_add_test(tc, bad_documents_are_refused_with_their_line);
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
