/*
 * fuzz_switch_msg: dm-switch set_region_mappings messages, as `mapperctl
 * switch-map --file` reads them: switch_msg_split() on the text, then
 * switch_msg_apply() on a table.  The first byte picks the path count
 * (2..256), the next two the region count (1..1024: larger tables only
 * make each input slower); the rest is the text.
 *
 * Contract: split yields non-empty words without white space; apply
 * returns 0, or -EINVAL with a reason; every entry stays a valid path;
 * and a table that a message produced is rebuilt exactly by the message
 * switch_msg_dump() writes for it, applied to a fresh table.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "switch_msg.h"
#include "switch_table.h"

#define HEADER		3	/* bytes: path count, region count */
#define REGIONS_MAX	1024

static void check_words(char *const *argv, size_t argc)
{
	for (size_t i = 0; i < argc; i++)
		FUZZ_CHECK(argv[i][0] && !strpbrk(argv[i], " \t\r\n"));
}

static struct switch_table *fresh_table(uint64_t nr_regions, unsigned int nr_paths)
{
	struct switch_table *t;

	FUZZ_CHECK(switch_table_create(nr_regions, nr_paths, &t) == 0);
	switch_table_round_robin(t);
	return t;
}

/* Dumps @t and applies the dump to a fresh table: they must be equal. */
static void check_dump(const struct switch_table *t)
{
	struct switch_table *again = fresh_table(t->nr_regions, t->nr_paths);
	char *text = NULL, **argv = NULL, why[256] = "";
	size_t len = 0, argc = 0;
	FILE *f = open_memstream(&text, &len);

	FUZZ_CHECK(f);
	FUZZ_CHECK(switch_msg_dump(t, f) == 0);
	FUZZ_CHECK(fclose(f) == 0);
	FUZZ_CHECK(switch_msg_split(text, &argv, &argc) == 0);
	if (switch_msg_apply(again, argc, argv, why, sizeof(why))) {
		fprintf(stderr, "the dump does not apply: %s\n", why);
		abort();
	}
	for (uint64_t i = 0; i < t->nr_regions; i++)
		FUZZ_CHECK(switch_table_get(again, i) == switch_table_get(t, i));
	free(argv);
	free(text);
	switch_table_destroy(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int nr_paths;
	uint64_t nr_regions;
	struct switch_table *t;
	char *text, **argv = NULL, why[256] = "";
	size_t argc = 0;
	int r;

	if (size < HEADER)
		return 0;
	nr_paths = 2 + data[0] % (SWITCH_PATHS_MAX - 1);
	nr_regions = 1 + (uint64_t)(data[1] | data[2] << 8) % REGIONS_MAX;
	text = fuzz_string(data + HEADER, size - HEADER);
	t = fresh_table(nr_regions, nr_paths);

	FUZZ_CHECK(switch_msg_split(text, &argv, &argc) == 0);
	check_words(argv, argc);
	r = switch_msg_apply(t, argc, argv, why, sizeof(why));
	FUZZ_CHECK(r == 0 || (r == -EINVAL && why[0]));
	for (uint64_t i = 0; i < nr_regions; i++)
		FUZZ_CHECK(switch_table_get(t, i) < nr_paths);
	if (!r)
		check_dump(t);

	switch_table_destroy(t);
	free(argv);
	free(text);
	return 0;
}
