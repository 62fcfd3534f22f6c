/*
 * fuzz_label: label_decode() on the first 4 KiB of a raw device, as the
 * pool reads it before it serves a byte (the input, zero padded or cut to
 * LABEL_SIZE).  Contract: 0, -ENODATA or -EBADMSG; a label it accepts is
 * written back by label_encode() as the same fields.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "label.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct device_label l, again;
	uint8_t *buf = calloc(1, LABEL_SIZE), *enc = malloc(LABEL_SIZE);
	int r;

	FUZZ_CHECK(buf && enc);
	memcpy(buf, data, size < LABEL_SIZE ? size : LABEL_SIZE);
	r = label_decode(buf, &l);
	FUZZ_CHECK(r == 0 || r == -ENODATA || r == -EBADMSG);
	if (!r) {
		label_encode(&l, enc);
		FUZZ_CHECK(label_decode(enc, &again) == 0);
		FUZZ_CHECK(!memcmp(&l, &again, sizeof(l)));
	}
	free(enc);
	free(buf);
	return 0;
}
