/*
 * fuzz_wire_response: what mapperctl reads back from a daemon (or from
 * whatever listens on control.sock), wire_recv_response() over a
 * descriptor holding the input, notes and all.  Contract: 0, or -EPROTO / -ENOMEM, and
 * memory in proportion to the bytes that came, whatever lengths they
 * claim; an accepted response gives two NUL-terminated buffers.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_memfd(data, size);
	char *out = NULL, *err = NULL;
	int status, r;

	r = wire_recv_response(fd, &status, &out, &err, NULL);
	close(fd);
	FUZZ_CHECK(r == 0 || r == -EPROTO || r == -ENOMEM);
	if (r)
		return 0;
	FUZZ_CHECK(strlen(out) + strlen(err) + 12 <= size);
	free(out);
	free(err);
	return 0;
}
