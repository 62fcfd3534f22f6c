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

/* The log file of fuzz_quiet, unlinked, kept empty by fuzz_log_trim; or -1. */
static int log_fd = -1;

void fuzz_quiet(void)
{
	char path[] = "/tmp/mapperfs-fuzz-log.XXXXXX";

	log_init("fuzz");
	if (getenv("MAPPERFS_FUZZ_LOG"))
		return;
	/* The log takes only a regular file (log.h): a temporary one, gone at once. */
	log_fd = mkstemp(path);
	FUZZ_CHECK(log_fd >= 0);
	FUZZ_CHECK(log_to_file(path) == 0);
	FUZZ_CHECK(unlink(path) == 0);
}

void fuzz_log_trim(void)
{
	/* The log appends (O_APPEND): its next line starts the file again. */
	if (log_fd >= 0)
		FUZZ_CHECK(ftruncate(log_fd, 0) == 0);
}
