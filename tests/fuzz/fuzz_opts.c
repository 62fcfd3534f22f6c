/*
 * fuzz_opts: the values mapperctl's options take (tools/opts.h).  The
 * first byte picks the parser, the rest is the argument.  Contract: 0 or
 * -EINVAL/-ERANGE with a reason in the error; what is accepted obeys the
 * rule the parser states (4 KiB multiples, percentages, wait bounds).
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "opts.h"

enum which { SIZE, BLOCK_SIZE, SEGMENT, SWITCH_PATH, WHEN_FULL, PERCENT, NR_WHICH };

static void check_failure(int r, const struct pool_error *err)
{
	FUZZ_CHECK(r == -EINVAL || r == -ERANGE);
	FUZZ_CHECK(err->msg[0] != '\0');
}

static void fuzz_one(enum which w, const char *arg)
{
	struct pool_error err = { .msg = "" };
	struct pool_switch_path path;
	struct pool_segment seg;
	struct thin_pool_rec tp = { 0 };
	char *copy = NULL;
	uint64_t v;
	uint32_t pct;
	int r;

	switch (w) {
	case SIZE:
		r = opts_size(arg, &v, &err);
		break;
	case BLOCK_SIZE:
		r = opts_block_size(arg, &v, &err);
		FUZZ_CHECK(r || (v && v % 4096 == 0));
		break;
	case SEGMENT:
		r = opts_segment(arg, &copy, &seg, &err);
		FUZZ_CHECK(r || (seg.arg == arg && seg.offset % 4096 == 0 &&
				 seg.length && seg.length % 4096 == 0 &&
				 !strchr(seg.device, ':')));
		break;
	case SWITCH_PATH:
		r = opts_switch_path(arg, &copy, &path, &err);
		FUZZ_CHECK(r || path.owned || path.offset % 4096 == 0);
		FUZZ_CHECK(r || !strchr(path.device, ':'));
		break;
	case WHEN_FULL:
		r = opts_when_full(arg, &tp, &err);
		FUZZ_CHECK(r || !tp.wait || (tp.wait_seconds >= 1 && tp.wait_seconds <= 86400));
		break;
	default:
		r = opts_percent(arg, "autoextend threshold", POOL_AUTOEXTEND_THRESHOLD_MIN,
				 &pct, &err);
		FUZZ_CHECK(r || (pct >= POOL_AUTOEXTEND_THRESHOLD_MIN && pct <= 100));
		break;
	}
	if (r)
		check_failure(r, &err);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *arg;

	if (!size)
		return 0;
	arg = fuzz_string(data + 1, size - 1);
	fuzz_one((enum which)(data[0] % NR_WHICH), arg);
	free(arg);
	return 0;
}
