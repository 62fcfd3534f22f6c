#include "bigmem.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void *bigmem_map(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	char *m, *p;

	if (!bytes || bytes > SIZE_MAX - 2 * BIGMEM_ALIGN)
		return NULL;
	bytes = (bytes + page - 1) & ~(page - 1);
	len = bytes + BIGMEM_ALIGN;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)m + BIGMEM_ALIGN - 1) & ~(uintptr_t)(BIGMEM_ALIGN - 1));
	/* The slack on either side goes back: only [p, p + bytes) stays mapped. */
	if (p > m)
		munmap(m, (size_t)(p - m));
	if (m + len > p + bytes)
		munmap(p + bytes, (size_t)(m + len - (p + bytes)));
#ifdef MADV_HUGEPAGE
	madvise(p, bytes, MADV_HUGEPAGE);
#endif
	return p;
}

void bigmem_unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}
