/*
 * fuzz_wire_request: what the daemon reads from a control-socket client,
 * wire_recv_request() over a descriptor holding the input.  Contract: 0,
 * or -EPROTO / -EMSGSIZE / -ENOMEM; an accepted request has argc strings
 * and a NULL after them, and wire_send_request() writes it back as the
 * bytes it was read from (anything after them was left unread).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "wire.h"

/* Sends @argv to a memfd and checks it matches the start of @data. */
static void check_resend(const uint8_t *data, size_t size, int argc, char **argv)
{
	int fd = memfd_create("resend", MFD_CLOEXEC);
	off_t len;
	char *buf;

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(wire_send_request(fd, argc, argv, -1) == 0);
	len = lseek(fd, 0, SEEK_CUR);
	FUZZ_CHECK(len >= 8 && (size_t)len <= size);
	buf = malloc((size_t)len);
	FUZZ_CHECK(buf);
	FUZZ_CHECK(pread(fd, buf, (size_t)len, 0) == len);
	FUZZ_CHECK(!memcmp(buf, data, (size_t)len));
	free(buf);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_memfd(data, size);
	char **argv = NULL;
	int argc = -1, r;

	r = wire_recv_request(fd, &argc, &argv, NULL, -1);
	close(fd);
	FUZZ_CHECK(r == 0 || r == -EPROTO || r == -EMSGSIZE || r == -ENOMEM);
	if (r)
		return 0;
	FUZZ_CHECK(argc >= 0 && !argv[argc]);
	check_resend(data, size, argc, argv);
	free(argv);
	return 0;
}
