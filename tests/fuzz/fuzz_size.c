/*
 * fuzz_size: parse_size() on any string, and format_size() on what it
 * accepts.  Contract: 0, -EINVAL, -EDOM or -ERANGE; an accepted size is at
 * most SIZE_MAX_BYTES and reads back the same when written in plain
 * bytes; the text format_size() writes fits its buffer.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fuzz.h"
#include "size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	char buf[SIZE_STR_LEN], plain[32];
	uint64_t v = 0, again = 0;
	int r = parse_size(s, &v);

	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -EDOM || r == -ERANGE);
	if (!r) {
		FUZZ_CHECK(v <= SIZE_MAX_BYTES);
		snprintf(plain, sizeof(plain), "%" PRIu64, v);
		FUZZ_CHECK(parse_size(plain, &again) == 0 && again == v);
		FUZZ_CHECK(strlen(format_size(v, buf)) < SIZE_STR_LEN);
	}
	/* Any 64-bit count of bytes can be shown, not only accepted ones. */
	if (size >= 8) {
		memcpy(&v, data, 8);
		FUZZ_CHECK(strlen(format_size(v, buf)) < SIZE_STR_LEN);
	}
	free(s);
	return 0;
}
