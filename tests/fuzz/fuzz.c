#include "fuzz.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	FUZZ_CHECK(s);
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t done = 0;

	FUZZ_CHECK(fd >= 0);
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		FUZZ_CHECK(n > 0);
		done += (size_t)n;
	}
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	return fd;
}

void fuzz_quiet(void)
{
	log_init("fuzz");
	if (!getenv("MAPPERFS_FUZZ_LOG"))
		FUZZ_CHECK(log_to_file("/dev/null") == 0);
}
