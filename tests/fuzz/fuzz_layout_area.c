/*
 * fuzz_layout_area: layout_slot_decode() on one slot of a raw device's
 * metadata area, as `recover`, the daemon's start-up and every open read
 * it (the input, zero padded or cut to LAYOUT_SLOT_SIZE): a copy from
 * before compression, a deflated one, or an overflow marker, with
 * checksums that may hold over hostile bytes.  Contract: 0 or -ENOMEM;
 * whatever the header says, a text is never longer than LAYOUT_TEXT_MAX
 * and is NUL-terminated; a text it accepts, deflated again, decodes to
 * the same text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "layout_area.h"

static void check_round_trip(const struct layout_slot *s)
{
	struct layout_copy c;
	struct layout_slot again;
	int r = layout_copy_make(&s->pool, s->seq, s->text, s->len, &c);

	FUZZ_CHECK(r == 0 || r == -EFBIG);
	FUZZ_CHECK(layout_slot_decode(c.buf, c.len, &again) == 0);
	if (!r) {
		FUZZ_CHECK(again.state == LAYOUT_SLOT_GOOD && again.len == s->len);
		FUZZ_CHECK(!memcmp(again.text, s->text, s->len));
	} else {
		FUZZ_CHECK(again.state == LAYOUT_SLOT_OVERFLOW);
	}
	free(again.text);
	layout_copy_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct layout_slot s;
	int r = layout_slot_decode(data, size < LAYOUT_SLOT_SIZE ? size : LAYOUT_SLOT_SIZE, &s);

	FUZZ_CHECK(r == 0 || r == -ENOMEM);
	if (r)
		return 0;
	FUZZ_CHECK(s.state <= LAYOUT_SLOT_OVERFLOW);
	FUZZ_CHECK((s.state == LAYOUT_SLOT_GOOD) == (s.text != NULL));
	if (s.text) {
		FUZZ_CHECK(s.len <= LAYOUT_TEXT_MAX && !s.text[s.len]);
		check_round_trip(&s);
	}
	free(s.text);
	return 0;
}
